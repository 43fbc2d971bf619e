"""Keys and JWTs made by the suite itself, for the nkey and operator-mode cases.

Key pairs come from the ``nkeys`` package (NATS's own Python library, on PyNaCl); JWTs are
encoded here as nats-io/jwt v2 writes them (header ``{"typ":"JWT","alg":"ed25519-nkey"}``,
base64url without padding, ``jti`` the base32 SHA-512/256 of the claims with an empty ``jti``,
the signature over ``header.payload`` by the issuer's key). The suite never imports minijs, so
this encoder is independent of the decoder the server under test uses.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import nkeys

ROLES = {"operator": nkeys.PREFIX_BYTE_OPERATOR, "account": nkeys.PREFIX_BYTE_ACCOUNT,
         "user": nkeys.PREFIX_BYTE_USER}


class Keys:
    """A key pair: ``seed`` (``S.``), ``public`` (``O``/``A``/``U``...)."""

    def __init__(self, role: str = "user", seed: str | None = None) -> None:
        if seed is None:
            seed = nkeys.encode_seed(os.urandom(32), ROLES[role]).decode()
        self.seed = seed
        self._kp = nkeys.from_seed(seed.encode())
        self.public = self._kp.public_key.decode()

    def sign(self, data: bytes) -> bytes:
        return self._kp.sign(data)

    def sign_nonce(self, nonce: str, *, padded: bool = False) -> str:
        """The CONNECT ``sig``: base64url without padding (standard base64 when ``padded``)."""
        sig = self.sign(nonce.encode())
        if padded:
            return base64.b64encode(sig).decode()
        return base64.urlsafe_b64encode(sig).decode().rstrip("=")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _go_json(value: Any) -> bytes:
    """Compact JSON as Go's encoder writes it (no spaces, ``<>&`` escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def encode(claims: dict[str, Any], issuer: Keys, *, iat: int | None = None) -> str:
    """A signed JWT: ``claims`` (``sub``, ``name``, ``exp``, ``nats`` ...) issued by ``issuer``
    now (or at ``iat``)."""
    body = dict(claims)
    body["iat"] = int(time.time()) if iat is None else iat
    body["iss"] = issuer.public
    body["jti"] = ""
    std = {k: body[k] for k in ("aud", "exp", "jti", "iat", "iss", "name", "nbf", "sub")
           if k in body and (body[k] or k == "jti")}
    std.pop("jti")
    digest = hashlib.new("sha512_256", _go_json(std)).digest()
    body["jti"] = base64.b32encode(digest).decode().rstrip("=")
    order = ["aud", "exp", "jti", "iat", "iss", "name", "nbf", "sub"]
    ordered = {k: body[k] for k in order if k in body and body[k] not in ("", None, 0)}
    ordered.update({k: v for k, v in body.items() if k not in order})
    header = _b64(_go_json({"typ": "JWT", "alg": "ed25519-nkey"}))
    payload = _b64(_go_json(ordered))
    signed = f"{header}.{payload}"
    return f"{signed}.{_b64(issuer.sign(signed.encode()))}"


def operator_jwt(op: Keys, *, name: str = "OP", signing_keys: list[str] | None = None,
                 system_account: str = "", issuer: Keys | None = None) -> str:
    nats: dict[str, Any] = {}
    if signing_keys:
        nats["signing_keys"] = signing_keys
    if system_account:
        nats["system_account"] = system_account
    nats.update({"type": "operator", "version": 2})
    return encode({"name": name, "sub": op.public, "nats": nats}, issuer or op)


#: nats-io/jwt's defaults of a new account: everything unlimited, JetStream off.
DEFAULT_ACCOUNT_LIMITS = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                          "wildcards": True, "conn": -1, "leaf": -1}


