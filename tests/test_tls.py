"""TLS in the in-process server: ``Server(tls=TlsOptions(...))`` with real clients, the
context a reload would rebuild, the config reading of ``tls { }``, and the pieces nats-server's
behaviour is rebuilt from (Go's certificate names, distinguished-name matching, errors)."""
from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import nats
import pytest
import trustme

from minijs import Server
from minijs.config import ConfigError
from minijs.confparse import parse_config
from minijs.core import tls as core_tls
from minijs.core.listenerauth import _parse_dn
from minijs.tlsconfig import TlsConfigError, TlsOptions


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    server = ca.issue_cert("localhost", "127.0.0.1")
    server.cert_chain_pems[0].write_to_path(str(d / "cert.pem"))
    server.private_key_pem.write_to_path(str(d / "key.pem"))
    alice = ca.issue_cert("alice@example.com", common_name="alice")
    alice.cert_chain_pems[0].write_to_path(str(d / "alice.pem"))
    alice.private_key_pem.write_to_path(str(d / "alice-key.pem"))
    other = trustme.CA().issue_cert("localhost")
    other.private_key_pem.write_to_path(str(d / "other-key.pem"))
    other.cert_chain_pems[0].write_to_path(str(d / "other.pem"))
    return {name: str(d / f"{name}.pem") for name in
            ("ca", "cert", "key", "alice", "alice-key", "other-key", "other")}


def client_ctx(pki: dict[str, str], who: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki["ca"])
    if who:
        ctx.load_cert_chain(pki[who], pki[f"{who}-key"])
    return ctx


async def test_in_process_tls_server_with_nats_py(pki: dict[str, str]) -> None:
    options = TlsOptions(cert_file=pki["cert"], key_file=pki["key"], ca_file=pki["ca"],
                         verify=True)
    async with Server(port=0, tls=options) as server:
        nc = await nats.connect(f"tls://localhost:{server.port}",
                                tls=client_ctx(pki, "alice"), allow_reconnect=False)
        sub = await nc.subscribe("s")
        await nc.publish("s", b"over tls")
        assert (await sub.next_msg(timeout=2)).data == b"over tls"
        conn = next(iter(server.connections.values()))
        assert conn.tls.version == "1.3" and conn.tls.cipher.startswith("TLS_")
        assert conn.tls.peer_certs()[0]["subject"].startswith("CN=alice,")
        await nc.close()


async def test_a_plain_client_gets_nothing_past_the_info(pki: dict[str, str]) -> None:
    async with Server(port=0, tls=TlsOptions(cert_file=pki["cert"], key_file=pki["key"])) as s:
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        info = json.loads((await reader.readline())[5:])
        assert info["tls_required"] is True
        writer.write(b"CONNECT {}\r\nPING\r\n")
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()


async def test_tls_first_then_info_over_tls(pki: dict[str, str]) -> None:
    options = TlsOptions(cert_file=pki["cert"], key_file=pki["key"], handshake_first=True)
    async with Server(port=0, tls=options) as server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.port, ssl=client_ctx(pki), server_hostname="localhost")
        info = json.loads((await reader.readline())[5:])
        assert info["tls_required"] is True
        writer.write(b'CONNECT {"verbose":false}\r\nPING\r\n')
        assert await reader.readline() == b"PONG\r\n"
        assert next(iter(server.connections.values())).tls.first is True
        writer.close()


async def test_allow_non_tls_serves_both(pki: dict[str, str]) -> None:
    async with Server(port=0, tls=TlsOptions(cert_file=pki["cert"], key_file=pki["key"]),
                      allow_non_tls=True) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        info = json.loads((await reader.readline())[5:])
        assert info.get("tls_available") is True and "tls_required" not in info
        writer.write(b'CONNECT {"verbose":false}\r\nPING\r\n')
        assert await reader.readline() == b"PONG\r\n"
        writer.close()


def test_server_context_refuses_unusable_files(pki: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match="tls: private key does not match public key"):
        core_tls.server_context(TlsOptions(cert_file=pki["cert"], key_file=pki["other-key"]))
    with pytest.raises(TlsConfigError, match="open /nope.pem: no such file or directory"):
        core_tls.server_context(TlsOptions(cert_file="/nope.pem", key_file=pki["key"]))
    with pytest.raises(TlsConfigError, match="failed to parse root ca certificate"):
        bad = tmp_path / "bad-ca.pem"
        bad.write_text("nothing")
        core_tls.server_context(TlsOptions(cert_file=pki["cert"], key_file=pki["key"],
                                           ca_file=str(bad)))
    with pytest.raises(TlsConfigError, match="Python's ssl can select one classic curve"):
        core_tls.server_context(TlsOptions(cert_file=pki["cert"], key_file=pki["key"],
                                           curves=("X25519", "CurveP256")))
    ctx = core_tls.server_context(TlsOptions(cert_file=pki["cert"], key_file=pki["key"],
                                             curves=("CurveP384",), min_version="1.3"))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3


