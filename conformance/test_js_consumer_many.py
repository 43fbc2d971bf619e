"""Many consumers on one stream: idle consumers, filtered and
not, pull and push, beside the ones that work. What each reports and delivers does not depend
on how many others there are: every unfiltered consumer counts every message, a pull
consumer's deliveries carry the pending count in their ack subject, a push consumer that gains
interest late gets everything from its start, a message removed by a limit is a ``+TERM`` for
the consumer holding it while the idle ones recount, and on an interest stream an ack removes
a message once no other consumer whose filter takes it still needs it.
"""
from __future__ import annotations

import json

import pytest

from conformance.jshelpers import JsClient, Sub, ack_fields, wait_for
from conformance.pullconsumer import pull

IDLE = 10  # of each kind


def _create(js: JsClient, stream: str, name: str, **config: object) -> None:
    cfg = {"durable_name": name, "ack_policy": "explicit", "ack_wait": 30_000_000_000, **config}
    js.create_consumer(stream, cfg, name)


def _pending(js: JsClient, stream: str, names: list[str]) -> dict[str, int]:
    return {n: js.api(f"CONSUMER.INFO.{stream}.{n}")["num_pending"] for n in names}


def _settled(js: JsClient, stream: str, expected: dict[str, int]) -> dict[str, int]:
    """num_pending of these consumers once it is ``expected`` (nats-server updates its running
    count asynchronously after a publish), else as last seen."""
    last: dict[str, int] = {}

    def done() -> bool:
        last.update(_pending(js, stream, list(expected)))
        return last == expected

    try:
        wait_for(done, timeout=5)
    except AssertionError:
        pass
    return last


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_js_many_idle_consumers_count_and_deliver(target: str, js: JsClient, stream_name: str,
                                                  storage: str) -> None:
    s, p = stream_name, stream_name.lower()
    js.create(s, subjects=[f"{p}.>"], storage=storage)
    pulls = [f"u{i}" for i in range(IDLE)]
    pushes = [f"h{i}" for i in range(IDLE)]
    filtered = [f"f{i}" for i in range(IDLE)]
    for name in pulls:
        _create(js, s, name)
    for i, name in enumerate(pushes):
        _create(js, s, name, deliver_subject=f"dlv.{p}.{i}")  # nobody listens yet
    for i, name in enumerate(filtered):
        _create(js, s, name, filter_subject=f"{p}.none.{i}")
    for i in range(12):
        js.pub_ok(f"{p}.{'ab'[i % 2]}", b"m%d" % i)
    want = {**{n: 12 for n in pulls + pushes}, **{n: 0 for n in filtered}}
    assert _settled(js, s, want) == want

    # one pull consumer takes five: the ack subjects count down what is left
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{s}.u3", {"batch": 5}, until_status=False,
               count=5)
    assert [ack_fields(m)[2:5] + (ack_fields(m)[6],) for m in got] == [
        (1, q, q, 12 - q) for q in range(1, 6)]

    # a push consumer gains interest: everything from its start, counted down
    sub = Sub(js, f"dlv.{p}.4")  # no barrier: deliveries may come before any PONG
    got = sub.take(12)
    assert [(ack_fields(m)[1], ack_fields(m)[3], ack_fields(m)[6]) for m in got] == [
        ("h4", q, 12 - q) for q in range(1, 13)]
    assert [m.subject for m in got] == [f"{p}.{'ab'[i % 2]}" for i in range(12)]

    # more messages: the idle ones count them, the bound push consumer gets them
    for i in range(3):
        js.pub_ok(f"{p}.a", b"n%d" % i)
    assert [ack_fields(sub.next())[3] for _ in range(3)] == [13, 14, 15]
    want = {**{n: 15 for n in pulls + pushes}, **{n: 0 for n in filtered}}
    want["u3"] = 10
    want["h4"] = 0
    assert _settled(js, s, want) == want
    info = js.api(f"CONSUMER.INFO.{s}.h4")
    assert (info["num_ack_pending"], info["delivered"]["stream_seq"]) == (15, 15)


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_js_many_idle_consumers_limit_removal(target: str, js: JsClient, stream_name: str,
                                              storage: str) -> None:
    s, p = stream_name, stream_name.lower()
    js.create(s, subjects=[f"{p}.>"], storage=storage, max_msgs=5)
    idle = [f"i{k}" for k in range(2 * IDLE)]
    for name in idle:
        _create(js, s, name)
    _create(js, s, "c")
    for i in range(5):
        js.pub_ok(f"{p}.a", b"m%d" % i)
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{s}.c", {"batch": 3}, until_status=False,
               count=3)
    assert [ack_fields(m)[3] for m in got] == [1, 2, 3]
    terms = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.{s}.c")
    for i in range(3):
        js.pub_ok(f"{p}.a", b"n%d" % i)  # removes 1..3, the ones c holds

    def state() -> tuple[int, int, int]:
        i = js.api(f"CONSUMER.INFO.{s}.c")
        return i["num_pending"], i["num_ack_pending"], i["ack_floor"]["stream_seq"]

    wait_for(lambda: state() == (5, 0, 3))
    # Each is acked as a +TERM with an advisory (nats-server sends them from goroutines,
    # in no fixed order, and now and then one arrives late: only what came is checked).
    events = [json.loads(m.data) for m in terms.drain()]
    assert len(events) == len({e["stream_seq"] for e in events})
    assert {(e["stream_seq"], e["deliveries"], e["reason"]) for e in events} <= {
        (q, 1, "Unacknowledged message was deleted") for q in (1, 2, 3)}
    want = {n: 5 for n in idle}
    assert _settled(js, s, want) == want
    # the idle ones start at the stream's first message now
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{s}.i7", {"batch": 2}, until_status=False,
               count=2)
    assert [(ack_fields(m)[3], ack_fields(m)[6]) for m in got] == [(4, 4), (5, 3)]


def test_js_interest_stream_with_many_filtered_consumers(target: str, js: JsClient,
                                                          stream_name: str) -> None:
    s, p = stream_name, stream_name.lower()
    js.create(s, subjects=[f"{p}.>"], retention="interest")
    for k in range(2 * IDLE):
        _create(js, s, f"f{k}", filter_subject=f"{p}.other.{k}")
    _create(js, s, "c")
    for i in range(3):
        js.pub_ok(f"{p}.a", b"m%d" % i)
    js.pub_ok(f"{p}.other.7", b"kept")  # f7 and c want it
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{s}.c", {"batch": 4}, until_status=False,
               count=4)
    assert [ack_fields(m)[3] for m in got] == [1, 2, 3, 4]
    for m in got:
        assert js.request(m.reply or "", b"+ACK").data == b""
    # acked by the only consumer that takes them: gone; the other still waits for f7
    wait_for(lambda: js.state(s)["messages"] == 1)
    st = js.state(s)
    assert (st["first_seq"], st["last_seq"]) == (4, 4)
    [m] = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{s}.f7", {"batch": 1}, until_status=False,
               count=1)
    assert ack_fields(m)[3] == 4
    assert js.request(m.reply or "", b"+ACK").data == b""
    wait_for(lambda: js.state(s)["messages"] == 0)
