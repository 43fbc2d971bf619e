"""The fast paths of the pull-consume hot path answer exactly as the general code does.

Covers the sublist's tail memo (subjects that leave the tree below a literal path, like ack
subjects), the parser's one-step PUB path, the store's ``next_seq``/``load_next`` shortcut and
the hand-written consumer state document.
"""
from __future__ import annotations

import json
import random

import pytest

from minijs.core.subjects import subject_matches
from minijs.core.sublist import Sublist, Subscription
from minijs.jetstream.store import open_store
from minijs.jetstream.store.base import subject_matches as filter_matches
from minijs.protocol.parser import (
    ERR_MAX_CONTROL_LINE,
    ERR_MAX_PAYLOAD,
    ERR_UNKNOWN_OP,
    OP_CLOSE,
    OP_PING,
    OP_PUB,
    Parser,
)

# --------------------------------------------------------------------------- sublist


def _expected(subs: list[Subscription], subject: bytes) -> list[int]:
    return sorted(id(s) for s in subs if subject_matches(s.subject, subject))


def _got(sl: Sublist, subject: bytes) -> list[int]:
    r = sl.match(subject)
    out = [id(s) for s in r.plain]
    for members in r.groups.values():
        out += [id(s) for s in members]
    return sorted(out)


def test_tail_memo_follows_inserts_and_removes():
    sl = Sublist()
    ack = Subscription(b"$JS.ACK.S.C.>")
    sl.insert(ack)
    subjects = [b"$JS.ACK.S.C.1.%d.%d.17.%d" % (i, i, 9 - i) for i in range(10)]
    for s in subjects:
        assert sl.match(s).plain == [ack]
    # A new subscription that matches some of them: the memo must not hide it.
    deeper = Subscription(b"$JS.ACK.S.C.1.3.>")
    sl.insert(deeper)
    assert set(sl.match(subjects[3]).plain) == {ack, deeper}
    assert sl.match(subjects[4]).plain == [ack]
    star = Subscription(b"$JS.*.S.C.>")
    sl.insert(star)
    assert set(sl.match(b"$JS.ACK.S.C.1.9.9.1.1").plain) == {ack, star}
    sl.remove(star)
    sl.remove(deeper)
    assert sl.match(b"$JS.ACK.S.C.1.3.3.1.1").plain == [ack]
    sl.remove(ack)
    assert not sl.match(b"$JS.ACK.S.C.1.5.5.1.1").plain


def test_tail_memo_queue_groups_and_root():
    sl = Sublist()
    q1 = Subscription(b"a.>", queue=b"q")
    q2 = Subscription(b"a.>", queue=b"q")
    full = Subscription(b">")
    for s in (q1, q2, full):
        sl.insert(s)
    r = sl.match(b"a.x.y")
    assert r.plain == [full] and sorted(map(id, r.groups[b"q"])) == sorted([id(q1), id(q2)])
    assert sl.match(b"zzz").plain == [full]  # the walk leaves the tree at the root
    assert sl.match(b"a").plain == [full] and not sl.match(b"a").groups


@pytest.mark.parametrize("seed", range(20))
def test_sublist_matches_brute_force_with_churn(seed):
    rnd = random.Random(seed)
    tokens = [b"a", b"b", b"c", b"$JS", b"ACK"]
    patterns = []
    for _ in range(40):
        n = rnd.randint(1, 5)
        toks = [rnd.choice(tokens + [b"*"]) for _ in range(n)]
        if rnd.random() < 0.4:
            toks[-1] = b">"
        patterns.append(b".".join(toks))
    subjects = []
    for _ in range(60):
        n = rnd.randint(1, 7)
        subjects.append(b".".join(rnd.choice(tokens + [b"x%d" % rnd.randint(0, 99)])
                                  for _ in range(n)))
    sl = Sublist()
    live: list[Subscription] = []
    for _ in range(300):
        op = rnd.random()
        if op < 0.25 or not live:
            sub = Subscription(rnd.choice(patterns), queue=rnd.choice([None, None, b"g"]))
            sl.insert(sub)
            live.append(sub)
        elif op < 0.4:
            sub = live.pop(rnd.randrange(len(live)))
            assert sl.remove(sub)
        else:
            s = rnd.choice(subjects)
            assert _got(sl, s) == _expected(live, s), s


# --------------------------------------------------------------------------- parser


def test_pub_fast_path_ops_and_leftovers():
    p = Parser()
    data = b"PUB a 2\r\nhi\r\nPUB b r 0\r\n\r\nPUB c 5\r\nhel"
    assert p.feed(data) == [(OP_PUB, b"a", None, b"hi"), (OP_PUB, b"b", b"r", b"")]
    assert p.feed(b"lo\r\nPI") == [(OP_PUB, b"c", None, b"hello")]
    assert p.feed(bytearray(b"NG\r\nPUB d 1\r\nx\r\n")) == [(OP_PING,), (OP_PUB, b"d", None, b"x")]
    assert p.feed(b"") == []


