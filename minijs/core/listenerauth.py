"""Authentication that depends on the listener a client came in on, as nats-server's
processClientOrLeafAuthentication decides it:

* ``tls { verify_and_map: true }``: the client certificate names the user: an e-mail address
  or DNS name among its SANs, a URI SAN, or its subject as a distinguished name (in any RDN
  order), matched against the configured users; no password;
* a ``websocket { }`` block with ``authorization { user pass token }`` or ``no_auth_user``
  replaces the server's own settings for websocket clients; its ``tls { verify_and_map }``
  replaces the client listener's.

:class:`~minijs.core.connection.Connection` hands a CONNECT here only for websocket clients
and when certificates map users; everything else keeps the connection's own checks.
"""
from __future__ import annotations

from typing import Any

from minijs.auth.passwords import check_password


def authenticate(conn: Any, opts: dict[str, Any]) -> bool:
    """Check a CONNECT's credentials for ``conn``; log in the user it names."""
    config = conn.server.config
    ws = conn.websocket
    override = ws is not None and ws.options.auth_override
    if not config.auth_required and not override:
        return True
    if ws is not None:
        tls_map = ws.options.tls is not None and ws.options.tls.map_users
    else:
        tls_map = config.tls is not None and config.tls.map_users
    if override:
        options = ws.options
        username, password, token, no_auth = (options.username, options.password,
                                              options.token, options.no_auth_user)
    else:
        username, password, token, no_auth = (config.user, config.password, config.token,
                                               config.no_auth_user)
    if config.users:
        if tls_map:
            user = _user_from_certificate(conn)
            if user is None:
                return False
            if not _type_allowed(conn, user):
                return False
            if opts.get("user"):
                conn.server.log.warn(f'User "{opts["user"]}" found in connect proto, but user '
                                     "required from cert")
            conn._login(user)
            return True
        name = opts.get("user") or ""
        given = opts.get("pass") or ""
        if no_auth and not name and not given and not opts.get("auth_token"):
            name = no_auth
            found = conn.server.find_user(name)
            given = found.password if found is not None else ""
        user = conn.server.find_user(name) if name else None
        if user is None:
            return False
        if not user.password and user.user != no_auth and _maps_elsewhere(config, ws):
            return False  # a certificate-only identity, on a listener that does not map
        if not check_password(user.password, given) or not _type_allowed(conn, user):
            return False
        conn._login(user)
        return True
    if token:
        return check_password(token, opts.get("auth_token") or "")
    if username:
        if opts.get("user") == username and check_password(password, opts.get("pass") or ""):
            conn.user = username
            conn.user_label = f"user:{username}"
            return True
        return False
    return True


def _type_allowed(conn: Any, user: Any) -> bool:
    """The user's ``allowed_connection_types`` admit this client's (``WEBSOCKET`` for the
    websocket listener's)."""
    types = getattr(user, "connection_types", None)
    return types is None or conn.connection_type in types


def _maps_elsewhere(config: Any, ws: Any) -> bool:
    """Does a listener other than this client's map users from certificates?"""
    main = config.tls is not None and config.tls.map_users
    websocket = (config.websocket is not None and config.websocket.tls is not None
                 and config.websocket.tls.map_users)
    return websocket if ws is None else main


def _user_from_certificate(conn: Any) -> Any:
    """The configured user the client certificate names, in nats-server's order (e-mail
    SANs, DNS SANs, URI SANs, then the subject as a distinguished name), or None."""
    session = conn.tls if conn.websocket is None else conn.websocket.tls
    server = conn.server
    log = server.log
    prefix = f"{conn.host}:{conn.port} - cid:{conn.cid} - "
    if session is None:
        log.debug(prefix + "User required in cert, no TLS connection state")
        return None
    if not session.peer_chain:
        log.debug(prefix + "User required in cert, no peer certificates found")
        return None
    from cryptography import x509

    from minijs.core.tls import go_name

    cert = x509.load_der_x509_certificate(session.peer_chain[0])
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = None
    if sans is not None:
        for kind, what in ((x509.RFC822Name, "email"), (x509.DNSName, "SAN"),
                           (x509.UniformResourceIdentifier, "URI")):
            for name in sans.get_values_for_type(kind):
                user = server.find_user(name)
                if user is not None:
                    log.debug(prefix + f'Using {what} found in cert for auth ["{name}"]')
                    return user
    subject = _rdns(cert.subject)
    for user in server.config.users:
        wanted = _parse_dn(user.user)
        if wanted is not None and (wanted == subject or sorted(wanted) == sorted(subject)):
            log.debug(prefix + f'Using DistinguishedNameMatch for auth ["{user.user}"]')
            return user
    rdn = go_name(cert.subject)
    user = server.find_user(rdn)
    if user is not None:
        log.debug(prefix + f'Using certificate subject for auth ["{rdn}"]')
    return user


#: Attribute names as distinguished names spell them, by OID.
_DN_NAMES = {"2.5.4.3": "cn", "2.5.4.6": "c", "2.5.4.7": "l", "2.5.4.8": "st",
             "2.5.4.9": "street", "2.5.4.10": "o", "2.5.4.11": "ou", "2.5.4.5": "serialnumber",
             "2.5.4.17": "postalcode", "0.9.2342.19200300.100.1.25": "dc",
             "0.9.2342.19200300.100.1.1": "uid", "1.2.840.113549.1.9.1": "emailaddress"}


def _rdns(name: Any) -> list[tuple[tuple[str, str], ...]]:
    """A certificate name's RDNs, most significant last (as a DN string reads them)."""
    out = []
    for rdn in name.rdns:
        out.append(tuple(sorted((_DN_NAMES.get(a.oid.dotted_string, a.oid.dotted_string),
                                 str(a.value)) for a in rdn)))
    return list(reversed(out))


def _parse_dn(text: str) -> list[tuple[tuple[str, str], ...]] | None:
    """An RFC 4514 distinguished name (``CN=alice,OU=dev,O=acme``) as RDNs; None when the
    text is not one."""
    if "=" not in text:
        return None
    rdns: list[tuple[tuple[str, str], ...]] = []
    attrs: list[tuple[str, str]] = []
    buf: list[str] = []
    i = 0
    while i <= len(text):
        ch = text[i] if i < len(text) else ","
        if ch == "\\" and i + 1 < len(text):
            buf.append(text[i + 1])
            i += 2
            continue
        if ch in ",+":
            key, sep, value = "".join(buf).partition("=")
            if not sep or not key.strip():
                return None
            attrs.append((key.strip().lower(), value.strip()))
            buf = []
            if ch == ",":
                rdns.append(tuple(sorted(attrs)))
                attrs = []
        else:
            buf.append(ch)
        i += 1
    return rdns
