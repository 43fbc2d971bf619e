"""TLS for client connections: the SSL context a ``tls { }`` block makes, and the layer that
runs TLS between a socket and a :class:`~minijs.core.connection.Connection`.

nats-server sends its INFO in clear text (``tls_required``) and the client then starts TLS on
the same socket; with ``handshake_first`` the handshake comes first and the INFO after it; with
``allow_non_tls`` the client's first byte decides (``0x16``, a TLS record, or plain text).
asyncio's ``start_tls`` cannot look at that first byte, so the layer runs the TLS state machine
itself on :class:`ssl.SSLObject` memory buffers (the same machinery asyncio's own TLS
transport uses). It is the connection's transport: writes before the handshake is done are held
(TLS first) or go out in clear text (the INFO, in the upgrade and sniffing modes: the first
write only); reads are decrypted and handed on.

Invariants of :class:`TlsLayer`:

* the upper protocol never sees a byte before the handshake completed, except in the
  ``allow_non_tls`` plain path, where it sees every byte;
* a failed or timed-out handshake closes the connection with nats-server's log line and the
  close reason ``TLS Handshake Failure``; what the upper protocol queued meanwhile is dropped;
* flow control is the socket's: the write buffer size and pause/resume come from below.

Loaded only when a ``tls { }`` block (or ``--tls``) is configured: a plain server never
imports :mod:`ssl`. Certificate details (``/connz`` ``tls_peer_certs``, ``verify_and_map``,
``pinned_certs``, ``/varz`` ``tls_cert_not_after``) are read with ``cryptography`` (the
``minijs[tls]`` extra).
"""
from __future__ import annotations

import asyncio
import hashlib
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable

from minijs.clock import REAL_CLOCK
from minijs.tlsconfig import CIPHER_SUITES, CURVES, TlsConfigError, TlsOptions

#: The close reason nats-server records for a failed handshake.
TLS_HANDSHAKE_FAILURE = "TLS Handshake Failure"

#: Go's names for OpenSSL's TLS 1.2 suites (TLS 1.3 names are the same in both).
_GO_CIPHER_NAMES = {ossl: go for go, (ossl, _) in CIPHER_SUITES.items() if ossl}
_VERSIONS = {"TLSv1.2": "1.2", "TLSv1.3": "1.3", "TLSv1.1": "1.1", "TLSv1": "1.0"}

#: OpenSSL's handshake failures in Go's words (crypto/tls), by the SSLError's reason.
_GO_ERRORS = {
    "PEER_DID_NOT_RETURN_A_CERTIFICATE": "tls: client didn't provide a certificate",
    "NO_SHARED_CIPHER": "tls: no cipher suite supported by both client and server",
    "UNSUPPORTED_PROTOCOL": "tls: client offered only unsupported versions",
    "WRONG_VERSION_NUMBER": "tls: first record does not look like a TLS handshake",
    "HTTP_REQUEST": "tls: first record does not look like a TLS handshake",
    "TLSV1_ALERT_UNKNOWN_CA": "remote error: tls: unknown certificate authority",
    "SSLV3_ALERT_BAD_CERTIFICATE": "remote error: tls: bad certificate",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "remote error: tls: expired certificate",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "remote error: tls: unknown certificate",
    "SSLV3_ALERT_HANDSHAKE_FAILURE": "remote error: tls: handshake failure",
    "TLSV1_ALERT_PROTOCOL_VERSION": "remote error: tls: protocol version not supported",
    "TLSV1_ALERT_DECRYPT_ERROR": "remote error: tls: error decrypting message",
}
#: Go's x509 verification errors, by OpenSSL's verify code.
_GO_VERIFY_ERRORS = {
    2: "x509: certificate signed by unknown authority",  # unable to get issuer certificate
    18: "x509: certificate signed by unknown authority",  # self-signed leaf
    19: "x509: certificate signed by unknown authority",  # self-signed in chain
    20: "x509: certificate signed by unknown authority",  # unable to get local issuer
    21: "x509: certificate signed by unknown authority",  # unable to verify the first cert
    9: "x509: certificate has expired or is not yet valid",  # not yet valid
    10: "x509: certificate has expired or is not yet valid",  # expired
    26: "x509: certificate specifies an incompatible key usage",  # invalid purpose
}


