"""NATS header blocks as JetStream reads and writes them.

A header block is the raw bytes a client sent with HPUB: ``NATS/1.0[ status]\\r\\n`` then
``Name: value\\r\\n`` lines and a blank line. JetStream stores it verbatim and only looks a few
names up, exact-case as nats-server does, so parsing is a single split done only when a
message has headers at all.
"""
from __future__ import annotations

import re

from minijs.config import API_LEVEL
from minijs.jetstream import errors as E
from minijs.protocol.gotime import parse_duration

_SECOND = 1_000_000_000

HEADER_LINE = b"NATS/1.0"

MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJ_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJ_SEQ_SUBJ = "Nats-Expected-Last-Subject-Sequence-Subject"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
ROLLUP = "Nats-Rollup"
TTL = "Nats-TTL"
INCR = "Nats-Incr"
STREAM_SOURCE = "Nats-Stream-Source"
REQUIRED_API_LEVEL = "Nats-Required-Api-Level"
MARKER_REASON = "Nats-Marker-Reason"
KV_OPERATION = "KV-Operation"
SCHEDULE = "Nats-Schedule"
BATCH_ID = "Nats-Batch-Id"


def parse(block: bytes | None) -> dict[str, str]:
    """Header name → first value (names exact-case; values stripped of surrounding space)."""
    out: dict[str, str] = {}
    if not block:
        return out
    lines = block.split(b"\r\n")
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        key = name.decode("utf-8", "replace")
        if key not in out:
            out[key] = value.strip().decode("utf-8", "replace")
    return out


def slice_header(block: bytes, key: bytes) -> bytes | None:
    """Go ``sliceHeader``: the value of the first ``\r\n<key>:`` line (exact case), leading
    spaces skipped, everything else up to the CRLF kept; None when absent."""
    i = block.find(b"\r\n" + key + b":")
    if i < 0:
        return None
    start = i + 2 + len(key) + 1
    while start < len(block) and block[start] == 0x20:
        start += 1
    end = block.find(b"\r\n", start)
    return block[start:end if end >= 0 else len(block)]


_ATOI = re.compile(r"[+-]?[0-9]+")


def api_level_too_high(value: str) -> bool:
    """nats-server's ``errorOnRequiredApiLevel`` on a non-empty ``Nats-Required-Api-Level``
    value: refused unless it is a Go ``strconv.Atoi`` integer (ASCII digits, an optional
    sign, int64 range) not above this server's API level."""
    if not _ATOI.fullmatch(value):
        return True
    level = int(value)
    return not -(1 << 63) <= level < (1 << 63) or level > API_LEVEL


def is_subject_delete_marker(block: bytes | None) -> bool:
    """nats-server ``isSubjectDeleteMarker``: a ``Nats-Marker-Reason`` header, or a KV purge
    marker (``KV-Operation: PURGE``). Its expiry leaves no new marker behind."""
    if not block:
        return False
    h = parse(block)
    return bool(h.get(MARKER_REASON)) or h.get(KV_OPERATION) == "PURGE"


def status_of(block: bytes | None) -> str:
    """The text after ``NATS/1.0`` on the first line (``""`` for a plain header block)."""
    if not block:
        return ""
    first = block.split(b"\r\n", 1)[0]
    return first[len(HEADER_LINE):].strip().decode("utf-8", "replace")


def build(pairs: list[tuple[str, str]], status: str = "") -> bytes:
    """A header block from ``(name, value)`` pairs, optionally with a status line."""
    head = HEADER_LINE + (b" " + status.encode() if status else b"")
    body = b"".join(f"{k}: {v}\r\n".encode() for k, v in pairs)
    return head + b"\r\n" + body + b"\r\n"


def append(block: bytes | None, pairs: list[tuple[str, str]]) -> bytes:
    """``block`` with ``pairs`` added after its existing headers (a new block if none)."""
    extra = b"".join(f"{k}: {v}\r\n".encode() for k, v in pairs)
    if not block:
        return HEADER_LINE + b"\r\n" + extra + b"\r\n"
    body = block[:-2] if block.endswith(b"\r\n\r\n") else block
    return body + extra + b"\r\n"


_PLAIN_FIRST_LINE = HEADER_LINE + b"\r\n"


def strip_status(block: bytes) -> bytes:
    """Drop any status text from the ``NATS/1.0`` line (what a stream stores)."""
    if block.startswith(_PLAIN_FIRST_LINE):
        return block  # the usual case, without copying the block
    first, sep, rest = block.partition(b"\r\n")
    if first == HEADER_LINE:
        return block
    return HEADER_LINE + sep + rest


def remove(block: bytes, name: str) -> bytes | None:
    """``block`` without the header ``name`` (None if nothing is left)."""
    key = name.encode() + b":"
    lines = block.split(b"\r\n")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln and not ln.startswith(key)]
    if len(kept) == 1:
        return None
    return b"\r\n".join(kept) + b"\r\n\r\n"


def set_value(block: bytes, name: str, value: str) -> bytes:
    """Replace the value of ``name`` in ``block`` (appended when absent)."""
    key = name.encode() + b":"
    lines = block.split(b"\r\n")
    done = False
    for i, ln in enumerate(lines[1:], 1):
        if ln.startswith(key):
            lines[i] = key + b" " + value.encode()
            done = True
            break
    if not done:
        return append(block, [(name, value)])
    return b"\r\n".join(lines)


def parse_go_duration(text: str) -> int | None:
    """Go ``time.ParseDuration`` → ns, or None when it would fail."""
    try:
        return parse_duration(text)
    except ValueError:
        return None


def parse_msg_ttl(value: str) -> int:
    """``Nats-TTL`` → seconds (``-1`` for ``never``); raises 10165 when invalid."""
    if value.lower() == "never":
        return -1
    dur = parse_go_duration(value)
    if dur is not None:
        if dur < _SECOND:
            raise E.ttl_invalid()
        return dur // _SECOND
    if not value.isdigit():
        raise E.ttl_invalid()
    return int(value)
