"""The server: lifecycle, the accept loop, and the router every message goes through.

Everything is a subscriber: client SUBs and the server's own handlers (JetStream streams, the
API, consumers) sit in one :class:`~minijs.core.sublist.Sublist`, and :meth:`Server.publish` is
the single path a message takes, whether a client or the server itself sent it.
"""
from __future__ import annotations

import asyncio
import base64
import random
import secrets
import threading
from dataclasses import dataclass
from typing import Any, Callable

from minijs.clock import Clock, WallClock
from minijs.config import API_LEVEL, GIT_COMMIT, GO_VERSION, NATS_SERVER_VERSION, ServerConfig
from minijs.core.connection import Connection
from minijs.core.sublist import Subscription, Sublist
from minijs.log import NULL_LOGGER, Logger
from minijs.protocol import wire

#: The first client id handed out; nats-server's own internal clients take the ones below.
FIRST_CLIENT_ID = 5


@dataclass(slots=True)
class ServerStats:
    in_msgs: int = 0
    out_msgs: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    slow_consumers: int = 0


def _nkey_like(prefix: str) -> str:
    """A 56-character upper-case base32 id like nats-server's public nkeys (N... / X...)."""
    body = base64.b32encode(secrets.token_bytes(35)).decode().rstrip("=")
    return (prefix + body)[:56]


InternalHandler = Callable[[Subscription, bytes, "bytes | None", "bytes | None", bytes, Any], None]


