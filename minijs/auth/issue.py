"""Making operators, accounts and users for tests: key pairs, signed JWTs (nats-io/jwt v2's
format, as ``nsc`` writes them) and ``.creds`` files, without ``nsc``.

    op = Operator()                                   # an operator and its system account
    orders = op.account("ORDERS", limits={"conn": 10})
    alice = orders.user("alice", pub={"allow": ["orders.>"]})
    server = Server(port=0, **op.server_options())    # operator mode, memory resolver
    nc = await nats.connect(server.client_url, user_credentials=alice.write_creds(tmp_path))

``limits``, ``pub``/``sub`` and the other keyword arguments are the JWT's ``nats`` fields, as
nats-io/jwt names them; :meth:`Operator.config_text` gives the same setup as config-file
text for a ``minijs -c`` or ``nats-server -c``.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

from minijs.auth.nkeys import PREFIX_ACCOUNT, PREFIX_OPERATOR, PREFIX_USER, KeyPair

#: nats-io/jwt's defaults of a new account (everything unlimited, no JetStream).
ACCOUNT_LIMITS = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                  "wildcards": True, "conn": -1, "leaf": -1}
_STANDARD = ("aud", "exp", "jti", "iat", "iss", "name", "nbf", "sub")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _json(value: Any) -> bytes:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def encode(claims: dict[str, Any], issuer: KeyPair, *, issued_at: int | None = None) -> str:
    """Sign ``claims`` (``sub``, ``name``, optional ``exp``/``nbf``, the ``nats`` object) as
    a JWT of ``issuer``: ``iss``, ``iat`` and ``jti`` (the SHA-512/256 of the standard
    claims, base32) are filled in."""
    body = {k: v for k, v in claims.items() if v not in (None, "", 0)}
    body["iss"] = issuer.public_key
    body["iat"] = int(time.time()) if issued_at is None else issued_at
    standard = {k: body[k] for k in _STANDARD if k in body}
    body["jti"] = base64.b32encode(hashlib.new("sha512_256", _json(standard)).digest()) \
        .decode().rstrip("=")
    ordered = {k: body[k] for k in _STANDARD if k in body}
    ordered.update({k: v for k, v in body.items() if k not in _STANDARD})
    signed = f"{_b64(_json({'typ': 'JWT', 'alg': 'ed25519-nkey'}))}.{_b64(_json(ordered))}"
    return f"{signed}.{_b64(issuer.sign(signed.encode()))}"


def creds(jwt: str, seed: str) -> str:
    """A ``.creds`` file's text, as ``nsc generate creds`` writes it."""
    return ("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n\n"
            "*************************************************************\n")


class User:
    """A user of an account: its keys and its signed JWT."""

    def __init__(self, account: "Account", name: str, *, expires: int = 0,
                 **nats: Any) -> None:
        self.account = account
        self.name = name
        self.keys = KeyPair.create(PREFIX_USER)
        body: dict[str, Any] = {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
        body.update(nats)
        body.update({"type": "user", "version": 2})
        self.jwt = encode({"name": name, "sub": self.keys.public_key, "exp": expires,
                           "nats": body}, account.keys)

    @property
    def seed(self) -> str:
        return self.keys.seed

    @property
    def creds(self) -> str:
        return creds(self.jwt, self.keys.seed)

    def write_creds(self, directory: Any) -> str:
        """Write ``<name>.creds`` into ``directory``; its path (for nats-py's
        ``user_credentials``, the nats CLI's ``--creds``)."""
        path = os.path.join(os.fspath(directory), f"{self.name}.creds")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.creds)
        return path


class Account:
    """An account of an operator: keys, claims (``limits``, ``exports``, ``imports``, ...) and
    the JWT the operator signs; :meth:`update` signs new claims."""

    def __init__(self, operator: "Operator", name: str, **nats: Any) -> None:
        self.operator = operator
        self.name = name
        self.keys = KeyPair.create(PREFIX_ACCOUNT)
        self.jwt = ""
        self.update(**nats)

    @property
    def public_key(self) -> str:
        return self.keys.public_key

    def update(self, *, expires: int = 0, **nats: Any) -> str:
        """Sign new claims for this account (``limits`` merged over the defaults); the JWT,
        for the resolver preload or ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE``."""
        body: dict[str, Any] = dict(nats)
        body["limits"] = {**ACCOUNT_LIMITS, **(nats.get("limits") or {})}
        body.setdefault("default_permissions", {"pub": {}, "sub": {}})
        body.update({"type": "account", "version": 2})
        self.jwt = encode({"name": self.name, "sub": self.public_key, "exp": expires,
                           "nats": body}, self.operator.keys)
        return self.jwt

    def user(self, name: str, **nats: Any) -> User:
        """A new user of this account (``pub``, ``sub``, ``bearer_token``, ``expires`` ...)."""
        return User(self, name, **nats)


class Operator:
    """An operator with its system account (``SYS``) and the accounts made with
    :meth:`account`."""

    def __init__(self, name: str = "OP") -> None:
        self.name = name
        self.keys = KeyPair.create(PREFIX_OPERATOR)
        self.accounts: list[Account] = []
        self.system = self.account("SYS")
        self.jwt = encode({"name": name, "sub": self.keys.public_key,
                           "nats": {"system_account": self.system.public_key,
                                    "type": "operator", "version": 2}}, self.keys)

    def account(self, name: str, **nats: Any) -> Account:
        acc = Account(self, name, **nats)
        self.accounts.append(acc)
        return acc

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for :class:`minijs.Server` (or ``ServerThread``)."""
        return {"operator": (self.jwt,), "resolver": "MEMORY",
                "system_account": self.system.public_key,
                "resolver_preload": tuple((a.public_key, a.jwt) for a in self.accounts)}

    def config_text(self) -> str:
        """The same as config-file text (for ``minijs -c`` or ``nats-server -c``)."""
        preload = "".join(f"  {a.public_key}: {a.jwt}\n" for a in self.accounts)
        return (f"operator: {self.jwt}\nsystem_account: {self.system.public_key}\n"
                f"resolver: MEMORY\nresolver_preload: {{\n{preload}}}\n")
