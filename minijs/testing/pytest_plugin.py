"""pytest fixtures for testing code against minijs, registered through the ``pytest11`` entry point.

Fixtures:

``minijs_server``
    A fresh server for one test, with JetStream (memory and file streams; file streams in a
    temporary directory unless ``store_dir`` is given), running on a background thread so it
    serves sync and async tests alike. Configure it with ``@pytest.mark.minijs(max_payload=1024, ...)`` (any
    :class:`~minijs.ServerConfig` field).
``minijs_url``
    That server's ``nats://`` URL.
``minijs_session_server`` / ``minijs_session_url``
    One server shared by the whole session (cheaper when tests use unique subjects).
``minijs_async_server``
    A fresh server in the test's own event loop (async tests): the test can reach its state and
    drive a :class:`~minijs.VirtualClock` passed with ``@pytest.mark.minijs(clock=...)``.
``nats_client``
    A connected nats-py client on ``minijs_server`` (async tests; needs nats-py).
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Iterator

import pytest

from minijs.server import Server, ServerThread


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "minijs(**options): ServerConfig options for the minijs_server fixtures")


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("minijs"))):
        options.update(marker.kwargs)
    return options


@pytest.fixture
def minijs_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    options = _marker_options(request)
    options.pop("clock", None)  # a virtual clock belongs to an in-loop server
    options.setdefault("port", 0)
    options.setdefault("jetstream", True)
    with ServerThread(**options) as server:
        yield server


@pytest.fixture
def minijs_url(minijs_server: ServerThread) -> str:
    return minijs_server.client_url


@pytest.fixture(scope="session")
def minijs_session_server() -> Iterator[ServerThread]:
    with ServerThread(port=0, jetstream=True) as server:
        yield server


@pytest.fixture(scope="session")
def minijs_session_url(minijs_session_server: ServerThread) -> str:
    return minijs_session_server.client_url


try:
    import pytest_asyncio
except ImportError:  # async fixtures need pytest-asyncio; the sync ones work without it
    pytest_asyncio = None

if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def minijs_async_server(request: pytest.FixtureRequest) -> AsyncIterator[Server]:
        options = _marker_options(request)
        clock = options.pop("clock", None)
        options.setdefault("port", 0)
        options.setdefault("jetstream", True)
        server = Server(clock=clock, **options)
        await server.start()
        try:
            yield server
        finally:
            await server.stop()

    @pytest_asyncio.fixture
    async def nats_client(minijs_server: ServerThread) -> AsyncIterator[Any]:
        import nats

        client = await nats.connect(minijs_server.client_url)
        try:
            yield client
        finally:
            await client.close()
