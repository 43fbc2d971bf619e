"""LMDB-backed message store (``storage: "file"``).

Layout: one LMDB environment per stream directory (by convention
``<store_dir>/jetstream/<account>/streams/<stream>/``, see
:func:`minijs.jetstream.store.stream_store_path`), holding ``data.mdb``/``lock.mdb`` and three
named databases:

* ``msgs``  — key: 8-byte big-endian sequence; value: msgpack ``[subject, hdr, data, ts, ttl]``;
* ``meta``  — key: UTF-8 string; value: bytes (stream config, consumer states, ...);
* ``state`` — one key ``b"state"``: msgpack ``[1, last_seq, last_ts, touched]`` — what cannot be
  derived from the messages (``last_seq``/``last_ts`` after deletes and purges, and whether the
  store was ever used, which decides ``first_seq`` of an empty store).

Everything else (live sequences, per-subject index, counts, bytes, TTL deadlines, deleted gaps)
is the in-memory index of :class:`~minijs.jetstream.store.base.IndexedStore`, rebuilt on open by
one cursor scan of ``msgs``. There is no persisted per-subject index: the in-memory one answers
every subject query, so a second LMDB database would only cost writes.

Writes are grouped: :meth:`store_msg`, :meth:`remove`, purges and metadata changes update the
in-memory index at once and are buffered; :meth:`flush` commits all of them in ONE write
transaction (``sync=True``: fsync on commit, so a flushed message survives ``kill -9``). Reads
always see buffered writes (buffered messages are served from the buffer; removed-but-unflushed
ones are already gone from the index). The stream sends pub acks only after ``flush()``. The
last few MiB of committed messages stay in memory too (``RECENT_CACHE_BYTES``), so consumers that
keep up with their publishers do not read them back from LMDB; one reading further back reads on
with a cursor (``READ_AHEAD`` records at a time) instead of looking each message up.

Map size: starts at ``map_size`` (address space only; the file grows with the data) and doubles
on ``MapFullError``, retrying the commit.

Byte accounting is nats-server's ``fileStoreMsgSize`` (see :func:`base.file_msg_size`).

One process, one instance per directory: LMDB forbids opening the same environment twice in a
process, so close a store before reopening it.
"""
from __future__ import annotations

import os
import shutil
import struct
from itertools import islice
from pathlib import Path
from typing import Any

import lmdb
import msgpack
from sortedcontainers import SortedDict, SortedList

from minijs.jetstream.store.subjectseqs import SubjectSeqs
from minijs.jetstream.store.base import (
    IndexedStore,
    StoreClosedError,
    StoredMessage,
    file_msg_size,
    new_stored_message,
)

__all__ = ["LmdbStore", "DEFAULT_MAP_SIZE"]

DEFAULT_MAP_SIZE = 1 << 30  # 1 GiB of address space; grows on demand
#: Committed messages stay readable from memory until this many bytes (``fileStoreMsgSize``)
#: were written after them, roughly: a consumer keeping up with its publishers reads what was
#: just stored without an LMDB read and a decode (nats-server's file store likewise serves
#: recent messages from the cache of its last block).
RECENT_CACHE_BYTES = 8 << 20
#: A read from LMDB of the sequence right after the last one read from LMDB (a consumer
#: reading on past the recent messages) reads this many records on with one cursor, kept
#: until the next such read: a scan costs one cursor step per message, not a lookup.
READ_AHEAD = 64
_NS = 1_000_000_000
_KEY = struct.Struct(">Q")
_pack_key = _KEY.pack
_unpack_key = _KEY.unpack
_unpackb = msgpack.unpackb
_STATE_KEY = b"state"
_STATE_VERSION = 1
_MISSING = object()


#: Index entry of a stored message (the payload stays in LMDB): a plain tuple
#: ``(subject, ts, ttl, size)``, untracked by the cyclic garbage collector once seen.
_Entry = tuple
_E_SIZE = 3


#: A message's LMDB record, packed from ``(subject, hdr, data, ts, ttl)``: the plain tuple the
#: store also keeps for buffered and recently committed messages (untracked by the cyclic
#: garbage collector once seen, unlike a ``StoredMessage``).
_packb = msgpack.Packer(use_bin_type=True).pack


