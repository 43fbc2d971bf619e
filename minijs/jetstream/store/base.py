"""The stream message store: one interface, two implementations.

A store holds one stream's messages and answers the questions the stream, its consumers and the
API ask about them. It does *storage and the limit/state primitives*; everything that is policy
(dedup, discard new, retention, expected-* headers, rollups, subject delete markers, timers)
belongs to the ``Stream`` that owns the store. One asyncio event loop owns all state, so the API
is synchronous and nothing here takes a lock.

Implementations
---------------
* :class:`minijs.jetstream.store.memory.MemoryStore` — ``storage: "memory"``.
* :class:`minijs.jetstream.store.lmdbstore.LmdbStore` — ``storage: "file"``; one LMDB environment
  per stream directory. Writes are buffered and committed by :meth:`Store.flush` in one write
  transaction; reads always see buffered writes.

Both are built on :class:`IndexedStore` (below), which keeps the whole index in memory (live
sequences, a ``(subject, seq)`` index, per-subject counts, TTL deadlines) so that every query has
the same semantics in both stores; the subclasses only decide where payloads live.

Semantics follow nats-server 2.15 ``memstore.go`` / ``filestore.go``:

Sequences and state
    * ``last_seq`` is the last *assigned* sequence; it never goes back (kept after deletes/purges).
    * ``first_seq`` is the first live message. When the store is empty it is ``last_seq + 1``
      (after any purge/removal/skip), except for a brand-new store where it is ``0``
      (so a fresh stream reports ``first_seq:0, last_seq:0``; a purged one ``last+1``).
    * ``first_ts`` is the first live message's timestamp, ``0`` when empty; ``last_ts`` is the
      timestamp of the last stored message (kept after purges).
    * ``num_deleted`` = ``last_seq - first_seq + 1 - msgs`` (interior gaps); :meth:`deleted` lists
      them (computed on request, O(n)).

Byte accounting (``bytes``; clients do arithmetic on it, so these are exact)
    * memory store (``memStoreMsgSize``, memstore.go)::

          16 + len(subject) + len(hdr) + len(data)          # 8*2 for seq + ts

    * file store (``fileStoreMsgSize``, filestore.go)::

          30 + len(subject) + len(data)                     # no headers
          34 + len(subject) + len(hdr) + len(data)          # with headers
          # = rec len 4 + seq 8 + ts 8 + subj len 2 + subj (+ hdr len 4 + hdr) + msg + hash 8

      Both verified against nats-server v2.15.1 (2 msgs ``l4``/``x`` = 66,
      ``p.5`` + 30-byte header + 1-byte payload = 68; memory: 58-byte record). Lengths are in
      bytes (UTF-8 for the subject). An empty header block (``b""``) is stored as ``None``.

Purge (``PurgeEx`` in memstore.go / filestore.go)
    * ``purge()`` removes everything; ``first_seq = last_seq + 1``, ``first_ts = 0``,
      ``last_seq``/``last_ts`` kept.
    * ``seq == 1`` purges nothing (up to but not including 1).
    * no filter (or ``">"``) with ``seq > 1`` is :meth:`Store.compact`: removes everything below
      ``seq``; if ``seq > last_seq`` the store is emptied and restarts at ``seq``
      (``first_seq = seq, last_seq = seq - 1``).
    * filter (wildcards allowed) removes matching messages; with ``seq`` only those ``< seq``;
      with ``keep`` all but the newest ``keep`` matching (count-based). ``keep`` without filter
      keeps the newest ``keep`` messages of the stream.

Timestamps are ns since the epoch, supplied by the caller (the server clock) and assumed
non-decreasing in sequence order: seek-by-time bisects over sequences.

Message TTL (``ttl``, seconds): ``0`` none, ``> 0`` expires at ``ts + ttl s``, ``< 0`` means
``Nats-TTL: never`` (exempt from TTL *and* ``max_age``).

Metadata: a small key/value space (str → bytes) beside the messages for the stream config JSON,
consumer states etc.; in the LMDB store it is buffered and committed by the same ``flush()``.
"""
from __future__ import annotations

import builtins  # (annotations inside classes whose `bytes` is a member)
import heapq
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, NamedTuple, Protocol, runtime_checkable

from sortedcontainers import SortedDict, SortedList

from minijs.jetstream.store.subjectseqs import SubjectSeqs

__all__ = [
    "StoredMessage",
    "StreamState",
    "Store",
    "IndexedStore",
    "StoreError",
    "StoreClosedError",
    "SequenceMismatchError",
    "TooManyResultsError",
    "memory_msg_size",
    "file_msg_size",
    "subject_matches",
    "subject_has_wildcard",
]

#: positions in an index entry (``IndexedStore._live``): every entry starts with these
E_SUBJECT, E_TS, E_TTL = 0, 1, 2

#: a new count for a subject already in a ``SortedDict`` (its sorted key list stays as it is)
_dict_setitem = dict.__setitem__

#: larger than any sequence; used as an open upper bound in ``(subject, seq)`` index lookups
_BIG = 1 << 64
_NS = 1_000_000_000


