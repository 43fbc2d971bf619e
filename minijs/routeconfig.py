"""Route options: how a minijs process joins others by routes (nats-server's ``cluster { }``).

The flags (``--cluster``/``--cluster_listen``, ``--routes``, ``--cluster_advertise``,
``--no_advertise``, ``--connect_retries``) and the ``cluster { }`` block of a config file both
end as one :class:`RouteOptions` in ``ServerConfig.route_options`` (None: no route listener, a
server of its own). The block's ``name`` is ``ServerConfig.cluster_name``, shared with the
in-process cluster. Texts of errors are nats-server's where it has one; where nats-server
accepts something it cannot use (a route URL without a port), minijs refuses it naming the fix.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit


#: nats-server's defaults (``DEFAULT_ROUTE_POOL_SIZE``, the cluster's auth and TLS timeouts).
DEFAULT_POOL_SIZE = 3
DEFAULT_AUTH_TIMEOUT = 2.0
TLS_TIMEOUT = 2.0


class RouteOptionError(ValueError):
    """A route option that cannot be used (the message names the fix)."""


@dataclass(frozen=True)
class RouteURL:
    """A route to solicit: where, and the credentials it presents."""

    host: str
    port: int
    user: str = ""
    password: str = field(default="", repr=False)
    #: As configured (for messages; credentials redacted).
    text: str = ""

    @property
    def host_port(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class RouteOptions:
    """nats-server's cluster options that minijs implements (see the module docstring)."""

    #: Where the route listener binds (``listen``/``--cluster``); port 0: any free port.
    host: str = "0.0.0.0"
    port: int = 0
    #: Routes to solicit (``routes``/``--routes``), in the order given.
    routes: tuple[RouteURL, ...] = ()
    #: ``advertise``/``--cluster_advertise``: the ``host:port`` other nodes are told to dial.
    advertise: str = ""
    #: ``no_advertise``: do not tell clients the other nodes' URLs (nor tell others ours).
    no_advertise: bool = False
    #: ``connect_retries``: extra attempts at an implicit (gossiped) route, 1 s apart.
    connect_retries: int = 0
    #: ``connect_backoff``: double the delay between attempts, up to 30 s.
    connect_backoff: bool = False
    #: ``pool_size``: connections per remote server (-1: one, without pooling).
    pool_size: int = DEFAULT_POOL_SIZE
    #: ``accounts``: accounts given a connection of their own (the system account always is).
    pinned_accounts: tuple[str, ...] = ()
    #: ``authorization { user password timeout }``: what soliciting nodes must present.
    user: str = ""
    password: str = field(default="", repr=False)
    auth_timeout: float = DEFAULT_AUTH_TIMEOUT
    #: ``ping_interval`` (seconds; 0: the server's, at most 30 s) and ``ping_max`` (0: the
    #: server's).
    ping_interval: float = 0.0
    ping_max: int = 0

    def __post_init__(self) -> None:
        # Routes may be given as URLs (``routes=("nats://127.0.0.1:6222",)``).
        routes = tuple(parse_route_url(r) if isinstance(r, str) else r for r in self.routes)
        object.__setattr__(self, "routes", routes)


def parse_route_url(text: str, kind: str = "route") -> RouteURL:
    """``nats://[user:password@]host:port`` (any scheme, as nats-server takes any)."""
    raw = text.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or not parts.scheme or not parts.hostname or port is None:
        raise RouteOptionError(f"error parsing {kind} url [{_go_quote(_redact(raw))}]: give "
                               "nats://[user:password@]host:port")
    user = unquote(parts.username or "")
    password = unquote(parts.password or "")
    return RouteURL(parts.hostname, port, user, password, _redact(raw))


def _redact(url: str) -> str:
    return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:xxxxx@", url)


