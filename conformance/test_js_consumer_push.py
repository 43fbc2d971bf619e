"""Push consumers as wire bytes: delivery to ``deliver_subject`` only while an exact-subject
subscription exists (``push_bound``), queue delivery with ``deliver_group``, ``headers_only``,
``max_ack_pending`` gating, redelivery, idle heartbeats, flow control, inactive-threshold
cleanup, pause and the consumer advisories."""
from __future__ import annotations

import json
import re
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from conformance.jshelpers import JsClient, Sub, ack_fields, header_block

FC_RE = re.compile(r"^\$JS\.FC\.([^.]+)\.([^.]+)\.[0-9A-Za-z]{4}$")


def make_stream(js: JsClient, name: str, msgs: int = 0, **stream: Any) -> str:
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], storage="memory", **stream)
    for i in range(msgs):
        js.pub_ok(f"{p}.m", b"m%d" % i)
    return p


def create(js: JsClient, stream: str, config: dict[str, Any], name: str = "d") -> dict[str, Any]:
    """A consumer named ``name`` when ``config`` names one (durable or ``name``), else an
    ephemeral created with the unnamed form."""
    named = config.get("durable_name") or "name" in config
    return js.create_consumer(stream, config, name if named else None)


def info(js: JsClient, stream: str, name: str = "d") -> dict[str, Any]:
    return js.api(f"CONSUMER.INFO.{stream}.{name}")


def wait_bound(js: JsClient, stream: str, name: str = "d", bound: bool = True) -> dict[str, Any]:
    """nats-server learns about interest asynchronously: poll ``push_bound``."""
    deadline = time.monotonic() + 5
    while True:
        out = info(js, stream, name)
        if out.get("push_bound", False) == bound:
            return out
        assert time.monotonic() < deadline, out
        time.sleep(0.02)


def inbox() -> str:
    return f"_DLV.{uuid.uuid4().hex[:16]}"


def rfc3339(dt: datetime) -> str:
    """UTC RFC 3339 as Go prints it (fraction without trailing zeros)."""
    text = dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{dt.microsecond:06d}".rstrip("0")
    return text + (f".{frac}" if frac else "") + "Z"


# ------------------------------------------------------------------------------ delivery


def test_js_push_delivers_with_ack_subject(target: str, js: JsClient, stream_name: str) -> None:
    """Messages go to the deliver subject with their stored subject and the v1 ack reply."""
    p = make_stream(js, stream_name, msgs=2)
    dl = inbox()
    out = create(js, stream_name, {"durable_name": "d", "deliver_subject": dl,
                                   "ack_policy": "explicit"})
    assert "push_bound" not in out and out["config"]["deliver_subject"] == dl
    sub = Sub(js, dl)
    a, b = sub.take(2)
    assert (a.subject, a.data, b.data) == (f"{p}.m", b"m0", b"m1")
    assert a.frame == b"MSG %s %s %s 2\r\nm0\r\n" % (a.subject.encode(), sub.sid.encode(),
                                                      a.reply.encode())
    assert ack_fields(a)[:6] == (stream_name, "d", 1, 1, 1, ack_fields(a)[5])
    assert (ack_fields(a)[6], ack_fields(b)[6]) == (1, 0)
    i = wait_bound(js, stream_name)
    assert i["push_bound"] is True and i["num_ack_pending"] == 2 and i["num_waiting"] == 0
    js.pub_ok(f"{p}.n", b"live")
    c = sub.next()
    assert (c.subject, c.data, ack_fields(c)[3:5]) == (f"{p}.n", b"live", (3, 3))


def test_js_push_no_delivery_without_interest(target: str, js: JsClient,
                                             stream_name: str) -> None:
    """A wildcard subscription that merely matches does not activate the consumer; the exact
    one does, and then the wildcard gets copies too (it is a normal publish)."""
    make_stream(js, stream_name, msgs=1)
    dl = inbox()
    wild = Sub(js, "_DLV.>")
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl})
    wild.nothing(0.4)
    assert "push_bound" not in info(js, stream_name)
    exact = Sub(js, dl)
    assert exact.next().data == b"m0"
    m = wild.next()
    assert (m.data, m.sid) == (b"m0", wild.sid)
    wait_bound(js, stream_name)