def test_pub_fast_path_falls_back_for_unusual_lines():
    # Several spaces, tabs, bare LF: the general path's answers.
    assert Parser().feed(b"PUB  a   r  2\r\nhi\r\n") == [(OP_PUB, b"a", b"r", b"hi")]
    assert Parser().feed(b"PUB\ta\t2\r\nhi\r\n") == [(OP_PUB, b"a", None, b"hi")]
    assert Parser().feed(b"PUB a 2\nhi\r\n") == [(OP_PUB, b"a", None, b"hi")]
    assert Parser().feed(b"PUB a 2\r\nhiX\r\n")[-1] == (OP_CLOSE, ERR_UNKNOWN_OP)
    assert Parser(max_payload=4).feed(b"PUB a 5\r\nhello\r\n") == [(OP_CLOSE, ERR_MAX_PAYLOAD)]
    long = b"PUB " + b"a" * 40 + b" 1\r\nx\r\n"
    assert Parser(max_control_line=16).feed(long) == [(OP_CLOSE, ERR_MAX_CONTROL_LINE)]
    assert Parser().feed(b"PUB a b c 1\r\nx\r\n") == [(OP_CLOSE, None)]
    assert Parser().feed(b"PUB a 1234567890\r\n") == [(OP_CLOSE, None)]


def test_pub_any_chunking_matches_one_feed():
    data = b"".join(b"PUB $JS.ACK.S.C.1.%d.%d.17.%d 0\r\n\r\n" % (i, i, 50 - i) for i in range(50))
    data += b"PUB x _INBOX.1 3\r\nabc\r\n"
    whole = Parser().feed(data)
    rnd = random.Random(7)
    for _ in range(20):
        p = Parser()
        ops, i = [], 0
        while i < len(data):
            n = rnd.randint(1, 90)
            ops += p.feed(data[i:i + n])
            i += n
        assert ops == whole


# --------------------------------------------------------------------------- store


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_load_next_shortcut_agrees_with_the_index(kind, tmp_path):
    store = open_store(kind) if kind == "memory" else open_store("file", tmp_path / "s")
    try:
        subjects = ["a.1", "b.1", "a.2", "a.1", "c"]
        for i in range(40):
            store.store_msg(subjects[i % len(subjects)], None, b"%d" % i, 1000 + i)
        store.remove(7)
        store.remove(8)
        store.flush()
        for flt in (None, ">", "a.1", "a.*", "a.>", "*.1", "c", "zz"):
            for start in range(-1, 45):
                want = next((q for q in range(max(start, 1), 41)
                             if store.subject_for_seq(q) is not None
                             and filter_matches(flt, store.subject_for_seq(q))), None)
                assert store.next_seq(start, flt) == want, (flt, start)
                sm = store.load_next(start, flt)
                assert (sm.seq if sm else None) == want, (flt, start)
                if sm:
                    assert sm.data == b"%d" % (sm.seq - 1) and sm.ts == 1000 + sm.seq - 1
    finally:
        store.close()


# --------------------------------------------------------------------------- consumer state


async def test_state_document_round_trips(tmp_path):
    from minijs import Server
    from minijs.jetstream.consumers.consumer import STATE_PREFIX, Consumer
    from minijs.jetstream.config.consumer import consumer_config_from_dict

    async with Server(port=0, jetstream=True, store_dir=str(tmp_path)) as server:
        from minijs.jetstream.config.stream import stream_config_from_dict

        engine = server.jetstream
        stream = engine.create_stream(stream_config_from_dict(
            {"name": "S", "subjects": ["s.>"], "storage": "file"}))
        for i in range(10):
            stream.store.store_msg(f"s.{i % 3}", None, b"x", 1_000_000_000 * (i + 1))
        cfg = consumer_config_from_dict({"durable_name": "d", "ack_policy": "explicit"})
        c = Consumer(stream, "d", cfg)
        c.dseq, c.sseq, c.acks.adflr, c.acks.asflr = 7, 9, 2, 3
        c.acks.pending = {4: [3, 5, 4_000_000_000], 6: [5, 6, 6_500_000_000],
                          8: [6, 7, 8_000_000_000]}
        c.acks.rdc = {4: 1, 6: 3}
        c.durable.write()
        doc = json.loads(stream.store.get_meta(STATE_PREFIX + "d"))
        assert doc["state"] == {"dseq": 7, "sseq": 9, "adflr": 2, "asflr": 3,
                                "pending": {"sseq": [4, 6, 8], "dseq": [3, 5, 6],
                                            "ts": [4_000_000_000, 6_500_000_000,
                                                   8_000_000_000]},
                                "rdc": [[6, 3]]}
        assert doc["name"] == "d" and doc["config"]["durable_name"] == "d"
        back = Consumer.restore(stream, doc)
        back.stop()
        assert (back.dseq, back.sseq, back.acks.adflr, back.acks.asflr) == (7, 9, 2, 3)
        assert sorted(back.pending) == [4, 6, 8]
        assert back.pending[6][0] == 5 and back.pending[6][2] == 6_000_000_000
        assert back.rdc[6] == 3 and back.rdc[4] == 1


