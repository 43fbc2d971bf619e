"""The router: connections, subscriptions, and the one path every message takes.

Everything is a subscriber: client SUBs and the server's own handlers (JetStream streams, the
API, consumers) sit in one :class:`~minijs.core.sublist.Sublist`, and :meth:`Router.publish` is
the single path a message takes, whether a client or the server itself sent it.

Invariants:

* one event loop owns every structure here; nothing blocks or takes a lock;
* output is queued per connection and written once per input chunk or event-loop turn
  (:meth:`Router.end_of_input`, :meth:`Router.flush_soon`), never in the middle of routing;
* a subscription on a watched literal subject, inserted or removed by anyone, notifies its
  watchers on the next loop turn (push consumers learn of interest this way);
* a requester that asked for no-responders gets the 503 status exactly when nobody received
  its request.
"""
from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.clock import Clock, WallClock
from minijs.config import (
    API_LEVEL, FEATURE_FLAGS, GIT_COMMIT, GLOBAL_ACCOUNT, GO_VERSION, NATS_SERVER_VERSION,
    SERVER_FLAGS_JETSTREAM, ServerConfig,
)
from minijs.core import services
from minijs.core.connection import Connection
from minijs.core.fanout import fan_out, receivers
from minijs.core.sublist import (
    InternalSubscriptions, MatchResult, SharedMatch, Subscription, Sublist,
)
from minijs.log import NULL_LOGGER, Logger
from minijs.protocol import wire
from minijs.randomness import RandomSource

if TYPE_CHECKING:
    from minijs.core import msgtrace

#: The first client id handed out; nats-server's own internal clients take the ones below.
FIRST_CLIENT_ID = 5


class ServerStats:
    """The server's message and byte counters (``/varz``'s ``in_msgs`` ... ``slow_consumers``).

    A plain class: a ``@dataclass`` compiles its methods at every import, and a start imports
    this module."""

    __slots__ = ("in_msgs", "out_msgs", "in_bytes", "out_bytes", "slow_consumers")

    def __init__(self) -> None:
        self.in_msgs = 0
        self.out_msgs = 0
        self.in_bytes = 0
        self.out_bytes = 0
        self.slow_consumers = 0


def _nkey_like(prefix: str, randomness: RandomSource) -> str:
    """A 56-character upper-case base32 id like nats-server's public nkeys (N... / X...)."""
    body = base64.b32encode(randomness.randbytes(35)).decode().rstrip("=")
    return (prefix + body)[:56]


def _match_one_client(sublist: Sublist, target: bytes
                      ) -> tuple[MatchResult, Subscription | None]:
    """The match of ``target`` in ``sublist`` (from its cache when there), and the one
    subscription that receives it when that is a single plain subscriber of a live client
    connection (None otherwise)."""
    result = sublist.cache.get(target)
    if result is None:
        result = sublist.match(target)
    else:
        sublist.cache_hits += 1
    plain = result.plain
    if len(plain) == 1 and not result.groups:
        sub = plain[0]
        if sub.conn is not None and not sub.closed:
            return result, sub
    return result, None


InternalHandler = Callable[[Subscription, bytes, "bytes | None", "bytes | None", bytes, Any], None]


class TurnCommit(Protocol):
    """The end-of-turn commit hook: what the router asks of the floor that buffers writes
    (JetStream's engines, which share one) before it writes the output queued this turn, so
    that a pub ack never leaves before the message it acknowledges is committed."""

    @property
    def has_dirty(self) -> bool:
        """Are writes buffered that this turn has not committed yet?"""

    def flush_dirty(self) -> None:
        """Commit them (which queues the pub acks and deliveries that waited for them)."""


class OperatorAccounts(Protocol):
    """Operator mode's accounts and users (accounts from JWTs), as the router and its
    connections use them."""

    def authenticate(self, conn: Any, opts: dict[str, Any]) -> bool:
        """Does the CONNECT ``opts`` prove a user of an account the operator signed?"""

    def forget(self, conn: Any) -> None:
        """``conn`` closed: it no longer counts against its account."""

    def log_startup(self, log: Logger) -> None:
        """The start-up lines nats-server logs in operator mode."""

    def start(self) -> None:
        """Listen for account claim updates (once the server's system account runs)."""

    def stop(self) -> None:
        """Stop listening."""


class OperatorMode(Protocol):
    """How a router is given operator mode, by the floor that reads JWTs
    (:mod:`minijs.operatormode`)."""

    def expand(self, config: ServerConfig, log: Logger | None, now: float) -> ServerConfig:
        """The configuration with the operator's accounts (from their JWTs, checked at
        ``now``) filled in."""

    def start(self, router: "Router") -> OperatorAccounts:
        """The accounts and users of ``router``'s operator."""


