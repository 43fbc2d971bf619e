"""Many acks in a single write: each one has exactly the effects it has alone.

A client that acks a fetched batch writes its acks together (the Go and C clients ``+ACK``,
nats-py an empty body), each on its own ``$JS.ACK...`` subject. A server may take such a run
of acks together; these cases pin what each ack does whatever else the write holds: acks in
order and out of order, repeated, of messages never delivered, on subjects that are no ack
subject at all or have an empty token, with a reply (``AckSync``), mixed with ``-NAK``,
``+TERM`` and ``+WPI``, seen by a wildcard subscriber on the ack subjects, on a work-queue
stream, and freeing ``max_ack_pending`` room for a waiting pull request.

nats-server applies acks from the consumer's own queue, after the write was read: the state
checks wait for it (:func:`settle`).
"""
from __future__ import annotations

import time
from typing import Any, Callable

import pytest

from conformance.helpers import RawFactory, ready, subscribe
from conformance.jshelpers import JsClient, Msg, Sub, ack_fields
from conformance.rawclient import msg, pub
from conformance.servers import Endpoint


def setup(js: JsClient, stream: str, count: int, storage: str = "memory",
          retention: str = "limits", **consumer: Any) -> list[Msg]:
    """A stream of ``count`` messages and a durable pull consumer ``C`` (explicit acks);
    the messages fetched in one batch."""
    js.create(stream, subjects=[f"{stream.lower()}.>"], storage=storage, retention=retention)
    for i in range(count):
        js.pub(f"{stream.lower()}.m", b"m%d" % i)
    js.create_consumer(stream, {"durable_name": "C", "ack_policy": "explicit",
                                "ack_wait": 30_000_000_000, **consumer}, "C")
    return fetch(js, stream, count)


def fetch(js: JsClient, stream: str, count: int, **request: Any) -> list[Msg]:
    """``count`` messages of one pull request (its own inbox)."""
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.C",
            {"batch": count, "expires": 2_000_000_000, **request}, reply=inbox.subject)
    got = inbox.take(count)
    assert all(not m.header for m in got), [m.frame for m in got]
    return got


def consumer_info(js: JsClient, stream: str) -> dict[str, Any]:
    return js.api(f"CONSUMER.INFO.{stream}.C")


def settle(js: JsClient, stream: str, done: Callable[[dict[str, Any]], bool],
           timeout: float = 5.0) -> dict[str, Any]:
    """The consumer's info once ``done`` accepts it (nats-server applies acks on its own)."""
    deadline = time.monotonic() + timeout
    while True:
        info = consumer_info(js, stream)
        if done(info) or time.monotonic() > deadline:
            return info
        time.sleep(0.02)


def floors(info: dict[str, Any]) -> tuple[int, int, int]:
    return (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"],
            info["num_ack_pending"])


@pytest.mark.parametrize("storage", ["memory", "file"])
@pytest.mark.parametrize("body", [b"+ACK", b"", b"mixed"])
def test_ack_run_acks_every_message(target: str, js: JsClient, stream_name: str, storage: str,
                                    body: bytes) -> None:
    """Forty acks in order in one write (``+ACK``, empty, or both alternating): the ack floor
    reaches the last one and nothing is pending."""
    msgs = setup(js, stream_name, 40, storage)
    bodies = [b"+ACK" if body == b"mixed" and i % 2 else (b"" if body == b"mixed" else body)
              for i in range(40)]
    js.raw.send(b"".join(pub(m.reply or "", data) for m, data in zip(msgs, bodies)))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] == 0)
    assert floors(info) == (40, 40, 0)
    assert (info["delivered"]["consumer_seq"], info["delivered"]["stream_seq"]) == (40, 40)


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_ack_run_of_the_first_ones_in_order(target: str, js: JsClient, stream_name: str,
                                            storage: str) -> None:
    """The first 25 of 40 delivered messages acked in order in one write: the floor stops at
    25 with 15 pending; acking the rest in a second write clears them."""
    msgs = setup(js, stream_name, 40, storage)
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK") for m in msgs[:25]))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] <= 15)
    assert floors(info) == (25, 25, 15)
    js.raw.send(b"".join(pub(m.reply or "", b"") for m in msgs[25:]))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] == 0)
    assert floors(info) == (40, 40, 0)


