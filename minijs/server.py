"""The server: a router with a lifecycle, JetStream, monitoring and test control attached.

``Server`` is what users start (``await Server(port=0).start()`` or ``async with``);
``ServerThread`` runs one on a background thread for synchronous tests and hands every call to
that thread's loop. The floors below never import this module: the router
(:mod:`minijs.core.router`) is what they are given.

Test control (what a real nats-server cannot do for a test) lives here and in
:mod:`minijs.control`: the clock (``server.clock``), inspection (``streams()``,
``consumer()``, ``connections_info()``, ...), ``reset()``, fault injection (``server.faults``),
``restart()``/``crash()``, and the ``$MINIJS.>`` control plane when ``control=True``.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import sys
import threading
from typing import Any, Awaitable, Callable, Protocol, TypeVar, overload

from typing import TYPE_CHECKING

from minijs.clock import Clock, make_clock
from minijs.config import GIT_COMMIT, GLOBAL_ACCOUNT, NATS_SERVER_VERSION, ServerConfig
from minijs.core.router import OperatorMode, Router
from minijs.log import Logger
from minijs.protocol.cjson import dumps_compact
from minijs.randomness import RandomSource, server_source

if TYPE_CHECKING:  # imported when first needed, so a plain server starts fast
    from minijs.control import snapshots
    from minijs.control.faults import FaultEvent, FaultInjector, FaultRule
    from minijs.control.plane import ControlPlane
    from minijs.jetstream.api.dispatch import JetStreamApi
    from minijs.jetstream.engine import JetStreamGroup
    from minijs.monitor import Monitor

T = TypeVar("T")


class StartupError(RuntimeError):
    """A configuration the server refuses as it starts (nats-server's fatal log line and
    exit): the message is nats-server's text."""


def _plaintext_passwords(config: ServerConfig) -> bool:
    """Does any configured password not look like a bcrypt hash (nats-server warns then)?"""
    passwords = [u.password for u in config.users if not u.nkey]
    if config.password:
        passwords.append(config.password)
    if not passwords:
        return False
    from minijs.auth.passwords import is_bcrypt  # (a server without passwords never loads it)

    return any(not is_bcrypt(p) for p in passwords)


class Membership(Protocol):
    """What a node of an in-process cluster is given by its cluster (:mod:`minijs.clustering`)."""

    def attached(self, server: "Server") -> None:
        """``server`` is listening: join the cluster's network (routes, replication)."""

    def detached(self, server: "Server") -> None:
        """``server`` is going down: leave the network."""

    def cluster_env(self, server: "Server") -> Any:
        """What this node's JetStream needs of the cluster (the seam, the seeded source)."""

    def bootstraps(self) -> bool:
        """Does this node start the cluster's first meta election?"""

    def control_target(self) -> Any:
        """What this node's ``$MINIJS.>`` requests act on (the whole cluster)."""