def account_jwt(acc: Keys, issuer: Keys, *, name: str = "A", limits: dict[str, Any] | None = None,
                signing_keys: list[Any] | None = None, revocations: dict[str, int] | None = None,
                exports: list[dict[str, Any]] | None = None,
                imports: list[dict[str, Any]] | None = None, exp: int = 0,
                default_permissions: dict[str, Any] | None = None, iat: int | None = None,
                extra: dict[str, Any] | None = None) -> str:
    nats: dict[str, Any] = {}
    if imports:
        nats["imports"] = imports
    if exports:
        nats["exports"] = exports
    nats["limits"] = {**DEFAULT_ACCOUNT_LIMITS, **(limits or {})}
    if signing_keys:
        nats["signing_keys"] = signing_keys
    if revocations:
        nats["revocations"] = revocations
    nats["default_permissions"] = default_permissions or {"pub": {}, "sub": {}}
    nats["authorization"] = {}
    nats.update(extra or {})
    nats.update({"type": "account", "version": 2})
    claims: dict[str, Any] = {"name": name, "sub": acc.public, "nats": nats}
    if exp:
        claims["exp"] = exp
    return encode(claims, issuer, iat=iat)


def user_jwt(user: Keys, issuer: Keys, *, name: str = "U", issuer_account: str = "",
             pub: dict[str, Any] | None = None, sub: dict[str, Any] | None = None,
             resp: dict[str, Any] | None = None, bearer: bool = False,
             connection_types: list[str] | None = None, exp: int = 0, nbf: int = 0,
             limits: dict[str, Any] | None = None, iat: int | None = None,
             scoped: bool = False) -> str:
    """A user JWT; ``scoped``: with no permissions or limits at all (what a scoped signing
    key's template fills in), as nsc writes such a user."""
    nats: dict[str, Any] = {} if scoped else {"pub": pub or {}, "sub": sub or {}}
    if resp is not None:
        nats["resp"] = resp
    if not scoped:
        nats.update({"subs": -1, "data": -1, "payload": -1, **(limits or {})})
    if bearer:
        nats["bearer_token"] = True
    if connection_types:
        nats["allowed_connection_types"] = connection_types
    if issuer_account:
        nats["issuer_account"] = issuer_account
    nats.update({"type": "user", "version": 2})
    claims: dict[str, Any] = {"name": name, "sub": user.public, "nats": nats}
    if exp:
        claims["exp"] = exp
    if nbf:
        claims["nbf"] = nbf
    return encode(claims, issuer, iat=iat)


def creds(jwt: str, seed: str) -> str:
    """A ``.creds`` file as ``nsc`` writes it."""
    return ("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n\n"
            "*************************************************************\n")


@dataclass
class OperatorSetup:
    """An operator, its system account and account ``A`` with user ``user`` (and more
    accounts, as a case needs): the keys, the JWTs, and the server config trusting the
    operator with the account JWTs preloaded in a memory resolver."""

    op: Keys = field(default_factory=lambda: Keys("operator"))
    sys: Keys = field(default_factory=lambda: Keys("account"))
    acc: Keys = field(default_factory=lambda: Keys("account"))
    user: Keys = field(default_factory=lambda: Keys("user"))
    accounts: dict[str, str] = field(default_factory=dict)
    operator: str = ""

    def __post_init__(self) -> None:
        self.operator = operator_jwt(self.op, system_account=self.sys.public)
        self.accounts[self.sys.public] = account_jwt(self.sys, self.op, name="SYS")
        self.accounts[self.acc.public] = account_jwt(self.acc, self.op, name="A")

    def config(self, extra: str = "", operator: str | None = None) -> str:
        """The server config: ``operator`` (default this one's JWT), the system account, the
        memory resolver preloaded with ``accounts``, then ``extra``."""
        preload = "".join(f"  {k}: {v}\n" for k, v in self.accounts.items())
        return (f"operator: {operator or self.operator}\nsystem_account: {self.sys.public}\n"
                f"resolver: MEMORY\nresolver_preload: {{\n{preload}}}\n{extra}")

    def user_jwt(self, **kw: Any) -> str:
        """A JWT for ``user`` issued by account ``A`` (or ``issuer=``); ``kw`` as
        :func:`user_jwt`."""
        return user_jwt(self.user, kw.pop("issuer", self.acc), **kw)
