"""Atomic batch publish (``allow_atomic``: ``Nats-Batch-Id`` / ``-Sequence`` / ``-Commit``) and
counters (``allow_msg_counter``: ``Nats-Incr``, ``Nats-Counter-Sources``), as nats-server 2.12+
serves them on a single server: staged messages answered with empty replies, all-or-nothing
storage at the commit, the commit's ``batch``/``count`` ack, every refusal, counter values as
arbitrary-precision integers, the ``val`` of the pub ack, counters sourced into a counter.

The cases on the shared server use memory streams: nats-server removes the account's
``streams`` directory in a goroutine when its last file stream is deleted, so a file stream
created right after (the next case, once this file's cleanup emptied the account) sometimes
fails with 10049 ``error creating store for stream``. File storage is covered by the restart
case, on its own server."""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from conformance.helpers import SpawnFn
from conformance.jshelpers import JsClient, header_block, unique_name, wait_for

H = header_block
BID = "Nats-Batch-Id"
BSEQ = "Nats-Batch-Sequence"
COMMIT = "Nats-Batch-Commit"
INCR = "Nats-Incr"


def ack_error(stream: str, code: int, err_code: int, description: str) -> bytes:
    return (f'{{"error":{{"code":{code},"err_code":{err_code},"description":"{description}"}},'
            f'"stream":"{stream}","seq":0}}').encode()


def reply(js: JsClient, subject: str, data: bytes = b"", *hdrs: tuple[str, str]) -> bytes:
    """Publish with headers; the reply payload (checked to be a plain message)."""
    m = js.publish(subject, data, H(*hdrs) if hdrs else None)
    assert m.header is None or m.header == b"", m.frame
    return m.data


def stage(js: JsClient, subject: str, batch: str, seq: int, data: bytes = b"",
          *hdrs: tuple[str, str]) -> None:
    """A staged batch message: its reply is an empty message."""
    assert reply(js, subject, data, (BID, batch), (BSEQ, str(seq)), *hdrs) == b""


def commit(js: JsClient, subject: str, batch: str, seq: int, data: bytes = b"",
           *hdrs: tuple[str, str], how: str = "1") -> bytes:
    return reply(js, subject, data, (BID, batch), (BSEQ, str(seq)), *hdrs, (COMMIT, how))


def stored(js: JsClient, stream: str, seq: int) -> tuple[str, bytes, bytes]:
    out = js.msg_get(stream, {"seq": seq})
    assert "message" in out, out
    m = out["message"]
    return m["subject"], base64.b64decode(m.get("hdrs", "")), base64.b64decode(m.get("data", ""))


def last_seq(js: JsClient, stream: str) -> int:
    return js.state(stream)["last_seq"]


# ============================================================================ atomic batches


def test_js_batch_commit_stores_everything_at_once(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    """Staged messages get empty replies and are not stored; the commit stores all of them
    with their headers as sent and is acked with ``batch`` and ``count``."""
    p = stream_name.lower()
    out = js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True)
    assert out["config"]["allow_atomic"] is True
    assert out["config"]["metadata"]["_nats.req.level"] == "2"
    stage(js, f"{p}.a", "b1", 1, b"one")
    stage(js, f"{p}.b", "b1", 2, b"two")
    assert js.state(stream_name)["messages"] == 0
    ack = commit(js, f"{p}.c", "b1", 3, b"three")
    assert ack == f'{{"stream":"{stream_name}","seq":3,"batch":"b1","count":3}}'.encode()
    assert stored(js, stream_name, 1) == (f"{p}.a", H((BID, "b1"), (BSEQ, "1")), b"one")
    assert stored(js, stream_name, 3) == (
        f"{p}.c", H((BID, "b1"), (BSEQ, "3"), (COMMIT, "1")), b"three")
    # a batch of one, and plain publishes keep working beside batches
    assert commit(js, f"{p}.a", "b2", 1, b"solo") == (
        f'{{"stream":"{stream_name}","seq":4,"batch":"b2","count":1}}'.encode())
    assert reply(js, f"{p}.a", b"plain") == f'{{"stream":"{stream_name}","seq":5}}'.encode()
    info = js.info(stream_name)
    assert info["config"]["allow_atomic"] is True and info["state"]["messages"] == 5