class TlsSetupError(TlsConfigError):
    """A certificate, key or CA file the server cannot use (nats-server's message)."""


def server_context(options: TlsOptions) -> ssl.SSLContext:
    """The server-side SSL context of a ``tls { }`` block, as nats-server's GenTLSConfig makes
    its ``tls.Config``: the certificate and key (checked to match), the CA for client
    certificates, ``verify``, the minimum version, cipher suites and curves. Raises
    :class:`TlsSetupError` with nats-server's message for a file it cannot use.

    Call it again to pick up changed files (a config reload builds a new context this way;
    new connections use it, established ones keep their session)."""
    if options.cert_file and not options.key_file:
        raise TlsSetupError("missing 'key_file' in TLS configuration")
    if options.key_file and not options.cert_file:
        raise TlsSetupError("missing 'cert_file' in TLS configuration")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = (ssl.TLSVersion.TLSv1_3 if options.min_version == "1.3"
                           else ssl.TLSVersion.TLSv1_2)
    ctx.options |= ssl.OP_NO_COMPRESSION
    if options.cert_file:
        _load_pair(ctx, options.cert_file, options.key_file)
    if options.ca_file:
        try:
            with open(options.ca_file, "rb") as f:
                pem = f.read()
        except OSError as exc:
            raise TlsSetupError(_go_open_error(options.ca_file, exc)) from None
        try:
            ctx.load_verify_locations(cadata=pem.decode("ascii", "replace"))
        except (ssl.SSLError, ValueError):
            raise TlsSetupError("failed to parse root ca certificate") from None
    if options.verify:
        ctx.verify_mode = ssl.CERT_REQUIRED
    ossl = [suite for name in options.ciphers if (suite := CIPHER_SUITES[name][0])]
    if ossl:
        try:
            ctx.set_ciphers(":".join(ossl))
        except ssl.SSLError:
            raise TlsSetupError("cipher_suites: none of " + ", ".join(options.ciphers) +
                                " is available in this Python's OpenSSL") from None
    elif not options.ciphers:
        # Go's defaults for TLS 1.2: ECDHE with AES-GCM, ChaCha20 and AES-CBC, no RSA kex.
        ctx.set_ciphers(":".join(ossl_name for ossl_name, insecure in CIPHER_SUITES.values()
                                 if ossl_name and not insecure))
    if options.curves:
        usable = [CURVES[name] for name in options.curves]
        if len(usable) > 1 or usable[0] is None:
            # Python's ssl sets a single curve (SSLContext.set_ecdh_curve), nothing else.
            raise TlsSetupError("curve_preferences: Python's ssl can select one classic curve "
                                "(X25519, CurveP256, CurveP384 or CurveP521), not "
                                + ", ".join(options.curves))
        ctx.set_ecdh_curve(usable[0])
    return ctx


def _load_pair(ctx: ssl.SSLContext, cert_file: str, key_file: str) -> None:
    """Load a certificate and its key with Go's refusals (tls.LoadX509KeyPair)."""
    prefix = "error parsing X509 certificate/key pair: "
    for path, what in ((cert_file, "certificate"), (key_file, "key")):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise TlsSetupError(prefix + _go_open_error(path, exc)) from None
        marker = b"CERTIFICATE-----" if what == "certificate" else b"PRIVATE KEY-----"
        if b"-----BEGIN " not in data or marker not in data:
            raise TlsSetupError(prefix + f"tls: failed to find any PEM data in {what} input")
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise TlsSetupError(prefix + "tls: private key does not match public key") from None
        raise TlsSetupError(prefix + (exc.reason or str(exc)).lower().replace("_", " ")
                            ) from None


def _go_open_error(path: str, exc: OSError) -> str:
    """Go's os.ReadFile error for ``path``."""
    if isinstance(exc, IsADirectoryError):
        return f"read {path}: is a directory"
    reason = (exc.strerror or str(exc))
    return f"open {path}: {reason[:1].lower()}{reason[1:]}"


# ----------------------------------------------------------------------------- sessions


