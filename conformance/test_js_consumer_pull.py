"""``CONSUMER.MSG.NEXT`` and acks as wire bytes: deliveries with the stored subject and the v1
ack subject, every pull status with its exact headers, ack payloads and the info counters."""
from __future__ import annotations

import time

import pytest

from conformance.jshelpers import JsClient, ack_fields, header_block, status_frame, wait_for
from conformance.pullconsumer import Pull, pull


def test_js_pull_empty_body_one_message(target: str, js: JsClient, stream_name: str) -> None:
    """Empty body = batch 1: the stored subject, its payload, the v1 ack subject as reply."""
    pl = Pull(js, stream_name, msgs=2)
    [m] = pl.next(until_status=False, count=1)
    assert (m.subject, m.data, m.header) == (f"{pl.p}.m", b"m0", b"")
    stream, cons, dc, sseq, dseq, stamp, pending = ack_fields(m)
    assert (stream, cons, dc, sseq, dseq, pending) == (stream_name, "c", 1, 1, 1, 1)
    assert stamp > 1_600_000_000 * 10**9
    assert m.frame == (b"MSG %s %s %s 2\r\nm0\r\n" % (m.subject.encode(), m.sid.encode(),
                                                       m.reply.encode()))
    info = pl.info()
    assert info["delivered"]["consumer_seq"] == 1 and info["num_ack_pending"] == 1
    assert info["num_pending"] == 1 and "last_active" in info["delivered"]


def test_js_pull_stored_headers_verbatim(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name)
    hdr = header_block(("X-A", "1"), ("Nats-Msg-Id", "q"))
    js.pub_ok(f"{pl.p}.h", b"body", hdr)
    [m] = pl.next(until_status=False, count=1)
    assert m.frame.startswith(b"HMSG %s " % f"{pl.p}.h".encode())
    assert (m.header, m.data) == (hdr, b"body")


def test_js_pull_batch_no_wait_then_404(target: str, js: JsClient, stream_name: str) -> None:
    """batch 10, 2 available, no_wait → 2 messages then ``404 No Messages``."""
    pl = Pull(js, stream_name, msgs=2)
    msgs = pl.next({"batch": 10, "no_wait": True})
    assert [m.data for m in msgs[:2]] == [b"m0", b"m1"]
    assert [ack_fields(m)[6] for m in msgs[:2]] == [1, 0]
    assert msgs[2].frame == status_frame(msgs[2], "404 No Messages")


def test_js_pull_no_wait_nothing(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name)
    [m] = pl.next({"no_wait": True})
    assert m.frame == status_frame(m, "404 No Messages")


def test_js_pull_integer_body(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=3)
    msgs = pl.next(b"2", until_status=False, count=2)
    assert [ack_fields(m)[3] for m in msgs] == [1, 2]
    assert pl.info()["num_pending"] == 1


def test_js_pull_expires_408_with_pending(target: str, js: JsClient, stream_name: str) -> None:
    """Expiry: ``408 Request Timeout`` with the undelivered batch and unused byte budget."""
    pl = Pull(js, stream_name, msgs=1)
    msgs = pl.next({"batch": 4, "expires": 300_000_000})
    assert msgs[0].data == b"m0"
    assert msgs[1].frame == status_frame(msgs[1], "408 Request Timeout",
                                         ("Nats-Pending-Messages", "3"),
                                         ("Nats-Pending-Bytes", "0"))


def test_js_pull_no_wait_with_expires_waits(target: str, js: JsClient, stream_name: str) -> None:
    """no_wait + expires with nothing available waits and ends with 408, not 404."""
    pl = Pull(js, stream_name)
    [m] = pl.next({"batch": 2, "no_wait": True, "expires": 200_000_000})
    assert m.frame == status_frame(m, "408 Request Timeout", ("Nats-Pending-Messages", "2"),
                                   ("Nats-Pending-Bytes", "0"))


