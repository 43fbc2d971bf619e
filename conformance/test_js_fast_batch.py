"""Fast batch publishing (``allow_batched``), nats-server 2.15's flow-controlled, non-atomic
batch ingest (nats.js's fast-ingest publisher): the batch is named by the reply subject
``<prefix>.<id>.<flow>.<gap mode>.<batch seq>.<op>.$FI`` (op 0 start, 1 append, 2 commit,
3 commit with end-of-batch marker, 4 ping); the server answers on that reply with
flow-control acks ``{"type":"ack",…}``, gap reports ``{"type":"gap",…}``, per-message errors
``{"type":"err",…}`` and the commit's pub ack with ``batch``/``count``.

Every reply goes through the stream's one outbound queue, so the replies of a message arrive
before those of the next one: each case ends on a commit ack and then checks that no reply
it did not expect arrived. Memory streams on the shared server (see test_js_batch_counter.py
for why), file storage on a server of its own."""
from __future__ import annotations

import base64
import time
from pathlib import Path

from conformance.helpers import SpawnFn
from conformance.jshelpers import JsClient, header_block, unique_name

H = header_block
START, APPEND, COMMIT, EOB, PING = range(5)


def send(js: JsClient, subject: str, batch: str, seq: int, op: int, data: bytes = b"x",
         hdr: bytes | None = None, flow: int = 10, gap: str = "fail") -> str:
    reply = f"{js.inbox}.fb.{batch}.{flow}.{gap}.{seq}.{op}.$FI"
    js.send(subject, data, hdr, reply)
    return reply


def replies(js: JsClient, reply: str, n: int) -> list[bytes]:
    return [js.next_msg(reply).data for _ in range(n)]


def flow(seq: int, msgs: int) -> bytes:
    return b'{"type":"ack","seq":%d,"msgs":%d}' % (seq, msgs)


def gap(last: int, seq: int) -> bytes:
    return b'{"type":"gap","last_seq":%d,"seq":%d}' % (last, seq)


def ack(stream: str, seq: int, batch: str, count: int) -> bytes:
    return f'{{"stream":"{stream}","seq":{seq},"batch":"{batch}","count":{count}}}'.encode()


def error(stream: str, code: int, err_code: int, description: str) -> bytes:
    return (f'{{"error":{{"code":{code},"err_code":{err_code},"description":"{description}"}},'
            f'"stream":"{stream}","seq":0}}').encode()


def flow_err(seq: int, code: int, err_code: int, description: str) -> bytes:
    return (f'{{"type":"err","seq":{seq},"error":{{"code":{code},"err_code":{err_code},'
            f'"description":"{description}"}}}}').encode()


def no_other_replies(js: JsClient) -> None:
    left = [m.frame for m in js._pending if m.subject.endswith(".$FI")]
    assert left == [], left


def stored(js: JsClient, stream: str, seq: int) -> tuple[str, bytes, bytes]:
    out = js.msg_get(stream, {"seq": seq})
    assert "message" in out, out
    m = out["message"]
    return m["subject"], base64.b64decode(m.get("hdrs", "")), base64.b64decode(m.get("data", ""))