def test_ack_run_out_of_order_with_repeats_and_strays(target: str, js: JsClient,
                                                      stream_name: str) -> None:
    """Acks of 3, 1, 1, 2 and 5 among subjects that are no ack of a delivered message (a
    sequence never delivered, tokens that are no numbers, too few tokens, an empty token):
    the strays do nothing, and the floor stops below 4."""
    msgs = setup(js, stream_name, 10)
    reply = {ack_fields(m)[3]: m.reply or "" for m in msgs}
    head = f"$JS.ACK.{stream_name}.C"
    strays = [f"{head}.1.99.99.1.0", f"{head}.1.x.y.1.0", f"{head}.1.6.6",
              f"{head}.1.6..1.0", f"{head}.1.6.6.1.0.extra"]
    subjects = [reply[3], strays[0], reply[1], strays[1], reply[1], strays[2], reply[2],
                strays[3], reply[5], strays[4]]
    js.raw.send(b"".join(pub(s, b"+ACK") for s in subjects))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] <= 6)
    assert floors(info) == (3, 3, 6)
    # nothing else moved: the next ack in order lets the floor pass 5
    js.raw.send(pub(reply[4], b"+ACK"))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] <= 5)
    assert floors(info) == (5, 5, 5)


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_ack_run_with_replies(target: str, js: JsClient, stream_name: str, storage: str) -> None:
    """Acks sent as requests among plain ones: each request gets one empty reply once its
    ack is applied, and every ack counts."""
    msgs = setup(js, stream_name, 12, storage)
    replies = {i: f"{js.inbox}.ack{i}" for i in range(12) if i % 3 == 0}
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK", reply=replies.get(i))
                         for i, m in enumerate(msgs)))
    answers = [js.next_msg(r) for r in replies.values()]
    assert [(a.subject, a.data, a.header) for a in answers] == [
        (r, b"", b"") for r in replies.values()]
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] == 0)
    assert floors(info) == (12, 12, 0)


def test_ack_run_seen_by_a_wildcard_subscriber(target: str, js: JsClient, js_server: Endpoint,
                                               raw: RawFactory, stream_name: str) -> None:
    """A client subscribed to ``$JS.ACK.<stream>.>`` gets every ack of the run, in order,
    and the consumer still applies each."""
    msgs = setup(js, stream_name, 15)
    watcher = ready(raw, js_server)
    subscribe(watcher, f"$JS.ACK.{stream_name}.>", 4)
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK") for m in msgs))
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] == 0)
    assert floors(info) == (15, 15, 0)
    assert watcher.barrier() == b"".join(msg(m.reply or "", 4, b"+ACK") for m in msgs)


def test_ack_run_mixing_nak_term_and_progress(target: str, js: JsClient,
                                              stream_name: str) -> None:
    """``+ACK`` 1 and 5, ``-NAK`` 2, ``+TERM`` 3 and ``+WPI`` 4 in one write: 2 comes again
    (its second delivery), 3 is done, 4 stays pending; the floor stops at 1."""
    msgs = setup(js, stream_name, 5)
    bodies = [b"+ACK", b"-NAK", b"+TERM", b"+WPI", b"+ACK"]
    js.raw.send(b"".join(pub(m.reply or "", b) for m, b in zip(msgs, bodies)))
    again = fetch(js, stream_name, 1)
    assert again[0].data == b"m1"
    assert ack_fields(again[0])[2:4] == (2, 2)
    info = settle(js, stream_name, lambda i: i["num_ack_pending"] == 2)
    assert floors(info) == (1, 1, 2)
    assert info["num_redelivered"] == 1


def test_ack_run_on_a_work_queue(target: str, js: JsClient, stream_name: str) -> None:
    """On a work-queue stream every acked message leaves the stream; the one left unacked
    stays."""
    msgs = setup(js, stream_name, 20, retention="workqueue")
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK") for m in msgs[:19]))
    settle(js, stream_name, lambda i: i["num_ack_pending"] == 1)
    deadline = time.monotonic() + 5
    while js.state(stream_name)["messages"] != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    state = js.state(stream_name)
    assert (state["messages"], state["first_seq"], state["last_seq"]) == (1, 20, 20)


def test_ack_run_frees_room_for_a_waiting_request(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """``max_ack_pending`` 5: a request for ten gets five; acking them in one write lets
    the same request take the next five."""
    js.create(stream_name, subjects=[f"{stream_name.lower()}.>"], storage="memory")
    for i in range(10):
        js.pub(f"{stream_name.lower()}.m", b"m%d" % i)
    js.create_consumer(stream_name, {"durable_name": "C", "ack_policy": "explicit",
                                     "max_ack_pending": 5}, "C")
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.C",
            {"batch": 10, "expires": 5_000_000_000}, reply=inbox.subject)
    first = inbox.take(5)
    assert [m.data for m in first] == [b"m%d" % i for i in range(5)]
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK") for m in first))
    rest = inbox.take(5)
    assert [m.data for m in rest] == [b"m%d" % i for i in range(5, 10)]
    assert [ack_fields(m)[3] for m in rest] == list(range(6, 11))