def test_js_pull_waiting_request_served_by_publish(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    pl = Pull(js, stream_name)
    inbox = pl.send({"batch": 1, "expires": 5_000_000_000})
    pl.wait_waiting(1)
    js.pub_ok(f"{pl.p}.late", b"L")
    m = inbox.next()
    assert (m.subject, m.data) == (f"{pl.p}.late", b"L")
    assert pl.info()["num_waiting"] == 0


def test_js_pull_max_bytes_batch_completed(target: str, js: JsClient, stream_name: str) -> None:
    """Budget left after the batch filled → ``409 Batch Completed`` with the remainders."""
    pl = Pull(js, stream_name, msgs=3)
    msgs = pl.next({"batch": 2, "max_bytes": 1000})
    sizes = [len(m.subject) + len(m.reply or "") + len(m.data) for m in msgs[:2]]
    assert msgs[2].frame == status_frame(msgs[2], "409 Batch Completed",
                                         ("Nats-Pending-Messages", "0"),
                                         ("Nats-Pending-Bytes", str(1000 - sum(sizes))))


def test_js_pull_max_bytes_without_batch(target: str, js: JsClient, stream_name: str) -> None:
    """Quirk: ``{"max_bytes": N}`` alone → one message, then Batch Completed with -1."""
    pl = Pull(js, stream_name, msgs=3)
    msgs = pl.next({"max_bytes": 500})
    size = len(msgs[0].subject) + len(msgs[0].reply or "") + len(msgs[0].data)
    assert msgs[1].frame == status_frame(msgs[1], "409 Batch Completed",
                                         ("Nats-Pending-Messages", "-1"),
                                         ("Nats-Pending-Bytes", str(500 - size)))


def test_js_pull_max_bytes_spent_exactly(target: str, js: JsClient, stream_name: str) -> None:
    """A budget spent to the byte ends the request silently after that message, even with
    batch left: no status, and the next message goes to the next request."""
    pl = Pull(js, stream_name, msgs=3)
    [probe] = pl.next({"batch": 1}, until_status=False, count=1)
    pl.ack(probe)
    # Deliveries 2 and 3 have the same size as delivery 1 (same subject, same payload
    # length, ack subjects of the same length).
    size = len(probe.subject) + len(probe.reply or "") + len(probe.data)
    inbox = pl.send({"batch": 5, "max_bytes": size, "expires": 2_000_000_000})
    m = inbox.next()
    assert m.data == b"m1" and not m.header
    try:
        extra = inbox.next(0.4)
    except TimeoutError:
        extra = None
    assert extra is None, extra
    [m] = pl.next({"batch": 1}, until_status=False, count=1)
    assert m.data == b"m2"


def test_js_pull_message_exceeds_max_bytes(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name)
    js.pub_ok(f"{pl.p}.big", b"x" * 200)
    [m] = pl.next({"batch": 3, "max_bytes": 100})
    assert m.frame == status_frame(m, "409 Message Size Exceeds MaxBytes",
                                   ("Nats-Pending-Messages", "3"),
                                   ("Nats-Pending-Bytes", "100"))
    assert pl.info()["num_pending"] == 1


def test_js_pull_request_limits(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=1, max_batch=5, max_expires=2_000_000_000, max_bytes=1000)
    [m] = pl.next({"batch": 6})
    assert m.frame == status_frame(m, "409 Exceeded MaxRequestBatch of 5")
    [m] = pl.next({"batch": 1, "expires": 3_000_000_000})
    assert m.frame == status_frame(m, "409 Exceeded MaxRequestExpires of 2s")
    [m] = pl.next({"batch": 1, "max_bytes": 1001})
    assert m.frame == status_frame(m, "409 Exceeded MaxRequestMaxBytes of 1000")


def test_js_pull_bad_requests(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name)
    [m] = pl.next(b'{"batch":')
    assert m.frame == status_frame(m, "400 Bad Request - unexpected end of JSON input")
    [m] = pl.next(b'{"batch":"x"}')
    assert m.frame == status_frame(
        m, "400 Bad Request - json: cannot unmarshal string into Go struct field .batch of type int")
    [m] = pl.next({"batch": 1, "expires": 1000, "idle_heartbeat": 1000})
    assert m.frame == status_frame(m, "400 Bad Request - heartbeat value too large")
    # Without an expiry any heartbeat is too large (nats-py's no-wait probe can send this).
    [m] = pl.next({"batch": 1, "no_wait": True, "idle_heartbeat": 100_000_000})
    assert m.frame == status_frame(m, "400 Bad Request - heartbeat value too large")


def test_js_pull_max_waiting(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, max_waiting=1)
    pl.send({"batch": 1, "expires": 2_000_000_000})
    pl.wait_waiting(1)
    [m] = pl.next({"batch": 1, "expires": 2_000_000_000})
    assert m.frame == status_frame(m, "409 Exceeded MaxWaiting")


def test_js_pull_consumer_deleted_releases_waiters(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    pl = Pull(js, stream_name)
    inbox = pl.send({"batch": 5, "expires": 5_000_000_000})
    pl.wait_waiting(1)
    assert js.api(f"CONSUMER.DELETE.{stream_name}.c")["success"]
    m = inbox.next()
    assert m.frame == status_frame(m, "409 Consumer Deleted")


def test_js_pull_stream_deleted_releases_waiters(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    pl = Pull(js, stream_name)
    inbox = pl.send({"batch": 5})
    pl.wait_waiting(1)
    assert js.delete(stream_name)["success"]
    m = inbox.next()
    assert m.frame == status_frame(m, "409 Consumer Deleted")


def test_js_pull_missing_consumer_503(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name, subjects=[f"{stream_name.lower()}.>"])
    subj = f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.nope"
    [m] = pull(js, subj, b"")
    assert m.frame == status_frame(m, "503", ("Nats-Subject", subj))


def test_js_ack_explicit_floor_and_counters(target: str, js: JsClient, stream_name: str) -> None:
    """TERM/NAK/ACK effects on ack floor, ack pending and redelivered counts (verified
    sequence from nats-server)."""
    pl = Pull(js, stream_name, msgs=3)
    m1, m2 = pl.next(b"2", until_status=False, count=2)
    assert pl.ack(m2, b"-NAK").data == b""
    assert pl.ack(m1, b"+TERM").data == b""
    info = pl.info()
    assert (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]) == (1, 1)
    assert (info["num_ack_pending"], info["num_redelivered"], info["num_pending"]) == (1, 0, 1)
    r2, m3 = pl.next(b"2", until_status=False, count=2)
    assert ack_fields(r2)[2:5] == (2, 2, 3) and r2.data == b"m1"
    assert ack_fields(m3)[2:5] == (1, 3, 4)
    info = pl.info()
    assert (info["num_ack_pending"], info["num_redelivered"]) == (2, 1)
    pl.ack(m3)
    info = pl.info()
    assert info["ack_floor"]["consumer_seq"] == 1 and info["num_ack_pending"] == 1
    pl.ack(r2, b"+ACK")
    info = pl.info()
    assert info["ack_floor"] == {"consumer_seq": 4, "stream_seq": 3,
                                 "last_active": info["ack_floor"]["last_active"]}
    assert (info["num_ack_pending"], info["num_redelivered"]) == (0, 0)


def test_js_ack_all_policy(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=3, ack_policy="all")
    msgs = pl.next(b"3", until_status=False, count=3)
    pl.ack(msgs[1])
    info = pl.info()
    assert info["ack_floor"]["consumer_seq"] == 2 and info["ack_floor"]["stream_seq"] == 2
    assert info["num_ack_pending"] == 1


def test_js_ack_none_floor_follows_delivery(target: str, js: JsClient, stream_name: str) -> None:
    """Ack none: floor = delivered; an ack request gets the core 503 (nobody subscribes)."""
    pl = Pull(js, stream_name, msgs=3, ack_policy="none")
    msgs = pl.next(b"2", until_status=False, count=2)
    info = pl.info()
    assert info["ack_floor"] == {"consumer_seq": 2, "stream_seq": 2}
    assert info["num_ack_pending"] == 0
    [m] = js.request_many(msgs[0].reply or "", b"")
    assert m.status == "503"


def test_js_ack_wait_redelivers(target: str, js: JsClient, stream_name: str) -> None:
    """Not acked within ack_wait (300 ms) → redelivered with delivery count 2."""
    pl = Pull(js, stream_name, msgs=1, ack_wait=300_000_000)
    [m] = pl.next(until_status=False, count=1)
    time.sleep(0.5)
    [r] = pl.next(until_status=False, count=1)
    assert ack_fields(r)[2:5] == (2, 1, 2) and r.data == b"m0"
    assert pl.info()["num_redelivered"] == 1


def test_js_ack_max_deliver(target: str, js: JsClient, stream_name: str) -> None:
    """max_deliver 2: after the second ack wait the message is never offered again."""
    pl = Pull(js, stream_name, msgs=1, ack_wait=200_000_000, max_deliver=2)
    pl.next(until_status=False, count=1)
    time.sleep(0.35)
    [r] = pl.next(until_status=False, count=1)
    assert ack_fields(r)[2] == 2
    time.sleep(0.35)
    [m] = pl.next({"no_wait": True})
    assert m.status == "404 No Messages"
    assert pl.info()["num_ack_pending"] == 0


def test_js_ack_max_ack_pending_gates(target: str, js: JsClient, stream_name: str) -> None:
    """At max_ack_pending a request waits (no status) until an ack frees room."""
    pl = Pull(js, stream_name, msgs=2, max_ack_pending=1)
    [m] = pl.next(until_status=False, count=1)
    inbox = pl.send({"batch": 1, "expires": 3_000_000_000})
    pl.wait_waiting(1)
    pl.ack(m)
    nxt = inbox.next()
    assert nxt.data == b"m1"


def test_js_ack_nak_with_delay(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=1)
    [m] = pl.next(until_status=False, count=1)
    pl.ack(m, b"-NAK 300ms")
    [st] = pl.next({"no_wait": True, "batch": 1})
    assert st.status in ("404 No Messages", "408 Requests Pending") or st.data == b"m0"
    time.sleep(0.45)
    [r] = pl.next(until_status=False, count=1)
    assert ack_fields(r)[2] == 2


def test_js_workqueue_ack_removes(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, msgs=2, stream={"retention": "workqueue"})
    m1, m2 = pl.next(b"2", until_status=False, count=2)
    pl.ack(m1)
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"]) == (1, 2)
    pl.ack(m2, b"+TERM")
    assert js.state(stream_name)["messages"] == 0


def test_js_interest_removed_when_all_acked(target: str, js: JsClient, stream_name: str) -> None:
    pl = Pull(js, stream_name, stream={"retention": "interest"})
    js.api(f"CONSUMER.CREATE.{stream_name}.d",
           {"stream_name": stream_name, "config": {"durable_name": "d", "ack_policy": "explicit"}})
    js.pub_ok(f"{pl.p}.x", b"1")
    [m] = pl.next(until_status=False, count=1)
    pl.ack(m)
    assert js.state(stream_name)["messages"] == 1
    [m2] = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", b"",
                until_status=False, count=1)
    js.request(m2.reply or "", b"")
    assert js.state(stream_name)["messages"] == 0


def test_js_interest_consumer_delete_releases(target: str, js: JsClient, stream_name: str) -> None:
    """Deleting the only consumer that still needs a message removes it from an interest stream."""
    pl = Pull(js, stream_name, stream={"retention": "interest"})
    js.pub_ok(f"{pl.p}.x", b"1")
    assert js.state(stream_name)["messages"] == 1
    assert js.api(f"CONSUMER.DELETE.{stream_name}.c")["success"]
    assert js.state(stream_name)["messages"] == 0


def test_js_pull_filter_subjects(target: str, js: JsClient, stream_name: str) -> None:
    p = stream_name.lower()
    pl = Pull(js, stream_name, filter_subjects=[f"{p}.a", f"{p}.c"])
    for s in ("a", "b", "c", "b", "a"):
        js.pub_ok(f"{p}.{s}", s.encode())
    msgs = pl.next({"batch": 10, "no_wait": True})
    assert [(m.subject, ack_fields(m)[3]) for m in msgs[:-1]] == [
        (f"{p}.a", 1), (f"{p}.c", 3), (f"{p}.a", 5)]
    assert msgs[-1].status == "404 No Messages"
    info = pl.info()
    assert info["delivered"]["stream_seq"] == 5 and info["num_pending"] == 0


def test_js_pull_last_per_subject(target: str, js: JsClient, stream_name: str) -> None:
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    for s in ("a", "b", "a", "c", "b"):
        js.pub_ok(f"{p}.{s}", s.encode())
    js.api(f"CONSUMER.CREATE.{stream_name}.l",
           {"stream_name": stream_name,
            "config": {"durable_name": "l", "deliver_policy": "last_per_subject",
                       "filter_subject": f"{p}.*", "ack_policy": "explicit"}})
    msgs = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.l", {"batch": 5, "no_wait": True})
    assert [ack_fields(m)[3:5] + (ack_fields(m)[6],) for m in msgs[:-1]] == [
        (3, 1, 2), (4, 2, 1), (5, 3, 0)]
    js.pub_ok(f"{p}.z")
    # nats-server counts the new message for its consumers a moment after the pub ack.
    info = wait_for(lambda: (i := js.api(f"CONSUMER.INFO.{stream_name}.l"))["num_pending"] == 1
                    and i)
    assert info["delivered"]["stream_seq"] == 5 and info["num_pending"] == 1


def test_js_ack_double_ack_reply_after_apply(target: str, js: JsClient, stream_name: str) -> None:
    """An ack sent as a request is answered (empty) after it took effect; again for a repeat."""
    pl = Pull(js, stream_name, msgs=1)
    [m] = pl.next(until_status=False, count=1)
    assert pl.ack(m).frame.endswith(b" 0\r\n\r\n")
    assert pl.info()["num_ack_pending"] == 0
    assert pl.ack(m).data == b""


def test_js_pull_idle_heartbeat(target: str, js: JsClient, stream_name: str) -> None:
    """A waiting pull request with ``idle_heartbeat`` gets ``100 Idle Heartbeat`` carrying the
    last delivered consumer and stream sequences, then its 408 at expiry."""
    pl = Pull(js, stream_name, msgs=2)
    [m] = pl.next({"batch": 1}, until_status=False, count=1)
    pl.ack(m)
    inbox = pl.send({"batch": 5, "expires": 1_200_000_000, "idle_heartbeat": 500_000_000})
    got = [inbox.next()]
    while not got[-1].status.startswith("408"):
        got.append(inbox.next())
    # One message is still there: it comes at once, then heartbeats until expiry.
    assert got[0].data == b"m1"
    beats = got[1:-1]
    assert beats, "no heartbeat before the request expired"
    for hb in beats:
        assert hb.frame == status_frame(hb, "100 Idle Heartbeat", ("Nats-Last-Consumer", "2"),
                                        ("Nats-Last-Stream", "2"))
    assert got[-1].frame == status_frame(got[-1], "408 Request Timeout",
                                         ("Nats-Pending-Messages", "4"),
                                         ("Nats-Pending-Bytes", "0"))


@pytest.mark.parametrize("body,pending", [
    ({"batch": 5, "expires": -1}, "5"),
    ({"batch": 5, "expires": -1, "no_wait": True}, "5"),
    ({"expires": -5_000_000_000}, "0"),
    ({"batch": 2, "max_bytes": 100, "expires": -1}, "2"),
])
def test_js_pull_negative_expires_is_already_over(target: str, js: JsClient, stream_name: str,
                                                  body: dict, pending: str) -> None:
    """A negative ``expires`` is a deadline already past: ``408 Request Timeout`` at once with
    the whole batch pending, and no message is taken even when some are waiting; the request
    does not stay waiting."""
    pl = Pull(js, stream_name, msgs=2)
    [m] = pl.next(body)
    budget = str(body.get("max_bytes", 0))
    assert m.frame == status_frame(m, "408 Request Timeout", ("Nats-Pending-Messages", pending),
                                   ("Nats-Pending-Bytes", budget))
    info = pl.info()
    assert (info["num_waiting"], info["num_ack_pending"], info["delivered"]["stream_seq"]) == (
        0, 0, 0)
