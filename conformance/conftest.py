"""Fixtures and target parametrization for the conformance suite.

Every test that takes the ``target`` argument runs once per selected target
(``--targets minijs,nats-server`` by default; ``--url nats://host:port`` adds an external
target named ``url``). The suite talks to servers only over the network — nothing from the
``minijs`` package is imported here.
"""
from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient

from conformance.cluster import (  # noqa: F401  (cluster fixtures, see cluster.py)
    cjs,
    cluster,
    cluster_pool,
    core_cluster,
    make_cluster,
    sys_cluster,
)
from conformance.helpers import NatsFactory, RawFactory, SpawnFn
from conformance.jshelpers import JsClient, unique_name
from conformance.rawclient import RawClient
from conformance.report import ConformanceReport
from conformance.servers import (
    LOCAL_TARGETS,
    URL_TARGET,
    Endpoint,
    ServerProcess,
    endpoint_from_url,
    spawn_server,
)

DEFAULT_TARGETS = "minijs,nats-server"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "minijs conformance suite")
    group.addoption(
        "--targets",
        default=None,
        help=f"comma separated targets to run against (default {DEFAULT_TARGETS}); "
        f"known: {', '.join(LOCAL_TARGETS)}, {URL_TARGET}",
    )
    group.addoption(
        "--url",
        default=None,
        help="nats://host:port of an already running server; adds the target 'url'",
    )
    group.addoption(
        "--report-dir",
        default=None,
        metavar="DIR",
        help="directory for the conformance report (default: conformance/report); a --url run "
        "writes report-<host>-<port>-<time>.md/.json there, never over another report",
    )


