"""Stream message stores: :class:`MemoryStore` (``storage: "memory"``) and :class:`LmdbStore`
(``storage: "file"``), both implementing :class:`Store`. See :mod:`.base` for the semantics.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from minijs.jetstream.store.base import (
    IndexedStore,
    SequenceMismatchError,
    Store,
    StoreClosedError,
    StoredMessage,
    StoreError,
    StreamState,
    TooManyResultsError,
    file_msg_size,
    memory_msg_size,
    subject_has_wildcard,
    subject_matches,
)
from minijs.jetstream.store.lmdbstore import LmdbStore
from minijs.jetstream.store.memory import MemoryStore

__all__ = [
    "IndexedStore",
    "LmdbStore",
    "MemoryStore",
    "SequenceMismatchError",
    "Store",
    "StoreClosedError",
    "StoreError",
    "StoredMessage",
    "StreamState",
    "TooManyResultsError",
    "file_msg_size",
    "memory_msg_size",
    "open_store",
    "stream_store_path",
    "subject_has_wildcard",
    "subject_matches",
]


def stream_store_path(store_dir: str | os.PathLike[str], stream: str, account: str = "$G") -> Path:
    """nats-server's layout: ``<store_dir>/jetstream/<account>/streams/<stream>``."""
    return Path(store_dir) / "jetstream" / account / "streams" / stream


def open_store(storage: str, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Store:
    """``"memory"`` → :class:`MemoryStore`; ``"file"`` → :class:`LmdbStore` at ``path``
    (created, or recovered if it exists; ``kwargs``: ``map_size``, ``sync``)."""
    if storage == "memory":
        return MemoryStore()
    if storage == "file":
        if path is None:
            raise ValueError("file storage needs a path")
        return LmdbStore(path, **kwargs)
    raise ValueError(f"unknown storage {storage!r}")
