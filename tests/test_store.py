"""One store test suite, run unchanged against MemoryStore and LmdbStore.

The semantics checked are those of nats-server 2.15's memory and file stores (``memstore.go``,
``filestore.go``); minijs/jetstream/store/base.py states the invariants.
"""
from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minijs.jetstream.store import (
    LmdbStore,
    MemoryStore,
    SequenceMismatchError,
    Store,
    StoreClosedError,
    StoredMessage,
    TooManyResultsError,
    file_msg_size,
    memory_msg_size,
    open_store,
    stream_store_path,
    subject_has_wildcard,
    subject_matches,
)

HDR = b"NATS/1.0\r\nX-H: 1\r\n\r\n"


# --------------------------------------------------------------------------------------------
# fixtures


class _Ctx:
    """Creates / reopens the store under test."""

    def __init__(self, kind: str, tmp_path):
        self.kind = kind
        self.path = tmp_path / "streams" / "S"
        self.store: Store | None = None

    def open(self) -> Store:
        if self.kind == "memory":
            self.store = MemoryStore()
        else:
            self.store = LmdbStore(self.path)
        return self.store

    def reopen(self) -> Store:
        """LMDB: close (flushes) and open the directory again. Memory: same object."""
        if self.kind == "memory":
            return self.store  # type: ignore[return-value]
        self.store.close()  # type: ignore[union-attr]
        return self.open()

    @property
    def size(self):
        return memory_msg_size if self.kind == "memory" else file_msg_size


@pytest.fixture(params=["memory", "lmdb"])
def ctx(request, tmp_path):
    c = _Ctx(request.param, tmp_path)
    c.open()
    yield c
    if not c.store.closed:
        c.store.close()


@pytest.fixture
def store(ctx):
    return ctx.store


@pytest.fixture
def lmdb_ctx(tmp_path):
    c = _Ctx("lmdb", tmp_path)
    c.open()
    yield c
    if not c.store.closed:
        c.store.close()


def fill(store, subjects, start_ts=1000):
    """Store one message per subject (payload = f'{subject}#{i}'), ts = start_ts + i."""
    out = []
    for i, subj in enumerate(subjects):
        seq, _ = store.store_msg(subj, None, f"{subj}#{i}".encode(), start_ts + i)
        out.append(seq)
    return out


def snapshot(store):
    st_ = store.state(deleted_details=True, subjects_filter=">")
    msgs = [store.load(s) for s in range(0, store.last_seq + 2)]
    return st_, msgs, store.iter_meta()


# --------------------------------------------------------------------------------------------
# basics


def test_protocol(store):
    assert isinstance(store, Store)
    assert store.storage in ("memory", "file")


def test_fresh_state(store):
    st_ = store.state()
    assert (st_.msgs, st_.bytes, st_.first_seq, st_.last_seq) == (0, 0, 0, 0)
    assert (st_.first_ts, st_.last_ts, st_.num_deleted, st_.num_subjects) == (0, 0, 0, 0)
    assert store.deleted() == []
    assert store.load(0) is None and store.load(1) is None
    assert store.load_next(0) is None and store.load_last() is None
    assert store.num_pending(0) == 0


def test_store_and_load(store):
    assert store.store_msg("a", None, b"one", 10) == (1, 10)
    assert store.store_msg("b", HDR, b"two", 11) == (2, 11)
    assert store.store_msg("c", b"", bytearray(b"three"), 12) == (3, 12)
    assert store.store_msg("d", None, memoryview(b"four"), 12, ttl=-1) == (4, 12)
    assert store.load(1) == StoredMessage(1, "a", None, b"one", 10, 0)
    assert store.load(2) == StoredMessage(2, "b", HDR, b"two", 11, 0)
    m3 = store.load(3)
    assert m3.hdr is None and m3.data == b"three" and type(m3.data) is bytes
    assert store.load(4).ttl == -1 and store.load(4).data == b"four"
    assert store.load(0) is None and store.load(5) is None
    st_ = store.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.first_ts, st_.last_ts) == (4, 1, 4, 10, 12)
    assert st_.num_subjects == 4
    assert store.subject_for_seq(2) == "b" and store.subject_for_seq(9) is None


def test_empty_payload(store):
    store.store_msg("kv.k", HDR, b"", 1)
    m = store.load(1)
    assert m.data == b"" and m.hdr == HDR


def test_explicit_seq(store):
    store.store_msg("a", None, b"", 1, seq=5)
    assert (store.first_seq, store.last_seq, store.msgs) == (5, 5, 1)
    store.store_msg("a", None, b"", 2, seq=8)
    assert store.deleted() == [6, 7] and store.num_deleted == 2
    with pytest.raises(SequenceMismatchError):
        store.store_msg("a", None, b"", 3, seq=8)
    assert store.store_msg("a", None, b"", 3)[0] == 9


# --------------------------------------------------------------------------------------------
# byte accounting (nats-server memStoreMsgSize / fileStoreMsgSize)


def test_byte_formulas():
    # verified against nats-server v2.15.1: file store
    assert 2 * file_msg_size("l4", None, b"x") == 66
    assert 5 * file_msg_size("c.0", None, b"m0") == 175
    assert file_msg_size("p.5", b"h" * 30, b"x") == 68
    # memory store: 16 + subject + headers + payload
    assert memory_msg_size("p.5", b"h" * 30, b"x") == 50
    assert memory_msg_size("m", None, b"x" * 41) == 58
    # lengths are UTF-8 bytes
    assert file_msg_size("é", None, b"") == 32
    assert memory_msg_size("é", None, b"") == 18


