"""One route connection between two server processes: the handshake, keep-alive and wire.

A :class:`RouteConnection` is a TCP connection of nats-server's route protocol
(:mod:`minijs.protocol.routeproto`), accepted on the route port or dialled to a configured or
gossiped route. It speaks the handshake as nats-server does — the accepting side sends its
route INFO at once and expects ``CONNECT`` first, the soliciting side sends ``CONNECT`` at once
and its INFO once it has the other's (a connection pinned to an account sends its INFO at
once) — and refuses what nats-server refuses, with its texts: a client's CONNECT
(``attempted to connect to route port``), anything before CONNECT (``Authorization
Violation``), wrong credentials, another cluster's name, a gateway. It also refuses a peer
that is not minijs (see :data:`REFUSAL`): minijs routes carry minijs's own node protocol.
Everything past the handshake belongs to its :class:`~minijs.core.route_transport.RouteTransport`:
where the connection is registered (a remote's pool), what its messages mean.

Invariants:

* every close has a reason named as nats-server names it (``Client Closed``, ``Duplicate
  Route``, ``Cluster Name Conflict``, ``Authentication Failure``, ...), logged once as
  ``Router connection closed: <reason>[ - Remote: <name>]``; the transport hears of the close
  once (:meth:`RouteTransport.connection_closed`);
* output is queued and written once per event-loop turn (through the router's dirty list);
* keep-alive follows real time (:data:`minijs.clock.REAL_CLOCK`), as client keep-alive does:
  a first ``PING`` after about a second, then every ``ping_interval`` (at most 30 s); a peer
  that leaves ``ping_max`` of them unanswered is closed as stale;
* a connection refused because its peer is not minijs logs at debug level after the first
  time that peer (or that route URL) was refused, since nats-server redials every second.
"""
from __future__ import annotations

import asyncio
import json
import socket
from typing import TYPE_CHECKING, Any, Protocol

from minijs.clock import REAL_CLOCK
from minijs.protocol import routeproto as rp

if TYPE_CHECKING:
    from minijs.core.router import Router
    from minijs.log import Logger
    from minijs.randomness import RandomSource
    from minijs.routeconfig import RouteOptions, RouteURL

#: What a server that is not minijs is told, and what minijs logs, when it tries to join a
#: minijs route (or minijs tries to join its): the cause and the fix.
REFUSAL = ("minijs routes join only minijs servers: this route joins a minijs process and a "
           "server that is not minijs; run the same server (all minijs or all nats-server) on "
           "every node of the cluster")
#: The field minijs adds to its route CONNECT and INFO (never ``lang``, which nats-server
#: takes for a client): the version of minijs's route protocol and the accounts it pins.
MARKER = "minijs"
MARKER_VERSION = 1

#: How long an accepted connection waits for the peer's CONNECT before it sends its INFO.
#: nats-server sends its INFO at once, but it also sends its CONNECT at once when it dials: a
#: nats-server that is to be refused never sees minijs's INFO, so it never registers the
#: route (which would add this node to its clients' connect_urls and gossip it to its cluster,
#: only to drop it again at the refusal). A client that waits for the INFO gets it this late.
INFO_GRACE = 0.1
#: nats-server's first-PING delay on routes and the longest interval between PINGs.
FIRST_PING = 1.0
MAX_PING_INTERVAL = 30.0

ERR_AUTH_VIOLATION = "Authorization Violation"
ERR_AUTH_TIMEOUT = "Authentication Timeout"
ERR_CLIENT_ON_ROUTE_PORT = "attempted to connect to route port"


