"""One client connection: the transport side of the protocol.

The connection feeds received bytes to the sans-IO :class:`~minijs.protocol.parser.Parser` and
acts on the operations it yields: CONNECT and authentication, subscriptions, publishes handed to
the server's router, keep-alive pings, verbose ``+OK`` and the exact ``-ERR`` lines. Keep-alive,
authentication and write deadlines follow real time even when the server's clock is virtual, so
moving test time never disconnects a live client. Output is
collected and written once per event-loop turn; a client whose unwritten output passes
``max_pending``, or whose socket stays blocked past ``write_deadline``, is cut as a slow
consumer so it never stalls delivery to anyone else.

Every close has a reason, named as nats-server names it (``Client Closed``, ``Read Error``,
``Protocol Violation``, ``Maximum Message Payload Exceeded``, ``Authentication Failure``,
``Slow Consumer (Pending Bytes)``, ...): the first one given wins, and the owner's
``closed_hook`` (when set, e.g. by the monitor for ``/connz?state=closed``) sees the connection
once, at that moment, before its subscriptions go and before the last output is flushed.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, cast

from minijs.clock import REAL_CLOCK
from minijs.config import GLOBAL_ACCOUNT
from minijs.core.subjects import has_empty_token, is_subscribable
from minijs.core.sublist import SharedMatch, Subscription
from minijs.protocol import wire
from minijs.protocol.wire import CRLF, SIZE_LINES, Sized
from minijs.protocol.parser import (
    OP_CLOSE, OP_CONNECT, OP_ERR, OP_HMSG, OP_HPUB, OP_PING, OP_PONG, OP_PUB, OP_PUB_RUN,
    OP_SEND_ERR,
    OP_SUB, OP_UNSUB, Parser,
)

if TYPE_CHECKING:
    from minijs.core import msgtrace
    from minijs.core.permissions import ClientPermissions


class ConnectionOwner(Protocol):
    """What a connection needs from the router that accepted it."""

    config: Any
    clock: Any
    log: Any
    stats: Any
    connections: dict
    jetstream: Any

    #: Called once with each connection as it closes (its reason set), or None.
    closed_hook: Any

    def register(self, conn: "Connection") -> int: ...
    def unregister(self, conn: "Connection") -> None: ...
    def info_fields(self, conn: "Connection | None" = None, *, connect_info: bool = False
                    ) -> dict[str, Any]: ...
    def mark_dirty(self, conn: "Connection") -> None: ...
    def flush_soon(self) -> None: ...
    def end_of_input(self) -> None: ...
    def add_subscription(self, sub: Subscription) -> None: ...
    def remove_subscription(self, sub: Subscription) -> None: ...
    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: "Connection | None" = None) -> int: ...
    def publish_run(self, subject: bytes, replies: list[bytes | None], payloads: list[bytes],
                    origin: "Connection") -> None:
        """Route a run of a client's messages on one subject, without headers, in order, each
        as :meth:`publish` would, counting each in (the connection's and the server's
        ``in_msgs`` / ``in_bytes``) as :meth:`Connection._publish` does."""
    def shared_match(self, subject: bytes, origin: "Connection") -> SharedMatch | None:
        """A prefix of ``subject`` that decides what every subject beginning with it (and
        without an empty token) matches in ``origin``'s account, or None."""
    def publish_shared_run(self, shared: SharedMatch, subjects: list[bytes],
                           replies: list[bytes | None], payloads: list[bytes],
                           origin: "Connection") -> None:
        """Route a run of a client's messages on subjects that begin with ``shared``'s
        prefix, as :meth:`publish_run` routes a run on one subject."""
    def no_responders(self, subject: bytes, reply: bytes, origin: "Connection") -> None: ...
    def publish_traced(self, trace: msgtrace.MsgTrace, subject: bytes, reply: bytes | None,
                       header: bytes | None, payload: bytes, origin: "Connection | None"
                       ) -> int: ...
    def send_trace(self, trace: msgtrace.MsgTrace) -> None: ...
    #: Accounts' ``msg_trace`` (destination, sampling percent), by account name.
    account_traces: dict[str, tuple[str, int]]
    #: The server's seeded source of random draws (:mod:`minijs.randomness`).
    randomness: Any
    #: Accounts' ``limits { }`` (an AccountConnLimits), by account name.
    account_conn_limits: dict[str, Any]
    #: The global account's subscription index: the router's ``WatchedSublist`` (a
    #: :class:`~minijs.core.sublist.Sublist` that also carries the account's imports and
    #: mappings), whose class lives on the router, which imports this module.
    sublist: Any
    #: Does INFO carry a nonce (nkey users, or operator mode's JWT users sign it)?
    auth_nonce: bool
    #: The configured nkey users by public key (empty: none).
    nkey_users: dict[str, Any]

    @property
    def operator(self) -> "OperatorLogin | None":
        """Operator mode's accounts and users (None: not in operator mode)."""

    def find_user(self, name: str) -> Any: ...
    def account_sublist(self, account: str) -> Any: ...


class OperatorLogin(Protocol):
    """What a connection asks of operator mode (:mod:`minijs.operatormode`)."""

    def authenticate(self, conn: Any, opts: dict[str, Any]) -> bool:
        """Does the CONNECT ``opts`` prove a user of an account the operator signed?"""


#: The header name that asks for a message trace (looked for in every header block).
#: (:mod:`minijs.core.msgtrace` is imported by the first traced message.)
_TRACE_DEST = wire.TRACE_DEST_HEADER

#: Queued output above this size is written at once rather than at the end of the input chunk
#: or turn (64 KiB, nats-server's largest read and write buffer). Each write is a system call:
#: at 4 KiB, a subscriber of 1 KiB messages cost a ``send`` every fourth message (server CPU
#: per message +15 % for 1 KiB pub->sub, +40 % for one publisher to four subscribers).
EARLY_WRITE_SIZE = 65536

ERR_AUTH_TIMEOUT = "Authentication Timeout"
ERR_AUTH_VIOLATION = "Authorization Violation"
ERR_INVALID_SUBJECT = "Invalid Subject"
ERR_BAD_PROTOCOL = "invalid client protocol"
ERR_NO_RESPONDERS_HEADERS = "no responders requires headers support"
ERR_STALE = "Stale Connection"
ERR_MAX_CONNECTIONS = "maximum connections exceeded"
ERR_MAX_SUBSCRIPTIONS = "maximum subscriptions exceeded"
ERR_MAX_ACCOUNT_CONNECTIONS = "maximum account active connections exceeded"