def test_bytes_tracking(ctx, store):
    size = ctx.size
    expect = {"memory": (2 * 19, 50), "lmdb": (66, 68)}[ctx.kind]
    store.store_msg("l4", None, b"x", 1)
    store.store_msg("l4", None, b"x", 2)
    assert store.bytes == expect[0] == 2 * store.msg_size("l4", None, b"x")
    store.store_msg("p.5", b"h" * 30, b"x", 3)
    assert store.bytes - expect[0] == expect[1] == size("p.5", b"h" * 30, b"x")
    assert store.size_of(3) == expect[1] and store.size_of(99) == 0
    store.remove(1)
    assert store.bytes == expect[0] // 2 + expect[1]
    assert store.purge() == 2
    assert store.bytes == 0
    # an empty header block is no header
    store.store_msg("l4", b"", b"x", 4)
    assert store.bytes == size("l4", None, b"x")


# --------------------------------------------------------------------------------------------
# removal, first_seq movement, deleted details


def test_remove_moves_first_seq(store):
    fill(store, ["a", "b", "c", "d", "e"])
    assert store.remove(1) is True
    assert store.remove(1) is False
    assert store.remove(42) is False
    assert (store.first_seq, store.first_ts, store.msgs, store.num_deleted) == (2, 1001, 4, 0)
    assert store.remove(3)  # interior gap
    st_ = store.state(deleted_details=True)
    assert (st_.first_seq, st_.last_seq, st_.num_deleted, st_.deleted) == (2, 5, 1, [3])
    assert store.state().deleted is None
    assert store.remove(2)  # first jumps over the gap
    assert (store.first_seq, store.num_deleted, store.deleted()) == (4, 0, [])
    assert store.remove(5)  # last removed: last_seq kept, gap at the end
    assert (store.first_seq, store.last_seq, store.last_ts) == (4, 5, 1004)
    assert store.remove(4)
    st_ = store.state(deleted_details=True)
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.first_ts, st_.last_ts) == (0, 6, 5, 0, 1004)
    assert st_.num_deleted == 0 and st_.deleted == [] and st_.num_subjects == 0
    assert store.store_msg("f", None, b"", 2000)[0] == 6
    assert (store.first_seq, store.first_ts) == (6, 2000)


def test_deleted_details_many_gaps(store):
    fill(store, ["a"] * 10)
    for s in (2, 3, 5, 9, 10):
        store.remove(s)
    st_ = store.state(deleted_details=True)
    assert (st_.first_seq, st_.last_seq, st_.msgs) == (1, 10, 5)
    # gaps at the end count too: last_seq stays 10
    assert st_.deleted == [2, 3, 5, 9, 10] and st_.num_deleted == 5


def test_skip_msgs(store):
    assert store.skip_msg(50) == 1
    assert (store.first_seq, store.last_seq, store.last_ts, store.msgs) == (2, 1, 50, 0)
    fill(store, ["a", "b"], start_ts=60)
    assert store.skip_msg(70) == 4
    assert (store.first_seq, store.last_seq, store.last_ts, store.num_deleted) == (2, 4, 70, 1)
    assert store.deleted() == [4]
    assert store.skip_msgs(3, ts=99) == 7
    assert store.last_ts == 70  # only set when it was 0
    assert store.store_msg("c", None, b"", 80)[0] == 8
    assert store.deleted() == [4, 5, 6, 7]


# --------------------------------------------------------------------------------------------
# purge (nats-server PurgeEx)


def test_purge_all(store):
    fill(store, ["a", "b", "c"])
    assert store.purge() == 3
    st_ = store.state()
    assert (st_.msgs, st_.bytes, st_.first_seq, st_.last_seq) == (0, 0, 4, 3)
    assert (st_.first_ts, st_.last_ts, st_.num_subjects) == (0, 1002, 0)
    assert store.load(1) is None and store.load_last("a") is None
    assert store.store_msg("a", None, b"", 5000)[0] == 4
    assert (store.first_seq, store.msgs) == (4, 1)


def test_purge_fresh_store(store):
    assert store.purge() == 0
    assert (store.first_seq, store.last_seq) == (1, 0)  # nats: FirstSeq = LastSeq + 1
    assert store.store_msg("a", None, b"", 1)[0] == 1


def test_purge_filter(store):
    fill(store, ["m.0", "m.1", "m.0", "x", "m.2", "m.0"])
    assert store.purge(subject="m.1") == 1
    assert store.purge(subject="nothing") == 0
    assert store.purge(subject="m.*") == 4
    assert [store.load(s) is not None for s in range(1, 7)] == [False] * 3 + [True, False, False]
    assert (store.first_seq, store.last_seq, store.msgs) == (4, 6, 1)
    assert store.subject_state(">") == {"x": 1}
    assert store.purge(subject=">", keep=0) == 1  # filter ">" alone is a full purge
    assert (store.first_seq, store.last_seq) == (7, 6)


def test_purge_filter_interior(store):
    fill(store, ["a", "b", "a", "b"])
    assert store.purge(subject="b") == 2
    st_ = store.state(deleted_details=True)
    assert (st_.first_seq, st_.last_seq, st_.deleted, st_.num_deleted) == (1, 4, [2, 4], 2)


def test_purge_seq(store):
    fill(store, ["a", "b", "a", "b", "a"])
    assert store.purge(seq=1) == 0  # up to but not including 1
    assert store.purge(seq=3) == 2
    assert (store.first_seq, store.msgs) == (3, 3)
    assert store.purge(seq=2) == 0  # already compacted past it
    assert store.purge(subject="a", seq=5) == 1  # removes a@3 only
    assert [s for s in range(1, 6) if store.load(s)] == [4, 5]
    assert store.purge(subject="a", seq=1) == 0


def test_purge_seq_past_end(store):
    fill(store, ["a", "b"])
    assert store.purge(seq=10) == 2
    assert (store.first_seq, store.last_seq, store.msgs, store.first_ts) == (10, 9, 0, 0)
    assert store.last_ts == 1001
    assert store.store_msg("a", None, b"", 1)[0] == 10
    assert store.purge(seq=11) == 1  # seq == last+1: plain purge
    assert (store.first_seq, store.last_seq) == (11, 10)


