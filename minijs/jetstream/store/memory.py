"""In-memory message store (``storage: "memory"``).

Messages live in the shared index of :class:`~minijs.jetstream.store.base.IndexedStore`: the
index entry is the whole message as a plain tuple ``(subject, ts, ttl, hdr, data)`` (the
sequence is its key), which the cyclic garbage collector stops tracking once it has seen it;
reads build the :class:`StoredMessage`. Byte accounting is nats-server's
``memStoreMsgSize``: ``16 + len(subject) + len(hdr) + len(data)``.
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from minijs.jetstream.store.base import (IndexedStore, StoredMessage, memory_msg_size,
                                         new_stored_message)

__all__ = ["MemoryStore"]


class MemoryStore(IndexedStore):
    """A stream store kept entirely in memory. ``flush()`` is a no-op."""

    storage = "memory"
    msg_size = staticmethod(memory_msg_size)
    #: nothing is ever buffered (a class attribute: read on every publish)
    pending_writes = False

    def __init__(self) -> None:
        super().__init__()
        self._meta: SortedDict = SortedDict()

    def _new_entry(self, seq: int, subject: str, hdr: bytes | None, data: bytes, ts: int,
                   ttl: int, size: int) -> tuple:
        return (subject, ts, ttl, hdr, data)

    def _entry_size(self, entry: tuple) -> int:
        return memory_msg_size(entry[0], entry[3], entry[4])

    def _fetch(self, seq: int, entry: tuple) -> StoredMessage:
        subject, ts, ttl, hdr, data = entry
        return new_stored_message(StoredMessage, (seq, subject, hdr, data, ts, ttl))

    # -- metadata --------------------------------------------------------------------------
    def put_meta(self, key: str, value: bytes) -> None:
        # same limit as LMDB keys, so code behaves the same on both stores
        if not key or len(key.encode()) > 511:
            raise ValueError("metadata key must be 1..511 bytes")
        self._meta[key] = bytes(value)

    def get_meta(self, key: str) -> bytes | None:
        return self._meta.get(key)

    def delete_meta(self, key: str) -> bool:
        return self._meta.pop(key, None) is not None

    def iter_meta(self, prefix: str = "") -> list[tuple[str, bytes]]:
        out = []
        for k in self._meta.irange(minimum=prefix):
            if not k.startswith(prefix):
                break
            out.append((k, self._meta[k]))
        return out

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self._closed = True

    def delete(self) -> None:
        self._clear()
        self._meta.clear()
        self._closed = True