def test_js_push_bound_clears_on_unsubscribe(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl})
    sub = Sub(js, dl)
    wait_bound(js, stream_name)
    sub.unsub()
    out = wait_bound(js, stream_name, bound=False)
    assert "push_bound" not in out


def test_js_push_waits_for_interest_then_delivers_backlog(target: str, js: JsClient,
                                                          stream_name: str) -> None:
    p = make_stream(js, stream_name)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "none"})
    for i in range(3):
        js.pub_ok(f"{p}.m", b"x%d" % i)
    deadline = time.monotonic() + 5  # nats-server counts new messages asynchronously
    while info(js, stream_name)["num_pending"] != 3:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    sub = Sub(js, dl)
    assert [m.data for m in sub.take(3)] == [b"x0", b"x1", b"x2"]


def test_js_push_deliver_group_needs_queue_subscription(target: str, js: JsClient,
                                                        stream_name: str) -> None:
    """With ``deliver_group`` only a queue subscription in that group activates it; each
    message then goes to one member."""
    make_stream(js, stream_name, msgs=6)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "deliver_group": "g"})
    plain = Sub(js, dl)
    other = Sub(js, dl, queue="h")
    plain.nothing(0.4)
    assert "push_bound" not in info(js, stream_name)
    q1 = Sub(js, dl, queue="g")
    q2 = Sub(js, dl, queue="g")
    got: list[bytes] = []
    deadline = time.monotonic() + 5
    while len(got) < 6 and time.monotonic() < deadline:
        for s in (q1, q2):
            try:
                got.append(s.next(0.1).data)
            except TimeoutError:
                pass
    assert sorted(got) == [b"m%d" % i for i in range(6)]
    assert len(plain.take(6)) == 6 and len(other.take(6)) == 6  # their own copies
    wait_bound(js, stream_name)


def test_js_push_headers_only(target: str, js: JsClient, stream_name: str) -> None:
    p = make_stream(js, stream_name)
    js.pub_ok(f"{p}.a", b"hello")
    js.pub_ok(f"{p}.b", b"body", header_block(("X-A", "1")))
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "headers_only": True})
    sub = Sub(js, dl)
    a, b = sub.take(2)
    assert (a.header, a.data) == (b"NATS/1.0\r\nNats-Msg-Size: 5\r\n\r\n", b"")
    assert (b.header, b.data) == (b"NATS/1.0\r\nX-A: 1\r\nNats-Msg-Size: 4\r\n\r\n", b"")


def test_js_push_max_ack_pending_gates(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name, msgs=5)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl,
                             "ack_policy": "explicit", "max_ack_pending": 2})
    sub = Sub(js, dl)
    a, b = sub.take(2)
    sub.nothing(0.4)
    js.request(a.reply or "", b"")
    c = sub.next()
    assert c.data == b"m2"
    sub.nothing(0.3)
    i = info(js, stream_name)
    assert (i["num_ack_pending"], i["num_pending"]) == (2, 2)


def test_js_push_nak_redelivers_new_consumer_seq(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    make_stream(js, stream_name, msgs=1)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "explicit"})
    sub = Sub(js, dl)
    m = sub.next()
    js.request(m.reply or "", b"-NAK")
    r = sub.next()
    assert r.data == b"m0" and ack_fields(r)[2:5] == (2, 1, 2)
    i = info(js, stream_name)
    assert (i["num_redelivered"], i["num_ack_pending"]) == (1, 1)


def test_js_push_ack_wait_redelivery(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name, msgs=1)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "explicit",
                             "ack_wait": 500_000_000})
    sub = Sub(js, dl)
    t0 = time.monotonic()
    assert ack_fields(sub.next())[2] == 1
    r = sub.next(3)
    assert ack_fields(r)[2:5] == (2, 1, 2) and time.monotonic() - t0 >= 0.4