def test_purge_keep(store):
    fill(store, ["m.0", "m.1", "m.0", "m.0", "m.2", "m.0"])
    # filter m.0 keep 1: 3 of 4 purged (reference ✔)
    assert store.purge(subject="m.0", keep=1) == 3
    assert store.subject_state() == {"m.0": 1, "m.1": 1, "m.2": 1}
    assert store.last_seq_for_subject("m.0") == 6
    assert store.purge(subject="m.*", keep=5) == 0  # keep >= matching
    assert store.purge(keep=2) == 1  # no filter: keep newest 2 of the stream
    assert [s for s in range(1, 7) if store.load(s)] == [5, 6]
    assert store.first_seq == 5


def test_purge_keep_counts_messages_not_seqs(store):
    fill(store, ["a"] * 6)
    store.remove(5)
    assert store.purge(keep=3) == 2  # live 1,2,3,4,6 -> keep 3,4,6
    assert [s for s in range(1, 7) if store.load(s)] == [3, 4, 6]


def test_purge_keep_wildcard_order(store):
    fill(store, ["a.1", "a.2", "a.1", "a.3", "a.2", "b"])
    assert store.purge(subject="a.*", keep=2) == 3  # oldest matching across subjects
    assert [s for s in range(1, 7) if store.load(s)] == [4, 5, 6]


def test_compact_first_seq_config(store):
    # a stream created with first_seq: N starts empty at N, last_seq N-1
    assert store.compact(100) == 0
    assert (store.first_seq, store.last_seq, store.msgs) == (100, 99, 0)
    assert store.store_msg("a", None, b"", 1)[0] == 100
    fill(store, ["a", "b", "c"])
    assert store.compact(102) == 2
    assert (store.first_seq, store.msgs) == (102, 2)
    assert store.compact(0) == 2  # compact(0) purges
    assert (store.first_seq, store.last_seq) == (104, 103)


def test_compact_over_gap(store):
    fill(store, ["a"] * 6)
    store.remove(3)
    store.remove(4)
    assert store.compact(3) == 2
    assert (store.first_seq, store.num_deleted) == (5, 0)
    store.remove(6)
    assert store.compact(6) == 1  # nothing live >= 6: empty, first = last+1
    assert (store.first_seq, store.last_seq, store.msgs) == (7, 6, 0)


# --------------------------------------------------------------------------------------------
# per-subject index


SUBJECTS = ["kv.a", "kv.b", "other", "kv.a", "kv.c.d", "kv.b", "other", "kv.a"]
#            1       2       3        4       5         6       7        8


def test_last_and_first_by_subject(store):
    fill(store, SUBJECTS)
    assert store.load_last("kv.a").seq == 8
    assert store.load_last("kv.b").data == b"kv.b#5"
    assert store.load_last("kv.*").seq == 8
    assert store.load_last("kv.>").seq == 8
    assert store.load_last("*.c.*").seq == 5
    assert store.load_last("nope") is None and store.load_last("nope.*") is None
    assert store.load_last().seq == 8 and store.load_last(">").seq == 8
    assert store.msgs_for_subject("kv.a") == 3 and store.msgs_for_subject("kv") == 0
    assert store.first_seq_for_subject("kv.b") == 2
    assert store.first_seq_for_subject("zz") == 0
    assert store.last_seq_for_subject("kv.a", up_to_seq=7) == 4
    assert store.last_seq_for_subject("kv.*", up_to_seq=7) == 6
    assert store.last_seq_for_subject(">", up_to_seq=7) == 7
    assert store.last_seq_for_subject("kv.a", up_to_seq=0) == 0
    store.remove(8)
    assert store.load_last("kv.a").seq == 4
    assert store.load_last("kv.*").seq == 6
    # nats LoadLastMsg(">") only looks at last_seq; the precise lookup is last_seq_for_subject
    assert store.load_last(">") is None
    assert store.last_seq_for_subject(">") == 7


def test_load_next_filters(store):
    fill(store, SUBJECTS)
    assert store.load_next(0).seq == 1
    assert store.load_next(2, "kv.a").seq == 4
    assert store.load_next(5, "kv.a").seq == 8
    assert store.load_next(9, "kv.a") is None
    assert store.load_next(1, "kv.*").seq == 1
    assert store.load_next(3, "kv.*").seq == 4
    assert store.load_next(5, "kv.*").seq == 6
    assert store.load_next(5, "kv.>").seq == 5
    assert store.load_next(0, "*.c.>").seq == 5
    assert store.load_next(4, "other").seq == 7
    assert store.load_next(0, "nope.>") is None
    assert store.next_seq(3, "kv.b") == 6
    store.remove(4)
    assert store.load_next(2, "kv.a").seq == 8
    assert store.load_next(4).seq == 5


def test_wildcard_lookup_beyond_linear_probe(store):
    # many messages on other subjects between matches: exercises the per-subject index path
    store.store_msg("w.x", None, b"first", 1)
    for i in range(200):
        store.store_msg(f"noise.{i % 3}", None, b"", 2 + i)
    store.store_msg("w.y", None, b"second", 500)
    for i in range(100):
        store.store_msg("noise.0", None, b"", 600 + i)
    assert store.next_seq(2, "w.*") == 202
    assert store.next_seq(203, "w.*") is None
    assert store.last_seq_for_subject("w.*") == 202
    assert store.last_seq_for_subject("w.*", up_to_seq=150) == 1
    assert store.last_seq_for_subject("w.>", up_to_seq=0) == 0
    assert store.num_pending(2, "w.*") == 1
    assert store.load_last("*.x").data == b"first"


def test_subject_state(store):
    fill(store, SUBJECTS)
    assert store.subject_state() == {"kv.a": 3, "kv.b": 2, "kv.c.d": 1, "other": 2}
    assert list(store.subject_state(">")) == ["kv.a", "kv.b", "kv.c.d", "other"]
    assert store.subject_state("kv.*") == {"kv.a": 3, "kv.b": 2}
    assert store.subject_state("kv.>") == {"kv.a": 3, "kv.b": 2, "kv.c.d": 1}
    assert store.subject_state("*.*.d") == {"kv.c.d": 1}
    assert store.subject_state("other") == {"other": 2}
    assert store.subject_state("zzz.>") == {}
    st_ = store.state(subjects_filter="kv.*")
    assert st_.subjects == {"kv.a": 3, "kv.b": 2} and st_.num_subjects == 4
    store.purge(subject="kv.b")
    assert store.num_subjects == 3


