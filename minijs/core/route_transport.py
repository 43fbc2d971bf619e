"""Routes between processes: the node protocol of :mod:`minijs.core.routes` carried over TCP in
nats-server's route protocol.

A minijs process started with a route listener (``--cluster``, ``cluster { listen }``) joins
other minijs processes as nats-server's servers join: it solicits its configured routes
(retrying every second, for ever), accepts routes on its port, forms a pool of connections per
remote server (``pool_size``, 3 by default, plus one connection dedicated to each pinned
account — the system account always), and tells every peer about every new one (gossip), so
the whole mesh forms when each process is given only one seed route. Over the pools it carries
exactly what :class:`~minijs.core.routes.Routes` sends an in-process peer: interest (``RS+``,
``RS-``) and messages (``RMSG``, ``HMSG``). Clients hear of the other nodes in ``connect_urls``
(in INFO, and in an async INFO whenever the list changes).

Each process keeps its own JetStream: its API answers only its own clients (its ``$JS.API``
subscriptions are not told to peers), streams are R1 and are not replicated; a stream's
subjects and a consumer's deliveries do cross the routes, as an R1 stream's do on a real
cluster.

A remote's connections form a :class:`PeerLink`. Invariants:

* one link per remote server id; the link's connections were all solicited by the same side
  (its *owner*); when both sides solicit each other at once, the solicitation of the server
  with the lower id wins on both sides (the other side closes its own as ``Duplicate Route``);
* an account's interest and messages always cross on the same connection of the link (the
  connection dedicated to it, or the pool's connection at nats-server's
  ``computeRoutePoolIdx``), so one account's SUBs and messages arrive in order;
* the link is *up* for :class:`Routes` only once all its connections are registered; what
  arrives on a connection before that is held and handed over, in order, when the link comes
  up; when any connection of the link closes, the whole link goes down (``Routes.link(peer,
  False)``) and is formed again by a solicitor;
* a solicitor per configured route runs for the server's life; gossiped (implicit) routes are
  tried ``1 + connect_retries`` times, and again once each time their link goes down;
* waits between attempts follow real time, as nats-server's (1 s, with up to 100 ms of jitter on
  reconnects), never the server's clock: moving a virtual clock does not redial anything;
* a server that is not minijs is refused with an ``-ERR`` naming the cause and the fix, and
  logged once per server (or route URL); minijs's own attempts at such a route back off to one
  every 30 s.
"""
from __future__ import annotations

import asyncio
import errno
import json
import socket
import string
from typing import Any, Callable

from minijs.config import GO_VERSION, NATS_SERVER_VERSION
from minijs.core.route_conn import MARKER, MARKER_VERSION, REFUSAL, RouteConnection
from minijs.core.routes import Routes
from minijs.protocol import routeproto as rp
from minijs.routeconfig import RouteOptions, RouteURL, TLS_TIMEOUT, parse_advertise

#: nats-server's route timings (``DEFAULT_ROUTE_CONNECT``, ``_CONNECT_MAX``, ``_RECONNECT``,
#: ``_DIAL``), in real seconds.
ROUTE_CONNECT = 1.0
ROUTE_CONNECT_MAX = 30.0
ROUTE_RECONNECT = 1.0
ROUTE_DIAL = 1.0
#: How often a first connection error is reported (nats-server's ``connect_error_reports``);
#: after a link was up, every failed attempt is (``reconnect_error_reports``).
CONNECT_ERROR_REPORTS = 3600
#: The system account's name when none is configured.
DEFAULT_SYSTEM_ACCOUNT = "$SYS"
#: What a ``num_replicas > 1`` refusal adds when JetStream runs beside routes.
REPLICAS_HINT = ("minijs processes joined by routes do not replicate JetStream: each keeps its "
                 "own R1 streams; for replicated streams run the nodes in one process with "
                 "--cluster_size N")

_NUID_ALPHABET = string.ascii_letters + string.digits
#: Names and nonces are not secrets (nats-server's nuid is not either), but they should not
#: repeat across processes started together: the system's source, not the seeded one.


def _fnv32a(text: str) -> int:
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def pool_index(pool_size: int, account: str) -> int:
    """nats-server's ``computeRoutePoolIdx``: the pool connection an account is pinned to."""
    if pool_size <= 1:
        return 0
    return _fnv32a(account) % pool_size


