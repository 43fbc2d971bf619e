"""The settings of a ``websocket { }`` block and their reading from a config file, with
nats-server's refusals (parseWebsocket, validateWebsocketOptions) word for word.

A floor below :mod:`minijs.config` and beside :mod:`minijs.confparse`, like
:mod:`minijs.tlsconfig`. Nothing here imports ``wsproto``: only a server that starts a
websocket listener does (:mod:`minijs.core.websocket`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from minijs.confsyntax import go_type, parse_duration
from minijs.tlsconfig import TlsOptions, parse_tls_block

#: Response headers a ``headers { }`` block may not set (nats-server's list).
_RESERVED_HEADERS = ("host", "content-length", "connection", "upgrade", "nats-no-masking")


@dataclass(frozen=True)
class WebsocketOptions:
    """One ``websocket { }`` block (nats-server's ``WebsocketOpts``). Times in seconds;
    ``handshake_timeout`` 0: no limit; ``auth_timeout`` 0: the server's."""

    host: str = "0.0.0.0"
    port: int = 0  # -1: a free port
    advertise: str = ""
    no_tls: bool = False
    tls: TlsOptions | None = None
    same_origin: bool = False
    allowed_origins: tuple[str, ...] = ()
    handshake_timeout: float = 0.0
    compression: bool = False
    username: str = ""
    password: str = ""
    token: str = ""
    auth_timeout: float = 0.0
    no_auth_user: str = ""
    jwt_cookie: str = ""
    user_cookie: str = ""
    pass_cookie: str = ""
    token_cookie: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    ping_interval: float = 0.0

    @property
    def auth_override(self) -> bool:
        """Does the block bring its own authentication (nats-server's ``authOverride``)?"""
        return bool(self.username or self.token or self.no_auth_user)


def parse_websocket_block(mapper: Any, e: Any) -> WebsocketOptions:
    """Read ``websocket { }`` as nats-server's parseWebsocket does."""
    node = e.node
    if node.kind != "map":
        raise mapper.fail(e, f"Expected websocket to be a map, got {go_type(node)}")
    fields: dict[str, Any] = {}
    for sub in node.value.entries.values():
        k = sub.key.lower()
        v = sub.node
        if k == "listen":
            host, port = mapper.host_port(sub)
            if host:
                fields["host"] = host
            fields["port"] = port
        elif k == "port":
            fields["port"] = _typed(mapper, sub, "int")
        elif k in ("host", "net"):
            fields["host"] = _typed(mapper, sub, "string")
        elif k == "advertise":
            fields["advertise"] = _typed(mapper, sub, "string")
        elif k in ("no_tls", "same_origin"):
            fields[k] = _typed(mapper, sub, "bool")
        elif k in ("compress", "compression"):
            fields["compression"] = _typed(mapper, sub, "bool")
        elif k == "tls":
            fields["tls"] = parse_tls_block(mapper, sub)
        elif k in ("allowed_origins", "allowed_origin", "allow_origins", "allow_origin",
                   "origins", "origin"):
            items = v.value if v.kind == "array" else [v]
            origins = []
            for item in items:
                if item.kind != "string":
                    raise mapper.fail(item, "error parsing allowed origins: unsupported type "
                                            f"in array {go_type(item)}")
                origins.append(item.value)
            fields["allowed_origins"] = tuple(origins)
        elif k == "handshake_timeout":
            if v.kind == "int":
                fields["handshake_timeout"] = float(v.value)
            elif v.kind == "string":
                try:
                    fields["handshake_timeout"] = parse_duration(v.value)
                except ValueError as exc:
                    raise mapper.fail(sub, str(exc)) from None
            else:
                raise mapper.fail(sub, "error parsing handshake timeout: unsupported type "
                                       f"{go_type(v)}")
        elif k in ("authorization", "authentication"):
            _simple_auth(mapper, sub, fields)
        elif k in ("jwt_cookie", "user_cookie", "pass_cookie", "token_cookie", "no_auth_user"):
            fields[k] = _typed(mapper, sub, "string")
        elif k == "headers":
            if v.kind != "map":
                raise mapper.fail(sub, f"error parsing headers: unsupported type {go_type(v)}")
            headers = []
            for h in v.value.entries.values():
                if h.node.kind != "string":
                    raise mapper.fail(h, f"error parsing header key {h.key}: unsupported type "
                                         f"{go_type(h.node)}")
                headers.append((h.key, h.node.value))
            fields["headers"] = tuple(headers)
        elif k == "ping_interval":
            fields["ping_interval"] = mapper.duration(sub)
        elif not sub.used:
            raise mapper.fail(sub, f'unknown field "{sub.key}"')
    return WebsocketOptions(**fields)


def check_websocket(options: WebsocketOptions, changes: dict[str, Any]) -> str | None:
    """nats-server's validateWebsocketOptions, once the whole file is read: its message for
    a block it refuses, else None."""
    if options.port == 0:
        return None
    if options.tls is None and not options.no_tls:
        return "websocket requires TLS configuration"
    for origin in options.allowed_origins:
        problem = _origin_problem(origin)
        if problem:
            return problem
    users = changes.get("users", ())
    if options.no_auth_user:
        if not users:
            return (f'no_auth_user: "{options.no_auth_user}" present, but users/nkeys are not '
                    "defined")
        if not any(u.user == options.no_auth_user for u in users):
            return (f'no_auth_user: "{options.no_auth_user}" not present as user or nkey in '
                    "authorization block or account configuration")
    if users:
        if options.username:
            return "websocket authentication username not compatible with presence of users/nkeys"
        if options.token:
            return "websocket authentication token not compatible with presence of users/nkeys"
    if options.jwt_cookie and not _operator_mode(changes):
        return ("trusted operators or trusted keys configuration is required for JWT "
                f'authentication via cookie "{options.jwt_cookie}"')
    for key, _ in options.headers:
        lowered = key.lower()
        if lowered in _RESERVED_HEADERS:
            return f'websocket: invalid header "{key}" not allowed'
        if lowered.startswith("sec-websocket-"):
            return f'websocket: invalid header "{key}", "Sec-WebSocket-" prefix not allowed'
    return None


def _operator_mode(changes: dict[str, Any]) -> bool:
    """Is the server in operator (JWT) mode? (trusted operators or keys configured)"""
    return bool(changes.get("operator"))


def _origin_problem(origin: str) -> str | None:
    """Go's url.ParseRequestURI and nats-server's checks of one allowed origin."""
    if not origin.startswith("/") and "://" not in origin:
        return f'unable to parse allowed origin: parse "{origin}": invalid URI for request'
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https"):
        return (f'unable to parse allowed origin "{origin}": allowed origins must be absolute '
                "URLs with http or https scheme")
    if not parts.netloc:
        return f'unable to parse allowed origin "{origin}": host is required'
    return None


def _simple_auth(mapper: Any, e: Any, fields: dict[str, Any]) -> None:
    """The block's ``authorization { user pass token timeout }`` (nats-server's
    parseSimpleAuth)."""
    if e.node.kind != "map":
        raise mapper.fail(e, "interface conversion: interface {} is "
                             f"{go_type(e.node)}, not map[string]interface {{}}")
    for sub in e.node.value.entries.values():
        k = sub.key.lower()
        if k in ("user", "username"):
            fields["username"] = _typed(mapper, sub, "string")
        elif k in ("pass", "password"):
            fields["password"] = _typed(mapper, sub, "string")
        elif k == "token":
            fields["token"] = _typed(mapper, sub, "string")
        elif k == "timeout":
            v = sub.node
            fields["auth_timeout"] = float(v.value) if v.kind in ("int", "float") else 1.0
        elif not sub.used:
            raise mapper.fail(sub, f'unknown field "{sub.key}"')


def _typed(mapper: Any, e: Any, kind: str) -> Any:
    """A value of the Go type nats-server asserts, or its panic's words."""
    if e.node.kind != kind:
        want = {"string": "string", "int": "int64", "bool": "bool"}[kind]
        raise mapper.fail(e, f"interface conversion: interface {{}} is {go_type(e.node)}, "
                             f"not {want}")
    return e.node.value