def test_js_batch_eob_commit_is_not_stored(target: str, js: JsClient, stream_name: str) -> None:
    """``Nats-Batch-Commit: eob`` ends the batch without being stored: the last staged
    message is stored with ``Nats-Batch-Commit: 1`` added; an eob as first message is
    refused."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_atomic=True, storage="memory")
    stage(js, f"{p}.a", "e", 1, b"one")
    stage(js, f"{p}.a", "e", 2, b"two")
    ack = commit(js, f"{p}.a", "e", 3, b"marker", how="eob")
    assert ack == f'{{"stream":"{stream_name}","seq":2,"batch":"e","count":2}}'.encode()
    assert stored(js, stream_name, 2) == (f"{p}.a", H((BID, "e"), (BSEQ, "2"), (COMMIT, "1")),
                                          b"two")
    assert js.state(stream_name)["messages"] == 2
    assert commit(js, f"{p}.a", "e1", 1, how="eob") == ack_error(
        stream_name, 400, 10176, "atomic publish batch is incomplete")
    assert js.state(stream_name)["messages"] == 2


def test_js_batch_refusals(target: str, js: JsClient, stream_name: str) -> None:
    """Missing or invalid sequence, first sequence not 1, too large, invalid commit, too long
    id; a gap discards the whole batch. Nothing of a refused batch is stored."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True)
    s = f"{p}.a"
    err = lambda code, text: ack_error(stream_name, 400, code, text)  # noqa: E731
    assert reply(js, s, b"", (BID, "x")) == err(10175, "atomic publish sequence is missing")
    assert reply(js, s, b"", (BID, "x"), (BSEQ, "abc")) == err(
        10175, "atomic publish sequence is missing")
    assert reply(js, s, b"", (BID, "x"), (BSEQ, "2")) == err(
        10176, "atomic publish batch is incomplete")
    assert reply(js, s, b"", (BID, "x"), (BSEQ, "1001")) == err(
        10199, "atomic publish batch is too large: 1000")
    assert commit(js, s, "x", 1, how="yes") == err(10200, "atomic publish batch commit is invalid")
    assert reply(js, s, b"", (BID, "i" * 65), (BSEQ, "1")) == err(
        10179, "atomic publish batch ID is invalid")
    stage(js, s, "i" * 64, 1)  # 64 bytes is fine
    stage(js, s, "g", 1)
    assert reply(js, s, b"", (BID, "g"), (BSEQ, "3")) == err(
        10176, "atomic publish batch is incomplete")
    assert commit(js, s, "g", 2) == err(10176, "atomic publish batch is incomplete")
    stage(js, s, "c", 1)
    assert commit(js, s, "c", 2, how="2") == err(10200, "atomic publish batch commit is invalid")
    assert commit(js, s, "c", 3) == err(10176, "atomic publish batch is incomplete")
    assert js.state(stream_name)["messages"] == 0
    # the same id can start over once a batch was discarded
    stage(js, s, "g", 1)
    assert commit(js, s, "g", 2) == f'{{"stream":"{stream_name}","seq":2,"batch":"g","count":2}}'.encode()


def test_js_batch_disabled_and_config_errors(target: str, js: JsClient, stream_name: str) -> None:
    """Without ``allow_atomic`` a batch message is refused (10174); a mirror cannot use
    atomic publishing (10198)."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"])
    assert reply(js, f"{p}.a", b"", (BID, "x"), (BSEQ, "1")) == ack_error(
        stream_name, 400, 10174, "atomic publish is disabled")
    out = js.create(stream_name + "M", check=False, mirror={"name": stream_name},
                    allow_atomic=True)
    assert out["error"] == {"code": 400, "err_code": 10198,
                            "description": "stream mirrors can not also use atomic publishing"}
    out = js.update(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True)
    assert out["config"]["allow_atomic"] is True
    stage(js, f"{p}.a", "x", 1)
    assert commit(js, f"{p}.a", "x", 2) == (
        f'{{"stream":"{stream_name}","seq":2,"batch":"x","count":2}}'.encode())


def test_js_batch_duplicates_are_refused(target: str, js: JsClient, stream_name: str) -> None:
    """A ``Nats-Msg-Id`` seen twice in a batch, or already in the stream's duplicate window,
    fails the whole batch with 10201 (no duplicate ack)."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True)
    dup = ack_error(stream_name, 400, 10201, "atomic publish batch contains duplicate message id")
    stage(js, f"{p}.a", "d1", 1, b"", ("Nats-Msg-Id", "m1"))
    assert commit(js, f"{p}.a", "d1", 2, b"", ("Nats-Msg-Id", "m1")) == dup
    assert js.state(stream_name)["messages"] == 0
    assert commit(js, f"{p}.a", "d2", 1, b"", ("Nats-Msg-Id", "m1")) == (
        f'{{"stream":"{stream_name}","seq":1,"batch":"d2","count":1}}'.encode())
    stage(js, f"{p}.a", "d3", 1)
    assert commit(js, f"{p}.a", "d3", 2, b"", ("Nats-Msg-Id", "m1")) == dup
    assert js.state(stream_name)["messages"] == 1
    # the ids of a committed batch deduplicate plain publishes
    assert reply(js, f"{p}.a", b"", ("Nats-Msg-Id", "m1")) == (
        f'{{"stream":"{stream_name}","seq":1,"duplicate": true}}'.encode())


