"""The HTTP monitoring endpoint (``-m PORT``): ``/varz``, ``/connz``, ``/jsz``, ``/subsz``,
``/accountz``, ``/healthz`` and ``/``; and minijs's own live page, ``/minijs``
(:mod:`minijs.monitor_page`).

Harnesses, dashboards and container health checks poll these to learn that a nats-server is
up and what it holds, so the answers copy nats-server 2.15.1's: the same paths, status codes,
headers, JSON field names, order and units (durations in nanoseconds, timestamps in RFC 3339
UTC), the same options, and option errors as 400 with Go's text (``Error decoding int for
'limit': strconv.Atoi: ...``). ``/varz`` carries only the fields minijs can fill truthfully;
the ones that describe clusters, TLS or Go internals are left out.

What minijs cannot know the way nats-server does, and how it is reported:

* ``/subsz`` and ``sublist_stats`` in ``/accountz``: the counters (``num_inserts``,
  ``num_removes``, ``num_matches``, ``cache_hit_rate``, ``num_cache``, ``max_fanout``,
  ``avg_fanout``) are counted by minijs's own sublist (:meth:`Sublist.stats`), which holds the
  client subscriptions and minijs's internal ones (JetStream API, streams, consumers) but none
  of nats-server's ``$SYS`` service subscriptions; the values are true for minijs and differ
  from a nats-server's. ``subscriptions_list`` lists client subscriptions only: internal ones
  have no client (``cid``) or ``sid`` to report.
* ``/accountz``: one account (``$G``); ``$SYS`` is listed as nats-server lists it but has no
  subscriptions, imports or exports here; ``$G``'s only import is ``$JS.API.>`` (JetStream
  on), the one nats-server service import minijs really serves.
* ``/connz``: closed connections are kept (the last :data:`MAX_CLOSED_CLIENTS`, as
  nats-server keeps them) from the moment the monitor starts, each as it was when it closed,
  with ``stop`` and ``reason`` (``state=closed|all``, ``sort=stop|reason``).
  ``rtt`` is left out until minijs has measured one (nats-server measures it at connect).
* ``/jsz``: ``config.max_memory``/``max_storage`` are minijs's configured limits (-1 when
  unlimited), not a share of the machine's memory and disk as nats-server computes them.

A deliberately small HTTP/1.1 server on asyncio: one request per connection, then close.
"""
from __future__ import annotations

import asyncio
import errno
import json
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.config import GIT_COMMIT, GO_VERSION, NATS_SERVER_VERSION
from minijs.protocol.gostrings import go_quote
from minijs.protocol.gotime import go_duration as _go_duration, rfc3339_nano

if TYPE_CHECKING:
    from minijs.config import ServerConfig
    from minijs.core.router import ServerStats, WatchedSublist
    from minijs.log import Logger

#: How long a client may take to send its request head before it is dropped.
REQUEST_TIMEOUT = 10.0
MAX_HEADER_BYTES = 64 * 1024

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}
_JSON_HEADERS = (("Access-Control-Allow-Origin", "*"), ("Content-Type", "application/json"))
_TEXT_HEADERS = (("Content-Type", "text/plain; charset=utf-8"),
                 ("X-Content-Type-Options", "nosniff"))


#: How many closed connections ``/connz`` remembers (nats-server's ``max_closed_clients``).
MAX_CLOSED_CLIENTS = 10000


