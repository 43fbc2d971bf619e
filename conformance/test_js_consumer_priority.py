"""Priority groups (ADR-42) on pull consumers, as wire bytes: the request checks and their
statuses, ``pinned_client`` (the ``Nats-Pin-Id`` header, standby requests, 423s, the PINNED /
UNPINNED advisories, the pin's ``priority_timeout``, the pin in consumer info), ``overflow``
thresholds and ``prioritized`` ordering."""
from __future__ import annotations

import time
from typing import Any

from conformance.jshelpers import (
    TIMESTAMP,
    ZERO_TIME,
    JsClient,
    Msg,
    ack_fields,
    check_envelope,
    status_frame,
)
from conformance.jshelpers import Sub as Events
from conformance.jshelpers import Sub as Inbox

S = 1_000_000_000


def setup(js: JsClient, name: str, msgs: int = 0, **config: Any) -> str:
    """Stream ``name`` on ``<name>.>`` with ``msgs`` messages and a durable pull consumer
    ``c`` (explicit acks) configured with ``config``; returns the MSG.NEXT subject."""
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i in range(msgs):
        js.pub_ok(f"{name.lower()}.{i}", f"m{i}")
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
        "durable_name": "c", "ack_policy": "explicit", **config}})
    assert "error" not in out, out
    return f"$JS.API.CONSUMER.MSG.NEXT.{name}.c"


def request(js: JsClient, next_subject: str, body: Any) -> Inbox:
    inbox = Inbox(js)
    js.send(next_subject, body, reply=inbox.subject)
    return inbox


def silent(inbox: Inbox, wait: float = 0.3) -> None:
    """Nothing arrives on ``inbox`` for ``wait`` seconds."""
    try:
        m = inbox.next(wait)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected delivery {m.subject} {m.header!r}")


def data_of(msgs: list[Msg]) -> list[bytes]:
    return [m.data for m in msgs]


def info(js: JsClient, stream: str) -> dict[str, Any]:
    out = js.api(f"CONSUMER.INFO.{stream}.c")
    assert "error" not in out, out
    return out


PINNED = {"priority_groups": ["A"], "priority_policy": "pinned_client"}


def test_js_priority_request_checks(target: str, js: JsClient, stream_name: str) -> None:
    """Priority fields on the wrong kind of consumer, a bad priority, a missing or unknown
    group: each a 400 with nats-server's text; plain-text bodies skip the checks."""
    plain = setup(js, stream_name)
    pinned_name = stream_name + "P"
    pinned = setup(js, pinned_name, **PINNED)
    cases = [
        (plain, {"batch": 1, "min_pending": 1}, "400 Bad Request - Not a Overflow Priority consumer"),
        (plain, {"batch": 1, "min_ack_pending": 2}, "400 Bad Request - Not a Overflow Priority consumer"),
        (plain, {"batch": 1, "id": "x"}, "400 Bad Request - Not a Pinned Client Priority consumer"),
        (plain, {"batch": 1, "priority": 10}, "400 Bad Request - Priority must be between 0 and 9"),
        (plain, {"batch": 1, "priority": -1}, "400 Bad Request - Priority must be between 0 and 9"),
        (pinned, {"batch": 1, "min_pending": 1, "group": "A"},
         "400 Bad Request - Not a Overflow Priority consumer"),
        (pinned, {"batch": 1}, "400 Bad Request - Priority Group missing"),
        (pinned, {"batch": 1, "group": "B"}, "400 Bad Request - Invalid Priority Group"),
    ]
    for subject, body, status in cases:
        m = request(js, subject, body).next()
        assert m.status == status, (body, m.header)
        assert m.header == f"NATS/1.0 {status}\r\n\r\n".encode(), m.header
    # A group on a consumer without a policy is ignored; a plain-text body on a priority
    # consumer is queued without a group.
    js.pub_ok(f"{stream_name.lower()}.x", "one")
    got = request(js, plain, {"batch": 1, "group": "whatever", "priority": 9}).next()
    assert got.data == b"one" and not got.status
    waiting = request(js, pinned, b"1")
    silent(waiting, 0.1)
    assert info(js, pinned_name)["num_waiting"] == 1


