"""Consumer state after edge events, as nats-server 2.15.1 keeps it: ``max_deliver`` reached
(with and without a pull request waiting afterwards), late acks of messages given up, NAK then
``ack_policy`` ``all``, the order of redeliveries."""
from __future__ import annotations

import json
import time
from typing import Any

from conformance.jshelpers import JsClient, Sub, ack_fields, wait_for
from conformance.pullconsumer import Pull, pull

def counters(pl: Pull) -> tuple[Any, ...]:
    """(ack floor consumer/stream, num_ack_pending, num_redelivered, num_pending)."""
    info = pl.info()
    return (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"],
            info["num_ack_pending"], info["num_redelivered"], info["num_pending"])


def advisories(pl: Pull) -> Sub:
    return Sub(pl.js, f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{pl.name}.c")


def test_js_max_deliver_given_up_by_next_request(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """max_deliver 2: after the second ack wait the messages stay pending (no advisory, floor
    0/0) until a pull request comes; it gives them up (one MAX_DELIVERIES advisory each, the
    floor stays) and gets the next message. Delivery counts stay until the late ack."""
    pl = Pull(js, stream_name, msgs=2, ack_wait=300_000_000, max_deliver=2)
    adv = advisories(pl)
    first = pl.next({"batch": 2}, until_status=False, count=2)
    # A waiting request gets the redeliveries once the first ack wait runs out.
    again = pl.next({"batch": 2, "expires": 3_000_000_000}, until_status=False, count=2)
    assert [ack_fields(m)[2:4] for m in again] == [(2, 1), (2, 2)]
    time.sleep(0.45)  # the second ack wait runs out with no request waiting (nothing to poll)
    assert counters(pl) == (0, 0, 2, 2, 0)
    assert adv.drain() == []
    js.pub_ok(f"{pl.p}.m", b"m2")
    [m3] = pl.next({"batch": 1, "expires": 2_000_000_000}, until_status=False, count=1)
    assert (ack_fields(m3)[2:5], m3.data) == ((1, 3, 5), b"m2")
    events = [json.loads(a.data) for a in (adv.next(), adv.next())]
    assert [(e["stream_seq"], e["deliveries"]) for e in events] == [(1, 2), (2, 2)]  # rdq order
    assert counters(pl) == (0, 0, 1, 2, 0)
    # A late ack of a message given up forgets its delivery count; the floor stays.
    assert pl.ack(first[0]).data == b""
    assert counters(pl) == (0, 0, 1, 1, 0)
    pl.ack(m3)
    assert counters(pl) == (5, 3, 0, 1, 0)
    assert adv.drain() == []


def test_js_max_deliver_one_given_up_at_ack_wait(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """max_deliver 1: the ack wait gives the messages up by itself (advisory with deliveries
    1); the reported floor stays 0/0 and num_redelivered 0; a late ack changes nothing; the
    next ack of a pending message moves the floor to the delivery position."""
    pl = Pull(js, stream_name, msgs=3, ack_wait=300_000_000, max_deliver=1)
    adv = advisories(pl)
    m1, m2 = pl.next({"batch": 2}, until_status=False, count=2)
    wait_for(lambda: pl.info()["num_ack_pending"] == 0)
    events = [json.loads(a.data) for a in (adv.next(), adv.next())]
    # nats-server checks pending acks in map order: the advisories come in any order.
    assert sorted((e["stream_seq"], e["deliveries"]) for e in events) == [(1, 1), (2, 1)]
    assert counters(pl) == (0, 0, 0, 0, 1)
    assert pl.ack(m1).data == b""
    assert counters(pl) == (0, 0, 0, 0, 1)
    [m3] = pl.next({"batch": 1}, until_status=False, count=1)
    assert counters(pl) == (0, 0, 1, 0, 0)
    pl.ack(m3)
    assert counters(pl) == (3, 3, 0, 0, 0)


def test_js_max_deliver_workqueue_late_ack_removes(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    """A message given up stays in a work-queue stream until a late ack removes it."""
    pl = Pull(js, stream_name, msgs=2, stream={"retention": "workqueue"},
              ack_wait=300_000_000, max_deliver=1)
    m1, _ = pl.next({"batch": 2}, until_status=False, count=2)
    wait_for(lambda: pl.info()["num_ack_pending"] == 0)
    assert js.state(stream_name)["messages"] == 2
    pl.ack(m1)
    assert js.state(stream_name)["messages"] == 1


def test_js_max_deliver_interest_kept_until_acked(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """Interest retention: a message one consumer gave up is kept for it after every other
    consumer acked, until its late ack."""
    pl = Pull(js, stream_name, stream={"retention": "interest"}, ack_wait=300_000_000,
              max_deliver=1)
    out = js.api(f"CONSUMER.CREATE.{stream_name}.d",
                 {"stream_name": stream_name,
                  "config": {"durable_name": "d", "ack_policy": "explicit"}})
    assert "error" not in out, out
    for i in range(2):
        js.pub_ok(f"{pl.p}.m", b"m%d" % i)
    m1, _ = pl.next({"batch": 2}, until_status=False, count=2)
    wait_for(lambda: pl.info()["num_ack_pending"] == 0)
    for m in pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", {"batch": 2},
                  until_status=False, count=2):
        js.request(m.reply or "", b"")
    assert js.state(stream_name)["messages"] == 2
    pl.ack(m1)
    assert js.state(stream_name)["messages"] == 1


def test_js_ack_all_after_nak_floor(target: str, js: JsClient, stream_name: str) -> None:
    """NAK message 1, take its redelivery, then ack_all message 3: the floor is message 3's own
    delivery (3/3), not the delivery position, and nothing stays pending."""
    pl = Pull(js, stream_name, msgs=4, ack_policy="all")
    m1, m2, m3 = pl.next({"batch": 3}, until_status=False, count=3)
    assert pl.ack(m1, b"-NAK").data == b""
    [r1] = pl.next({"batch": 1}, until_status=False, count=1)
    assert ack_fields(r1)[2:5] == (2, 1, 4)
    assert counters(pl) == (0, 0, 3, 1, 1)
    pl.ack(m3)
    assert counters(pl) == (3, 3, 0, 0, 1)
    [m4] = pl.next({"batch": 1}, until_status=False, count=1)
    assert ack_fields(m4)[2:5] == (1, 4, 5)
    assert counters(pl) == (3, 3, 1, 0, 0)


def test_js_ack_all_of_redelivery_floor(target: str, js: JsClient, stream_name: str) -> None:
    """ack_all of a redelivered message 1 (consumer sequence 4): the floor becomes 4/1 and
    messages 2 and 3 stay pending."""
    pl = Pull(js, stream_name, msgs=3, ack_policy="all")
    m1, _, _ = pl.next({"batch": 3}, until_status=False, count=3)
    pl.ack(m1, b"-NAK")
    [r1] = pl.next({"batch": 1}, until_status=False, count=1)
    pl.ack(r1)
    assert counters(pl) == (4, 1, 2, 0, 0)


def test_js_ack_all_of_given_up_message(target: str, js: JsClient, stream_name: str) -> None:
    """ack_all of a message max_deliver 1 gave up (its delivery at or under the floor the ack
    wait check left) changes nothing; the next ack_all of a pending message sets the floor."""
    pl = Pull(js, stream_name, msgs=3, ack_policy="all", ack_wait=300_000_000, max_deliver=1)
    _, m2 = pl.next({"batch": 2}, until_status=False, count=2)
    wait_for(lambda: pl.info()["num_ack_pending"] == 0)
    [m3] = pl.next({"batch": 1}, until_status=False, count=1)
    assert pl.ack(m2).data == b""
    assert counters(pl) == (0, 0, 1, 0, 0)
    pl.ack(m3)
    assert counters(pl) == (3, 3, 0, 0, 0)


def test_js_naks_redelivered_in_nak_order(target: str, js: JsClient, stream_name: str) -> None:
    """NAKed messages come back in the order they were NAKed, not in stream order."""
    pl = Pull(js, stream_name, msgs=4, ack_wait=30_000_000_000)
    msgs = pl.next({"batch": 4}, until_status=False, count=4)
    for i in (2, 0, 1):
        assert pl.ack(msgs[i], b"-NAK").data == b""
    again = pl.next({"batch": 3}, until_status=False, count=3)
    assert [ack_fields(m)[3] for m in again] == [3, 1, 2]

