"""A replicated stream's store: the leader's writes recorded, the followers' replayed.

A replicated stream replicates its **store**, not its publishes: on the leader the
:class:`~minijs.jetstream.streams.stream.Stream` runs exactly as on a single server (every
check of the publish path, dedup, limits, rollups, TTLs, consumer state) against a
:class:`RecordingStore`, which hands each mutation to the real store and records it. At the end
of the turn, where a single server commits its file stores, the recorded mutations of the turn
are proposed to the stream's Raft group as one entry, and the acks and consumer signals of that
turn wait for the entry to commit (:attr:`Stream.commit_gate`). Each follower replays the entry
on its own store (:func:`replay`), so every replica holds the same messages at the same
sequences and timestamps, and a follower that becomes leader starts its stream on its store as
a restarted single server does.

Invariants:

* replaying the leader's mutations in order on a store that held what the leader's held gives
  what the leader's holds (every mutation is a deterministic function of the store and its
  arguments; timestamps are arguments);
* ``raft/index`` in the store's metadata is the last Raft index the store reflects, written in
  the same commit as the writes of that index: an entry at or below it is never replayed again
  (a restart replays only what the store does not hold);
* a snapshot (:func:`dump`) and :func:`load` rebuild a store with the same sequences, gaps,
  first and last sequence and timestamp, and metadata.
"""
from __future__ import annotations

from typing import Any, Callable

#: The store methods that change a store; everything else only reads.
MUTATORS = ("store_msg", "skip_msg", "skip_msgs", "remove", "purge", "compact",
            "enforce_limits", "enforce_per_subject_limit", "expire_before", "expire_ttls",
            "put_meta", "delete_meta")
#: Store metadata: the last Raft index the store reflects.
INDEX_KEY = "raft/index"


class RecordingStore:
    """A store that records its mutations (the leader's side of a replicated stream).

    Reads go to the real store (``inner``); each mutation is applied to it, then appended to
    :attr:`ops` and reported once per batch through ``on_first`` (the replica asks for a
    flush at the end of the turn)."""

    def __init__(self, inner: Any, on_first: Callable[[], None]) -> None:
        self.inner = inner
        self.ops: list[tuple] = []
        self._on_first = on_first
        #: Proposals not yet known committed (their acks are waiting).
        self.in_flight = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _record(self, op: tuple) -> None:
        ops = self.ops
        ops.append(op)
        if len(ops) == 1:
            self._on_first()

    @property
    def pending_writes(self) -> bool:
        return bool(self.ops) or self.in_flight > 0 or self.inner.pending_writes

    def take(self) -> list[tuple]:
        ops, self.ops = self.ops, []
        return ops

    def store_msg(self, subject: str, hdr: bytes | None, data: bytes, ts: int, ttl: int = 0,
                  seq: int | None = None) -> tuple[int, int]:
        result = self.inner.store_msg(subject, hdr, data, ts, ttl, seq)
        self._record(("store_msg", subject, hdr, data, ts, ttl, result[0]))
        return result

    def store_run(self, subject: str, datas: list[bytes], stamps: list[int]) -> int:
        first = self.inner.last_seq + 1
        for data, ts in zip(datas, stamps):
            self.store_msg(subject, None, data, ts)
        return first

    def skip_msg(self, ts: int = 0) -> int:
        result = self.inner.skip_msg(ts)
        self._record(("skip_msg", ts))
        return result

    def skip_msgs(self, n: int, ts: int = 0) -> int:
        result = self.inner.skip_msgs(n, ts)
        self._record(("skip_msgs", n, ts))
        return result

    def remove(self, seq: int, erase: bool = False) -> bool:
        result = self.inner.remove(seq, erase)
        if result:
            self._record(("remove", seq, erase))
        return result

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        result = self.inner.purge(subject, seq, keep)
        self._record(("purge", subject, seq, keep))
        return result

    def compact(self, seq: int) -> int:
        result = self.inner.compact(seq)
        self._record(("compact", seq))
        return result

    def enforce_limits(self, max_msgs: int = -1, max_bytes: int = -1) -> list[int]:
        result = self.inner.enforce_limits(max_msgs, max_bytes)
        if result:
            self._record(("enforce_limits", max_msgs, max_bytes))
        return result

    def enforce_per_subject_limit(self, subject: str, max_msgs: int) -> list[int]:
        result = self.inner.enforce_per_subject_limit(subject, max_msgs)
        if result:
            self._record(("enforce_per_subject_limit", subject, max_msgs))
        return result

    def expire_before(self, cutoff_ns: int, remove: bool = True) -> list[int]:
        result = self.inner.expire_before(cutoff_ns, remove)
        if remove and result:
            self._record(("expire_before", cutoff_ns))
        return result

    def expire_ttls(self, now_ns: int, remove: bool = True) -> list[int]:
        result = self.inner.expire_ttls(now_ns, remove)
        if remove and result:
            self._record(("expire_ttls", now_ns))
        return result

    def put_meta(self, key: str, value: bytes) -> None:
        self.inner.put_meta(key, value)
        self._record(("put_meta", key, value))

    def delete_meta(self, key: str) -> bool:
        result = self.inner.delete_meta(key)
        if result:
            self._record(("delete_meta", key))
        return result