class StoreError(Exception):
    """Base class for store errors."""


class StoreClosedError(StoreError):
    """The store was closed or deleted."""


class SequenceMismatchError(StoreError):
    """``store_msg(seq=...)`` with a sequence not after ``last_seq``."""


class TooManyResultsError(StoreError):
    """``multi_last_seqs`` matched more subjects than ``max_allowed``."""


class StoredMessage(NamedTuple):
    """One stored message. ``hdr`` is the full ``NATS/1.0`` header block or ``None``."""

    seq: int
    subject: str
    hdr: bytes | None
    data: bytes
    ts: int  #: ns since the epoch
    ttl: int = 0  #: seconds; 0 none, < 0 never expires (``Nats-TTL: never``)


#: ``new_stored_message(StoredMessage, (seq, subject, hdr, data, ts, ttl))``: the tuple
#: constructor without the generated ``__new__`` (half the cost, for the hot paths; all six
#: fields must be given).
new_stored_message = tuple.__new__


@dataclass(slots=True)
class StreamState:
    """Snapshot of a store's state (the store part of ``STREAM.INFO`` ``state``)."""

    msgs: int
    bytes: int
    first_seq: int
    first_ts: int  #: ns, 0 when empty
    last_seq: int
    last_ts: int  #: ns, 0 if nothing was ever stored
    num_deleted: int
    num_subjects: int
    deleted: list[int] | None = None  #: only with ``deleted_details``
    subjects: dict[str, int] | None = None  #: only with ``subjects_filter``


def _blen(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode())


def memory_msg_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    """nats-server ``memStoreMsgSize``: ``16 + len(subj) + len(hdr) + len(msg)``."""
    return 16 + _blen(subject) + (len(hdr) if hdr else 0) + len(data)


def file_msg_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    """nats-server ``fileStoreMsgSize``: ``30 + subj + msg``, or ``34 + subj + hdr + msg``."""
    if hdr:
        return 34 + _blen(subject) + len(hdr) + len(data)
    return 30 + _blen(subject) + len(data)


# --------------------------------------------------------------------------------------------
# subjects


def subject_has_wildcard(subject: str) -> bool:
    """True if a token of ``subject`` is ``*`` or ``>``."""
    if "*" not in subject and ">" not in subject:
        return False
    return any(t == "*" or t == ">" for t in subject.split("."))


def subject_matches(filter: str | None, subject: str) -> bool:
    """NATS matching of a literal ``subject`` against ``filter`` (``*`` one token, ``>`` rest).

    ``None``, ``""`` and ``">"`` match everything.
    """
    if not filter or filter == ">":
        return True
    return _compile(filter).match(subject)


def _tokens_match(ft: list[str], subject: str) -> bool:
    st = subject.split(".")
    n = len(st)
    for i, f in enumerate(ft):
        if f == ">":
            return n > i
        if i >= n:
            return False
        if f != "*" and f != st[i]:
            return False
    return len(ft) == n


_ALL, _LIT, _WILD = 0, 1, 2


class _Filter:
    """A pre-parsed subject filter."""

    __slots__ = ("kind", "text", "prefix", "tokens", "gt_only")

    def __init__(self, text: str | None):
        self.text = text
        self.tokens: list[str] = []
        self.prefix = ""
        #: the only wildcard is the last token, ``>`` (``orders.>``, ``$KV.b.>``): a subject
        #: matches when it starts with ``prefix`` (its literal tokens and their dots)
        self.gt_only = False
        if not text or text == ">":
            self.kind = _ALL
            return
        tokens = text.split(".")
        wild = [i for i, t in enumerate(tokens) if t == "*" or t == ">"]
        if not wild:
            self.kind = _LIT
            return
        self.kind = _WILD
        self.tokens = tokens
        # every matching subject starts with the literal tokens before the first wildcard
        first = wild[0]
        self.prefix = ".".join(tokens[:first]) + "." if first else ""
        self.gt_only = wild == [len(tokens) - 1] and tokens[-1] == ">"

    def match(self, subject: str) -> bool:
        kind = self.kind
        if kind == _WILD:
            if self.gt_only:
                return subject.startswith(self.prefix)
            return _tokens_match(self.tokens, subject)
        if kind == _LIT:
            return subject == self.text
        return True


_filter_cache: dict[str | None, _Filter] = {}


def _compile(text: str | None) -> _Filter:
    f = _filter_cache.get(text)
    if f is None:
        if len(_filter_cache) > 4096:
            _filter_cache.clear()
        f = _filter_cache[text] = _Filter(text)
    return f


# --------------------------------------------------------------------------------------------
# the interface


