"""What the LMDB crash test's writer stores, as pure functions of the sequence, so the test
can check every message after a SIGKILL without the writer telling it: the writer process
(a script the test writes) and the test both import this module."""
from __future__ import annotations


def content(seq: int) -> tuple[str, bytes | None, bytes]:
    """(subject, header block or None, payload) of the message stored at ``seq``."""
    subject = f"crash.{seq % 5}"
    hdr = f"NATS/1.0\r\nX-Seq: {seq}\r\n\r\n".encode() if seq % 3 == 0 else None
    data = (f"payload-{seq}-" * (seq % 13 + 1)).encode()
    return subject, hdr, data


def removed_by(seq: int) -> int:
    """Storing seq removes seq - 3 when seq is a multiple of 11 (0: removes nothing)."""
    return seq - 3 if seq % 11 == 0 else 0


def expected_gone(upto: int) -> set[int]:
    """The sequences up to ``upto`` the writer has removed."""
    return {m - 3 for m in range(11, upto + 1, 11)}
