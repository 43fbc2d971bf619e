"""NATS nkeys: ed25519 public keys in NATS's base32 encoding, signatures over the INFO nonce.

An nkey's text is base32 (no padding) of ``prefix byte + 32 key bytes + CRC-16 (little
endian)``; the first letter says what the key belongs to (``O`` operator, ``A`` account,
``U`` user, ``N`` server, ``C`` cluster; a seed starts with ``S`` and the letter of its
role). Signatures are checked with PyNaCl (the ``nkeys`` package's own dependency), imported
at the first check, so a server without nkey users or an operator never loads it.

The nonce is nats-server's: 11 random bytes, base64url without padding (15 characters), one
per connection, sent in INFO when nkeys or JWTs are configured.
"""
from __future__ import annotations

import base64
import binascii
import os
from typing import Any

#: Prefix bytes of the public key roles (the first base32 letter: O, A, U, N, C) and seeds.
PREFIX_OPERATOR = 14 << 3
PREFIX_ACCOUNT = 0
PREFIX_USER = 20 << 3
PREFIX_SERVER = 13 << 3
PREFIX_CLUSTER = 2 << 3
PREFIX_SEED = 18 << 3
_PUBLIC_PREFIXES = (PREFIX_OPERATOR, PREFIX_ACCOUNT, PREFIX_USER, PREFIX_SERVER, PREFIX_CLUSTER)

#: What to install when the ed25519 library is missing.
INSTALL_HINT = "pip install 'minijs[nkeys]'"


class NkeyError(ValueError):
    """Not a valid nkey, seed or signature encoding."""


class MissingCryptoError(RuntimeError):
    """nkeys or JWTs are configured, and PyNaCl (the ``nkeys`` extra) is not installed."""


def _crc16(data: bytes) -> int:
    """CRC-16/XMODEM, the checksum of an encoded nkey."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def _b32decode(text: str) -> bytes:
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raise NkeyError("invalid encoding") from None
    if len(raw) < 3:
        raise NkeyError("invalid encoding")
    body, crc = raw[:-2], int.from_bytes(raw[-2:], "little")
    if _crc16(body) != crc:
        raise NkeyError("invalid checksum")
    return body


def decode_public(key: str, prefix: int | None = None) -> bytes:
    """The 32 raw bytes of public nkey ``key`` (of role ``prefix`` when given)."""
    if not isinstance(key, str) or not key.isascii():
        raise NkeyError("invalid encoding")
    body = _b32decode(key)
    if len(body) != 33 or body[0] not in _PUBLIC_PREFIXES:
        raise NkeyError("invalid public key")
    if prefix is not None and body[0] != prefix:
        raise NkeyError("invalid prefix byte")
    return body[1:]


def is_valid_public(key: Any, prefix: int) -> bool:
    """nats-server's ``nkeys.IsValidPublic{User,Account,Operator}Key``."""
    try:
        decode_public(key, prefix)
    except NkeyError:
        return False
    return True


def is_user_key(key: Any) -> bool:
    return is_valid_public(key, PREFIX_USER)


def is_account_key(key: Any) -> bool:
    return is_valid_public(key, PREFIX_ACCOUNT)


def is_operator_key(key: Any) -> bool:
    return is_valid_public(key, PREFIX_OPERATOR)


def _nacl() -> Any:
    try:
        import nacl.exceptions
        import nacl.signing
    except ImportError:
        raise MissingCryptoError(
            f"nkey and JWT authentication need PyNaCl: {INSTALL_HINT}") from None
    return nacl


def require_crypto() -> None:
    """Raise :class:`MissingCryptoError` (naming the fix) when PyNaCl is not installed."""
    _nacl()


def verify(public_key: str, data: bytes, signature: bytes) -> bool:
    """Is ``signature`` (64 raw bytes) ``data`` signed by the owner of ``public_key``?"""
    try:
        raw = decode_public(public_key)
    except NkeyError:
        return False
    nacl = _nacl()
    try:
        nacl.signing.VerifyKey(raw).verify(data, signature)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
    return True


def decode_signature(sig: str) -> bytes | None:
    """A CONNECT ``sig``: base64url without padding, or standard base64 (padded), as
    nats-server's fallback takes it; None when it is neither."""
    try:
        if _is_urlsafe(sig) and len(sig) % 4 != 1:
            return base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
        return base64.b64decode(sig.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None


def _is_urlsafe(text: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "-_") for c in text)


def new_nonce() -> str:
    """A fresh nonce for INFO: 11 random bytes, base64url without padding (15 characters)."""
    return base64.urlsafe_b64encode(os.urandom(11)).decode().rstrip("=")


# ----------------------------------------------------------------------------- key pairs


class KeyPair:
    """A seed and its public key: what signs JWTs and nonces (tests, the ``minijs.testing``
    helpers, the management commands' ``--creds``). Made from a seed (``SU...``, ``SA...``,
    ``SO...``) or fresh with :meth:`create`."""

    def __init__(self, seed: str) -> None:
        body = _b32decode(seed.strip())
        if len(body) != 34 or (body[0] & 0xF8) != PREFIX_SEED:
            raise NkeyError("invalid seed")
        role = ((body[0] & 7) << 5) | ((body[1] & 0xF8) >> 3)
        if role not in _PUBLIC_PREFIXES:
            raise NkeyError("invalid seed")
        self.seed = seed.strip()
        self.prefix = role
        self._signing = _nacl().signing.SigningKey(body[2:])
        self.public_key = _encode(bytes([role]) + bytes(self._signing.verify_key))

    @classmethod
    def create(cls, prefix: int) -> "KeyPair":
        """A new random key pair of role ``prefix`` (:data:`PREFIX_USER`, ...)."""
        raw = os.urandom(32)
        head = bytes([PREFIX_SEED | (prefix >> 5), (prefix & 31) << 3])
        return cls(_encode(head + raw))

    def sign(self, data: bytes) -> bytes:
        return self._signing.sign(data).signature

    def sign_nonce(self, nonce: str) -> str:
        """The CONNECT ``sig`` for an INFO ``nonce`` (base64url, no padding)."""
        return base64.urlsafe_b64encode(self.sign(nonce.encode())).decode().rstrip("=")

    def __repr__(self) -> str:
        return f"KeyPair({self.public_key})"


def _encode(body: bytes) -> str:
    return base64.b32encode(body + _crc16(body).to_bytes(2, "little")).decode().rstrip("=")