class Server(Router):
    """A NATS server in this process's event loop.

    ``Server(port=0)`` picks a free port; ``await server.start()`` binds and returns once
    clients can connect; ``client_url`` says where. ``async with Server() as s:`` does both ends.
    ``clock`` is a :class:`~minijs.clock.Clock` or ``"wall"``, ``"virtual"``, ``"auto"``.

    ``Server(cluster_size=N)`` with N from 2 to 5 makes an in-process cluster of N nodes
    instead: a :class:`minijs.clustering.Cluster`, which offers the same methods and adds
    ``nodes``, ``partition()``, ``heal()`` and ``cluster()``.
    ``loop_clock=True`` puts the event loop the server runs in on the server's virtual time
    (:class:`~minijs.loopclock.LoopClock`): the caller's sleeps and timeouts and the server's
    timers share one time, which jumps to the next due timer whenever the loop is idle
    (``clock="virtual"``: only on ``advance``); servers in one loop share its clock.
    ``seed`` (an int, or a :class:`~minijs.randomness.RandomSource`) seeds every random choice
    the server makes (:attr:`randomness`; :attr:`seed` says which seed it took when none was
    given), so a rerun with the same seed makes the same choices.
    """

    #: The router's end-of-turn commit hook is, here, every account's JetStream.
    jetstream_group: "JetStreamGroup | None"

    def __new__(cls, config: ServerConfig | None = None, *args: Any, **kwargs: Any) -> Any:
        size = kwargs.get("cluster_size", config.cluster_size if config is not None else 1)
        if cls is Server and size != 1:
            from minijs.clustering import Cluster, ClusterError

            if kwargs.get("route_options", config.route_options if config else None):
                raise ClusterError(
                    "cluster_size runs the nodes in this process; route_options join separate "
                    "processes: use one or the other (cluster_size=1 to join processes by "
                    "routes, no route_options for an in-process cluster)")
            return Cluster(config, *args, node_class=Server, **kwargs)
        return super().__new__(cls)

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | str | None = None,
                 logger: Logger | None = None, seed: "int | RandomSource | None" = None,
                 loop_clock: bool = False, membership: Membership | None = None,
                 **overrides: Any) -> None:
        randomness = server_source(seed)
        self._loop_clock: bool | None = None  # auto (True) / virtual (False) until resolved
        if loop_clock:
            from minijs.loopclock import loop_clock_for

            clock, self._loop_clock = loop_clock_for(clock)
        operator_mode: OperatorMode | None = None
        if (overrides.get("operator") if "operator" in overrides
                else config is not None and config.operator):
            from minijs.operatormode import OPERATOR_MODE as operator_mode
        super().__init__(config, clock=make_clock(clock), logger=logger,
                         randomness=randomness, operator_mode=operator_mode, **overrides)
        draw_ties = getattr(self.clock, "draw_ties_from", None)
        if draw_ties is not None:
            draw_ties(randomness.child("timers"))
        #: This node's place in an in-process cluster (None: a server of its own).
        self.membership = membership
        if membership is not None:
            self.owns_clock = False
        self.monitor: Monitor | None = None
        self.jetstream_api: JetStreamApi | None = None
        #: With an ``accounts`` block: each account's API (accounts without JetStream get
        #: one that answers 503/10039 "JetStream not enabled for account").
        self.account_apis: dict[str, JetStreamApi] = {}
        #: The ``$JS.API.>`` subscription that makes the API on its first request.
        self._api_door: Any = None
        self.control_plane: ControlPlane | None = None
        self._faults: FaultInjector | None = None
        self._ports_file: str | None = None
        self._shared_temp_dir: str | None = None
        #: In lame duck mode (:meth:`lame_duck_mode`): no new clients, closing the others.
        self.lame_duck = False
        #: A cluster node's share of the cluster's JetStream (None otherwise).
        self.jetstream_cluster: Any = None
        #: Routes to other processes (:mod:`minijs.core.route_transport`) while running with
        #: ``route_options``; None otherwise.
        self.route_transport: Any = None
        #: Where :meth:`reload` reads the configuration again (the command sets both: the
        #: config file, then its flags over it); None: only ``reload(config)`` works.
        self.config_file: str | None = None
        self.config_loader: Callable[[], ServerConfig] | None = None
        #: The websocket listener (minijs.core.websocket.WebsocketListener) when configured.
        self.websocket: Any = None

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Bind the client port (and the monitor, if configured); log as nats-server does."""
        if self.running:
            return
        if self._loop_clock is not None:
            self._resolve_loop_clock()
        self._stopped = asyncio.Event()
        await self._startup(preload=True)

    def _resolve_loop_clock(self) -> None:
        """The clock of the loop the server starts in: the loop's own when another server
        put it on server time already, else this server's (installed now)."""
        from minijs.loopclock import running_loop_clock

        clock = running_loop_clock(self.clock)  # type: ignore[arg-type]
        if clock is not self.clock:
            self.clock = clock
            clock.draw_ties_from(self.randomness.child("timers"))
        self._loop_clock = None

    @property
    def seed(self) -> int:
        """The seed of every random choice this server makes (``Server(seed=...)``, the pytest
        plugin's ``--minijs-seed``, or a fresh one): pass it again to repeat them."""
        return self.randomness.seed

    @property
    def faults(self) -> "FaultInjector":
        """Fault injection: rules that drop, delay or answer traffic (see
        :mod:`minijs.control.faults`)."""
        if self._faults is None:
            from minijs.control.faults import FaultEvent, FaultInjector, FaultRule

            self._faults = FaultInjector(self)
        return self._faults

    async def _startup(self, temp_dir: str | None = None, *, preload: bool = False) -> None:
        config = self.config
        log = self.log
        self.start_time = self.clock.time()
        log.info("Starting nats-server")
        log.info(f"  Version:  {NATS_SERVER_VERSION} (minijs)")
        log.info(f"  Git:      [{GIT_COMMIT}]")
        if config.route_options is not None and self.membership is None:
            from minijs.core.route_transport import RouteTransport

            self.route_transport = RouteTransport(self, notify_clients=self.send_async_info)
        if self.membership is None and (config.cluster_name or self.route_transport):
            cluster_name = (self.route_transport.cluster_name if self.route_transport
                            else config.cluster_name)
            log.info(f"  Cluster:  {cluster_name}")
        log.info(f"  Name:     {self.server_name}")
        log.info(f"  ID:       {self.server_id}")
        if self.auth_nonce:  # nkey users or an operator: signatures need PyNaCl
            from minijs.auth.nkeys import MissingCryptoError, require_crypto

            try:
                require_crypto()
            except MissingCryptoError as exc:
                raise StartupError(str(exc)) from None
        if self.operator is not None:
            self.operator.log_startup(log)
        if _plaintext_passwords(config):
            log.warn("Plaintext passwords detected, use nkeys or bcrypt")
        if (config.jetstream and config.system_account
                and config.system_account in dict(config.account_jetstream)):
            raise StartupError("Not allowed to enable JetStream on the system account")
        if config.jetstream and config.accounts and config.account_jetstream:
            _check_account_jetstream_limits(config)
        if preload and config.preload is not None and not config.jetstream:
            raise StartupError("--preload needs JetStream: start the server with -js "
                               "(jetstream=True)")
        if config.jetstream and config.store_dir and self.jetstream is None:
            from minijs.jetstream.storedir import check_store_dir

            check_store_dir(config.store_dir)  # as nats-server: before the port is bound
        if config.websocket is not None and config.websocket.port:
            await self._start_websocket()  # first, as nats-server: its line comes first
        if config.tls is not None:
            from minijs.tlsconfig import TlsConfigError

            try:
                await self.listen()
            except TlsConfigError as exc:  # files that changed since the config was read
                raise StartupError(str(exc)) from None
        else:
            await self.listen()
        if self.route_transport is not None:
            await self._bind_routes()
        self.running = True
        if self.membership is not None:
            self.membership.attached(self)
        if self.operator is not None:
            self.operator.start()  # the system account's claim updates
        if config.http_port is not None:
            from minijs.monitor import Monitor

            self.monitor = Monitor(self)
            await self.monitor.start()
        if config.jetstream and self.jetstream is None:
            self._start_jetstream(temp_dir)
        if config.control:
            from minijs.control.plane import ControlPlane

            target = self.membership.control_target() if self.membership is not None else None
            self.control_plane = ControlPlane(self, target)
            self.control_plane.start()
        log.info(f"Listening for client connections on {_host_port(config.host, self.port)}")
        if config.tls is not None:
            _log_tls(log, config)
        if config.ports_file_dir:
            self._write_ports_file(config.ports_file_dir)
        if preload and config.preload is not None and self.membership is None:
            # (at start only: a restart() keeps state; a cluster preloads once, when ready)
            await self._preload(config.preload)
        if self.membership is None:
            log.info("Server is ready")  # (a cluster says it once, for all of its nodes)
        if self.route_transport is not None:
            self.route_transport.begin()  # (nats-server starts routing once it is ready)

    @property
    def route_url(self) -> str | None:
        """Where this server listens for routes (``nats://host:port``, the port bound), while
        it runs with ``route_options``; None otherwise."""
        transport = self.route_transport
        if transport is None or not transport.port:
            return None
        host = transport.options.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        return f"nats://{_host_port(host, transport.port)}"

    async def _bind_routes(self) -> None:
        """Bind the route port before the server says it is ready (nats-server's fatal
        line, and the client port closed again, when it cannot)."""
        from minijs.routeconfig import check_options

        transport = self.route_transport
        options = self.config.route_options
        assert options is not None  # (the route transport exists for route_options only)
        try:
            check_options(options)
            await transport.bind()
        except (OSError, ValueError) as exc:
            self.route_transport = None
            self.stop_listening()
            await self.listener_closed()
            if isinstance(exc, OSError):
                reason = exc.strerror or str(exc)
                if "): " in reason:
                    reason = reason.rsplit("): ", 1)[1]
                hp = _host_port(options.host, options.port)
                raise StartupError(f"Error listening on router port: {options.port} - listen "
                                   f"tcp {hp}: bind: {reason.lower()}") from None
            raise StartupError(str(exc)) from None

    async def _preload(self, source: Any) -> None:
        """Create what the preload names through the server's own ``$JS.API`` (see
        :mod:`minijs.preload`); a refused entry stops the server and fails the start."""
        from minijs import preload as P

        request, close = P.internal_requester(self)
        try:
            count = await P.apply(source, request)
        except P.PreloadError as exc:
            close()
            await self._shutdown(keep_files=False)
            raise StartupError(f"Preload failed: {exc}") from None
        close()
        self.log.info(f"Preloaded {count} entries from {P.source_name(source)}")

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, flush what clients are owed, close them."""
        if not self.running:
            return
        await self._shutdown(keep_files=False)
        assert self._stopped is not None
        self._stopped.set()

    async def lame_duck_mode(self) -> None:
        """nats-server's lame duck mode (``SIGUSR2``), then a shutdown: stop accepting clients
        and shut JetStream down; tell each client that takes async INFO (protocol 1, past its
        first PING) with an INFO carrying ``"ldm":true``; after ``lame_duck_grace_period``,
        close the clients one at a time, spread over the rest of ``lame_duck_duration`` (each
        pause a random part of its share, at least half of it and at most 1 s); then stop.
        Returns at once if the server is not running or already in lame duck mode, and early
        if the server is stopped meanwhile. Timers on the server clock."""
        if not self.running or self.lame_duck:
            return

        config = self.config
        self.lame_duck = True
        self.log.info("Entering lame duck mode, stop accepting new clients")
        self.stop_listening()
        if self.route_transport is not None:
            self.route_transport.lame_duck()  # peers drop this server's client URLs
        clients = list(self.connections.values())
        notices = self._async_infos(ldm=True)  # nats-server's Info order: after domain
        self._stop_jetstream()  # before the INFO, as nats-server; the INFO still says jetstream
        if not clients:
            await self.stop()
            return
        grace = config.lame_duck_grace_period
        spread = config.lame_duck_duration - grace
        if spread <= 0:
            spread = 1.0
        share = min(spread / len(clients), 1.0)
        pauses = self.randomness.child("lame-duck")
        for conn, notice in notices:
            if not conn.closed:
                conn.send(notice)
        self.flush_soon()
        await self.clock.sleep(grace)
        if not self.running:
            return
        self.log.info("Closing existing clients")
        for i, conn in enumerate(clients):
            conn.close()
            if i == len(clients) - 1:
                break
            await self.clock.sleep(max(pauses.uniform(0, share), share / 2))
            if not self.running:
                return
        await self.stop()

    def _async_infos(self, **extra: Any) -> list[tuple[Any, bytes]]:
        """An async INFO for each client that takes one (protocol 1, past its first PING):
        the INFO it was sent after CONNECT, without ``connect_info`` and ``remote_account``,
        ``extra`` fields before ``api_lvl``."""
        from minijs.protocol import wire

        out = []
        for conn in list(self.connections.values()):
            if conn.closed or conn.protocol < 1 or not conn.sent_connect_info:
                continue
            fields = self.info_fields(conn, connect_info=True)
            for key in ("connect_info", "remote_account"):
                fields.pop(key, None)
            tail: dict[str, Any] = {key: fields.pop(key) for key in ("api_lvl", "xkey")
                                    if key in fields}
            fields.update(extra)
            fields.update(tail)
            out.append((conn, wire.info(fields)))
        return out

    def send_async_info(self) -> None:
        """Tell the clients that take async INFO what changed (a cluster's ``connect_urls``)."""
        for conn, notice in self._async_infos():
            conn.send(notice)
        self.flush_soon()

    async def _shutdown(self, *, keep_files: bool, crash: bool = False) -> str | None:
        """Stop everything; return the private file-stream directory when it is kept."""
        self.running = False
        self.log.info("Initiating Shutdown...")
        if self._ports_file is not None:
            try:
                os.remove(self._ports_file)
            except OSError as exc:
                self.log.error(f"Error cleaning up ports file {self._ports_file}: {exc}")
            self._ports_file = None
        self.stop_listening()
        if self.route_transport is not None:
            transport, self.route_transport = self.route_transport, None
            await transport.stop()
        if self.jetstream_cluster is not None and not crash:
            # Leaders hand over before the links go (nats-server's stepdownRaftNodes).
            self.jetstream_cluster.transfer_leaders()
            for _ in range(2):
                await asyncio.sleep(0)
        if self.membership is not None:
            self.membership.detached(self)
        if self.websocket is not None:
            self.websocket.stop()
        if self.control_plane is not None:
            self.control_plane.stop()
            self.control_plane = None
        if self.monitor is not None:
            await self.monitor.stop()
            self.monitor = None
        if self.operator is not None:
            self.operator.stop()
        temp_dir = self._stop_jetstream(keep_files=keep_files, crash=crash)
        for conn in list(self.connections.values()):
            if crash:
                conn.abort()
            else:
                conn.flush()
                conn.close()
        await self.listener_closed()
        if self.websocket is not None:
            await self.websocket.closed()
            self.websocket = None
        unbind = getattr(self.clock, "unbind", None) if self.owns_clock else None
        if unbind is not None:
            unbind()
        # Give transports a turn to hand their buffers to the kernel.
        await asyncio.sleep(0)
        self.log.info("Server Exiting..")
        return temp_dir

    async def _start_websocket(self) -> None:
        """Bind the ``websocket { }`` listener (``wsproto`` is loaded only now)."""
        try:
            from minijs.core.websocket import WebsocketListener, WebsocketListenError
        except ImportError as exc:
            raise StartupError(f"websocket {{ }} needs the wsproto package ({exc.name} is "
                               "missing): pip install 'minijs[websocket]'") from None
        assert self.config.websocket is not None  # (called for a websocket { } block only)
        listener = WebsocketListener(self, self.config.websocket)
        try:
            await listener.start()
        except WebsocketListenError as exc:
            raise StartupError(str(exc)) from None
        self.websocket = listener

    @property
    def websocket_url(self) -> str | None:
        """``ws://host:port`` (``wss://`` with TLS) of the websocket listener, or None."""
        return self.websocket.url if self.websocket is not None else None

    def _start_jetstream(self, temp_dir: str | None = None) -> None:
        """Attach the JetStream engine (recovering file streams) and serve its API.

        ``$JS.API.>`` is subscribed at once, but the API's modules (configs, errors, the
        consumer endpoints) are imported at its first request, so a server that was only
        started is ready sooner. With a domain the API maps its subjects itself: made now.
        With an ``accounts`` block, each account with ``jetstream`` enabled gets its own
        engine (:meth:`_start_account_jetstream`)."""
        from minijs.jetstream.engine import JetStream

        if self.config.accounts:
            self._start_account_jetstream(temp_dir)
            return
        engine = JetStream(self, temp_dir=temp_dir)
        # A cluster's node recovers its streams from the meta group, not from its directory.
        engine.start(recover=self.membership is None)
        self.jetstream = engine
        self.jetstream_group = engine.group
        if self.membership is not None:
            self._start_jetstream_cluster()
        if engine.domain:
            self._jetstream_api_for(engine).start()
        else:
            self._api_door = self.subscribe_internal(b"$JS.API.>", self._on_api_request,
                                                     on_traced=self._on_traced_api_request)

    def _start_account_jetstream(self, temp_dir: str | None) -> None:
        """One engine per account whose ``jetstream`` is enabled, on that account's view of
        the bus, its file streams under ``<store_dir>/jetstream/<account>/streams``; every
        other account (the global one too) answers its API requests 503/10039, as
        nats-server does. Without a store directory the engines share one private
        temporary directory, removed at shutdown."""
        import tempfile

        from minijs.core.accountbus import AccountBus
        from minijs.jetstream.api.dispatch import JetStreamApi
        from minijs.jetstream.engine import JetStream, JetStreamGroup

        config = self.config
        group = JetStreamGroup(config)
        enabled = dict(config.account_jetstream)
        others = [a for a in config.accounts if a != config.system_account]
        if not others and not config.operator:
            # Only the system account is configured: nats-server's globalAccountOnly, the
            # global account gets JetStream with the server's account limits.
            enabled.setdefault(GLOBAL_ACCOUNT, config.js_account_limits)
        if not config.store_dir and temp_dir is None and enabled:
            temp_dir = tempfile.mkdtemp(prefix="minijs-js-")
        self._shared_temp_dir = temp_dir
        group.log_banner(self.log)
        for account in (GLOBAL_ACCOUNT, *config.accounts):
            bus = AccountBus(self, account)
            limits = enabled.get(account)
            if limits is None:
                api = JetStreamApi(None, bus=bus)
            else:
                engine = JetStream(bus, temp_dir=temp_dir, account=account, group=group,
                                   limits=limits, owns_temp_dir=False)
                engine.start(banner=False)
                api = JetStreamApi(engine)
            api.start()
            self.account_apis[account] = api
        self.jetstream_group = group
        if self.membership is not None:
            self._start_jetstream_cluster()
            system = self.account_apis.get(config.system_account or "")
            if system is not None:
                system.system_cluster = self.jetstream_cluster

    def _start_jetstream_cluster(self) -> None:
        """This node's share of the cluster's JetStream: the meta group and its replicas."""
        from minijs.jetstream.cluster.meta import JetStreamCluster

        assert self.membership is not None
        jsc = JetStreamCluster(self, self.membership.cluster_env(self))
        for engine in self.engines().values():
            engine.cluster = jsc
        self.jetstream_cluster = jsc
        jsc.start(bootstrap=self.membership.bootstraps())

    def engines(self) -> dict[str, Any]:
        """Each account's JetStream engine (``{"$G": engine}`` without an accounts block)."""
        group = self.jetstream_group
        return dict(group.engines) if group is not None else {}

    def _jetstream_api_for(self, engine: Any) -> "JetStreamApi":
        from minijs.jetstream.api.dispatch import JetStreamApi

        self.jetstream_api = JetStreamApi(engine)
        return self.jetstream_api

    def _api(self) -> "JetStreamApi | None":
        api = self.jetstream_api
        if api is None and self.jetstream is not None:
            api = self._jetstream_api_for(self.jetstream)
        return api

    def _on_api_request(self, sub: Any, subject: bytes, reply: bytes | None,
                        hdr: bytes | None, payload: bytes, origin: Any) -> None:
        api = self._api()
        if api is not None:
            api._on_request(sub, subject, reply, hdr, payload, origin)

    def _on_traced_api_request(self, sub: Any, trace: Any, subject: bytes, reply: bytes | None,
                               hdr: bytes | None, payload: bytes, origin: Any) -> bool:
        """A traced API request reaches the API's own tracing handler (the ``si`` event)."""
        api = self._api()
        if api is None:
            return False
        return api._on_traced_request(sub, trace, subject, reply, hdr, payload, origin)

    def _stop_jetstream(self, *, keep_files: bool = False, crash: bool = False) -> str | None:
        """Waiting pulls hear of the shutdown, the API stops answering, then the engine closes
        its streams and consumers (a crash skips the goodbyes and the final commit)."""
        if self.account_apis:
            return self._stop_account_jetstream(keep_files=keep_files, crash=crash)
        engine = self.jetstream
        if engine is None:
            return None
        jsc = self.jetstream_cluster
        if jsc is not None:
            self.jetstream_cluster = None
            jsc.stop(crash=crash)
        if not crash:
            engine.signal_shutdown()
        if self._api_door is not None:
            self.unsubscribe_internal(self._api_door)
            self._api_door = None
        if self.jetstream_api is not None:
            self.jetstream_api.stop()
            self.jetstream_api = None
        temp_dir = engine.temp_dir
        if crash:
            engine.abandon()
        else:
            engine.stop(keep_files=keep_files)
        self.jetstream = None
        self.jetstream_group = None
        return temp_dir if keep_files or crash else None

    def _stop_account_jetstream(self, *, keep_files: bool, crash: bool) -> str | None:
        jsc = self.jetstream_cluster
        if jsc is not None:
            self.jetstream_cluster = None
            jsc.stop(crash=crash)
        group = self.jetstream_group
        assert group is not None  # (set with the account APIs)
        engines = list(group.engines.values())
        if not crash:
            for engine in engines:
                engine.signal_shutdown()
        for api in self.account_apis.values():
            api.stop()
        self.account_apis = {}
        for engine in engines:
            if crash:
                engine.abandon()
            else:
                engine.stop(keep_files=keep_files)
        self.jetstream_group = None
        temp_dir, self._shared_temp_dir = self._shared_temp_dir, None
        if temp_dir is not None and not (keep_files or crash):
            import shutil

            shutil.rmtree(temp_dir, ignore_errors=True)
            return None
        return temp_dir

    async def serve_forever(self) -> None:
        """Wait until :meth:`stop` is called."""
        assert self._stopped is not None, "start() first"
        await self._stopped.wait()

    async def __aenter__(self) -> "Server":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _write_ports_file(self, directory: str) -> None:
        """``<exe>_<pid>.ports`` in ``directory``: the client (and monitoring) URLs as JSON, as
        nats-server writes it for harnesses that start it on random ports."""
        exe = os.path.basename(sys.argv[0])
        if not exe or exe == "__main__.py":  # python -m minijs
            exe = "minijs"
        path = os.path.join(directory, f"{exe}_{os.getpid()}.ports")
        info: dict[str, list[str]] = {"nats": [f"nats://{h}:{self.port}"
                                               for h in _listen_hosts(self.config.host)]}
        if self.monitor is not None and self.monitor.port:
            info["monitoring"] = [f"http://{h}:{self.monitor.port}"
                                  for h in _listen_hosts(self.config.http_host or
                                                         self.config.host)]
        transport = self.route_transport
        if transport is not None and transport.port:  # the route port, as nats-server lists it
            info["cluster"] = [f"nats://{h}:{transport.port}"
                               for h in _listen_hosts(transport.options.host)]
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(dumps_compact(info))
        except OSError as exc:
            self.log.error(f"Error writing ports file ({path}): {exc}")
            return
        self._ports_file = path

    def reload(self, config: ServerConfig | None = None) -> None:
        """Reload the configuration as nats-server does on ``SIGHUP`` (see
        :mod:`minijs.reload`): ``config``, else the config file again (``config_loader``, or
        ``config_file``). Each change is applied and logged (``Reloaded: ...``, then
        ``Reloaded server configuration``); live clients are checked against the new users
        and permissions. A file that does not parse or an option that cannot be reloaded
        raises :class:`minijs.reload.ReloadError` (logged as ``Failed to reload server
        configuration: ...``) and changes nothing."""
        from minijs.config import ConfigError
        from minijs.reload import ReloadError, reload

        try:
            if config is None:
                if self.config_loader is not None:
                    config = self.config_loader()
                elif self.config_file:
                    from minijs.confparse import load_config

                    config = load_config(self.config_file, ServerConfig())
                else:
                    raise ReloadError("can only reload config when a file is provided using "
                                      "-c or --config")
            lines = reload(self, config)
        except (ReloadError, ConfigError) as exc:
            self.log.error(f"Failed to reload server configuration: {exc}")
            raise ReloadError(str(exc)) from None
        for line in lines:
            self.log.info(line)
        digest = ""
        if self.config_file:
            from minijs.confparse import config_digest

            try:
                digest = f" ({config_digest(self.config_file)})"
            except OSError:
                pass
        self.log.info(f"Reloaded server configuration{digest}")
        self.flush_soon()

    def reopen_log_file(self) -> None:
        """``SIGUSR1``: reopen the log file (after a rotation moved it), as nats-server does."""
        reopen = getattr(self.log, "reopen", None)
        if reopen is not None and reopen():
            self.log.info("File log re-opened")
        else:
            self.log.info("File log re-open ignored, not a file logger")

    # ----------------------------------------------------------------- test control

    async def restart(self) -> None:
        """Stop and start again on the same port, as a restarted nats-server: file streams and
        their consumers' state are kept, memory streams are gone, clients are disconnected and
        reconnect as they would. Fault rules and the clock carry on."""
        await self._restart(crash=False)

    async def crash(self) -> None:
        """Like :meth:`restart`, without a clean shutdown: sockets are cut, nothing buffered is
        committed, waiting pulls hear nothing (what a killed process leaves behind)."""
        await self._restart(crash=True)

    async def _restart(self, *, crash: bool) -> None:
        if not self.running:
            raise RuntimeError("the server is not running; start() it first")
        port = self.port
        self.log.info(f"minijs {'crash' if crash else 'restart'} requested")
        temp_dir = await self._shutdown(keep_files=True, crash=crash)
        self.config = self.config.with_overrides(port=port)
        await self._startup(temp_dir)

    def reset(self, *, disconnect: bool = False) -> None:
        """Empty the server for the next test: every stream (KV buckets and object stores are
        streams) and consumer, fault rules and their log, API counters, and a virtual clock
        back to its start. Connections stay unless ``disconnect``."""
        if self._faults is not None:
            self._faults.reset()
        clock_reset = getattr(self.clock, "reset", None)
        if clock_reset is not None:
            clock_reset()  # drops every timer: all of them belong to what is reset below
        for engine in self.engines().values():
            engine.reset()
        if disconnect:
            for conn in list(self.connections.values()):
                conn.flush()
                conn.close()
        self.log.info("minijs reset")

    # ----------------------------------------------------------------- inspection

    def streams(self) -> list[snapshots.StreamSnapshot]:
        """Snapshots of every stream of every account (config, counts, sequences, consumers,
        subjects), by account and name."""
        return _snapshots().streams(self)

    # With an accounts block, ``account=`` names the stream's account; without it, the one
    # stream of that name in any account is meant (an error when several accounts have one).

    def stream(self, name: str, *, account: str | None = None) -> snapshots.StreamSnapshot:
        """One stream's snapshot; ``LookupError`` when there is none of that name (or, with an
        accounts block, when several accounts have one and ``account`` is not given)."""
        return _snapshots().stream(self, name, account)

    def messages(self, stream: str, *, subject: str | None = None, start_seq: int = 1,
                 limit: int = 1000, account: str | None = None
                 ) -> list[snapshots.MessageSnapshot]:
        """Stored messages of ``stream`` (optionally matching ``subject``), in sequence order."""
        return _snapshots().messages(self, stream, subject=subject, start_seq=start_seq,
                                     limit=limit, account=account)

    def message(self, stream: str, seq: int, *, account: str | None = None
                ) -> snapshots.MessageSnapshot | None:
        """The message at ``seq`` in ``stream``, or None when that sequence holds none."""
        return _snapshots().message(self, stream, seq, account)

    def consumer(self, stream: str, name: str, *, account: str | None = None
                 ) -> snapshots.ConsumerSnapshot:
        """A consumer's delivered and ack-floor positions, pending acks (with delivery counts
        and due times) and waiting pull requests."""
        return _snapshots().consumer(self, stream, name, account)

    def connections_info(self) -> list[snapshots.ConnectionSnapshot]:
        """Open client connections: name, subscriptions, pending bytes."""
        return _snapshots().connections(self)

    def fault_log(self) -> list[FaultEvent]:
        """Every fault injected so far, oldest first (see :attr:`faults`)."""
        return list(self._faults.log) if self._faults is not None else []

    def fault_rules(self) -> list[FaultRule]:
        """The fault rules in force, in the order they were added (a rule whose ``count`` is
        spent is gone)."""
        return list(self._faults.rules) if self._faults is not None else []


def _check_account_jetstream_limits(config: ServerConfig) -> None:
    """The configured accounts' JetStream limits must fit the server's, as nats-server checks
    before it starts (a fatal ``Can't start JetStream`` otherwise)."""
    from minijs.jetstream.engine import JetStreamGroup
    from minijs.jetstream.errors import ApiError

    group = JetStreamGroup(config)
    enabled = [limits for _, limits in config.account_jetstream]
    try:
        group.check_account_limits(enabled)
    except ApiError as exc:
        raise StartupError("Can't start JetStream: Error enabling jetstream on configured "
                           f"accounts: {exc.description} ({exc.err_code})") from None


def _log_tls(log: Logger, config: ServerConfig) -> None:
    """nats-server's lines about TLS for client connections."""
    tls = config.tls
    assert tls is not None  # (called for a tls { } block only)
    first_only = tls.handshake_first and not tls.fallback_delay
    if config.allow_non_tls and not first_only:
        log.info("TLS available for client connections")
    else:
        log.info("TLS required for client connections")
    if first_only:
        log.warn('Clients that are not using "TLS Handshake First" option will fail to connect')


def _snapshots() -> Any:
    from minijs.control import snapshots

    return snapshots


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _listen_hosts(host: str) -> list[str]:
    """The addresses a listener on ``host`` answers on, URL-ready (loopback first)."""
    if host not in ("0.0.0.0", "", "::"):
        return [f"[{host}]" if ":" in host else host]
    ipv6 = host != "0.0.0.0"  # a 0.0.0.0 listener answers on IPv4 only
    found = ["127.0.0.1", "[::1]"] if ipv6 else ["127.0.0.1"]
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        infos = []
    for family, _, _, _, addr in infos:
        if family == socket.AF_INET6 and not ipv6:
            continue
        ip = addr[0]
        if not isinstance(ip, str):  # (an IP family's address is a str)
            continue
        entry = f"[{ip}]" if family == socket.AF_INET6 else ip
        if entry not in found and not ip.startswith("127."):
            found.append(entry)
    return found


class ThreadFaults:
    """``server.faults`` of a :class:`ServerThread`: each call runs on the server's loop."""

    def __init__(self, thread: "ServerThread") -> None:
        self._thread = thread

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._thread._server().faults, name)
        if not callable(attr):
            # A copy taken on the loop (``rules``, ``log``): the live list keeps changing there.
            return self._thread.call(lambda: _copied(getattr(self._thread._server().faults,
                                                             name)))
        return lambda *a, **kw: self._thread.call(attr, *a, **kw)


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


