"""Which waiting pull request gets a message, by priority situation (ADR-42 ``prioritized`` and
``overflow``; nats-server ``processInboundNextMsgReqs``, ``waitQueue.addPrioritized``,
``nextWaiting``).

nats-server queues the pull requests that arrived together (one read from the client) before
its consumer hands out messages, so requests sent in one write are served by priority even when
messages are already stored; a request that arrived in an earlier read is served at once when
there is something to deliver. ``min_pending`` / ``min_ack_pending`` belong to ``overflow``
groups: a request whose threshold is not met is passed over for the next one, whatever the
order; on a ``prioritized`` consumer they are refused.

nats-server's consumer takes requests in on a goroutine of its own: on a loaded machine it now
and then starts handing out messages before the last request of a read is in (seen about once
in 50 runs under a parallel test run). The same-read cases therefore try up to
``ATTEMPTS`` times, each on a fresh stream, and need the priority order in one of them; minijs
is deterministic here (every attempt gives the same answer)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.jshelpers import JsClient, encode
from conformance.jshelpers import Sub as Inbox
from conformance.test_js_consumer_priority import S, data_of, info, setup, silent

ATTEMPTS = 3
PRIORITIZED = {"priority_groups": ["A"], "priority_policy": "prioritized"}
OVERFLOW = {"priority_groups": ["A"], "priority_policy": "overflow"}


def together(js: JsClient, next_subject: str, *bodies: Any) -> list[Inbox]:
    """Pull requests for ``bodies`` in one write (one read on the server)."""
    inboxes = [Inbox(js) for _ in bodies]  # each SUB in place
    frames = b""
    for inbox, body in zip(inboxes, bodies):
        data = encode(body)
        frames += f"PUB {next_subject} {inbox.subject} {len(data)}\r\n".encode() + data + b"\r\n"
    js.raw.send(frames)
    return inboxes


def one_by_one(js: JsClient, next_subject: str, *bodies: Any) -> list[Inbox]:
    """Pull requests for ``bodies``, each handled by the server before the next is sent."""
    out = []
    for body in bodies:
        inbox = Inbox(js)
        data = encode(body)
        js.raw.send(f"PUB {next_subject} {inbox.subject} {len(data)}\r\n".encode()
                    + data + b"\r\n")
        js.sync()
        out.append(inbox)
    return out


def attempts(js: JsClient, stream_name: str, case: Callable[[str], None]) -> None:
    """Run ``case(stream)`` on fresh streams until it passes, at most ``ATTEMPTS`` times."""
    for i in range(ATTEMPTS):
        try:
            case(f"{stream_name}A{i}")
            return
        except (AssertionError, TimeoutError):
            if i == ATTEMPTS - 1:
                raise


def req(priority: int, batch: int = 1, **extra: Any) -> dict[str, Any]:
    return {"batch": batch, "group": "A", "priority": priority, "expires": 3 * S, **extra}


def test_js_prioritized_same_read_stored_message(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """One message stored; priority 1 then priority 0 in one write: priority 0 gets it."""
    def case(name: str) -> None:
        nxt = setup(js, name, msgs=1, **PRIORITIZED)
        low, high = together(js, nxt, req(1), req(0))
        assert high.next(1.0).data == b"m0"
        silent(low, 0.3)
        assert info(js, name)["num_waiting"] == 1

    attempts(js, stream_name, case)


def test_js_prioritized_same_read_several(target: str, js: JsClient, stream_name: str) -> None:
    """Two messages stored; priorities 5, 2, 0, 2 in one write: 0 first, then the first 2."""
    def case(name: str) -> None:
        nxt = setup(js, name, msgs=2, **PRIORITIZED)
        p5, p2a, p0, p2b = together(js, nxt, req(5), req(2), req(0), req(2))
        assert p0.next(1.0).data == b"m0"
        assert p2a.next(1.0).data == b"m1"
        silent(p5, 0.2)
        silent(p2b, 0.1)
        js.pub_ok(f"{name.lower()}.x", "m2")
        assert p2b.next().data == b"m2"
        silent(p5, 0.2)

    attempts(js, stream_name, case)


def test_js_prioritized_across_reads_stored_message(target: str, js: JsClient,
                                                    stream_name: str) -> None:
    """One message stored; priority 1, then (after the server handled it) priority 0: the
    first request got the message already; priority 0 waits for the next one."""
    nxt = setup(js, stream_name, msgs=1, **PRIORITIZED)
    low, high = one_by_one(js, nxt, req(1), req(0))
    assert low.next().data == b"m0"
    silent(high, 0.2)
    js.pub_ok(f"{stream_name.lower()}.x", "m1")
    assert high.next().data == b"m1"


def test_js_prioritized_across_reads_waiting(target: str, js: JsClient,
                                             stream_name: str) -> None:
    """Nothing stored; priority 1 then priority 0 in separate reads, both waiting: a new
    message goes to priority 0."""
    nxt = setup(js, stream_name, **PRIORITIZED)
    low, high = one_by_one(js, nxt, req(1), req(0))
    assert info(js, stream_name)["num_waiting"] == 2
    js.pub_ok(f"{stream_name.lower()}.x", "m0")
    assert high.next().data == b"m0"
    silent(low, 0.2)


def test_js_prioritized_batch_requeued_behind_its_priority(target: str, js: JsClient,
                                                           stream_name: str) -> None:
    """Three messages stored; a priority 0 batch of 2 and a priority 0 batch of 1, then a
    priority 1, in one write: the batches take turns within priority 0 (first in first out),
    priority 1 gets nothing."""
    def case(name: str) -> None:
        nxt = setup(js, name, msgs=3, **PRIORITIZED)
        a, b, low = together(js, nxt, req(0, batch=2), req(0), req(1))
        assert data_of([a.next(1.0), b.next(1.0), a.next(1.0)]) == [b"m0", b"m1", b"m2"]
        silent(low, 0.3)

    attempts(js, stream_name, case)


def test_js_prioritized_refuses_overflow_thresholds(target: str, js: JsClient,
                                                    stream_name: str) -> None:
    """``min_pending`` / ``min_ack_pending`` on a ``prioritized`` consumer: 400, in the same
    read as a good request, which is served."""
    nxt = setup(js, stream_name, msgs=1, **PRIORITIZED)
    bad_p, bad_a, good = together(js, nxt, req(0, min_pending=1), req(0, min_ack_pending=1),
                                  req(3))
    for bad in (bad_p, bad_a):
        m = bad.next()
        assert m.status == "400 Bad Request - Not a Overflow Priority consumer", m.header
    assert good.next().data == b"m0"


def test_js_overflow_min_pending_same_read(target: str, js: JsClient, stream_name: str) -> None:
    """``overflow``, two messages stored: a request wanting ``min_pending`` 5 and a plain one in
    one write: the plain one gets both (the first is passed over), the first keeps waiting."""
    nxt = setup(js, stream_name, msgs=2, **OVERFLOW)
    over, plain = together(js, nxt, {"batch": 2, "group": "A", "min_pending": 5,
                                     "expires": 3 * S},
                           {"batch": 2, "group": "A", "expires": 3 * S})
    assert data_of([plain.next(), plain.next()]) == [b"m0", b"m1"]
    silent(over, 0.3)
    assert info(js, stream_name)["num_waiting"] == 1


def test_js_overflow_min_ack_pending_across_reads(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """``overflow``: a waiting request with ``min_ack_pending`` 1 is passed over while nothing
    is pending acks and served once a plain request left a message unacked."""
    nxt = setup(js, stream_name, **OVERFLOW)
    (over,) = one_by_one(js, nxt, {"batch": 1, "group": "A", "min_ack_pending": 1,
                                   "expires": 3 * S})
    js.pub_ok(f"{stream_name.lower()}.x", "m0")
    silent(over, 0.3)
    (plain,) = one_by_one(js, nxt, {"batch": 1, "group": "A", "expires": 3 * S})
    assert plain.next().data == b"m0"
    js.pub_ok(f"{stream_name.lower()}.x", "m1")
    assert over.next().data == b"m1"