def test_num_pending(store):
    fill(store, SUBJECTS)
    assert store.num_pending(0) == 8
    assert store.num_pending(1) == 8
    assert store.num_pending(4) == 5
    assert store.num_pending(9) == 0
    assert store.num_pending(0, "kv.a") == 3
    assert store.num_pending(5, "kv.a") == 1
    assert store.num_pending(0, "kv.*") == 5
    assert store.num_pending(3, "kv.>") == 4
    assert store.num_pending(6, "kv.>") == 2
    assert store.num_pending(0, "nope") == 0
    # last per subject: subjects matching whose last message is >= start
    assert store.num_pending(0, None, last_per_subject=True) == 4
    assert store.num_pending(6, ">", last_per_subject=True) == 3  # kv.a(8) kv.b(6) other(7)
    assert store.num_pending(8, ">", last_per_subject=True) == 1
    assert store.num_pending(0, "kv.*", last_per_subject=True) == 2
    assert store.num_pending(7, "kv.>", last_per_subject=True) == 1
    assert store.num_pending(0, "kv.a", last_per_subject=True) == 1
    assert store.num_pending(9, "kv.a", last_per_subject=True) == 0
    store.remove(1)
    store.remove(4)
    assert store.num_pending(0, "kv.a") == 1
    assert store.num_pending(2) == 6


def test_multi_last(store):
    fill(store, SUBJECTS)
    assert store.multi_last_seqs(["kv.>"]) == [5, 6, 8]
    assert store.multi_last_seqs(["kv.*", "other", "kv.a"]) == [6, 7, 8]
    assert store.multi_last_seqs([">"], up_to_seq=5) == [2, 3, 4, 5]
    assert store.multi_last_seqs(["nope"]) == []
    with pytest.raises(TooManyResultsError):
        store.multi_last_seqs([">"], max_allowed=3)
    assert store.multi_last_seqs([">"], max_allowed=4) == [5, 6, 7, 8]


# --------------------------------------------------------------------------------------------
# time


def test_seek_by_time(store):
    assert store.first_seq_at_or_after_time(5) == 1  # empty: last_seq + 1
    for i, ts in enumerate([10, 20, 20, 30, 40, 50]):
        store.store_msg("t", None, b"", ts)
    assert store.first_seq_at_or_after_time(0) == 1
    assert store.first_seq_at_or_after_time(10) == 1
    assert store.first_seq_at_or_after_time(11) == 2
    assert store.first_seq_at_or_after_time(20) == 2
    assert store.first_seq_at_or_after_time(21) == 4
    assert store.first_seq_at_or_after_time(50) == 6
    assert store.first_seq_at_or_after_time(51) == 7
    store.remove(4)
    store.remove(1)
    assert store.first_seq_at_or_after_time(25) == 5
    assert store.first_seq_at_or_after_time(5) == 2


def test_seek_by_time_large(store):
    for i in range(2000):
        store.store_msg("t", None, b"", 1000 + 3 * i)
    for s in range(100, 1900, 7):
        store.remove(s)
    live = [s for s in range(1, 2001) if store.load(s)]
    for t in (999, 1000, 1001, 1300, 1301, 1302, 2500, 6996, 6997, 7000):
        want = next((s for s in live if store.load(s).ts >= t), 2001)
        assert store.first_seq_at_or_after_time(t) == want


def test_max_age_expiry(store):
    store.store_msg("a", None, b"", 10)
    store.store_msg("b", None, b"", 20, ttl=-1)  # Nats-TTL: never
    store.store_msg("c", None, b"", 30)
    store.store_msg("d", None, b"", 40)
    assert store.next_expiration(max_age_ns=100) == 110
    assert store.expire_before(30, remove=False) == [1, 3]
    assert store.msgs == 4
    assert store.expire_before(30) == [1, 3]
    assert [s for s in range(1, 5) if store.load(s)] == [2, 4]
    assert store.first_seq == 2
    assert store.next_expiration(max_age_ns=100) == 140  # never-message skipped
    assert store.expire_before(1000) == [4]
    assert store.next_expiration(max_age_ns=100) is None


def test_ttl_expiry(store):
    s = 1_000_000_000
    store.store_msg("a", None, b"", 10 * s, ttl=5)
    store.store_msg("b", None, b"", 11 * s, ttl=1)
    store.store_msg("c", None, b"", 12 * s)
    store.store_msg("d", None, b"", 13 * s, ttl=2)
    assert store.next_expiration() == 12 * s
    assert store.expire_ttls(12 * s - 1) == []
    assert store.expire_ttls(15 * s, remove=False) == [1, 2, 4]
    assert store.expire_ttls(15 * s) == [1, 2, 4]
    assert store.msgs == 1 and store.next_expiration() is None
    store.store_msg("e", None, b"", 20 * s, ttl=3)
    store.remove(5)  # a removed message leaves the TTL index
    assert store.next_expiration() is None and store.expire_ttls(99 * s) == []


# --------------------------------------------------------------------------------------------
# limit primitives


def test_enforce_limits(store):
    fill(store, ["a", "b", "c", "d", "e"])
    assert store.enforce_limits(max_msgs=3) == [1, 2]
    assert (store.first_seq, store.msgs) == (3, 3)
    assert store.enforce_limits(-1, -1) == []
    one = store.size_of(5)
    assert store.enforce_limits(max_bytes=2 * one) == [3]
    assert store.enforce_limits(max_bytes=1) == [4, 5]
    assert (store.msgs, store.bytes, store.first_seq) == (0, 0, 6)