def selected_targets(config: pytest.Config) -> list[str]:
    """The target list from ``--targets`` / ``--url``."""
    url = config.getoption("--url")
    # --url alone means "check that server": only the url target runs.
    raw = config.getoption("--targets") or (URL_TARGET if url else DEFAULT_TARGETS)
    targets = [t.strip() for t in raw.split(",") if t.strip()]
    if url and URL_TARGET not in targets:
        targets.append(URL_TARGET)
    for t in targets:
        if t not in LOCAL_TARGETS and t != URL_TARGET:
            raise pytest.UsageError(f"unknown conformance target {t!r}")
        if t == URL_TARGET and not url:
            raise pytest.UsageError("target 'url' needs --url nats://host:port")
    return list(dict.fromkeys(targets))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance: a minijs conformance case")
    config.addinivalue_line(
        "markers", "cluster: a case on a cluster of the target (test_cluster_*.py; "
        "select or skip them with -m cluster / -m 'not cluster')")
    config.addinivalue_line(
        "markers", "needs_plain_server: the case needs a server without JetStream (skipped for "
        "a --url target, which is checked as it is)")
    report = ConformanceReport(config=config, targets=selected_targets(config),
                               url=config.getoption("--url"))
    if config.getoption("--report-dir"):
        report.report_dir = Path(config.getoption("--report-dir")).resolve()
    config.pluginmanager.register(report, "conformance-report")


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """Show both sides of a failed bytes comparison in full (pytest truncates them), so the
    report carries the exact wire bytes. Cases write ``assert actual == expected``."""
    if op != "==" or not isinstance(left, bytes) or not isinstance(right, bytes):
        return None
    limit = 3000
    common = min(len(left), len(right))
    at = next((i for i in range(common) if left[i] != right[i]), common)

    def show(data: bytes) -> str:
        text = repr(data)
        return text if len(text) <= limit else f"{text[:limit]}... ({len(data)} bytes)"

    return [
        f"wire bytes differ (first difference at byte {at}):",
        f"actual:   {show(left)}",
        f"expected: {show(right)}",
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        targets = selected_targets(metafunc.config)
        metafunc.parametrize("target", targets, ids=targets)


# ---------------------------------------------------------------------- servers


class ServerPool:
    """Session-wide default servers, one per target, spawned on first use."""

    def __init__(self, config: pytest.Config, jetstream: bool = False) -> None:
        self.config = config
        self.jetstream = jetstream
        self.servers: dict[str, Endpoint] = {}
        self.errors: dict[str, str] = {}

    def get(self, target: str) -> Endpoint:
        if target in self.errors:
            # Fail fast instead of waiting for the start timeout again in every case.
            raise RuntimeError(self.errors[target])
        if target not in self.servers:
            if target == URL_TARGET:
                self.servers[target] = endpoint_from_url(self.config.getoption("--url"))
            else:
                try:
                    self.servers[target] = spawn_server(target, jetstream=self.jetstream)
                except Exception as exc:
                    self.errors[target] = str(exc)
                    raise
                if self.jetstream:
                    _keep_streams_directory(self.servers[target])
        return self.servers[target]

    def stop(self) -> None:
        for server in self.servers.values():
            if isinstance(server, ServerProcess):
                server.stop()


#: A stream kept on every shared JetStream server for the whole session.
KEEP_STREAM = "KEEPSTREAMSDIRECTORY"


def _keep_streams_directory(endpoint: Endpoint) -> None:
    """nats-server removes an account's streams directory when its last stream is deleted,
    racing the next create (500/10049 ``error creating store for stream``): a nats-server
    quirk, not behaviour under test, that a case creating a stream right after another case
    deleted the last one would hit now and then. One stream kept for the session on each
    target's shared server (the same on both, so counts agree) avoids it."""
    client = JsClient.connect(endpoint)
    try:
        out = client.create(KEEP_STREAM, check=False, subjects=["keep.streams.dir"])
    finally:
        client.close()
    assert "error" not in out or out["error"]["err_code"] == 10058, out


@pytest.fixture(scope="session")
def server_pool(pytestconfig: pytest.Config) -> Iterator[ServerPool]:
    pool = ServerPool(pytestconfig)
    yield pool
    pool.stop()


@pytest.fixture
def server(target: str, server_pool: ServerPool, request: pytest.FixtureRequest) -> Endpoint:
    """The shared default server of this target (no auth, no JetStream)."""
    if target == URL_TARGET and request.node.get_closest_marker("needs_plain_server"):
        pytest.skip("needs a server without JetStream; the --url server is checked as it is")
    return server_pool.get(target)


@pytest.fixture
def spawn(target: str) -> Iterator[SpawnFn]:
    """Factory for a specially configured server of this target, stopped after the test.

    ``spawn(args=[...], config="nats config text", jetstream=False)``; ``jetstream=True`` adds
    ``-js`` with a private store directory. Skips for the external ``url`` target,
    which cannot be reconfigured.
    """
    started: list[ServerProcess] = []

    def _spawn(
        args: list[str] | None = None, config: str | None = None, jetstream: bool = False,
        files: dict[str, str] | None = None,
    ) -> ServerProcess:
        if target == URL_TARGET:
            pytest.skip("needs a specially configured server; not possible with --url")
        proc = spawn_server(target, args=args, config=config, jetstream=jetstream, files=files)
        started.append(proc)
        return proc

    yield _spawn
    for proc in started:
        proc.stop()


@pytest.fixture(scope="session")
def js_server_pool(pytestconfig: pytest.Config) -> Iterator[ServerPool]:
    pool = ServerPool(pytestconfig, jetstream=True)
    yield pool
    pool.stop()


@pytest.fixture
def js_server(target: str, js_server_pool: ServerPool) -> Endpoint:
    """The shared JetStream server of this target (``-js -sd <tempdir>``, no auth).

    With ``--url`` the external server is used as is and must have JetStream enabled. Cases
    share it, so they use unique stream names and subjects (see ``jshelpers``).
    """
    return js_server_pool.get(target)


# ---------------------------------------------------------------------- clients

@pytest.fixture
def raw(server: Endpoint) -> Iterator[RawFactory]:
    """Factory for raw clients: ``raw()`` connects to the default server and reads INFO;
    ``raw(endpoint)`` to another one; keyword args go to ``RawClient.connect``."""
    clients: list[RawClient] = []

    def _connect(endpoint: Endpoint | None = None, **kwargs: Any) -> RawClient:
        ep = endpoint or server
        client = RawClient.connect(ep.host, ep.port, **kwargs)
        clients.append(client)
        return client

    yield _connect
    for client in clients:
        client.close()


@pytest.fixture
async def nats_connect(server: Endpoint) -> AsyncIterator[NatsFactory]:
    """Factory for nats-py connections (closed after the test)."""
    clients: list[NatsClient] = []

    async def _connect(endpoint: Endpoint | None = None, **kwargs: Any) -> NatsClient:
        ep = endpoint or server
        kwargs.setdefault("allow_reconnect", False)
        kwargs.setdefault("connect_timeout", 5)
        nc = await nats.connect(ep.url, **kwargs)
        clients.append(nc)
        return nc

    yield _connect
    for nc in clients:
        if not nc.is_closed:
            try:
                await nc.close()
            except Exception:
                pass


@pytest.fixture
def subject() -> str:
    """A unique subject prefix so cases never see each other's traffic."""
    return f"conf.{uuid.uuid4().hex[:12]}"


# ---------------------------------------------------------------------- JetStream clients


@pytest.fixture
def js_raw(js_server: Endpoint) -> Iterator[RawFactory]:
    """Like ``raw`` but bound to the shared JetStream server."""
    clients: list[RawClient] = []

    def _connect(endpoint: Endpoint | None = None, **kwargs: Any) -> RawClient:
        ep = endpoint or js_server
        client = RawClient.connect(ep.host, ep.port, **kwargs)
        clients.append(client)
        return client

    yield _connect
    for client in clients:
        client.close()


@pytest.fixture
def js(js_server: Endpoint) -> Iterator[JsClient]:
    """A raw-protocol JetStream API client on the shared JetStream server. Streams it created
    are deleted after the test."""
    client = JsClient.connect(js_server)
    yield client
    client.cleanup()
    client.close()


@pytest.fixture
def js_connect(js_server: Endpoint) -> Iterator[Callable[..., JsClient]]:
    """Factory for more ``JsClient`` s: ``js_connect()`` (shared JetStream server) or
    ``js_connect(endpoint)``; streams they create are deleted after the test."""
    clients: list[JsClient] = []

    def _connect(endpoint: Endpoint | None = None) -> JsClient:
        client = JsClient.connect(endpoint or js_server)
        clients.append(client)
        return client

    yield _connect
    for client in clients:
        client.cleanup()
        client.close()


@pytest.fixture
async def js_nats(js_server: Endpoint) -> AsyncIterator[NatsFactory]:
    """Factory for nats-py connections to the shared JetStream server (closed after the test)."""
    clients: list[NatsClient] = []

    async def _connect(endpoint: Endpoint | None = None, **kwargs: Any) -> NatsClient:
        ep = endpoint or js_server
        kwargs.setdefault("allow_reconnect", False)
        kwargs.setdefault("connect_timeout", 5)
        nc = await nats.connect(ep.url, **kwargs)
        clients.append(nc)
        return nc

    yield _connect
    for nc in clients:
        if not nc.is_closed:
            try:
                await nc.close()
            except Exception:
                pass


@pytest.fixture
def stream_name() -> str:
    """A unique stream name (upper case letters and digits); ``stream_name.lower()`` is a
    handy unique subject prefix."""
    return unique_name()