def test_js_push_msg_next_is_409(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name, msgs=1)
    create(js, stream_name, {"durable_name": "d", "deliver_subject": inbox()})
    r = Sub(js, inbox())
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", b"", reply=r.subject)
    m = r.next()
    assert m.header == b"NATS/1.0 409 Consumer is push based\r\n\r\n"


# ------------------------------------------------------------------------------ heartbeats, FC


def test_js_push_idle_heartbeat_frame(target: str, js: JsClient, stream_name: str) -> None:
    """After the backlog, an idle interval brings ``100 Idle Heartbeat`` naming the last
    consumer and stream sequences."""
    make_stream(js, stream_name, msgs=2)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "none",
                             "idle_heartbeat": 200_000_000})
    sub = Sub(js, dl)
    assert [m.data for m in sub.take(2)] == [b"m0", b"m1"]
    hb = sub.next(2)
    header = b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\nNats-Last-Stream: 2\r\n\r\n"
    assert hb.frame == (b"HMSG %s %s %d %d\r\n" % (dl.encode(), sub.sid.encode(), len(header),
                                                   len(header)) + header + b"\r\n")
    t0 = time.monotonic()
    sub.next(2)
    assert 0.1 < time.monotonic() - t0 < 0.6


def test_js_push_idle_heartbeat_with_no_messages(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    make_stream(js, stream_name)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl,
                             "idle_heartbeat": 100_000_000})
    sub = Sub(js, dl)
    hb = sub.next(2)
    assert hb.header == (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\n"
                         b"Nats-Last-Stream: 0\r\n\r\n")
    assert hb.reply is None and hb.data == b""


def test_js_push_flow_control_request_and_stall(target: str, js: JsClient,
                                                stream_name: str) -> None:
    """2 MiB window: the FC request follows the delivery that takes outstanding bytes over
    1 MiB (the 11th 100 KiB message); past 2 MiB delivery stops, heartbeats report the stall,
    and answering the request releases the rest."""
    p = make_stream(js, stream_name)
    body = b"x" * 102400
    for _ in range(25):
        js.pub_ok(f"{p}.big", body)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "none",
                             "flow_control": True, "idle_heartbeat": 500_000_000})
    sub = Sub(js, dl)
    frames = sub.take(12)
    assert all(len(m.data) == 102400 for m in frames[:11])
    fc = frames[11]
    assert FC_RE.match(fc.reply or ""), fc.reply
    assert fc.frame == (b"HMSG %s %s %s 36 36\r\nNATS/1.0 100 FlowControl Request\r\n\r\n\r\n"
                        % (dl.encode(), sub.sid.encode(), (fc.reply or "").encode()))
    more = [sub.data() for _ in range(10)]  # up to 21 messages (> 2 MiB outstanding)
    assert len(more) == 10
    hb = sub.next(2)  # the 22nd is held back: the next thing is a stalled heartbeat
    assert hb.header == (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 21\r\n"
                         b"Nats-Last-Stream: 21\r\nNats-Consumer-Stalled: "
                         + (fc.reply or "").encode() + b"\r\n\r\n")
    js.send(fc.reply or "", b"")
    rest = [sub.data() for _ in range(4)]
    assert [ack_fields(m)[4] for m in rest] == [22, 23, 24, 25]


def test_js_push_stale_flow_control_reply_ignored(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    p = make_stream(js, stream_name)
    body = b"y" * 102400
    for _ in range(23):
        js.pub_ok(f"{p}.big", body)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "none",
                             "flow_control": True, "idle_heartbeat": 500_000_000})
    sub = Sub(js, dl)
    fc = sub.take(12)[11]
    [sub.data() for _ in range(10)]
    js.send(f"$JS.FC.{stream_name}.d.zzzz", b"")  # not the outstanding id
    hb = sub.next(2)
    assert hb.status == "100 Idle Heartbeat" and b"Nats-Consumer-Stalled" in hb.header
    js.send(fc.reply or "", b"")
    assert [ack_fields(sub.data())[4] for _ in range(2)] == [22, 23]