#: nats-server's close reasons (``ClosedState``) for the errors a connection is closed with.
CLOSE_REASONS = {
    ERR_AUTH_TIMEOUT: "Authentication Timeout",
    ERR_AUTH_VIOLATION: "Authentication Failure",
    ERR_STALE: "Stale Connection",
    ERR_BAD_PROTOCOL: "Bad Client Protocol Version",
    ERR_NO_RESPONDERS_HEADERS: "No Responders Requires Headers",
    ERR_MAX_CONNECTIONS: "Maximum Connections Exceeded",
    ERR_MAX_SUBSCRIPTIONS: "Maximum Subscriptions Exceeded",
    "Maximum Payload Violation": "Maximum Message Payload Exceeded",
    "maximum control line exceeded": "Maximum Control Line Exceeded",
}
PROTOCOL_VIOLATION = "Protocol Violation"

#: How long a measured round trip stays fresh before keep-alive pings measure it again.
RTT_REFRESH = 3600.0
#: Reply prefixes reserved for the server (service replies, its ack namespace, gateway-routed
#: replies old and new).
RESERVED_REPLY_PREFIXES = (b"_R_.", b"$JS.ACK.", b"_GR_.", b"$GR.")
#: Subjects a client may not publish to: Raft groups, and gateway-routed replies (old and new
#: prefixes; the prefix alone is no violation).
RESERVED_PUBLISH_PREFIXES = (b"$NRG.", b"_GR_.", b"$GR.")
#: A prefix at least this long is in a reserved namespace exactly when every subject that
#: begins with it is.
_RESERVED_PREFIX_SIZE = max(map(len, RESERVED_PUBLISH_PREFIXES))
#: Prefixes that nats-server reserves only when something follows them.
BARE_PREFIXES = (b"$JS.ACK.", b"_GR_.", b"$GR.")
#: The queue group name nats-server keeps for its own services.
RESERVED_QUEUE = b"_sys_"


