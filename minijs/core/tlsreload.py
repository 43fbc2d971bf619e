"""What a config reload does to the listeners (registered in :mod:`minijs.reload`'s table):
TLS certificates, CA, verification, timeout and pins reload for new connections of the client
and websocket listeners (established ones keep their session), as nats-server reloads its
``tls { }``; turning TLS on or off, and any other change of a ``websocket { }`` block, is
refused (nats-server refuses the latter too).

A ``tls { }`` whose files changed on disk differs from the one loaded before
(:attr:`minijs.tlsconfig.TlsOptions.fingerprint`), so a reload picks the new certificate up
even when its path is the same."""
from __future__ import annotations

import dataclasses
from typing import Any


def check_tls(server: Any, old: Any, new: Any) -> str | None:
    if (old.tls is None) != (new.tls is None):
        return ("config reload of tls to turn TLS on or off is not supported by minijs: "
                "restart the server to change it")
    return None


def apply_tls(server: Any, old: Any, new: Any) -> list[str]:
    server.client_tls.reload(new.tls)
    return ["Reloaded: tls = enabled"]


def check_websocket(server: Any, old: Any, new: Any) -> str | None:
    before, after = old.websocket, new.websocket
    if (before is None) != (after is None) or (
            before is not None and _without_tls(before) != _without_tls(after)):
        return (f"config reload not supported for Websocket: old={before}, new={after}")
    if before is not None and (before.tls is None) != (after.tls is None):
        return ("config reload not supported for Websocket: the tls block cannot be added "
                "or removed")
    return None


def apply_websocket(server: Any, old: Any, new: Any) -> list[str]:
    listener = server.websocket
    if listener is not None and listener.tls is not None and new.websocket.tls is not None:
        listener.tls.reload(new.websocket.tls)
        listener.options = new.websocket
    return []


def _without_tls(options: Any) -> Any:
    return dataclasses.replace(options, tls=None)