# ------------------------------------------------------------------------------ lifecycle


def test_js_push_ephemeral_removed_without_interest(target: str, js: JsClient,
                                                    stream_name: str) -> None:
    make_stream(js, stream_name)
    adv = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.DELETED.{stream_name}.>")
    dl = inbox()
    out = create(js, stream_name, {"deliver_subject": dl, "inactive_threshold": 500_000_000})
    name = out["name"]
    t0 = time.monotonic()
    m = adv.next(5)
    took = time.monotonic() - t0
    assert 0.3 < took < 3
    body = json.loads(m.data)
    assert (body["type"], body["stream"], body["consumer"], body["action"]) == (
        "io.nats.jetstream.advisory.v1.consumer_action", stream_name, name, "delete")
    assert info(js, stream_name, name)["error"]["err_code"] == 10014


def test_js_push_ephemeral_kept_while_bound(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name)
    dl = inbox()
    sub = Sub(js, dl)
    out = create(js, stream_name, {"deliver_subject": dl, "inactive_threshold": 300_000_000})
    name = out["name"]
    time.sleep(0.8)
    assert info(js, stream_name, name)["push_bound"] is True
    sub.unsub()
    deadline = time.monotonic() + 5
    while "error" not in info(js, stream_name, name):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_js_push_durable_new_deliver_subject_while_bound(target: str, js: JsClient,
                                                         stream_name: str) -> None:
    """Re-creating a bound durable with another deliver subject → 400/10013; once nobody
    listens the update is allowed and pending messages go to the new subject."""
    make_stream(js, stream_name, msgs=1)
    dl1, dl2 = inbox(), inbox()
    cfg = {"durable_name": "d", "deliver_subject": dl1, "ack_policy": "explicit"}
    create(js, stream_name, cfg)
    s1 = Sub(js, dl1)
    assert s1.next().data == b"m0"
    wait_bound(js, stream_name)
    out = js.api(f"CONSUMER.CREATE.{stream_name}.d",
                 {"stream_name": stream_name, "config": {**cfg, "deliver_subject": dl2}})
    assert out["error"] == {"code": 400, "err_code": 10013,
                            "description": "consumer name already in use"}
    s1.unsub()
    wait_bound(js, stream_name, bound=False)
    out = create(js, stream_name, {**cfg, "deliver_subject": dl2})
    assert out["config"]["deliver_subject"] == dl2
    s2 = Sub(js, dl2)
    r = s2.next()
    assert r.data == b"m0" and ack_fields(r)[2] == 2


# ------------------------------------------------------------------------------ pause


def test_js_pause_reply_info_and_advisories(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name)
    create(js, stream_name, {"durable_name": "d", "ack_policy": "explicit"})
    adv = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.PAUSE.{stream_name}.d")
    until = datetime.now(timezone.utc) + timedelta(seconds=60)
    text = rfc3339(until.replace(microsecond=123456))
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.d", {"pause_until": text})
    assert (out["type"], out["paused"], out["pause_until"]) == (
        "io.nats.jetstream.api.v1.consumer_pause_response", True, text)
    assert 55e9 < out["pause_remaining"] <= 61e9
    i = info(js, stream_name)
    assert i["paused"] is True and i["config"]["pause_until"] == text
    assert i["config"]["metadata"]["_nats.req.level"] == "1"
    a = json.loads(adv.next().data)
    assert (a["type"], a["stream"], a["consumer"], a["paused"], a["pause_until"]) == (
        "io.nats.jetstream.advisory.v1.consumer_pause", stream_name, "d", True, text)
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.d")
    assert out == {"type": "io.nats.jetstream.api.v1.consumer_pause_response", "paused": False,
                   "pause_until": "0001-01-01T00:00:00Z"}
    a = json.loads(adv.next().data)
    assert (a["paused"], a["pause_until"]) == (False, "0001-01-01T00:00:00Z")
    i = info(js, stream_name)
    assert "paused" not in i and "pause_until" not in i["config"]
    assert i["config"]["metadata"]["_nats.req.level"] == "0"
    js.api(f"CONSUMER.PAUSE.{stream_name}.d")  # already resumed: no advisory
    adv.nothing(0.3)