class RouteOwner(Protocol):
    """What a route connection uses of the transport that owns it (the handshake's checks and
    what happens past it): :class:`~minijs.core.route_transport.RouteTransport`."""

    router: "Router"
    log: "Logger"
    options: "RouteOptions"
    cluster_name: str
    #: The routes' share of the server's seeded random source.
    rng: "RandomSource"

    def route_info(self, *, account: str | None = None, pool_idx: int = 0,
                   solicited: bool = False) -> dict[str, Any]:
        """The route INFO this server sends."""

    def connect_fields(self, url: "RouteURL | None") -> dict[str, Any]:
        """The route CONNECT's fields (credentials of ``url``, if any)."""

    def route_authorized(self, fields: dict[str, Any]) -> bool:
        """Does a route CONNECT with ``fields`` pass the cluster's authorization?"""

    def accept_cluster_name(self, name: str, dynamic: bool, remote_id: str) -> bool:
        """May a peer of cluster ``name`` join (a dynamic name may be adopted)?"""

    def refused_before(self, key: str) -> bool:
        """Was the peer ``key`` refused before (its refusal is logged once)?"""

    def refuse(self, conn: "RouteConnection", key: str) -> None:
        """Refuse the peer of ``conn`` (not a minijs server)."""

    def route_to_self(self, conn: "RouteConnection") -> None:
        """``conn`` reached this server itself."""

    def connection_made(self, conn: "RouteConnection") -> None:
        """``conn`` is open (before its handshake)."""

    def register(self, conn: "RouteConnection", info: dict[str, Any]) -> None:
        """The handshake of ``conn`` is done: its peer's INFO is ``info``."""

    def gossip_received(self, conn: "RouteConnection", info: dict[str, Any]) -> None:
        """An INFO telling of other servers of the cluster."""

    def info_update(self, conn: "RouteConnection", info: dict[str, Any]) -> None:
        """An INFO updating the peer's fields."""

    def inbound(self, conn: "RouteConnection", op: tuple) -> None:
        """A message, subscription or unsubscription from the peer."""

    def open_next(self, conn: "RouteConnection") -> None:
        """Dial the next connection of the pool (after ``conn``'s first PONG)."""

    def connection_closed(self, conn: "RouteConnection") -> None:
        """``conn`` closed (called once)."""