@runtime_checkable
class Store(Protocol):
    """What a ``Stream`` needs from its message store. All methods are synchronous.

    Reads never need a :meth:`flush`; durability does (LMDB). ``filter`` arguments are subject
    filters with ``*``/``>`` wildcards; ``None``/``""``/``">"`` mean all subjects.
    """

    storage: str  #: ``"memory"`` or ``"file"``

    # -- writing ---------------------------------------------------------------------------
    def store_msg(self, subject: str, hdr: bytes | None, data: bytes, ts: int, ttl: int = 0,
                  seq: int | None = None) -> tuple[int, int]:
        """Append a message; returns ``(seq, ts)``. ``seq`` (mirrors) must be > ``last_seq``;
        skipped sequences become deleted gaps. No limits are applied here."""

    def store_run(self, subject: str, datas: list[bytes], stamps: list[int]) -> int:
        """Append several messages on one subject, without headers or TTL, at the next
        sequences (``stamps`` their timestamps, in order); returns the first sequence. The
        same as :meth:`store_msg` for each, in one step."""

    def skip_msg(self, ts: int = 0) -> int:
        """Consume the next sequence without storing (interest retention with no interest).
        ``last_ts`` becomes ``ts`` when given. Returns the sequence."""

    def skip_msgs(self, n: int, ts: int = 0) -> int:
        """Consume ``n`` sequences; ``last_ts`` set to ``ts`` only if it was 0. Returns last_seq."""

    def remove(self, seq: int, erase: bool = False) -> bool:
        """Delete one message (MSG.DELETE; ``erase`` = secure erase, externally identical).
        False if it is not there."""

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        """``STREAM.PURGE`` semantics (see module doc). Returns the number purged."""

    def compact(self, seq: int) -> int:
        """Remove all messages below ``seq``; ``seq > last_seq`` restarts the store at ``seq``
        (use ``compact(cfg.first_seq)`` on a new stream). ``compact(0)`` purges."""

    def enforce_limits(self, max_msgs: int = -1, max_bytes: int = -1) -> list[int]:
        """Discard-old: remove oldest messages until ``msgs <= max_msgs`` and
        ``bytes <= max_bytes`` (``<= 0`` = unlimited). Returns removed seqs."""

    def enforce_per_subject_limit(self, subject: str, max_msgs: int) -> list[int]:
        """Remove ``subject``'s oldest messages until it has ``<= max_msgs`` (``<= 0`` =
        unlimited). Returns removed seqs."""

    def expire_before(self, cutoff_ns: int, remove: bool = True) -> list[int]:
        """max_age: seqs of messages with ``ts <= cutoff_ns`` (``ttl < 0`` exempt), ascending;
        removed unless ``remove=False`` (e.g. when subject delete markers are needed)."""

    def expire_ttls(self, now_ns: int, remove: bool = True) -> list[int]:
        """Per-message TTL: seqs whose ``ts + ttl`` is ``<= now_ns``, ascending; removed unless
        ``remove=False``."""

    def next_expiration(self, max_age_ns: int = 0) -> int | None:
        """Earliest ns time at which :meth:`expire_before`/:meth:`expire_ttls` would find
        something (None: nothing will ever expire). For the stream's timer."""

    # -- reading ---------------------------------------------------------------------------
    def load(self, seq: int) -> StoredMessage | None: ...

    def load_next(self, start_seq: int, filter: str | None = None) -> StoredMessage | None:
        """First message with ``seq >= start_seq`` matching ``filter``."""

    def load_run(self, start_seq: int, limit: int, filter: str | None = None
                 ) -> list[StoredMessage]:
        """Up to ``limit`` messages, in order, as :meth:`load_next` would give them one after
        another from ``start_seq`` (each from the sequence after the one before)."""

    def next_seq(self, start_seq: int, filter: str | None = None) -> int | None:
        """Like :meth:`load_next` but only the sequence (no payload read)."""

    def load_last(self, filter: str | None = None) -> StoredMessage | None:
        """Last message matching ``filter`` (nats ``LoadLastMsg``; for "all" it is the message
        at ``last_seq``, None if that one was deleted — a server quirk kept on purpose)."""

    def last_seq_for_subject(self, filter: str | None = None, up_to_seq: int | None = None) -> int:
        """Sequence of the last live message matching ``filter`` with ``seq <= up_to_seq``
        (0 if none)."""

    def first_seq_for_subject(self, subject: str) -> int:
        """First live sequence on a literal subject (0 if none)."""

    def msgs_for_subject(self, subject: str) -> int:
        """Live messages on a literal subject."""

    def subject_for_seq(self, seq: int) -> str | None: ...

    def size_of(self, seq: int) -> int:
        """Accounted bytes of a live message (0 if absent)."""

    def msg_size(self, subject: str, hdr: bytes | None, data: bytes) -> int:
        """Accounted bytes a message would take in this store."""

    def num_pending(self, start_seq: int, filter: str | None = None,
                    last_per_subject: bool = False) -> int:
        """Messages with ``seq >= start_seq`` matching ``filter``; with ``last_per_subject``
        the number of matching subjects whose last message is ``>= start_seq``."""

    def multi_last_seqs(self, filters: Iterable[str], up_to_seq: int = 0,
                        max_allowed: int = 0) -> list[int]:
        """Ascending last seq per subject matching any filter, ``<= up_to_seq`` (0 = last_seq).
        Raises :class:`TooManyResultsError` above ``max_allowed`` (> 0)."""

    def subject_state(self, filter: str | None = None) -> dict[str, int]:
        """Message count per subject matching ``filter``, sorted by subject."""

    def first_seq_at_or_after_time(self, ts_ns: int) -> int:
        """First sequence with ``ts >= ts_ns``; ``last_seq + 1`` if none or empty (nats
        ``GetSeqFromTime``, used for ``start_time``/``up_to_time``). O(log n). Unlike nats,
        when several messages share the newest timestamp the first of them is returned."""

    def state(self, deleted_details: bool = False,
              subjects_filter: str | None = None) -> StreamState: ...

    def deleted(self) -> list[int]:
        """Interior gaps between first_seq and last_seq, ascending."""

    # (read only: the store keeps its counters)
    @property
    def msgs(self) -> int: ...

    @property
    def bytes(self) -> int: ...

    @property
    def first_seq(self) -> int: ...

    @property
    def first_ts(self) -> int: ...

    @property
    def last_seq(self) -> int: ...

    @property
    def last_ts(self) -> int: ...

    @property
    def num_deleted(self) -> int: ...

    @property
    def num_subjects(self) -> int: ...

    # -- metadata --------------------------------------------------------------------------
    def put_meta(self, key: str, value: builtins.bytes) -> None: ...

    def get_meta(self, key: str) -> builtins.bytes | None: ...

    def delete_meta(self, key: str) -> bool: ...

    def iter_meta(self, prefix: str = "") -> list[tuple[str, builtins.bytes]]:
        """``(key, value)`` pairs whose key starts with ``prefix``, sorted by key."""

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def closed(self) -> bool: ...

    def flush(self) -> None:
        """Commit buffered writes (LMDB: one write transaction, fsync). Memory: no-op."""

    @property
    def pending_writes(self) -> bool: ...

    def close(self) -> None:
        """Flush and release resources."""

    def delete(self) -> None:
        """Close and remove all data (files)."""

    def abandon(self) -> None:
        """Release resources without committing buffered writes (a simulated crash: what was
        not yet committed is lost, as in a killed process)."""