def _is_api_subject(subject: bytes) -> bool:
    """``$JS.API.>`` or ``$JS.<domain>.API.>``: this process's own JetStream API."""
    if not subject.startswith(b"$JS."):
        return False
    if subject.startswith(b"$JS.API."):
        return True
    parts = subject.split(b".", 3)
    return len(parts) > 3 and parts[2] == b"API"


class Attempt:
    """One solicitation of a route URL: its first connection reports how it went."""

    def __init__(self, url: RouteURL, explicit: bool) -> None:
        self.url = url
        self.explicit = explicit
        self.outcome: asyncio.Future[tuple[str, str]] = (
            asyncio.get_running_loop().create_future())

    def report(self, outcome: str, remote_id: str = "") -> None:
        if not self.outcome.done():
            self.outcome.set_result((outcome, remote_id))


class PeerLink:
    """The connections to one remote server (see the module docstring)."""

    def __init__(self, transport: "RouteTransport", remote_id: str, *, owner_self: bool,
                 size: int, pinned: tuple[str, ...], attempt: Attempt | None) -> None:
        self.transport = transport
        self.remote_id = remote_id
        self.remote_name = ""
        #: We solicited its connections (else the remote did).
        self.owner_self = owner_self
        #: The solicitation that formed it (when owner_self).
        self.attempt = attempt
        self.size = size
        self.pinned = pinned
        self.slots: list[RouteConnection | None] = [None] * size
        self.pinned_conns: dict[str, RouteConnection] = {}
        #: Pool connections dialled so far (owner side).
        self.dialled = 1
        self.complete = False
        #: The remote's route INFO (from its first registered connection), for gossip.
        self.info: dict[str, Any] = {}
        #: ``nats-route://host:port/`` where it listens (its INFO's ``ip``, or its address).
        self.ip = ""
        #: What arrived before the link came up: (connection, operation), in order.
        self.pending: list[tuple[RouteConnection, tuple]] | None = []
        self._by_account: dict[str, RouteConnection] = {}
        self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connections(self) -> list[RouteConnection]:
        out = [c for c in self.slots if c is not None]
        out += list(self.pinned_conns.values())
        return out

    def conn_for(self, account: str) -> RouteConnection | None:
        conn = self._by_account.get(account)
        if conn is not None:
            return conn
        if account in self.pinned:
            conn = self.pinned_conns.get(account)
        else:
            conn = self.slots[pool_index(self.size, account)]
        if self.complete and conn is not None:  # (a complete link's connections are fixed)
            self._by_account[account] = conn
        return conn

    def filled(self) -> bool:
        return all(c is not None for c in self.slots) and all(
            a in self.pinned_conns for a in self.pinned)