def test_js_batch_expected_headers(target: str, js: JsClient, stream_name: str) -> None:
    """Expected last sequence counts the batch's own messages and is only allowed on the
    first; expected subject sequence is refused on a subject the batch already wrote;
    ``Nats-Expected-Last-Msg-Id`` is unsupported in a batch."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_atomic=True, storage="memory")
    js.pub_ok(f"{p}.a", b"x")
    ok = lambda batch, seq, n: (  # noqa: E731
        f'{{"stream":"{stream_name}","seq":{seq},"batch":"{batch}","count":{n}}}'.encode())
    assert commit(js, f"{p}.a", "e1", 1, b"", ("Nats-Expected-Last-Sequence", "1")) == ok("e1", 2, 1)
    assert commit(js, f"{p}.a", "e2", 1, b"", ("Nats-Expected-Last-Sequence", "1")) == ack_error(
        stream_name, 400, 10071, "wrong last sequence: 2")
    stage(js, f"{p}.a", "e3", 1)
    assert commit(js, f"{p}.a", "e3", 2, b"", ("Nats-Expected-Last-Sequence", "2")) == ack_error(
        stream_name, 400, 10071, "wrong last sequence: 3")
    stage(js, f"{p}.a", "e4", 1)
    assert commit(js, f"{p}.a", "e4", 2, b"", ("Nats-Expected-Last-Sequence", "3")) == ack_error(
        stream_name, 400, 10164, "wrong last sequence")
    stage(js, f"{p}.b", "e5", 1)
    assert commit(js, f"{p}.b", "e5", 2, b"",
                  ("Nats-Expected-Last-Subject-Sequence", "0")) == ack_error(
        stream_name, 400, 10164, "wrong last sequence")
    assert commit(js, f"{p}.b", "e6", 1, b"",
                  ("Nats-Expected-Last-Subject-Sequence", "5")) == ack_error(
        stream_name, 400, 10071, "wrong last sequence: 0")
    stage(js, f"{p}.b", "e7", 1, b"", ("Nats-Expected-Last-Subject-Sequence", "0"))
    assert commit(js, f"{p}.c", "e7", 2, b"",
                  ("Nats-Expected-Last-Subject-Sequence", "2"),
                  ("Nats-Expected-Last-Subject-Sequence-Subject", f"{p}.a")) == ok("e7", 4, 2)
    assert commit(js, f"{p}.a", "e8", 1, b"", ("Nats-Expected-Last-Msg-Id", "x")) == ack_error(
        stream_name, 400, 10177, "atomic publish unsupported header used: Nats-Expected-Last-Msg-Id")
    assert js.state(stream_name)["messages"] == 4


def test_js_batch_rollups_and_discard_new(target: str, js: JsClient, stream_name: str) -> None:
    """A rollup is only allowed on the first write of its subject (``sub``) or as the first
    message (``all``); discard-new limits count the whole batch."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_atomic=True, allow_rollup_hdrs=True,
              storage="memory")
    stage(js, f"{p}.a", "r1", 1)
    assert commit(js, f"{p}.a", "r1", 2, b"", ("Nats-Rollup", "sub")) == ack_error(
        stream_name, 500, 10111, "batch rollup sub invalid")
    stage(js, f"{p}.a", "r2", 1)
    assert commit(js, f"{p}.b", "r2", 2, b"", ("Nats-Rollup", "all")) == ack_error(
        stream_name, 500, 10111, "batch rollup all invalid")
    stage(js, f"{p}.a", "r3", 1)
    assert commit(js, f"{p}.b", "r3", 2, b"", ("Nats-Rollup", "sub")) == (
        f'{{"stream":"{stream_name}","seq":2,"batch":"r3","count":2}}'.encode())
    limited = stream_name + "L"
    js.create(limited, subjects=[f"{p}l.>"], allow_atomic=True, discard="new", max_msgs=2,
              storage="memory")
    stage(js, f"{p}l.a", "d", 1)
    stage(js, f"{p}l.a", "d", 2)
    assert commit(js, f"{p}l.a", "d", 3) == ack_error(limited, 503, 10077,
                                                       "maximum messages exceeded")
    assert js.state(limited)["messages"] == 0