# --------------------------------------------------------------------------------------------
# shared implementation


def _add_last(sl: SortedList, value: Any) -> None:
    """``sl.add(value)``, cheaper when ``value`` sorts after everything in ``sl`` (a new last
    sequence on every publish; its ``(subject, seq)`` on a stream's newest subject): appended
    to the last sublist, split where ``add`` would split it, skipping the bisection and the
    positional index update (taken through ``add`` while that index exists)."""
    lists = sl._lists
    if lists and not sl._index:
        last = lists[-1]
        if value > last[-1]:
            last.append(value)
            sl._maxes[-1] = value
            sl._len += 1
            if len(last) > sl._load << 1:
                sl._expand(len(lists) - 1)
            return
    sl.add(value)


def _extend_last(sl: SortedList, values: list[Any]) -> None:
    """:func:`_add_last` for several ascending values at once: appended to the last sublist
    (split as ``add`` would split it) when the first sorts after everything in ``sl``."""
    lists = sl._lists
    if lists and not sl._index and values[0] > lists[-1][-1]:
        last = lists[-1]
        last.extend(values)
        sl._maxes[-1] = values[-1]
        sl._len += len(values)
        limit = sl._load << 1
        while len(lists[-1]) > limit:
            sl._expand(len(lists) - 1)
        return
    for value in values:
        _add_last(sl, value)


