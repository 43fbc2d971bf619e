"""Many deliveries at once: a pull request's batch and a push consumer's ready messages.

A server may hand a consumer's next deliveries to a client together; these cases pin what each
delivery carries whatever goes with it: a batch across deleted messages, messages with and
without headers on several subjects under a filter, a batch cut by ``max_ack_pending`` and
continued as acks free room, redeliveries ahead of first deliveries, a push consumer filling
its ``max_ack_pending`` and going on after acks, and the pending count in every ack subject.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.jshelpers import JsClient, Msg, Sub, ack_fields, header_block
from conformance.rawclient import pub


def fields(msgs: list[Msg]) -> list[tuple[str, bytes, bool, int, int, int, int]]:
    """Per delivery: subject, data, has headers, delivery count, stream and consumer
    sequences, pending."""
    out = []
    for m in msgs:
        f = ack_fields(m)
        out.append((m.subject, m.data, bool(m.header), f[2], f[3], f[4], f[6]))
    return out


def fill(js: JsClient, stream: str, storage: str, count: int) -> str:
    """A stream of ``count`` messages on ``<p>.0``, ``<p>.1`` and ``<p>.2`` (every fourth
    with a header), then messages 5, 6 and 11 deleted; returns the subject prefix."""
    p = stream.lower()
    js.create(stream, subjects=[f"{p}.>"], storage=storage)
    for i in range(1, count + 1):
        headers = header_block(("K", str(i))) if i % 4 == 0 else None
        js.pub_ok(f"{p}.{i % 3}", b"m%d" % i, headers)
    for seq in (5, 6, 11):
        assert js.msg_delete(stream, {"seq": seq})["success"] is True
    return p


def settle(js: JsClient, stream: str, want_pending: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while (js.api(f"CONSUMER.INFO.{stream}.C")["num_ack_pending"] != want_pending
           and time.monotonic() < deadline):
        time.sleep(0.02)


@pytest.mark.parametrize("storage", ["memory", "file"])
@pytest.mark.parametrize("filter_subject", ["", "x.*", "x.1"])
def test_a_batch_across_gaps_headers_and_subjects(target: str, js: JsClient, stream_name: str,
                                                  storage: str, filter_subject: str) -> None:
    """One no-wait request for more than there is: every matching message once, in order,
    headers kept, the gaps skipped, each ack subject counting down what is left; then 404."""
    p = fill(js, stream_name, storage, 30)
    flt = filter_subject.replace("x", p)
    js.create_consumer(stream_name, {"durable_name": "C", "ack_policy": "explicit",
                                     "filter_subject": flt}, "C")
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.C", {"batch": 40, "no_wait": True},
            reply=inbox.subject)
    got = inbox.collect()
    assert got[-1].status.startswith("404"), got[-1].frame
    seqs = [i for i in range(1, 31) if i not in (5, 6, 11)
            and (flt in ("", f"{p}.*") or f"{p}.{i % 3}" == flt)]
    want = [(f"{p}.{s % 3}", b"m%d" % s, s % 4 == 0, 1, s, d, len(seqs) - d)
            for d, s in enumerate(seqs, 1)]
    assert fields(got[:-1]) == want


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_max_ack_pending_cuts_a_batch_and_acks_continue_it(target: str, js: JsClient,
                                                           stream_name: str,
                                                           storage: str) -> None:
    """A request for 12 with room for 5: five come; three acks in one write free room for
    three more on the same request; the consumer sequences run on without a gap."""
    fill(js, stream_name, storage, 30)
    js.create_consumer(stream_name, {"durable_name": "C", "ack_policy": "explicit",
                                     "max_ack_pending": 5}, "C")
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.C",
            {"batch": 12, "expires": 3_000_000_000}, reply=inbox.subject)
    first = inbox.take(5)
    assert [f[4:] for f in fields(first)] == [(1, 1, 26), (2, 2, 25), (3, 3, 24), (4, 4, 23),
                                              (7, 5, 22)]
    js.raw.send(b"".join(pub(m.reply or "", b"+ACK") for m in first[:3]))
    more = inbox.take(3)
    assert [f[4:] for f in fields(more)] == [(8, 6, 21), (9, 7, 20), (10, 8, 19)]


def test_redeliveries_come_before_first_deliveries(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    """Two NAKed messages of a first batch lead the next batch (delivery count 2, their
    consumer sequences new), then the first deliveries follow from where the first batch
    stopped."""
    fill(js, stream_name, "memory", 30)
    js.create_consumer(stream_name, {"durable_name": "C", "ack_policy": "explicit",
                                     "ack_wait": 30_000_000_000}, "C")
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.C", {"batch": 6, "no_wait": True},
            reply=inbox.subject)
    first = inbox.take(6)
    js.raw.send(pub(first[1].reply or "", b"-NAK") + pub(first[4].reply or "", b"-NAK"))
    settle(js, stream_name, 6)
    time.sleep(0.1)
    inbox = Sub(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.C", {"batch": 6, "no_wait": True},
            reply=inbox.subject)
    got = inbox.take(6)
    # (the first batch was 1, 2, 3, 4, 7, 8: 5 and 6 are deleted, so is 11)
    assert [f[3:6] for f in fields(got)] == [(2, 2, 7), (2, 7, 8), (1, 9, 9), (1, 10, 10),
                                             (1, 12, 11), (1, 13, 12)]


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_push_fills_max_ack_pending_and_goes_on_after_acks(target: str, js: JsClient,
                                                          stream_name: str,
                                                          storage: str) -> None:
    """A push consumer with room for 10 of 27 messages sends 10; acking them in one write
    lets the next 10 come, then the last 7; each ack subject counts down what is left."""
    fill(js, stream_name, storage, 30)
    inbox = Sub(js)
    js.create_consumer(stream_name, {"durable_name": "C", "ack_policy": "explicit",
                                     "max_ack_pending": 10,
                                     "deliver_subject": inbox.subject}, "C")
    seqs = [i for i in range(1, 31) if i not in (5, 6, 11)]
    got: list[Msg] = []
    for part in (seqs[:10], seqs[10:20], seqs[20:]):
        batch = inbox.take(len(part))
        assert [f[4] for f in fields(batch)] == part
        got += batch
        js.raw.send(b"".join(pub(m.reply or "", b"") for m in batch))
    want = [(s, d, len(seqs) - d) for d, s in enumerate(seqs, 1)]
    assert [f[4:] for f in fields(got)] == want
    settle(js, stream_name, 0)
    info: dict[str, Any] = js.api(f"CONSUMER.INFO.{stream_name}.C")
    assert (info["ack_floor"]["stream_seq"], info["num_pending"]) == (30, 0)