def test_js_batch_too_many_inflight(target: str, js: JsClient, stream_name: str) -> None:
    """At most 50 batches are open on a stream; the 51st is refused with 429/10210."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_atomic=True, storage="memory")
    for i in range(50):
        stage(js, f"{p}.a", f"b{i}", 1)
    assert reply(js, f"{p}.a", b"", (BID, "b50"), (BSEQ, "1")) == ack_error(
        stream_name, 429, 10210, "atomic publish too many inflight")
    assert commit(js, f"{p}.a", "b0", 2) == (
        f'{{"stream":"{stream_name}","seq":2,"batch":"b0","count":2}}'.encode())
    stage(js, f"{p}.a", "b50", 1)  # room again


def test_js_batch_idle_batch_times_out(target: str, js: JsClient, stream_name: str) -> None:
    """A batch idle for 10 s is discarded (``BATCH_ABANDONED`` advisory, reason ``timeout``):
    its commit is refused and nothing is stored."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"], allow_atomic=True, storage="memory")
    adv = f"$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.{stream_name}"
    js.raw.send(f"SUB {adv} 77\r\n".encode())
    js.raw.barrier()
    stage(js, f"{p}.a", "slow", 1)
    m = js.next_msg(adv, timeout=15)
    event = m.json()
    assert {k: event[k] for k in ("type", "stream", "batch", "reason")} == {
        "type": "io.nats.jetstream.advisory.v1.stream_batch_abandoned",
        "stream": stream_name, "batch": "slow", "reason": "timeout"}
    assert list(event) == ["type", "id", "timestamp", "stream", "batch", "reason"]
    assert commit(js, f"{p}.a", "slow", 2) == ack_error(stream_name, 400, 10176,
                                                        "atomic publish batch is incomplete")
    assert js.state(stream_name)["messages"] == 0


def test_js_batch_not_committed_before_restart_is_gone(target: str, spawn: SpawnFn,
                                                       tmp_path: Path) -> None:
    """A file stream's batch staged but not committed before a restart is gone: its commit
    is refused, nothing of it is stored; committed batches are all there."""
    sd = str(tmp_path / "sd")
    srv = spawn(args=["-js", "-sd", sd])
    js = JsClient.connect(srv)
    name = unique_name()
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], allow_atomic=True)
    stage(js, f"{p}.a", "done", 1, b"d1")
    commit(js, f"{p}.a", "done", 2, b"d2")
    stage(js, f"{p}.a", "open", 1, b"o1")
    stage(js, f"{p}.a", "open", 2, b"o2")
    js.close()
    srv.stop()
    srv = spawn(args=["-js", "-sd", sd])
    js = JsClient.connect(srv)
    assert js.state(name)["messages"] == 2
    assert commit(js, f"{p}.a", "open", 3, b"o3") == ack_error(
        name, 400, 10176, "atomic publish batch is incomplete")
    assert js.state(name)["messages"] == 2
    stage(js, f"{p}.a", "open", 1, b"n1")
    assert commit(js, f"{p}.a", "open", 2, b"n2") == (
        f'{{"stream":"{name}","seq":4,"batch":"open","count":2}}'.encode())
    js.close()