def test_js_fast_batch_config(target: str, js: JsClient, stream_name: str) -> None:
    """``allow_batched`` is accepted (API level 4), with ``allow_atomic`` too, can be turned
    on and off by an update, and is refused on a mirror."""
    p = stream_name.lower()
    out = js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True,
                    allow_atomic=True)
    assert out["config"]["allow_batched"] is True
    assert out["config"]["metadata"]["_nats.req.level"] == "4"
    out = js.update(stream_name, storage="memory", subjects=[f"{p}.>"])
    assert "allow_batched" not in out["config"], out
    assert out["config"]["metadata"]["_nats.req.level"] == "0"
    out = js.update(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert out["config"]["allow_batched"] is True
    out = js.create(stream_name + "M", check=False, storage="memory",
                    mirror={"name": stream_name}, allow_batched=True)
    assert out["error"] == {"code": 400, "err_code": 10209,
                            "description": "stream mirrors can not also use batch publishing"}


def test_js_fast_batch_happy_path(target: str, js: JsClient, stream_name: str) -> None:
    """The first message is answered with the flow settings (``seq`` 0, the client's flow),
    then one ack every ``msgs`` stored messages, and the commit with the pub ack; every
    message is stored as sent, as it arrives."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "b1", 1, START, b"m1", flow=2), 1) == [flow(0, 2)]
    r2 = send(js, f"{p}.a", "b1", 2, APPEND, b"m2", H(("k", "v")), flow=2)
    assert replies(js, r2, 1) == [flow(2, 2)]
    send(js, f"{p}.b", "b1", 3, APPEND, b"m3", flow=2)
    assert replies(js, send(js, f"{p}.a", "b1", 4, APPEND, b"m4", flow=2), 1) == [flow(4, 2)]
    send(js, f"{p}.a", "b1", 5, APPEND, b"m5", flow=2)
    assert replies(js, send(js, f"{p}.a", "b1", 6, COMMIT, b"m6", flow=2), 1) == [
        ack(stream_name, 6, "b1", 6)]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 6
    assert stored(js, stream_name, 2) == (f"{p}.a", H(("k", "v")), b"m2")
    assert stored(js, stream_name, 3) == (f"{p}.b", b"", b"m3")
    # A batch of one: the commit alone, no flow settings.
    assert replies(js, send(js, f"{p}.a", "b2", 1, COMMIT), 1) == [ack(stream_name, 7, "b2", 1)]
    # End of batch: the marker is not stored, the count is the last stored batch message.
    assert replies(js, send(js, f"{p}.a", "b3", 1, START), 1) == [flow(0, 10)]
    send(js, f"{p}.a", "b3", 2, APPEND)
    assert replies(js, send(js, f"{p}.a", "b3", 3, EOB, b"eob"), 1) == [
        ack(stream_name, 9, "b3", 2)]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 9
    # The batch is over: its next message is refused.
    assert replies(js, send(js, f"{p}.a", "b3", 4, APPEND), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]


def test_js_fast_batch_flow_values(target: str, js: JsClient, stream_name: str) -> None:
    """A flow of 0 or garbage means 10, a flow above 500 is capped at 500; a second batch in
    flight on the stream starts at 1 and ramps up (doubling) to 500 / batches in flight."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "z", 1, START, flow=0), 1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "z", 2, COMMIT, flow=0), 1) == [
        ack(stream_name, 2, "z", 2)]
    assert replies(js, send(js, f"{p}.a", "big", 1, START, flow=70000), 1) == [flow(0, 500)]
    r = send(js, f"{p}.a", "two", 1, START, flow=3)
    assert replies(js, r, 2) == [flow(0, 1), flow(1, 2)]
    assert replies(js, send(js, f"{p}.a", "two", 2, APPEND, flow=3), 0) == []
    assert replies(js, send(js, f"{p}.a", "two", 3, APPEND, flow=3), 1) == [flow(3, 3)]
    assert replies(js, send(js, f"{p}.a", "two", 4, COMMIT, flow=3), 1) == [
        ack(stream_name, 7, "two", 4)]
    assert replies(js, send(js, f"{p}.a", "big", 2, COMMIT, flow=70000), 1) == [
        ack(stream_name, 8, "big", 2)]
    no_other_replies(js)