class ServerThread:
    """A server on a background thread, for synchronous tests (unittest, Django, plain pytest).

    ``with ServerThread(port=0) as srv: connect(srv.client_url)``. The server's state stays
    owned by that thread's event loop: every method here (inspection, reset, faults, restart)
    runs there and returns its result, so a test never races the server. ``clock`` works as
    for :class:`Server`; ``srv.clock`` is the server's clock: reading it and its
    ``advance()``, ``advance_async()`` and ``reset()`` are safe from the test's thread (they
    run on the server's loop); schedule timers on it only from that loop (:meth:`call`).
    """

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | str | None = None,
                 seed: "int | RandomSource | None" = None, **overrides: Any) -> None:
        if overrides.get("loop_clock"):
            from minijs.clock import ClockError

            raise ClockError(
                "a ServerThread runs its own event loop on another thread, which cannot share "
                "the test's loop time: start a Server in the test's own loop with "
                "loop_clock=True (the minijs_async_server fixture with "
                "@pytest.mark.minijs(clock='auto', loop_clock=True)), or use clock='auto'")
        overrides.pop("loop_clock", None)
        if config is None:
            overrides.setdefault("port", 0)  # a thread-run test server wants a free port
        self._config = config
        self._overrides = overrides
        self._clock = make_clock(clock)
        #: Taken here, in the caller's thread (see :func:`minijs.randomness.server_source`).
        self.randomness = server_source(seed)
        self.server: Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.faults = ThreadFaults(self)

    def start(self) -> "ServerThread":
        """Start the thread and the server on it; return once clients can connect (or raise
        what the start raised, e.g. a ``StartupError``)."""
        self._thread = threading.Thread(target=self._run, name="minijs-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        from minijs.eventloop import loop_choice, loop_factory

        try:  # asyncio, or uvloop with MINIJS_LOOP=uvloop|auto (minijs/eventloop.py)
            loop = loop_factory(loop_choice())()
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self.server = Server(self._config, clock=self._clock, seed=self.randomness,
                                 **self._overrides)
            loop.run_until_complete(self.server.start())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_until_complete(self.server.serve_forever())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self) -> None:
        """Stop the server gracefully and end its thread."""
        if self._loop is None or self.server is None or self._thread is None:
            return
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop)
            future.result(timeout=10)
            self._thread.join(timeout=10)

    def _server(self) -> Server:
        if self.server is None:
            raise RuntimeError("start() the ServerThread first")
        return self.server

    @overload
    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T: ...

    @overload
    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the server's loop and return its result (a coroutine
        function is awaited there)."""
        server = self._server()
        loop = self._loop
        assert loop is not None
        if threading.current_thread() is self._thread:
            raise RuntimeError("ServerThread.call from the server's own thread; call directly")

        async def run() -> Any:
            result = fn(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            server.settle()
            return result

        future: concurrent.futures.Future = asyncio.run_coroutine_threadsafe(run(), loop)
        return future.result(timeout=60)

    # ----------------------------------------------------------------- the server's powers

    @property
    def clock(self) -> Clock:
        """The server's clock (``advance()``, ``advance_async()``, ``time()``, ``reset()``
        are safe from the test's thread)."""
        return self._server().clock

    @property
    def seed(self) -> int:
        """The seed of the server's random choices (see :attr:`Server.seed`)."""
        return self.randomness.seed

    def reset(self, *, disconnect: bool = False) -> None:
        """:meth:`Server.reset`, on the server's loop."""
        self.call(self._server().reset, disconnect=disconnect)

    def restart(self) -> None:
        """:meth:`Server.restart`; returns once the server listens again."""
        self.call(self._server().restart)

    def crash(self) -> None:
        """:meth:`Server.crash`; returns once the server listens again."""
        self.call(self._server().crash)

    def streams(self) -> list[snapshots.StreamSnapshot]:
        """:meth:`Server.streams`."""
        return self.call(self._server().streams)

    def stream(self, name: str, **kw: Any) -> snapshots.StreamSnapshot:
        """:meth:`Server.stream` (``account=`` as there)."""
        return self.call(self._server().stream, name, **kw)

    def messages(self, stream: str, **kw: Any) -> list[snapshots.MessageSnapshot]:
        """:meth:`Server.messages` (``subject=``, ``start_seq=``, ``limit=``, ``account=``)."""
        return self.call(self._server().messages, stream, **kw)

    def message(self, stream: str, seq: int, **kw: Any) -> snapshots.MessageSnapshot | None:
        """:meth:`Server.message`."""
        return self.call(self._server().message, stream, seq, **kw)

    def consumer(self, stream: str, name: str, **kw: Any) -> snapshots.ConsumerSnapshot:
        """:meth:`Server.consumer` (``account=`` as there)."""
        return self.call(self._server().consumer, stream, name, **kw)

    def connections_info(self) -> list[snapshots.ConnectionSnapshot]:
        """:meth:`Server.connections_info`."""
        return self.call(self._server().connections_info)

    def fault_log(self) -> list[FaultEvent]:
        """:meth:`Server.fault_log`."""
        return self.call(self._server().fault_log)

    def fault_rules(self) -> list[FaultRule]:
        """:meth:`Server.fault_rules`."""
        return self.call(self._server().fault_rules)

    @property
    def client_url(self) -> str:
        """``nats://127.0.0.1:<port>``: where clients connect."""
        return self._server().client_url

    @property
    def port(self) -> int:
        """The client port the server listens on (the one it picked for ``port=0``)."""
        return self._server().port

    # ----------------------------------------------------------------- a cluster's powers

    @property
    def nodes(self) -> list["ThreadNode"]:
        """With ``cluster_size`` > 1: the nodes (each call runs on the server's loop)."""
        cluster = self._server()
        if not hasattr(cluster, "nodes"):
            raise AttributeError("a single server has no nodes; start it with cluster_size=3")
        return [ThreadNode(self, node.name) for node in cluster.nodes]

    def node(self, name: str) -> "ThreadNode":
        self.call(self._server().node, name)  # type: ignore[attr-defined]
        return ThreadNode(self, name)

    @property
    def client_urls(self) -> list[str]:
        return list(getattr(self._server(), "client_urls", [self.client_url]))

    def partition(self, *groups: list[str]) -> None:
        self.call(self._server().partition, *groups)  # type: ignore[attr-defined]

    def heal(self) -> None:
        self.call(self._server().heal)  # type: ignore[attr-defined]

    def cluster(self) -> dict[str, Any]:
        return self.call(self._server().cluster)  # type: ignore[attr-defined]

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ThreadNode:
    """A node of a :class:`ServerThread`'s cluster: its calls run on the server's loop."""

    def __init__(self, thread: ServerThread, name: str) -> None:
        self._thread = thread
        self.name = name

    def _node(self) -> Any:
        return self._thread._server().node(self.name)  # type: ignore[attr-defined]

    @property
    def client_url(self) -> str:
        return self._node().client_url

    @property
    def up(self) -> bool:
        return self._node().up

    @property
    def monitor_port(self) -> int | None:
        """This node's monitoring port, or None without monitoring."""
        return self._node().monitor_port

    def kill(self) -> None:
        self._thread.call(lambda: self._node().kill())

    def crash(self) -> None:
        self._thread.call(lambda: self._node().crash())

    def restart(self) -> None:
        self._thread.call(lambda: self._node().restart())

    def __repr__(self) -> str:
        return f"<ThreadNode {self.name}>"
