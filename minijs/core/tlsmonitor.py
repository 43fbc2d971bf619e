"""What ``/varz`` and ``/connz`` show of TLS and the websocket listener, in nats-server's
fields (loaded by the monitor only when a connection or the config has TLS or websocket)."""
from __future__ import annotations

from typing import Any

from minijs.core.tls import TlsSession, not_after


def connz_tls(session: TlsSession, auth: bool) -> dict[str, Any]:
    """``tls_version``, ``tls_cipher_suite``, ``tls_peer_certs`` (with ``auth``) and
    ``tls_first`` of a connection."""
    out: dict[str, Any] = {"tls_version": session.version, "tls_cipher_suite": session.cipher}
    if auth and session.peer_chain:
        out["tls_peer_certs"] = session.peer_certs()
    if session.first:
        out["tls_first"] = True
    return out


def cert_not_after(cert_file: str) -> str:
    """``tls_cert_not_after``: the certificate's expiry as RFC 3339 (UTC), or ''."""
    import datetime

    when = not_after(cert_file)
    if when is None:
        return ""
    return datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def websocket_varz(listener: Any) -> dict[str, Any]:
    """``/varz`` ``websocket``: the block's settings, Go's omit-empty rules."""
    o = listener.options
    out: dict[str, Any] = {"host": o.host, "port": listener.port}
    if o.advertise:
        out["advertise"] = o.advertise
    if o.no_auth_user:
        out["no_auth_user"] = o.no_auth_user
    if o.jwt_cookie:
        out["jwt_cookie"] = o.jwt_cookie
    if o.handshake_timeout:
        out["handshake_timeout"] = round(o.handshake_timeout * 1e9)
    if o.auth_timeout:
        out["auth_timeout"] = o.auth_timeout
    if o.no_tls:
        out["no_tls"] = True
    if o.tls is not None and o.tls.map_users:
        out["tls_map"] = True
    if o.tls is not None and o.tls.pinned_certs:
        out["tls_pinned_certs"] = list(o.tls.pinned_certs)
    if o.same_origin:
        out["same_origin"] = True
    if o.allowed_origins:
        out["allowed_origins"] = list(o.allowed_origins)
    if o.compression:
        out["compression"] = True
    if o.tls is not None and o.tls.cert_file:
        when = cert_not_after(o.tls.cert_file)
        if when:
            out["tls_cert_not_after"] = when
    return out