class Router(InternalSubscriptions):
    """The routing floor of a server: its connections, subscriptions and the publish path.

    :class:`minijs.server.Server` builds on it (lifecycle, JetStream, monitoring); the floors
    above receive it as their message bus.
    """

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | None = None,
                 logger: Logger | None = None, randomness: RandomSource | None = None,
                 operator_mode: "OperatorMode | None" = None, **overrides: Any) -> None:
        config = config or ServerConfig()
        if overrides:
            config = config.with_overrides(**overrides)
        self.clock: Clock = clock or WallClock()
        if config.operator:  # operator mode: its accounts come from JWTs
            if operator_mode is None:
                raise ValueError("an operator is configured: the router needs its operator mode")
            config = operator_mode.expand(config, logger, self.clock.time())
        self.config = config
        self.log: Logger = logger or NULL_LOGGER
        #: Every random choice of this server and of the floors it hosts is drawn from here
        #: (each user takes a named child stream: see :mod:`minijs.randomness`).
        self.randomness: RandomSource = randomness or RandomSource()
        ids = self.randomness.child("ids")
        self.server_id = _nkey_like("N", ids)
        self.server_name = config.server_name or self.server_id
        self.xkey = _nkey_like("X", ids)
        #: ``randrange(n)``: which member of a queue group gets a message (bound at the first
        #: draw: a server that serves no queue group never loads the ``random`` module).
        self.queue_draw: Callable[[int], int] = self._first_queue_draw
        self.sublist = WatchedSublist()
        #: In a cluster, this node's :class:`~minijs.core.routes.Routes` (the other nodes'
        #: interest as route subscriptions, messages forwarded to them); None otherwise.
        self.routes: Any = None
        #: Each configured account's own subscription index ("$G", the global account, is
        #: :attr:`sublist`, where the server's own handlers live).
        self.account_sublists: dict[str, WatchedSublist] = {GLOBAL_ACCOUNT: self.sublist}
        for name in config.accounts:
            self.account_sublists[name] = WatchedSublist(name)
        for sublist in self.account_sublists.values():
            services.install(self, sublist)
        self._users = {u.user: u for u in config.users if not u.nkey}
        #: nkey users by public key (minijs.auth): clients sign the INFO nonce.
        self.nkey_users = {u.user: u for u in config.users if u.nkey}
        #: Does INFO carry a nonce (nkey users or operator mode configured)?
        self.auth_nonce = bool(self.nkey_users)
        #: Operator mode's accounts and users when an ``operator`` is configured.
        self.operator: OperatorAccounts | None = None
        if config.operator and operator_mode is not None:
            self.operator = operator_mode.start(self)
            self.auth_nonce = True
        #: Accounts' ``limits { }`` (connections, subscriptions, payload), by account.
        self.account_conn_limits: dict[str, Any] = dict(config.account_limits)
        self.connections: dict[int, Connection] = {}
        self.total_connections = 0
        self.stats = ServerStats()
        self.start_time = 0.0
        self.port = 0
        #: The JetStream engine of the global account, once one is attached (with an
        #: ``accounts`` block the global account has none: see :attr:`jetstream_group`).
        self.jetstream: Any = None
        #: Every account's JetStream, once attached: its end-of-turn commit (see
        #: :class:`TurnCommit`; the server above knows it as ``JetStreamGroup``). INFO
        #: advertises ``jetstream`` only then, so a client is never told JetStream is there
        #: when nothing would answer.
        self.jetstream_group: TurnCommit | None = None
        #: ``has_interest(subject)``: does any live subscription match? (the sublist's own test)
        self.has_interest = self.sublist.has_interest
        self._next_cid = FIRST_CLIENT_ID
        self._listener: asyncio.base_events.Server | None = None
        #: The client listener's TLS (minijs.core.tls.ClientTls) when TLS is configured.
        self.client_tls: Any = None
        self._dirty: list[Connection] = []
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._note_activity: Callable[[], None] | None = None
        #: Fault injection (test control): an object with ``on_publish`` and ``on_deliver``
        #: consulted for every message while it is set; None (no cost) otherwise.
        self.fault_hook: Any = None
        #: Shown each connection once as it closes (the monitor keeps closed ones for
        #: ``/connz?state=closed``); None (no cost) otherwise.
        self.closed_hook: Any = None
        self.running = False
        #: False for a node of an in-process cluster: the cluster binds the shared clock.
        self.owns_clock = True
        #: The sequence of the server's own system messages (trace events' ``server.seq``).
        self._sys_seq = 0
        #: Accounts' ``msg_trace``: where a sampled ``traceparent`` of their clients is traced.
        self.account_traces: dict[str, tuple[str, int]] = {
            acc: (dest, sampling) for acc, dest, sampling in config.account_traces}
        #: Accounts' exports/imports and mappings (minijs.core.imports), by account: each
        #: involved account's sublist carries its ``links`` / ``mappings`` (None otherwise).
        self.account_links: dict[str, Any] = {}
        if config.imports or config.mappings:
            from minijs.core import imports  # only configs with imports or mappings pay for it
            self.account_links = imports.install(self, config)

    # ----------------------------------------------------------------- listener

    async def listen(self) -> None:
        """Bind the client port; each accepted socket becomes a :class:`Connection`."""
        config = self.config
        self._loop = asyncio.get_running_loop()
        port = config.port if config.port > 0 else 0
        factory: Callable[[], asyncio.Protocol] = lambda: Connection(self)
        if config.tls is not None:
            from minijs.core.tls import secure_factory  # only a TLS server loads ssl

            factory = secure_factory(self, factory)
        sock = dual_stack_socket(config.host, port)
        if sock is not None:
            self._listener = await self._loop.create_server(factory, sock=sock, backlog=1024)
        else:
            self._listener = await self._loop.create_server(
                factory, host=config.host, port=port, reuse_address=True, backlog=1024)
        self.port = self._listener.sockets[0].getsockname()[1]
        if self.owns_clock:  # a cluster's nodes share one clock, which the cluster binds
            bind = getattr(self.clock, "bind", None)
            if bind is not None:
                bind(self._loop, self.settle)
        self._note_activity = getattr(self.clock, "note_activity", None)

    def stop_listening(self) -> None:
        if self._listener is not None:
            self._listener.close()

    async def listener_closed(self) -> None:
        if self._listener is not None:
            await self._listener.wait_closed()

    @property
    def client_url(self) -> str:
        """``nats://HOST:PORT`` for clients (``127.0.0.1`` when bound to every address)."""
        host = self.config.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"nats://{host}:{self.port}"

    # ----------------------------------------------------------------- connections

    def allocate_id(self) -> int:
        """The next connection id, for a connection that is not a client (a route's ``rid``:
        nats-server numbers routes and clients from one sequence)."""
        cid = self._next_cid
        self._next_cid += 1
        return cid

    def register(self, conn: Connection) -> int:
        cid = self._next_cid
        self._next_cid += 1
        self.connections[cid] = conn
        self.total_connections += 1
        return cid

    def unregister(self, conn: Connection) -> None:
        self.connections.pop(conn.cid, None)
        if self.operator is not None:
            self.operator.forget(conn)

    def find_user(self, name: str) -> Any:
        """The configured user called ``name`` (a :class:`~minijs.authconfig.User`), or None."""
        return self._users.get(name)

    def account_sublist(self, account: str) -> "WatchedSublist":
        """The subscription index of ``account`` (created for accounts named only by users)."""
        sl = self.account_sublists.get(account)
        if sl is None:
            sl = self.account_sublists[account] = WatchedSublist(account)
            sl.interest_hook = self.sublist.interest_hook
            services.install(self, sl)
        return sl

    def _first_queue_draw(self, n: int) -> int:
        draw = self.queue_draw = self.randomness.child("queue").randrange
        return draw(n)

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
        websocket = conn.websocket if conn is not None else None
        if websocket is not None:  # the websocket listener's host, port, auth and TLS
            websocket.info_fields(fields, config.auth_required)
        elif config.auth_required and (connect_info or not config.no_auth_user):
            # With a no_auth_user, nats-server announces auth only once a client is in.
            fields["auth_required"] = True
        if config.tls is not None and websocket is None:
            from minijs.core.tls import info_flags

            fields.update(info_flags(config, conn))
        # After CONNECT, the client's own limit (its account's, when smaller).
        fields["max_payload"] = (conn.parser.max_payload if connect_info and conn is not None
                                 else config.max_payload)
        if self.jetstream_group is not None:
            fields["jetstream"] = True
        if conn is not None:
            fields["client_id"] = conn.cid
            if conn.host:
                fields["client_ip"] = conn.host
            if conn.nonce and not connect_info:
                fields["nonce"] = conn.nonce
        routes = self.routes
        if routes is not None:
            fields["cluster"] = routes.cluster_name
        elif config.cluster_name:  # a name without routes (nats-server's --cluster_name alone)
            fields["cluster"] = config.cluster_name
        if self.jetstream_group is not None and config.js_domain:
            fields["domain"] = config.js_domain  # jetstream { domain } (nats-server's order)
        if routes is not None:
            urls = routes.connect_urls()
            if urls:  # (omitted while empty, as Go's omitempty)
                fields["connect_urls"] = urls
        if connect_info:
            fields["connect_info"] = True
            fields["remote_account"] = conn.account if conn is not None else GLOBAL_ACCOUNT
            if conn is not None and config.system_account and conn.account == \
                    config.system_account:
                fields["acc_is_sys"] = True
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

    def settle(self) -> None:
        """Commit buffered JetStream writes (releasing their acks) and write every queued
        output now: what a virtual clock calls after firing timers."""
        js = self.jetstream_group
        if js is not None and js.has_dirty:
            js.flush_dirty()
        if self._dirty:
            self._flush_all()

    def end_of_input(self) -> None:
        """A client's input chunk is processed: commit JetStream writes (which releases their
        pub acks) and write every client's queued output now, saving an event-loop turn of
        latency per round trip. Output produced outside input handling still goes out at the
        end of the turn (:meth:`flush_soon`)."""
        js = self.jetstream_group
        if js is not None and js.has_dirty:
            js.flush_dirty()
        if self._dirty:
            self._flush_all()
        if self._note_activity is not None:
            self._note_activity()

    def _flush_all(self) -> None:
        self._flush_scheduled = False
        dirty = self._dirty
        self._dirty = []
        for conn in dirty:
            conn.flush()

    # ----------------------------------------------------------------- routing

    def add_subscription(self, sub: Subscription) -> None:
        (sub.conn.sublist if sub.conn is not None else self.sublist).insert(sub)

    def remove_subscription(self, sub: Subscription) -> None:
        (sub.conn.sublist if sub.conn is not None else self.sublist).remove(sub)

    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: Connection | None = None,
                sublist: WatchedSublist | None = None) -> int:
        """Route one message to every matching subscriber; return how many received it.

        Plain subscribers each get a copy; each queue group gives one to a random member. A
        requester that asked for no-responders gets the 503 status when nobody received it.
        A message of the server's own (no ``origin``) goes to the global account, or to the
        account whose ``sublist`` is given.
        """
        hook = self.fault_hook
        if hook is not None and hook.on_publish(subject, reply, header, payload, origin):
            return 1  # a fault rule took it (and answered, or hands it on later)
        routes = self.routes
        if routes is not None:
            routes.gen += 1  # a new message for the peers' route connections
        # Each account has its own subscriptions: a client's message stays in its account,
        # unless the account imports or exports (minijs.core.imports routes it then).
        if origin is not None:
            sublist = origin.sublist
        elif sublist is None:
            sublist = self.sublist
        if sublist.links is not None:
            return sublist.links.publish(subject, reply, header, payload, origin)
        result = sublist.cache.get(subject)  # sublist.match(subject), its cache hit inlined
        if result is None:
            result = sublist.match(subject)
        else:
            sublist.cache_hits += 1
        delivered = 0
        if result.plain or result.groups:
            # Called, not inlined: the call costs about 600 instructions (55 ns) a message,
            # about 1% of a pubsub message's server CPU, below what bench_native can tell.
            delivered = fan_out(self, result, subject, reply, header, payload, origin)
        if not delivered and reply and origin is not None and origin.no_responders:
            self.no_responders(subject, reply, origin)
        return delivered

    def publish_run(self, subject: bytes, replies: list[bytes | None], payloads: list[bytes],
                    origin: Connection) -> None:
        """Route a run of ``origin``'s messages on one subject, without headers, in order, each
        exactly as :meth:`publish` routes it, and count each in (``origin``'s and the server's
        ``in_msgs`` / ``in_bytes``) just before it is routed, as :meth:`Connection._publish
        <minijs.core.connection.Connection._publish>` does: a receiver that reads the
        counters partway (a ``$SYS`` statistics request) sees what it would one by one.

        The subject is matched once, and the match holds for the next message as long as the
        sublist still caches that very result (any subscription that comes or goes on a
        matching subject drops it); when it does not, or a fault rule or an account link could
        take a message, the rest go one by one through :meth:`publish`."""
        sublist = origin.sublist
        n = len(payloads)
        k = 0
        if self.fault_hook is None and sublist.links is None:
            result = sublist.cache.get(subject)
            if result is None:
                result = sublist.match(subject)
                sublist.cache_hits -= 1  # (the walk counts each message as a hit)
            plain = result.plain
            # One internal receiver (a stream) is called directly; its run receiver first.
            receiver = plain[0] if len(plain) == 1 and not result.groups else None
            if receiver is not None and receiver.conn is not None:
                receiver = None
            taker = receiver.run_receiver if receiver is not None else None
            if taker is None:
                k = self._route_run(subject, replies, payloads, origin, result, receiver)
            elif taker.take_run(subject, replies, payloads):
                self._count_run(payloads, origin, sublist)
                return
            else:
                taker.begin_run()
                try:
                    k = self._route_run(subject, replies, payloads, origin, result, receiver)
                finally:
                    taker.end_run()
        if k < n:
            self._publish_rest([subject] * n, replies, payloads, k, origin)

    def _publish_rest(self, subjects: list[bytes], replies: list[bytes | None],
                      payloads: list[bytes], k: int, origin: Connection) -> None:
        """The messages of a run from ``k`` on, one by one through :meth:`publish`, each
        counted in just before it is routed."""
        stats = self.stats
        for k in range(k, len(payloads)):
            payload = payloads[k]
            size = len(payload)
            origin.in_msgs += 1
            origin.in_bytes += size
            stats.in_msgs += 1
            stats.in_bytes += size
            self.publish(subjects[k], replies[k], None, payload, origin)

    def shared_match(self, subject: bytes, origin: Connection) -> SharedMatch | None:
        """A prefix of ``subject`` that decides what every subject beginning with it matches
        in ``origin``'s account (:meth:`Sublist.shared_match`), for
        :meth:`publish_shared_run`; None when there is none, or when a fault rule or an
        account link could take a message."""
        sublist = origin.sublist
        if self.fault_hook is not None or sublist.links is not None:
            return None
        return sublist.shared_match(subject)

    def publish_shared_run(self, shared: SharedMatch,
                           subjects: list[bytes], replies: list[bytes | None],
                           payloads: list[bytes], origin: Connection) -> None:
        """Route a run of ``origin``'s messages without headers, on subjects that begin with
        the prefix ``shared`` (from :meth:`shared_match`) and have no empty token, in order,
        each exactly as :meth:`publish` routes it and counted in just before it is routed.

        Their match is found once, and holds while the sublist keeps it (any subscription that
        comes or goes drops it); then the rest go one by one through :meth:`publish`. An
        internal receiver that alone receives them is told of the run around its handler's
        calls (``RunReceiver.begin_run`` / ``end_run``, which it may use to do once what each
        message would: a consumer's wake-up after its acks, a stream's answers); a subject
        matched here is not kept in the sublist's cache (each usually comes once: acks)."""
        _, node, result = shared
        plain = result.plain
        receiver = plain[0] if len(plain) == 1 and not result.groups else None
        if receiver is not None and receiver.conn is not None:
            receiver = None
        taker = receiver.run_receiver if receiver is not None and not receiver.closed else None
        if taker is not None:
            if taker.take_shared_run(subjects, replies, payloads):
                self._count_run(payloads, origin, origin.sublist, matched=False)
                return
            taker.begin_run()
        try:
            k = self._route_each(subjects, replies, payloads, origin, result, receiver,
                                 lambda: node.tail is result, matched=False)
        finally:
            if taker is not None:
                taker.end_run()
        if k < len(payloads):
            self._publish_rest(subjects, replies, payloads, k, origin)

    def _count_run(self, payloads: list[bytes], origin: Connection, sublist: Sublist,
                   matched: bool = True) -> None:
        """A run delivered in one step: every count one by one would make (each message a
        hit of the sublist's cache, or with ``matched`` False a walk past it)."""
        n = len(payloads)
        size = sum(map(len, payloads))
        stats = self.stats
        origin.in_msgs += n
        origin.in_bytes += size
        stats.in_msgs += n
        stats.in_bytes += size
        stats.out_msgs += n
        stats.out_bytes += size
        if matched:
            sublist.cache_hits += n
        else:
            sublist.cache_misses += n
        if self.routes is not None:
            self.routes.gen += n

    def _route_run(self, subject: bytes, replies: list[bytes | None], payloads: list[bytes],
                   origin: Connection, result: MatchResult, receiver: Subscription | None
                   ) -> int:
        """:meth:`publish_run`'s walk while the sublist still caches ``result`` for
        ``subject``; returns how many messages it routed."""
        sublist = origin.sublist
        cache = sublist.cache
        plain = result.plain
        n = len(payloads)
        if receiver is None and len(plain) == 1 and not result.groups and self.routes is None:
            sub = plain[0]
            conn = sub.conn
            if (conn is not None and not sub.closed and not sub.max
                    and (conn is not origin or conn.echo)):
                # One client subscription, which a delivery cannot take away: the run is
                # framed for it in one go (deliver_run), counted in and out as one by one.
                conn.deliver_run(sub, subject, replies, payloads)
                self._count_run(payloads, origin, sublist)
                return n
        return self._route_each([subject] * n, replies, payloads, origin, result, receiver,
                                lambda: cache.get(subject) is result, matched=True)

    def _route_each(self, subjects: list[bytes], replies: list[bytes | None],
                    payloads: list[bytes], origin: Connection, result: MatchResult,
                    receiver: Subscription | None, holds: Callable[[], bool],
                    matched: bool) -> int:
        """Route a run's messages one at a time to the receivers in ``result`` while
        ``holds()`` says the sublist still gives that result, each counted in just before it
        is routed (and as a hit of the sublist's cache when ``matched``, else as a walk past
        it); ``receiver``: the one internal subscription that alone receives them, called
        directly. Returns how many it routed."""
        sublist = origin.sublist
        stats = self.stats
        routes = self.routes
        no_responders = origin.no_responders
        plain = result.plain
        groups = result.groups
        n = len(payloads)
        k = 0
        while k < n:
            if not holds():
                break
            if matched:
                sublist.cache_hits += 1
            else:
                sublist.cache_misses += 1
            subject = subjects[k]
            reply = replies[k]
            payload = payloads[k]
            size = len(payload)
            k += 1
            origin.in_msgs += 1
            origin.in_bytes += size
            stats.in_msgs += 1
            stats.in_bytes += size
            if routes is not None:
                routes.gen += 1
            if receiver is not None:
                # fan_out's walk, written for one internal receiver
                if not receiver.closed:
                    receiver.callback(receiver, subject, reply, None, payload, origin)
                    stats.out_msgs += 1
                    stats.out_bytes += size
                    continue
                delivered = 0
            elif plain or groups:
                delivered = fan_out(self, result, subject, reply, None, payload, origin)
            else:
                delivered = 0
            if not delivered and reply and no_responders:
                self.no_responders(subject, reply, origin)
        return k

    def publish_replies(self, replies: list[bytes], payloads: list[bytes],
                        sublist: WatchedSublist | None = None) -> None:
        """The server's answers without headers to several subjects (a run of pub acks), in
        order, each routed exactly as :meth:`publish` routes the server's own message (in
        the global account, or the account whose ``sublist`` is given). Consecutive answers
        whose subjects the sublist matches to the same result (every reply of one inbox
        subscription ``_INBOX.<id>.*``) reuse what was found about its receivers; a reply
        subject, used once, is not kept in the sublist's cache (:meth:`Sublist.match_once`)."""
        if sublist is None:
            sublist = self.sublist
        if self.fault_hook is not None or sublist.links is not None or self.routes is not None:
            for reply, payload in zip(replies, payloads):
                self.publish(reply, None, None, payload, None, sublist)
            return
        cache = sublist.cache
        stats = self.stats
        n = len(replies)
        i = 0
        result: MatchResult | None = None  # replies[i]'s, when already matched
        while i < n:
            if result is None:
                result = self._match_reply(sublist, cache, replies[i])
            plain = result.plain
            single = plain[0] if len(plain) == 1 and not result.groups else None
            if single is None or single.conn is None or single.closed or single.max:
                if plain or result.groups:
                    fan_out(self, result, replies[i], None, None, payloads[i], None)
                i += 1
                result = None
                continue
            # the replies after it that reach the same one client subscription go with it
            j = i + 1
            following = None
            while j < n:
                following = self._match_reply(sublist, cache, replies[j])
                if following is not result:
                    break
                following = None
                j += 1
            # (no auto-unsubscribe limit: the subscription takes them all)
            single.conn.deliver_replies(single, replies[i:j], payloads[i:j])
            stats.out_msgs += j - i
            stats.out_bytes += sum(map(len, payloads[i:j]))
            i = j
            result = following

    @staticmethod
    def _match_reply(sublist: Sublist, cache: dict[bytes, MatchResult],
                     reply: bytes) -> MatchResult:
        """``sublist.match_once(reply)``, its cache hit inlined."""
        cached = cache.get(reply)
        if cached is None:
            return sublist.match_once(reply)
        sublist.cache_hits += 1
        return cached

    # ----------------------------------------------------------------- message tracing

    def publish_traced(self, trace: msgtrace.MsgTrace, subject: bytes, reply: bytes | None,
                       header: bytes | None, payload: bytes, origin: Connection | None) -> int:
        """:meth:`publish` for a traced client message (``Nats-Trace-Dest``): the same routing,
        recording an egress event per client subscription; trace-only delivers to no client
        (but counts each as a receiver, so a request gets no 503). Streams and the JetStream
        API record their own events. The caller sends the trace (:meth:`send_trace`)."""
        hook = self.fault_hook
        if hook is not None and hook.on_publish(subject, reply, header, payload, origin):
            return 1
        sublist = origin.sublist if origin is not None else self.sublist
        result = sublist.match(subject)
        only = trace.only
        delivered = 0
        sent = 0
        for sub in receivers(result, origin, self.queue_draw, with_own=True):
            conn: Connection | None = sub.conn
            if conn is None:
                delivered += self._internal_traced(trace, sub, subject, reply, header, payload,
                                                   origin)
            elif conn is origin and not conn.echo:  # only a plain one: see receivers()
                from minijs.core.msgtrace import ERR_NO_ECHO

                trace.egress(conn.cid, conn.name, sub.subject.decode(), "", ERR_NO_ECHO)
            else:
                trace.egress(conn.cid, conn.name, sub.subject.decode(),
                             (sub.queue or b"").decode())
                if not only:
                    conn.deliver(sub, subject, reply, header, payload)
                    sent += 1
                delivered += 1
        if sent:
            stats = self.stats
            stats.out_msgs += sent
            stats.out_bytes += sent * (len(payload) + (len(header) if header else 0))
        if sublist.links is not None:  # across accounts (minijs.core.imports)
            delivered += sublist.links.publish_traced(trace, subject, reply, header, payload,
                                                      origin)
        if not delivered and reply and origin is not None and origin.no_responders:
            self.no_responders(subject, reply, origin)
        return delivered

    def _internal_traced(self, trace: msgtrace.MsgTrace, sub: Subscription, subject: bytes,
                         reply: bytes | None, header: bytes | None, payload: bytes,
                         origin: Connection | None) -> int:
        """A traced message to an internal subscription; 1 if it counts as delivered. Those
        without a tracing handler take it as any message (trace-only too, as nats-server's
        internal subscriptions do), recording nothing."""
        if sub.on_traced is not None:
            went_on = sub.on_traced(sub, trace, subject, reply, header, payload, origin)
            return 0 if went_on is False else 1
        sub.callback(sub, subject, reply, header, payload, origin)
        return 1

    def trace_server_info(self) -> dict[str, Any]:
        """The ``server`` object of a trace event (nats-server's ``ServerInfo``)."""
        from minijs.core.msgtrace import go_time  # (tracing's module, loaded by its first use)

        self._sys_seq += 1
        js = self.jetstream_group is not None
        return {
            "name": self.server_name,
            "host": self.config.host,
            "id": self.server_id,
            "ver": NATS_SERVER_VERSION,
            "feature_flags": dict(FEATURE_FLAGS),
            "jetstream": js,
            "flags": SERVER_FLAGS_JETSTREAM if js else 0,
            "seq": self._sys_seq,
            "time": go_time(self.clock.time_ns()),
        }

    def send_trace(self, trace: msgtrace.MsgTrace) -> None:
        """Publish the trace event of a fully processed message to its destination, in the
        publisher's account (nats-server sends it from that account's internal client)."""
        header, payload = trace.encode(self.trace_server_info())
        dest = trace.dest.encode()
        sublist = self.account_sublists.get(trace.account)
        if sublist is None or sublist is self.sublist:
            self.publish(dest, None, header, payload)
            return
        for sub in receivers(sublist.match(dest), None, self.queue_draw):
            self._deliver_one(sub, dest, header, payload)

    def _deliver_one(self, sub: Subscription, subject: bytes, header: bytes | None,
                     payload: bytes) -> None:
        if sub.conn is None:
            sub.callback(sub, subject, None, header, payload, None)
        else:
            sub.conn.deliver(sub, subject, None, header, payload)
            self.stats.out_msgs += 1
            self.stats.out_bytes += len(payload) + (len(header) if header else 0)

    def deliver_as(self, target: bytes, subject: bytes, reply: bytes, hdr: bytes | None,
                   data: bytes, sublist: WatchedSublist | None = None) -> int:
        """Route a message to the subscribers of ``target`` (in the global account, or the
        account whose ``sublist`` is given) while its MSG line names ``subject``: consumer
        deliveries keep the stored subject, which a plain publish cannot express. Returns the
        number of receivers."""
        hook = self.fault_hook
        if hook is not None and hook.on_deliver(target, subject, reply, hdr, data):
            return 1  # a fault rule dropped or delayed it
        if sublist is None:
            sublist = self.sublist
        if self.routes is None and sublist.links is None:
            # The usual delivery, a pull request's inbox or a push consumer's deliver subject
            # that one client subscribed to: deliver_as_in and fan_out's walk, inlined.
            result, sub = _match_one_client(sublist, target)
            if sub is not None:
                sub.conn.deliver(sub, subject, reply, hdr, data)
                stats = self.stats
                stats.out_msgs += 1
                stats.out_bytes += len(data) + (len(hdr) if hdr else 0)
                return 1
            return fan_out(self, result, subject, reply, hdr, data, None)
        delivered = self.deliver_as_in(sublist, target, subject, reply, hdr, data)
        links = sublist.links
        if links is not None:
            if links.stream_out:
                # a deliver subject exported as a stream: to the importers' subscribers
                delivered += links.stream_deliver_as(target, subject, reply, hdr, data)
            if target.startswith(b"_R_."):
                # a reply to a request that came through a service import (a pull through an
                # imported JetStream API): on to the requester, still under the stored subject
                delivered += links.respond_as(target, subject, reply, hdr, data)
        return delivered

    def deliver_run_as(self, target: bytes, subjects: list[bytes], replies: list[bytes],
                       hdrs: list[bytes | None], datas: list[bytes],
                       sublist: WatchedSublist | None = None) -> None:
        """:meth:`deliver_as` of several messages to ``target``, in order (a consumer's run of
        deliveries to one pull request or deliver subject). When one client alone receives
        them (no fault rules, routes or account links), they go to its connection as one
        run."""
        if sublist is None:
            sublist = self.sublist
        if self.fault_hook is None and self.routes is None and sublist.links is None:
            sub = _match_one_client(sublist, target)[1]
            if sub is not None and not sub.max:
                sub.conn.deliver_stored_run(sub, subjects, replies, hdrs, datas)
                stats = self.stats
                stats.out_msgs += len(datas)
                stats.out_bytes += sum(map(len, datas)) + sum(len(h) for h in hdrs if h)
                return
        for subject, reply, hdr, data in zip(subjects, replies, hdrs, datas):
            self.deliver_as(target, subject, reply, hdr, data, sublist)

    def deliver_as_in(self, sublist: Sublist, target: bytes, subject: bytes, reply: bytes,
                      hdr: bytes | None, data: bytes) -> int:
        """:meth:`deliver_as` within one account's ``sublist`` (no fault rules, no imports)."""
        routes = self.routes
        if routes is not None:
            routes.gen += 1
            routes.target = target  # the peers route it by the deliver subject
        result = sublist.cache.get(target)  # sublist.match(target), its cache hit inlined
        if result is None:
            result = sublist.match(target)
        else:
            sublist.cache_hits += 1
        delivered = fan_out(self, result, subject, reply, hdr, data, None)
        if routes is not None:
            routes.target = None
        return delivered

    def pick_local_member(self, members: list[Subscription]) -> Subscription | None:
        """One random live member of a queue group among this node's own subscribers (what a
        message routed from a peer for that group goes to)."""
        n = len(members)
        start = self.queue_draw(n) if n > 1 else 0
        for i in range(n):
            sub = members[(start + i) % n]
            if not sub.closed and (sub.conn is None or not sub.conn.is_route):
                return sub
        return None

    def no_responders(self, subject: bytes, reply: bytes, origin: Connection) -> None:
        """Send the 503 no-responders status to ``origin``'s subscription on ``reply``."""
        for sub in origin.sublist.match(reply).plain:
            if sub.conn is origin and not sub.closed:
                origin.deliver(sub, reply, None, wire.no_responders_header(subject), b"")
                return