class Connection(asyncio.Protocol):
    """A client connection. One event loop owns it; nothing here blocks or takes a lock."""

    #: A client, not a peer node's route (:class:`minijs.core.routes.RouteConn`).
    is_route = False

    def __init__(self, server: ConnectionOwner) -> None:
        self.server = server
        config = server.config
        self.cid = 0
        self.transport: asyncio.Transport | None = None
        self.parser = Parser(config.max_control_line, config.max_payload,
                             require_connect=config.auth_required)
        self.subs: dict[bytes, Subscription] = {}
        # Who the client authenticated as: its account (and that account's subscription
        # index) and its permissions (None: everything allowed; the hot path tests only this).
        self.user: str | None = None
        #: How the user authenticated, as nats-server labels it in log lines (``user:NAME``,
        #: ``nkey:KEY``, ``jwt:KEY``); set with :attr:`user`.
        self.user_label = ""
        #: The subject of the user JWT this client presented (its public key), once known.
        self.jwt_user = ""
        #: The INFO nonce an nkey or JWT user signs (empty when none is asked for).
        self.nonce = ""
        #: nats-server's connection type (``allowed_connection_types``); a listener that is
        #: not the plain client port (WebSocket) sets its own.
        self.connection_type = "STANDARD"
        self.account = GLOBAL_ACCOUNT
        self.sublist = server.sublist
        #: The account's subject mappings (minijs.core.imports.Mappings), None without any.
        self.mappings = server.sublist.mappings
        self.perms: ClientPermissions | None = None
        #: The configured permissions those checks come from (what $SYS.REQ.USER.INFO shows).
        self.permissions: Any = None
        #: The account's ``limits { }`` (None: none configured) and the subscription limit
        #: that applies (the server's, or the account's when smaller).
        self.conn_limits: Any = None
        self.max_subscriptions = config.max_subscriptions
        # CONNECT options, at nats-server's pre-CONNECT defaults.
        self.verbose = True
        self.pedantic = True
        self.echo = True
        self.headers = False
        self.no_responders = False
        self.protocol = 0
        self.name = ""
        self.lang = ""
        self.version = ""
        self.connected = False  # a CONNECT was accepted
        self.sent_connect_info = False
        self.closed = False
        #: Why the connection closed (nats-server's wording), set once as it closes.
        self.close_reason: str | None = None
        self.host = ""
        self.port = 0
        self.start_time = 0.0
        #: The TLS session (minijs.core.tls.TlsSession) once a TLS layer below this
        #: connection finished its handshake; None for plain text.
        self.tls: Any = None
        #: The websocket session (minijs.core.websocket.WebsocketSession) of a client of the
        #: websocket listener; None for a NATS client.
        self.websocket: Any = None
        # Output side.
        self._out: list[bytes] = []
        self._out_size = 0
        self._dirty = False
        self._paused = False
        self._deadline_timer: Any = None
        # Keep-alive.
        self._ping_timer: Any = None
        self._auth_timer: Any = None
        self.pings_out = 0
        self.last_in = 0.0
        self.rtt = 0.0
        self.rtt_start = 0.0
        # Counters for monitoring.
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0

    # ----------------------------------------------------------------- transport callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass: no isinstance).
        self.transport = transport = cast("asyncio.Transport", transport)
        server = self.server
        self.start_time = server.clock.time()
        self.last_in = REAL_CLOCK.monotonic()
        peer = transport.get_extra_info("peername") or ("", 0)
        self.host, self.port = peer[0], peer[1]
        if self.host.startswith("::ffff:") and "." in self.host:
            self.host = self.host[7:]  # IPv4 on a dual-stack listener, as Go reports it
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                import socket
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        transport.set_write_buffer_limits(high=server.config.max_pending // 4 or 65536)
        self.cid = server.register(self)
        if server.auth_nonce:
            from minijs.auth.nkeys import new_nonce

            self.nonce = new_nonce()
        self.send(wire.info(server.info_fields(self)))
        if len(server.connections) > server.config.max_connections:
            self.fail(ERR_MAX_CONNECTIONS)
            return
        required, timeout = server.config.auth_required, server.config.auth_timeout
        if self.websocket is not None:  # the websocket block's own authentication
            required, timeout = self.websocket.auth_settings(required, timeout)
        if required:
            self._auth_timer = REAL_CLOCK.call_later(timeout, self._auth_expired)
        self._schedule_ping(first=True)
        server.log.debug(f"{self.host}:{self.port} - cid:{self.cid} - Client connection created")

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_in = REAL_CLOCK.monotonic()
        parser = self.parser
        try:
            # One nats-server read at a time: once the connection is closed, the rest of the
            # read it happened in still counts (see _process), later reads do not.
            for chunk in parser.reads(data):
                self._process(parser.feed(chunk))
                if self.closed:
                    break
        finally:
            self.server.end_of_input()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing("Client Closed" if exc is None else "Read Error")
        self._teardown()

    def pause_writing(self) -> None:
        # The socket is not keeping up: a deadline starts, as nats-server's write deadline.
        self._paused = True
        if self._deadline_timer is None:
            self._deadline_timer = REAL_CLOCK.call_later(
                self.server.config.write_deadline, self._write_deadline_expired)

    def resume_writing(self) -> None:
        self._paused = False
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    # ----------------------------------------------------------------- output

    def send(self, data: bytes) -> None:
        """Queue bytes for this client; they are written at the end of the event-loop turn."""
        if self.closed:
            return
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= EARLY_WRITE_SIZE:
            # Hand a full chunk to the kernel now instead of at the end of the turn: the
            # client starts reading while the server still works through a large input batch.
            self.flush()
            return
        if not self._dirty:
            self._dirty = True
            self.server.mark_dirty(self)

    def flush(self) -> None:
        """Write what is queued; cut the client if it is too far behind (slow consumer)."""
        self._dirty = False
        if self.closed or not self._out:
            return
        out = self._out
        data = out[0] if len(out) == 1 else b"".join(out)
        self._out = []
        self._out_size = 0
        transport = self.transport
        assert transport is not None
        transport.write(data)
        if transport.get_write_buffer_size() > self.server.config.max_pending:
            self.slow_consumer()

    def fail(self, error: str | None) -> None:
        """Send ``-ERR 'error'`` (when given), flush, and close."""
        if self.closed:
            return
        if error:
            self.send(wire.err(error))
        self.closing(CLOSE_REASONS.get(error or "", PROTOCOL_VIOLATION))
        self.flush()
        self.close()

    @property
    def pending_bytes(self) -> int:
        """Output queued for this client and not yet taken by the kernel."""
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return self._out_size + buffered

    def close(self) -> None:
        """Write everything queued so far, then close (as nats-server's write loop does).
        Without a reason given before, the server is closing it (``Server Shutdown``)."""
        if self.closed:
            return
        self.closing("Server Shutdown")
        self.flush()
        if self.closed:  # the flush found a slow consumer and cut it
            return
        transport = self.transport
        self._teardown()
        if transport is not None:
            transport.close()

    def abort(self) -> None:
        """Close at once, dropping unwritten output (slow consumers)."""
        if self.closed:
            return
        self.closing("Server Shutdown")
        transport = self.transport
        self._teardown()
        if transport is not None:
            transport.abort()

    def closing(self, reason: str) -> None:
        """Record why the connection closes (the first reason wins) and show it, as it is
        now, to the owner's ``closed_hook``."""
        if self.close_reason is not None or self.closed:
            return
        self.close_reason = reason
        hook = getattr(self.server, "closed_hook", None)
        if hook is not None:
            hook(self)

    def slow_consumer(self, reason: str = "Slow Consumer (Pending Bytes)") -> None:
        self.closing(reason)
        self.server.stats.slow_consumers += 1
        self.server.log.info(
            f"{self.host}:{self.port} - cid:{self.cid} - Slow Consumer Detected: "
            f"pending bytes over {self.server.config.max_pending}")
        self.abort()

    def _write_deadline_expired(self) -> None:
        self._deadline_timer = None
        if self._paused and not self.closed:
            self.slow_consumer("Slow Consumer (Write Deadline)")

    def _teardown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._out = []
        for timer in (self._ping_timer, self._auth_timer, self._deadline_timer):
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._deadline_timer = None
        server = self.server
        server.log.debug(self._log_prefix() + "Client connection closed")
        for sub in self.subs.values():
            sub.closed = True
            server.remove_subscription(sub)
        self.subs.clear()
        server.unregister(self)

    # ----------------------------------------------------------------- keep-alive and auth

    def _ping_interval(self) -> float:
        """``ping_interval``: the server's, or the websocket block's for its clients."""
        ws = self.websocket
        if ws is not None and ws.options.ping_interval > 0:
            return ws.options.ping_interval
        return self.server.config.ping_interval

    def _schedule_ping(self, first: bool = False) -> None:
        interval = self._ping_interval()
        if first:
            # nats-server sends its first PING early: min(interval, 2 s) plus up to 20 %.
            delay = min(interval, 2.0)
            delay += delay * 0.2 * self.server.randomness.child("ping").random()
        else:
            delay = interval
        self._ping_timer = REAL_CLOCK.call_later(delay, self._ping_tick)

    def _ping_tick(self) -> None:
        self._ping_timer = None
        if self.closed:
            return
        now = REAL_CLOCK.monotonic()
        config = self.server.config
        need_rtt = self.rtt == 0.0 or now - self.rtt_start > RTT_REFRESH
        if now - self.last_in > self._ping_interval() or need_rtt:
            if self.pings_out + 1 > config.ping_max:
                self.server.log.debug(f"cid:{self.cid} - Stale Client Connection - Closing")
                self.fail(ERR_STALE)
                return
            self.rtt_start = now
            self.pings_out += 1
            self.send(wire.PING)
            self.server.flush_soon()
        self._schedule_ping()

    def _auth_expired(self) -> None:
        self._auth_timer = None
        if not self.connected and not self.closed:
            self.fail(ERR_AUTH_TIMEOUT)
            self.server.flush_soon()

    # ----------------------------------------------------------------- operations

    def _process(self, ops: list[tuple]) -> None:
        """Act on the operations of one read.

        A connection closed by the client's ``-ERR`` (or cut as a slow consumer) in the middle
        of a read still has that read's publishes routed, as nats-server finishes parsing the
        read it is in; nothing else of it has an effect. A protocol error ends the read.
        """
        server = self.server
        tracing = server.log.trace_enabled
        count = len(ops)
        i = 0
        shared_runs = True  # until a read shows a PUB that cannot start one
        while i < count:
            op = ops[i]
            i += 1
            kind = op[0]
            if kind == OP_PUB:  # first: most reads are nothing else
                if tracing:
                    if not self.closed:
                        self._trace_in(op)
                elif i < count and (nxt := ops[i])[0] == OP_PUB:
                    if nxt[1] == op[1]:
                        # Two or more PUBs on one subject in a row: routed as a run.
                        i = self._publish_run(ops, i - 1, count)
                        continue
                    if shared_runs:
                        # On subjects whose match one prefix decides (acks): as a run too.
                        stop = self._publish_shared_run(ops, i - 1, count)
                        if stop:
                            i = stop
                            continue
                        shared_runs = False
                self._publish(op[1], op[2], None, op[3])
                continue
            if kind == OP_PUB_RUN:  # PUBs repeating one control line
                if tracing:
                    for payload in op[3]:
                        one = (OP_PUB, op[1], op[2], payload)
                        if not self.closed:
                            self._trace_in(one)
                        self._publish(op[1], op[2], None, payload)
                else:
                    self._publish_payloads(op[1], op[2], op[3])
                continue
            if self.closed:
                if kind == OP_HPUB:
                    self._publish(op[1], op[2], op[3], op[4])
                continue
            if tracing:
                self._trace_in(op)
            if kind == OP_HPUB:
                self._publish(op[1], op[2], op[3], op[4])
            elif kind == OP_SEND_ERR:
                self.send(wire.err(op[1]))
            elif kind == OP_SUB:
                self._subscribe(op[1], op[2], op[3])
            elif kind == OP_UNSUB:
                self._unsubscribe(op[1], op[2])
            elif kind == OP_PING:
                if tracing:
                    self.trace("->> [PONG]")
                self.send(wire.PONG)
                if self.connected and self.protocol >= 1 and not self.sent_connect_info:
                    self.sent_connect_info = True
                    self.send(wire.info(server.info_fields(self, connect_info=True)))
            elif kind == OP_PONG:
                self.pings_out = 0
                if self.rtt_start:
                    self.rtt = max(REAL_CLOCK.monotonic() - self.rtt_start, 1e-9)
            elif kind == OP_CONNECT:
                self._connect(op[1])
                if self.closed:  # refused: nats-server stops reading
                    return
            elif kind == OP_HMSG:
                # A client's HMSG is an empty message with no subject: it reaches no one.
                self.in_msgs += 1
                server.stats.in_msgs += 1
                if self.verbose:
                    self.send(wire.OK)
            elif kind == OP_CLOSE:
                if op[1] is None:
                    self.closing(PROTOCOL_VIOLATION)
                    self.close()
                else:
                    self.fail(op[1])
                return
            elif kind == OP_ERR:
                server.log.debug(f"cid:{self.cid} - Client error: {op[1]}")
                self.closing("Parse Error")
                self.close()
            # OP_INFO and OP_OK: nothing to do.

    def _connect(self, opts: dict[str, Any]) -> None:
        """Apply CONNECT options, decoded by the parser exactly as nats-server decodes them
        (every option so far: a later CONNECT changes only what it names)."""
        if self.connected:
            # nats-server drops every subscription on a second CONNECT (it may move the client
            # to another account), before it even checks the credentials.
            for sub in list(self.subs.values()):
                self.remove_subscription(sub)
        self.verbose = opts["verbose"]
        self.pedantic = opts["pedantic"]
        self.echo = opts["echo"]
        self.headers = opts.get("headers", False)
        self.no_responders = opts.get("no_responders", False)
        self.name = opts.get("name", "")
        self.lang = opts.get("lang", "")
        self.version = opts.get("version", "")
        if self.websocket is not None:  # credentials a browser sent as cookies
            self.websocket.fill_connect(opts)
        if not self._authenticate(opts):
            # nats-server's authViolation log line.
            if opts.get("nkey"):
                who = f' - Nkey {wire.quote(str(opts["nkey"]).encode())}'
            elif opts.get("user"):
                who = f' - User {wire.quote(str(opts["user"]).encode())}'
            elif opts.get("jwt"):
                who = ""  # nats-server names a JWT user only once it is authenticated
            elif opts.get("auth_token"):
                who = ' - Token "[REDACTED]"'
            else:
                who = ""
            self.server.log.error(f"{self.host}:{self.port} - cid:{self.cid} - "
                                  f"authentication error{who}")
            self.fail(ERR_AUTH_VIOLATION)
            return
        protocol = opts.get("protocol", 0)
        if protocol < 0 or protocol > 1:
            self.fail(ERR_BAD_PROTOCOL)
            return
        self.protocol = protocol
        if self.no_responders and not self.headers:
            self.fail(ERR_NO_RESPONDERS_HEADERS)
            return
        if self.conn_limits is not None and self._account_full():
            log = self.server.log
            for _ in range(2):  # nats-server logs it twice (its registration, then its close)
                log.error(f"{self.host}:{self.port} - cid:{self.cid} - "
                          f"{ERR_MAX_ACCOUNT_CONNECTIONS}")
            self.fail(ERR_MAX_ACCOUNT_CONNECTIONS)
            return
        self.connected = True
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if self.verbose:
            self.send(wire.OK)

    def _authenticate(self, opts: dict[str, Any]) -> bool:
        if opts.get("account") or opts.get("new_account"):
            return False
        server = self.server
        if server.operator is not None:  # operator mode: a user JWT (minijs.operatormode)
            return server.operator.authenticate(self, opts)
        if server.nkey_users:  # nkey users (minijs.auth.users); None: not an nkey client
            from minijs.auth.users import authenticate_nkey

            verdict = authenticate_nkey(self, opts)
            if verdict is not None:
                return verdict
        config = server.config
        if self.websocket is not None or (config.tls is not None and config.tls.map_users):
            from minijs.core import listenerauth  # websocket and certificate-mapped users

            return listenerauth.authenticate(self, opts)
        if config.token:
            return opts.get("auth_token") == config.token
        if config.user:
            if opts.get("user") == config.user and opts.get("pass") == config.password:
                self.user = config.user
                self.user_label = f"user:{config.user}"
                return True
            return False
        if config.users:
            from minijs.auth.passwords import check_password

            name = opts.get("user") or ""
            password = opts.get("pass") or ""
            if (config.no_auth_user and not name and not password
                    and not opts.get("auth_token")):
                name = config.no_auth_user
                user = self.server.find_user(name)
                password = user.password if user is not None else ""
            user = self.server.find_user(name) if name else None
            if user is None or not check_password(user.password, password):
                return False
            if (user.connection_types is not None
                    and self.connection_type not in user.connection_types):
                return False
            self._login(user)
        return True

    def _account_full(self) -> bool:
        """Has this client's account reached its ``max_connections`` already?"""
        limit = self.conn_limits.max_connections
        if limit < 0:
            return False
        others = sum(1 for c in self.server.connections.values()
                     if c is not self and c.connected and c.account == self.account)
        return others >= limit

    def _login(self, user: Any) -> None:
        """Become ``user``: its account's subscription index, limits and permissions."""
        self.user = user.user
        self.user_label = f"nkey:{user.user}" if user.nkey else f"user:{user.user}"
        if user.account != self.account:
            self.account = user.account
            self.sublist = self.server.account_sublist(user.account)
        limits = self.server.account_conn_limits.get(self.account)
        self.conn_limits = limits
        config = self.server.config
        self.parser.max_payload = config.max_payload
        self.max_subscriptions = config.max_subscriptions
        if limits is not None:
            # nats-server's applyAccountLimits: the smaller of the account's and the server's
            if limits.max_payload > 0:
                self.parser.max_payload = min(limits.max_payload, config.max_payload)
            if limits.max_subscriptions > 0:
                self.max_subscriptions = (min(limits.max_subscriptions, config.max_subscriptions)
                                          if config.max_subscriptions else
                                          limits.max_subscriptions)
        clock = self.server.clock
        if user.permissions is not None:
            # (the permissions module is loaded by the first user that has any)
            from minijs.core.permissions import ClientPermissions

            self.perms = ClientPermissions(user.permissions, clock.monotonic)
        else:
            self.perms = None
        self.permissions = user.permissions
        self.mappings = self.sublist.mappings

    def _violation(self, error: str, log: str) -> None:
        """A permissions violation: ``-ERR`` to the client (which stays connected) and the
        error logged with the client's account and user, as nats-server logs it."""
        self.send(wire.err(error))
        who = f'"{self.account}/{self.user_label}" - ' if self.user else ""
        self.server.log.error(f"{self.host}:{self.port} - cid:{self.cid} - {who}{log}")

    def _publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                 payload: bytes) -> None:
        server = self.server
        trace = None
        if header is not None and (_TRACE_DEST in header or (
                server.account_traces and self.account in server.account_traces
                and b"traceparent" in header.lower())):
            from minijs.core import msgtrace

            skip, trace, rewritten = msgtrace.start(
                header, self.cid, self.name, subject, len(header) + len(payload), server.clock,
                self.account, server.account_traces.get(self.account),
                server.randomness.child("trace-sampling").randrange)
            if skip:
                return  # trace-only with an unusable destination: dropped, as nats-server does
            if rewritten is not None:
                header = rewritten
            perms = self.perms
            if (trace is not None and perms is not None and perms.checks_publish
                    and not perms.can_publish(trace.dest.encode())):
                # nats-server: a destination the client may not publish to is a publish
                # violation, and the message goes nowhere.
                dest = wire.quote(trace.dest.encode())
                self._violation(f"Permissions Violation for Publish to {dest}",
                                f"Publish Violation - Subject {dest}")
                return
        if self.mappings is not None:
            # nats-server maps the subject first: permissions apply to the mapped one.
            mapped = self.mappings.map(subject)
            if trace is not None and mapped != subject:
                trace.subject_mapping(mapped.decode(errors="replace"))
            subject = mapped
        first = subject[0]
        if ((first == 36 or first == 95) and subject.startswith(RESERVED_PUBLISH_PREFIXES)
                and subject not in BARE_PREFIXES):  # "$..." or "_..." only
            text = f"Permissions Violation for Publish to {wire.quote(subject)}"
            self.send(wire.err(text))
            if trace is not None:
                trace.ingress_error(text)
                server.send_trace(trace)
            return
        perms = self.perms
        if (perms is not None and perms.checks_publish
                and perms.pub_cache.get(subject) is not True and not perms.can_publish(subject)):
            self.in_msgs += 1
            text = f"Permissions Violation for Publish to {wire.quote(subject)}"
            self._violation(text, f"Publish Violation - Subject {wire.quote(subject)}")
            if trace is not None:
                trace.ingress_error(text)
                server.send_trace(trace)
            return
        if (reply is not None and reply.startswith(RESERVED_REPLY_PREFIXES)
                and reply not in BARE_PREFIXES):
            text = f"Permissions Violation for Publish with Reply of {wire.quote(reply)}"
            self.send(wire.err(text))
            if trace is not None:
                trace.ingress_error(text)
                server.send_trace(trace)
            return
        size = len(payload) if header is None else len(payload) + len(header)
        self.in_msgs += 1
        self.in_bytes += size
        stats = server.stats
        stats.in_msgs += 1
        stats.in_bytes += size
        if self.verbose:
            self.send(wire.OK)
        if first == 46 or subject[-1] == 46 or subject.partition(b"..")[1]:
            # nats-server's sublist matches nothing for a subject with an empty token.
            if reply and self.no_responders and not has_empty_token(reply):
                server.no_responders(subject, reply, self)
            if trace is not None:
                server.send_trace(trace)
            return
        if trace is not None:
            self._publish_traced(trace, subject, reply, header, payload)
        elif reply and self.no_responders and has_empty_token(reply):
            # Nor for a reply subject with one: no 503 can find its way back.
            self.no_responders = False
            try:
                server.publish(subject, reply, header, payload, self)
            finally:
                self.no_responders = True
        else:
            server.publish(subject, reply, header, payload, self)
        if type(payload) is Sized:
            payload.size = None  # only this publish's deliveries repeat the client's tokens

    def _publish_run(self, ops: list[tuple], start: int, count: int) -> int:
        """Route the PUBs on one subject that follow each other in ``ops`` from ``start`` (at
        least two) as one run; return the index of the first op it did not take.

        The run has exactly the per-message effects of :meth:`_publish`, in order: what
        depends only on the subject (its mapping, reserved prefixes, publish permission, an
        empty token, verbose) is decided once, and a run is only taken when all of it lets
        every message through unchanged (otherwise each message goes alone). It ends before
        the first message that would need more than routing: a reply subject in a reserved
        namespace or with an empty token, or a payload that repeats the client's size tokens
        (:class:`~minijs.protocol.wire.Sized`); that one goes alone through :meth:`_publish`,
        then the read goes on. The router routes the run (:meth:`ConnectionOwner.publish_run`).
        """
        subject = ops[start][1]
        if not self._routes_runs_on(subject):
            op = ops[start]
            self._publish(subject, op[2], None, op[3])
            return start + 1
        replies: list[bytes | None] = []
        payloads: list[bytes] = []
        check_empty = self.no_responders
        stop = start
        while stop < count:
            op = ops[stop]
            if op[0] != OP_PUB or op[1] != subject:
                break
            reply = op[2]
            payload = op[3]
            if _goes_alone(reply, payload, check_empty):
                break
            replies.append(reply)
            payloads.append(payload)
            stop += 1
        if stop - start < 2:
            op = ops[start]
            self._publish(subject, op[2], None, op[3])
            return start + 1
        self.server.publish_run(subject, replies, payloads, self)
        return stop

    def _routes_runs_on(self, subject: bytes) -> bool:
        """Does a run on ``subject`` need nothing of its messages but routing (what depends
        only on the subject: its mapping, reserved prefixes, publish permission, an empty
        token, verbose)?"""
        first = subject[0]
        perms = self.perms
        return not (
            self.verbose or self.mappings is not None
            or ((first == 36 or first == 95) and subject.startswith(RESERVED_PUBLISH_PREFIXES))
            or (perms is not None and perms.checks_publish
                and perms.pub_cache.get(subject) is not True)
            or first == 46 or subject[-1] == 46 or b".." in subject)

    def _publish_payloads(self, subject: bytes, reply: bytes | None,
                          payloads: list[bytes]) -> None:
        """The PUBs of an ``OP_PUB_RUN`` (one subject, one reply subject): routed as a run
        when :meth:`_publish_run` would route them so, else one by one."""
        if not self._routes_runs_on(subject) or _goes_alone(reply, payloads[0],
                                                             self.no_responders):
            for payload in payloads:
                self._publish(subject, reply, None, payload)
            return
        self.server.publish_run(subject, [reply] * len(payloads), payloads, self)

    def _publish_shared_run(self, ops: list[tuple], start: int, count: int) -> int:
        """Route the PUBs that follow each other in ``ops`` from ``start`` on subjects whose
        match one prefix decides (``ConnectionOwner.shared_match``: the acks of one
        consumer) as one run, as :meth:`_publish_run` routes a run on one subject; return
        the index of the first op it did not take, or 0 when no run of at least two starts
        at ``start`` (nothing done).

        Only a client without verbose, subject mappings or publish permissions to check
        has such runs, on a prefix not in a reserved namespace; a message ends the run when
        it needs more than routing (:meth:`_publish_run` says which)."""
        perms = self.perms
        if (self.verbose or self.mappings is not None
                or (perms is not None and perms.checks_publish)):
            return 0
        subject = ops[start][1]
        shared = self.server.shared_match(subject, self)
        if shared is None:
            return 0
        size = shared[0]
        prefix = subject[:size]
        if prefix.startswith(RESERVED_PUBLISH_PREFIXES):
            return 0
        stop = start
        while stop < count and (op := ops[stop])[0] == OP_PUB and op[1].startswith(prefix):
            stop += 1
        if stop - start < 2:
            return 0
        run = ops[start:stop]
        subjects = [op[1] for op in run]
        replies = [op[2] for op in run]
        payloads = [op[3] for op in run]
        joined = b" ".join(subjects) + b" "
        if (replies.count(None) == len(replies) and size >= _RESERVED_PREFIX_SIZE
                and b".." not in joined and b". " not in joined
                and set(map(type, payloads)) == {bytes}):
            # The common run (acks), checked as a whole: no reply subjects, and no subject
            # with an empty token (the subjects have no spaces).
            self.server.publish_shared_run(shared, subjects, replies, payloads, self)
            return stop
        subjects = []
        replies = []
        payloads = []
        check_empty = self.no_responders
        check_reserved = size < _RESERVED_PREFIX_SIZE
        stop = start
        while stop < count:
            op = ops[stop]
            if op[0] != OP_PUB:
                break
            subject = op[1]
            # it begins with the prefix and has no empty token after it (nor a reserved one)
            if (not subject.startswith(prefix) or len(subject) == size
                    or subject[-1] == 46 or subject.find(b"..", size - 1) >= 0
                    or (check_reserved and subject.startswith(RESERVED_PUBLISH_PREFIXES))):
                break
            reply = op[2]
            payload = op[3]
            if _goes_alone(reply, payload, check_empty):
                break
            subjects.append(subject)
            replies.append(reply)
            payloads.append(payload)
            stop += 1
        if stop - start < 2:
            return 0
        self.server.publish_shared_run(shared, subjects, replies, payloads, self)
        return stop

    def _publish_traced(self, trace: msgtrace.MsgTrace, subject: bytes, reply: bytes | None,
                        header: bytes | None, payload: bytes) -> None:
        """Route a traced message (``Nats-Trace-Dest``), then send its trace event."""
        server = self.server
        saved = self.no_responders
        if reply and saved and has_empty_token(reply):
            self.no_responders = False
        try:
            server.publish_traced(trace, subject, reply, header, payload, self)
        finally:
            self.no_responders = saved
        server.send_trace(trace)

    def _subscribe(self, subject: bytes, queue: bytes | None, sid: bytes) -> None:
        # nats-server's order: the reserved queue, the subscription limit, an existing sid
        # (kept, whatever the new subject), then the subject as its sublist takes it.
        if queue == RESERVED_QUEUE:
            self.send(wire.err(f"Permissions Violation for Subscription to "
                               f'{wire.quote(subject)} using queue "_sys_"'))
            return
        limit = self.max_subscriptions
        if limit and len(self.subs) >= limit:
            who = f'"{self.account}/{self.user_label}" - ' if self.user else ""
            self.server.log.error(f"{self.host}:{self.port} - cid:{self.cid} - {who}"
                                  f"{ERR_MAX_SUBSCRIPTIONS}")
            self.send(wire.err(ERR_MAX_SUBSCRIPTIONS))
            return
        if sid in self.subs:
            if self.verbose:
                self.send(wire.OK)
            return
        if not is_subscribable(subject):
            self.send(wire.err(ERR_INVALID_SUBJECT))
            return
        if self.perms is not None and not self.perms.can_subscribe(subject, queue):
            subj, sid_text = wire.quote(subject), sid.decode(errors="replace")
            if queue:
                q = wire.quote(queue)
                self._violation(
                    f"Permissions Violation for Subscription to {subj} using queue {q}",
                    f"Subscription Violation - Subject {subj}, Queue: {q}, SID {sid_text}")
            else:
                self._violation(f"Permissions Violation for Subscription to {subj}",
                                f"Subscription Violation - Subject {subj}, SID {sid_text}")
            return
        if self.perms is not None:
            self.perms.subscribed(subject, queue)
        sub = Subscription(subject, sid, queue, conn=self)
        self.subs[sid] = sub
        self.server.add_subscription(sub)
        if self.verbose:
            self.send(wire.OK)

    def _unsubscribe(self, sid: bytes, limit: int | None) -> None:
        sub = self.subs.get(sid)
        if sub is not None:
            if limit and limit > sub.delivered:
                sub.max = limit
            else:
                self.remove_subscription(sub)
        if self.verbose:
            self.send(wire.OK)

    def remove_subscription(self, sub: Subscription) -> None:
        if self.subs.get(sub.sid) is sub:
            del self.subs[sub.sid]
        sub.closed = True
        self.server.remove_subscription(sub)

    # ----------------------------------------------------------------- delivery

    def deliver(self, sub: Subscription, subject: bytes, reply: bytes | None,
                header: bytes | None, payload: bytes) -> None:
        """Send one message to this client on ``sub``; honour auto-unsubscribe.

        A client that did not announce header support gets the payload alone, as from
        nats-server.
        """
        perms = self.perms
        if perms is not None:
            if perms.deliver_filter and perms.denies_delivery(subject, sub.queue):
                return
            if reply and perms.replies is not None:
                perms.track_reply(reply)
        if header is None and type(payload) is bytes:
            # The common case, framed in pieces that the flush joins: the subscription keeps
            # its "MSG <subject> <sid> " for the subject it last delivered, the size line is
            # shared, and the payload is copied once (into the write) instead of twice.
            if sub.frame_subject != subject:
                sub.frame_subject = subject
                sub.frame_prefix = b"MSG " + subject + b" " + sub.sid + b" "
            size = len(payload)
            line = SIZE_LINES.get(size) or wire.size_line(size)
            if reply:
                pieces: tuple[bytes, ...] = (sub.frame_prefix, reply, b" ", line, payload, CRLF)
                framed = len(sub.frame_prefix) + len(reply) + len(line) + size + 3
            else:
                pieces = (sub.frame_prefix, line, payload, CRLF)
                framed = len(sub.frame_prefix) + len(line) + size + 2
            self.out_msgs += 1
            self.out_bytes += size
            if not self.closed:  # send(), inlined: the usual delivery, once per message
                self._out.extend(pieces)
                self._out_size += framed
                if self._out_size >= EARLY_WRITE_SIZE:
                    self.flush()
                elif not self._dirty:
                    self._dirty = True
                    self.server.mark_dirty(self)
            if self.server.log.trace_enabled:
                self._trace_out(b"".join(pieces))
        else:
            if type(payload) is Sized:
                if header is None:
                    data = wire.msg_sized(subject, sub.sid, reply, payload)
                elif self.headers:
                    data = wire.msg_sized(subject, sub.sid, reply, payload, header=header)
                else:  # the header is dropped, so the size is computed again
                    data = wire.msg(subject, sub.sid, reply, payload)
            elif header is None or not self.headers:
                data = wire.msg(subject, sub.sid, reply, payload)
            else:
                data = wire.hmsg(subject, sub.sid, reply, header, payload)
            self.out_msgs += 1
            self.out_bytes += len(payload) + (len(header) if header is not None else 0)
            self.send(data)
            if self.server.log.trace_enabled:
                self._trace_out(data)
        sub.delivered += 1
        if sub.max and sub.delivered >= sub.max:
            self.remove_subscription(sub)


    def deliver_run(self, sub: Subscription, subject: bytes, replies: list[bytes | None],
                    payloads: list[bytes]) -> None:
        """:meth:`deliver` of a run of messages (``bytes``, no headers) on one subject to
        ``sub``, a subscription without an auto-unsubscribe limit, in order: framed in one
        loop, and written wherever one by one would write (each time the queued output
        reaches ``EARLY_WRITE_SIZE``), so a client too far behind is cut where it would be;
        what follows a cut goes one by one."""
        if self.perms is not None or self.closed or self.server.log.trace_enabled:
            for reply, payload in zip(replies, payloads):
                self.deliver(sub, subject, reply, None, payload)
            return
        if sub.frame_subject != subject:
            sub.frame_subject = subject
            sub.frame_prefix = b"MSG " + subject + b" " + sub.sid + b" "
        prefix = sub.frame_prefix
        fixed = len(prefix) + 2
        out = self._out
        room = EARLY_WRITE_SIZE - self._out_size
        size_lines = SIZE_LINES
        framed = 0
        count = 0
        n = 0
        for i, payload in enumerate(payloads):
            size = len(payload)
            line = size_lines.get(size) or wire.size_line(size)
            reply = replies[i]
            if reply:
                out += (prefix, reply, b" ", line, payload, CRLF)
                framed += fixed + len(reply) + 1 + len(line) + size
            else:
                out += (prefix, line, payload, CRLF)
                framed += fixed + len(line) + size
            count += size
            n += 1
            if framed >= room:
                self._queued_run(sub, n, count, framed)  # (it writes now)
                if self.closed:  # cut as a slow consumer: the rest as one by one
                    for reply, payload in zip(replies[i + 1:], payloads[i + 1:]):
                        self.deliver(sub, subject, reply, None, payload)
                    return
                out = self._out
                room = EARLY_WRITE_SIZE - self._out_size
                framed = count = n = 0
        if n:
            self._queued_run(sub, n, count, framed)

    def deliver_stored_run(self, sub: Subscription, subjects: list[bytes], replies: list[bytes],
                           hdrs: list[bytes | None], datas: list[bytes]) -> None:
        """:meth:`deliver` of a run of messages, each with its own subject and reply subject
        (a consumer's deliveries), to ``sub``, a subscription without an auto-unsubscribe
        limit, in order: framed in one loop and written wherever one by one would write, as
        :meth:`deliver_run` does. A run with headers, or to a client that permissions, a
        cut or tracing concern, goes one by one."""
        if (self.perms is not None or self.closed or self.server.log.trace_enabled
                or hdrs.count(None) != len(hdrs) or set(map(type, datas)) != {bytes}):
            for subject, reply, hdr, data in zip(subjects, replies, hdrs, datas):
                self.deliver(sub, subject, reply, hdr, data)
            return
        sid = b" " + sub.sid + b" "
        last_subject = sub.frame_subject
        prefix = sub.frame_prefix
        out = self._out
        room = EARLY_WRITE_SIZE - self._out_size
        size_lines = SIZE_LINES
        framed = count = n = 0
        for i, payload in enumerate(datas):
            subject = subjects[i]
            if subject != last_subject:
                last_subject = subject
                prefix = b"MSG " + subject + sid
            size = len(payload)
            line = size_lines.get(size) or wire.size_line(size)
            reply = replies[i]
            if reply:
                out += (prefix, reply, b" ", line, payload, CRLF)
                framed += len(prefix) + len(reply) + len(line) + size + 3
            else:
                out += (prefix, line, payload, CRLF)
                framed += len(prefix) + len(line) + size + 2
            count += size
            n += 1
            if framed >= room:
                sub.frame_subject, sub.frame_prefix = last_subject, prefix
                self._queued_run(sub, n, count, framed)  # (it writes now)
                if self.closed:  # cut as a slow consumer: the rest as one by one
                    for j in range(i + 1, len(datas)):
                        self.deliver(sub, subjects[j], replies[j], None, datas[j])
                    return
                out = self._out
                room = EARLY_WRITE_SIZE - self._out_size
                framed = count = n = 0
        sub.frame_subject, sub.frame_prefix = last_subject, prefix
        if n:
            self._queued_run(sub, n, count, framed)

    def deliver_replies(self, sub: Subscription, subjects: list[bytes],
                        payloads: list[bytes]) -> None:
        """:meth:`deliver` of several messages (``bytes``) on ``sub``, a subscription
        without an auto-unsubscribe limit, each on its own subject (the server's answers to
        this client's requests: no reply subject, no headers), in order."""
        if self.perms is not None or self.closed or self.server.log.trace_enabled:
            for subject, payload in zip(subjects, payloads):
                self.deliver(sub, subject, None, None, payload)
            return
        out = self._out
        sid = b" " + sub.sid + b" "
        size_lines = SIZE_LINES
        framed = 0
        count = 0
        for subject, payload in zip(subjects, payloads):
            size = len(payload)
            line = size_lines.get(size) or wire.size_line(size)
            out += (b"MSG ", subject, sid, line, payload, CRLF)
            framed += len(subject) + len(sid) + len(line) + size + 6
            count += size
        self._queued_run(sub, len(payloads), count, framed)

    def _queued_run(self, sub: Subscription, n: int, size: int, framed: int) -> None:
        """``n`` messages of ``size`` payload bytes, ``framed`` bytes in all, were queued
        for ``sub`` in one go: counted, and written as :meth:`send` writes."""
        sub.delivered += n
        self.out_msgs += n
        self.out_bytes += size
        self._out_size += framed
        if self._out_size >= EARLY_WRITE_SIZE:
            self.flush()
        elif not self._dirty:
            self._dirty = True
            self.server.mark_dirty(self)

    # ----------------------------------------------------------------- tracing (-V)

    def trace(self, text: str) -> None:
        self.server.log.trace(self._log_prefix() + text)

    def _log_prefix(self) -> str:
        prefix = f"{self.host}:{self.port} - cid:{self.cid} - "
        if self.connected and (self.lang or self.version):
            who = f"v{self.version}:{self.lang}" + (f":{self.name}" if self.name else "")
            prefix += f'"{who}" - '
        return prefix

    def _trace_in(self, op: tuple) -> None:
        kind = op[0]
        if kind == OP_PUB or kind == OP_HPUB:
            args = [op[1]] + ([op[2]] if op[2] else [])
            if kind == OP_PUB:
                args.append(b"%d" % len(op[3]))
                body = op[3]
            else:
                args += [b"%d" % len(op[3]), b"%d" % (len(op[3]) + len(op[4]))]
                body = op[3] + op[4]
            name = "PUB" if kind == OP_PUB else "HPUB"
            self.trace(f"<<- [{name} {b' '.join(args).decode(errors='replace')}]")
            self.trace(f"<<- MSG_PAYLOAD: [{_quote(body)}]")
        elif kind == OP_SUB:
            args = [op[1]] + ([op[2]] if op[2] else []) + [op[3]]
            self.trace(f"<<- [SUB {b' '.join(args).decode(errors='replace')}]")
        elif kind == OP_UNSUB:
            extra = f" {op[2]}" if op[2] else ""
            self.trace(f"<<- [UNSUB {op[1].decode(errors='replace')}{extra}]")
        elif kind == OP_CONNECT:
            self.trace(f"<<- [CONNECT {op[2].decode(errors='replace')}]")
        elif kind in (OP_PING, OP_PONG):
            self.trace("<<- [PING]" if kind == OP_PING else "<<- [PONG]")

    def _trace_out(self, data: bytes) -> None:
        head, _, rest = data.partition(b"\r\n")
        self.trace(f"->> [{head.decode(errors='replace')}]")
        self.trace(f"->> MSG_PAYLOAD: [{_quote(rest[:-2])}]")


def _goes_alone(reply: bytes | None, payload: bytes, check_empty: bool) -> bool:
    """Does this message of a run need more than routing (so it ends the run)? A reply
    subject in a reserved namespace, or with an empty token where a 503 would be owed
    (``check_empty``: the client asked for no-responders), or a payload that repeats the
    client's size tokens (:class:`~minijs.protocol.wire.Sized`)."""
    return type(payload) is not bytes or (reply is not None and (
        reply.startswith(RESERVED_REPLY_PREFIXES) or (check_empty and (
            # has_empty_token(reply), inlined
            reply[0] == 46 or reply[-1] == 46 or b".." in reply))))


def _quote(body: bytes) -> str:
    """Go's %q of a payload, near enough for a trace line."""
    text = body.decode("utf-8", "replace")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r").replace(
        "\n", "\\n") + '"'