@pytest.mark.parametrize("cache_bytes", [0, 600, 1 << 20])
def test_lmdb_recent_cache_reads_like_memory(cache_bytes, tmp_path):
    from minijs.jetstream.store.lmdbstore import LmdbStore

    rnd = random.Random(cache_bytes)
    lm = LmdbStore(tmp_path / "s", sync=False, recent_cache_bytes=cache_bytes)
    mem = open_store("memory")
    try:
        for step in range(600):
            op = rnd.random()
            if op < 0.6:
                subj, data = f"s.{rnd.randint(0, 3)}", bytes([rnd.randint(0, 255)]) * rnd.randint(0, 90)
                assert lm.store_msg(subj, None, data, step)[0] == mem.store_msg(subj, None, data, step)[0]
            elif op < 0.75 and mem.msgs:
                seq = rnd.randint(mem.first_seq, mem.last_seq)
                assert lm.remove(seq) == mem.remove(seq)
            elif op < 0.8:
                seq = rnd.randint(0, mem.last_seq + 2)
                assert lm.compact(seq) == mem.compact(seq)
            elif op < 0.82:
                assert lm.purge() == mem.purge()
            elif op < 0.95:
                lm.flush()
            for seq in range(max(1, mem.last_seq - 12), mem.last_seq + 2):
                assert lm.load(seq) == mem.load(seq), (step, seq)
        lm.flush()
        assert lm._recent_bytes <= max(cache_bytes, 0) or not lm._recent
        assert [lm.load(s) for s in range(1, mem.last_seq + 1)] == [
            mem.load(s) for s in range(1, mem.last_seq + 1)]
    finally:
        lm.close()
    assert lm._recent == {}


def test_lmdb_scan_reads_ahead_like_memory(tmp_path):
    """Without the recent cache, runs of loads (``load_run``, ``load_next`` on and on) read
    the records after the one asked for with one cursor; with removals, compactions, purges,
    new messages and commits in between, every load answers as the memory store does."""
    from minijs.jetstream.store.lmdbstore import READ_AHEAD, LmdbStore

    rnd = random.Random(7)
    lm = LmdbStore(tmp_path / "s", sync=False, recent_cache_bytes=0)
    mem = open_store("memory")
    looked_up = []
    try:
        for step in range(400):
            op = rnd.random()
            if op < 0.45:
                for _ in range(rnd.randint(1, 30)):
                    subj = f"s.{rnd.randint(0, 3)}"
                    data = bytes([rnd.randint(0, 255)]) * rnd.randint(0, 40)
                    assert lm.store_msg(subj, None, data, step)[0] == mem.store_msg(
                        subj, None, data, step)[0]
            elif op < 0.55 and mem.msgs:
                seq = rnd.randint(mem.first_seq, mem.last_seq)
                assert lm.remove(seq) == mem.remove(seq)
            elif op < 0.58:
                seq = rnd.randint(0, mem.last_seq + 2)
                assert lm.compact(seq) == mem.compact(seq)
            elif op < 0.6:
                assert lm.purge() == mem.purge()
            lm.flush()
            start = rnd.randint(0, mem.last_seq + 2)
            flt = rnd.choice([None, "s.1", "s.*"])
            limit = rnd.randint(1, 3 * READ_AHEAD)
            assert lm.load_run(start, limit, flt) == mem.load_run(start, limit, flt), step
            seq = start
            for _ in range(rnd.randint(0, 10)):
                sm = lm.load_next(seq)
                assert sm == mem.load_next(seq), (step, seq)
                if sm is None:
                    break
                seq = sm.seq + 1
        # A scan of committed messages: one lookup, then cursor steps.
        lm.flush()
        txn = lm._reader()
        lm._last_read = 0
        lm._ahead = {}

        class Counting:
            def get(self, *a, **kw):
                looked_up.append(a)
                return txn.get(*a, **kw)

            def cursor(self, *a, **kw):
                looked_up.append("cursor")
                return txn.cursor(*a, **kw)

        lm._rtxn = Counting()  # type: ignore[assignment]
        first = mem.first_seq
        got = lm.load_run(first, 2 * READ_AHEAD + 5)
        assert got == mem.load_run(first, 2 * READ_AHEAD + 5)
        assert len(got) > READ_AHEAD + 1
        assert len(looked_up) <= 1 + -(-len(got) // (READ_AHEAD + 1)) + 1, looked_up
        lm._rtxn = txn
    finally:
        lm.close()
    assert lm._ahead == {}