def dual_stack_socket(host: str, port: int) -> Any:
    """A listening socket for every address, IPv6 and IPv4 alike, when ``host`` is a wildcard
    (``0.0.0.0``, ``::`` or empty): what Go's ``net.Listen("tcp", ...)`` makes for
    nats-server, so ``[::1]`` reaches a server started without ``-a``. None for any other
    host, or where the system has no dual-stack IPv6 (the caller binds as usual)."""
    import socket

    if host not in ("0.0.0.0", "::", "") or not socket.has_dualstack_ipv6():
        return None
    try:
        sock = socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True,
                                    backlog=1024)
    except OSError as exc:  # asyncio's wording, which the start-up error line unwraps
        raise OSError(exc.errno, f"error while attempting to bind on address "
                                 f"{(host, port)!r}: {(exc.strerror or str(exc)).lower()}"
                      ) from None
    sock.setblocking(False)
    return sock


class WatchedSublist(Sublist):
    """The server's sublist: a :class:`Sublist` that also tells watchers when a subscription
    on a watched literal subject is inserted or removed (whoever removes it: UNSUB, a closed
    connection, auto-unsubscribe)."""

    #: The account's :class:`~minijs.core.imports.AccountLinks` when it imports or exports,
    #: and its :class:`~minijs.core.imports.Mappings` when it has mappings (None: no cost).
    links: Any = None
    mappings: Any = None
    #: The stream imports of this account as (exporter's AccountLinks, import), when it has
    #: any: its subscriptions' shadows in the exporters are watched there too (empty: no cost).
    stream_imports: list = []

    #: In a cluster: ``interest_hook(account, sub, +1|-1)`` on every insert and remove
    #: (:meth:`minijs.core.routes.Routes.interest_changed`); None otherwise (no cost).
    interest_hook: Any = None

    def __init__(self, account: str = GLOBAL_ACCOUNT) -> None:
        super().__init__()
        #: The account whose subscriptions these are.
        self.account = account
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
        if self.interest_hook is not None:
            self.interest_hook(self.account, sub, 1)
        if self._watchers and sub.subject in self._watchers:
            self._notify(sub.subject)
        if self.stream_imports:
            self._notify_shadows(sub)

    def remove(self, sub: Subscription) -> bool:
        removed = super().remove(sub)
        if removed and self.interest_hook is not None:
            self.interest_hook(self.account, sub, -1)
        if removed and self._watchers and sub.subject in self._watchers:
            self._notify(sub.subject)
        if removed and self.stream_imports:
            self._notify_shadows(sub)
        return removed

    def _notify_shadows(self, sub: Subscription) -> None:
        """An importer's subscription came or went: its shadow in each exporting account is a
        subscription there too (nats-server's ``addShadowSubscriptions``), so watchers of the
        shadow's subject hear of it (a push consumer whose deliver subject reaches this
        account through a stream import)."""
        from minijs.core.imports import shadow_subject

        for exporter, si in self.stream_imports:
            watchers = exporter.sublist._watchers
            if watchers:
                shadow = shadow_subject(si, sub).encode()
                if shadow in watchers:
                    exporter.sublist._notify(shadow)

    def _notify(self, subject: bytes) -> None:
        loop = asyncio.get_running_loop()
        for cb in list(self._watchers.get(subject, ())):
            loop.call_soon(cb)

    def has_exact(self, subject: bytes, queue: bytes | None = None) -> bool:
        """A live subscription on exactly ``subject`` (with ``queue``: in that group), here or,
        along a stream import of this account's, an importer's subscription whose shadow
        (the subscription nats-server makes here for it) is on exactly ``subject``."""
        if self._has_exact_here(subject, queue):
            return True
        links = self.links
        return links is not None and bool(links.stream_out) and links.shadows_exact(subject, queue)

    def _has_exact_here(self, subject: bytes, queue: bytes | None) -> bool:
        node = self._root
        for tok in subject.split(b"."):
            node = node.children.get(tok)  # type: ignore[assignment]
            if node is None:
                return False
        if queue is None:
            return any(not s.closed for s in node.plain)
        return any(not s.closed for s in node.groups.get(queue, ()))
