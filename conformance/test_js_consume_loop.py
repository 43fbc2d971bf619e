"""A ``Consume()`` loop as nats.go / nats.js drive it (ADR-37), over the raw protocol.

The loop below is written for these cases, in the shape ADR-37 prescribes: ONE subscription
on ONE inbox subject that is the reply subject of every ``CONSUMER.MSG.NEXT`` request, several
requests overlapping on it, and a client-side tally of what the open requests still owe
(``pending`` messages and bytes). A new request is sent whenever the tally falls under the
threshold (half of the maximum by default); it asks for exactly what brings the tally back to
the maximum. (One deliberate difference from nats.go: a byte-limited loop refills on its byte
tally only. nats.go also refills when its message tally is low, and every 409/408 in byte mode
returns almost the whole ``BIG_BATCH``; refilling on that splits the byte budget into pieces,
and once every piece is smaller than the next message each refusal is answered by a refill of
the same size: a 409 loop that never delivers, which we saw happen against nats-server.) Every user message lowers the tally by one message and by its size as the server
counts it (``len(subject) + len(ack reply) + len(headers) + len(payload)``); every status that
ends a request (408, ``409 Message Size Exceeds MaxBytes``, ``409 Batch Completed``) lowers it
by its ``Nats-Pending-Messages`` / ``Nats-Pending-Bytes`` headers. Every message is acked.

Besides that tally the loop keeps exact totals, which give the checks that do not depend on
which request the server picked for a message (the wire does not say: a delivery carries the
stored subject, and all requests share one reply subject):

* what was asked for can never be exceeded: at every moment, delivered + returned by terminal
  statuses <= asked for (messages, and bytes when requests carry ``max_bytes``);
* once every request has ended, the budget balances exactly: bytes asked for = bytes delivered
  + ``Nats-Pending-Bytes`` returned (a request that spends its budget to the byte ends without a
  status, so it returns 0); the same for messages when nothing can end that way; and after
  that nothing more arrives on the inbox;
* every status frame is byte-exact, heartbeats name the last delivered consumer and stream
  sequences, a 408 never comes before a request could have expired, and the message after a
  ``409 Message Size Exceeds MaxBytes`` is larger than the budget that status returned.

Reference: ADR-37 ("Consume specification").
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.jshelpers import JsClient, Msg, ack_fields, header_block, parse_msg

#: ADR-37: a byte-limited consume asks for a batch this large so only bytes limit it.
BIG_BATCH = 1_000_000
#: Subscription id of the loop's inbox.
LOOP_SID = "7"
#: Statuses that end a pull request and carry the pending headers.
TERMINAL = ("408 Request Timeout", "409 Message Size Exceeds MaxBytes", "409 Batch Completed")
HEARTBEAT = "100 Idle Heartbeat"
NS = 1_000_000_000


def wire_size(m: Msg) -> int:
    """A delivery's size as the server counts it against ``max_bytes``."""
    return len(m.subject) + len(m.reply or "") + len(m.header) + len(m.data)


def status_frame(subject: str, sid: str, status: str, *pairs: tuple[str, str]) -> bytes:
    header = header_block(*pairs, status=status)
    return (b"HMSG %s %s %d %d\r\n" % (subject.encode(), sid.encode(), len(header), len(header))
            + header + b"\r\n")


@dataclass
class Published:
    subject: str
    data: bytes
    header: bytes = b""


@dataclass
class Request:
    batch: int
    max_bytes: int
    sent: float
    expires_at: float | None


@dataclass
class Status:
    at: float
    msg: Msg
    n: int = 0
    b: int = 0