def test_enforce_per_subject_limit(store):
    fill(store, ["a", "b", "a", "a", "b", "a"])
    assert store.enforce_per_subject_limit("a", 2) == [1, 3]
    assert store.msgs_for_subject("a") == 2 and store.first_seq == 2
    assert store.enforce_per_subject_limit("b", 5) == []
    assert store.enforce_per_subject_limit("b", 0) == []  # 0 / -1: unlimited
    assert store.enforce_per_subject_limit("b", -1) == []
    assert store.enforce_per_subject_limit("b", 1) == [2]
    assert store.subject_state() == {"a": 2, "b": 1}


# --------------------------------------------------------------------------------------------
# metadata


def test_metadata(ctx, store):
    assert store.get_meta("config") is None
    store.put_meta("config", b'{"name":"S"}')
    store.put_meta("obs/c1", b"1")
    store.put_meta("obs/c2", b"2")
    store.put_meta("obsx", b"x")
    assert store.get_meta("config") == b'{"name":"S"}'
    assert store.iter_meta("obs/") == [("obs/c1", b"1"), ("obs/c2", b"2")]
    assert store.delete_meta("obs/c1") is True
    assert store.delete_meta("obs/c1") is False
    assert store.iter_meta("obs/") == [("obs/c2", b"2")]
    store.flush()
    store = ctx.reopen()
    assert store.iter_meta() == [("config", b'{"name":"S"}'), ("obs/c2", b"2"), ("obsx", b"x")]
    store.put_meta("obs/c2", b"22")
    store.delete_meta("obsx")
    assert store.iter_meta("obs") == [("obs/c2", b"22")]
    assert store.get_meta("obsx") is None
    for bad in ("", "k" * 512):
        with pytest.raises(ValueError):
            store.put_meta(bad, b"")
    store.put_meta("k" * 511, b"ok")
    assert store.get_meta("k" * 511) == b"ok"


def test_close_and_delete(ctx, store):
    fill(store, ["a"])
    store.close()
    assert store.closed
    with pytest.raises(StoreClosedError):
        store.store_msg("a", None, b"", 1)
    store.close()  # idempotent
    if ctx.kind == "lmdb":
        assert ctx.path.exists()
        s2 = LmdbStore(ctx.path)
        assert s2.msgs == 1
        s2.delete()
        assert not ctx.path.exists()


def test_open_store_helpers(tmp_path):
    p = stream_store_path(tmp_path, "ORDERS")
    assert p == tmp_path / "jetstream" / "$G" / "streams" / "ORDERS"
    m = open_store("memory")
    assert isinstance(m, MemoryStore)
    f = open_store("file", p, sync=False)
    assert isinstance(f, LmdbStore) and (p / "data.mdb").exists()
    f.close()
    with pytest.raises(ValueError):
        open_store("file")
    with pytest.raises(ValueError):
        open_store("tape")


def test_subject_matching():
    assert subject_matches(None, "a.b") and subject_matches(">", "a") and subject_matches("", "x")
    assert subject_matches("a.*", "a.b") and not subject_matches("a.*", "a.b.c")
    assert subject_matches("a.>", "a.b.c") and not subject_matches("a.>", "a")
    assert subject_matches("*.b.*", "x.b.y") and not subject_matches("*.b.*", "x.c.y")
    assert subject_matches("a", "a") and not subject_matches("a", "a.b")
    assert not subject_matches("a.*", "b.c") and not subject_matches("a.b.c", "a.b")
    assert subject_matches("a*.b", "a*.b") and not subject_matches("a*.b", "ax.b")
    assert subject_has_wildcard("a.*") and subject_has_wildcard(">")
    assert not subject_has_wildcard("a*.b>") and not subject_has_wildcard("a.b")
    assert subject_matches("a.b.>", "a.b.c.d") and not subject_matches("a.b.>", "a.bc.d")
    assert not subject_matches("a.b.>", "a.b") and not subject_matches("a.>", "ab.c")


_TOKENS = st.sampled_from(["a", "b", "ab", "*", ">", "", "a*"])


@given(st.lists(_TOKENS, min_size=1, max_size=5), st.lists(_TOKENS, min_size=1, max_size=6))
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_filter_matching_agrees_with_a_token_walk(ftoks, stoks):
    """Compiled filters (a trailing '>' as a prefix test, literals as equality) agree with the
    token-by-token rule: '*' one token, '>' at the end one or more, anything else literally."""
    filt, subject = ".".join(ftoks), ".".join(t for t in stoks if t not in ("*", ">"))

    def walk(ft, st_):
        for i, f in enumerate(ft):
            if f == ">":
                return len(st_) > i
            if i >= len(st_) or (f != "*" and f != st_[i]):
                return False
        return len(ft) == len(st_)

    is_wild = any(t in ("*", ">") for t in ftoks)
    expected = walk(ftoks, subject.split(".")) if is_wild else filt == subject
    if filt in ("", ">"):
        expected = True
    assert subject_matches(filt, subject) is expected


# --------------------------------------------------------------------------------------------
# LMDB: buffering, flush, recovery


def test_unflushed_writes_visible(lmdb_ctx):
    s = lmdb_ctx.store
    assert not s.pending_writes
    fill(s, ["a", "b", "a"])
    assert s.pending_writes
    assert s.load(2).data == b"b#1" and s.load_last("a").seq == 3 and s.load_next(2, "a").seq == 3
    s.flush()
    assert not s.pending_writes
    s.store_msg("c", None, b"new", 5000)
    s.remove(1)
    assert s.load(4).data == b"new" and s.load(1) is None and s.load(3).data == b"a#2"
    s.purge(subject="a")
    assert s.load(3) is None and s.msgs == 2
    s.put_meta("k", b"v")
    assert s.get_meta("k") == b"v"
    s = lmdb_ctx.reopen()
    assert [m.seq for m in map(s.load, range(1, 5)) if m] == [2, 4]
    assert s.get_meta("k") == b"v"