class RouteTransport:
    """A server's routes to other processes (see the module docstring)."""

    def __init__(self, router: Any, *, notify_clients: Callable[[], None]) -> None:
        config = router.config
        self.router = router
        self.log = router.log
        #: Names, nonces and the jitter of reconnects and pings (the server's seeded source).
        self.rng = router.randomness.child("routes")
        options: RouteOptions = config.route_options
        self.options = options
        self.notify_clients = notify_clients
        #: The cluster's name: configured, or made up (and given up for a peer's, as
        #: nats-server's dynamic names are).
        self.dynamic = not config.cluster_name
        self.cluster_name = config.cluster_name or "".join(
            self.rng.choice(_NUID_ALPHABET) for _ in range(22))
        self.pool_size = options.pool_size if options.pool_size > 0 else 0
        system = config.system_account or DEFAULT_SYSTEM_ACCOUNT
        pinned = [system] + [a for a in options.pinned_accounts if a != system]
        self.pinned: tuple[str, ...] = tuple(pinned) if self.pool_size else ()
        self.routes = Routes(router, router.server_name, self.cluster_name, self._send,
                             self._hello)
        self.routes.on_peers_changed = self._peers_changed
        #: What a replicas > 1 refusal adds (read by the JetStream API through the router).
        self.routes.replicas_hint = REPLICAS_HINT
        self.links: dict[str, PeerLink] = {}
        self.conns: set[RouteConnection] = set()
        #: Remote ids our solicitors reached: id -> whether the route is configured.
        self.solicited: dict[str, bool] = {}
        self._implicit: dict[str, RouteURL] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._refused: set[str] = set()
        self._listener: asyncio.base_events.Server | None = None
        self._last_urls: list[str] | None = None
        self.port = 0
        self.host = options.host
        self.client_urls: list[str] = []
        self._local_hosts: set[str] = set()
        self.running = False
        #: A link to a peer came up at least once (from then on connect_urls lists this node).
        self.ever_linked = False

    # ------------------------------------------------------------------ lifecycle

    async def bind(self) -> None:
        """Bind the route port (raises OSError as the socket layer does) and take over the
        router's interest: from now on, peers that connect hear of it."""
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(
            lambda: RouteConnection(self), host=self.options.host, port=self.options.port,
            reuse_address=True, backlog=128)
        self.port = self._listener.sockets[0].getsockname()[1]
        self.client_urls = self._own_client_urls()
        self._local_hosts = _local_hosts(self.options.host)
        self.running = True
        router = self.router
        router.routes = self.routes
        for sublist in router.account_sublists.values():
            sublist.interest_hook = self._interest
        for sublist in list(router.account_sublists.values()):
            for sub in sublist.all_subscriptions():
                self._interest(sublist.account, sub, 1)
        self._last_urls = self.routes.connect_urls()

    def begin(self) -> None:
        """Log the route listener and solicit the configured routes."""
        log = self.log
        log.info(f"Cluster name is {self.cluster_name}")
        if self.dynamic:
            log.warn("Cluster name was dynamically generated, consider setting one")
        log.info(f"Listening for route connections on {_host_port(self.options.host, self.port)}")
        for url in self.options.routes:
            self._spawn(self._solicit(url, explicit=True))

    async def stop(self) -> None:
        """Close the listener and every route connection; stop soliciting."""
        self.running = False
        if self._listener is not None:
            self._listener.close()
        for task in list(self._tasks):
            task.cancel()
        for conn in list(self.conns):
            conn.close("Server Shutdown")
        router = self.router
        self.routes.close()
        for sublist in router.account_sublists.values():
            if sublist.interest_hook == self._interest:
                sublist.interest_hook = None
        if router.routes is self.routes:
            router.routes = None
        if self._listener is not None:
            await self._listener.wait_closed()
            self._listener = None
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def lame_duck(self) -> None:
        """Tell every peer this server is in lame duck mode (its clients' URL goes away)."""
        notice = rp.info({**self.route_info(), "ldm": True})
        for link in list(self.links.values()):
            conns = link.connections()
            if link.complete and conns:
                conns[0].send(notice)

    # ------------------------------------------------------------------ what we say

    def _own_client_urls(self) -> list[str]:
        """This server's client URLs as nats-server advertises them: its host, or each
        global address of the machine when it listens on all of them."""
        host = self.router.config.host
        port = self.router.port
        if host in ("0.0.0.0", "::", ""):
            found = _global_addresses()
            if found:
                return [_host_port(ip, port) for ip in found]
            host = "127.0.0.1"
        return [_host_port(host, port)]

    def _hello(self) -> dict[str, Any]:
        urls = self.client_urls or [self.router.client_url.split("://", 1)[1]]
        # nats-server lists its own URLs in connect_urls once it was first routed to a peer.
        return {"name": self.router.server_name, "id": self.router.server_id,
                "cluster": self.cluster_name, "client_url": urls[0],
                "client_urls": urls if self.ever_linked else []}

    def _marker(self) -> dict[str, Any]:
        return {"version": MARKER_VERSION, "pinned": list(self.pinned)}

    def _advertised(self) -> tuple[str, int, str]:
        """(host, port, ip) of the route INFO: the listener's, or ``advertise``."""
        options = self.options
        if options.advertise:
            host, port = parse_advertise(options.advertise, self.port)
            return host, port, f"nats-route://{_host_port(host, port)}/"
        return options.host, self.port, ""

    def route_info(self, *, account: str | None = None, pool_idx: int = 0,
                   solicited: bool = False) -> dict[str, Any]:
        """The route INFO, in nats-server's field order."""
        router = self.router
        options = self.options
        host, port, ip = self._advertised()
        out: dict[str, Any] = {
            "server_id": router.server_id, "server_name": router.server_name,
            "version": NATS_SERVER_VERSION, "proto": 3, "go": GO_VERSION,
            "host": host, "port": port, "headers": True,
        }
        if options.user:
            out["auth_required"] = True
        out["max_payload"] = router.config.max_payload
        if router.jetstream_group is not None:
            out["jetstream"] = True
        if ip:
            out["ip"] = ip
        out["nonce"] = self.rng.text(_NUID_ALPHABET + "-_", 15)
        out["cluster"] = self.cluster_name
        if self.dynamic:
            out["cluster_dynamic"] = True
        if not options.no_advertise:
            out["connect_urls"] = list(self.client_urls)
        out["compression"] = "off" if solicited or account else "accept"
        out.update({"lnoc": True, "lnocu": True, "ln": True})
        if self.pool_size:
            out["route_pool_size"] = self.pool_size
        if pool_idx:
            out["route_pool_idx"] = pool_idx
        if account:
            out["route_account"] = account
        out[MARKER] = self._marker()
        return out

    def connect_fields(self, url: RouteURL | None) -> dict[str, Any]:
        """The CONNECT a soliciting connection sends (nats-server's ``sendRouteConnect``)."""
        out: dict[str, Any] = {"echo": True, "verbose": False, "pedantic": False}
        if url is not None and url.user:
            out["user"] = url.user
            out["pass"] = url.password
        out.update({"tls_required": False, "headers": True, "name": self.router.server_id,
                    "cluster": self.cluster_name})
        if self.dynamic:
            out["cluster_dynamic"] = True
        out.update({"lnoc": True, "ln": True, MARKER: self._marker()})
        return out

    # ------------------------------------------------------------------ checks

    def route_authorized(self, fields: dict[str, Any]) -> bool:
        options = self.options
        if not options.user:
            return True
        from minijs.auth.passwords import check_password

        return (fields.get("user") == options.user
                and check_password(options.password, str(fields.get("pass") or "")))

    def accept_cluster_name(self, name: str, dynamic: bool, remote_id: str) -> bool:
        """Is a peer of cluster ``name`` welcome? A made-up name gives way to a configured
        one, or to a greater made-up one (nats-server's rule)."""
        if name == self.cluster_name:
            return True
        if not self.dynamic or (dynamic and self.cluster_name >= name):
            return False
        self.cluster_name = name
        self.routes.cluster_name = name
        if not dynamic:
            self.dynamic = False
        self.log.info(f"Cluster name updated to {name}")
        for rid, link in list(self.links.items()):
            if rid != remote_id:
                self._link_failed(link, "Cluster Name Conflict")
        return True

    def refused_before(self, key: str) -> bool:
        return key in self._refused

    def refuse(self, conn: RouteConnection, key: str) -> None:
        """Refuse a peer that is not minijs: ``-ERR`` naming the cause and the fix, close,
        log it (once per server or route URL)."""
        if key not in self._refused:
            self._refused.add(key)
            if conn.did_solicit:
                where = conn.url.text if conn.url is not None else key
                conn.error(f"Refusing route to {where}: the server there is not minijs. "
                           f"{REFUSAL} (further attempts are logged at debug level)")
            else:
                conn.error(f"Refusing route from server {key}: it is not minijs. {REFUSAL} "
                           "(further attempts are logged at debug level)")
        attempt = conn.attempt
        if isinstance(attempt, Attempt):
            attempt.report("refused")
        conn.fail(REFUSAL, "Protocol Violation")

    def route_to_self(self, conn: RouteConnection) -> None:
        attempt = conn.attempt
        if isinstance(attempt, Attempt):
            attempt.report("self")

    def _is_self(self, url: RouteURL) -> bool:
        return url.port == self.port and url.host.lower() in self._local_hosts

    # ------------------------------------------------------------------ connections

    def connection_made(self, conn: RouteConnection) -> None:
        self.conns.add(conn)

    def connection_closed(self, conn: RouteConnection) -> None:
        self.conns.discard(conn)
        attempt = conn.attempt
        if isinstance(attempt, Attempt):
            attempt.report("closed", conn.remote_id)
        link: PeerLink | None = conn.link
        if link is not None and self.links.get(link.remote_id) is link:
            self._link_failed(link, "Route Removed")

    def register(self, conn: RouteConnection, info: dict[str, Any]) -> None:
        """Place a connection whose handshake is done in its remote's link (or refuse it as a
        duplicate); bring the link up once it is whole."""
        rid = conn.remote_id
        link = self.links.get(rid)
        attempt = conn.attempt
        if conn.did_solicit:
            if isinstance(attempt, PeerLink):
                if attempt is not link or link.complete:
                    conn.close("Duplicate Route")
                    return
            elif link is not None:
                if isinstance(attempt, Attempt):
                    attempt.report("duplicate", rid)
                    self.solicited[rid] = attempt.explicit
                conn.close("Duplicate Route")
                return
            else:
                link = self._new_link(rid, info, owner_self=True,
                                      attempt=attempt if isinstance(attempt, Attempt) else None)
        elif link is not None and link.owner_self:
            if rid < self.router.server_id:  # the lower id's solicitation wins
                self._link_failed(link, "Duplicate Route")
                link = None
            else:
                conn.close("Duplicate Route")
                return
        if link is None:
            link = self._new_link(rid, info, owner_self=False, attempt=None)
        if not self._place(link, conn, info):
            if not link.connections():  # a link made for it and nothing else: gone with it
                self._link_failed(link, "Route Removed")
            return
        if isinstance(attempt, Attempt):
            attempt.report("registered", rid)
            self.solicited[rid] = attempt.explicit
        self.log.debug(conn._prefix() + f"Registering remote route {json.dumps(rid)}"
                       + (f" for account {json.dumps(conn.account)}" if conn.account else ""))
        if conn.did_solicit and conn.account is None:
            conn.send(rp.info(self.route_info(pool_idx=conn.pool_idx, solicited=True)))
        if link.owner_self and conn.did_solicit:
            if conn.pool_idx == 0 and conn.account is None:
                for account in link.pinned:
                    self._spawn(self._dial_extra(link, account))
            if conn.account is None and link.dialled < link.size:
                conn.open_next_on_pong = True
                conn.send_ping()
        if link.filled():
            self._link_up(link)

    def _new_link(self, rid: str, info: dict[str, Any], *, owner_self: bool,
                  attempt: Attempt | None) -> PeerLink:
        theirs = int(info.get("route_pool_size") or 0)
        marker = info.get(MARKER)
        if not isinstance(marker, dict):
            marker = {}
        if self.pool_size and theirs > 0:
            size = max(self.pool_size, theirs)
            pinned = self.pinned if owner_self else tuple(
                str(a) for a in (marker.get("pinned") or ()))
        else:
            size, pinned = 1, ()
        link = PeerLink(self, rid, owner_self=owner_self, size=size, pinned=pinned,
                        attempt=attempt)
        link.remote_name = str(info.get("server_name", ""))
        link.info = dict(info)
        self.links[rid] = link
        return link

    def _place(self, link: PeerLink, conn: RouteConnection, info: dict[str, Any]) -> bool:
        if conn.account is not None:
            if conn.account not in link.pinned or conn.account in link.pinned_conns:
                if conn.account not in link.pinned:
                    conn.fail(f"No route for account {json.dumps(conn.account)}",
                              "Protocol Violation")
                else:
                    conn.close("Duplicate Route")
                return False
            link.pinned_conns[conn.account] = conn
        elif conn.did_solicit:
            free = [i for i, c in enumerate(link.slots) if c is None]
            if not free:
                conn.close("Duplicate Route")
                return False
            conn.pool_idx = free[0]
            link.slots[free[0]] = conn
        else:
            idx = int(info.get("route_pool_idx") or 0)
            if not 0 <= idx < link.size:
                conn.fail(f"Invalid route pool index: {idx} - pool size is "
                          f"{info.get('route_pool_size')}", "Protocol Violation")
                return False
            if link.slots[idx] is not None:
                conn.close("Duplicate Route")
                return False
            conn.pool_idx = idx
            link.slots[idx] = conn
        conn.link = link
        if not link.ip:
            link.ip = str(info.get("ip") or "") or (
                f"nats-route://{_host_port(conn.host, int(info.get('port') or 0))}/")
        return True

    def open_next(self, conn: RouteConnection) -> None:
        """The PONG after a pool connection's INFO: dial the next one (nats-server's
        ``startNewRoute``)."""
        link: PeerLink | None = conn.link
        if link is None or self.links.get(link.remote_id) is not link or link.complete:
            return
        if link.dialled < link.size:
            link.dialled += 1
            self._spawn(self._dial_extra(link, None))

    async def _dial_extra(self, link: PeerLink, account: str | None) -> None:
        attempt = link.attempt
        if attempt is None:
            return
        try:
            await self._dial(attempt.url, link, account=account, implicit=not attempt.explicit)
        except (OSError, asyncio.TimeoutError) as exc:
            self.log.debug(f"Error trying to connect to route: {_dial_error(attempt.url, exc)}")
            if self.links.get(link.remote_id) is link:
                self._link_failed(link, "Route Removed")

    async def _dial(self, url: RouteURL, attempt: Any, *, account: str | None = None,
                    implicit: bool = False) -> RouteConnection:
        loop = asyncio.get_running_loop()
        conn = RouteConnection(self, url, account=account, attempt=attempt, implicit=implicit)
        self.log.debug(f"Trying to connect to route on {url.host_port}")
        await asyncio.wait_for(loop.create_connection(lambda: conn, url.host, url.port),
                               ROUTE_DIAL)
        return conn

    # ------------------------------------------------------------------ links up and down

    def _link_up(self, link: PeerLink) -> None:
        link.complete = True
        self.ever_linked = True
        rid = link.remote_id
        routes = self.routes
        routes.link(rid, True)
        urls: list[str] = []
        if not self.options.no_advertise:
            urls = [str(u) for u in (link.info.get("connect_urls") or ())]
        routes.receive(rid, ("INFO", {"name": link.remote_name, "id": rid,
                                      "cluster": link.info.get("cluster"),
                                      "client_url": urls[0] if urls else None,
                                      "client_urls": urls}))
        pending, link.pending = link.pending or [], None
        for conn, op in pending:
            if not conn.closed:
                self._deliver(rid, op)
        self._forward_gossip(link)

    def _link_failed(self, link: PeerLink, reason: str) -> None:
        """A connection of ``link`` closed (or the link lost a tie): the whole link goes."""
        if self.links.get(link.remote_id) is link:
            del self.links[link.remote_id]
        for conn in link.connections():
            conn.link = None
            conn.close(reason)
        if link.complete:
            link.complete = False
            self.routes.link(link.remote_id, False)
        if not link.gone.done():
            link.gone.set_result(None)

    def _peers_changed(self) -> None:
        """Clients that take async INFO hear of a change of ``connect_urls`` (only then, as
        nats-server sends one when its list of URLs changed)."""
        if not self.running:
            return  # shutting down: clients are about to be closed anyway
        urls = self.routes.connect_urls()
        if urls != self._last_urls:
            self._last_urls = urls
            self.notify_clients()

    # ------------------------------------------------------------------ node protocol

    def _send(self, peer: str, message: tuple) -> bool:
        """What :class:`Routes` sends a peer, written on the link's connection for the
        message's account (``INFO`` went in the handshake)."""
        link = self.links.get(peer)
        if link is None or not link.complete:
            return False
        op = message[0]
        if op == "RMSG":
            _, account, subject, reply, header, payload, queues, target = message
            conn = link.conn_for(account)
            if conn is None:
                return False
            if target is not None and target != subject:
                # Routed by its deliver subject: the stored subject rides after the ack reply.
                if reply and rp.is_js_ack(reply) and rp.ack_deliver_index(reply) < 0:
                    reply = reply + b"@" + subject
                subject = target
            conn.send_message(rp.msg(account, subject, reply, queues, header, payload,
                                     pinned=conn.account is not None),
                              len(payload) + (len(header) if header else 0))
            return True
        if op in ("RS+", "RS-"):
            _, account, subject, queue = message
            conn = link.conn_for(account)
            if conn is None:
                return False
            pinned = conn.account is not None
            conn.send(rp.sub(account, subject, queue, 1, pinned) if op == "RS+"
                      else rp.unsub(account, subject, queue, pinned))
            return True
        return True  # INFO: the handshake carried it

    def inbound(self, conn: RouteConnection, op: tuple) -> None:
        link = conn.link
        if link is None:
            return
        if link.pending is not None:
            link.pending.append((conn, op))
            return
        self._deliver(link.remote_id, op)

    def _deliver(self, rid: str, op: tuple) -> None:
        kind = op[0]
        routes = self.routes
        if kind == rp.OP_MSG:
            _, account, subject, reply, queues, header, payload = op
            target = None
            if reply:
                at = rp.ack_deliver_index(reply)
                if at >= 0:
                    target, subject, reply = subject, reply[at + 1:], reply[:at]
            routes.receive(rid, ("RMSG", account, subject, reply, header, payload, queues,
                                 target))
        elif kind == rp.OP_SUB:
            routes.receive(rid, ("RS+", op[1], op[2], op[3]))
        elif kind == rp.OP_UNSUB:
            routes.receive(rid, ("RS-", op[1], op[2], op[3]))

    def _interest(self, account: str, sub: Any, delta: int) -> None:
        """A local subscription came or went: peers hear of it, except this process's own
        JetStream API (each process answers its own clients)."""
        if sub.conn is None and _is_api_subject(sub.subject):
            return
        self.routes.interest_changed(account, sub, delta)

    # ------------------------------------------------------------------ gossip

    def _forward_gossip(self, link: PeerLink) -> None:
        """Tell every other peer about a new one (nats-server's
        ``forwardNewRouteInfoToKnownServers``), unless we reached it through gossip."""
        if link.owner_self and link.attempt is not None and not link.attempt.explicit:
            return
        info = {k: v for k, v in link.info.items()
                if k not in ("nonce", "route_pool_idx", "route_account")}
        info["ip"] = link.ip
        notice = rp.info(info)
        for other in list(self.links.values()):
            if other is link or not other.complete:
                continue
            conns = other.connections()
            if conns:
                conns[0].send(notice)

    def gossip_received(self, conn: RouteConnection, info: dict[str, Any]) -> None:
        """A peer told us about another server: solicit it unless we know it already."""
        rid = str(info.get("server_id", ""))
        if not rid or rid == self.router.server_id or rid in self.links:
            return
        if rid in self._implicit or self._configured(info):
            return
        url = _gossip_url(info)
        if url is None:
            return
        if info.get("auth_required") and self.options.user:
            url = RouteURL(url.host, url.port, self.options.user, self.options.password,
                           url.text)
        self._implicit[rid] = url
        self._spawn(self._solicit(url, explicit=False, known=rid))

    def info_update(self, conn: RouteConnection, info: dict[str, Any]) -> None:
        """A peer's INFO about itself: in lame duck mode its clients' URLs go away."""
        link = conn.link
        if info.get("ldm") and link is not None and link.complete:
            self.routes.receive(link.remote_id, ("INFO", {
                "name": link.remote_name, "id": link.remote_id, "client_url": None,
                "client_urls": []}))

    def _configured(self, info: dict[str, Any]) -> bool:
        """nats-server's ``hasThisRouteConfigured``."""
        port = int(info.get("port") or 0)
        hosts = {str(info.get("host", "")).lower()}
        url = _gossip_url(info)
        if url is not None:
            hosts.add(url.host.lower())
        return any(r.port == port and r.host.lower() in hosts for r in self.options.routes)

    # ------------------------------------------------------------------ soliciting

    async def _solicit(self, url: RouteURL, *, explicit: bool, known: str = "") -> None:
        """Keep a route to ``url``: dial until a link forms, wait while it lasts, dial again.
        A gossiped route gives up after ``1 + connect_retries`` failed attempts."""
        attempts = 0
        first = True
        delay = ROUTE_CONNECT
        refusals = 0
        try:
            while self.running:
                link = self.links.get(known) if known else None
                if link is not None:
                    await asyncio.shield(link.gone)
                    if not self.running:
                        return
                    first, attempts, delay = False, 0, ROUTE_CONNECT
                    await asyncio.sleep(self.rng.random() * 0.1
                                        + (ROUTE_RECONNECT if explicit else 0.0))
                    continue
                if self._is_self(url):
                    self.log.debug(f"Detected route to self, ignoring {url.text}")
                    return
                attempt = Attempt(url, explicit)
                try:
                    await self._dial(url, attempt, implicit=not explicit)
                except (OSError, asyncio.TimeoutError) as exc:
                    attempts += 1
                    text = (f"Error trying to connect to route (attempt {attempts}): "
                            f"{_dial_error(url, exc)}")
                    reports = CONNECT_ERROR_REPORTS if first else 1
                    if attempts == 1 or attempts % reports == 0:
                        self.log.error(text)
                    else:
                        self.log.debug(text)
                    if not explicit and attempts > self.options.connect_retries:
                        return
                    await asyncio.sleep(delay)
                    if self.options.connect_backoff:
                        delay = min(delay * 2, ROUTE_CONNECT_MAX)
                    continue
                outcome, rid = await attempt.outcome
                if outcome == "self":
                    return
                if rid:
                    known = rid
                if outcome in ("registered", "duplicate"):
                    refusals = 0
                    if known in self.links:
                        attempts = 0
                        continue  # (wait while the link lasts)
                    # Gone as soon as it came: a failed attempt, never a redial loop.
                    attempts += 1
                    if not explicit and attempts > self.options.connect_retries:
                        return
                    await asyncio.sleep(self.rng.random() * 0.1
                                        + (ROUTE_RECONNECT if explicit else ROUTE_CONNECT))
                    continue
                if not explicit:
                    return
                wait = ROUTE_RECONNECT
                if outcome == "refused":  # not minijs there: come back less often
                    refusals += 1
                    wait = min(ROUTE_RECONNECT * 2 ** refusals, ROUTE_CONNECT_MAX)
                await asyncio.sleep(wait + self.rng.random() * 0.1)
        finally:
            if not explicit and known:
                self._implicit.pop(known, None)

    # ------------------------------------------------------------------ monitoring

    def registered(self) -> list[RouteConnection]:
        out: list[RouteConnection] = []
        for link in self.links.values():
            out += link.connections()
        return out

    @property
    def num_routes(self) -> int:
        return len(self.registered())

    @property
    def num_remotes(self) -> int:
        return sum(1 for link in self.links.values() if link.connections())

    def route_records(self) -> list[dict[str, Any]]:
        """What ``/routez`` shows of each registered connection (raw values)."""
        out = []
        for link in self.links.values():
            peer = self.routes.peers.get(link.remote_id) if link.complete else None
            subs = list(peer.subs) if peer is not None else []
            configured = self.solicited.get(link.remote_id)
            for conn in link.connections():
                mine = [key for key in subs if link.conn_for(key[0]) is conn]
                out.append({
                    "rid": conn.rid, "remote_id": link.remote_id,
                    "remote_name": link.remote_name,
                    "did_solicit": conn.did_solicit or configured is not None,
                    "is_configured": bool(configured) if configured is not None
                    else bool(conn.did_solicit and not conn.implicit),
                    "ip": conn.host, "port": conn.port, "start": conn.start,
                    "last_activity": conn.last_activity, "rtt": conn.rtt,
                    "pending_size": conn.pending_size(), "in_msgs": conn.in_msgs,
                    "out_msgs": conn.out_msgs, "in_bytes": conn.in_bytes,
                    "out_bytes": conn.out_bytes, "subs": mine, "account": conn.account or "",
                })
        return out

    def varz_cluster(self) -> dict[str, Any]:
        """``/varz``'s ``cluster`` section (Go's omitempty fields left out when empty)."""
        options = self.options
        out: dict[str, Any] = {"name": self.cluster_name}
        if options.host:
            out["addr"] = options.host
        out["cluster_port"] = self.port
        if options.auth_timeout:
            out["auth_timeout"] = options.auth_timeout
        urls = [r.host_port for r in options.routes]
        if urls:
            out["urls"] = urls
        out["tls_timeout"] = TLS_TIMEOUT
        if options.pool_size:
            out["pool_size"] = options.pool_size
        return out