def test_js_pause_errors(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name)
    create(js, stream_name, {"durable_name": "d"})
    zero = {"paused": False, "pause_until": "0001-01-01T00:00:00Z"}
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.nope", {"pause_until": "2099-01-01T00:00:00Z"})
    assert out == {"type": "io.nats.jetstream.api.v1.consumer_pause_response",
                   "error": {"code": 404, "err_code": 10014, "description": "consumer not found"},
                   **zero}
    out = js.api(f"CONSUMER.PAUSE.NOSUCH{stream_name}.d")
    assert out["error"]["err_code"] == 10059 and out["paused"] is False
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.d", {"pause_untl": 1})
    assert out["error"] == {"code": 400, "err_code": 10025,
                            "description": 'invalid JSON: json: unknown field "pause_untl"'}
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.d", b"not json")
    assert out == {"type": "io.nats.jetstream.api.v1.consumer_pause_response", **zero}


def test_js_pause_past_time_stored_not_paused(target: str, js: JsClient,
                                              stream_name: str) -> None:
    make_stream(js, stream_name)
    create(js, stream_name, {"durable_name": "d"})
    past = "2020-01-02T03:04:05.5Z"
    out = js.api(f"CONSUMER.PAUSE.{stream_name}.d", {"pause_until": past})
    assert (out["paused"], out["pause_until"], "pause_remaining" in out) == (False, past, False)
    i = info(js, stream_name)
    assert i["config"]["pause_until"] == past and "paused" not in i


def test_js_pause_push_resumes_at_deadline(target: str, js: JsClient, stream_name: str) -> None:
    """No deliveries while paused; at the deadline they resume and an advisory with
    ``paused:false`` and the deadline is sent."""
    p = make_stream(js, stream_name)
    dl = inbox()
    create(js, stream_name, {"durable_name": "d", "deliver_subject": dl, "ack_policy": "none"})
    sub = Sub(js, dl)
    wait_bound(js, stream_name)
    adv = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.PAUSE.{stream_name}.d")
    text = rfc3339(datetime.now(timezone.utc) + timedelta(seconds=1))
    assert js.api(f"CONSUMER.PAUSE.{stream_name}.d", {"pause_until": text})["paused"] is True
    assert json.loads(adv.next().data)["paused"] is True
    js.pub_ok(f"{p}.m", b"held")
    sub.nothing(0.4)
    assert sub.next(3).data == b"held"
    a = json.loads(adv.next(3).data)
    assert (a["paused"], a["pause_until"]) == (False, text)


def test_js_pause_pull_holds_requests(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name, msgs=1)
    create(js, stream_name, {"durable_name": "d", "ack_policy": "explicit"})
    text = rfc3339(datetime.now(timezone.utc) + timedelta(seconds=1))
    js.api(f"CONSUMER.PAUSE.{stream_name}.d", {"pause_until": text})
    r = Sub(js, inbox())
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", {"batch": 1, "expires": 5_000_000_000},
            reply=r.subject)
    r.nothing(0.4)
    assert r.next(3).data == b"m0"


def test_js_create_paused_consumer_advises(target: str, js: JsClient, stream_name: str) -> None:
    make_stream(js, stream_name)
    adv = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.*.{stream_name}.e")
    text = "2099-01-01T00:00:00Z"
    out = create(js, stream_name, {"name": "e", "pause_until": text}, "e")
    assert out["paused"] is True and out["config"]["pause_until"] == text
    got = [adv.next() for _ in range(2)]
    assert [m.subject.split(".")[4] for m in got] == ["CREATED", "PAUSE"]
    a = json.loads(got[1].data)
    assert (a["paused"], a["pause_until"]) == (True, text)