@dataclass
class ClosedConnection:
    """A client connection as it was when it closed: its full ``/connz`` report (with
    subscriptions and auth fields, trimmed per request) and what sorting needs."""

    cid: int
    start_time: float
    last_in: float
    rtt: float
    stop: float
    reason: str
    user: str
    account: str
    info: dict[str, Any]

    def report(self, with_subs: bool, detail: bool, auth: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.info.items():
            if key in ("authorized_user", "account", "name_tag") and not auth:
                continue
            if key == "subscriptions_list_detail":
                if detail:
                    out[key] = value
                elif with_subs:
                    out["subscriptions_list"] = [d["subject"] for d in value]
                continue
            out[key] = value
            if key == "last_activity":
                out["stop"] = rfc3339(self.stop)
                out["reason"] = self.reason
                if "rtt" not in self.info:
                    out["rtt"] = "0s"  # never measured: nats-server shows the zero duration
        return out


class MonitorError(OSError):
    """The monitor port could not be bound; the text is nats-server's fatal log line."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "Can't start monitoring"


class MonitoredServer(Protocol):
    """What the monitor reads of the server it reports on (:class:`minijs.server.Server`: its
    router's state, and the listeners and cluster parts the server adds)."""

    config: "ServerConfig"
    server_id: str
    server_name: str
    port: int
    start_time: float
    log: "Logger"
    clock: Any
    stats: "ServerStats"
    total_connections: int
    connections: dict[int, Any]
    sublist: "WatchedSublist"
    account_sublists: dict[str, "WatchedSublist"]
    account_links: dict[str, Any]
    #: Called with each client connection as it closes (the monitor's ring of closed ones).
    closed_hook: Callable[[Any], None] | None
    #: The JetStream engines' shared part (None without JetStream).
    jetstream_group: Any
    #: In a cluster: this node's JetStream meta layer, its routes (in process or by TCP).
    jetstream_cluster: Any
    routes: Any
    route_transport: Any
    #: The WebSocket listener (None without one).
    websocket: Any

    def num_subscriptions(self) -> int:
        """Subscriptions of all accounts."""


class Monitor:
    """nats-server's monitoring HTTP endpoint for one server (read through its router)."""

    def __init__(self, server: MonitoredServer) -> None:
        self.server = server
        config = server.config
        self.host = config.http_host or config.host
        self.requested_port = config.http_port if config.http_port is not None else 0
        self.port = 0
        self.req_stats: dict[str, int] = {}
        self._listener: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        #: Closed client connections, oldest first (nats-server's ring of closed clients).
        self.closed_conns: deque[ClosedConnection] = deque(maxlen=MAX_CLOSED_CLIENTS)
        self._cpu_mark = (time.monotonic(), time.process_time())
        self._routes = {
            "/": self._index,
            "/varz": self._varz,
            "/connz": self._connz,
            "/subsz": self._subsz,
            "/subscriptionsz": self._subsz,
            "/accountz": self._accountz,
            "/jsz": self._jsz,
            "/healthz": self._healthz,
            "/routez": self._routez,
            "/minijs": self._minijs_page,  # minijs only: the state at a glance, in a browser
        }

    @property
    def _log(self) -> Any:
        return self.server.log

    async def start(self) -> None:
        """Bind and log ``Starting http monitor on HOST:PORT`` (the actual port if random)."""
        port = self.requested_port if self.requested_port > 0 else 0
        try:
            self._listener = await asyncio.start_server(
                self._handle, host=self.host, port=port, reuse_address=True)
        except OSError as exc:
            reason = _bind_reason(exc)
            raise MonitorError(
                f"Can't start monitoring: can't listen to the monitor port: listen tcp "
                f"{_host_port(self.host, port)}: bind: {reason}") from exc
        self.port = self._listener.sockets[0].getsockname()[1]
        log = self._log
        if log is not None:
            log.info(f"Starting http monitor on {_host_port(self.host, self.port)}")
        self.server.closed_hook = self._record_closed

    def _record_closed(self, conn: Any) -> None:
        """Keep ``conn`` as it is at its close (its ``close_reason`` set), for ``/connz``."""
        now, mono = self._now()
        info = self._conn_info(conn, now, mono, with_subs=True, detail=True, auth=True)
        self.closed_conns.append(ClosedConnection(
            cid=conn.cid, start_time=conn.start_time, last_in=conn.last_in,
            rtt=conn.rtt, stop=now, reason=conn.close_reason or "",
            user=self._authorized_user(conn), account=conn.account,
            info=info))

    async def stop(self) -> None:
        """Stop listening and drop any request still being served."""
        if self.server.closed_hook == self._record_closed:
            self.server.closed_hook = None
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.close()
        for writer in list(self._writers):
            writer.close()
        await listener.wait_closed()

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("0.0.0.0", "", "::") else "127.0.0.1"
        return f"http://{_host_port(host, self.port)}"

    # ----------------------------------------------------------------- HTTP

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            try:
                head = await asyncio.wait_for(_read_head(reader), REQUEST_TIMEOUT)
            except (ValueError, asyncio.LimitOverrunError):
                await self._send(writer, "GET", 431, b"", ())
                return
            except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                return
            parts = head.split()
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                await self._send(writer, "GET", 400, b"400 Bad Request", ())
                return
            method, target = parts[0], parts[1]
            if "://" in target:  # absolute-form request target (via a proxy)
                target = "/" + target.split("://", 1)[1].partition("/")[2]
            path = target.split("?", 1)[0].split("#", 1)[0] or "/"
            handler = self._routes.get(path)
            if handler is None:
                await self._send(writer, method, 404, b"404 page not found\n", _TEXT_HEADERS)
                return
            self.req_stats[path] = self.req_stats.get(path, 0) + 1
            status, body, headers = handler(_query(target))
            await self._send(writer, method, status, body, headers)
        except Exception as exc:  # a monitoring request must never take the server down
            log = self._log
            if log is not None:
                log.error(f"monitor: error serving request: {exc!r}")
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, method: str, status: int, body: bytes,
                    headers: tuple[tuple[str, str], ...]) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}"]
        lines.extend(f"{k}: {v}" for k, v in headers)
        lines.append("Date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()))
        lines.append(f"Content-Length: {len(body)}")
        lines.append("Connection: close")
        out = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if method != "HEAD":
            out += body
        writer.write(out)
        try:
            await writer.drain()
        except ConnectionError:
            pass

    # ----------------------------------------------------------------- endpoints

    def _healthz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        try:
            flags = {name: _bool_param(query, name) for name in (
                "js-enabled", "js-enabled-only", "js-server-only", "js-meta-only", "details")}
        except ValueError as exc:
            return 400, str(exc).encode(), _TEXT_HEADERS
        code, health = self.healthz(
            account=query.get("account", ""), stream=query.get("stream", ""),
            consumer=query.get("consumer", ""), details=flags["details"],
            js_server_only=flags["js-server-only"],
            js_enabled_only=flags["js-enabled-only"] or flags["js-enabled"])
        log = self._log
        if log is not None and code != 200:
            failed = (f"{go_quote(health['error'])}" if "error" in health
                      else f"{len(health.get('errors', ()))} errors")
            log.warn(f"Healthcheck failed: {failed}")
        body = json.dumps(health, separators=(",", ":"), ensure_ascii=False)
        body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        return code, body.encode(), _JSON_HEADERS

    def healthz(self, *, account: str = "", stream: str = "", consumer: str = "",
                details: bool = False, js_server_only: bool = False,
                js_enabled_only: bool = False) -> tuple[int, dict[str, Any]]:
        """nats-server's single-server health check: the HTTP status and the JSON answer.

        The checks run in nats-server's order: ``stream`` needs ``account`` and ``consumer``
        needs ``stream`` (400); a server without JetStream, or asked ``js-server-only`` /
        ``js-enabled-only``, is healthy once up; otherwise the account, stream and consumer
        asked for must exist (404). As on a single nats-server, which walks the stream
        directories of its store, only file streams count (a memory stream is "not found"),
        and a stream directory left behind by a stream that could not be recovered at startup
        makes JetStream unhealthy (503 ``could not be recovered``) until the stream is
        created again. ``details`` lists the problems as typed ``errors`` instead of one
        ``error``."""
        def problem(code: int, kind: str, text: str, status: str = "unavailable",
                    **where: str) -> tuple[int, dict[str, Any]]:
            if details:
                return code, {"status": "error",
                              "errors": [{"type": kind, **where, "error": text}]}
            return code, {"status": status, "error": text}

        if stream and not account:
            return problem(400, "BAD_REQUEST",
                           '"account" must not be empty when checking stream health', "error")
        if consumer and not stream:
            return problem(400, "BAD_REQUEST",
                           '"stream" must not be empty when checking consumer health', "error")
        group = self.server.jetstream_group
        if js_server_only or group is None or js_enabled_only:
            return 200, {"status": "ok"}
        errors: list[dict[str, Any]] = []
        found = None
        acc_found = stream_found = False
        # nats-server walks its store: each account's directory, then its stream directories.
        for acc in group.account_dirs():
            if account:
                if acc != account:
                    continue
                acc_found = True
            engine = group.engines.get(acc)
            if engine is None and not self._known_account(acc):
                text = f"JetStream account '{acc}' could not be resolved"
                if not details:
                    return 503, {"status": "unavailable", "error": text}
                errors.append({"type": "ACCOUNT", "account": acc, "error": text})
                continue
            dirs = engine.stream_dirs() if engine is not None else group.stream_dirs(acc)
            for name in dirs:
                if stream:
                    if name != stream:
                        continue
                    stream_found = True
                found = engine.streams.get(name) if engine is not None else None
                if found is None:
                    text = f"JetStream stream '{acc} > {name}' could not be recovered"
                    if not details:
                        return 503, {"status": "unavailable", "error": text}
                    errors.append({"type": "STREAM", "account": acc, "stream": name,
                                   "error": text})
                    continue
                if stream_found:
                    break
            if acc_found:
                break
        if account and not acc_found:
            return problem(404, "ACCOUNT", f"JetStream account {go_quote(account)} not found",
                           account=account)
        if errors:
            return 503, {"status": "error", "errors": errors}
        if stream and found is None:
            return problem(404, "STREAM", f"JetStream stream {go_quote(stream)} not found on "
                           f"account {go_quote(account)}", account=account, stream=stream)
        if consumer and (found is None or consumer not in found.consumers):
            return problem(404, "CONSUMER", f"JetStream consumer {go_quote(consumer)} not "
                           f"found for stream {go_quote(stream)} on account "
                           f"{go_quote(account)}", account=account, stream=stream,
                           consumer=consumer)
        return 200, {"status": "ok"}

    def _known_account(self, name: str) -> bool:
        return name in (GLOBAL_ACCOUNT, SYSTEM_ACCOUNT) or name in self.server.config.accounts

    def _varz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return 200, _json(self.varz()), _JSON_HEADERS

    def _connz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return _answer(self.connz, query)

    def _subsz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return _answer(self.subsz, query)

    def _accountz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return _answer(self.accountz, query)

    def _jsz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return _answer(self.jsz, query)

    def _minijs_page(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        from minijs.monitor_page import render

        return render(self.server, query)

    def _routez(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return _answer(self.routez, query)

    def routez(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/routez``: the route connections to other processes (``subs=1`` or ``detail``
        lists each one's route subscriptions)."""
        query = query or {}
        subs = query.get("subs", "")
        detail = subs.lower() == "detail"
        with_subs = detail or (_bool_param(query, "subs") if subs else False)
        server = self.server
        now, _ = self._now()
        transport = server.route_transport
        if transport is not None:
            records = transport.route_records()
        else:  # an in-process cluster's node (or a server of its own: none)
            records = server.routes.route_records() if server.routes is not None else []
        routes = []
        for r in records:
            info: dict[str, Any] = {
                "rid": r["rid"], "remote_id": r["remote_id"], "remote_name": r["remote_name"],
                "did_solicit": r["did_solicit"], "is_configured": r["is_configured"],
                "ip": r["ip"], "port": r["port"], "start": rfc3339(r["start"]),
                "last_activity": rfc3339(r["last_activity"])}
            if r["rtt"]:
                info["rtt"] = go_duration(r["rtt"])
            info.update({
                "uptime": uptime(now - r["start"]), "idle": uptime(now - r["last_activity"]),
                "pending_size": r["pending_size"], "in_msgs": r["in_msgs"],
                "out_msgs": r["out_msgs"], "in_bytes": r["in_bytes"],
                "out_bytes": r["out_bytes"], "subscriptions": len(r["subs"])})
            if r["subs"] and detail:
                info["subscriptions_list_detail"] = [
                    {"account": acc, "subject": subj.decode(errors="replace"),
                     **({"qgroup": q.decode(errors="replace")} if q else {}),
                     "sid": " ".join(x.decode(errors="replace") if isinstance(x, bytes) else x
                                     for x in (acc, subj, q) if x),
                     "msgs": 0, "cid": r["rid"]} for acc, subj, q in r["subs"]]
            elif r["subs"] and with_subs:
                info["subscriptions_list"] = [subj.decode(errors="replace")
                                              for _, subj, _ in r["subs"]]
            if r["account"]:
                info["account"] = r["account"]
            info["compression"] = "off"
            routes.append(info)
        return {"server_id": server.server_id, "server_name": server.server_name,
                "now": rfc3339(now), "num_routes": len(routes), "routes": routes}

    def _index(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        links = "\n".join(
            f'\t<a href=.{path}>{title}<span class="endpoint"> {path}</span></a>'
            for path, title in (("/varz", "General"), ("/jsz", "JetStream"),
                                ("/connz", "Connections"), ("/accountz", "Accounts"),
                                ("/subsz", "Subscriptions"), ("/healthz", "Health Probe")))
        html = (
            '<html lang="en">\n\t<head>\n\t<title>minijs monitoring</title>\n\t</head>\n'
            "\t<body>\n"
            f"\t<a href=https://github.com/nats-io/nats-server/tree/v{NATS_SERVER_VERSION} "
            f"class='version'>v{NATS_SERVER_VERSION} (minijs)</a>\n\t<br/>\n"
            f"{links}\n"
            "  </body>\n</html>\n")
        return 200, html.encode(), (("Content-Type", "text/html; charset=utf-8"),)

    def varz(self) -> dict[str, Any]:
        """``/varz`` in nats-server's field order, with the fields minijs can fill honestly."""
        server = self.server
        config = server.config
        clock = server.clock
        now = clock.time() if clock is not None else time.time()
        start = server.start_time or now
        stats = server.stats
        v: dict[str, Any] = {
            "server_id": server.server_id,
            "server_name": server.server_name,
            "version": NATS_SERVER_VERSION,
            "proto": 1,
            "git_commit": GIT_COMMIT,
            "go": GO_VERSION,
            "host": config.host,
            "port": server.port,
        }
        transport = server.route_transport
        if config.auth_required:
            v["auth_required"] = True
        if config.tls is not None:
            if not config.allow_non_tls:
                v["tls_required"] = True
            if config.tls.verify:
                v["tls_verify"] = True
        routes = server.routes
        urls = routes.connect_urls() if routes is not None else None
        if urls:
            v["connect_urls"] = urls
        v["max_connections"] = config.max_connections
        if config.max_subscriptions > 0:
            v["max_subscriptions"] = config.max_subscriptions
        v.update({
            "ping_interval": _ns(config.ping_interval),
            "ping_max": config.ping_max,
            "http_host": self.host,
            "http_port": self.port,
            "http_base_path": "",
            "https_port": 0,
            "auth_timeout": _num(config.auth_timeout),
            "max_control_line": config.max_control_line,
            "max_payload": config.max_payload,
            "max_pending": config.max_pending,
        })
        if transport is not None:
            v["cluster"] = transport.varz_cluster()
        elif routes is not None:
            v["cluster"] = routes.varz()
        listener = server.websocket
        if listener is not None:
            from minijs.core.tlsmonitor import websocket_varz

            v["websocket"] = websocket_varz(listener)
        jetstream = self._jetstream()
        if jetstream is not None:
            v["jetstream"] = jetstream
        v.update({
            "tls_timeout": _num(config.tls.timeout) if config.tls is not None else 2,
            "write_deadline": _ns(config.write_deadline),
            "start": rfc3339(start),
            "now": rfc3339(now),
            "uptime": uptime(now - start),
        })
        mem = _rss_bytes()
        if mem is not None:
            v["mem"] = mem
        v["cores"] = os.cpu_count() or 1
        v["cpu"] = self._cpu_percent()
        v.update({
            "connections": len(server.connections),
            "total_connections": server.total_connections,
            "routes": transport.num_routes if transport is not None else 0,
            "remotes": transport.num_remotes if transport is not None else 0,
            "leafnodes": 0,
            "in_msgs": stats.in_msgs,
            "in_bytes": stats.in_bytes,
            "out_msgs": stats.out_msgs,
            "out_bytes": stats.out_bytes,
            "slow_consumers": stats.slow_consumers,
            "subscriptions": server.num_subscriptions(),
            "http_req_stats": dict(self.req_stats),
            "config_load_time": rfc3339(start),
        })
        if server.config.tags:  # nats-server leaves out an empty list
            v["tags"] = list(server.config.tags)
        if config.tls is not None and config.tls.cert_file:
            from minijs.core.tlsmonitor import cert_not_after

            not_after = cert_not_after(config.tls.cert_file)
            if not_after:
                v["tls_cert_not_after"] = not_after
        return v

    def _now(self) -> tuple[float, float]:
        clock = self.server.clock
        if clock is not None:
            return clock.time(), clock.monotonic()
        return time.time(), time.monotonic()

    def connz(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/connz``: open client connections with nats-server's ``sort``, ``offset``/``limit``,
        ``subs`` (``1`` or ``detail``), ``auth`` and ``cid`` options.

        ``state=closed`` lists the connections closed since the monitor started (the last
        :data:`MAX_CLOSED_CLIENTS`), each as it was when it closed plus ``stop`` and
        ``reason``; ``state=all`` (or ``any``) both kinds; ``sort=stop|reason`` only with
        ``state=closed``.
        """
        query = query or {}
        server = self.server
        now, mono = self._now()
        state = query.get("state", "").lower()
        if state not in ("", "open", "closed", "all", "any"):
            raise ValueError(f"Error decoding state for {query['state']}")
        sort = query.get("sort", "").lower() or "cid"
        if sort not in _SORTS and sort not in ("stop", "reason"):
            raise ValueError(f"invalid sorting option: {sort}")
        if sort in ("stop", "reason") and state != "closed":
            raise ValueError(f"sort by {sort} only valid on closed connections")
        want_open = state in ("", "open", "all", "any")
        want_closed = state in ("closed", "all", "any")
        subs = query.get("subs", "")
        detail = subs.lower() == "detail"
        with_subs = detail or (_bool_param(query, "subs") if subs else False)
        auth = _bool_param(query, "auth")
        offset = max(_int_param(query, "offset", 0), 0)
        limit = _int_param(query, "limit", 0)
        if limit <= 0:
            limit = 1024
        cid_text = query.get("cid", "")
        if cid_text and not (cid_text.isascii() and cid_text.isdigit()):
            raise ValueError(f"Error decoding uint64 for 'cid': strconv.ParseUint: parsing "
                             f"{_go_quote(cid_text)}: invalid syntax")
        acc = query.get("acc", "")
        if acc and acc not in server.account_sublists:
            # nats-server's answer for an account it does not have (empty id, null list)
            return {"server_id": "", "now": rfc3339(now), "num_connections": 0, "total": 0,
                    "offset": offset, "limit": limit, "connections": None}
        conns: list[Any] = []
        if want_open:
            conns = [c for c in server.connections.values() if not c.closed]
            if acc:
                conns = [c for c in conns if c.account == acc]
        closed: list[ClosedConnection] = []
        if want_closed:
            closed = [c for c in self.closed_conns if not acc or c.account == acc]
        total = len(conns) + len(closed)
        if cid_text:
            # one connection by id (an open one first): nats-server answers with limit 1,
            # total still the count of the state asked for
            cid = int(cid_text)
            limit = 1
            conns = [c for c in conns if c.cid == cid]
            closed = [] if conns else [c for c in closed if c.cid == cid]
        user = query.get("user", "")
        if user:  # total unchanged
            conns = [c for c in conns if self._authorized_user(c) == user]
            closed = [c for c in closed if c.user == user]
        pairs = [(c, self._conn_info(c, now, mono, with_subs, detail, auth)) for c in conns]
        pairs += [(c, c.report(with_subs, detail, auth)) for c in closed]
        if sort == "stop":
            pairs.sort(key=lambda pair: (pair[0].stop, pair[1]["cid"]), reverse=True)
        elif sort == "reason":
            pairs.sort(key=lambda pair: (pair[0].reason, pair[1]["cid"]))
        else:
            key, reverse = _SORTS[sort]
            pairs.sort(key=lambda pair: (key(*pair), pair[1]["cid"]), reverse=reverse)
        page = [info for _, info in pairs[offset:offset + limit]]
        return {
            "server_id": server.server_id,
            "now": rfc3339(now),
            "num_connections": len(page),
            "total": total,
            "offset": offset,
            "limit": limit,
            "connections": page,
        }

    def _authorized_user(self, conn: Any) -> str:
        """The user a connection authenticated as (a ``users`` entry or the one configured
        user), ``[REDACTED]`` for token auth (as nats-server shows it), or nothing."""
        if not conn.connected:
            return ""
        config = self.server.config
        if config.token:
            return "[REDACTED]"
        return conn.user or config.user or ""

    def _conn_info(self, conn: Any, now: float, mono: float, with_subs: bool,
                   detail: bool, auth: bool = False) -> dict[str, Any]:
        last_in = conn.last_in
        last_activity = now - max(mono - last_in, 0.0)
        info: dict[str, Any] = {
            "cid": conn.cid,
            "kind": "Client",
            "type": "nats" if conn.websocket is None else "websocket",
            "ip": conn.host,
            "port": conn.port,
            "start": rfc3339(conn.start_time),
            "last_activity": rfc3339(last_activity),
        }
        rtt = conn.rtt
        if rtt:
            info["rtt"] = go_duration(rtt)
        pending = conn.pending_bytes
        info.update({
            "uptime": uptime(now - conn.start_time),
            "idle": uptime(now - last_activity),
            "pending_bytes": pending,
            "in_msgs": conn.in_msgs,
            "out_msgs": conn.out_msgs,
            "in_bytes": conn.in_bytes,
            "out_bytes": conn.out_bytes,
            "subscriptions": len(conn.subs),
        })
        for field, value in (("name", conn.name), ("lang", conn.lang), ("version", conn.version)):
            if value:
                info[field] = value
        tls = conn.tls
        if tls is not None:
            from minijs.core.tlsmonitor import connz_tls

            info.update(connz_tls(tls, auth))
        if auth:
            user = self._authorized_user(conn)
            if user:
                info["authorized_user"] = user
            account = conn.account
            if account != GLOBAL_ACCOUNT:
                info["account"] = account
        if with_subs and conn.subs:
            subs = sorted(conn.subs.values(), key=lambda sub: _sid_order(sub.sid))
            if detail:
                info["subscriptions_list_detail"] = [_sub_detail(sub, conn.cid) for sub in subs]
            else:
                info["subscriptions_list"] = [sub.subject.decode(errors="replace")
                                              for sub in subs]
        if auth:
            info["name_tag"] = conn.account
        return info

    # ----------------------------------------------------------------- /subsz

    def subsz(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/subsz``: the sublist's statistics, and with ``subs=1`` its client subscriptions
        (``test=<subject>`` keeps those that match a publish subject; ``offset``/``limit``).

        The counters are minijs's own sublist's: it holds the client subscriptions and
        minijs's internal ones (JetStream API, streams, consumers), not nats-server's
        ``$SYS`` service imports, so they differ from a nats-server's in value, not in
        meaning. ``num_matches``/``cache_hit_rate`` count :meth:`Sublist.match` calls (the
        interest test on a cached subject is not a match, as in Go). Internal subscriptions
        belong to no client connection (no ``cid``/``sid``), so ``subscriptions_list`` names
        only client ones.
        """
        query = query or {}
        now, _ = self._now()
        with_subs = _bool_param(query, "subs")
        offset = max(_int_param(query, "offset", 0), 0)
        limit = _int_param(query, "limit", 0)
        if limit <= 0:
            limit = 1024
        test = query.get("test", "")
        if test and not _valid_literal_subject(test):
            raise ValueError(f"invalid test subject, must be valid publish subject: {test}")
        report: dict[str, Any] = {"server_id": self.server.server_id, "now": rfc3339(now)}
        report.update(self._sublist_stats())
        listed: list[dict[str, Any]] = []
        acc = query.get("acc", "")
        if with_subs and acc in ("", GLOBAL_ACCOUNT):
            subs = [sub for sub in self.server.sublist.all_subscriptions()
                    if sub.conn is not None and not sub.closed]
            if test:
                from minijs.core.subjects import subject_matches

                literal = test.encode()
                subs = [sub for sub in subs if subject_matches(sub.subject, literal)]
            listed = [_sub_detail(sub, sub.conn.cid, account=True) for sub in subs]
        report.update({"total": len(listed), "offset": offset, "limit": limit})
        page = listed[offset:offset + limit]
        if page:
            report["subscriptions_list"] = page
        return report

    def _sublist_stats(self, account: str = "$G") -> dict[str, Any]:
        sublists = self.server.account_sublists
        sublist = sublists.get(account, self.server.sublist)
        return {k: _num(v) for k, v in sublist.stats().items()}

    # ----------------------------------------------------------------- /accountz

    def accountz(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/accountz``: without accounts configured nats-server has the global account
        ``$G`` and the system account ``$SYS``; ``acc=NAME`` details one of them.

        minijs has one account and no system services, so ``$SYS`` is reported with no
        subscriptions, imports or exports; ``$G``'s only import is the JetStream API
        (``$JS.API.>``), listed when JetStream is enabled, as nats-server lists it.
        """
        query = query or {}
        now, _ = self._now()
        report: dict[str, Any] = {
            "server_id": self.server.server_id,
            "now": rfc3339(now),
            "system_account": SYSTEM_ACCOUNT,
        }
        acc = query.get("acc", "")
        # nats-server lists the accounts in map order; minijs in config order.
        names = [SYSTEM_ACCOUNT, GLOBAL_ACCOUNT,
                 *(a for a in self.server.config.accounts if a != SYSTEM_ACCOUNT)]
        if not acc:
            report["accounts"] = names
            return report
        if acc not in names:
            raise ValueError(f"Account {acc} does not exist")
        report["account_detail"] = self._account_detail(acc)
        return report

    def _account_detail(self, acc: str) -> dict[str, Any]:
        server = self.server
        start = server.start_time or self._now()[0]
        system = acc == SYSTEM_ACCOUNT
        group = server.jetstream_group
        jetstream = group is not None
        detail: dict[str, Any] = {"account_name": acc, "update_time": rfc3339(start)}
        if system:
            detail["is_system"] = True
        detail.update({
            "expired": False,
            "complete": True,
            "jetstream_enabled": group is not None and acc in group.engines,
            "leafnode_connections": 0,
            "client_connections": 0 if system else sum(
                1 for c in server.connections.values()
                if not c.closed
                and c.account == acc),
        })
        if system:
            zero = {"num_subscriptions": 0, "num_cache": 0, "num_inserts": 0, "num_removes": 0,
                    "num_matches": 0, "cache_hit_rate": 0, "max_fanout": 0, "avg_fanout": 0}
            detail["subscriptions"] = 0
            detail["name_tag"] = acc
            detail["sublist_stats"] = zero
            return detail
        stats = self._sublist_stats(acc)
        detail["subscriptions"] = stats["num_subscriptions"]
        # mappings, exports, imports (account_report), then responses after sublist_stats
        from minijs.core.imports import account_report  # /accountz only: not at start

        before, after = account_report(server.config, acc,
                                       server.account_links.get(acc))
        detail.update(before)
        if jetstream:
            detail["imports"] = [*detail.get("imports", ()), {
                "subject": "$JS.API.>", "account": SYSTEM_ACCOUNT, "to": "$JS.API.>",
                "local_subject": "$JS.API.>", "type": "service", "invalid": False,
                "share": True, "tracking": False,
            }]
        detail["name_tag"] = acc
        detail["sublist_stats"] = stats
        detail.update(after)
        return detail

    # ----------------------------------------------------------------- /jsz

    def jsz(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/jsz``: JetStream usage, and per account (``accounts``/``acc``) its streams
        (``streams``), their consumers (``consumers``) and configs (``config``); ``offset``
        and ``limit`` page the accounts, as nats-server's do."""
        query = query or {}
        now, _ = self._now()
        server = self.server
        group = server.jetstream_group
        consumers = _bool_param(query, "consumers")
        streams = _bool_param(query, "streams") or consumers
        accounts = _bool_param(query, "accounts") or streams
        config = _bool_param(query, "config")
        acc = query.get("acc", "")
        offset = max(_int_param(query, "offset", 0), 0)
        limit = _int_param(query, "limit", 0)
        if limit <= 0:
            limit = 1024
        if group is None:
            return {
                "memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
                "accounts": 0, "ha_assets": 0, "api": {"level": 0, "total": 0, "errors": 0},
                "server_id": server.server_id, "now": rfc3339(now), "disabled": True,
                "config": {"max_memory": 0, "max_storage": 0},
                "streams": 0, "consumers": 0, "messages": 0, "bytes": 0, "total": 0,
            }
        engines = sorted(group.engines.items())
        mem, sto = group.usage()
        total, errors = group.api_counts()
        api = {"level": 5, "total": total, "errors": errors}
        messages = total_bytes = num_streams = num_consumers = 0
        for _, engine in engines:
            num_streams += len(engine.streams)
            num_consumers += engine.num_consumers()
            for stream in engine.streams.values():
                st = stream.store.state()
                messages += st.msgs
                total_bytes += st.bytes
        section = group.varz()
        js_config = dict(section.get("config", {}))
        js_config.setdefault("sync_interval", _ns(SYNC_INTERVAL))
        res_mem, res_sto = group.reserved()
        report: dict[str, Any] = {
            "memory": mem, "storage": sto, "reserved_memory": res_mem, "reserved_storage": res_sto,
            "accounts": len(engines), "ha_assets": 0, "api": api,
            "server_id": server.server_id, "now": rfc3339(now),
            "config": js_config,
            "limits": section.get("limits", {"default_max_consumers": 1000}),
            "streams": num_streams, "consumers": num_consumers,
            "messages": messages, "bytes": total_bytes,
        }
        jsc = server.jetstream_cluster
        if jsc is not None:
            report["meta_cluster"] = jsc.meta_info()
        if accounts or acc:
            # nats-server lists the accounts in map order; minijs sorts them by name.
            chosen = [(name, e) for name, e in engines if not acc or name == acc]
            details = []
            for name, engine in chosen[offset:offset + limit]:
                a_mem, a_sto = engine.usage()
                lim = engine.account_limits
                detail: dict[str, Any] = {
                    "name": name, "id": name, "memory": a_mem, "storage": a_sto,
                    "reserved_memory": lim.max_memory if lim.max_memory >= 0 else _U64_MAX,
                    "reserved_storage": lim.max_storage if lim.max_storage >= 0 else _U64_MAX,
                    "accounts": 0, "ha_assets": 0,
                    "api": {"level": 0, "total": engine.api_total, "errors": engine.api_errors},
                }
                all_streams = sorted(engine.streams.values(), key=lambda st: st.name)
                if streams and all_streams:
                    detail["stream_detail"] = [self._stream_detail(st, consumers, config)
                                               for st in all_streams]
                details.append(detail)
            if details:
                report["account_details"] = details
        report["total"] = len(engines)
        return report

    def _stream_detail(self, stream: Any, consumers: bool, config: bool) -> dict[str, Any]:
        info = stream.info_json(dynamic_metadata=False)
        out: dict[str, Any] = {"name": stream.name, "created": info["created"],
                               "cluster": {"leader": self.server.server_name}}
        if config:
            out["config"] = info["config"]
        out["state"] = info["state"]
        if consumers and stream.consumers:
            details = []
            for name in sorted(stream.consumers):
                cinfo = stream.consumers[name].info(dynamic_metadata=False)
                if not config:
                    cinfo.pop("config", None)
                details.append(cinfo)
            out["consumer_detail"] = details
        return out

    def _jetstream(self) -> dict[str, Any] | None:
        """The ``jetstream`` section, only when JetStream is attached (as INFO advertises
        it): configuration, limits and every account's usage summed."""
        group = self.server.jetstream_group
        return group.varz() if group is not None else None

    def _cpu_percent(self) -> float:
        """Process CPU use in percent of one core, averaged over the process's life like
        ``ps -o pcpu`` (what nats-server reports); since the monitor started where /proc is
        missing."""
        lifetime = _process_lifetime()
        if lifetime is not None and lifetime > 0:
            return round(100.0 * time.process_time() / lifetime, 2)
        wall0, cpu0 = self._cpu_mark
        wall = time.monotonic() - wall0
        if wall <= 0:
            return 0.0
        return round(100.0 * (time.process_time() - cpu0) / wall, 2)


# ----------------------------------------------------------------------------- formatting


def _json(value: Any) -> bytes:
    """Indented JSON escaped the way Go's encoder does (``<``, ``>``, ``&`` as ``\\u00XX``)."""
    text = json.dumps(value, indent=2)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .encode())


def _query(target: str) -> dict[str, str]:
    """The query string's parameters (the last value wins, as a Go handler reads them)."""
    query = target.partition("?")[2].partition("#")[0]
    if not query:
        return {}
    from urllib.parse import parse_qsl

    return dict(parse_qsl(query, keep_blank_values=True))


def _answer(report: Any, query: dict[str, str]) -> tuple[int, bytes, tuple]:
    """200 with the report as JSON, or 400 with the option error as plain text (as Go)."""
    try:
        value = report(query)
    except ValueError as exc:
        return 400, str(exc).encode(), _TEXT_HEADERS
    return 200, _json(value), _JSON_HEADERS


def _int_param(query: dict[str, str], name: str, default: int) -> int:
    """An integer option; bad text fails with Go's ``strconv.Atoi`` wording."""
    raw = query.get(name, "")
    if raw == "":
        return default
    text = raw[1:] if raw[:1] in "+-" else raw
    if not text or not text.isascii() or not text.isdigit():
        raise ValueError(f"Error decoding int for '{name}': strconv.Atoi: parsing "
                         f"{_go_quote(raw)}: invalid syntax")
    return int(raw)


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _bool_param(query: dict[str, str], name: str) -> bool:
    """A boolean option as Go's ``strconv.ParseBool`` reads it (absent or empty: false)."""
    raw = query.get(name, "")
    if raw == "" or raw in _FALSE:
        return False
    if raw in _TRUE:
        return True
    raise ValueError(f"Error decoding boolean for '{name}': strconv.ParseBool: parsing "
                     f"{_go_quote(raw)}: invalid syntax")


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _valid_literal_subject(subject: str) -> bool:
    if not subject or any(ch in subject for ch in " \t\r\n"):
        return False
    return all(tok and tok not in ("*", ">") for tok in subject.split("."))


#: /connz sort options: key over (connection, its report), and whether larger sorts first.
_SORTS: dict[str, tuple[Any, bool]] = {
    "cid": (lambda c, i: i["cid"], False),
    "start": (lambda c, i: c.start_time, False),
    "subs": (lambda c, i: i["subscriptions"], True),
    "pending": (lambda c, i: i["pending_bytes"], True),
    "msgs_to": (lambda c, i: i["out_msgs"], True),
    "msgs_from": (lambda c, i: i["in_msgs"], True),
    "bytes_to": (lambda c, i: i["out_bytes"], True),
    "bytes_from": (lambda c, i: i["in_bytes"], True),
    "last": (lambda c, i: c.last_in, True),
    "idle": (lambda c, i: c.last_in, False),
    "uptime": (lambda c, i: c.start_time, False),
    "rtt": (lambda c, i: c.rtt, True),
}

GLOBAL_ACCOUNT = "$G"
SYSTEM_ACCOUNT = "$SYS"
#: Go's uint64 of -1: what nats-server reports as an account's unlimited reservation.
_U64_MAX = (1 << 64) - 1
#: nats-server's default JetStream ``sync_interval`` (2 minutes).
SYNC_INTERVAL = 120.0


def _sid_order(sid: bytes) -> tuple[int, bytes]:
    return (int(sid), b"") if sid.isdigit() else (1 << 62, sid)


def _sub_detail(sub: Any, cid: int, account: bool = False) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    if account:
        detail["account"] = GLOBAL_ACCOUNT
        detail["account_tag"] = GLOBAL_ACCOUNT
    detail["subject"] = sub.subject.decode(errors="replace")
    if sub.queue:
        detail["qgroup"] = sub.queue.decode(errors="replace")
    detail["sid"] = sub.sid.decode(errors="replace")
    detail["msgs"] = sub.delivered
    if sub.max:
        detail["max"] = sub.max
    detail["cid"] = cid
    return detail


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of ``seconds``: ``0s``, ``350ns``, ``12.5µs``,
    ``1.401133ms``, ``1.5s``, ``2m0s``, ``1h2m3.5s``."""
    return _go_duration(int(round(seconds * 1_000_000_000)))


def _ns(seconds: float) -> int:
    """A Go ``time.Duration`` in JSON: integer nanoseconds."""
    return int(round(seconds * 1_000_000_000))


def _num(value: float) -> int | float:
    """Go prints a whole float64 without a fraction (``2``, not ``2.0``)."""
    return int(value) if float(value).is_integer() else value


def rfc3339(ts: float) -> str:
    """Go's RFC3339Nano in UTC: ``2006-01-02T15:04:05.999999999Z`` without trailing zeros (the
    seconds since the epoch are taken to the microsecond)."""
    return rfc3339_nano(int(round(ts * 1_000_000)) * 1_000)


def uptime(seconds: float) -> str:
    """nats-server's uptime text: ``45s``, ``3m2s``, ``1h0m5s``, ``2d3h0m0s``, ``1y2d...``."""
    tsecs = int(max(seconds, 0))
    tmins, thrs = tsecs // 60, tsecs // 3600
    tdays = thrs // 24
    tyrs = tdays // 365
    if tyrs > 0:
        return f"{tyrs}y{tdays % 365}d{thrs % 24}h{tmins % 60}m{tsecs % 60}s"
    if tdays > 0:
        return f"{tdays}d{thrs % 24}h{tmins % 60}m{tsecs % 60}s"
    if thrs > 0:
        return f"{thrs}h{tmins % 60}m{tsecs % 60}s"
    if tmins > 0:
        return f"{tmins}m{tsecs % 60}s"
    return f"{tsecs}s"


def _rss_bytes() -> int | None:
    """Resident memory of this process, where the OS makes it cheap to read (Linux)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _process_lifetime() -> float | None:
    """Seconds since this process started (Linux /proc), or None."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        with open("/proc/uptime", "rb") as f:
            boot_uptime = float(f.read().split()[0])
        fields = stat[stat.rindex(b")") + 2:].split()
        start_ticks = int(fields[19])  # field 22 of stat(5), counted after "pid (comm)"
        return boot_uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


async def _read_head(reader: asyncio.StreamReader) -> str:
    """The request line, after reading (and ignoring) the headers up to the blank line."""
    request_line = ""
    size = 0
    while True:
        line = await reader.readline()
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        size += len(line)
        if size > MAX_HEADER_BYTES:
            raise ValueError("request head too large")
        text = line.rstrip(b"\r\n")
        if not request_line:
            if text:  # tolerate blank lines before the request line
                request_line = text.decode("latin-1")
            continue
        if not text:
            return request_line


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _bind_reason(exc: OSError) -> str:
    """Go's wording for a bind failure ("address already in use") from Python's OSError."""
    if exc.errno is not None:
        text = os.strerror(exc.errno)
        if exc.errno == errno.EADDRINUSE:
            text = "address already in use"
        return text[:1].lower() + text[1:]
    return str(exc)
