"""The listener keys of a config file (``tls``, ``allow_non_tls``, ``websocket``), read into
:class:`~minijs.config.ServerConfig` changes for :mod:`minijs.confparse`, which loads this
module only when a file has one of them."""
from __future__ import annotations

from typing import Any

from minijs.confsyntax import ConfigError, go_type
from minijs.tlsconfig import parse_tls_block
from minijs.wsconfig import check_websocket, parse_websocket_block


def take(mapper: Any, e: Any) -> None:
    """One top-level ``tls``, ``allow_non_tls`` or ``websocket`` entry."""
    key = e.key.lower()
    changes = mapper.changes
    if key == "tls":
        if e.node.kind != "map":
            raise mapper.fail(e, "interface conversion: interface {} is "
                                 f"{go_type(e.node)}, not map[string]interface {{}}")
        changes["tls"] = parse_tls_block(mapper, e)
    elif key == "allow_non_tls":
        changes["allow_non_tls"] = mapper.bool_(e)
    else:
        changes["websocket"] = parse_websocket_block(mapper, e)


def finish(mapper: Any) -> None:
    """Cross-checks once the whole file is read: nats-server's default authentication
    timeout with TLS (the TLS timeout plus a second, unless ``authorization { timeout }`` set
    one) and its refusals of a websocket block."""
    changes = mapper.changes
    tls = changes.get("tls")
    if tls is not None and "auth_timeout" not in changes:
        changes["auth_timeout"] = tls.timeout + 1.0
    websocket = changes.get("websocket")
    if websocket is not None:
        problem = check_websocket(websocket, changes)
        if problem:
            raise ConfigError(problem)