def test_js_fast_batch_gaps(target: str, js: JsClient, stream_name: str) -> None:
    """A skipped sequence is reported; with ``fail`` the batch ends there (committed up to
    what was stored, the message after the gap not stored), with ``ok`` it goes on."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "f", 1, START), 1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "f", 3, APPEND), 2) == [
        gap(2, 3), ack(stream_name, 1, "f", 1)]
    assert replies(js, send(js, f"{p}.a", "f", 4, APPEND), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]
    assert js.state(stream_name)["messages"] == 1
    assert replies(js, send(js, f"{p}.a", "o", 1, START, gap="ok"), 1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "o", 4, APPEND, gap="ok"), 1) == [gap(2, 4)]
    assert replies(js, send(js, f"{p}.a", "o", 5, COMMIT, gap="ok"), 1) == [
        ack(stream_name, 4, "o", 5)]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 4


def test_js_fast_batch_ping(target: str, js: JsClient, stream_name: str) -> None:
    """A ping resends the last flow ack; a ping past the last message seen reports the gap
    (``last_seq`` and ``seq`` one further) and, with ``fail``, ends the batch."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "p", 1, START, flow=1), 2) == [flow(0, 1), flow(1, 1)]
    assert replies(js, send(js, f"{p}.a", "p", 1, PING, flow=1), 1) == [flow(1, 1)]
    assert replies(js, send(js, f"{p}.a", "p", 2, APPEND, flow=1), 1) == [flow(2, 1)]
    assert replies(js, send(js, f"{p}.a", "p", 5, PING, flow=1), 2) == [
        gap(3, 6), ack(stream_name, 2, "p", 2)]
    assert replies(js, send(js, f"{p}.a", "q", 1, START, gap="ok"), 1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "q", 3, PING, gap="ok"), 2) == [
        gap(2, 4), flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "q", 4, COMMIT, gap="ok"), 1) == [
        ack(stream_name, 4, "q", 4)]
    no_other_replies(js)


