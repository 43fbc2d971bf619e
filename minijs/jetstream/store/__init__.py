"""Stream message stores: :class:`MemoryStore` (``storage: "memory"``) and :class:`LmdbStore`
(``storage: "file"``), both implementing :class:`Store`. See :mod:`.base` for the semantics.
"""
from __future__ import annotations

import os
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

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

#: Names imported from their module on first use (PEP 562), so a server with no stream yet
#: pays for neither the stores nor lmdb, msgpack and sortedcontainers.
_LAZY = {
    "IndexedStore": "base",
    "SequenceMismatchError": "base",
    "Store": "base",
    "StoreClosedError": "base",
    "StoredMessage": "base",
    "StoreError": "base",
    "StreamState": "base",
    "TooManyResultsError": "base",
    "file_msg_size": "base",
    "memory_msg_size": "base",
    "subject_has_wildcard": "base",
    "subject_matches": "base",
    "LmdbStore": "lmdbstore",
    "MemoryStore": "memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
    from pathlib import Path

    return Path(store_dir) / "jetstream" / account / "streams" / stream


def open_store(storage: str, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Store:
    """``"memory"`` → :class:`MemoryStore`; ``"file"`` → :class:`LmdbStore` at ``path``
    (created, or recovered if it exists; ``kwargs``: ``map_size``, ``sync``)."""
    if storage == "memory":
        from minijs.jetstream.store.memory import MemoryStore

        return MemoryStore()
    if storage == "file":
        if path is None:
            raise ValueError("file storage needs a path")
        from minijs.jetstream.store.lmdbstore import LmdbStore

        return LmdbStore(path, **kwargs)
    raise ValueError(f"unknown storage {storage!r}")
