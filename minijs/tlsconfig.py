"""The settings of a ``tls { }`` block (the client listener's, the websocket listener's) and
their reading from a config file, with nats-server's refusals word for word.

A floor below :mod:`minijs.config` (which names :class:`TlsOptions` only for type checking)
and beside :mod:`minijs.confparse`, which hands a ``tls`` entry to :func:`parse_tls_block`. The
certificate files are loaded (and refused) by :func:`minijs.core.tls.server_context`, at
config time as nats-server does; nothing here imports :mod:`ssl`, so a server configured
without TLS never loads it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from minijs.confsyntax import go_type, parse_duration

#: nats-server's TLS_TIMEOUT: how long a client has for its TLS handshake (seconds).
DEFAULT_TLS_TIMEOUT = 2.0
#: nats-server's DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY (``handshake_first: auto``).
DEFAULT_FALLBACK_DELAY = 0.05

#: Go's cipher suite names (``crypto/tls``) as ``cipher_suites`` takes them: the OpenSSL name
#: of each (None: a TLS 1.3 suite, which neither Go nor OpenSSL lets a config choose) and
#: whether Go counts it insecure (refused without ``allow_insecure_cipher_suites``).
CIPHER_SUITES: dict[str, tuple[str | None, bool]] = {
    "TLS_AES_128_GCM_SHA256": (None, False),
    "TLS_AES_256_GCM_SHA384": (None, False),
    "TLS_CHACHA20_POLY1305_SHA256": (None, False),
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": ("ECDHE-ECDSA-AES128-SHA", False),
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": ("ECDHE-ECDSA-AES256-SHA", False),
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": ("ECDHE-RSA-AES128-SHA", False),
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": ("ECDHE-RSA-AES256-SHA", False),
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": ("ECDHE-ECDSA-AES128-GCM-SHA256", False),
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": ("ECDHE-ECDSA-AES256-GCM-SHA384", False),
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": ("ECDHE-RSA-AES128-GCM-SHA256", False),
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": ("ECDHE-RSA-AES256-GCM-SHA384", False),
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": ("ECDHE-RSA-CHACHA20-POLY1305", False),
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": ("ECDHE-ECDSA-CHACHA20-POLY1305", False),
    "TLS_RSA_WITH_RC4_128_SHA": ("RC4-SHA", True),
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": ("DES-CBC3-SHA", True),
    "TLS_RSA_WITH_AES_128_CBC_SHA": ("AES128-SHA", True),
    "TLS_RSA_WITH_AES_256_CBC_SHA": ("AES256-SHA", True),
    "TLS_RSA_WITH_AES_128_CBC_SHA256": ("AES128-SHA256", True),
    "TLS_RSA_WITH_AES_128_GCM_SHA256": ("AES128-GCM-SHA256", True),
    "TLS_RSA_WITH_AES_256_GCM_SHA384": ("AES256-GCM-SHA384", True),
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": ("ECDHE-ECDSA-RC4-SHA", True),
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": ("ECDHE-RSA-RC4-SHA", True),
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": ("ECDHE-RSA-DES-CBC3-SHA", True),
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": ("ECDHE-ECDSA-AES128-SHA256", True),
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": ("ECDHE-RSA-AES128-SHA256", True),
}

#: ``curve_preferences`` names nats-server knows, with OpenSSL's name (None: a hybrid
#: post-quantum group that Python's ssl cannot select).
CURVES: dict[str, str | None] = {
    "X25519": "X25519", "CurveP256": "prime256v1", "CurveP384": "secp384r1",
    "CurveP521": "secp521r1", "X25519MLKEM768": None, "SecP256r1MLKEM768": None,
    "SecP384r1MLKEM1024": None,
}

_PIN_RE = re.compile(r"[a-f0-9]{64}\Z")


@dataclass(frozen=True)
class TlsOptions:
    """One ``tls { }`` block (nats-server's ``TLSConfigOpts``). ``ciphers`` are Go names,
    ``pinned_certs`` lower-case hex SHA-256 digests of certificates' SubjectPublicKeyInfo."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    verify: bool = False
    #: ``verify_and_map``: the client certificate names the user (no password needed)
    map_users: bool = False
    insecure: bool = False
    timeout: float = DEFAULT_TLS_TIMEOUT
    #: ``handshake_first``: the TLS handshake before the INFO; a ``fallback_delay`` > 0 also
    #: takes clients that wait for the INFO (``auto`` or a duration)
    handshake_first: bool = False
    fallback_delay: float = 0.0
    min_version: str = ""  # "1.2" or "1.3"
    pinned_certs: tuple[str, ...] = ()
    ciphers: tuple[str, ...] = ()
    curves: tuple[str, ...] = ()
    #: ``connection_rate_limit``: TLS handshakes started per second (0: no limit)
    rate_limit: int = 0
    #: SHA-256 of the certificate, key and CA files' contents when the block was read: a
    #: config reload sees changed files as a changed block (minijs.core.tlsreload)
    fingerprint: str = ""


class TlsConfigError(ValueError):
    """A ``tls { }`` block nats-server would refuse; ``str()`` is its message."""


def parse_tls_block(mapper: Any, e: Any) -> TlsOptions:
    """Read ``tls { }`` (a config entry of :mod:`minijs.confparse`) as nats-server's parseTLS
    does; errors are raised through ``mapper.fail`` at the offending key, in its words. The
    certificate, key and CA are loaded as the server will, at config time (nats-server's
    GenTLSConfig), by ``mapper.check_tls_files``."""
    node = e.node
    if node.kind != "map":
        raise mapper.fail(node, f"error parsing tls config: unsupported type {go_type(node)}")
    fields: dict[str, Any] = {}
    insecure_ciphers: list[str] = []
    allow_insecure = False
    for sub in node.value.entries.values():
        k = sub.key.lower()
        v = sub.node
        if k in ("cert_file", "key_file", "ca_file"):
            if v.kind != "string":
                raise mapper.fail(sub, f"error parsing tls config, expected '{k}' to be filename")
            fields[k] = v.value
        elif k in ("verify", "insecure", "verify_and_map", "allow_insecure_cipher_suites"):
            if v.kind != "bool":
                raise mapper.fail(sub, f"error parsing tls config, expected '{k}' to be a "
                                       "boolean")
            if k == "verify_and_map":
                if v.value:
                    fields["verify"] = True
                fields["map_users"] = v.value
            elif k == "allow_insecure_cipher_suites":
                allow_insecure = v.value
            else:
                fields[k] = v.value
        elif k == "verify_cert_and_check_known_urls":
            if v.kind != "bool":
                raise mapper.fail(sub, "error parsing tls config, expected "
                                       "'verify_cert_and_check_known_urls' to be a boolean")
            if v.value:  # a client listener's tls block is a "client context" to nats-server
                raise mapper.fail(sub, "verify_cert_and_check_known_urls not supported in this "
                                       "context")
        elif k == "cipher_suites":
            names = _string_list(mapper, sub)
            if not names:
                raise mapper.fail(sub, "error parsing tls config, 'cipher_suites' cannot be "
                                       "empty")
            for item, name in names:
                known = CIPHER_SUITES.get(name)
                if known is None:
                    raise mapper.fail(item, f"unrecognized cipher {name}")
                if known[1]:
                    insecure_ciphers.append(name)
            fields["ciphers"] = tuple(name for _, name in names)
        elif k == "curve_preferences":
            names = _string_list(mapper, sub)
            if not names:
                raise mapper.fail(sub, "error parsing tls config, 'curve_preferences' cannot "
                                       "be empty")
            for item, name in names:
                if name not in CURVES:
                    raise mapper.fail(item, f"unrecognized curve preference {name}")
            fields["curves"] = tuple(name for _, name in names)
        elif k == "timeout":
            if v.kind in ("int", "float"):
                fields["timeout"] = float(v.value)
            elif v.kind == "string":
                try:
                    fields["timeout"] = parse_duration(v.value)
                except ValueError as exc:
                    raise mapper.fail(sub, f"error parsing tls config, 'timeout' {exc}") from None
            else:
                raise mapper.fail(sub, "error parsing tls config, 'timeout' wrong type")
        elif k == "connection_rate_limit":
            if v.kind != "int":
                raise mapper.fail(sub, "error parsing tls config, 'connection_rate_limit' "
                                       "wrong type")
            fields["rate_limit"] = v.value
        elif k == "pinned_certs":
            if v.kind != "array":
                raise mapper.fail(sub, "error parsing tls config, expected 'pinned_certs' to "
                                       "be a list of hex-encoded sha256 of DER encoded "
                                       "SubjectPublicKeyInfo")
            pins = []
            for item in v.value:
                entry = str(item.value).lower()
                if item.kind != "string" or not _PIN_RE.match(entry):
                    raise mapper.fail(item, f"error parsing tls config, 'pinned_certs' key "
                                            f"{entry} does not look like hex-encoded sha256 of "
                                            "DER encoded SubjectPublicKeyInfo")
                if entry not in pins:
                    pins.append(entry)
            fields["pinned_certs"] = tuple(pins)
        elif k in ("handshake_first", "first", "immediate"):
            first, delay = _handshake_first(mapper, sub, parse_duration)
            fields["handshake_first"] = first
            fields["fallback_delay"] = delay
        elif k == "min_version":
            if v.kind != "string":
                raise mapper.fail(sub, f"error parsing tls config: 'min_version' wrong type: "
                                       f"{v.value}")
            version = v.value
            if version in ("1.0", "1.1"):
                raise mapper.fail(sub, "error parsing tls config: unsupported TLS version: "
                                       f"TLS {version}")
            if version not in ("1.2", "1.3"):
                raise mapper.fail(sub, f"error parsing tls config: unknown version: {version}")
            fields["min_version"] = version
        elif k in ("certs", "certificates", "cert_store", "cert_match_by", "cert_match",
                   "ca_certs_match", "cert_match_skip_invalid", "ocsp_peer"):
            raise mapper.fail(sub, f'field "{sub.key}" in tls is a nats-server setting that '
                                   "minijs does not support")
        elif not sub.used:
            raise mapper.fail(sub, f'error parsing tls config, unknown field "{sub.key}"')
    if insecure_ciphers and not allow_insecure:
        raise mapper.fail(e, "insecure cipher suites configured without "
                             "'allow_insecure_cipher_suites' option set: "
                             + ", ".join(insecure_ciphers))
    options = TlsOptions(**fields)
    try:
        mapper.check_tls_files(options)
    except TlsConfigError as exc:
        raise mapper.fail(e, str(exc)) from None
    return replace(options, fingerprint=files_fingerprint(options))


def files_fingerprint(options: TlsOptions) -> str:
    """SHA-256 over the contents of the block's certificate, key and CA files."""
    import hashlib

    digest = hashlib.sha256()
    for path in (options.cert_file, options.key_file, options.ca_file):
        if path:
            try:
                with open(path, "rb") as f:
                    digest.update(f.read())
            except OSError:
                pass
        digest.update(b"\0")
    return digest.hexdigest()


def _handshake_first(mapper: Any, sub: Any, parse_duration: Any) -> tuple[bool, float]:
    v = sub.node
    if v.kind == "bool":
        return v.value, 0.0
    if v.kind != "string":
        kind = {"int": "int64", "float": "float64"}.get(v.kind, go_type(v))
        raise mapper.fail(sub, f'field "{sub.key}" should be a boolean or a string, got {kind}')
    text = v.value.lower()
    if text in ("true", "on"):
        return True, 0.0
    if text in ("false", "off"):
        return False, 0.0
    if text in ("auto", "auto_fallback"):
        return True, DEFAULT_FALLBACK_DELAY
    try:
        return True, parse_duration(v.value)
    except ValueError:
        raise mapper.fail(sub, f'field "{sub.key}"\'s value "{v.value}" is invalid') from None


def _string_list(mapper: Any, sub: Any) -> list[tuple[Any, str]]:
    v = sub.node
    items = v.value if v.kind == "array" else [v]
    out = []
    for item in items:
        if item.kind != "string":
            raise mapper.fail(item, f"error parsing tls config, '{sub.key}' expects strings")
        out.append((item, item.value))
    return out
