"""Passwords and tokens as nats-server compares them: a bcrypt hash or plain text (compared in
constant time)."""
from __future__ import annotations

import re


def check_password(stored: str, given: str) -> bool:
    """nats-server's comparePasswords: a bcrypt hash (``$2a$``, ``$2b$``, ...) or plain text."""
    if is_bcrypt(stored):
        try:
            import bcrypt
        except ImportError:  # pragma: no cover - bcrypt is a dependency
            return False
        try:
            return bcrypt.checkpw(given.encode(), stored.encode())
        except ValueError:
            return False
    import hmac  # only servers with passwords or tokens need it

    return hmac.compare_digest(stored.encode(), given.encode())


_BCRYPT_RE = re.compile(r"\$2[abxy]\$\d{2}\$")


def is_bcrypt(password: str) -> bool:
    """nats-server's isBcrypt: ``$2a$``/``$2b$``/``$2x$``/``$2y$`` and a two-digit cost."""
    return _BCRYPT_RE.match(password) is not None