class RouteConnection(asyncio.Protocol):
    """One route connection (see the module docstring)."""

    def __init__(self, owner: RouteOwner, url: "RouteURL | None" = None, *,
                 account: str | None = None, attempt: Any = None, implicit: bool = False
                 ) -> None:
        self.owner = owner
        #: The connection's id (nats-server's ``rid``, from the clients' id sequence), given
        #: once connected.
        self.rid = 0
        #: The route this connection was dialled to (None: accepted on the route port).
        self.url = url
        self.did_solicit = url is not None
        self.implicit = implicit
        #: The account this connection is pinned to (dedicated), or None (a pooled one).
        self.account = account
        #: What dialled it: a solicitor's attempt, or the link it is to complete.
        self.attempt = attempt
        self.parser = rp.RouteParser(account.encode() if account else None)
        self.transport: asyncio.Transport | None = None
        self.host = ""
        self.port = 0
        #: The peer's CONNECT was accepted (accepting side).
        self.connected = False
        #: The peer's first INFO was processed.
        self.info_received = False
        self.remote_id = ""
        self.remote_name = ""
        self.remote_info: dict[str, Any] = {}
        #: The remote's pool this connection is part of, once registered, and its place.
        self.link: Any = None
        self.pool_idx = -1
        self.closed = False
        self.close_reason: str | None = None
        #: Log the created/closed lines at debug level (a refused non-minijs peer, again).
        self.quiet = False
        self._logged_created = False
        # Output.
        self._out: list[bytes] = []
        self._dirty = False
        # Keep-alive and statistics.
        self._ping_timer: Any = None
        self._auth_timer: Any = None
        self._info_timer: Any = None
        #: The route INFO went out (an accepted connection sends it once it knows its peer).
        self.info_sent = False
        self.pings_out = 0
        self.ping_start = 0.0
        self.rtt = 0.0
        self.last_in = 0.0
        self.start = 0.0
        self.last_activity = 0.0
        self.in_msgs = self.out_msgs = self.in_bytes = self.out_bytes = 0
        #: Set by the transport: after the next PONG, dial the next connection of the pool.
        self.open_next_on_pong = False

    # ------------------------------------------------------------------ naming and logging

    def _prefix(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port} - rid:{self.rid} - "

    def _log_created(self) -> None:
        if self._logged_created:
            return
        self._logged_created = True
        log = self.owner.log
        (log.debug if self.quiet else log.info)(self._prefix() + "Route connection created")

    def error(self, text: str) -> None:
        self.owner.log.error(self._prefix() + text)

    def debug(self, text: str) -> None:
        self.owner.log.debug(self._prefix() + text)

    # ------------------------------------------------------------------ transport callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        owner = self.owner
        self.rid = owner.router.allocate_id()
        peer = transport.get_extra_info("peername") or ("", 0)
        self.host, self.port = str(peer[0]), int(peer[1])
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.start = self.last_activity = owner.router.clock.time()
        self.last_in = REAL_CLOCK.monotonic()
        owner.connection_made(self)
        # The "created" line waits for the peer's first line (see quiet).
        if self.did_solicit:
            self.send(rp.connect(owner.connect_fields(self.url)))
            if self.account is not None:  # a dedicated route introduces itself at once
                self.send(rp.info(owner.route_info(account=self.account)))
        else:
            self._info_timer = REAL_CLOCK.call_later(INFO_GRACE, self._greet)
            if owner.options.user:
                self._auth_timer = REAL_CLOCK.call_later(owner.options.auth_timeout,
                                                         self._auth_expired)
        delay = min(self._ping_interval(), FIRST_PING)
        jitter = delay * 0.2 * self.owner.rng.random()
        self._ping_timer = REAL_CLOCK.call_later(delay + jitter, self._ping_tick)
        self.flush()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_in = REAL_CLOCK.monotonic()
        self.last_activity = self.owner.router.clock.time()
        parser = self.parser
        ops = parser.feed(data)
        while True:
            for op in ops:
                if self.closed:
                    break
                self._op(op)
            if self.closed or not parser.paused:
                break
            ops = parser.feed(b"")
        self.owner.router.end_of_input()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing("Client Closed" if exc is None else "Read Error")
        self._teardown()

    # ------------------------------------------------------------------ output

    def send(self, data: bytes) -> None:
        """Queue bytes; they are written at the end of the event-loop turn."""
        if self.closed:
            return
        self._out.append(data)
        if not self._dirty:
            self._dirty = True
            self.owner.router.mark_dirty(self)  # type: ignore[arg-type]

    def flush(self) -> None:
        self._dirty = False
        if self.closed or not self._out or self.transport is None:
            return
        out, self._out = self._out, []
        transport = self.transport
        transport.write(out[0] if len(out) == 1 else b"".join(out))
        if transport.get_write_buffer_size() > self.owner.router.config.max_pending:
            # A peer that stopped reading: cut it rather than buffer without end (its link
            # goes down and is formed again), as nats-server cuts a slow route.
            self.owner.log.info(self._prefix() + "Slow Consumer Detected: pending bytes over "
                                f"{self.owner.router.config.max_pending}")
            self._closing("Slow Consumer (Pending Bytes)")
            self._teardown()
            transport.abort()

    def pending_size(self) -> int:
        transport = self.transport
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return buffered + sum(len(b) for b in self._out)

    def send_message(self, data: bytes, size: int) -> None:
        self.out_msgs += 1
        self.out_bytes += size
        self.send(data)

    # ------------------------------------------------------------------ closing

    def fail(self, error: str | None, reason: str) -> None:
        """Send ``-ERR 'error'`` (when given) and close with ``reason``."""
        if self.closed:
            return
        if error:
            self.send(rp.err(error))
        self.close(reason)

    def close(self, reason: str = "Server Shutdown") -> None:
        """Write what is queued, then close."""
        if self.closed:
            return
        self._closing(reason)
        self.flush()
        transport = self.transport
        self._teardown()
        if transport is not None:
            transport.close()

    def _closing(self, reason: str) -> None:
        if self.close_reason is None and not self.closed:
            self.close_reason = reason

    def _teardown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._out = []
        for timer in (self._ping_timer, self._auth_timer, self._info_timer):
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._info_timer = None
        self._log_created()
        text = f"Router connection closed: {self.close_reason or 'Client Closed'}"
        if self.remote_name:
            text += f" - Remote: {self.remote_name}"
        log = self.owner.log
        (log.debug if self.quiet else log.info)(self._prefix() + text)
        self.owner.connection_closed(self)

    def _greet(self) -> None:
        """The accepting side's route INFO (once)."""
        self._info_timer = None
        if self.info_sent or self.closed:
            return
        self.info_sent = True
        self.send(rp.info(self.owner.route_info()))
        self.flush()

    # ------------------------------------------------------------------ keep-alive

    def _ping_interval(self) -> float:
        options = self.owner.options
        interval = options.ping_interval or self.owner.router.config.ping_interval
        return min(interval, MAX_PING_INTERVAL)

    def _ping_tick(self) -> None:
        self._ping_timer = None
        if self.closed:
            return
        ping_max = self.owner.options.ping_max or self.owner.router.config.ping_max
        if self.pings_out + 1 > ping_max:
            self.debug("Stale Router Connection - Closing")
            self.fail("Stale Connection", "Stale Connection")
            return
        self.pings_out += 1
        self.ping_start = REAL_CLOCK.monotonic()
        self.send(rp.PING)
        self._ping_timer = REAL_CLOCK.call_later(self._ping_interval(), self._ping_tick)

    def send_ping(self) -> None:
        """A PING now (its PONG opens the next connection of a pool, as in nats-server)."""
        self.ping_start = REAL_CLOCK.monotonic()
        self.send(rp.PING)

    def _auth_expired(self) -> None:
        self._auth_timer = None
        if not self.connected and not self.closed:
            self.error(ERR_AUTH_TIMEOUT)
            self.fail(ERR_AUTH_TIMEOUT, "Authentication Timeout")

    # ------------------------------------------------------------------ operations

    def _op(self, op: tuple) -> None:
        kind = op[0]
        if not self._logged_created and kind not in (rp.OP_CONNECT, rp.OP_INFO):
            self._log_created()
        if not self.info_sent and not self.did_solicit and kind != rp.OP_CONNECT:
            self._greet()
        if kind in (rp.OP_MSG, rp.OP_SUB, rp.OP_UNSUB):
            if kind == rp.OP_MSG:
                self.in_msgs += 1
                self.in_bytes += len(op[6]) + (len(op[5]) if op[5] else 0)
            if self.link is not None:
                self.owner.inbound(self, op)
            return
        if not self.did_solicit and not self.connected and kind != rp.OP_CONNECT:
            if kind == rp.OP_CLOSE:
                self.fail(op[1], "Parse Error" if op[1] is None else "Protocol Violation")
                return
            self._log_created()
            self.error("authentication error")
            self.fail(ERR_AUTH_VIOLATION, "Authentication Failure")
            return
        if kind == rp.OP_PING:
            self.send(rp.PONG)
        elif kind == rp.OP_PONG:
            self.pings_out = 0
            if self.ping_start:
                self.rtt = max(REAL_CLOCK.monotonic() - self.ping_start, 1e-9)
            if self.open_next_on_pong:
                self.open_next_on_pong = False
                self.owner.open_next(self)
        elif kind == rp.OP_CONNECT:
            self._connect(op[1])
        elif kind == rp.OP_INFO:
            self._info(op[1])
        elif kind == rp.OP_ERR:
            self.error(f"Route Error '{op[1]}'")
            self.close("Parse Error")
        elif kind == rp.OP_CLOSE:
            self.fail(op[1], "Parse Error" if op[1] is None else "Protocol Violation")

    def _decode(self, raw: bytes) -> dict[str, Any] | None:
        try:
            fields = json.loads(raw)
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            self._log_created()
            self.fail(None, "Parse Error")
            return None
        return fields

    def _connect(self, raw: bytes) -> None:
        """The accepting side's checks of a CONNECT, in nats-server's order."""
        fields = self._decode(raw)
        if fields is None:
            return
        owner = self.owner
        if self.connected:
            return  # a second CONNECT changes nothing on a route
        refused = not isinstance(fields.get(MARKER), dict)
        self.quiet = refused and owner.refused_before(str(fields.get("name", "")))
        self._log_created()
        if not refused:
            self._greet()  # (a server that is not minijs is answered its -ERR only)
        if not owner.route_authorized(fields):
            self.error("authentication error")
            self.fail(ERR_AUTH_VIOLATION, "Authentication Failure")
            return
        if fields.get("lang"):
            self.error(ERR_CLIENT_ON_ROUTE_PORT)
            self.fail(ERR_CLIENT_ON_ROUTE_PORT, "Incorrect Port")
            return
        gateway = fields.get("gateway")
        if gateway:
            text = f"Rejecting connection from gateway {json.dumps(gateway)} on the Route port"
            self.error(text)
            self.fail(text, "Wrong Gateway")
            return
        cluster = str(fields.get("cluster", ""))
        if not owner.accept_cluster_name(cluster, bool(fields.get("cluster_dynamic")),
                                         str(fields.get("name", ""))):
            text = (f"Rejecting connection, cluster name {json.dumps(cluster)} does not "
                    f"match {json.dumps(owner.cluster_name)}")
            self.error(text)
            self.fail(text, "Cluster Name Conflict")
            return
        if refused:
            owner.refuse(self, str(fields.get("name", "")))
            return
        self.connected = True
        self.remote_id = str(fields.get("name", ""))
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None

    def _info(self, raw: bytes) -> None:
        fields = self._decode(raw)
        if fields is None:
            return
        owner = self.owner
        if self.info_received:
            rid = str(fields.get("server_id", ""))
            if rid and rid != self.remote_id:
                owner.gossip_received(self, fields)
            else:
                owner.info_update(self, fields)
            return
        self.info_received = True
        rid = str(fields.get("server_id", ""))
        self.remote_info = fields
        if self.did_solicit:
            self.quiet = (not isinstance(fields.get(MARKER), dict)
                          and owner.refused_before(self.url.text if self.url else ""))
        self._log_created()
        if rid == owner.router.server_id:
            self.remote_id = rid
            self.debug("Detected route to self, ignoring")
            owner.route_to_self(self)
            self.close("Duplicate Route")
            return
        if not isinstance(fields.get(MARKER), dict):
            if self.did_solicit:
                owner.refuse(self, self.url.text if self.url else rid)
            else:  # (its CONNECT carried the marker: it lied, or changed its mind)
                self.fail(REFUSAL, "Protocol Violation")
            return
        cluster = str(fields.get("cluster", ""))
        if cluster != owner.cluster_name and not owner.accept_cluster_name(
                cluster, bool(fields.get("cluster_dynamic")), rid):
            self.close("Cluster Name Conflict")
            return
        name = str(fields.get("server_name", ""))
        if not self.did_solicit and name == owner.router.server_name:
            self.error(f"Remote server has a duplicate name: {json.dumps(name)}")
            self.close("Duplicate Server Name")
            return
        self.remote_id = rid
        self.remote_name = name
        if not self.did_solicit and fields.get("route_account"):
            self.account = str(fields["route_account"])
            self.parser.account = self.account.encode()
        owner.register(self, fields)