class IndexedStore:
    """The shared in-memory index behind both stores.

    Structures (all O(log n) per update, no scans on the publish path):

    * ``_live``: ``seq -> entry``, a plain ``tuple`` whose first three items are the subject,
      ``ts`` and ``ttl`` (``E_SUBJECT``, ``E_TS``, ``E_TTL``); the memory store adds ``hdr`` and
      ``data``, the LMDB store the record size (the payload stays in LMDB). Entries are exact
      tuples, never a ``NamedTuple``: CPython's cyclic collector stops tracking a tuple of
      atomic values the first time it sees it, so a million stored messages add nothing to
      each full collection (a tuple subclass stays tracked and is walked every time);
    * ``_seqs``: ``SortedList`` of live sequences (first/next/seek by time);
    * ``_bysubj``: :class:`~minijs.jetstream.store.subjectseqs.SubjectSeqs`, each live
      subject's sequences — per-subject first/last/next/counts by bisection, at a cost that
      does not grow with the number of subjects;
    * ``_counts``: ``SortedDict`` subject -> live count (``num_subjects``, wildcard filters walk
      only the subjects sharing the filter's literal prefix);
    * ``_ttls``: ``SortedList`` of ``(expires_ns, seq)`` for messages with ``ttl > 0``.

    Subclasses implement ``msg_size``, ``_new_entry``, ``_entry_size``, ``_fetch`` and the
    persistence hooks ``_on_remove``/``_on_drop_below``/``_on_state``.
    """

    storage = ""
    #: linear probe length before a wildcard lookup falls back to the per-subject index
    _PROBE = 32
    #: num_pending scans the tail after ``start`` if it is at most this many times the number
    #: of subjects, else it sums per-subject counts
    _SCAN_FACTOR = 2

    def __init__(self) -> None:
        self._live: dict[int, Any] = {}
        #: one string object per live subject, shared by its messages (a stream of small
        #: messages on few subjects keeps one copy of each subject, not one per message)
        self._names: dict[str, str] = {}
        self._seqs = SortedList()
        self._bysubj = SubjectSeqs()
        self._counts = SortedDict()
        self._ttls = SortedList()
        self._bytes = 0
        self._last_seq = 0
        self._last_ts = 0
        self._touched = False  # False only for a store nothing ever happened to (first_seq 0)
        self._closed = False

    # -- subclass hooks --------------------------------------------------------------------
    @staticmethod
    def msg_size(subject: str, hdr: bytes | None, data: bytes) -> int:  # pragma: no cover
        raise NotImplementedError

    def _new_entry(self, seq: int, subject: str, hdr: bytes | None, data: bytes, ts: int,
                   ttl: int, size: int) -> tuple:  # pragma: no cover
        """The index entry of a message being stored: a plain tuple starting
        ``(subject, ts, ttl, ...)`` (see ``_live``)."""
        raise NotImplementedError

    def _entry_size(self, entry: tuple) -> int:  # pragma: no cover
        raise NotImplementedError

    def _fetch(self, seq: int, entry: tuple) -> StoredMessage | None:  # pragma: no cover
        raise NotImplementedError

    def _on_remove(self, seq: int) -> None:
        """A single message was removed."""

    def _on_drop_below(self, seq: int) -> None:
        """Every message below ``seq`` was removed."""

    def _on_state(self) -> None:
        """last_seq/last_ts/first_seq changed without a message write."""

    # -- state -----------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def msgs(self) -> int:
        return len(self._live)

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def first_seq(self) -> int:
        if self._live:
            return self._seqs[0]
        return self._last_seq + 1 if self._touched else 0

    @property
    def first_ts(self) -> int:
        if self._live:
            return self._live[self._seqs[0]][E_TS]
        return 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_ts(self) -> int:
        return self._last_ts

    @property
    def num_deleted(self) -> int:
        if not self._live:
            return 0
        return self._last_seq - self._seqs[0] + 1 - len(self._live)

    @property
    def num_subjects(self) -> int:
        return len(self._counts)

    def state(self, deleted_details: bool = False,
              subjects_filter: str | None = None) -> StreamState:
        st = StreamState(
            msgs=len(self._live), bytes=self._bytes, first_seq=self.first_seq,
            first_ts=self.first_ts, last_seq=self._last_seq, last_ts=self._last_ts,
            num_deleted=self.num_deleted, num_subjects=len(self._counts),
        )
        if deleted_details:
            st.deleted = self.deleted()
        if subjects_filter:
            st.subjects = self.subject_state(subjects_filter)
        return st

    def deleted(self) -> list[int]:
        out: list[int] = []
        if not self._live:
            return out
        prev = self._seqs[0] - 1
        for seq in self._seqs:
            if seq != prev + 1:
                out.extend(range(prev + 1, seq))
            prev = seq
        if prev < self._last_seq:
            out.extend(range(prev + 1, self._last_seq + 1))
        return out

    # -- writing ---------------------------------------------------------------------------
    def store_msg(self, subject: str, hdr: builtins.bytes | None, data: builtins.bytes, ts: int, ttl: int = 0,
                  seq: int | None = None) -> tuple[int, int]:
        if self._closed:
            raise StoreClosedError("store closed")
        if seq is None:
            seq = self._last_seq + 1
        elif seq <= self._last_seq:
            raise SequenceMismatchError(f"sequence {seq} <= last sequence {self._last_seq}")
        if not hdr:
            hdr = None
        elif type(hdr) is not bytes:
            hdr = bytes(hdr)
        if type(data) is not bytes:
            data = bytes(data) if data is not None else b""
        subject = self._names.setdefault(subject, subject)
        size = self.msg_size(subject, hdr, data)
        # the index (see the class docstring): every structure learns the new message
        self._live[seq] = self._new_entry(seq, subject, hdr, data, ts, ttl, size)
        _add_last(self._seqs, seq)
        self._bysubj.add_last(subject, seq)
        counts = self._counts
        c = counts.get(subject)
        if c is None:
            counts[subject] = 1
        else:  # a known subject: SortedDict's key list does not change
            _dict_setitem(counts, subject, c + 1)
        self._bytes += size
        if ttl > 0:
            self._ttls.add((ts + ttl * _NS, seq))
        self._last_seq = seq
        self._last_ts = ts
        self._touched = True
        return seq, ts

    def store_run(self, subject: str, datas: list[builtins.bytes], stamps: list[int]) -> int:
        if self._closed:
            raise StoreClosedError("store closed")
        subject = self._names.setdefault(subject, subject)
        first = self._last_seq + 1
        seqs = range(first, first + len(datas))
        base = self.msg_size(subject, None, b"")  # a message's size is this plus its data
        live = self._live
        new_entry = self._new_entry
        total = 0
        for seq, data, ts in zip(seqs, datas, stamps):
            size = base + len(data)
            live[seq] = new_entry(seq, subject, None, data, ts, 0, size)
            total += size
        _extend_last(self._seqs, list(seqs))
        self._bysubj.extend_last(subject, list(seqs))
        counts = self._counts
        c = counts.get(subject)
        if c is None:
            counts[subject] = len(datas)
        else:
            _dict_setitem(counts, subject, c + len(datas))
        self._bytes += total
        self._last_seq = seqs[-1]
        self._last_ts = stamps[-1]
        self._touched = True
        return first

    def _unindex(self, seq: int, from_seqs: bool = True) -> Any:
        entry = self._live.pop(seq)
        if from_seqs:
            self._seqs.remove(seq)
        subject = entry[E_SUBJECT]
        self._bysubj.remove(subject, seq)
        c = self._counts[subject]
        if c == 1:
            del self._counts[subject]
            self._names.pop(subject, None)
        else:
            _dict_setitem(self._counts, subject, c - 1)
        self._bytes -= self._entry_size(entry)
        ttl = entry[E_TTL]
        if ttl > 0:
            self._ttls.discard((entry[E_TS] + ttl * _NS, seq))
        self._touched = True
        return entry

    def _remove(self, seq: int) -> None:
        self._unindex(seq)
        self._on_remove(seq)

    def _clear(self) -> int:
        n = len(self._live)
        self._live = {}
        self._names = {}
        self._seqs = SortedList()
        self._bysubj = SubjectSeqs()
        self._counts = SortedDict()
        self._ttls = SortedList()
        self._bytes = 0
        self._touched = True
        return n

    def skip_msg(self, ts: int = 0) -> int:
        if self._closed:
            raise StoreClosedError("store closed")
        self._last_seq += 1
        if ts:
            self._last_ts = ts
        self._touched = True
        self._on_state()
        return self._last_seq

    def skip_msgs(self, n: int, ts: int = 0) -> int:
        if self._closed:
            raise StoreClosedError("store closed")
        if n > 0:
            self._last_seq += n
            if ts and not self._last_ts:
                self._last_ts = ts
            self._touched = True
            self._on_state()
        return self._last_seq

    def remove(self, seq: int, erase: bool = False) -> bool:
        if seq not in self._live:
            return False
        self._remove(seq)
        return True

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        seq = seq or 0
        keep = keep or 0
        if seq == 1:
            return 0
        f = _compile(subject)
        if f.kind == _ALL:
            if not keep and not seq:
                return self._purge_all()
            if seq > 1:
                return self.compact(seq)
        total = self.num_pending(0, subject)
        if total == 0:
            return 0
        maxp = 0
        if keep > 0:
            if keep >= total:
                return 0
            maxp = total - keep
        last = seq - 1 if seq > 1 else _BIG
        it = self._iter_matching_seqs(f, 0, last)
        victims = list(itertools.islice(it, maxp) if maxp else it)
        for s in victims:
            self._remove(s)
        return len(victims)

    def _purge_all(self) -> int:
        n = self._clear()
        self._on_drop_below(self._last_seq + 1)
        return n

    def compact(self, seq: int) -> int:
        if seq <= 0:
            return self._purge_all()
        if self.first_seq > seq:
            return 0
        if seq <= self._last_seq:
            idx = self._seqs.bisect_left(seq)
            if idx == 0:
                return 0
            victims = list(self._seqs.islice(0, idx))
            del self._seqs[:idx]
            for s in victims:
                self._unindex(s, from_seqs=False)
            self._on_drop_below(seq)
            return len(victims)
        n = self._clear()
        old_last = self._last_seq
        self._last_seq = seq - 1
        self._on_drop_below(old_last + 1)
        self._on_state()
        return n

    def enforce_limits(self, max_msgs: int = -1, max_bytes: int = -1) -> list[int]:
        removed: list[int] = []
        if max_msgs is not None and max_msgs > 0:
            while len(self._live) > max_msgs:
                s = self._seqs[0]
                self._remove(s)
                removed.append(s)
        if max_bytes is not None and max_bytes > 0:
            while self._bytes > max_bytes and self._live:
                s = self._seqs[0]
                self._remove(s)
                removed.append(s)
        return removed

    def enforce_per_subject_limit(self, subject: str, max_msgs: int) -> list[int]:
        removed: list[int] = []
        if max_msgs is None or max_msgs <= 0:
            return removed
        while self._counts.get(subject, 0) > max_msgs:
            s = self.first_seq_for_subject(subject)
            self._remove(s)
            removed.append(s)
        return removed

    def expire_before(self, cutoff_ns: int, remove: bool = True) -> list[int]:
        out: list[int] = []
        live = self._live
        for seq in self._seqs:
            e = live[seq]
            if e[E_TS] > cutoff_ns:
                break
            if e[E_TTL] < 0:
                continue
            out.append(seq)
        if remove:
            for s in out:
                self._remove(s)
        return out

    def expire_ttls(self, now_ns: int, remove: bool = True) -> list[int]:
        out = sorted(s for _, s in self._ttls.irange(maximum=(now_ns, _BIG)))
        if remove:
            for s in out:
                self._remove(s)
        return out

    def next_expiration(self, max_age_ns: int = 0) -> int | None:
        nxt = self._ttls[0][0] if self._ttls else None
        if max_age_ns and max_age_ns > 0:
            live = self._live
            for seq in self._seqs:
                e = live[seq]
                if e[E_TTL] >= 0:
                    t = e[E_TS] + max_age_ns
                    if nxt is None or t < nxt:
                        nxt = t
                    break
        return nxt

    # -- reading ---------------------------------------------------------------------------
    def load(self, seq: int) -> StoredMessage | None:
        e = self._live.get(seq)
        if e is None:
            return None
        return self._fetch(seq, e)

    def subject_for_seq(self, seq: int) -> str | None:
        e = self._live.get(seq)
        return None if e is None else e[E_SUBJECT]

    def size_of(self, seq: int) -> int:
        e = self._live.get(seq)
        return 0 if e is None else self._entry_size(e)

    def msgs_for_subject(self, subject: str) -> int:
        return self._counts.get(subject, 0)

    def _subject_next(self, subject: str, start: int) -> int:
        return self._bysubj.next(subject, start)

    def _subject_last(self, subject: str, up_to: int) -> int:
        return self._bysubj.last(subject, up_to)

    def first_seq_for_subject(self, subject: str) -> int:
        if subject not in self._counts:
            return 0
        return self._subject_next(subject, 0)

    def _subjects(self, f: _Filter) -> Iterator[str]:
        """Subjects (with live messages) matching ``f``, sorted."""
        counts = self._counts
        if f.kind == _ALL:
            yield from counts.keys()
        elif f.kind == _LIT:
            if f.text in counts:
                yield f.text  # type: ignore[misc]
        else:
            prefix = f.prefix
            it = counts.irange(minimum=prefix) if prefix else iter(counts.keys())
            tokens = f.tokens
            for subj in it:
                if prefix and not subj.startswith(prefix):
                    break
                if _tokens_match(tokens, subj):
                    yield subj

    def _iter_matching_seqs(self, f: _Filter, start: int, last: int) -> Iterator[int]:
        """Ascending live seqs in ``[start, last]`` matching ``f``."""
        if f.kind == _ALL:
            return iter(self._seqs.irange(start, last))
        bysubj = self._bysubj
        if f.kind == _LIT:
            return bysubj.between(f.text, start, last)  # type: ignore[arg-type]
        runs = [list(bysubj.between(s, start, last)) for s in self._subjects(f)]
        if len(runs) == 1:
            return iter(runs[0])
        return heapq.merge(*runs)

    def next_seq(self, start_seq: int, filter: str | None = None) -> int | None:
        live = self._live
        if not live:
            return None
        start = max(start_seq, 1)
        f = _compile(filter)
        # Fast path (a consumer reading on): the start sequence itself is live and matches.
        e = live.get(start)
        if e is not None:
            kind = f.kind
            if kind == _ALL or (e[E_SUBJECT] == f.text if kind == _LIT
                                else f.match(e[E_SUBJECT])):
                return start
        if f.kind == _ALL:
            for q in self._seqs.irange(minimum=start):
                return q
            return None
        if f.kind == _LIT:
            return self._subject_next(f.text, start) or None  # type: ignore[arg-type]
        # wildcard: short linear probe, then the per-subject index
        n = 0
        for q in self._seqs.irange(minimum=start):
            if f.match(live[q][E_SUBJECT]):
                return q
            n += 1
            if n >= self._PROBE:
                start = q + 1
                break
        else:
            return None
        best = 0
        for subj in self._subjects(f):
            q = self._subject_next(subj, start)
            if q and (not best or q < best):
                best = q
        return best or None

    def load_next(self, start_seq: int, filter: str | None = None) -> StoredMessage | None:
        # Fast path, as in next_seq: the start sequence itself is live and matches.
        e = self._live.get(start_seq)
        if e is not None:
            f = _compile(filter)
            kind = f.kind
            if kind == _ALL or (e[E_SUBJECT] == f.text if kind == _LIT
                                else f.match(e[E_SUBJECT])):
                return self._fetch(start_seq, e)
        q = self.next_seq(start_seq, filter)
        return None if q is None else self.load(q)

    def load_run(self, start_seq: int, limit: int, filter: str | None = None
                 ) -> list[StoredMessage]:
        # load_next repeated, its fast path (the next sequence is live and matches) inlined
        out: list[StoredMessage] = []
        live = self._live
        f = _compile(filter)
        kind = f.kind
        text = f.text
        fetch = self._fetch
        seq = start_seq
        while len(out) < limit:
            e = live.get(seq)
            if e is not None and (kind == _ALL or (e[E_SUBJECT] == text if kind == _LIT
                                                   else f.match(e[E_SUBJECT]))):
                sm = fetch(seq, e)
            else:
                sm = self.load_next(seq, filter)
            if sm is None:
                break
            out.append(sm)
            seq = sm.seq + 1
        return out

    def last_seq_for_subject(self, filter: str | None = None, up_to_seq: int | None = None) -> int:
        if not self._live:
            return 0
        hi = _BIG if up_to_seq is None else up_to_seq
        f = _compile(filter)
        if f.kind == _ALL:
            for q in self._seqs.irange(maximum=hi, reverse=True):
                return q
            return 0
        if f.kind == _LIT:
            return self._subject_last(f.text, hi)  # type: ignore[arg-type]
        live = self._live
        n = 0
        for q in self._seqs.irange(maximum=hi, reverse=True):
            if f.match(live[q][E_SUBJECT]):
                return q
            n += 1
            if n >= self._PROBE:
                hi = q - 1
                break
        else:
            return 0
        best = 0
        for subj in self._subjects(f):
            q = self._subject_last(subj, hi)
            if q > best:
                best = q
        return best

    def load_last(self, filter: str | None = None) -> StoredMessage | None:
        f = _compile(filter)
        if f.kind == _ALL:
            # nats-server LoadLastMsg(">") loads the message at state.LastSeq only.
            return self.load(self._last_seq)
        q = self.last_seq_for_subject(filter)
        return self.load(q) if q else None

    def num_pending(self, start_seq: int, filter: str | None = None,
                    last_per_subject: bool = False) -> int:
        if not self._live:
            return 0
        first = self._seqs[0]
        start = max(start_seq, first)
        if start > self._last_seq:
            return 0
        f = _compile(filter)
        bysubj = self._bysubj
        if f.kind == _ALL and not last_per_subject:
            if start <= first:
                return len(self._live)
            return len(self._seqs) - self._seqs.bisect_left(start)
        if f.kind == _LIT:
            c = self._counts.get(f.text)
            if not c:
                return 0
            if start > first:
                c = bysubj.count_from(f.text, start)  # type: ignore[arg-type]
            return min(c, 1) if last_per_subject else c
        if last_per_subject and start <= first:
            return sum(1 for _ in self._subjects(f))
        if start > first:
            tail = len(self._seqs) - self._seqs.bisect_left(start)
            if tail <= self._SCAN_FACTOR * len(self._counts):
                # few messages after start (a consumer near the end): scan them
                live = self._live
                match = f.match
                tail_subjects = (live[q][E_SUBJECT] for q in self._seqs.irange(minimum=start))
                if last_per_subject:
                    return len({s for s in tail_subjects if match(s)})
                return sum(1 for s in tail_subjects if match(s))
        total = 0
        counts = self._counts
        for subj in self._subjects(f):
            if start <= first:
                total += counts[subj]
            elif last_per_subject:
                if self._subject_last(subj, _BIG) >= start:
                    total += 1
            else:
                total += bysubj.count_from(subj, start)
        return total

    def multi_last_seqs(self, filters: Iterable[str], up_to_seq: int = 0,
                        max_allowed: int = 0) -> list[int]:
        if not self._live:
            return []
        hi = up_to_seq or self._last_seq
        seen: set[int] = set()
        for flt in filters:
            for subj in self._subjects(_compile(flt)):
                q = self._subject_last(subj, hi)
                if q:
                    seen.add(q)
            if max_allowed and len(seen) > max_allowed:
                raise TooManyResultsError("too many results")
        return sorted(seen)

    def subject_state(self, filter: str | None = None) -> dict[str, int]:
        counts = self._counts
        return {s: counts[s] for s in self._subjects(_compile(filter))}

    def first_seq_at_or_after_time(self, ts_ns: int) -> int:
        if not self._live:
            return self._last_seq + 1
        seqs, live = self._seqs, self._live
        if ts_ns <= live[seqs[0]][E_TS]:
            return seqs[0]
        if ts_ns > live[seqs[-1]][E_TS]:
            return self._last_seq + 1
        lo, hi = 0, len(seqs) - 1  # invariant: ts(seqs[hi]) >= ts_ns
        while lo < hi:
            mid = (lo + hi) // 2
            if live[seqs[mid]][E_TS] >= ts_ns:
                hi = mid
            else:
                lo = mid + 1
        return seqs[lo]

    # -- metadata and lifecycle: subclasses ------------------------------------------------
    def put_meta(self, key: str, value: builtins.bytes) -> None:  # pragma: no cover
        raise NotImplementedError

    def get_meta(self, key: str) -> builtins.bytes | None:  # pragma: no cover
        raise NotImplementedError

    def delete_meta(self, key: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    def iter_meta(self, prefix: str = "") -> list[tuple[str, builtins.bytes]]:  # pragma: no cover
        raise NotImplementedError

    def flush(self) -> None:
        return None

    @property
    def pending_writes(self) -> bool:
        return False

    def close(self) -> None:
        self._closed = True

    def delete(self) -> None:
        self._closed = True

    def abandon(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} msgs={self.msgs} bytes={self._bytes} "
                f"first={self.first_seq} last={self._last_seq}>")