def test_flush_batching(lmdb_ctx):
    s = lmdb_ctx.store
    before = s.flushes
    for i in range(500):
        s.store_msg(f"b.{i % 7}", HDR if i % 2 else None, os.urandom(20), 1000 + i)
    s.remove(17)
    s.put_meta("cfg", b"x")
    s.flush()
    s.flush()  # nothing pending: no transaction
    assert s.flushes == before + 1
    want = snapshot(s)
    s = lmdb_ctx.reopen()
    assert snapshot(s) == want


def test_reopen_recovers_everything(lmdb_ctx):
    s = lmdb_ctx.store
    fill(s, ["o.1", "o.2", "o.1", "o.3", "o.2", "o.1", "p", "p"])
    s.store_msg("hdr", HDR, b"with headers", 2000, ttl=-1)
    s.store_msg("ttl", None, b"ttl", 3 * 10**9, ttl=7)
    s.flush()
    s.remove(3)
    s.purge(subject="o.2", keep=1)
    s.put_meta("config", b"{}")
    want = snapshot(s)
    s = lmdb_ctx.reopen()
    assert snapshot(s) == want
    assert s.next_expiration() == 10 * 10**9  # TTL index rebuilt
    assert s.load(9) == StoredMessage(9, "hdr", HDR, b"with headers", 2000, -1)
    # compaction and gaps survive
    s.compact(5)
    s.remove(10)
    want = snapshot(s)
    s = lmdb_ctx.reopen()
    assert snapshot(s) == want
    assert s.state().first_seq == 5 and s.state().last_seq == 10
    assert s.store_msg("q", None, b"", 4000)[0] == 11


def test_reopen_after_purges(lmdb_ctx):
    s = lmdb_ctx.store
    fill(s, ["a", "b", "c"])
    s.flush()
    s.purge()
    s = lmdb_ctx.reopen()
    st_ = s.state()
    assert (st_.msgs, st_.first_seq, st_.last_seq, st_.last_ts, st_.first_ts) == (0, 4, 3, 1002, 0)
    s.purge(seq=50)
    s = lmdb_ctx.reopen()
    assert (s.first_seq, s.last_seq) == (50, 49)
    assert s.store_msg("a", None, b"", 1)[0] == 50
    s.skip_msg(77)
    s = lmdb_ctx.reopen()
    assert (s.first_seq, s.last_seq, s.last_ts, s.deleted()) == (50, 51, 77, [51])
    s.remove(50)
    s = lmdb_ctx.reopen()
    assert (s.first_seq, s.last_seq, s.msgs) == (52, 51, 0)


def test_reopen_fresh_and_purged_empty(tmp_path):
    p = tmp_path / "s"
    LmdbStore(p).close()
    s = LmdbStore(p)
    assert (s.first_seq, s.last_seq) == (0, 0)
    s.purge()
    s.close()
    s = LmdbStore(p)
    assert (s.first_seq, s.last_seq) == (1, 0)
    s.close()


def test_purge_then_store_same_batch(lmdb_ctx):
    # purge, compaction and new writes buffered together commit in the right order
    s = lmdb_ctx.store
    fill(s, ["a"] * 5)
    s.flush()
    fill(s, ["b"] * 3, start_ts=2000)  # 6..8 unflushed
    s.compact(7)
    s.store_msg("c", None, b"c", 3000)
    s.purge()
    s.store_msg("d", None, b"d", 4000)
    s.store_msg("e", None, b"e", 4001)
    s.remove(10)
    want = snapshot(s)
    s = lmdb_ctx.reopen()
    assert snapshot(s) == want
    assert [m.subject for m in map(s.load, range(1, 12)) if m] == ["e"]


def test_compact_to_last_flushed(lmdb_ctx):
    s = lmdb_ctx.store
    fill(s, ["a"] * 5)
    s.flush()
    assert s.compact(5) == 4  # keeps the last flushed record on disk
    s = lmdb_ctx.reopen()
    assert (s.first_seq, s.last_seq, s.msgs, s.load(5).data) == (5, 5, 1, b"a#4")


def test_map_grows(tmp_path):
    s = LmdbStore(tmp_path / "g", map_size=256 * 1024, sync=False)
    blob = os.urandom(64 * 1024)
    for i in range(40):  # ~2.5 MiB in one transaction
        s.store_msg("big", None, blob, i + 1)
    s.flush()
    for i in range(40):
        s.store_msg("big", None, blob, 100 + i)
        if i % 10 == 9:
            s.flush()
    assert s.msgs == 80 and s.load(80).data == blob
    s.close()
    s = LmdbStore(tmp_path / "g", map_size=256 * 1024, sync=False)
    assert s.msgs == 80 and s.load(1).data == blob
    s.close()


# --------------------------------------------------------------------------------------------
# model-based test: random operations against a naive model of nats-server semantics