def test_js_priority_pinned_client_flow(target: str, js: JsClient, stream_name: str) -> None:
    """The first request served pins its client: deliveries carry ``Nats-Pin-Id`` (after the
    message's own headers), the PINNED advisory names the id and consumer info shows it.
    Another client's request without the id stands by; a wrong id gets ``423 Nats-Pin-Id
    mismatch``; the pinned client pulls the rest with its id."""
    nxt = setup(js, stream_name, **PINNED)
    prefix = stream_name.lower()
    js.pub_ok(f"{prefix}.0", "m0", headers=b"NATS/1.0\r\nX-A: 1\r\n\r\n")
    for i in range(1, 4):
        js.pub_ok(f"{prefix}.{i}", f"m{i}")
    before = info(js, stream_name)
    assert before["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
    ev = Events(js, f"$JS.EVENT.ADVISORY.CONSUMER.PINNED.{stream_name}.c")
    a = request(js, nxt, {"batch": 2, "group": "A", "expires": 5 * S})
    got = a.collect(until_status=False, count=2)
    pin = got[0].headers["Nats-Pin-Id"]
    assert len(pin) == 22
    assert got[0].header == f"NATS/1.0\r\nX-A: 1\r\nNats-Pin-Id: {pin}\r\n\r\n".encode()
    assert got[1].header == f"NATS/1.0\r\nNats-Pin-Id: {pin}\r\n\r\n".encode()
    assert data_of(got) == [b"m0", b"m1"]
    _, body = ev.event()
    assert check_envelope(body, "advisory.v1.consumer_group_pinned") == {
        "account": "$G", "stream": stream_name, "consumer": "c", "group": "A",
        "pinned_id": pin}
    assert list(body)[3:] == ["account", "stream", "consumer", "group", "pinned_id"]
    groups = info(js, stream_name)["priority_groups"]
    assert groups[0]["pinned_client_id"] == pin and list(groups[0]) == [
        "group", "pinned_client_id", "pinned_ts"]
    assert TIMESTAMP.match(groups[0]["pinned_ts"]) and groups[0]["pinned_ts"] != ZERO_TIME
    # Another client without the id: standby, it times out with its batch untouched.
    b = request(js, nxt, {"batch": 2, "group": "A", "expires": int(0.6 * S)})
    silent(b, 0.2)
    wrong = request(js, nxt, {"batch": 1, "group": "A", "id": "not-the-pin"}).next()
    assert wrong.header == b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
    rest = request(js, nxt, {"batch": 2, "group": "A", "id": pin, "expires": 5 * S})
    got = rest.collect(until_status=False, count=2)
    assert data_of(got) == [b"m2", b"m3"]
    assert all(m.headers["Nats-Pin-Id"] == pin for m in got)
    timeout = b.next(2.0)
    assert timeout.frame == status_frame(timeout, "408 Request Timeout",
                                         ("Nats-Pending-Messages", "2"),
                                         ("Nats-Pending-Bytes", "0"))
    assert [ack_fields(m)[3] for m in got] == [3, 4]


def test_js_priority_unpin_moves_the_pin(target: str, js: JsClient, stream_name: str) -> None:
    """After ``CONSUMER.UNPIN`` the next delivery pins a new client (a standby request); a
    request still waiting with the old id is ended with ``423 Nats-Wrong-Pin-Id`` and its
    pending counts; the old id is then refused up front."""
    nxt = setup(js, stream_name, **PINNED)
    prefix = stream_name.lower()
    js.pub_ok(f"{prefix}.0", "m0")
    a = request(js, nxt, {"batch": 1, "group": "A", "expires": 5 * S})
    old_pin = a.next().headers["Nats-Pin-Id"]
    # The old client waits with its id, a second client waits without one (standby).
    a2 = request(js, nxt, {"batch": 3, "group": "A", "id": old_pin, "max_bytes": 1000,
                           "expires": 5 * S})
    b = request(js, nxt, {"batch": 1, "group": "A", "expires": 5 * S})
    silent(a2, 0.1)
    assert info(js, stream_name)["num_waiting"] == 2
    unpinned = Events(js, f"$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.{stream_name}.c")
    pinned = Events(js, f"$JS.EVENT.ADVISORY.CONSUMER.PINNED.{stream_name}.c")
    out = js.api(f"CONSUMER.UNPIN.{stream_name}.c", {"group": "A"})
    assert out == {"type": "io.nats.jetstream.api.v1.consumer_unpin_response"}
    assert unpinned.event()[1]["reason"] == "admin"
    assert "pinned_client_id" not in info(js, stream_name)["priority_groups"][0]
    js.pub_ok(f"{prefix}.1", "m1")
    stale = a2.next()
    assert stale.frame == status_frame(stale, "423 Nats-Wrong-Pin-Id",
                                       ("Nats-Pending-Messages", "3"),
                                       ("Nats-Pending-Bytes", "1000"))
    got = b.next()
    new_pin = got.headers["Nats-Pin-Id"]
    assert got.data == b"m1" and new_pin != old_pin
    assert pinned.event()[1]["pinned_id"] == new_pin
    refused = request(js, nxt, {"batch": 1, "group": "A", "id": old_pin}).next()
    assert refused.header == b"NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"


def test_js_priority_pin_times_out(target: str, js: JsClient, stream_name: str) -> None:
    """A pinned client that sends no request for ``priority_timeout`` loses the pin (UNPINNED
    with reason ``timeout``) and a standby client is pinned at the next delivery."""
    nxt = setup(js, stream_name, msgs=1, priority_timeout=S // 2, **PINNED)
    assert info(js, stream_name)["config"]["priority_timeout"] == S // 2
    unpinned = Events(js, f"$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.{stream_name}.c")
    first = request(js, nxt, {"batch": 1, "group": "A"}).next()
    pin = first.headers["Nats-Pin-Id"]
    standby = request(js, nxt, {"batch": 1, "group": "A", "expires": 5 * S})
    silent(standby, 0.1)
    t0 = time.monotonic()
    _, body = unpinned.event(timeout=3.0)
    assert time.monotonic() - t0 < 2.0
    assert check_envelope(body, "advisory.v1.consumer_group_unpinned") == {
        "account": "$G", "stream": stream_name, "consumer": "c", "group": "A",
        "reason": "timeout"}
    js.pub_ok(f"{stream_name.lower()}.1", "m1")
    got = standby.next()
    assert got.data == b"m1" and got.headers["Nats-Pin-Id"] not in ("", pin)


def test_js_priority_pin_kept_by_requests(target: str, js: JsClient, stream_name: str) -> None:
    """Each request carrying the pin id restarts the pin's timer, so a client that keeps
    pulling keeps its pin across several timeouts' worth of time."""
    nxt = setup(js, stream_name, msgs=1, priority_timeout=int(0.4 * S), **PINNED)
    pin = request(js, nxt, {"batch": 1, "group": "A"}).next().headers["Nats-Pin-Id"]
    for _ in range(4):
        time.sleep(0.2)
        inbox = request(js, nxt, {"batch": 1, "group": "A", "id": pin, "expires": S // 10})
        assert inbox.next().status == "408 Request Timeout"
    assert info(js, stream_name)["priority_groups"][0]["pinned_client_id"] == pin
    js.pub_ok(f"{stream_name.lower()}.1", "m1")
    got = request(js, nxt, {"batch": 1, "group": "A", "id": pin}).next()
    assert got.data == b"m1" and got.headers["Nats-Pin-Id"] == pin


def test_js_priority_overflow_thresholds(target: str, js: JsClient, stream_name: str) -> None:
    """``overflow``: a request with ``min_pending`` is served only while the consumer has at
    least that many messages pending; ``min_ack_pending`` likewise with unacked deliveries;
    requests without thresholds are served as usual. No pin header."""
    nxt = setup(js, stream_name, msgs=2, priority_groups=["A"], priority_policy="overflow")
    prefix = stream_name.lower()
    over = request(js, nxt, {"batch": 10, "group": "A", "min_pending": 4, "expires": 5 * S})
    silent(over, 0.2)
    plain = request(js, nxt, {"batch": 1, "group": "A", "expires": 5 * S})
    got = plain.next()
    assert got.data == b"m0" and not got.header
    assert info(js, stream_name)["num_pending"] == 1
    for i in range(2, 5):
        js.pub_ok(f"{prefix}.{i}", f"m{i}")
    # Four pending now: the overflow request takes them while at least four remain, so it gets
    # one message (4 pending → 3) and waits again.
    got = over.next()
    assert got.data == b"m1"
    silent(over, 0.2)
    assert info(js, stream_name)["num_pending"] == 3
    # min_ack_pending: served while at least that many deliveries are unacked (one is: m0,
    # plus m1).
    ackp = request(js, nxt, {"batch": 2, "group": "A", "min_ack_pending": 2, "expires": 5 * S})
    got = ackp.collect(until_status=False, count=2)
    assert data_of(got) == [b"m2", b"m3"]


def test_js_priority_prioritized_order(target: str, js: JsClient, stream_name: str) -> None:
    """``prioritized``: waiting requests are served in priority order (0 first), FIFO within a
    priority, whatever order they arrived in."""
    nxt = setup(js, stream_name, priority_groups=["A"], priority_policy="prioritized")
    low = request(js, nxt, {"batch": 2, "group": "A", "priority": 5, "expires": 5 * S})
    high1 = request(js, nxt, {"batch": 2, "group": "A", "priority": 1, "expires": 5 * S})
    high2 = request(js, nxt, {"batch": 1, "group": "A", "priority": 1, "expires": 5 * S})
    top = request(js, nxt, {"batch": 1, "group": "A", "expires": 5 * S})  # priority 0
    silent(top, 0.1)
    assert info(js, stream_name)["num_waiting"] == 4
    prefix = stream_name.lower()
    for i in range(6):
        js.pub_ok(f"{prefix}.{i}", f"m{i}")
    assert top.next().data == b"m0"
    # high1 (batch 2) goes back behind high2 after its first message.
    assert high1.next().data == b"m1"
    assert high2.next().data == b"m2"
    assert high1.next().data == b"m3"
    assert data_of(low.collect(until_status=False, count=2)) == [b"m4", b"m5"]


def test_js_priority_overflow_redelivery(target: str, js: JsClient, stream_name: str) -> None:
    """nats-server tests ``min_pending`` against its pending count plus one; a redelivery does
    not lower that count first, so a request waiting for ``num_pending + 1`` gets the
    redelivery although it would not get a new message."""
    nxt = setup(js, stream_name, msgs=2, priority_groups=["A"], priority_policy="overflow",
                ack_wait=S // 2)
    assert request(js, nxt, {"batch": 1, "group": "A"}).next().data == b"m0"
    over = request(js, nxt, {"batch": 1, "group": "A", "min_pending": 2, "expires": 5 * S})
    silent(over, 0.2)
    got = over.next(3.0)
    assert got.data == b"m0" and ack_fields(got)[2:4] == (2, 1)
    assert info(js, stream_name)["num_pending"] == 1