@dataclass
class ConsumeLoop:
    """The consume loop (see the module docstring). Modes, as in nats.go:

    * ``max_messages=N``: requests ``{"batch": N - pending}``, refill under ``threshold_messages``;
    * ``max_bytes=B``: requests ``{"batch": BIG_BATCH, "max_bytes": B - pending_bytes}``, refill
      under ``threshold_bytes``;
    * ``max_messages=N, max_bytes=B, limit_size=True`` (nats.go ``PullMaxMessagesWithBytesLimit``):
      batches as in the first mode, each request capped at ``max_bytes=B``.
    """

    client: JsClient
    stream: str
    consumer: str = "c"
    max_messages: int = 0
    max_bytes: int = 0
    limit_size: bool = False
    threshold_messages: int = 0
    threshold_bytes: int = 0
    expires: float = 1.0
    idle_heartbeat: float = 0.0
    #: Refusals of a whole fresh budget (``409 Message Size Exceeds MaxBytes`` returning all of
    #: ``max_bytes`` and of the batch), in a row, after which the loop stops re-pulling: the
    #: next message is larger than any request it can send (nats.go keeps re-pulling).
    stall_limit: int = 2

    inbox: str = field(init=False)
    pending_msgs: int = field(init=False, default=0)
    pending_bytes: int = field(init=False, default=0)
    pulling: bool = field(init=False, default=True)
    requests: list[Request] = field(init=False, default_factory=list)
    msgs: list[Msg] = field(init=False, default_factory=list)
    sizes: list[int] = field(init=False, default_factory=list)
    statuses: list[Status] = field(init=False, default_factory=list)
    heartbeats: list[Status] = field(init=False, default_factory=list)
    #: Every frame on the inbox in arrival order: ("msg", seq) / ("status", text) / ("pull", body).
    events: list[tuple[str, Any]] = field(init=False, default_factory=list)
    stalls: int = field(init=False, default=0)
    acks_sent: int = field(init=False, default=0)
    acks_confirmed: int = field(init=False, default=0)
    last_cseq: int = field(init=False, default=0)
    last_sseq: int = field(init=False, default=0)
    #: Budget returned by the last ``409 Message Size Exceeds MaxBytes`` not yet followed by a
    #: message: the next message must be larger than it.
    too_big_for: int | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        assert self.max_messages or self.max_bytes
        assert not (self.max_messages and self.max_bytes) or self.limit_size
        self.bytes_mode = bool(self.max_bytes) and not self.limit_size
        if self.bytes_mode:
            self.max_messages = BIG_BATCH
        # Default thresholds: half of the maximum, rounded up.
        self.threshold_messages = self.threshold_messages or -(-self.max_messages // 2)
        self.threshold_bytes = self.threshold_bytes or -(-self.max_bytes // 2)
        self.inbox = f"_INBOX.{uuid.uuid4().hex}"
        self.next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}"
        self.started = 0.0

    # ------------------------------------------------------------------ requests

    def start(self) -> None:
        self.client.raw.send(f"SUB {self.inbox} {LOOP_SID}\r\n".encode())
        self.client.raw.barrier()
        self.started = time.monotonic()
        self.pull(self.max_messages, self.max_bytes)
        self.pending_msgs, self.pending_bytes = self.max_messages, self.max_bytes

    def pull(self, batch: int, max_bytes: int = 0, expires: float | None = None,
             idle_heartbeat: float | None = None) -> None:
        """Publish one ``MSG.NEXT`` request with the inbox as reply (nats.go's field order)."""
        expires = self.expires if expires is None else expires
        hb = self.idle_heartbeat if idle_heartbeat is None else idle_heartbeat
        body: dict[str, int] = {}
        if expires:
            body["expires"] = int(expires * NS)
        body["batch"] = batch
        if max_bytes:
            body["max_bytes"] = max_bytes
        if hb:
            body["idle_heartbeat"] = int(hb * NS)
        now = time.monotonic()
        self.requests.append(Request(batch, max_bytes, now, now + expires if expires else None))
        self.events.append(("pull", body))
        self.client.send(self.next_subject, body, reply=self.inbox)

    def check_pending(self) -> None:
        """Refill when the tally is under a threshold (nats.go ``checkPending``)."""
        if not self.pulling:
            return
        if self.bytes_mode:
            low = self.pending_bytes < self.threshold_bytes
        else:
            low = self.pending_msgs < self.threshold_messages
        if not low:
            return
        batch, max_bytes = self.max_messages - self.pending_msgs, 0
        if self.limit_size:
            max_bytes = self.max_bytes
        elif self.bytes_mode:
            batch, max_bytes = self.max_messages, self.max_bytes - self.pending_bytes
        if batch > 0:
            self.pull(batch, max_bytes)
            self.pending_msgs, self.pending_bytes = self.max_messages, self.max_bytes

    def stop(self) -> None:
        """nats.go ``ConsumeContext.Stop()``: unsubscribe the inbox, open requests or not."""
        self.pulling = False
        self.client.raw.send(f"UNSUB {LOOP_SID}\r\n".encode())
        self.client.raw.barrier()

    def resume(self) -> None:
        """Start over after a stall, with an empty tally (the next check refills in full)."""
        self.pulling, self.stalls = True, 0
        self.pending_msgs = self.pending_bytes = 0

    # ------------------------------------------------------------------ totals

    @property
    def asked_msgs(self) -> int:
        return sum(r.batch for r in self.requests)

    @property
    def asked_bytes(self) -> int:
        return sum(r.max_bytes for r in self.requests)

    @property
    def returned_msgs(self) -> int:
        return sum(s.n for s in self.statuses)

    @property
    def returned_bytes(self) -> int:
        return sum(s.b for s in self.statuses)

    def status_texts(self) -> list[str]:
        return [s.msg.status for s in self.statuses]

    # ------------------------------------------------------------------ frames

    def step(self, timeout: float) -> bool:
        """Read and handle one frame; False when nothing came within ``timeout``."""
        try:
            frame = self.client.raw.read_frame(timeout=max(timeout, 0.001))
        except TimeoutError:
            return False
        if frame.startswith(b"-ERR"):
            raise AssertionError(f"server error: {frame!r}")
        if not frame.startswith((b"MSG ", b"HMSG ")):
            return True  # INFO updates
        m = parse_msg(frame)
        if m.subject.startswith(self.client.inbox + "."):
            assert m.frame == b"MSG %s 1 0\r\n\r\n" % m.subject.encode(), m.frame
            self.acks_confirmed += 1
            return True
        assert m.sid == LOOP_SID, f"frame for an unknown subscription: {frame!r}"
        if m.status:
            self.on_status(m)
        else:
            self.on_message(m)
        return True

    def on_message(self, m: Msg) -> None:
        stream, consumer, dc, sseq, dseq, _, _ = ack_fields(m)
        assert (stream, consumer, dc) == (self.stream, self.consumer, 1), m.frame
        size = wire_size(m)
        if self.too_big_for is not None:
            assert size > self.too_big_for, (
                f"409 Message Size Exceeds MaxBytes returned {self.too_big_for} bytes, "
                f"yet the next message is only {size} bytes: {m.frame!r}")
            self.too_big_for = None
        self.stalls = 0
        self.msgs.append(m)
        self.sizes.append(size)
        self.events.append(("msg", sseq))
        self.last_cseq, self.last_sseq = dseq, sseq
        # What the requests owe can never go negative: the server never sends more than asked.
        assert sum(self.sizes) + self.returned_bytes <= self.asked_bytes or not self.max_bytes, (
            f"delivered {sum(self.sizes)} bytes + returned {self.returned_bytes} > "
            f"asked {self.asked_bytes}")
        assert len(self.msgs) + self.returned_msgs <= self.asked_msgs, (
            f"delivered {len(self.msgs)} + returned {self.returned_msgs} > asked {self.asked_msgs}")
        self.pending_msgs -= 1
        if self.bytes_mode:
            self.pending_bytes -= size
        self.acks_sent += 1
        self.client.send(m.reply or "", b"+ACK", reply=self.client.new_reply())

    def on_status(self, m: Msg) -> None:
        now = time.monotonic()
        assert m.subject == self.inbox and not m.data and m.reply is None, m.frame
        status = m.status
        self.events.append(("status", status))
        if status == HEARTBEAT:
            assert self.idle_heartbeat, f"heartbeat without idle_heartbeat: {m.frame!r}"
            assert now - self.started >= self.idle_heartbeat, "heartbeat before any was due"
            assert m.frame == status_frame(
                self.inbox, LOOP_SID, HEARTBEAT, ("Nats-Last-Consumer", str(self.last_cseq)),
                ("Nats-Last-Stream", str(self.last_sseq))), m.frame
            self.heartbeats.append(Status(now, m))
            return
        assert status in TERMINAL, f"unexpected status in a consume loop: {m.frame!r}"
        pairs = m.header_pairs
        assert [k for k, _ in pairs] == ["Nats-Pending-Messages", "Nats-Pending-Bytes"], m.frame
        n, b = int(pairs[0][1]), int(pairs[1][1])
        assert m.frame == status_frame(self.inbox, LOOP_SID, status,
                                       ("Nats-Pending-Messages", str(n)),
                                       ("Nats-Pending-Bytes", str(b))), m.frame
        assert 0 <= n <= max(r.batch for r in self.requests), m.frame
        assert 0 <= b <= max(r.max_bytes for r in self.requests), m.frame
        if not any(r.max_bytes for r in self.requests):
            assert b == 0, m.frame
        if status == "408 Request Timeout":
            # A 408 ends one request whose expiry has passed; never early.
            expired = sum(1 for r in self.requests if r.expires_at is not None
                          and r.expires_at <= now)
            done = sum(1 for s in self.statuses if s.msg.status == status) + 1
            assert done <= expired, f"408 number {done} but only {expired} requests expired"
        elif status == "409 Batch Completed":
            assert n == 0 and b > 0, m.frame
        else:
            assert b >= 0 and n > 0, m.frame
            self.too_big_for = b
            if n == self.max_messages and b == self.max_bytes:
                # A request with the whole budget got nothing: re-pulling cannot help.
                self.stalls += 1
                if self.stalls >= self.stall_limit:
                    self.pulling = False
        self.statuses.append(Status(now, m, n, b))
        self.pending_msgs = max(self.pending_msgs - n, 0)
        if self.bytes_mode:
            self.pending_bytes = max(self.pending_bytes - b, 0)

    # ------------------------------------------------------------------ driving

    def run(self, until: Callable[[], bool], timeout: float = 3.0) -> None:
        """Handle frames (refilling as needed) until ``until()`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_pending()
            if until():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"consume loop: condition not met within {timeout}s; got "
                    f"{len(self.msgs)} messages, statuses {self.status_texts()}, "
                    f"events {self.events[-12:]}")
            self.step(min(left, 0.05))

    def balanced(self, messages: bool) -> bool:
        """Bytes asked for = delivered + returned (byte budgets); and the same for messages
        when ``messages`` (holds when every request ended with a status or a full batch)."""
        ok = not self.max_bytes or sum(self.sizes) + self.returned_bytes == self.asked_bytes
        return ok and (not messages or len(self.msgs) + self.returned_msgs == self.asked_msgs)

    def finish(self, balanced_messages: bool = False, grace: float = 0.25) -> None:
        """Stop pulling; read until every request has expired (plus ``grace``), every ack is
        confirmed and the totals balance; then no frame may arrive any more."""
        self.pulling = False
        ends = [r.expires_at for r in self.requests if r.expires_at is not None]
        assert len(ends) == len(self.requests), "a request without expiry never ends"
        quiet = max(ends) + grace
        while (time.monotonic() < quiet or self.acks_confirmed < self.acks_sent
               or not self.balanced(balanced_messages)):
            if time.monotonic() > quiet + 2:
                break
            self.step(max(quiet - time.monotonic(), 0.05))
        assert self.acks_confirmed == self.acks_sent, "acks not confirmed"
        statuses = [(s.msg.status, s.n, s.b) for s in self.statuses]
        assert self.balanced(False), (
            f"bytes asked {self.asked_bytes} != delivered {sum(self.sizes)} + returned "
            f"{self.returned_bytes}; statuses {statuses}")
        assert self.balanced(balanced_messages), (
            f"messages asked {self.asked_msgs} != delivered {len(self.msgs)} + returned "
            f"{self.returned_msgs}; statuses {statuses}")
        seen = len(self.events)
        end = time.monotonic() + 0.1
        while time.monotonic() < end:
            self.step(end - time.monotonic())
        assert self.events[seen:] == [], "frames after every request had ended"
        assert self.too_big_for is None, "a 409 Message Size Exceeds MaxBytes was the last word"
        assert len(self.statuses) <= len(self.requests)


# ---------------------------------------------------------------------- helpers


def setup(js: JsClient, name: str, items: list[Published] | None = None) -> str:
    """Stream ``name`` on ``<p>.>`` (memory), ``items`` published, durable explicit-ack pull
    consumer ``c``. Returns the subject prefix."""
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], storage="memory")
    publish(js, items or [])
    js.create_consumer(name, {"durable_name": "c", "ack_policy": "explicit"}, "c")
    return p


def publish(js: JsClient, items: list[Published]) -> None:
    for it in items:
        js.pub_ok(it.subject, it.data, it.header or None)


def info(js: JsClient, name: str) -> dict[str, Any]:
    out = js.api(f"CONSUMER.INFO.{name}.c")
    assert "error" not in out, out
    return out


def wait_waiting(js: JsClient, name: str, n: int) -> None:
    """nats-server queues pull requests asynchronously: wait until ``n`` are waiting."""
    deadline = time.monotonic() + 2
    while (got := info(js, name)["num_waiting"]) != n:
        assert time.monotonic() < deadline, f"num_waiting stays {got}, expected {n}"
        time.sleep(0.01)


def assert_all_received(loop: ConsumeLoop, items: list[Published]) -> None:
    """Every published message exactly once, in order, with its subject, headers and payload."""
    got = [(m.subject, m.header, m.data) for m in loop.msgs]
    assert got == [(it.subject, it.header, it.data) for it in items]
    seqs = [ack_fields(m)[3:5] for m in loop.msgs]
    assert seqs == [(i, i) for i in range(1, len(items) + 1)]


def assert_all_acked(js: JsClient, name: str, n: int) -> None:
    got = info(js, name)
    assert got["delivered"]["consumer_seq"] == n and got["delivered"]["stream_seq"] == n
    assert got["ack_floor"]["consumer_seq"] == n and got["ack_floor"]["stream_seq"] == n
    assert (got["num_ack_pending"], got["num_pending"], got["num_waiting"],
            got["num_redelivered"]) == (0, 0, 0, 0), got


def mixed(p: str, sizes: list[int], header_every: int = 0) -> list[Published]:
    """Messages on a few subjects with the given payload sizes; every ``header_every``-th one
    carries a header block."""
    subjects = [f"{p}.a", f"{p}.bb.x", f"{p}.ccc"]
    out = []
    for i, size in enumerate(sizes):
        data = bytes((97 + (i + j) % 26) for j in range(size))
        hdr = b""
        if header_every and i % header_every == header_every - 1:
            hdr = header_block(("X-N", str(i)))
        out.append(Published(subjects[i % len(subjects)], data, hdr))
    return out


# ---------------------------------------------------------------------- cases


def test_js_consume_max_bytes_mixed_sizes(target: str, js: JsClient, js_connect: Any,
                                          stream_name: str) -> None:
    """Byte-limited consume (``max_bytes`` 1200, threshold 600) over 30 messages of 0..420
    bytes: requests overlap, each asks for what the tally lacks, requests that cannot fit the
    next message end with ``409 Message Size Exceeds MaxBytes`` (a later request takes it),
    the open ones end with 408 carrying their unused budget; the bytes balance exactly."""
    p = stream_name.lower()
    sizes = [0, 7, 40, 130, 260, 15, 90, 333, 1, 64, 420, 3, 200, 55, 128, 300, 9, 77, 410, 2,
             150, 35, 250, 60, 5, 380, 20, 111, 240, 17]
    items = mixed(p, sizes, header_every=4)
    setup(js, stream_name, items)
    loop = ConsumeLoop(js_connect(), stream_name, max_bytes=1200, expires=1.0,
                       idle_heartbeat=0.45)
    loop.start()
    loop.run(lambda: len(loop.msgs) == len(items))
    loop.finish()
    assert_all_received(loop, items)
    assert [ack_fields(m)[6] for m in loop.msgs] == list(range(len(items) - 1, -1, -1))
    assert max(loop.sizes) < 600 < sum(loop.sizes)
    texts = loop.status_texts()
    assert "409 Message Size Exceeds MaxBytes" in texts and "408 Request Timeout" in texts
    assert "409 Batch Completed" not in texts
    # Each refill asks for what the tally lacks, at least the threshold's worth.
    assert all(r.batch == BIG_BATCH and 600 <= r.max_bytes <= 1200 for r in loop.requests)
    assert len(loop.requests) >= 4
    assert_all_acked(js, stream_name, len(items))


def test_js_consume_batch_refills_while_waiting(target: str, js: JsClient, js_connect: Any,
                                                stream_name: str) -> None:
    """Message-limited consume (``max_messages`` 6, threshold 3): two requests wait on the
    one inbox when the stream runs dry; messages published then are served to them in turn,
    the loop refills by what the tally lacks, and at the end every open request's 408 returns
    its undelivered batch (``Nats-Pending-Bytes: 0``): messages balance exactly."""
    p = setup(js, stream_name)
    first = mixed(p, [10, 20, 30, 40])
    publish(js, first)
    loop = ConsumeLoop(js_connect(), stream_name, max_messages=6, expires=1.0,
                       idle_heartbeat=0.45)
    loop.start()
    loop.run(lambda: len(loop.msgs) == 4)
    # batch 6 got 4 (tally 2 < 3) -> refill {"batch": 4}: two requests wait, nothing to send.
    assert [body for kind, body in loop.events if kind == "pull"] == [
        {"expires": NS, "batch": 6, "idle_heartbeat": 450_000_000},
        {"expires": NS, "batch": 4, "idle_heartbeat": 450_000_000}]
    wait_waiting(js, stream_name, 2)
    items = list(first)
    for chunk in ([11, 12, 13, 14, 15], [1, 2, 3, 4, 5, 6, 7]):
        more = [Published(f"{p}.late", b"L" * size) for size in chunk]
        publish(js, more)  # one by one, each stored (acked) before the next
        items += more
        total = len(items)
        loop.run(lambda: len(loop.msgs) == total)  # noqa: B023
    loop.finish(balanced_messages=True)
    assert_all_received(loop, items)
    texts = loop.status_texts()
    assert texts and set(texts) == {"408 Request Timeout"}, texts
    assert all(s.b == 0 and s.n > 0 for s in loop.statuses)
    assert all(r.max_bytes == 0 and 1 <= r.batch <= 6 for r in loop.requests)
    assert_all_acked(js, stream_name, len(items))


def test_js_consume_batch_completed_with_budget_left(target: str, js: JsClient, js_connect: Any,
                                                     stream_name: str) -> None:
    """``max_messages`` 5 with every request capped at ``max_bytes`` 2001 (nats.go
    ``PullMaxMessagesWithBytesLimit``) over small messages: each batch fills long before its
    budget, so each full request ends with ``409 Batch Completed`` (``Nats-Pending-Messages:
    0`` and its unused budget); both messages and bytes balance exactly."""
    p = stream_name.lower()
    items = mixed(p, [5, 25, 0, 40, 12, 33, 8, 19, 27, 3, 50, 14, 6, 22], header_every=3)
    setup(js, stream_name, items)
    loop = ConsumeLoop(js_connect(), stream_name, max_messages=5, max_bytes=2001,
                       limit_size=True, threshold_messages=2, expires=0.8)
    loop.start()
    loop.run(lambda: len(loop.msgs) == len(items))
    loop.finish(balanced_messages=True)
    assert_all_received(loop, items)
    texts = loop.status_texts()
    assert "409 Batch Completed" in texts and "409 Message Size Exceeds MaxBytes" not in texts
    for s in loop.statuses:
        if s.msg.status == "409 Batch Completed":
            assert s.n == 0 and 2001 - 5 * max(loop.sizes) <= s.b < 2001
    assert all(r.max_bytes == 2001 for r in loop.requests)
    assert_all_acked(js, stream_name, len(items))


def test_js_consume_message_larger_than_budget(target: str, js: JsClient, js_connect: Any,
                                               stream_name: str) -> None:
    """A message larger than a request's whole budget (``max_bytes`` 500) arrives while two
    requests wait: each waiting request ends with ``409 Message Size Exceeds MaxBytes`` at
    once, the message is not delivered and not skipped (smaller messages behind it wait), and
    every refill the loop sends gets the same 409 at once with its whole budget back — a loop
    that only re-pulls (as nats.go does) spins on 409s; this one stops after two. A request one byte short still gets the 409; a request whose budget is exactly
    the message's size gets it and then ends silently (no 409, no 408 at expiry). The loop then
    resumes and drains the rest in order."""
    p = stream_name.lower()
    small = mixed(p, [30, 30, 30, 30])
    setup(js, stream_name, small)
    loop = ConsumeLoop(js_connect(), stream_name, max_bytes=500, expires=1.0)
    loop.start()
    loop.run(lambda: len(loop.msgs) == 4)
    assert len(loop.requests) == 2  # the tally fell under 250 bytes: one refill
    wait_waiting(js, stream_name, 2)

    big = Published(f"{p}.big", b"B" * 600)
    after = mixed(p, [1, 2, 3])
    publish(js, [big, *after])
    loop.run(lambda: not loop.pulling)
    loop.run(lambda: len(loop.statuses) == len(loop.requests))  # every request answered
    got = [(s.msg.status, s.n, s.b) for s in loop.statuses]
    assert {g[0] for g in got} == {"409 Message Size Exceeds MaxBytes"}, got
    # The two waiting requests first, at once, returning what they had left ...
    assert sum(g[2] for g in got[:2]) == 500 + loop.requests[1].max_bytes - sum(loop.sizes)
    # ... then every refill, refused on arrival in the order sent, with its whole budget back.
    assert [(g[1], g[2]) for g in got[2:]] == [(BIG_BATCH, r.max_bytes)
                                              for r in loop.requests[2:]], got
    assert got[-2:] == [("409 Message Size Exceeds MaxBytes", BIG_BATCH, 500)] * 2, got
    assert len(loop.msgs) == 4
    got_info = info(js, stream_name)
    assert got_info["delivered"]["stream_seq"] == 4 and got_info["num_pending"] == 4
    assert got_info["num_waiting"] == 0

    # The big message's size as the server counts it: stored subject + ack reply + payload.
    ack_len = len(f"$JS.ACK.{stream_name}.c.1.5.5.") + 19 + len(".3")
    size = len(big.subject) + ack_len + len(big.data)
    refused = len(loop.statuses)
    loop.pull(BIG_BATCH, size - 1)
    loop.run(lambda: len(loop.statuses) == refused + 1)
    s = loop.statuses[-1]
    assert (s.msg.status, s.n, s.b) == ("409 Message Size Exceeds MaxBytes", BIG_BATCH, size - 1)
    loop.pull(BIG_BATCH, size, expires=0.3)
    loop.run(lambda: len(loop.msgs) == 5)
    assert loop.sizes[-1] == size
    # Exactly spent: the request ends without any status, even after its expiry.
    quiet_until = loop.requests[-1].sent + 0.45
    while time.monotonic() < quiet_until:
        loop.step(quiet_until - time.monotonic())
    assert len(loop.statuses) == refused + 1, loop.status_texts()

    loop.resume()
    loop.run(lambda: len(loop.msgs) == 8)
    loop.finish()
    assert_all_received(loop, [*small, big, *after])
    # Only the resumed loop's one request is left to expire; the exact-fit request never does.
    tail = [(s.msg.status, s.n, s.b) for s in loop.statuses[refused + 1:]]
    assert tail == [("408 Request Timeout", BIG_BATCH - 3, 500 - sum(loop.sizes[-3:]))], tail
    assert_all_acked(js, stream_name, 8)


def test_js_consume_idle_heartbeats_then_messages(target: str, js: JsClient, js_connect: Any,
                                                  stream_name: str) -> None:
    """``max_messages`` 4, ``idle_heartbeat`` 0.3 s: after the 3 stored messages both open
    requests send ``100 Idle Heartbeat`` naming the last delivered sequences (3/3); messages
    published then reach the waiting requests, the next heartbeat names 5/5, and the last open
    request ends with ``408`` returning its 2 undelivered messages."""
    p = stream_name.lower()
    items = mixed(p, [3, 4, 5])
    setup(js, stream_name, items)
    loop = ConsumeLoop(js_connect(), stream_name, max_messages=4, expires=1.2,
                       idle_heartbeat=0.3)
    loop.start()
    loop.run(lambda: len(loop.msgs) == 3 and len(loop.heartbeats) >= 2)
    assert [body for kind, body in loop.events if kind == "pull"] == [
        {"expires": 1_200_000_000, "batch": 4, "idle_heartbeat": 300_000_000},
        {"expires": 1_200_000_000, "batch": 3, "idle_heartbeat": 300_000_000}]
    assert [h.msg.headers for h in loop.heartbeats[:2]] == [
        {"Nats-Last-Consumer": "3", "Nats-Last-Stream": "3"}] * 2
    assert loop.statuses == []
    more = [Published(f"{p}.late", b"x"), Published(f"{p}.late", b"yy")]
    publish(js, more)
    items += more
    loop.run(lambda: len(loop.msgs) == 5 and loop.last_cseq == 5 and loop.heartbeats[-1].msg
             .headers == {"Nats-Last-Consumer": "5", "Nats-Last-Stream": "5"})
    loop.finish(balanced_messages=True)
    assert_all_received(loop, items)
    assert [(s.msg.status, s.n, s.b) for s in loop.statuses] == [("408 Request Timeout", 2, 0)]
    assert_all_acked(js, stream_name, 5)


def test_js_consume_stop_abandons_open_requests(target: str, js: JsClient, js_connect: Any,
                                                stream_name: str) -> None:
    """Stopping a consume (nats.go ``Stop()``: UNSUB of the inbox) while two requests are
    open: the server forgets them without a word (CONSUMER.INFO right after the UNSUB shows
    ``num_waiting`` 0), messages published afterwards are not delivered to them (they stay
    ``num_pending``, nothing is ack-pending), and a new consume on a new inbox gets them."""
    p = stream_name.lower()
    items = mixed(p, [10, 11, 12, 13, 14, 15])
    setup(js, stream_name, items)
    first = ConsumeLoop(js_connect(), stream_name, max_messages=4, expires=5.0,
                        idle_heartbeat=2.0)
    first.start()
    first.run(lambda: len(first.msgs) == 6 and first.acks_confirmed == 6)
    # batch 4 took m1-m4, the refill {"batch": 3} m5-m6, the next refill {"batch": 3} nothing.
    assert [r.batch for r in first.requests] == [4, 3, 3]
    wait_waiting(js, stream_name, 2)
    first.stop()
    waiting_after_stop = info(js, stream_name)["num_waiting"]

    more = mixed(p, [20, 21, 22])
    publish(js, more)
    # nats-server's num_pending can lag a pub ack by a moment: poll for it.
    deadline = time.monotonic() + 2
    while (got := info(js, stream_name))["num_pending"] != 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert got["delivered"]["stream_seq"] == 6 and got["ack_floor"]["stream_seq"] == 6
    assert (got["num_pending"], got["num_ack_pending"], got["num_waiting"]) == (3, 0, 0), got

    second = ConsumeLoop(js_connect(), stream_name, max_messages=4, expires=0.8)
    second.start()
    second.run(lambda: len(second.msgs) == 3)
    second.finish(balanced_messages=True)
    assert [(m.subject, m.data) for m in first.msgs + second.msgs] == [
        (it.subject, it.data) for it in items + more]
    assert [ack_fields(m)[3:5] for m in second.msgs] == [(7, 7), (8, 8), (9, 9)]
    # batch 4 got 3, the refill {"batch": 3} nothing: both end at expiry with what they lack.
    assert [r.batch for r in second.requests] == [4, 3]
    assert sorted((s.msg.status, s.n, s.b) for s in second.statuses) == [
        ("408 Request Timeout", 1, 0), ("408 Request Timeout", 3, 0)]
    assert_all_acked(js, stream_name, 9)
    assert waiting_after_stop == 0, (
        f"CONSUMER.INFO right after the inbox's UNSUB: num_waiting {waiting_after_stop}, "
        "nats-server drops requests without interest when it reports (0)")