class Server:
    """A NATS server in this process's event loop.

    ``Server(port=0)`` picks a free port; ``await server.start()`` binds and returns once
    clients can connect; ``client_url`` says where. ``async with Server() as s:`` does both ends.
    """

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | None = None,
                 logger: Logger | None = None, **overrides: Any) -> None:
        config = config or ServerConfig()
        if overrides:
            config = config.with_overrides(**overrides)
        self.config = config
        self.clock: Clock = clock or WallClock()
        self.log: Logger = logger or NULL_LOGGER
        self.server_id = _nkey_like("N")
        self.server_name = config.server_name or self.server_id
        self.xkey = _nkey_like("X")
        self.sublist = WatchedSublist()
        self.connections: dict[int, Connection] = {}
        self.total_connections = 0
        self.stats = ServerStats()
        self.start_time = 0.0
        self.port = 0
        self.monitor: Any = None
        #: The JetStream engine, once one is attached. INFO advertises ``jetstream`` only then,
        #: so a client is never told JetStream is there when nothing would answer its API.
        self.jetstream: Any = None
        self._next_cid = FIRST_CLIENT_ID
        self._listener: asyncio.base_events.Server | None = None
        self._dirty: list[Connection] = []
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self.running = False

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Bind the client port (and the monitor, if configured); log as nats-server does."""
        if self.running:
            return
        config = self.config
        log = self.log
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self.start_time = self.clock.time()
        log.info("Starting nats-server")
        log.info(f"  Version:  {NATS_SERVER_VERSION} (minijs)")
        log.info(f"  Git:      [{GIT_COMMIT}]")
        log.info(f"  Name:     {self.server_name}")
        log.info(f"  ID:       {self.server_id}")
        port = config.port if config.port > 0 else 0
        self._listener = await self._loop.create_server(
            lambda: Connection(self), host=config.host, port=port, reuse_address=True,
            backlog=1024)
        self.port = self._listener.sockets[0].getsockname()[1]
        self.running = True
        if config.http_port is not None:
            from minijs.monitor import Monitor

            self.monitor = Monitor(self)
            await self.monitor.start()
        if config.jetstream and self.jetstream is None:
            from minijs.jetstream.engine import JetStream
            engine = JetStream(self)
            engine.start()
            self.jetstream = engine
        log.info(f"Listening for client connections on {_host_port(config.host, self.port)}")
        log.info("Server is ready")

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, flush what clients are owed, close them."""
        if not self.running:
            return
        self.running = False
        self.log.info("Initiating Shutdown...")
        assert self._listener is not None
        self._listener.close()
        if self.monitor is not None:
            await self.monitor.stop()
        if self.jetstream is not None:
            self.jetstream.stop()
            self.jetstream = None
        conns = list(self.connections.values())
        for conn in conns:
            conn.flush()
            conn.close()
        await self._listener.wait_closed()
        # Give transports a turn to hand their buffers to the kernel.
        await asyncio.sleep(0)
        self.log.info("Server Exiting..")
        assert self._stopped is not None
        self._stopped.set()

    async def serve_forever(self) -> None:
        """Wait until :meth:`stop` is called."""
        assert self._stopped is not None, "start() first"
        await self._stopped.wait()

    async def __aenter__(self) -> "Server":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def client_url(self) -> str:
        host = self.config.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"nats://{host}:{self.port}"

    # ----------------------------------------------------------------- connections

    def register(self, conn: Connection) -> int:
        cid = self._next_cid
        self._next_cid += 1
        self.connections[cid] = conn
        self.total_connections += 1
        return cid

    def unregister(self, conn: Connection) -> None:
        self.connections.pop(conn.cid, None)

    def info_fields(self, conn: Connection | None = None, *, connect_info: bool = False
                    ) -> dict[str, Any]:
        """INFO fields in nats-server's order, with its omit-when-empty rules."""
        config = self.config
        fields: dict[str, Any] = {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "version": NATS_SERVER_VERSION,
            "proto": 1,
            "git_commit": GIT_COMMIT,
            "go": GO_VERSION,
            "host": config.host,
            "port": self.port,
            "headers": True,
        }
        if config.auth_required:
            fields["auth_required"] = True
        fields["max_payload"] = config.max_payload
        if self.jetstream is not None:
            fields["jetstream"] = True
        if conn is not None:
            fields["client_id"] = conn.cid
            if conn.host:
                fields["client_ip"] = conn.host
        if connect_info:
            fields["connect_info"] = True
            fields["remote_account"] = "$G"
        fields["api_lvl"] = API_LEVEL
        fields["xkey"] = self.xkey
        return fields

    # ----------------------------------------------------------------- output batching

    def mark_dirty(self, conn: Connection) -> None:
        self._dirty.append(conn)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop = self._loop or asyncio.get_running_loop()
            loop.call_soon(self._flush_all)

    def flush_soon(self) -> None:
        """Ask for queued output to be written at the end of this event-loop turn."""
        if self._dirty and not self._flush_scheduled:
            self._flush_scheduled = True
            loop = self._loop or asyncio.get_running_loop()
            loop.call_soon(self._flush_all)

    def end_of_input(self) -> None:
        """A client's input chunk is processed: commit JetStream writes (which releases their
        pub acks) and write every client's queued output now, saving an event-loop turn of
        latency per round trip. Output produced outside input handling still goes out at the
        end of the turn (:meth:`flush_soon`)."""
        js = self.jetstream
        if js is not None and js.has_dirty:
            js.flush_dirty()
        if self._dirty:
            self._flush_all()

    def _flush_all(self) -> None:
        self._flush_scheduled = False
        dirty = self._dirty
        self._dirty = []
        for conn in dirty:
            conn.flush()

    # ----------------------------------------------------------------- routing

    def add_subscription(self, sub: Subscription) -> None:
        self.sublist.insert(sub)

    def remove_subscription(self, sub: Subscription) -> None:
        self.sublist.remove(sub)

    def subscribe_internal(self, subject: str | bytes, handler: InternalHandler,
                           queue: bytes | None = None) -> Subscription:
        """Register a server-side handler: ``handler(sub, subject, reply, header, payload, origin)``."""
        if isinstance(subject, str):
            subject = subject.encode()
        sub = Subscription(subject, b"", queue, conn=None, callback=handler)
        self.sublist.insert(sub)
        return sub

    def unsubscribe_internal(self, sub: Subscription) -> None:
        sub.closed = True
        self.sublist.remove(sub)

    def watch_interest(self, subject: bytes, callback: Callable[[], None]) -> Any:
        """Call ``callback()`` (soon, from the event loop) whenever a subscription whose subject
        is exactly ``subject`` comes or goes, like nats-server's sublist notifications that
        push consumers register on their deliver subject. Returns a handle for
        :meth:`unwatch_interest`."""
        return self.sublist.watch(subject, callback)

    def unwatch_interest(self, handle: Any) -> None:
        self.sublist.unwatch(handle)

    def has_exact_interest(self, subject: bytes, queue: bytes | None = None) -> bool:
        """Is there a live subscription on exactly ``subject`` (a plain one, or with ``queue`` a
        member of that queue group)? Wildcard subscriptions that merely match do not count."""
        return self.sublist.has_exact(subject, queue)

    def num_subscriptions(self) -> int:
        return self.sublist.count

    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: Connection | None = None) -> int:
        """Route one message to every matching subscriber; return how many received it.

        Plain subscribers each get a copy; each queue group gives one to a random member. A
        requester that asked for no-responders gets the 503 status when nobody received it.
        """
        result = self.sublist.match(subject)
        groups = result.groups
        delivered = 0
        if result.plain or groups:
            for sub in result.plain:
                if sub.closed:
                    continue
                conn = sub.conn
                if conn is None:
                    sub.callback(sub, subject, reply, header, payload, origin)
                    delivered += 1
                elif conn is origin and not conn.echo:
                    continue
                else:
                    conn.deliver(sub, subject, reply, header, payload)
                    delivered += 1
            if groups:
                for members in groups.values():
                    sub = _pick_member(members, origin)
                    if sub is None:
                        continue
                    if sub.conn is None:
                        sub.callback(sub, subject, reply, header, payload, origin)
                    else:
                        sub.conn.deliver(sub, subject, reply, header, payload)
                    delivered += 1
            if delivered:
                stats = self.stats
                stats.out_msgs += delivered
                stats.out_bytes += delivered * (len(payload) + (len(header) if header else 0))
        if not delivered and reply and origin is not None and origin.no_responders:
            self._no_responders(subject, reply, origin)
        return delivered

    def _no_responders(self, subject: bytes, reply: bytes, origin: Connection) -> None:
        for sub in self.sublist.match(reply).plain:
            if sub.conn is origin and not sub.closed:
                origin.deliver(sub, reply, None, wire.no_responders_header(subject), b"")
                return