def _go_quote(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def parse_listen_url(text: str) -> tuple[str, int, str, str]:
    """``--cluster``/``--cluster_listen``: ``nats://[user:password@]host:port`` (port -1: a
    free one) as (host, port, user, password), nats-server's ``overrideCluster``."""
    raw = text.strip()
    random_port = raw.endswith(":-1")
    if random_port:
        raw = raw[:-3] + ":0"
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or not parts.hostname or port is None:
        raise RouteOptionError(f"invalid value {_go_quote(text)} for flag -cluster: give "
                               "nats://host:port (port -1: any free port)")
    user, password = "", ""
    if parts.username is not None:
        if parts.password is None:
            raise RouteOptionError("expected cluster password to be set")
        user, password = unquote(parts.username), unquote(parts.password)
    return parts.hostname, port, user, password


def parse_routes_flag(text: str) -> tuple[RouteURL, ...]:
    """``--routes a,b,c`` (nats-server's ``RoutesFromStr``); an empty value: none."""
    if not text.strip():
        return ()
    return tuple(parse_route_url(part) for part in text.split(",") if part.strip())


def parse_advertise(text: str, port: int) -> tuple[str, int]:
    """``host[:port]`` (the listen port when none), nats-server's ``parseHostPort``."""
    raw = text.strip()
    if raw.startswith("["):
        host, sep, rest = raw[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, sep, port_text = raw.rpartition(":")
        if not sep:
            host, port_text = raw, ""
    if not host:
        raise RouteOptionError(f"invalid cluster advertise address {_go_quote(text)}: give "
                               "host:port")
    if port_text:
        try:
            port = int(port_text)
        except ValueError:
            raise RouteOptionError(f"invalid cluster advertise address {_go_quote(text)}: "
                                   "give host:port") from None
    return host, port


# ------------------------------------------------------------------ the cluster { } block

#: nats-server cluster settings minijs does not implement: refused by name.
UNSUPPORTED_BLOCK_KEYS = ("tls", "permissions", "write_deadline", "write_timeout")


def cluster_block(mapper: Any, e: Any) -> None:
    """Map ``cluster { ... }`` onto ``mapper.changes`` (``route_options``, ``cluster_name``).

    A block without ``listen``/``port`` names the cluster only (no route listener), as in
    nats-server; ``routes`` then are an error naming the fix."""
    block = mapper.map_(e)
    changes = mapper.changes
    fields: dict[str, Any] = {}
    listening = False
    for sub in block.entries.values():
        k = sub.key.lower()
        if k == "name":
            name = mapper.name_(sub)
            if " " in name:
                raise mapper.fail(sub.node, "cluster name cannot contain spaces")
            changes["cluster_name"] = name
        elif k == "listen":
            host, port = mapper.host_port(sub)
            if host:
                fields["host"] = host
            fields["port"] = _port(mapper, sub, port)
            listening = fields["port"] is not None
        elif k == "port":
            fields["port"] = _port(mapper, sub, mapper.int_(sub))
            listening = fields["port"] is not None
        elif k in ("host", "net"):
            fields["host"] = mapper.str_(sub)
        elif k == "authorization":
            _authorization(mapper, sub, fields)
        elif k == "routes":
            fields["routes"] = _routes(mapper, sub)
        elif k in ("advertise", "cluster_advertise"):
            fields["advertise"] = mapper.str_(sub)
        elif k == "no_advertise":
            fields["no_advertise"] = mapper.bool_(sub)
        elif k == "connect_retries":
            fields["connect_retries"] = mapper.int_(sub)
        elif k == "connect_backoff":
            fields["connect_backoff"] = mapper.bool_(sub)
        elif k == "pool_size":
            size = mapper.int_(sub)
            fields["pool_size"] = DEFAULT_POOL_SIZE if size == 0 else size
        elif k == "accounts":
            fields["pinned_accounts"] = _strings(mapper, sub)
        elif k == "compression":
            _compression(mapper, sub)
        elif k == "ping_interval":
            fields["ping_interval"] = mapper.duration(sub)
        elif k == "ping_max":
            fields["ping_max"] = mapper.int_(sub)
        elif k in UNSUPPORTED_BLOCK_KEYS:
            raise mapper.fail(sub, f'field "{sub.key}" in cluster is a nats-server setting '
                                   "that minijs does not support")
        elif not sub.used:
            raise mapper.fail(sub, f'unknown field "{sub.key}" in cluster')
    port = fields.pop("port", None)
    if not listening:
        if fields.get("routes"):
            raise mapper.fail(e, "solicited routes require cluster capabilities: give the "
                                 "cluster block a listen address (listen: 127.0.0.1:6222)")
        return
    fields["port"] = port
    changes["route_options"] = RouteOptions(**fields)


def _port(mapper: Any, e: Any, port: int) -> int | None:
    """0: no route listener (nats-server's default); -1: any free port."""
    if port > 65535:
        raise mapper.fail(e, f"{e.key}: port {port} is out of range")
    if port == 0:
        return None
    return 0 if port < 0 else port


def _authorization(mapper: Any, e: Any, fields: dict[str, Any]) -> None:
    for sub in mapper.map_(e).entries.values():
        k = sub.key.lower()
        if k in ("user", "username"):
            fields["user"] = mapper.name_(sub)
        elif k in ("pass", "password"):
            fields["password"] = mapper.name_(sub)
        elif k == "timeout":
            fields["auth_timeout"] = mapper.seconds(sub)
        elif k == "users":
            raise mapper.fail(e, "Cluster authorization does not allow multiple users")
        elif k == "token":
            raise mapper.fail(e, "Cluster authorization does not support tokens")
        elif k in ("permissions", "default_permissions", "default_permission"):
            raise mapper.fail(sub, "permissions in cluster authorization are a nats-server "
                                   "setting that minijs does not support")
        elif not sub.used:
            raise mapper.fail(sub, f'unknown field "{sub.key}" in cluster authorization')


def _strings(mapper: Any, e: Any) -> tuple[str, ...]:
    n = e.node
    if n.kind != "array":
        raise mapper.fail(n, f"{e.key}: expected an array of strings")
    out = []
    for item in n.value:
        if item.kind != "string":
            raise mapper.fail(item, f"{e.key}: expected an array of strings")
        out.append(item.value)
    return tuple(out)


def _routes(mapper: Any, e: Any) -> tuple[RouteURL, ...]:
    out: list[RouteURL] = []
    seen: set[str] = set()
    for item in (e.node.value if e.node.kind == "array" else [e.node]):
        if item.kind != "string":
            raise mapper.fail(item, "routes: expected an array of route URLs")
        if item.value in seen:
            continue  # nats-server warns "Duplicate route entry detected" and skips it
        seen.add(item.value)
        try:
            out.append(parse_route_url(item.value))
        except RouteOptionError as exc:
            raise mapper.fail(item, str(exc)) from None
    return tuple(out)


def _compression(mapper: Any, e: Any) -> None:
    """Route compression: ``off`` (and ``accept``, nats-server's default: never start it) are
    what minijs does; an S2 mode is refused by name."""
    n = e.node
    mode = n.value if n.kind in ("string", "bool") else None
    if mode in (False, "off", "disabled", "accept"):
        return
    raise mapper.fail(n, f"cluster compression {mode!r} is a nats-server setting that minijs "
                         "does not support (use off or accept)")


def check_options(options: RouteOptions) -> None:
    """What the server checks before it listens: raises :class:`RouteOptionError` naming the
    fix."""
    if options.advertise:
        parse_advertise(options.advertise, options.port)
