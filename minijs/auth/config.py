"""The config-file pieces of nkey and operator authentication, as nats-server reads them
(``parseUsers``, ``parseAllowedConnectionTypes``, the operator and resolver keys), with its
error texts. Called by :mod:`minijs.confparse`, which hands itself in as ``mapper`` (its
``fail(where, message)`` makes a ``file:line:col:`` error)."""
from __future__ import annotations

from typing import Any

from minijs.auth import nkeys
from minijs.config import ConfigError


def fail_at_key(mapper: Any, e: Any, message: str) -> ConfigError:
    """An error placed where nats-server places errors of a map entry: at its key, counting
    columns from 0."""
    return ConfigError(message, mapper.path, e.line, max(e.col - 1, 0))

#: The connection types nats-server knows (``allowed_connection_types``).
CONNECTION_TYPES = ("STANDARD", "WEBSOCKET", "LEAFNODE", "LEAFNODE_WS", "MQTT", "MQTT_WS",
                    "IN_PROCESS")


def connection_types(mapper: Any, e: Any) -> tuple[str, ...]:
    """``allowed_connection_types``: a string or strings, upper-cased; an unknown one is
    nats-server's ``invalid connection types [...]``."""
    n = e.node
    if n.kind == "string":
        items = [n.value]
    elif n.kind == "array":
        items = []
        for item in n.value:
            if item.kind != "string":
                raise mapper.fail(item, "error parsing allowed connection types: unsupported "
                                        "type in array")
            items.append(item.value)
    else:
        from minijs.confparse import _go_type

        raise fail_at_key(mapper, e, "error parsing allowed connection types: unsupported "
                                     f"type {_go_type(n)}")
    bad = [t for t in items if t.upper() not in CONNECTION_TYPES]
    if bad:
        shown = " ".join(f'"{t}"' for t in bad)
        raise fail_at_key(mapper, e, f"invalid connection types [{shown}]")
    out: list[str] = []
    for t in items:
        if t.upper() not in out:
            out.append(t.upper())
    return tuple(out)


def check_nkey_user(mapper: Any, where: Any, nkey: str, name: str | None,
                    password: str | None) -> None:
    """An nkey user entry: a valid public user key, without a user name or password."""
    if not nkeys.is_user_key(nkey):
        raise fail_at_key(mapper, where, "Not a valid public nkey for a user")
    if name or password:
        raise fail_at_key(mapper, where, "Nkey users do not take usernames or passwords")
