"""Peer ids as nats-server computes them: a server's (and a Raft group's) 8-character id is
a hash of its name (``getHash``), so nodes named alike get the same ids on both servers."""
from __future__ import annotations

import hashlib

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def node_hash(name: str, size: int = 8) -> str:
    """nats-server's ``getHash``: the peer id of a server (and of a group), from its name."""
    digest = hashlib.sha256(name.encode()).digest()
    return "".join(DIGITS[b % 62] for b in digest[:size])