def test_js_batch_counters_use_running_totals(target: str, js: JsClient,
                                              stream_name: str) -> None:
    """Increments in a batch add up message by message; the commit ack has no ``val``; a
    batch message without ``Nats-Incr`` fails the batch on a counter stream."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True, allow_msg_counter=True)
    assert reply(js, f"{p}.a", b"", (INCR, "10")) == (
        f'{{"stream":"{stream_name}","seq":1,"val":"10"}}'.encode())
    stage(js, f"{p}.a", "c", 1, b"", (INCR, "2"))
    stage(js, f"{p}.b", "c", 2, b"", (INCR, "7"))
    assert commit(js, f"{p}.a", "c", 3, b"", (INCR, "3")) == (
        f'{{"stream":"{stream_name}","seq":4,"batch":"c","count":3}}'.encode())
    assert stored(js, stream_name, 2)[2] == b'{"val":"12"}'
    assert stored(js, stream_name, 3)[2] == b'{"val":"7"}'
    assert stored(js, stream_name, 4) == (
        f"{p}.a", H((BID, "c"), (BSEQ, "3"), (INCR, "3"), (COMMIT, "1")), b'{"val":"15"}')
    stage(js, f"{p}.a", "m", 1, b"", (INCR, "1"))
    assert commit(js, f"{p}.a", "m", 2) == ack_error(stream_name, 400, 10169,
                                                     "message counter increment is missing")
    assert js.state(stream_name)["messages"] == 4


# ============================================================================ counters


def test_js_counter_increments(target: str, js: JsClient, stream_name: str) -> None:
    """Each increment stores ``{"val":"<total>"}`` per subject (arbitrary precision, signs
    allowed, surrounding blanks trimmed) with the header as sent; the ack carries ``val``."""
    p = stream_name.lower()
    out = js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_msg_counter=True)
    assert out["config"]["allow_msg_counter"] is True
    assert out["config"]["metadata"]["_nats.req.level"] == "2"
    vals = []
    for incr in ("1", "+5", "-10", "99999999999999999999999999999", "0", " 3"):
        ack = json.loads(reply(js, f"{p}.a", b"", (INCR, incr)))
        vals.append(ack["val"])
    assert vals == ["1", "6", "-4", "99999999999999999999999999995",
                    "99999999999999999999999999995", "99999999999999999999999999998"]
    assert reply(js, f"{p}.b", b"", (INCR, "2")) == (
        f'{{"stream":"{stream_name}","seq":7,"val":"2"}}'.encode())
    assert stored(js, stream_name, 2) == (f"{p}.a", H((INCR, "+5")), b'{"val":"6"}')
    info = js.info(stream_name)
    assert info["config"]["allow_msg_counter"] is True and info["state"]["messages"] == 7
    # a duplicate gets the plain duplicate ack
    reply(js, f"{p}.c", b"", (INCR, "1"), ("Nats-Msg-Id", "once"))
    assert reply(js, f"{p}.c", b"", (INCR, "1"), ("Nats-Msg-Id", "once")) == (
        f'{{"stream":"{stream_name}","seq":8,"duplicate": true}}'.encode())


def test_js_counter_refusals(target: str, js: JsClient, stream_name: str) -> None:
    """Invalid increments (10171), missing ones (10169), a payload (10170), incompatible
    headers (10171), TTLs (10166), a source header (10227); 10168 on a stream without
    counters (after the 10171 validity check)."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_msg_counter=True)
    s = f"{p}.a"
    invalid = ack_error(stream_name, 400, 10171, "message counter increment is invalid")
    missing = ack_error(stream_name, 400, 10169, "message counter increment is missing")
    for bad in ("abc", "1.5", "1_000", "0x10", "--1", "+-1", "1e3"):
        assert reply(js, s, b"", (INCR, bad)) == invalid, bad
    assert reply(js, s, b"", (INCR, "")) == missing
    assert reply(js, s, b"") == missing
    assert reply(js, s, b"x") == missing
    assert reply(js, s, b"x", (INCR, "1")) == ack_error(stream_name, 400, 10170,
                                                        "message counter has payload")
    for h in (("Nats-Rollup", "sub"), ("Nats-Expected-Stream", stream_name),
              ("Nats-Expected-Last-Msg-Id", "x"), ("Nats-Expected-Last-Sequence", "0"),
              ("Nats-Expected-Last-Subject-Sequence", "0"),
              ("Nats-Expected-Last-Subject-Sequence-Subject", s)):
        assert reply(js, s, b"", (INCR, "1"), h) == invalid, h
    assert reply(js, s, b"", (INCR, "1"), ("Nats-TTL", "5s")) == ack_error(
        stream_name, 400, 10166, "per-message TTL is disabled")
    assert reply(js, s, b"", (INCR, "1"), ("Nats-Stream-Source", "X 1 > > a")) == ack_error(
        stream_name, 400, 10227, "message stream source header is not allowed")
    assert js.state(stream_name)["messages"] == 0
    plain = stream_name + "P"
    js.create(plain, storage="memory", subjects=[f"{p}p.>"])
    assert reply(js, f"{p}p.a", b"", (INCR, "1")) == ack_error(
        plain, 400, 10168, "message counters is disabled")
    assert reply(js, f"{p}p.a", b"", (INCR, "x")) == ack_error(
        plain, 400, 10171, "message counter increment is invalid")


