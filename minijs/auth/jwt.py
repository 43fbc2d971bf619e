"""NATS JWTs (nats-io/jwt v2): decoding, signature checks and validity times.

A JWT is ``header.payload.signature``, each part base64url without padding; the header is
``{"typ":"JWT","alg":"ed25519-nkey"}``, the payload the claims (``iss`` the public key that
signed, ``sub`` the key the claims are about, ``iat``/``exp``/``nbf`` Unix seconds, ``name``,
and the ``nats`` object of the claim's type: ``operator``, ``account`` or ``user``), the
signature ed25519 over ``header.payload`` by ``iss``. Claims are kept as the decoded dicts.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from minijs.auth import nkeys

ALGORITHM = "ed25519-nkey"
#: The issuer role each claim type must have (nats-io/jwt's ``ExpectedPrefixes``).
_ISSUERS = {"operator": (nkeys.PREFIX_OPERATOR,), "account": (nkeys.PREFIX_OPERATOR,),
            "user": (nkeys.PREFIX_ACCOUNT,)}
_SUBJECTS = {"operator": nkeys.PREFIX_OPERATOR, "account": nkeys.PREFIX_ACCOUNT,
             "user": nkeys.PREFIX_USER}


class JwtError(ValueError):
    """Not a JWT, not of the expected type, or not signed by its issuer."""


@dataclass(frozen=True)
class Claims:
    """A decoded, signature-checked JWT."""

    jwt: str
    kind: str  # operator, account, user
    subject: str
    issuer: str
    name: str
    issued_at: int
    expires: int  # 0: never
    not_before: int  # 0: at once
    nats: dict[str, Any] = field(default_factory=dict)

    def expired(self, now: float) -> bool:
        return bool(self.expires) and now > self.expires

    def not_yet_valid(self, now: float) -> bool:
        return bool(self.not_before) and now < self.not_before


def _b64(part: str) -> bytes:
    if not part or "=" in part:
        raise JwtError("invalid encoding")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise JwtError("invalid encoding") from None


def decode(token: str, kind: str) -> Claims:
    """Decode ``token`` as a JWT of ``kind`` and check its signature; raise :class:`JwtError`
    with nats-io/jwt's reason otherwise."""
    if not isinstance(token, str):
        raise JwtError("expected a string")
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise JwtError("expected 3 chunks")
    try:
        header = json.loads(_b64(parts[0]))
        payload = json.loads(_b64(parts[1]))
    except (ValueError, UnicodeDecodeError) as exc:
        raise JwtError(str(exc)) from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise JwtError("not a JWT")
    if str(header.get("typ", "")).upper() != "JWT":
        raise JwtError(f"not supported type {header.get('typ')!r}")
    if header.get("alg") != ALGORITHM:
        raise JwtError(f"unexpected {header.get('alg')!r} algorithm")
    nats = payload.get("nats")
    if not isinstance(nats, dict):
        nats = {}
    found = nats.get("type") or payload.get("type")
    if found != kind:
        raise JwtError(f"not {kind} claim")
    issuer = payload.get("iss")
    subject = payload.get("sub")
    if not isinstance(issuer, str) or not isinstance(subject, str):
        raise JwtError("invalid issuer or subject")
    if not any(nkeys.is_valid_public(issuer, p) for p in _ISSUERS[kind]):
        raise JwtError("claim failed issuer validation")
    if not nkeys.is_valid_public(subject, _SUBJECTS[kind]):
        raise JwtError(f"{subject!r} is not a valid {kind} public key")
    signature = _b64(parts[2])
    if not nkeys.verify(issuer, f"{parts[0]}.{parts[1]}".encode(), signature):
        raise JwtError("claim failed V2 signature verification")

    def number(key: str) -> int:
        value = payload.get(key, 0)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else 0

    return Claims(token.strip(), kind, subject, issuer, str(payload.get("name", "")),
                  number("iat"), number("exp"), number("nbf"), nats)


def validity_issue(claims: Claims, now: float) -> str | None:
    """nats-io/jwt's blocking time issue of ``claims`` at ``now``, or None."""
    if claims.expired(now):
        return "claim is expired"
    if claims.not_yet_valid(now):
        return "claim is not yet valid"
    return None


# ----------------------------------------------------------------------------- .creds files

_CREDS_JWT = "NATS USER JWT"
_CREDS_SEED = "USER NKEY SEED"


class CredsError(ValueError):
    """A ``.creds`` file without a user JWT and seed in their ``-----BEGIN ...`` blocks."""


def parse_creds(text: str, source: str = "credentials") -> tuple[str, str]:
    """The user JWT and seed of a ``.creds`` file (as nsc writes it: each in a block between
    ``-----BEGIN NATS USER JWT-----`` / ``------END NATS USER JWT------`` style lines)."""
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("---") and "BEGIN" in line:
            body = []
            i += 1
            while i < len(lines) and not (lines[i].strip().startswith("---")
                                          and "END" in lines[i]):
                if lines[i].strip():
                    body.append(lines[i].strip())
                i += 1
            if i >= len(lines):
                raise CredsError(f"{source}: a -----BEGIN block is never closed with its "
                                 "------END line")
            blocks.append("".join(body))
        i += 1
    if len(blocks) < 2:
        raise CredsError(f"{source}: expected a user JWT and a user seed, each between "
                         "-----BEGIN and ------END lines (as `nsc generate creds` writes them); "
                         f"found {len(blocks)} block(s)")
    jwt_text, seed = blocks[0], blocks[1]
    if jwt_text.count(".") != 2:
        raise CredsError(f"{source}: the first block is not a JWT")
    if not seed.startswith("SU"):
        raise CredsError(f"{source}: the second block is not a user seed (SU...)")
    return jwt_text, seed
