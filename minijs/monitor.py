"""The HTTP monitoring endpoint (``-m PORT``): ``/varz``, ``/connz``, ``/healthz`` and ``/``.

Harnesses and container health checks poll these to learn that a nats-server is up, so the
answers copy nats-server's: the same paths, status codes, headers and JSON field names and
units (durations in nanoseconds, timestamps in RFC 3339 UTC). ``/varz`` carries only the fields
minijs can fill truthfully; the ones that describe clusters, TLS or Go internals are left out.

A deliberately small HTTP/1.1 server on asyncio: one request per connection, then close.
"""
from __future__ import annotations

import asyncio
import errno
import json
import os
import time
from typing import TYPE_CHECKING, Any

from minijs.config import GIT_COMMIT, GO_VERSION, NATS_SERVER_VERSION

if TYPE_CHECKING:
    from minijs.core.router import Router

#: How long a client may take to send its request head before it is dropped.
REQUEST_TIMEOUT = 10.0
MAX_HEADER_BYTES = 64 * 1024

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large"}
_JSON_HEADERS = (("Access-Control-Allow-Origin", "*"), ("Content-Type", "application/json"))
_TEXT_HEADERS = (("Content-Type", "text/plain; charset=utf-8"),
                 ("X-Content-Type-Options", "nosniff"))