def test_js_counter_config_errors(target: str, js: JsClient, stream_name: str) -> None:
    """Counters refuse discard new, message TTLs and non-limits retention, cannot be switched
    on or off by an update, and mirrors cannot calculate counters; rollups and atomic
    batches go with them."""
    p = stream_name.lower()

    def create_err(**cfg: Any) -> dict[str, Any]:
        out = js.create(stream_name + "X", check=False, subjects=[f"{p}x.>"],
                        allow_msg_counter=True, **cfg)
        return out.get("error") or {}

    v = lambda text: {"code": 500, "err_code": 10052, "description": text}  # noqa: E731
    assert create_err(discard="new") == v("counter stream cannot use discard new")
    assert create_err(allow_msg_ttl=True) == v("counter stream cannot use message TTLs")
    assert create_err(retention="interest") == v("counter stream can only use limits retention")
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_msg_counter=True, allow_rollup_hdrs=True,
              allow_atomic=True)
    out = js.update(stream_name, storage="memory", subjects=[f"{p}.>"], allow_rollup_hdrs=True, allow_atomic=True)
    assert out["error"] == v("stream configuration update can not change message counter setting")
    out = js.create(stream_name + "M", check=False, mirror={"name": stream_name},
                    allow_msg_counter=True)
    assert out["error"] == {"code": 400, "err_code": 10173,
                            "description": "stream mirrors can not also calculate counters"}


def _msg(js: JsClient, stream: str, subject: str) -> Any:
    out = js.msg_get(stream, {"last_by_subj": subject})
    return out.get("message")


def test_js_counter_sourced_into_a_counter(target: str, js: JsClient, stream_name: str) -> None:
    """A counter stream sourcing counter streams adds up their values per subject, records
    the last value of each origin subject in ``Nats-Counter-Sources`` and rewrites
    ``Nats-Incr`` to the difference."""
    p = stream_name.lower()
    a, b, agg = stream_name + "A", stream_name + "B", stream_name + "G"
    js.create(a, storage="memory", subjects=[f"{p}a.>"], allow_msg_counter=True)
    js.create(b, storage="memory", subjects=[f"{p}b.>"], allow_msg_counter=True)
    js.pub_ok(f"{p}a.x", b"", H((INCR, "5")))
    js.pub_ok(f"{p}a.x", b"", H((INCR, "3")))
    js.pub_ok(f"{p}b.x", b"", H((INCR, "100")))
    js.create(agg, storage="memory", subjects=[f"{p}g.>"], allow_msg_counter=True, sources=[
        {"name": a, "subject_transforms": [{"src": f"{p}a.>", "dest": f"{p}g.>"}]},
        {"name": b, "subject_transforms": [{"src": f"{p}b.>", "dest": f"{p}g.>"}]}])
    wait_for(lambda: js.state(agg)["messages"] == 3, timeout=10)
    m = _msg(js, agg, f"{p}g.x")
    assert base64.b64decode(m["data"]) == b'{"val":"108"}'
    hdrs = base64.b64decode(m["hdrs"]).decode()
    sources = json.loads(hdrs.split("Nats-Counter-Sources: ")[1].split("\r\n")[0])
    assert sources == {a: {f"{p}a.x": "8"}, b: {f"{p}b.x": "100"}}
    js.pub_ok(f"{p}a.x", b"", H((INCR, "-20")))
    wait_for(lambda: js.state(agg)["messages"] == 4, timeout=10)
    m = _msg(js, agg, f"{p}g.x")
    assert base64.b64decode(m["data"]) == b'{"val":"88"}'
    hdrs = base64.b64decode(m["hdrs"]).decode()
    assert hdrs.startswith("NATS/1.0\r\nNats-Incr: -20\r\nNats-Stream-Source: ")
    assert f'Nats-Counter-Sources: {{"{a}":{{"{p}a.x":"-12"}},"{b}":{{"{p}b.x":"100"}}}}\r\n' in hdrs
    # the aggregate takes its own increments too
    ack = json.loads(reply(js, f"{p}g.x", b"", (INCR, "2")))
    assert ack["val"] == "90"