# ---------------------------------------------------------------------- helpers


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _gossip_url(info: dict[str, Any]) -> RouteURL | None:
    ip = str(info.get("ip") or "")
    if ip:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(ip)
            if parts.hostname and parts.port:
                return RouteURL(parts.hostname, parts.port, text=ip)
        except ValueError:
            return None
    host, port = str(info.get("host") or ""), int(info.get("port") or 0)
    if host and port:
        return RouteURL(host, port, text=f"nats-route://{_host_port(host, port)}/")
    return None


def _dial_error(url: RouteURL, exc: BaseException) -> str:
    """Go's ``dial tcp HOST:PORT: ...`` for a failed connection attempt."""
    where = f"dial tcp {url.host_port}"
    if isinstance(exc, asyncio.TimeoutError):
        return f"{where}: i/o timeout"
    if isinstance(exc, socket.gaierror):
        return f"{where}: lookup {url.host}: no such host"
    code = getattr(exc, "errno", None)
    if code == errno.ECONNREFUSED or "Errno 111" in str(exc) or isinstance(
            exc, ConnectionRefusedError):
        return f"{where}: connect: connection refused"
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"{where}: connect: {reason[:1].lower() + reason[1:]}"


def _global_addresses() -> list[str]:
    """The machine's global unicast addresses (as nats-server lists for ``0.0.0.0``)."""
    import ipaddress

    found: list[str] = []
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        return found
    for family, _, _, _, addr in infos:
        host = addr[0]
        if not isinstance(host, str):  # (an IP family's address is a str)
            continue
        try:
            ip = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            continue
        if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
            continue
        if str(ip) not in found:
            found.append(str(ip))
    return found


def _local_hosts(listen_host: str) -> set[str]:
    """Names and addresses a route to this server's own port would use."""
    hosts = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "::", listen_host.lower()}
    hosts.update(_global_addresses())
    try:
        hosts.add(socket.gethostname().lower())
    except OSError:
        pass
    return hosts