def replay(store: Any, ops: list[tuple]) -> None:
    """Apply the leader's recorded mutations to a follower's store."""
    for op in ops:
        name = op[0]
        if name == "store_msg":
            _, subject, hdr, data, ts, ttl, seq = op
            if seq > store.last_seq:
                store.store_msg(subject, hdr, data, ts, ttl, seq)
        elif name == "skip_msg":
            store.skip_msg(op[1])
        elif name == "skip_msgs":
            store.skip_msgs(op[1], op[2])
        elif name == "remove":
            store.remove(op[1], op[2])
        elif name == "purge":
            store.purge(op[1], op[2], op[3])
        elif name == "compact":
            store.compact(op[1])
        elif name == "enforce_limits":
            store.enforce_limits(op[1], op[2])
        elif name == "enforce_per_subject_limit":
            store.enforce_per_subject_limit(op[1], op[2])
        elif name == "expire_before":
            store.expire_before(op[1], True)
        elif name == "expire_ttls":
            store.expire_ttls(op[1], True)
        elif name == "put_meta":
            store.put_meta(op[1], op[2])
        elif name == "delete_meta":
            store.delete_meta(op[1])
        else:  # pragma: no cover - a new mutator without a replay is a bug
            raise ValueError(f"unknown store mutation {name!r}")


def dump(store: Any) -> dict[str, Any]:
    """Everything a store holds, for a replica that must start over (a Raft snapshot)."""
    msgs = []
    seq = store.first_seq
    while True:
        msg = store.load_next(max(seq, 1))
        if msg is None:
            break
        msgs.append((msg.seq, msg.subject, msg.hdr, msg.data, msg.ts, msg.ttl))
        seq = msg.seq + 1
    return {"first_seq": store.first_seq, "last_seq": store.last_seq, "last_ts": store.last_ts,
            "msgs": msgs, "meta": list(store.iter_meta(""))}


def load(store: Any, data: dict[str, Any]) -> None:
    """Fill an empty store from :func:`dump`."""
    first, last = data["first_seq"], data["last_seq"]
    msgs = data["msgs"]
    if first > 1 or (not msgs and last > 0):
        store.compact(msgs[0][0] if msgs else last + 1)
    for seq, subject, hdr, body, ts, ttl in msgs:
        store.store_msg(subject, hdr, body, ts, ttl, seq)
    if store.last_seq < last:
        store.skip_msgs(last - store.last_seq, data["last_ts"])
    for key, value in data["meta"]:
        store.put_meta(key, value)