class MonitorError(OSError):
    """The monitor port could not be bound; the text is nats-server's fatal log line."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "Can't start monitoring"


class Monitor:
    """nats-server's monitoring HTTP endpoint for one server (read through its router)."""

    def __init__(self, server: "Router") -> None:
        self.server = server
        config = server.config
        self.host = config.http_host or config.host
        self.requested_port = config.http_port if config.http_port is not None else 0
        self.port = 0
        self.req_stats: dict[str, int] = {}
        self._listener: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._cpu_mark = (time.monotonic(), time.process_time())
        self._routes = {
            "/": self._index,
            "/varz": self._varz,
            "/connz": self._connz,
            "/healthz": self._healthz,
        }

    @property
    def _log(self) -> Any:
        return getattr(self.server, "log", None) or getattr(self.server, "logger", None)

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

    async def stop(self) -> None:
        """Stop listening and drop any request still being served."""
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
        return 200, b'{"status":"ok"}', _JSON_HEADERS

    def _varz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        return 200, _json(self.varz()), _JSON_HEADERS

    def _connz(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        try:
            report = self.connz(query)
        except ValueError as exc:
            return 400, f"{exc}\n".encode(), _TEXT_HEADERS
        return 200, _json(report), _JSON_HEADERS

    def _index(self, query: dict[str, str]) -> tuple[int, bytes, tuple]:
        links = "\n".join(
            f'\t<a href=.{path}>{title}<span class="endpoint"> {path}</span></a>'
            for path, title in (("/varz", "General"), ("/connz", "Connections"),
                                ("/healthz", "Health Probe")))
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
        clock = getattr(server, "clock", None)
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
        if config.auth_required:
            v["auth_required"] = True
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
        jetstream = self._jetstream()
        if jetstream is not None:
            v["jetstream"] = jetstream
        v.update({
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
            "routes": 0,
            "remotes": 0,
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
        return v

    def connz(self, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``/connz``: open client connections, with nats-server's paging, sorting and
        ``subs`` options. minijs keeps no record of closed connections, so ``state=closed``
        and ``state=all`` are refused rather than answered with an empty list."""
        query = query or {}
        server = self.server
        clock = getattr(server, "clock", None)
        now = clock.time() if clock is not None else time.time()
        mono = clock.monotonic() if clock is not None else time.monotonic()
        state = query.get("state", "open").lower()
        if state not in ("open", ""):
            raise ValueError(f"minijs keeps no closed connections: state={state} is not "
                             "supported")
        subs = query.get("subs", "").lower()
        detail = subs == "detail"
        with_subs = detail or subs in ("1", "true", "t")
        offset = _int_param(query, "offset", 0)
        limit = _int_param(query, "limit", 1024) or 1024
        sort = query.get("sort", "cid").lower() or "cid"
        if sort not in _SORTS:
            raise ValueError(f"invalid sorting option: {sort}")
        conns = [c for c in server.connections.values() if not getattr(c, "closed", False)]
        if "cid" in query:
            cid = _int_param(query, "cid", 0)
            conns = [c for c in conns if c.cid == cid]
        infos = [self._conn_info(c, now, mono, with_subs, detail) for c in conns]
        key, reverse = _SORTS[sort]
        infos.sort(key=lambda info: (key(info), info["cid"]), reverse=reverse)
        page = infos[offset:offset + limit]
        return {
            "server_id": server.server_id,
            "now": rfc3339(now),
            "num_connections": len(page),
            "total": len(infos),
            "offset": offset,
            "limit": limit,
            "connections": page,
        }

    def _conn_info(self, conn: Any, now: float, mono: float, with_subs: bool,
                   detail: bool) -> dict[str, Any]:
        last_in = getattr(conn, "last_in", mono)
        last_activity = now - max(mono - last_in, 0.0)
        info: dict[str, Any] = {
            "cid": conn.cid,
            "kind": "Client",
            "type": "nats",
            "ip": conn.host,
            "port": conn.port,
            "start": rfc3339(conn.start_time),
            "last_activity": rfc3339(last_activity),
        }
        rtt = getattr(conn, "rtt", 0.0)
        if rtt:
            info["rtt"] = go_duration(rtt)
        info.update({
            "uptime": uptime(now - conn.start_time),
            "idle": uptime(now - last_activity),
            "pending_bytes": getattr(conn, "_out_size", 0),
            "in_msgs": conn.in_msgs,
            "out_msgs": conn.out_msgs,
            "in_bytes": conn.in_bytes,
            "out_bytes": conn.out_bytes,
            "subscriptions": len(conn.subs),
        })
        for field in ("name", "lang", "version"):
            value = getattr(conn, field, "")
            if value:
                info[field] = value
        if with_subs and conn.subs:
            subs = sorted(conn.subs.values(), key=lambda sub: _sid_order(sub.sid))
            if detail:
                info["subscriptions_list_detail"] = [_sub_detail(sub, conn.cid) for sub in subs]
            else:
                info["subscriptions_list"] = [sub.subject.decode(errors="replace")
                                              for sub in subs]
        return info

    def _jetstream(self) -> dict[str, Any] | None:
        """The ``jetstream`` section, only when an engine is attached (as INFO advertises it).

        An engine may supply the whole section through a ``varz()`` method; otherwise the
        configured limits are reported.
        """
        engine = getattr(self.server, "jetstream", None)
        if engine is None:
            return None
        report = getattr(engine, "varz", None)
        if callable(report):
            return report()
        config = self.server.config
        js_config: dict[str, Any] = {
            "max_memory": getattr(engine, "max_memory", config.max_memory_store),
            "max_storage": getattr(engine, "max_storage", config.max_file_store),
        }
        store_dir = getattr(engine, "store_dir", None) or config.store_dir
        if store_dir:
            js_config["store_dir"] = str(store_dir)
        return {"config": js_config}

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


def _int_param(query: dict[str, str], name: str, default: int) -> int:
    raw = query.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"invalid {name} value {raw!r}") from None
    if value < 0:
        raise ValueError(f"invalid {name} value {raw!r}")
    return value


#: /connz sort options: key over a connection's report, and whether larger sorts first.
_SORTS: dict[str, tuple[Any, bool]] = {
    "cid": (lambda i: i["cid"], False),
    "start": (lambda i: i["start"], False),
    "subs": (lambda i: i["subscriptions"], True),
    "pending": (lambda i: i["pending_bytes"], True),
    "msgs_to": (lambda i: i["out_msgs"], True),
    "msgs_from": (lambda i: i["in_msgs"], True),
    "bytes_to": (lambda i: i["out_bytes"], True),
    "bytes_from": (lambda i: i["in_bytes"], True),
    "last": (lambda i: i["last_activity"], True),
    "idle": (lambda i: i["last_activity"], False),
    "uptime": (lambda i: i["start"], False),
}


def _sid_order(sid: bytes) -> tuple[int, bytes]:
    return (int(sid), b"") if sid.isdigit() else (1 << 62, sid)


def _sub_detail(sub: Any, cid: int) -> dict[str, Any]:
    detail: dict[str, Any] = {"subject": sub.subject.decode(errors="replace")}
    if sub.queue:
        detail["qgroup"] = sub.queue.decode(errors="replace")
    detail["sid"] = sub.sid.decode(errors="replace")
    detail["msgs"] = sub.delivered
    if sub.max:
        detail["max"] = sub.max
    detail["cid"] = cid
    return detail


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: ``0s``, ``350ns``, ``12.5µs``, ``1.401133ms``,
    ``1.5s``, ``2m0s``, ``1h2m3.5s``."""
    ns = int(round(seconds * 1_000_000_000))
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return sign + _decimal(ns, 1_000) + "µs"
    if ns < 1_000_000_000:
        return sign + _decimal(ns, 1_000_000) + "ms"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


def _ns(seconds: float) -> int:
    """A Go ``time.Duration`` in JSON: integer nanoseconds."""
    return int(round(seconds * 1_000_000_000))


def _num(value: float) -> int | float:
    """Go prints a whole float64 without a fraction (``2``, not ``2.0``)."""
    return int(value) if float(value).is_integer() else value


def rfc3339(ts: float) -> str:
    """Go's RFC3339Nano in UTC: ``2006-01-02T15:04:05.999999999Z`` without trailing zeros."""
    micros = int(round(ts * 1_000_000))
    secs, frac = divmod(micros, 1_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs))
    if frac:
        text += "." + f"{frac:06d}".rstrip("0")
    return text + "Z"


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