@dataclass
class TlsSession:
    """What a finished handshake tells: nats-server's ``/connz`` TLS fields and what
    ``verify_and_map`` reads."""

    version: str  # "1.2", "1.3"
    cipher: str  # Go's name
    first: bool  # the handshake came before the INFO (``handshake_first``)
    peer_chain: list[bytes] = field(default_factory=list)  # DER, the client's first

    def peer_certs(self) -> list[dict[str, str]]:
        """``tls_peer_certs`` of ``/connz?auth=true``: subject, SPKI and certificate SHA-256."""
        return [peer_cert_info(der) for der in self.peer_chain]


def session_of(sslobj: ssl.SSLObject, first: bool, ca_file: str = "") -> TlsSession:
    cipher = sslobj.cipher()
    name = cipher[0] if cipher else ""
    chain: list[bytes] = []
    leaf = sslobj.getpeercert(binary_form=True)
    if leaf:
        unverified = getattr(sslobj, "get_unverified_chain", None)  # Python 3.13+
        if unverified is not None:
            chain = [c if isinstance(c, bytes) else c.public_bytes() for c in unverified()]
        else:
            chain = [leaf] + _issuers(leaf, ca_file)
    return TlsSession(version=_VERSIONS.get(sslobj.version() or "", sslobj.version() or ""),
                      cipher=_GO_CIPHER_NAMES.get(name, name), first=first, peer_chain=chain)


def _issuers(leaf: bytes, ca_file: str) -> list[bytes]:
    """The CA certificates above ``leaf`` in ``ca_file`` (what an OpenSSL client sends with
    its certificate; Python before 3.13 shows the server only the leaf)."""
    if not ca_file:
        return []
    x509 = _x509()
    try:
        with open(ca_file, "rb") as f:
            cas = x509.load_pem_x509_certificates(f.read())
    except (OSError, ValueError):
        return []
    out: list[bytes] = []
    cert = x509.load_der_x509_certificate(leaf)
    for _ in range(8):
        if cert.issuer == cert.subject:
            break
        parent = next((ca for ca in cas if ca.subject == cert.issuer), None)
        if parent is None:
            break
        out.append(parent.public_bytes(_serialization().Encoding.DER))
        cert = parent
    return out


def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:  # pragma: no cover - the tls extra is missing
        raise TlsSetupError("TLS needs the cryptography package: pip install "
                            "'minijs[tls]'") from None
    return x509


def _serialization() -> Any:
    from cryptography.hazmat.primitives import serialization

    return serialization


def require_cryptography() -> None:
    """Raise :class:`TlsSetupError` naming the extra when ``cryptography`` is missing."""
    _x509()