def test_js_fast_batch_refusals(target: str, js: JsClient, stream_name: str) -> None:
    """Any ``.$FI`` reply takes the batch path: refused on a stream without
    ``allow_batched``, a reply that does not parse, a batch id over 64 bytes, an unknown
    batch; nothing of those is stored."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    js.create(stream_name + "N", storage="memory", subjects=[f"{p}n.>"])
    assert replies(js, send(js, f"{p}n.a", "b", 1, START), 1) == [
        error(stream_name + "N", 400, 10205, "batch publish is disabled")]
    invalid = error(stream_name, 400, 10206, "batch publish pattern is invalid")
    for batch, seq, op, gap_mode in [("b", 1, START, "maybe"), ("b", 2, START, "fail"),
                                     ("b", 1, APPEND, "fail"), ("b", 1, EOB, "fail"),
                                     ("b", 1, 5, "fail"), ("b", 0, START, "fail")]:
        r = send(js, f"{p}.a", batch, seq, op, gap=gap_mode)
        assert replies(js, r, 1) == [invalid], r
    assert replies(js, send(js, f"{p}.a", "x" * 65, 1, START), 1) == [
        error(stream_name, 400, 10207, "batch publish ID is invalid")]
    assert replies(js, send(js, f"{p}.a", "nope", 2, APPEND), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]
    assert replies(js, send(js, f"{p}.a", "nope", 2, COMMIT), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]
    js.create(stream_name + "S", storage="memory", subjects=[f"{p}s.>"], allow_batched=True,
              max_msg_size=5)
    assert replies(js, send(js, f"{p}s.a", "b", 1, START, b"toolong"), 1) == [
        error(stream_name + "S", 400, 10054, "message size exceeds maximum allowed")]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 0
    assert js.state(stream_name + "N")["messages"] == 0


def test_js_fast_batch_required_api_level(target: str, js: JsClient, stream_name: str) -> None:
    """``Nats-Required-Api-Level`` above the server's level ends the batch with 412/10185;
    a level it has is removed from the stored message."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    level = "Nats-Required-Api-Level"
    too_high = error(stream_name, 412, 10185, "JetStream minimum api level required")
    assert replies(js, send(js, f"{p}.a", "a", 1, START, hdr=H((level, "99"))), 1) == [too_high]
    assert replies(js, send(js, f"{p}.a", "b", 1, START, hdr=H((level, "1"), ("k", "v"))),
                   1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "b", 2, APPEND, hdr=H((level, "x"))), 1) == [too_high]
    assert replies(js, send(js, f"{p}.a", "b", 3, COMMIT), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 1
    assert stored(js, stream_name, 1) == (f"{p}.a", H(("k", "v")), b"x")


def test_js_fast_batch_message_errors(target: str, js: JsClient, stream_name: str) -> None:
    """A refused first message of a ``fail`` batch gets the plain publish error; a refused
    later one an ``err`` reply and the batch ends (committed up to the message before); with
    ``ok`` every refusal is an ``err`` reply and the batch goes on."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    els = "Nats-Expected-Last-Sequence"
    assert replies(js, send(js, f"{p}.a", "a", 1, START, hdr=H((els, "9"))), 2) == [
        flow(0, 10), error(stream_name, 400, 10071, "wrong last sequence: 0")]
    assert replies(js, send(js, f"{p}.a", "b", 1, START), 1) == [flow(0, 10)]
    assert replies(js, send(js, f"{p}.a", "b", 2, APPEND, hdr=H((els, "9"))), 2) == [
        flow_err(2, 400, 10071, "wrong last sequence: 1"), ack(stream_name, 1, "b", 1)]
    assert replies(js, send(js, f"{p}.a", "c", 1, START, hdr=H((els, "9")), gap="ok"), 2) == [
        flow(0, 10), flow_err(1, 400, 10071, "wrong last sequence: 1")]
    assert replies(js, send(js, f"{p}.a", "c", 2, APPEND, gap="ok"), 0) == []
    assert replies(js, send(js, f"{p}.a", "c", 3, COMMIT, hdr=H((els, "9")), gap="ok"), 2) == [
        flow_err(3, 400, 10071, "wrong last sequence: 2"), ack(stream_name, 2, "c", 2)]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 2


def test_js_fast_batch_duplicates(target: str, js: JsClient, stream_name: str) -> None:
    """A duplicate ``Nats-Msg-Id`` is skipped silently (it counts for flow control); a batch
    of one duplicate gets the duplicate pub ack with ``batch``/``count``."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    mid = "Nats-Msg-Id"
    assert replies(js, send(js, f"{p}.a", "a", 1, START, hdr=H((mid, "m1")), flow=2), 1) == [
        flow(0, 2)]
    assert replies(js, send(js, f"{p}.a", "a", 2, APPEND, hdr=H((mid, "m1")), flow=2), 1) == [
        flow(2, 2)]
    assert replies(js, send(js, f"{p}.a", "a", 3, COMMIT, flow=2), 1) == [
        ack(stream_name, 2, "a", 3)]
    assert replies(js, send(js, f"{p}.a", "d", 1, COMMIT, hdr=H((mid, "m1"))), 1) == [
        f'{{"stream":"{stream_name}","seq":1,"duplicate": true,"batch":"d","count":1}}'.encode()]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 2


def test_js_fast_batch_atomic_headers_are_plain(target: str, js: JsClient,
                                                stream_name: str) -> None:
    """A fast batch message carrying atomic batch headers is a fast batch message, stored
    with those headers (even with ``allow_atomic``)."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True,
              allow_atomic=True)
    hdr = H(("Nats-Batch-Id", "zz"), ("Nats-Batch-Sequence", "1"))
    assert replies(js, send(js, f"{p}.a", "f", 1, COMMIT, hdr=hdr), 1) == [
        ack(stream_name, 1, "f", 1)]
    assert stored(js, stream_name, 1) == (f"{p}.a", hdr, b"x")


def test_js_fast_batch_idle_batch_is_forgotten(target: str, js: JsClient,
                                               stream_name: str) -> None:
    """A batch idle for 10 s is dropped without a word: its next message is refused as
    unknown; what was stored stays."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "slow", 1, START), 1) == [flow(0, 10)]
    time.sleep(11.5)
    assert replies(js, send(js, f"{p}.a", "slow", 2, COMMIT), 1) == [
        error(stream_name, 400, 10208, "batch publish ID unknown")]
    no_other_replies(js)
    assert js.state(stream_name)["messages"] == 1


def test_js_fast_batch_file_stream(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """On a file stream the acks come after the writes; the batch survives a restart as the
    messages stored, not as a batch."""
    sd = str(tmp_path / "sd")
    srv = spawn(args=["-js", "-sd", sd])
    js = JsClient.connect(srv)
    name = unique_name()
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], allow_batched=True)
    assert replies(js, send(js, f"{p}.a", "b", 1, START, b"1", flow=2), 1) == [flow(0, 2)]
    assert replies(js, send(js, f"{p}.a", "b", 2, APPEND, b"2", flow=2), 1) == [flow(2, 2)]
    assert replies(js, send(js, f"{p}.a", "b", 3, COMMIT, b"3", flow=2), 1) == [
        ack(name, 3, "b", 3)]
    assert replies(js, send(js, f"{p}.a", "o", 1, START, b"4"), 1) == [flow(0, 10)]
    no_other_replies(js)
    js.close()
    srv.stop()
    srv = spawn(args=["-js", "-sd", sd])
    js = JsClient.connect(srv)
    assert js.state(name)["messages"] == 4
    assert stored(js, name, 4)[2] == b"4"
    assert replies(js, send(js, f"{p}.a", "o", 2, COMMIT, b"5"), 1) == [
        error(name, 400, 10208, "batch publish ID unknown")]
    js.close()