async def test_reload_swaps_the_context_for_new_connections(pki: dict[str, str]) -> None:
    """``server.client_tls.reload(options)``: what a config reload calls; a bad file keeps
    the old context."""
    async with Server(port=0, tls=TlsOptions(cert_file=pki["cert"], key_file=pki["key"])) as s:
        old = s.client_tls.context
        with pytest.raises(TlsConfigError):
            s.client_tls.reload(TlsOptions(cert_file=pki["cert"], key_file=pki["other-key"]))
        assert s.client_tls.context is old
        s.client_tls.reload(TlsOptions(cert_file=pki["other"], key_file=pki["other-key"]))
        assert s.client_tls.context is not old
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        await reader.readline()
        loop = asyncio.get_running_loop()
        # the new certificate is not signed by the first CA: a client trusting it refuses
        with pytest.raises(ssl.SSLCertVerificationError):
            await loop.start_tls(writer.transport, writer.transport.get_protocol(),
                                 client_ctx(pki), server_hostname="localhost")
        writer.close()


def test_config_reading(pki: dict[str, str]) -> None:
    config = parse_config(f'tls {{ cert_file: "{pki["cert"]}", key_file: "{pki["key"]}", '
                          'timeout: "500ms", handshake_first: "300ms", pinned_certs: ["'
                          + "A" * 64 + '"], verify_and_map: true }\nallow_non_tls: true\n')
    tls = config.tls
    assert (tls.timeout, tls.handshake_first, tls.fallback_delay) == (0.5, True, 0.3)
    assert tls.pinned_certs == ("a" * 64,) and tls.verify and tls.map_users
    assert config.allow_non_tls and config.auth_timeout == 1.5
    explicit = parse_config("authorization { timeout: 5 }\n" + f'tls {{ cert_file: '
                            f'"{pki["cert"]}", key_file: "{pki["key"]}" }}\n')
    assert explicit.auth_timeout == 5
    with pytest.raises(ConfigError, match='field "cert_store" in tls is a nats-server setting'):
        parse_config(f'tls {{ cert_file: "{pki["cert"]}", key_file: "{pki["key"]}", '
                     'cert_store: "WindowsCurrentUser" }')


def test_go_names_and_distinguished_names() -> None:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc"),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "#dev"),
                      x509.NameAttribute(NameOID.COMMON_NAME, " bob "),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "bob@example.com")])
    # Go leaves out attributes it has no name for, escapes as RFC 2253 does, reverses
    assert core_tls.go_name(name) == "CN=\\ bob\\ ,OU=\\#dev,O=Acme\\, Inc,C=US"
    assert _parse_dn("CN=bob,O=Acme\\, Inc") == [(("cn", "bob"),), (("o", "Acme, Inc"),)]
    assert _parse_dn("CN=a+UID=b,O=x") == [(("cn", "a"), ("uid", "b")), (("o", "x"),)]
    assert _parse_dn("alice@example.com") is None


def test_handshake_errors_in_go_words() -> None:
    err = ssl.SSLError(1, "x")
    err.reason = "PEER_DID_NOT_RETURN_A_CERTIFICATE"  # type: ignore[misc]
    assert core_tls.handshake_error_text(err) == ("tls: client didn't provide a certificate",
                                                  False)
    err.reason = "WRONG_VERSION_NUMBER"  # type: ignore[misc]
    assert core_tls.handshake_error_text(err)[1] is True  # a probe: logged at debug level


async def test_config_reload_picks_up_new_certificate_files(pki: dict[str, str],
                                                            tmp_path: Path) -> None:
    """``Server.reload()`` (SIGHUP) with a ``tls { }`` whose files changed on disk: new
    connections get the new certificate; turning TLS off is refused and changes nothing."""
    import shutil

    from minijs.reload import ReloadError

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    shutil.copy(pki["cert"], cert)
    shutil.copy(pki["key"], key)
    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\nhost: 127.0.0.1\ntls {{ cert_file: "{cert}", '
                    f'key_file: "{key}" }}\n')
    from minijs.confparse import load_config

    server = Server(load_config(conf))
    server.config_file = str(conf)
    await server.start()
    try:
        old = server.client_tls.context
        shutil.copy(pki["other"], cert)  # same paths, another certificate
        shutil.copy(pki["other-key"], key)
        server.reload()
        assert server.client_tls.context is not old
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await reader.readline()
        with pytest.raises(ssl.SSLCertVerificationError):  # the first CA no longer fits
            await asyncio.get_running_loop().start_tls(
                writer.transport, writer.transport.get_protocol(), client_ctx(pki),
                server_hostname="localhost")
        writer.close()
        conf.write_text("port: -1\nhost: 127.0.0.1\n")
        with pytest.raises(ReloadError, match="turn TLS on or off is not supported"):
            server.reload()
        assert server.config.tls is not None
    finally:
        await server.stop()