class LmdbStore(IndexedStore):
    """A stream store in an LMDB environment at ``path`` (created if missing, else recovered)."""

    storage = "file"
    msg_size = staticmethod(file_msg_size)

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = DEFAULT_MAP_SIZE,
                 sync: bool = True, recent_cache_bytes: int = RECENT_CACHE_BYTES) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._env = lmdb.open(
            str(self.path), map_size=map_size, max_dbs=4, subdir=True, sync=sync,
            metasync=sync, lock=True, readahead=False, meminit=False,
        )
        self._db_msgs = self._env.open_db(b"msgs")
        self._db_meta = self._env.open_db(b"meta")
        self._db_state = self._env.open_db(b"state")
        self._max_key = self._env.max_key_size()
        self._rtxn: lmdb.Transaction[bytes] | None = None
        # buffered writes, committed by flush()
        self._pending: dict[int, tuple] = {}  # seq -> record tuple, seq order
        self._pending_del: set[int] = set()
        self._drop_below = 0  # delete every key < this
        self._pending_meta: dict[str, bytes | None] = {}
        self._pending_bytes = 0  # size of the messages in _pending
        self._dirty = False
        # committed messages still in memory (see RECENT_CACHE_BYTES); _recent_bytes counts
        # what was added since the cache was last emptied, removed messages included
        self._recent: dict[int, tuple] = {}  # seq -> record tuple
        self._recent_bytes = 0
        self._recent_max = recent_cache_bytes
        # records read ahead by a scan (READ_AHEAD): seq -> packed record
        self._ahead: dict[int, bytes] = {}
        self._last_read = 0  # the sequence last read from LMDB
        self.flushes = 0  #: number of committed write transactions (for tests/metrics)
        self._recover()

    # -- recovery --------------------------------------------------------------------------
    def _recover(self) -> None:
        live: dict[int, _Entry] = {}
        seqs: list[int] = []
        bysubj: list[tuple[str, int]] = []
        counts: dict[str, int] = {}
        ttls: list[tuple[int, int]] = []
        total = 0
        last_seq = last_ts = 0
        touched = False
        txn = self._env.begin(buffers=False)
        try:
            raw = txn.get(_STATE_KEY, db=self._db_state)
            if raw is not None:
                _ver, last_seq, last_ts, touched = msgpack.unpackb(raw)
            unpackb = msgpack.unpackb
            for k, v in txn.cursor(db=self._db_msgs):
                (seq,) = _unpack_key(k)
                subject, hdr, data, ts, ttl = unpackb(v)
                size = file_msg_size(subject, hdr, data)
                live[seq] = (subject, ts, ttl, size)
                seqs.append(seq)
                bysubj.append((subject, seq))
                counts[subject] = counts.get(subject, 0) + 1
                total += size
                if ttl > 0:
                    ttls.append((ts + ttl * _NS, seq))
        finally:
            txn.abort()
        self._live = live
        self._seqs = SortedList(seqs)
        self._bysubj = SubjectSeqs.from_pairs(bysubj)
        self._counts = SortedDict(counts)
        self._ttls = SortedList(ttls)
        self._bytes = total
        if seqs and seqs[-1] > last_seq:  # only without a state record
            last_seq, last_ts = seqs[-1], live[seqs[-1]][1]
        self._last_seq = last_seq
        self._last_ts = last_ts
        self._touched = bool(touched) or bool(seqs)

    # -- IndexedStore hooks ----------------------------------------------------------------
    def _new_entry(self, seq: int, subject: str, hdr: bytes | None, data: bytes, ts: int,
                   ttl: int, size: int) -> _Entry:
        self._pending[seq] = (subject, hdr, data, ts, ttl)
        self._pending_bytes += size
        self._dirty = True
        return (subject, ts, ttl, size)

    def _entry_size(self, entry: _Entry) -> int:
        return entry[_E_SIZE]

    def _fetch(self, seq: int, entry: _Entry) -> StoredMessage | None:
        rec = self._recent.get(seq)
        if rec is None:
            rec = self._pending.get(seq)
        if rec is not None:
            subject, hdr, data, ts, ttl = rec
            return new_stored_message(StoredMessage, (seq, subject, hdr, data, ts, ttl))
        raw = self._ahead.pop(seq, None) if self._ahead else None
        if raw is None:
            txn = self._rtxn
            if txn is None:
                txn = self._reader()
            if seq == self._last_read + 1:  # a scan: this record and the next ones
                cursor = txn.cursor(db=self._db_msgs)
                if cursor.set_key(_pack_key(seq)):
                    raw = cursor.value()
                    self._ahead = {_unpack_key(k)[0]: v for k, v in
                                   islice(cursor.iternext(), 1, READ_AHEAD + 1)}
                cursor.close()
            else:
                raw = txn.get(_pack_key(seq), db=self._db_msgs)
            if raw is None:  # pragma: no cover - index and data disagree
                return None
        self._last_read = seq
        _subject, hdr, data, ts, ttl = _unpackb(raw)
        return new_stored_message(StoredMessage, (seq, entry[0], hdr, data, ts, ttl))

    def _on_remove(self, seq: int) -> None:
        if self._recent:
            self._recent.pop(seq, None)
        if self._ahead:
            self._ahead.pop(seq, None)
        if self._pending.pop(seq, None) is None:
            self._pending_del.add(seq)
        self._dirty = True  # first_seq/"touched" changed even if nothing reaches the disk

    def _on_drop_below(self, seq: int) -> None:
        if seq > self._drop_below:
            self._drop_below = seq
        pending = self._pending
        if pending:
            gone = []
            for s in pending:
                if s >= seq:
                    break
                gone.append(s)
            for s in gone:
                del pending[s]
        if self._recent:
            self._recent = {s: sm for s, sm in self._recent.items() if s >= seq}
        self._ahead = {}
        if self._pending_del:
            self._pending_del = {s for s in self._pending_del if s >= seq}
        self._dirty = True

    def _on_state(self) -> None:
        self._dirty = True

    # -- reads -----------------------------------------------------------------------------
    def _reader(self) -> lmdb.Transaction[bytes]:
        """A read transaction reused until the next commit (sees everything committed)."""
        txn = self._rtxn
        if txn is None:
            if self._closed:
                raise StoreClosedError("store closed")
            txn = self._rtxn = self._env.begin(buffers=False)
        return txn

    def _drop_reader(self) -> None:
        if self._rtxn is not None:
            self._rtxn.abort()
            self._rtxn = None

    # -- metadata --------------------------------------------------------------------------
    def put_meta(self, key: str, value: bytes) -> None:
        if self._closed:
            raise StoreClosedError("store closed")
        if not key or len(key.encode()) > self._max_key:
            raise ValueError(f"metadata key must be 1..{self._max_key} bytes")
        self._pending_meta[key] = bytes(value)

    def get_meta(self, key: str) -> bytes | None:
        v = self._pending_meta.get(key, _MISSING)
        if v is not _MISSING:
            return v  # type: ignore[return-value]
        return self._reader().get(key.encode(), db=self._db_meta)

    def delete_meta(self, key: str) -> bool:
        existed = self.get_meta(key) is not None
        self._pending_meta[key] = None
        return existed

    def iter_meta(self, prefix: str = "") -> list[tuple[str, bytes]]:
        found: dict[str, bytes] = {}
        pb = prefix.encode()
        cur = self._reader().cursor(db=self._db_meta)
        if cur.set_range(pb):
            for k, v in cur:
                if not k.startswith(pb):
                    break
                found[k.decode()] = v
        for key, pv in self._pending_meta.items():
            if key.startswith(prefix):
                if pv is None:
                    found.pop(key, None)
                else:
                    found[key] = pv
        return sorted(found.items())

    # -- durability ------------------------------------------------------------------------
    @property
    def pending_writes(self) -> bool:
        return self._dirty or bool(self._pending_meta)

    def flush(self) -> None:
        """Commit every buffered write in one LMDB write transaction."""
        if not self.pending_writes:
            return
        if self._closed:
            raise StoreClosedError("store closed")
        self._drop_reader()
        while True:
            try:
                with self._env.begin(write=True) as txn:
                    self._commit(txn)
                break
            except lmdb.MapFullError:
                self._grow()
        if self._pending and self._recent_max > 0:
            self._recent_bytes += self._pending_bytes
            if self._recent_bytes > self._recent_max:
                # Start over with this batch (cheaper than tracking every message's size).
                if self._pending_bytes > self._recent_max:
                    self._recent, self._recent_bytes = {}, 0
                else:
                    self._recent, self._recent_bytes = self._pending, self._pending_bytes
            else:
                self._recent.update(self._pending)
        self._pending_bytes = 0
        self._pending = {}
        self._pending_del = set()
        self._drop_below = 0
        self._pending_meta = {}
        self._dirty = False
        self.flushes += 1

    def sync(self) -> None:
        """Force committed transactions to disk (opened with ``sync=False``, commits survive a
        killed process but not a power loss until this runs)."""
        if not self._closed:
            self._env.sync(True)

    def _commit(self, txn: lmdb.Transaction[bytes]) -> None:
        db = self._db_msgs
        if self._drop_below:
            wkey = _pack_key(self._drop_below)
            cur = txn.cursor(db=db)
            if cur.last():
                if cur.key() < wkey:
                    txn.drop(db, delete=False)
                elif cur.first():
                    while cur.key() < wkey:
                        if not cur.delete():
                            break
        for s in self._pending_del:
            txn.delete(_pack_key(s), db=db)
        if self._pending:
            cur = txn.cursor(db=db)
            cur.putmulti(
                ((_pack_key(s), _packb(rec)) for s, rec in self._pending.items()),
                append=True,
            )
        for k, v in self._pending_meta.items():
            kb = k.encode()
            if v is None:
                txn.delete(kb, db=self._db_meta)
            else:
                txn.put(kb, v, db=self._db_meta)
        txn.put(
            _STATE_KEY,
            msgpack.packb((_STATE_VERSION, self._last_seq, self._last_ts, self._touched)),
            db=self._db_state,
        )

    def _grow(self) -> None:
        size = self._env.info()["map_size"]
        self._env.set_mapsize(size * 2)

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._drop_reader()
            self._recent = {}
            self._ahead = {}
            self._closed = True
            try:
                self._env.sync(True)
            finally:
                self._env.close()

    def abandon(self) -> None:
        if self._closed:
            return
        self._pending = {}
        self._pending_del = set()
        self._pending_meta = {}
        self._pending_bytes = 0
        self._dirty = False
        self._drop_below = 0
        self._drop_reader()
        self._recent = {}
        self._ahead = {}
        self._closed = True
        self._env.close()

    def delete(self) -> None:
        if not self._closed:
            self._drop_reader()
            self._closed = True
            self._env.close()
        self._pending = {}
        self._pending_del = set()
        self._pending_meta = {}
        self._recent = {}
        self._ahead = {}
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> "LmdbStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