def test_js_batch_header_checks(target: str, js: JsClient, stream_name: str) -> None:
    """``Nats-Required-Api-Level`` above the server's fails the batch (412/10185) and is
    removed when it passes; the commit runs the publish header checks (TTL, expected stream,
    counters, rollups) on every message; an empty or upper-case commit value is invalid."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True,
              allow_msg_ttl=True)
    s = f"{p}.a"
    level = ack_error(stream_name, 412, 10185, "JetStream minimum api level required")
    assert reply(js, s, b"x", (BID, "a"), (BSEQ, "1"), ("Nats-Required-Api-Level", "99")) == level
    stage(js, s, "a", 1, b"x", ("Nats-Required-Api-Level", "1"))
    assert commit(js, s, "a", 2, b"x", ("Nats-Required-Api-Level", "x")) == level
    assert commit(js, s, "c", 1, b"x", ("Nats-Required-Api-Level", "2"), ("Nats-TTL", "5s")) == (
        f'{{"stream":"{stream_name}","seq":1,"batch":"c","count":1}}'.encode())
    assert stored(js, stream_name, 1) == (s, H((BID, "c"), (BSEQ, "1"), ("Nats-TTL", "5s"),
                                               (COMMIT, "1")), b"x")
    for hdr, err in ((("Nats-TTL", "bad"), (400, 10165, "invalid per-message TTL")),
                     (("Nats-Expected-Stream", "Z"), (400, 10060, "expected stream does not match")),
                     ((INCR, "1"), (400, 10168, "message counters is disabled")),
                     (("Nats-Rollup", "sub"), (500, 10111, "rollup not permitted"))):
        stage(js, s, "d", 1)
        assert commit(js, s, "d", 2, b"x", hdr) == ack_error(stream_name, *err), hdr
    for how in ("", "EOB"):
        assert commit(js, s, "e", 1, b"x", how=how) == ack_error(
            stream_name, 400, 10200, "atomic publish batch commit is invalid")
    assert js.state(stream_name)["messages"] == 1


def test_js_batch_too_large_midway(target: str, js: JsClient, stream_name: str) -> None:
    """The 1001st message of a batch fails it (10199, ``BATCH_ABANDONED`` reason ``large``);
    an ``eob`` marker does not count, so 1000 messages and an ``eob`` commit."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_atomic=True)
    adv = f"$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.{stream_name}"
    js.raw.send(f"SUB {adv} 78\r\n".encode())
    js.raw.barrier()
    for i in range(1, 1001):
        stage(js, f"{p}.a", "big", i)
    assert reply(js, f"{p}.a", b"", (BID, "big"), (BSEQ, "1001")) == ack_error(
        stream_name, 400, 10199, "atomic publish batch is too large: 1000")
    event = js.next_msg(adv).json()
    assert (event["batch"], event["reason"]) == ("big", "large")
    for i in range(1, 1001):
        stage(js, f"{p}.a", "eob", i)
    assert commit(js, f"{p}.a", "eob", 1001, how="eob") == (
        f'{{"stream":"{stream_name}","seq":1000,"batch":"eob","count":1000}}'.encode())
    assert js.state(stream_name)["messages"] == 1000


def test_js_batch_too_many_inflight_on_the_server(target: str, spawn: SpawnFn) -> None:
    """At most 1000 batches are open on the whole server (20 streams of 50 here); one more
    is refused with 429/10210 until one of them ends."""
    srv = spawn(jetstream=True)
    js = JsClient.connect(srv)
    names = [unique_name() for _ in range(21)]
    for name in names:
        js.create(name, storage="memory", subjects=[f"{name.lower()}.>"], allow_atomic=True)
    for name in names[:20]:
        for i in range(50):
            stage(js, f"{name.lower()}.a", f"b{i}", 1)
    last = names[20]
    assert reply(js, f"{last.lower()}.a", b"", (BID, "x"), (BSEQ, "1")) == ack_error(
        last, 429, 10210, "atomic publish too many inflight")
    first = names[0]
    assert commit(js, f"{first.lower()}.a", "b0", 2) == (
        f'{{"stream":"{first}","seq":2,"batch":"b0","count":2}}'.encode())
    stage(js, f"{last.lower()}.a", "x", 1)
    js.close()
