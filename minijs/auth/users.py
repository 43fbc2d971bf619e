"""nkey users of the config file (``users = [{nkey: U...}]``): the client proves it owns the
key by signing the nonce of its INFO, as nats-server's ``processClientOrLeafAuthentication``
checks it (the signature base64url, or standard base64 as its fallback; ``no_auth_user`` may
name an nkey user, who then needs no signature)."""
from __future__ import annotations

from typing import Any

from minijs.auth import nkeys


def authenticate_nkey(conn: Any, opts: dict[str, Any]) -> bool | None:
    """Authenticate ``conn`` as an nkey user: True or False when the CONNECT is an nkey
    user's (or the ``no_auth_user`` is one), None when it is not (a user/password, or no
    nkey at all: the other checks decide)."""
    server = conn.server
    key = opts.get("nkey") or ""
    no_auth = server.config.no_auth_user
    if (not key and no_auth and no_auth in server.nkey_users and not opts.get("user")
            and not opts.get("pass") and not opts.get("auth_token")):
        key = no_auth
    if not key:
        return None
    user = server.nkey_users.get(key)
    if user is None:
        return False
    if user.connection_types is not None and conn.connection_type not in user.connection_types:
        return False
    if key != no_auth:
        if not check_signature(conn, key, opts.get("sig") or ""):
            return False
    conn._login(user)
    return True


def check_signature(conn: Any, key: str, sig_text: str) -> bool:
    """Is ``sig_text`` the nonce of ``conn`` signed by ``key``? The reason a check fails is
    logged at debug level, in nats-server's words."""
    log = conn.server.log
    prefix = f"{conn.host}:{conn.port} - cid:{conn.cid} - "
    if not sig_text:
        log.debug(prefix + "Signature missing")
        return False
    sig = nkeys.decode_signature(sig_text)
    if sig is None:
        log.debug(prefix + "Signature not valid base64")
        return False
    try:
        nkeys.decode_public(key)
    except nkeys.NkeyError as exc:
        log.debug(prefix + f"User nkey not valid: {exc}")
        return False
    if not nkeys.verify(key, conn.nonce.encode(), sig):
        log.debug(prefix + "Signature not verified")
        return False
    return True