class Model:
    """A straightforward (O(n)) transcription of nats-server memstore semantics."""

    def __init__(self, size):
        self.size = size
        self.msgs: dict[int, tuple] = {}  # seq -> (subj, hdr, data, ts, ttl)
        self.first = 0
        self.last = 0
        self.last_ts = 0
        self.meta: dict[str, bytes] = {}

    def seqs(self):
        return sorted(self.msgs)

    def store(self, subj, hdr, data, ts, ttl):
        seq = self.last + 1
        if not self.msgs:
            self.first = seq
        self.msgs[seq] = (subj, hdr or None, data, ts, ttl)
        self.last, self.last_ts = seq, ts
        return seq

    def remove(self, seq):
        if seq not in self.msgs:
            return False
        del self.msgs[seq]
        if seq == self.first:
            nxt = [s for s in self.msgs if s > seq]
            self.first = min(nxt) if nxt else self.last + 1
        return True

    def purge_all(self):
        n = len(self.msgs)
        self.msgs.clear()
        self.first = self.last + 1
        return n

    def compact(self, seq):
        if seq == 0:
            return self.purge_all()
        if self.first > seq:
            return 0
        if seq <= self.last:
            victims = [s for s in self.msgs if s < seq]
            for s in victims:
                del self.msgs[s]
            live = self.seqs()
            self.first = live[0] if live else self.last + 1
            return len(victims)
        n = len(self.msgs)
        self.msgs.clear()
        self.first, self.last = seq, seq - 1
        return n

    def purge(self, subject, seq, keep):
        if seq == 1:
            return 0
        if subject in (None, "", ">"):
            if not keep and not seq:
                return self.purge_all()
            if seq > 1:
                return self.compact(seq)
            subject = ">"
        matching = [s for s in self.seqs() if subject_matches(subject, self.msgs[s][0])]
        if not matching:
            return 0
        maxp = 0
        if keep:
            if keep >= len(matching):
                return 0
            maxp = len(matching) - keep
        last = seq - 1 if seq > 1 else 1 << 64
        victims = [s for s in matching if s <= last]
        if maxp:
            victims = victims[:maxp]
        for s in victims:
            self.remove(s)
        return len(victims)

    def skip(self, ts):
        self.last += 1
        self.last_ts = ts
        if not self.msgs:
            self.first = self.last + 1

    def expire_before(self, cutoff):
        out = []
        for s in self.seqs():
            if self.msgs[s][3] > cutoff:
                break
            if self.msgs[s][4] >= 0:
                out.append(s)
        for s in out:
            self.remove(s)
        return out

    def expire_ttls(self, now):
        out = [s for s in self.seqs()
               if self.msgs[s][4] > 0 and self.msgs[s][3] + self.msgs[s][4] * 10**9 <= now]
        for s in out:
            self.remove(s)
        return out

    def enforce(self, max_msgs, max_bytes):
        out = []
        while max_msgs > 0 and len(self.msgs) > max_msgs:
            out.append(self.seqs()[0])
            self.remove(out[-1])
        while max_bytes > 0 and self.bytes() > max_bytes:
            out.append(self.seqs()[0])
            self.remove(out[-1])
        return out

    def bytes(self):
        return sum(self.size(m[0], m[1], m[2]) for m in self.msgs.values())

    def matching(self, flt, start=0):
        return [s for s in self.seqs() if s >= start and subject_matches(flt, self.msgs[s][0])]

    def seek(self, t):
        live = self.seqs()
        if not live:
            return self.last + 1
        return next((s for s in live if self.msgs[s][3] >= t), self.last + 1)


SUBJ_POOL = ["a", "a.b", "a.c", "a.b.c", "b.x", "b.y", "c"]
FILTERS = [None, ">", "a", "a.*", "a.>", "*.x", "b.*", "*", "a.b.c", "nope", "*.*.c", "*.>"]

# sequence arguments: absolute, or ("last", d) / ("first", d) resolved against the model state
seq_arg = st.one_of(
    st.integers(0, 45),
    st.tuples(st.sampled_from(["last", "first"]), st.integers(-2, 2)),
)


def resolve(v, model):
    if isinstance(v, tuple):
        base = model.last if v[0] == "last" else model.first
        return max(0, base + v[1])
    return v


store_op = st.tuples(st.just("store"), st.sampled_from(SUBJ_POOL), st.booleans(),
                    st.binary(max_size=6), st.integers(0, 3), st.sampled_from([0, 0, 0, -1, 1, 3]))

op_strategy = st.one_of(
    store_op,
    store_op,
    store_op,
    st.tuples(st.just("remove"), seq_arg),
    st.tuples(st.just("purge"), st.sampled_from(FILTERS + [None, None]),
              st.one_of(st.just(0), seq_arg), st.sampled_from([0, 0, 1, 2, 4])),
    st.tuples(st.just("compact"), seq_arg),
    st.tuples(st.just("skip"),),
    st.tuples(st.just("expire"), st.integers(0, 40)),
    st.tuples(st.just("ttl"), st.integers(0, 60)),
    st.tuples(st.just("limits"), st.integers(0, 8), st.sampled_from([0, 0, 150, 300])),
    st.tuples(st.just("persubj"), st.sampled_from(SUBJ_POOL), st.integers(1, 3)),
    st.tuples(st.just("meta"), st.sampled_from(["x", "y", "obs/1"]), st.binary(max_size=3)),
    st.tuples(st.just("flush"),),
    st.tuples(st.just("reopen"),),
)