class WatchedSublist(Sublist):
    """The server's sublist: a :class:`Sublist` that also tells watchers when a subscription
    on a watched literal subject is inserted or removed (whoever removes it: UNSUB, a closed
    connection, auto-unsubscribe)."""

    def __init__(self) -> None:
        super().__init__()
        self._watchers: dict[bytes, list[Callable[[], None]]] = {}

    def watch(self, subject: bytes, callback: Callable[[], None]) -> tuple:
        self._watchers.setdefault(subject, []).append(callback)
        return (subject, callback)

    def unwatch(self, handle: tuple) -> None:
        subject, callback = handle
        cbs = self._watchers.get(subject)
        if cbs and callback in cbs:
            cbs.remove(callback)
            if not cbs:
                del self._watchers[subject]

    def insert(self, sub: Subscription) -> None:
        super().insert(sub)
        if self._watchers and sub.subject in self._watchers:
            self._notify(sub.subject)

    def remove(self, sub: Subscription) -> bool:
        removed = super().remove(sub)
        if removed and self._watchers and sub.subject in self._watchers:
            self._notify(sub.subject)
        return removed

    def _notify(self, subject: bytes) -> None:
        loop = asyncio.get_running_loop()
        for cb in list(self._watchers.get(subject, ())):
            loop.call_soon(cb)

    def has_exact(self, subject: bytes, queue: bytes | None = None) -> bool:
        node = self._root
        for tok in subject.split(b"."):
            node = node.children.get(tok)  # type: ignore[assignment]
            if node is None:
                return False
        if queue is None:
            return any(not s.closed for s in node.plain)
        return any(not s.closed for s in node.groups.get(queue, ()))


def pick_member(members: list[Subscription], origin: Connection | None = None
                ) -> Subscription | None:
    """One random live member of a queue group (public form of the router's choice)."""
    return _pick_member(members, origin)


def _pick_member(members: list[Subscription], origin: Connection | None) -> Subscription | None:
    """One random live member of a queue group (not the publisher itself when echo is off)."""
    n = len(members)
    start = random.randrange(n) if n > 1 else 0
    for i in range(n):
        sub = members[(start + i) % n]
        if sub.closed:
            continue
        if sub.conn is not None and sub.conn is origin and not origin.echo:
            continue
        return sub
    return None


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ServerThread:
    """A server on a background thread, for synchronous tests (unittest, Django, plain pytest).

    ``with ServerThread(port=0) as srv: connect(srv.client_url)``. The server's state stays
    owned by that thread's event loop; this object only starts and stops it.
    """

    def __init__(self, config: ServerConfig | None = None, **overrides: Any) -> None:
        if config is None:
            overrides.setdefault("port", 0)  # a thread-run test server wants a free port
        self._config = config
        self._overrides = overrides
        self.server: Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> "ServerThread":
        self._thread = threading.Thread(target=self._run, name="minijs-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self.server = Server(self._config, **self._overrides)
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
        if self._loop is None or self.server is None or self._thread is None:
            return
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop)
            future.result(timeout=10)
            self._thread.join(timeout=10)

    @property
    def client_url(self) -> str:
        assert self.server is not None, "start() first"
        return self.server.client_url

    @property
    def port(self) -> int:
        assert self.server is not None, "start() first"
        return self.server.port

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