def spki_sha256(der: bytes) -> str:
    """Hex SHA-256 of a certificate's DER SubjectPublicKeyInfo (``pinned_certs``)."""
    cert = _x509().load_der_x509_certificate(der)
    spki = cert.public_key().public_bytes(_serialization().Encoding.DER,
                                          _serialization().PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(spki).hexdigest()


def peer_cert_info(der: bytes) -> dict[str, str]:
    cert = _x509().load_der_x509_certificate(der)
    return {"subject": go_name(cert.subject), "spki_sha256": spki_sha256(der),
            "cert_sha256": hashlib.sha256(der).hexdigest()}


def not_after(cert_file: str) -> float | None:
    """The expiry of the first certificate in ``cert_file`` (``/varz`` ``tls_cert_not_after``)."""
    x509 = _x509()
    try:
        with open(cert_file, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
    except (OSError, ValueError):
        return None
    when = getattr(cert, "not_valid_after_utc", None)
    if when is None:  # pragma: no cover - cryptography < 42
        import datetime

        when = cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


#: Go's short names of subject attributes (crypto/x509/pkix attributeTypeNames).
_GO_ATTRIBUTE_NAMES = {"2.5.4.6": "C", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.3": "CN",
                       "2.5.4.5": "SERIALNUMBER", "2.5.4.7": "L", "2.5.4.8": "ST",
                       "2.5.4.9": "STREET", "2.5.4.17": "POSTALCODE"}
#: The order Go's pkix.Name.ToRDNSequence writes the attributes it knows.
_GO_NAME_ORDER = ("2.5.4.6", "2.5.4.8", "2.5.4.7", "2.5.4.9", "2.5.4.17", "2.5.4.10",
                  "2.5.4.11", "2.5.4.3", "2.5.4.5")


def go_name(name: Any) -> str:
    """A certificate name as Go's ``pkix.Name.String()`` prints it: the attributes Go knows,
    in its order, reversed, ``,`` between them, RFC 2253 escapes."""
    values: dict[str, list[str]] = {}
    for attr in name:
        values.setdefault(attr.oid.dotted_string, []).append(str(attr.value))
    rdns: list[str] = []
    for oid in _GO_NAME_ORDER:
        found = values.get(oid)
        if not found:
            continue
        if oid in ("2.5.4.3", "2.5.4.5"):
            found = found[-1:]  # Go keeps the last CommonName / SerialNumber
        rdns.append("+".join(f"{_GO_ATTRIBUTE_NAMES[oid]}={_escape(v)}" for v in found))
    return ",".join(reversed(rdns))


def _escape(value: str) -> str:
    out = []
    last = len(value) - 1
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == " " and i in (0, last)) or (ch == "#" and i == 0):
            out.append("\\")
        out.append(ch)
    return "".join(out)


def handshake_error_text(exc: BaseException) -> tuple[str, bool]:
    """A handshake failure in Go's words, and whether nats-server logs it only at debug level
    (a timeout, or plain text where TLS was expected: a probe or a load balancer)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        code = getattr(exc, "verify_code", 0)
        text = _GO_VERIFY_ERRORS.get(code) or f"x509: {getattr(exc, 'verify_message', exc)}"
        return f"tls: failed to verify certificate: {text}", False
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or ""
        known = _GO_ERRORS.get(reason)
        text = (known if known is not None
                else "local error: tls: " + (reason.lower().replace("_", " ") or str(exc)))
        return text, reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST")
    return str(exc) or type(exc).__name__, False


# ----------------------------------------------------------------------------- the layer

#: Layer states.
_PLAIN_INFO = 0  # the next write (the INFO) goes out in clear text, then _HANDSHAKE / _SNIFF
_SNIFF = 1  # allow_non_tls: the first byte read decides
_WAIT_FIRST = 2  # handshake_first with a fallback: data within the delay means TLS first
_HANDSHAKE = 3
_OPEN = 4
_PLAIN = 5  # allow_non_tls, the client chose plain text: pass everything through
_CLOSED = 6
_EXPECT_TLS = 7  # the INFO went out in clear text: the client's next bytes must be TLS

#: Largest read handed up at once (a TLS record is at most 16 KiB of plain text).
_READ_SIZE = 256 * 1024


class TlsLayer(asyncio.Protocol):
    """The socket's protocol and the upper protocol's transport, running TLS in between.

    ``mode`` is ``"upgrade"`` (INFO in clear, then the client's handshake), ``"sniff"``
    (``allow_non_tls``: INFO in clear, then TLS or plain text as the client chooses),
    ``"first"`` (``handshake_first``: handshake, then INFO) or ``"immediate"`` (a ``wss``
    listener: the handshake, then whatever the upper protocol speaks). ``fallback`` > 0 with
    ``"first"``: a client silent that long gets the INFO in clear instead (``then`` says which
    of the two clear-text modes follows). ``on_session(upper, session)`` is told of a finished
    handshake; ``log(upper, level, text)`` logs for the connection.
    """

    def __init__(self, upper: asyncio.Protocol, context: ssl.SSLContext, options: TlsOptions,
                 mode: str, *, on_session: Callable[[Any, TlsSession], None] | None = None,
                 log: Callable[[Any, str, str], None] | None = None, then: str = "upgrade",
                 rate_ok: Callable[[], bool] | None = None) -> None:
        self.upper = upper
        self.context = context
        self.options = options
        self.mode = mode
        self._then = then
        self._on_session = on_session
        self._log = log
        self._rate_ok = rate_ok
        self.raw: asyncio.Transport | None = None
        self._state = _CLOSED
        self._sslobj: ssl.SSLObject | None = None
        self._incoming: ssl.MemoryBIO | None = None
        self._outgoing: ssl.MemoryBIO | None = None
        self._held: list[bytes] = []  # upper's writes waiting for the handshake
        self._timer: Any = None
        self._first = False
        self._upper_made = False
        self._closing = False

    # -- the socket's side (asyncio.Protocol)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = transport  # type: ignore[assignment]
        mode = self.mode
        if mode == "immediate" or (mode == "first" and not self.options.fallback_delay):
            self._first = mode == "first"
            self._make_upper()
            self._start_handshake()
        elif mode == "first":
            self._state = _WAIT_FIRST
            self._timer = REAL_CLOCK.call_later(self.options.fallback_delay, self._fallback)
        else:
            self._state = _PLAIN_INFO
            self._make_upper()

    def data_received(self, data: bytes) -> None:
        state = self._state
        if state == _OPEN:
            self._incoming.write(data)  # type: ignore[union-attr]
            self._read_app()
        elif state == _PLAIN:
            self.upper.data_received(data)
        elif state == _HANDSHAKE:
            self._incoming.write(data)  # type: ignore[union-attr]
            self._handshake_step()
        elif state == _SNIFF or (state == _PLAIN_INFO and self.mode == "sniff"):
            if data[:1] == b"\x16":
                self._start_handshake(data)
            else:
                self._state = _PLAIN
                self._cancel_timer()
                self.upper.data_received(data)
        elif state == _WAIT_FIRST:
            self._cancel_timer()
            self._first = True
            self._make_upper()
            self._start_handshake(data)
        elif state == _EXPECT_TLS or state == _PLAIN_INFO:  # "upgrade": the client starts TLS
            self._start_handshake(data)

    def eof_received(self) -> bool | None:
        if self._state in (_HANDSHAKE, _EXPECT_TLS):
            self._fail(EOFError("EOF"))
            return None
        if self._state == _PLAIN:
            return self.upper.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._state = _CLOSED
        if self._upper_made:
            self.upper.connection_lost(exc)

    def pause_writing(self) -> None:
        self.upper.pause_writing()

    def resume_writing(self) -> None:
        self.upper.resume_writing()

    # -- the upper protocol's side (its transport)

    def write(self, data: bytes) -> None:
        state = self._state
        if state == _OPEN:
            self._sslobj.write(data)  # type: ignore[union-attr]
            self._send_out()
        elif state == _PLAIN:
            self.raw.write(data)  # type: ignore[union-attr]
        elif state == _PLAIN_INFO:
            self.raw.write(data)  # type: ignore[union-attr]
            if self.mode == "sniff":
                self._state = _SNIFF
            else:
                self._begin_waiting()
        elif state in (_HANDSHAKE, _EXPECT_TLS, _SNIFF, _WAIT_FIRST):
            self._held.append(data)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def get_write_buffer_size(self) -> int:
        raw = self.raw
        held = sum(len(d) for d in self._held)
        return held + (raw.get_write_buffer_size() if raw is not None else 0)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if self.raw is not None:
            self.raw.set_write_buffer_limits(high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._sslobj
        return self.raw.get_extra_info(name, default) if self.raw is not None else default

    def is_closing(self) -> bool:
        return self._closing or self.raw is None or self.raw.is_closing()

    def pause_reading(self) -> None:
        if self.raw is not None:
            self.raw.pause_reading()

    def resume_reading(self) -> None:
        if self.raw is not None:
            self.raw.resume_reading()

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._cancel_timer()
        if self._state == _OPEN:
            try:
                self._sslobj.unwrap()  # type: ignore[union-attr]
            except (ssl.SSLError, ValueError):
                pass
            self._send_out()
        self._state = _CLOSED
        if self.raw is not None:
            self.raw.close()

    def abort(self) -> None:
        self._closing = True
        self._cancel_timer()
        self._state = _CLOSED
        if self.raw is not None:
            self.raw.abort()

    # -- the machinery

    def _make_upper(self) -> None:
        if not self._upper_made:
            self._upper_made = True
            self.upper.connection_made(self)  # type: ignore[arg-type]

    def _fallback(self) -> None:
        """``handshake_first`` with a fallback: the client said nothing, so it waits for an
        INFO in clear text; carry on as the listener would without TLS first."""
        self._timer = None
        if self._state != _WAIT_FIRST:
            return
        self.mode = self._then
        self._state = _PLAIN_INFO
        self._make_upper()

    def _begin_waiting(self) -> None:
        """The INFO went out in clear text: the client has ``timeout`` to start TLS."""
        self._state = _EXPECT_TLS
        self._timer = REAL_CLOCK.call_later(self.options.timeout, self._expired)

    def _start_handshake(self, data: bytes = b"") -> None:
        if self._rate_ok is not None and not self._rate_ok():
            self._throttled()
            return
        if data and data[:1] != b"\x16":
            # Plain text where a TLS record was due (crypto/tls: RecordHeaderError).
            self._fail(ssl.SSLError(1, "first record"), text="tls: first record does not look "
                       "like a TLS handshake", quiet=True)
            return
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._sslobj = self.context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._state = _HANDSHAKE
        if self._timer is None:
            self._timer = REAL_CLOCK.call_later(self.options.timeout, self._expired)
        if data:
            self._incoming.write(data)
            self._handshake_step()

    def _handshake_step(self) -> None:
        sslobj = self._sslobj
        assert sslobj is not None
        try:
            sslobj.do_handshake()
        except ssl.SSLWantReadError:
            self._send_out()
            return
        except (ssl.SSLError, OSError) as exc:
            self._send_out()
            self._fail(exc)
            return
        self._send_out()
        self._cancel_timer()
        if self.options.pinned_certs:
            leaf = sslobj.getpeercert(binary_form=True)
            if not leaf or spki_sha256(leaf) not in self.options.pinned_certs:
                self._fail(ssl.SSLError(1, "not pinned"), text="certificate not pinned")
                return
        self._state = _OPEN
        session = session_of(sslobj, self._first, self.options.ca_file)
        self._make_upper()
        if self._on_session is not None:
            self._on_session(self.upper, session)
        held, self._held = self._held, []
        for data in held:
            sslobj.write(data)
        if held:
            self._send_out()
        if self._incoming.pending:  # type: ignore[union-attr]
            self._read_app()

    def _read_app(self) -> None:
        sslobj = self._sslobj
        assert sslobj is not None
        chunks: list[bytes] = []
        while True:
            try:
                chunk = sslobj.read(_READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the client's close_notify
                break
            except ssl.SSLError:
                if chunks:
                    self.upper.data_received(b"".join(chunks))
                self.abort()
                return
            if not chunk:
                break
            chunks.append(chunk)
        self._send_out()  # key updates, session tickets
        if chunks:
            self.upper.data_received(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def _send_out(self) -> None:
        out = self._outgoing
        if out is not None and out.pending and self.raw is not None:
            self.raw.write(out.read())

    def _expired(self) -> None:
        self._timer = None
        if self._state not in (_HANDSHAKE, _EXPECT_TLS):
            return
        raw = self.raw
        local = raw.get_extra_info("sockname") if raw is not None else None
        peer = raw.get_extra_info("peername") if raw is not None else None
        self._say("debug", "TLS handshake timeout")
        where = ""
        if local and peer:
            where = f"{_addr(local)}->{_addr(peer)}"
        self._fail(TimeoutError(), text=f"read tcp {where}: i/o timeout", quiet=True,
                   timeout=True)

    def _throttled(self) -> None:
        """``connection_rate_limit`` reached: nats-server's -ERR, then the close."""
        self._state = _PLAIN
        self._make_upper()
        fail = getattr(self.upper, "fail", None)
        if fail is not None:
            fail("Connection throttling is active. Please try again later.")
        else:
            self.abort()

    def _fail(self, exc: BaseException, *, text: str | None = None, quiet: bool | None = None,
              timeout: bool = False) -> None:
        if text is None:
            text, probe = handshake_error_text(exc)
            if isinstance(exc, EOFError):
                text, probe = "EOF", False
        else:
            probe = bool(quiet)
        self._say("debug" if probe else "error", f"TLS handshake error: {text}")
        self._cancel_timer()
        self._held = []
        self._state = _CLOSED
        upper = self.upper
        if timeout:
            trace = getattr(upper, "trace", None)
            log = getattr(getattr(upper, "server", None), "log", None)
            if trace is not None and log is not None and log.trace_enabled:
                trace("->> [-ERR Secure Connection - TLS Required]")
        closing = getattr(upper, "closing", None)
        if closing is not None:
            closing(TLS_HANDSHAKE_FAILURE)
        close = getattr(upper, "close", None)
        self._closing = True
        if self.raw is not None:
            self.raw.close()
        if close is not None and self._upper_made:
            close()

    def _say(self, level: str, text: str) -> None:
        if self._log is not None:
            self._log(self.upper, level, text)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _addr(sockaddr: Any) -> str:
    host, port = sockaddr[0], sockaddr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ----------------------------------------------------------------------------- the listener


class ClientTls:
    """The client listener's TLS: its options and SSL context. :meth:`reload` builds a new
    context from a config (what a SIGHUP reload calls): new connections use it, established
    ones keep the session they have."""

    def __init__(self, options: TlsOptions) -> None:
        require_cryptography()
        self.options = options
        self.context = server_context(options)
        self._window = 0.0
        self._count = 0

    def reload(self, options: TlsOptions) -> None:
        """Use ``options`` (new certificate files, CA, verification) from now on; raises
        :class:`TlsSetupError` and keeps the old context when a file is unusable."""
        context = server_context(options)
        self.options, self.context = options, context

    def rate_ok(self) -> bool:
        """``connection_rate_limit``: may one more TLS handshake start this second?"""
        limit = self.options.rate_limit
        if limit <= 0:
            return True
        now = REAL_CLOCK.monotonic()
        if now - self._window >= 1.0:
            self._window, self._count = now, 0
        self._count += 1
        return self._count <= limit


def secure_factory(router: Any, make_connection: Callable[[], Any]) -> Callable[[], TlsLayer]:
    """The client listener's protocol factory with TLS configured: each socket gets a
    :class:`TlsLayer` over a new connection, in the mode the config asks for."""
    config = router.config
    tls = ClientTls(config.tls)
    router.client_tls = tls
    if config.tls.handshake_first:
        mode = "first"
    else:
        mode = "sniff" if config.allow_non_tls else "upgrade"
    then = "sniff" if config.allow_non_tls else "upgrade"
    rate_ok = tls.rate_ok if config.tls.rate_limit > 0 else None

    def make() -> TlsLayer:
        return TlsLayer(make_connection(), tls.context, tls.options, mode,
                        on_session=attach_session, log=connection_log, then=then,
                        rate_ok=rate_ok)

    return make


def attach_session(conn: Any, session: TlsSession) -> None:
    """A connection's handshake finished: keep the session, log as nats-server does."""
    conn.tls = session
    log = conn.server.log
    if log.debug_enabled:
        prefix = f"{conn.host}:{conn.port} - cid:{conn.cid} - "
        log.debug(prefix + "TLS handshake complete")
        log.debug(prefix + f"TLS version {session.version}, cipher suite {session.cipher}")


def connection_log(conn: Any, level: str, text: str) -> None:
    getattr(conn.server.log, level)(f"{conn.host}:{conn.port} - cid:{conn.cid} - {text}")


def info_flags(config: Any, conn: Any) -> dict[str, bool]:
    """INFO's ``tls_required``, ``tls_verify`` and ``tls_available`` for a client of the TLS
    listener (a client that did TLS first was told TLS is required)."""
    required = not config.allow_non_tls or (conn is not None and conn.tls is not None
                                            and conn.tls.first)
    out = {}
    if required:
        out["tls_required"] = True
    if config.tls.verify:
        out["tls_verify"] = True
    if config.allow_non_tls:
        out["tls_available"] = True
    return out


def check_files(options: TlsOptions) -> None:
    """Load the block's certificate, key and CA as the server will (nats-server's
    GenTLSConfig, at config time): :class:`TlsConfigError` with its message otherwise."""
    server_context(options)