def test_js_fast_batch_too_many_inflight(target: str, js: JsClient, stream_name: str) -> None:
    """At most 1000 fast batches are open on a stream; the next one is refused with
    429/10211 and nothing of it is stored; a committed batch makes room."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    for i in range(1000):
        send(js, f"{p}.a", f"b{i}", 1, START)
    assert replies(js, send(js, f"{p}.a", "extra", 1, START), 1) == [
        error(stream_name, 429, 10211, "batch publish too many inflight")]
    assert js.state(stream_name)["messages"] == 1000
    assert replies(js, send(js, f"{p}.a", "b0", 2, COMMIT), 1) == [
        ack(stream_name, 1001, "b0", 2)]
    assert replies(js, send(js, f"{p}.a", "extra", 1, COMMIT), 1) == [
        ack(stream_name, 1002, "extra", 1)]


def test_js_fast_batch_traced(target: str, js: JsClient, stream_name: str) -> None:
    """A traced fast batch message reports its storage, or its refusal with nats-server's
    error text, in the trace's JetStream event."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True)
    dest = f"{js.inbox}.trace"
    assert replies(js, send(js, f"{p}.a", "t", 1, START, hdr=H(("Nats-Trace-Dest", dest))),
                   1) == [flow(0, 10)]
    events = js.next_msg(dest).json()["events"]
    assert [e["type"] for e in events] == ["in", "js"]
    assert {k: events[1][k] for k in ("stream", "subject")} == {"stream": stream_name,
                                                                "subject": f"{p}.a"}
    hdr = H(("Nats-Trace-Dest", dest), ("Nats-Expected-Last-Sequence", "7"))
    assert replies(js, send(js, f"{p}.a", "t", 2, APPEND, hdr=hdr), 2) == [
        flow_err(2, 400, 10071, "wrong last sequence: 1"), ack(stream_name, 1, "t", 1)]
    events = js.next_msg(dest).json()["events"]
    assert [e["type"] for e in events] == ["in", "js"]
    assert events[1]["error"] == "last sequence mismatch: 7 vs 1"
    assert js.state(stream_name)["messages"] == 1


def test_js_fast_batch_no_ack_stream(target: str, js: JsClient, stream_name: str) -> None:
    """On a ``no_ack`` stream only the first message's flow settings and the refusals of the
    batch path stay unanswered: flow acks, gaps, the commit ack and a refused first message
    of a ``fail`` batch are still sent."""
    p = stream_name.lower()
    js.create(stream_name, storage="memory", subjects=[f"{p}.>"], allow_batched=True,
              no_ack=True)
    assert replies(js, send(js, f"{p}.a", "a", 1, START, flow=1), 1) == [flow(1, 1)]
    assert replies(js, send(js, f"{p}.a", "a", 2, APPEND, flow=1), 1) == [flow(2, 1)]
    assert replies(js, send(js, f"{p}.a", "a", 4, APPEND, flow=1), 2) == [
        gap(3, 4), ack(stream_name, 2, "a", 2)]
    hdr = H(("Nats-Expected-Last-Sequence", "9"))
    assert replies(js, send(js, f"{p}.a", "b", 1, START, hdr=hdr), 1) == [
        error(stream_name, 400, 10071, "wrong last sequence: 2")]
    send(js, f"{p}.a", "c", 2, APPEND)  # unknown batch: no reply on a no_ack stream
    send(js, f"{p}.a", "d", 1, START)
    assert replies(js, send(js, f"{p}.a", "d", 2, COMMIT), 1) == [ack(stream_name, 4, "d", 2)]
    no_other_replies(js)
