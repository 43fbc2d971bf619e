"""Certificates the TLS and websocket cases make for themselves, with ``trustme``: one CA,
a server certificate for ``localhost``, ``127.0.0.1`` and ``::1``, client certificates
(``alice``, named by an e-mail SAN; ``bob``, by his subject: his DNS SAN names no user;
``carol``, by no configured user), one from a CA the
servers do not trust, and an expired one. Written once per session into a temporary
directory; ``certs.path(name)`` is the file."""
from __future__ import annotations

import datetime
import hashlib
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Certs:
    """File paths (``ca``, ``server_cert``, ``server_key``, ``alice_cert`` ...) and what
    the cases compare against (subjects and digests computed here, never by a server)."""

    directory: Path

    def path(self, name: str) -> str:
        return str(self.directory / name)

    def tls_block(self, *extra: str) -> str:
        """``tls { cert_file key_file ca_file ... }`` for a config, plus ``extra`` lines."""
        lines = [f'cert_file: "{self.path("server-cert.pem")}"',
                 f'key_file: "{self.path("server-key.pem")}"',
                 f'ca_file: "{self.path("ca.pem")}"', *extra]
        return "tls {\n  " + "\n  ".join(lines) + "\n}\n"

    def client_context(self, who: str | None = None, *, maximum: str = "") -> ssl.SSLContext:
        """A client context trusting the CA, presenting ``who``'s certificate when given."""
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        if who is not None:
            ctx.load_cert_chain(self.path(f"{who}-cert.pem"), self.path(f"{who}-key.pem"))
        if maximum == "1.2":
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def der(self, who: str) -> bytes:
        return ssl.PEM_cert_to_DER_cert(Path(self.path(f"{who}-cert.pem")).read_text())

    def spki_sha256(self, who: str) -> str:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        cert = x509.load_der_x509_certificate(self.der(who))
        spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                              serialization.PublicFormat.SubjectPublicKeyInfo)
        return hashlib.sha256(spki).hexdigest()

    def cert_sha256(self, who: str) -> str:
        return hashlib.sha256(self.der(who)).hexdigest()

    def subject_rfc4514(self, who: str) -> str:
        """The certificate's subject as ``CN=...,OU=...,O=...`` (what Go prints for it)."""
        from cryptography import x509

        return x509.load_der_x509_certificate(self.der(who)).subject.rfc4514_string()

    def not_after(self, who: str) -> str:
        from cryptography import x509

        cert = x509.load_der_x509_certificate(self.der(who))
        when = cert.not_valid_after_utc
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_certs(directory: Path) -> Certs:
    import trustme

    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    server = ca.issue_cert("localhost", "127.0.0.1", "::1")
    server.cert_chain_pems[0].write_to_path(str(directory / "server-cert.pem"))
    server.private_key_pem.write_to_path(str(directory / "server-key.pem"))
    for who, identities, cn in (("alice", ("alice@example.com",), "alice"),
                                ("bob", ("bob.example.net",), "bob"),
                                ("carol", ("carol@example.com",), "carol")):
        cert = ca.issue_cert(*identities, common_name=cn)
        cert.cert_chain_pems[0].write_to_path(str(directory / f"{who}-cert.pem"))
        cert.private_key_pem.write_to_path(str(directory / f"{who}-key.pem"))
    old = ca.issue_cert("old@example.com", common_name="old",
                        not_after=datetime.datetime.now(datetime.timezone.utc)
                        - datetime.timedelta(days=1),
                        not_before=datetime.datetime.now(datetime.timezone.utc)
                        - datetime.timedelta(days=10))
    old.cert_chain_pems[0].write_to_path(str(directory / "old-cert.pem"))
    old.private_key_pem.write_to_path(str(directory / "old-key.pem"))
    stranger = trustme.CA().issue_cert("mallory@example.com", common_name="mallory")
    stranger.cert_chain_pems[0].write_to_path(str(directory / "mallory-cert.pem"))
    stranger.private_key_pem.write_to_path(str(directory / "mallory-key.pem"))
    (directory / "not-a-cert.pem").write_text("this is not PEM data\n")
    return Certs(directory)


@pytest.fixture(scope="session")
def certs() -> Iterator[Certs]:
    with tempfile.TemporaryDirectory(prefix="conformance-certs-") as d:
        yield make_certs(Path(d))
