"""TLS for client connections, on both servers, with certificates the suite makes (trustme):
the INFO in clear text with ``tls_required``/``tls_verify``/``tls_available``, then the client's
handshake; TLS first; ``allow_non_tls``; client certificates (``verify``, ``verify_and_map``,
``pinned_certs``); the minimum version; the log lines and closes of failed handshakes; the
``/varz`` and ``/connz`` fields; the ``--tls`` flags; and the refusals of unusable files and
options."""
from __future__ import annotations

import json
import socket
import ssl
import time
from pathlib import Path
from typing import Any

import nats
import pytest

from conformance.certs import Certs, certs  # noqa: F401  (the session fixture)
from conformance.helpers import SpawnFn, get_json, log_lines, refused_start
from conformance.rawclient import parse_info
from conformance.servers import ServerProcess, free_port

TLS_VERSIONS = {"1.2", "1.3"}
#: Go's names of the TLS 1.3 suites (the suite a client and server agree on may differ).
TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256"}


def read_info(sock: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        assert chunk, f"closed before an INFO: {data!r}"
        data += chunk
    assert data.startswith(b"INFO "), data
    return parse_info(data)


def tls_socket(srv: ServerProcess, ctx: ssl.SSLContext, *, first: bool = False
               ) -> tuple[ssl.SSLSocket, dict[str, Any]]:
    """A client socket after the INFO and the handshake (``first``: the handshake first,
    then the INFO over TLS); returns the socket and the INFO."""
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    info = {} if first else read_info(sock)
    tls = ctx.wrap_socket(sock, server_hostname="localhost")
    if first:
        info = read_info(tls)
    return tls, info


def ping_pong(sock: Any, connect: dict[str, Any] | None = None) -> bytes:
    body = json.dumps({"verbose": False, "pedantic": False, **(connect or {})})
    sock.sendall(f"CONNECT {body}\r\nPING\r\n".encode())
    data = b""
    deadline = time.monotonic() + 5
    while b"PONG\r\n" not in data and b"-ERR" not in data and time.monotonic() < deadline:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def closed_without_data(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Read until the server closes the socket; what it sent meanwhile."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                return data
            data += chunk
    except (ConnectionResetError, ssl.SSLError):
        return data


# ---------------------------------------------------------------------------------- INFO


def test_info_in_clear_text_says_tls_required_then_tls(target: str, spawn: SpawnFn,
                                                       certs: Certs) -> None:
    """The INFO comes in clear text with ``tls_required`` (after ``headers``, before
    ``max_payload``); the client then starts TLS on the same socket and speaks NATS in it."""
    srv = spawn(config=certs.tls_block())
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    info = read_info(sock)
    keys = list(info)
    assert info["tls_required"] is True
    assert "tls_verify" not in info and "tls_available" not in info
    assert keys.index("tls_required") == keys.index("headers") + 1
    assert keys.index("max_payload") == keys.index("tls_required") + 1
    tls = certs.client_context().wrap_socket(sock, server_hostname="localhost")
    assert tls.version() in ("TLSv1.2", "TLSv1.3")
    assert ping_pong(tls).endswith(b"PONG\r\n")
    tls.close()
    assert log_lines(srv, "TLS required for client connections")


def test_info_with_verify_and_allow_non_tls(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``verify`` adds ``tls_verify``; ``allow_non_tls`` turns ``tls_required`` into
    ``tls_available`` and logs that TLS is available."""
    srv = spawn(config=certs.tls_block("verify: true"))
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        info = read_info(sock)
    assert (info.get("tls_required"), info.get("tls_verify"), info.get("tls_available")) == (
        True, True, None)
    srv2 = spawn(config=certs.tls_block() + "allow_non_tls: true\n")
    with socket.create_connection((srv2.host, srv2.port), timeout=5) as sock:
        info = read_info(sock)
    assert (info.get("tls_required"), info.get("tls_available")) == (None, True)
    assert log_lines(srv2, "TLS available for client connections")


# ---------------------------------------------------------------------------------- clients


async def test_nats_py_over_tls_publish_subscribe(target: str, spawn: SpawnFn,
                                                  certs: Certs) -> None:
    """nats-py with a TLS context publishes and receives through a TLS-only server."""
    srv = spawn(config=certs.tls_block())
    nc = await nats.connect(f"tls://localhost:{srv.port}", tls=certs.client_context(),
                            allow_reconnect=False, connect_timeout=5)
    try:
        sub = await nc.subscribe("tls.test")
        await nc.publish("tls.test", b"secret")
        msg = await sub.next_msg(timeout=5)
        assert msg.data == b"secret"
    finally:
        await nc.close()


def test_plain_client_on_tls_listener_is_closed(target: str, spawn: SpawnFn,
                                                certs: Certs) -> None:
    """A client that answers the INFO in clear text is closed without a reply; nats-server
    logs it at debug level (a probe, not an error)."""
    srv = spawn(config=certs.tls_block(), args=["-D"])
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    read_info(sock)
    sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
    assert closed_without_data(sock) == b""
    sock.close()
    lines = log_lines(srv, "TLS handshake error: tls: first record does not look like a TLS "
                           "handshake")
    assert lines and "[DBG]" in lines[0], srv.log


def test_handshake_timeout(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """A client that never starts TLS is closed after the ``timeout``, with the handshake's
    read error logged."""
    srv = spawn(config=certs.tls_block("timeout: 1"), args=["-D"])
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    read_info(sock)
    started = time.monotonic()
    assert closed_without_data(sock, timeout=6) == b""
    waited = time.monotonic() - started
    sock.close()
    assert 0.5 < waited < 4, waited
    # nats-server logs the handshake's read error; its "TLS handshake timeout" line comes only
    # when the timer fires before the read gives up (a race it can lose under load).
    assert log_lines(srv, "TLS handshake error: read tcp "), srv.log


def test_allow_non_tls_takes_both(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """With ``allow_non_tls`` a client may answer the INFO in clear text or with a TLS
    handshake; both work."""
    srv = spawn(config=certs.tls_block() + "allow_non_tls: true\n")
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        read_info(sock)
        assert ping_pong(sock).endswith(b"PONG\r\n")
    tls, _ = tls_socket(srv, certs.client_context())
    with tls:
        assert ping_pong(tls).endswith(b"PONG\r\n")


async def test_handshake_first(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``handshake_first``: nothing in clear text; after the handshake the INFO, with
    ``tls_required``; ``/connz`` says ``tls_first``. nats-py's ``tls_handshake_first`` works;
    a client waiting for a clear-text INFO gets nothing. The warning is logged."""
    http = free_port()
    srv = spawn(config=certs.tls_block("handshake_first: true"), args=["-m", str(http)])
    assert log_lines(srv, 'Clients that are not using "TLS Handshake First" option will fail '
                          "to connect")
    with socket.create_connection((srv.host, srv.port), timeout=1) as sock:
        with pytest.raises(socket.timeout):
            sock.recv(10)
    tls, info = tls_socket(srv, certs.client_context(), first=True)
    with tls:
        assert info["tls_required"] is True
        assert ping_pong(tls, {"name": "first"}).endswith(b"PONG\r\n")
        conns = get_json(http, "/connz")["connections"]
        mine = [c for c in conns if c.get("name") == "first"]
        assert mine and mine[0]["tls_first"] is True
    nc = await nats.connect(f"tls://localhost:{srv.port}", tls=certs.client_context(),
                            tls_handshake_first=True, allow_reconnect=False, connect_timeout=5)
    try:
        await nc.flush(timeout=5)
    finally:
        await nc.close()


def test_handshake_first_auto_falls_back(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``handshake_first: auto``: a client that says nothing gets the INFO in clear text after
    the fallback delay and upgrades as usual; one that starts TLS at once does TLS first."""
    srv = spawn(config=certs.tls_block('handshake_first: "auto"'))
    tls, info = tls_socket(srv, certs.client_context())
    with tls:
        assert info["tls_required"] is True
        assert ping_pong(tls).endswith(b"PONG\r\n")
    tls, info = tls_socket(srv, certs.client_context(), first=True)
    with tls:
        assert info["tls_required"] is True
        assert ping_pong(tls).endswith(b"PONG\r\n")
    assert log_lines(srv, "TLS required for client connections")


def test_min_version_refuses_older_clients(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``min_version: "1.3"``: a client limited to TLS 1.2 fails its handshake."""
    srv = spawn(config=certs.tls_block('min_version: "1.3"'))
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    read_info(sock)
    with pytest.raises(ssl.SSLError):
        certs.client_context(maximum="1.2").wrap_socket(sock, server_hostname="localhost")
    sock.close()
    tls, _ = tls_socket(srv, certs.client_context())
    with tls:
        assert tls.version() == "TLSv1.3"


# ---------------------------------------------------------------------------------- certificates


def test_verify_needs_a_client_certificate(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``verify: true``: no certificate, or one from an unknown CA, fails the handshake with
    nats-server's error lines; the CA's certificate passes."""
    srv = spawn(config=certs.tls_block("verify: true"))
    for who, needle in ((None, "TLS handshake error: tls: client didn't provide a certificate"),
                        ("mallory", "TLS handshake error: tls: failed to verify certificate: "
                                    "x509: certificate signed by unknown authority")):
        sock = socket.create_connection((srv.host, srv.port), timeout=5)
        read_info(sock)
        ctx = ssl.create_default_context(cafile=certs.path("ca.pem"))
        if who:
            ctx.load_cert_chain(certs.path(f"{who}-cert.pem"), certs.path(f"{who}-key.pem"))
        try:
            tls = ctx.wrap_socket(sock, server_hostname="localhost")
            # TLS 1.3: the client learns of the refusal at its first read
            assert ping_pong(tls) == b""
        except (ssl.SSLError, ConnectionResetError):
            pass
        sock.close()
        lines = log_lines(srv, needle)
        assert lines and "[ERR]" in lines[0], srv.log
    tls, _ = tls_socket(srv, certs.client_context("alice"))
    with tls:
        assert ping_pong(tls).endswith(b"PONG\r\n")


def test_expired_client_certificate(target: str, spawn: SpawnFn, certs: Certs) -> None:
    srv = spawn(config=certs.tls_block("verify: true"))
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    read_info(sock)
    try:
        tls = certs.client_context("old").wrap_socket(sock, server_hostname="localhost")
        assert ping_pong(tls) == b""
    except (ssl.SSLError, ConnectionResetError):
        pass
    sock.close()
    assert log_lines(srv, "tls: failed to verify certificate: x509: certificate has expired or "
                          "is not yet valid"), srv.log


def test_connz_tls_fields(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``/connz`` shows ``tls_version`` and ``tls_cipher_suite`` (Go's names); with
    ``auth=true`` the client's certificate: subject as Go prints it, SPKI and certificate
    SHA-256."""
    http = free_port()
    srv = spawn(config=certs.tls_block("verify: true"), args=["-m", str(http)])
    tls, _ = tls_socket(srv, certs.client_context("alice"))
    with tls:
        assert ping_pong(tls, {"name": "alice"}).endswith(b"PONG\r\n")
        conn = [c for c in get_json(http, "/connz")["connections"] if c.get("name") == "alice"][0]
        assert conn["tls_version"] == "1.3"
        assert conn["tls_cipher_suite"] in TLS13_SUITES
        assert "tls_peer_certs" not in conn
        conn = [c for c in get_json(http, "/connz?auth=true")["connections"]
                if c.get("name") == "alice"][0]
        leaf = conn["tls_peer_certs"][0]
        assert leaf == {"subject": certs.subject_rfc4514("alice"),
                        "spki_sha256": certs.spki_sha256("alice"),
                        "cert_sha256": certs.cert_sha256("alice")}
        keys = list(conn)
        assert keys.index("tls_version") == keys.index("name") + 1
        assert keys.index("tls_peer_certs") == keys.index("tls_cipher_suite") + 1


def test_varz_tls_fields(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``/varz``: ``tls_required``, ``tls_verify``, ``tls_timeout``, the certificate's expiry,
    and the authentication timeout nats-server derives from the TLS timeout (plus 1 s)."""
    http = free_port()
    spawn(config=certs.tls_block("verify: true", "timeout: 3"), args=["-m", str(http)])
    varz = get_json(http, "/varz")
    assert varz["tls_required"] is True and varz["tls_verify"] is True
    assert varz["tls_timeout"] == 3
    assert varz["auth_timeout"] == 4
    assert varz["tls_cert_not_after"] == certs.not_after("server")
    keys = list(varz)
    assert keys.index("tls_required") == keys.index("port") + 1


def test_pinned_certs(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``pinned_certs``: a client certificate whose public key is not pinned is refused with
    ``certificate not pinned``; the pinned one gets in."""
    srv = spawn(config=certs.tls_block("verify: true",
                                       f'pinned_certs: ["{certs.spki_sha256("alice").upper()}"]'))
    tls, _ = tls_socket(srv, certs.client_context("alice"))
    with tls:
        assert ping_pong(tls).endswith(b"PONG\r\n")
    sock = socket.create_connection((srv.host, srv.port), timeout=5)
    read_info(sock)
    try:
        tls = certs.client_context("bob").wrap_socket(sock, server_hostname="localhost")
        assert b"PONG" not in ping_pong(tls)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        pass
    sock.close()
    assert log_lines(srv, "TLS handshake error: certificate not pinned"), srv.log


def mapped_config(certs: Certs, *users: str) -> str:
    entries = ", ".join(users)
    return certs.tls_block("verify_and_map: true") + f"authorization {{ users = [ {entries} ] }}\n"


async def test_verify_and_map_by_email_and_subject(target: str, spawn: SpawnFn,
                                                   certs: Certs) -> None:
    """``verify_and_map``: alice is the user named by her certificate's e-mail SAN (with her
    permissions), bob the one named by his subject as a distinguished name in another RDN
    order; a certificate naming no user is refused (Authorization Violation)."""
    http = free_port()
    subject = certs.subject_rfc4514("bob")
    reordered = ",".join(reversed(subject.split(",")))
    srv = spawn(config=mapped_config(
        certs, '{user: "alice@example.com", permissions: {publish: "alice.>", subscribe: '
               '["alice.>", "_INBOX.>"]}}', f'{{user: "{reordered}"}}'), args=["-m", str(http)])
    tls, _ = tls_socket(srv, certs.client_context("alice"))
    with tls:
        out = ping_pong(tls, {"name": "a", "user": "ignored"})
        assert out.endswith(b"PONG\r\n"), out
        tls.sendall(b"PUB bob.x 1\r\nx\r\nPING\r\n")
        data = b""
        while b"PONG" not in data:
            data += tls.recv(4096)
        assert b"-ERR 'Permissions Violation for Publish to \"bob.x\"'" in data
        conn = [c for c in get_json(http, "/connz?auth=true")["connections"]
                if c.get("name") == "a"][0]
        assert conn["authorized_user"] == "alice@example.com"
    tls, _ = tls_socket(srv, certs.client_context("bob"))
    with tls:
        assert ping_pong(tls).endswith(b"PONG\r\n")
    tls, _ = tls_socket(srv, certs.client_context("carol"))
    with tls:
        assert ping_pong(tls) == b"-ERR 'Authorization Violation'\r\n"
    assert log_lines(srv, 'User "ignored" found in connect proto, but user required from cert')


# ---------------------------------------------------------------------------------- flags


def test_tls_flags(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """``--tlsverify --tlscert --tlskey --tlscacert`` turn TLS on as the block does."""
    srv = spawn(args=["--tlsverify", "--tlscert", certs.path("server-cert.pem"),
                      "--tlskey", certs.path("server-key.pem"),
                      "--tlscacert", certs.path("ca.pem")])
    tls, info = tls_socket(srv, certs.client_context("alice"))
    with tls:
        assert info["tls_required"] is True and info["tls_verify"] is True
        assert ping_pong(tls).endswith(b"PONG\r\n")


@pytest.mark.parametrize("flags,message", [
    (["--tls"], "TLS Server certificate must be present and valid"),
    (["--tlscert", "server-cert.pem"], "TLS Server private key must be present and valid"),
    (["--tls", "--tlscert", "server-cert.pem", "--tlskey", "nope.pem"],
     "error parsing X509 certificate/key pair: open nope.pem: no such file or directory"),
])
def test_tls_flags_refused(target: str, certs: Certs, flags: list[str], message: str) -> None:
    import subprocess

    from conformance.servers import URL_TARGET, command_for

    if target == URL_TARGET:
        pytest.skip("needs a server of its own")
    proc = subprocess.run(command_for(target) + ["-p", "-1", *flags], capture_output=True,
                          text=True, timeout=20, cwd=certs.directory)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("block,message", [
    ('cert_file: "nope.pem", key_file: "server-key.pem"',
     "error parsing X509 certificate/key pair: open nope.pem: no such file or directory"),
    ('cert_file: "server-cert.pem", key_file: "mallory-key.pem"',
     "error parsing X509 certificate/key pair: tls: private key does not match public key"),
    ('cert_file: "not-a-cert.pem", key_file: "server-key.pem"',
     "error parsing X509 certificate/key pair: tls: failed to find any PEM data in certificate "
     "input"),
    ('cert_file: "server-cert.pem"', "missing 'key_file' in TLS configuration"),
    ('key_file: "server-key.pem"', "missing 'cert_file' in TLS configuration"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", ca_file: "nope.pem"',
     "open nope.pem: no such file or directory"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", ca_file: "not-a-cert.pem"',
     "failed to parse root ca certificate"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", min_version: "1.1"',
     "error parsing tls config: unsupported TLS version: TLS 1.1"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", min_version: "1.4"',
     "error parsing tls config: unknown version: 1.4"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", '
     'cipher_suites: ["TLS_RSA_WITH_AES_128_CBC_SHA"]',
     "insecure cipher suites configured without 'allow_insecure_cipher_suites' option set: "
     "TLS_RSA_WITH_AES_128_CBC_SHA"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", cipher_suites: ["FOO"]',
     "unrecognized cipher FOO"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", curve_preferences: ["P256"]',
     "unrecognized curve preference P256"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", pinned_certs: ["abc"]',
     "error parsing tls config, 'pinned_certs' key abc does not look like hex-encoded sha256 "
     "of DER encoded SubjectPublicKeyInfo"),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", foo: 1',
     'error parsing tls config, unknown field "foo"'),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", handshake_first: "maybe"',
     'field "handshake_first"\'s value "maybe" is invalid'),
    ('cert_file: "server-cert.pem", key_file: "server-key.pem", timeout: "2x"',
     "error parsing tls config, 'timeout' time: unknown unit \"x\" in duration \"2x\""),
    ("cert_file: 1", "error parsing tls config, expected 'cert_file' to be filename"),
], ids=["missing-cert", "key-mismatch", "not-pem", "no-key", "no-cert", "missing-ca",
        "bad-ca", "tls11", "unknown-version", "insecure-cipher", "unknown-cipher",
        "unknown-curve", "bad-pin", "unknown-field", "bad-first", "bad-timeout", "cert-type"])
def test_unusable_tls_config_is_refused(target: str, certs: Certs, tmp_path: Path, block: str,
                                        message: str) -> None:
    """A certificate, key or CA the server cannot use, or a TLS option it refuses, stops it
    before it serves, with nats-server's message."""
    for name in ("server-cert.pem", "server-key.pem", "mallory-key.pem", "not-a-cert.pem"):
        (tmp_path / name).write_bytes(Path(certs.path(name)).read_bytes())
    stderr = refused_start(target, tmp_path, f"tls {{ {block} }}\n")
    assert message in stderr, stderr


def test_unreadable_certificate_is_refused(target: str, certs: Certs, tmp_path: Path) -> None:
    """A certificate file the server may not read: nats-server's ``permission denied``."""
    import os

    if os.geteuid() == 0:
        # root reads any file: make the path a directory instead, which no one can read
        (tmp_path / "cert.pem").mkdir()
        message = "error parsing X509 certificate/key pair: read cert.pem: is a directory"
    else:  # pragma: no cover - CI runs as root
        (tmp_path / "cert.pem").write_bytes(Path(certs.path("server-cert.pem")).read_bytes())
        (tmp_path / "cert.pem").chmod(0)
        message = "error parsing X509 certificate/key pair: open cert.pem: permission denied"
    (tmp_path / "key.pem").write_bytes(Path(certs.path("server-key.pem")).read_bytes())
    stderr = refused_start(target, tmp_path, 'tls { cert_file: "cert.pem", key_file: '
                                             '"key.pem" }\n')
    assert message in stderr, stderr