def check_against_model(store, model: Model, clock: int):
    st_ = store.state(deleted_details=True, subjects_filter=">")
    live = model.seqs()
    assert st_.msgs == len(live)
    assert st_.bytes == model.bytes()
    assert st_.first_seq == model.first
    assert st_.last_seq == model.last and st_.last_ts == model.last_ts
    assert st_.first_ts == (model.msgs[live[0]][3] if live else 0)
    gaps = [s for s in range(model.first, model.last + 1) if s not in model.msgs] if live else []
    assert st_.deleted == gaps and st_.num_deleted == len(gaps)
    counts: dict[str, int] = {}
    for m in model.msgs.values():
        counts[m[0]] = counts.get(m[0], 0) + 1
    assert st_.subjects == (dict(sorted(counts.items())) if counts else {})
    assert st_.num_subjects == len(counts)
    for s in range(0, model.last + 2):
        m = store.load(s)
        if s in model.msgs:
            assert m == StoredMessage(s, *model.msgs[s])
        else:
            assert m is None
    for flt in FILTERS:
        every = model.matching(flt)
        for start in range(0, model.last + 2):
            after = [s for s in every if s >= start]
            assert store.next_seq(start, flt) == (after[0] if after else None)
            assert store.num_pending(start, flt) == len(after)
            lps = {model.msgs[s][0] for s in after}
            assert store.num_pending(start, flt, last_per_subject=True) == len(lps)
        for up in (None, 0, model.last // 2, model.last):
            below = [s for s in every if up is None or s <= up]
            assert store.last_seq_for_subject(flt, up) == (below[-1] if below else 0)
        if flt in (None, ">"):
            want_last = model.last if model.last in model.msgs else None
        else:
            want_last = every[-1] if every else None
        got = store.load_last(flt)
        assert (got.seq if got else None) == want_last
        sub = {}
        for s in every:
            sub[model.msgs[s][0]] = sub.get(model.msgs[s][0], 0) + 1
        assert store.subject_state(flt) == dict(sorted(sub.items()))
        for up in (0, model.last // 2):
            lim = up or model.last
            lasts = {}
            for s in every:
                if s <= lim:
                    lasts[model.msgs[s][0]] = s
            assert store.multi_last_seqs([flt], up) == sorted(lasts.values())
    for t in range(0, clock + 2):
        assert store.first_seq_at_or_after_time(t) == model.seek(t)
    assert store.iter_meta() == sorted(model.meta.items())


def tune(store, probe):
    # probe 1: force the index paths (wildcard fallbacks, per-subject num_pending sums)
    store._PROBE = probe
    store._SCAN_FACTOR = 0 if probe == 1 else 2


def run_model(store_factory, ops, size, probe):
    store, reopen = store_factory()
    tune(store, probe)
    model = Model(size)
    clock = 0
    for op in ops:
        kind = op[0]
        if kind == "store":
            _, subj, with_hdr, data, dt, ttl = op
            clock += dt
            seq, _ = store.store_msg(subj, HDR if with_hdr else None, data, clock, ttl=ttl)
            assert seq == model.store(subj, HDR if with_hdr else None, data, clock, ttl)
        elif kind == "remove":
            seq = resolve(op[1], model)
            assert store.remove(seq) == model.remove(seq)
        elif kind == "purge":
            _, flt, seq, keep = op
            seq = resolve(seq, model)
            assert store.purge(flt, seq, keep) == model.purge(flt, seq, keep)
        elif kind == "compact":
            seq = resolve(op[1], model)
            assert store.compact(seq) == model.compact(seq)
        elif kind == "skip":
            clock += 1
            assert store.skip_msg(clock) == model.last + 1
            model.skip(clock)
        elif kind == "expire":
            assert store.expire_before(op[1]) == model.expire_before(op[1])
        elif kind == "ttl":
            now = op[1] * 10**8
            assert store.expire_ttls(now) == model.expire_ttls(now)
        elif kind == "limits":
            _, mm, mb = op
            assert store.enforce_limits(mm, mb) == model.enforce(mm, mb)
        elif kind == "persubj":
            _, subj, mx = op
            victims = [s for s in model.seqs() if model.msgs[s][0] == subj]
            victims = victims[: max(0, len(victims) - mx)]
            for s in victims:
                model.remove(s)
            assert store.enforce_per_subject_limit(subj, mx) == victims
        elif kind == "meta":
            _, k, v = op
            if v:
                store.put_meta(k, v)
                model.meta[k] = v
            else:
                assert store.delete_meta(k) == (model.meta.pop(k, None) is not None)
        elif kind == "flush":
            store.flush()
            assert not store.pending_writes
        elif kind == "reopen":
            store = reopen(store)
            tune(store, probe)
        check_against_model(store, model, clock)
    if store.storage == "file":  # always finish with a recovery check
        store = reopen(store)
        check_against_model(store, model, clock)
    store.close()


model_ops = st.builds(
    lambda a, b: a + b, st.lists(store_op, min_size=1, max_size=15),
    st.lists(op_strategy, min_size=5, max_size=60),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=model_ops, probe=st.sampled_from([1, 32]))
def test_model_memory(ops, probe):
    run_model(lambda: (MemoryStore(), lambda s: s), ops, memory_msg_size, probe)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(ops=model_ops, probe=st.sampled_from([1, 32]))
def test_model_lmdb(ops, probe):
    with tempfile.TemporaryDirectory() as d:
        def factory():
            def reopen(s):
                s.close()
                return LmdbStore(d, sync=False)
            return LmdbStore(d, sync=False), reopen

        run_model(factory, ops, file_msg_size, probe)


# --------------------------------------------------------------------------------------------
# the index's shape: what the publish path relies on


def test_sequence_index_appends_across_splits(store):
    """A new last sequence is appended to the sequence index without SortedList.add; the
    index must stay a valid SortedList through its splits, with and without the positional
    index SortedList builds for bisection, and after removals and gaps."""
    live = []
    subjects = {}
    for i in range(1, 5001):
        seq, _ = store.store_msg(f"s.{i % 7}", None, b"x", 1000 + i)
        live.append(seq)
        subjects[seq] = f"s.{i % 7}"
        if i % 997 == 0:
            # bisect_left builds the positional index; the next appends must keep it right
            assert store.num_pending(live[len(live) // 2]) == len(live) - len(live) // 2
        if i % 1500 == 0:
            store.remove(live.pop(10))
            store.skip_msgs(3)
    store._seqs._check()
    store._bysubj.check()
    assert list(store._seqs) == live
    assert store._bysubj.pairs() == sorted((subjects[q], q) for q in live)
    assert store.num_pending(live[-100]) == 100
    assert store.next_seq(live[-1]) == live[-1]
    assert store.first_seq == live[0]


def test_index_entries_are_untracked_by_the_garbage_collector(store):
    """Stored messages must not make every full collection walk them: index entries are exact
    tuples of atomic values, which the collector stops tracking once it has seen them."""
    import gc

    fill(store, ["a", "b.c", "a"])
    store.store_msg("h", b"NATS/1.0\r\nA: b\r\n\r\n", b"p", 5000, ttl=5)
    gc.collect()
    assert all(type(e) is tuple for e in store._live.values())
    assert not any(gc.is_tracked(e) for e in store._live.values())
    sm = store.load(4)
    assert (sm.seq, sm.subject, sm.hdr, sm.data, sm.ts, sm.ttl) == (
        4, "h", b"NATS/1.0\r\nA: b\r\n\r\n", b"p", 5000, 5)
