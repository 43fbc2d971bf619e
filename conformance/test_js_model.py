"""A stateful model test of one stream and its pull consumers, run against the target and a
reference nats-server side by side.

A hypothesis ``RuleBasedStateMachine`` drives both servers in lockstep: every rule applies the
same operation to both (publish with or without ``Nats-Msg-Id`` / expected last sequence,
fetch from a pull consumer, ack / nak / term of a delivered message, purge with or without a
subject filter, message delete, create/delete of a consumer, waiting past the ack wait,
restarting both servers on their file stores) and compares what each answered. After every
step the observable state is compared: the stream's state (messages, bytes, first/last
sequence, subjects, deleted count) and every consumer's counters (delivered, ack floor, ack
pending, redelivered, pending, waiting). Fetches compare subject, data and the ack reply
subject (delivery count, stream and consumer sequence, pending; not the timestamp).

Timing: fetches use ``no_wait``, acks carry a reply subject (the server answers once it has
handled the ack), and counters nats-server updates a moment later are polled until both
servers agree (or a short timeout). The consumers' ack wait is 1 s of real time; a message
whose ack wait ends while a step runs could be redelivered by one server and not yet by the
other, so before every operation the machine waits out any ack-wait deadline that falls
inside the coming step (``_settle``). ``wait`` sleeps past every deadline.

Hypothesis runs derandomized (the same examples every time), without a database or
shrinking. ``MINIJS_MODEL_EXAMPLES`` / ``MINIJS_MODEL_STEPS`` run it longer by hand
(``scripts/model_fuzz.py``). On the ``nats-server`` target the reference is a second
nats-server: the case then checks that the comparison itself is deterministic.
"""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conformance.jshelpers import JsClient, Msg, header_block, parse_msg
from conformance.servers import URL_TARGET, ServerProcess, spawn_server

REFERENCE = "nats-server"
EXAMPLES = int(os.environ.get("MINIJS_MODEL_EXAMPLES", "25"))
STEPS = int(os.environ.get("MINIJS_MODEL_STEPS", "50"))
#: Set to a file name to log every step and both answers.
LOG = os.environ.get("MINIJS_MODEL_LOG")

SUBJECTS = ["m.a", "m.b", "m.c"]
PAYLOADS = [b"", b"x", b"hello"]
MSG_IDS = [None, None, "id1", "id2", "id3"]
CONSUMERS = ["C1", "C2"]
#: Per consumer name: the filter it is created with (drawn), None for all subjects.
FILTERS = [None, "m.a", "m.b"]
ACK_WAIT = 1.0
MAX_DELIVER = 3
#: A deadline closer than this to the start of an operation is waited out: a step (one request
#: to each server plus the state comparison) must finish within it.
LEAD = 0.6
#: ...and this long after the latest moment the deadline could fall on either server.
TAIL = 0.3
#: A stream that is never deleted (see ANCHOR in test_js_api_fuzz.py: nats-server removes the
#: account's streams directory when the last stream goes, racing the next create).
ANCHOR = "ANCHOR"
REQUEST_TIMEOUT = 5.0
AGREE_TIMEOUT = 2.0


class Side:
    """One server (restartable on the same store directory) and its client."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.tmp = tempfile.TemporaryDirectory(prefix=f"model-{target}-")
        self.store = str(Path(self.tmp.name) / "jetstream")
        self.server: ServerProcess | None = None
        self.client: JsClient | None = None
        self.start()

    def start(self) -> None:
        self.server = spawn_server(self.target, args=["-js", "-sd", self.store])
        self.client = JsClient.connect(self.server)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.server is not None:
            self.server.stop()
            self.server = None

    def close(self) -> None:
        self.stop()
        self.tmp.cleanup()

    @property
    def js(self) -> JsClient:
        assert self.client is not None
        return self.client


@dataclass
class Harness:
    sides: tuple[Side, Side]
    generation: int = 0
    steps: int = 0
    log: list[str] = field(default_factory=list)


HARNESS: Harness | None = None

# ---------------------------------------------------------------------- normalisation

VOLATILE = {"created", "ts", "time", "first_ts", "last_ts", "last_active", "leader",
            "server_name", "cluster"}


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else normalise(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def reply_form(m: Msg | None) -> Any:
    if m is None:
        return "<no reply>"
    payload: Any = m.data
    if m.data[:1] == b"{":
        try:
            payload = normalise(m.json())
        except ValueError:
            pass
    return (m.status, m.header_pairs, payload)


def ack_tokens(reply: str | None) -> Any:
    """``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`` without the
    timestamp (older six-token forms kept as they are)."""
    if reply is None:
        return None
    tokens = reply.split(".")
    if len(tokens) == 9:
        tokens[7] = "<ts>"
    return tokens


def next_delivery(js: JsClient, reply: str) -> Msg:
    """The next frame answering a MSG.NEXT request on ``reply``: a status on the inbox itself
    or a delivery (sent with its stream subject, ack subject as reply). Nothing else is in
    flight on the connection while the machine fetches."""
    def ours(m: Msg) -> bool:
        return m.subject == reply or bool(m.reply and m.reply.startswith("$JS.ACK."))

    for i, m in enumerate(js._pending):
        if ours(m):
            return js._pending.pop(i)
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(reply)
        frame = js.raw.read_frame(timeout=remaining)
        if frame.startswith((b"MSG ", b"HMSG ")):
            m = parse_msg(frame)
            if ours(m):
                return m
            js._pending.append(m)


STATE_KEYS = ("messages", "bytes", "first_seq", "last_seq", "num_subjects", "num_deleted",
              "consumer_count")
CONSUMER_KEYS = ("num_ack_pending", "num_redelivered", "num_pending", "num_waiting")


def observe(js: JsClient, stream: str, consumers: list[str]) -> Any:
    """What is compared after every step."""
    info = js.info(stream)
    if "error" in info:
        state: Any = info["error"]
    else:
        st_ = info["state"]
        state = {k: st_.get(k) for k in STATE_KEYS}
    out: dict[str, Any] = {"stream": state}
    for name in consumers:
        ci = js.api(f"CONSUMER.INFO.{stream}.{name}")
        if "error" in ci:
            out[name] = ci["error"]
            continue
        row = {k: ci.get(k) for k in CONSUMER_KEYS}
        for k in ("delivered", "ack_floor"):
            d = ci.get(k) or {}
            row[k] = (d.get("consumer_seq"), d.get("stream_seq"))
        out[name] = row
    return out


# ---------------------------------------------------------------------- the machine


@dataclass
class Delivery:
    consumer: str
    acks: tuple[str, str]
    stream_seq: int


class Model(RuleBasedStateMachine):
    """One stream ``M<n>`` (``m.>``, file storage) and up to two durable pull consumers."""

    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.h = HARNESS
        self.h.generation += 1
        self.stream = f"M{self.h.generation}"
        self.consumers: dict[str, str | None] = {}
        self.deliveries: list[Delivery] = []
        #: consumer -> stream seq -> (earliest, latest) ack-wait deadline (monotonic)
        self.deadlines: dict[str, dict[int, tuple[float, float]]] = {}
        self.last_seq = 0
        #: The reference's first sequence after the last step.
        self.first_seq = 0
        self.since_restart = 0
        self.since_consumer_change = 0
        #: Steps so far, and the step each rarer rule last ran at (hypothesis picks the
        #: enabled rules uniformly; cool-downs leave most steps to publish/fetch/ack).
        self.step = 0
        #: (consumer, stream seq) delivered and neither acked nor termed (as far as we know).
        self.unacked: set[tuple[str, int]] = set()
        self.last_run: dict[str, int] = {}

    # -------------------------------------------------------------- plumbing

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.h.sides

    def note(self, text: str) -> None:
        if LOG:
            with open(LOG, "a") as f:
                f.write(text + "\n")

    def both(self, what: str, fn: Any) -> tuple[Any, Any]:
        """``fn(js)`` on the target, then on the reference; the answers must be equal."""
        self._settle()
        got, want = fn(self.sides[0].js), fn(self.sides[1].js)
        self.note(f"{self.stream} {what} -> {want!r}")
        assert got == want, (f"{what}: answers differ\n  {self.sides[0].target}: {got!r}\n"
                             f"  {REFERENCE}: {want!r}")
        return got, want

    def _settle(self) -> None:
        """Sleep past any ack-wait deadline that could fall inside the coming step."""
        while True:
            now = time.monotonic()
            late = [hi for seqs in self.deadlines.values() for lo, hi in seqs.values()
                    if lo - LEAD <= now <= hi + TAIL]
            if not late:
                return
            time.sleep(max(late) + TAIL - now + 0.01)

    def _request(self, js: JsClient, subject: str, body: Any = None,
                 headers: bytes | None = None) -> Any:
        try:
            return reply_form(js.request(subject, body, headers, timeout=REQUEST_TIMEOUT))
        except TimeoutError:
            return reply_form(None)

    # -------------------------------------------------------------- setup

    @initialize()
    def create_stream(self) -> None:
        for side in self.sides:
            names = side.js.api("STREAM.NAMES").get("streams") or []
            if ANCHOR not in names:
                side.js.create(ANCHOR, subjects=["anchor"])
            for name in names:
                if name != ANCHOR:
                    side.js.delete(name)
        self.both("create stream", lambda js: normalise(js.api(
            f"STREAM.CREATE.{self.stream}",
            {"name": self.stream, "subjects": ["m.>"], "storage": "file"})))
        self._create_consumer("C1", None)

    # -------------------------------------------------------------- rules

    @rule(subject=st.sampled_from(SUBJECTS), data=st.sampled_from(PAYLOADS),
          msg_id=st.sampled_from(MSG_IDS), expect=st.sampled_from([None, None, None, 0, -1, 1]))
    def publish(self, subject: str, data: bytes, msg_id: str | None, expect: int | None) -> None:
        pairs = []
        if msg_id is not None:
            pairs.append(("Nats-Msg-Id", msg_id))
        if expect is not None:
            pairs.append(("Nats-Expected-Last-Sequence", str(max(0, self.last_seq + expect))))
        headers = header_block(*pairs) if pairs else None
        got, _ = self.both(f"publish {subject} {data!r} {pairs}",
                           lambda js: self._request(js, subject, data, headers))
        payload = got[2]
        if isinstance(payload, dict) and "seq" in payload and not payload.get("duplicate"):
            self.last_seq = max(self.last_seq, payload["seq"])

    @precondition(lambda self: len(self.consumers) < len(CONSUMERS))
    @rule(index=st.integers(0, len(CONSUMERS) - 1), filt=st.sampled_from(FILTERS))
    def create_consumer(self, index: int, filt: str | None) -> None:
        name = [c for c in CONSUMERS if c not in self.consumers][index % (
            len(CONSUMERS) - len(self.consumers))]
        self._create_consumer(name, filt)

    def _create_consumer(self, name: str, filt: str | None) -> None:
        config: dict[str, Any] = {"durable_name": name, "ack_policy": "explicit",
                                  "ack_wait": int(ACK_WAIT * 1e9), "max_deliver": MAX_DELIVER}
        if filt:
            config["filter_subject"] = filt
        self.both(f"create consumer {name} {filt}", lambda js: normalise(js.api(
            f"CONSUMER.CREATE.{self.stream}.{name}",
            {"stream_name": self.stream, "config": config})))
        self.consumers[name] = filt
        self.deadlines[name] = {}
        self.since_consumer_change = 0

    # Rarely: most steps should work the consumers, not replace them.
    @precondition(lambda self: bool(self.consumers) and self.since_consumer_change >= 6)
    @rule(index=st.integers(0, len(CONSUMERS) - 1))
    def delete_consumer(self, index: int) -> None:
        names = sorted(self.consumers)
        name = names[index % len(names)]
        self.both(f"delete consumer {name}", lambda js: normalise(js.api(
            f"CONSUMER.DELETE.{self.stream}.{name}")))
        del self.consumers[name]
        self.deadlines.pop(name, None)
        self.deliveries = [d for d in self.deliveries if d.consumer != name]
        self.unacked = {(c, q) for c, q in self.unacked if c != name}
        self.since_consumer_change = 0

    @precondition(lambda self: bool(self.consumers))
    @rule(index=st.integers(0, len(CONSUMERS) - 1), batch=st.integers(1, 4))
    def fetch(self, index: int, batch: int) -> None:
        names = sorted(self.consumers)
        name = names[index % len(names)]
        subject = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{name}"
        self._settle()
        start = time.monotonic()
        results: list[tuple[list[Any], list[Msg]]] = []
        for side in self.sides:
            js = side.js
            reply = js.new_reply()
            js.send(subject, {"batch": batch, "no_wait": True}, reply=reply)
            seen: list[Any] = []
            msgs: list[Msg] = []
            while True:
                try:
                    m = next_delivery(js, reply)
                except TimeoutError:
                    seen.append("<timeout>")
                    break
                if m.status:
                    seen.append(("status", m.status))
                    break
                seen.append((m.subject, m.data, ack_tokens(m.reply)))
                msgs.append(m)
                if len(msgs) >= batch:
                    break
            results.append((seen, msgs))
        end = time.monotonic()
        (got, got_msgs), (want, want_msgs) = results
        self.note(f"{self.stream} fetch {name} {batch} -> {want!r}")
        assert got == want, (f"fetch {name} batch={batch}: deliveries differ\n"
                             f"  {self.sides[0].target}: {got!r}\n  {REFERENCE}: {want!r}")
        for a, b in zip(got_msgs, want_msgs):
            assert a.reply and b.reply
            seq = int(a.reply.split(".")[5])
            self.deliveries.append(Delivery(name, (a.reply, b.reply), seq))
            self.unacked.add((name, seq))
            self.deadlines[name][seq] = (start + ACK_WAIT, end + ACK_WAIT)
        self.deliveries = self.deliveries[-12:]

    @precondition(lambda self: bool(self.deliveries))
    @rule(index=st.integers(0, 11))
    def ack_latest(self, index: int) -> None:
        """+ACK of one of the latest deliveries (counting back from the newest)."""
        self.settle_delivery(len(self.deliveries) - 1 - index % len(self.deliveries), b"+ACK")

    @precondition(lambda self: bool(self.deliveries))
    @rule(index=st.integers(0, 11), kind=st.sampled_from([b"+ACK", b"+ACK", b"-NAK", b"+TERM"]))
    def settle_delivery(self, index: int, kind: bytes) -> None:
        d = self.deliveries[index % len(self.deliveries)]
        self.settle_now(d, kind)

    def settle_now(self, d: Delivery, kind: bytes) -> None:
        self._settle()
        answers = [self._request(side.js, ack, kind)
                   for side, ack in zip(self.sides, d.acks)]
        self.note(f"{self.stream} {kind!r} {d.acks[1]} -> {answers[1]!r}")
        assert answers[0] == answers[1], (f"{kind!r} of {d.acks[1]}: answers differ\n"
                                          f"  {self.sides[0].target}: {answers[0]!r}\n"
                                          f"  {REFERENCE}: {answers[1]!r}")
        # Settled or up for immediate redelivery: its ack-wait deadline no longer matters.
        self.deadlines.get(d.consumer, {}).pop(d.stream_seq, None)
        if kind != b"-NAK":
            self.unacked.discard((d.consumer, d.stream_seq))

    def cooled(self, name: str, steps: int) -> bool:
        return self.step - self.last_run.get(name, -steps) >= steps

    def ran(self, name: str) -> None:
        self.last_run[name] = self.step

    @rule(subject=st.sampled_from(SUBJECTS), data=st.sampled_from(PAYLOADS))
    def publish_plain(self, subject: str, data: bytes) -> None:
        self.publish(subject, data, None, None)

    @precondition(lambda self: self.cooled("purge", 6))
    @rule(filt=st.sampled_from([None, "m.a", "m.b", "m.*"]), keep=st.sampled_from([None, 0, 1]))
    def purge(self, filt: str | None, keep: int | None) -> None:
        body: dict[str, Any] = {}
        if filt:
            body["filter"] = filt
        if keep is not None:
            body["keep"] = keep
        self.ran("purge")
        got, _ = self.both(f"purge {body}",
                           lambda js: normalise(js.purge(self.stream, body or None)))
        if not body and got.get("success"):
            self.unacked.clear()  # every message is gone, pending ones included

    @precondition(lambda self: self.cooled("delete_message", 3))
    @rule(offset=st.integers(-3, 1), no_erase=st.booleans())
    def delete_message(self, offset: int, no_erase: bool) -> None:
        self.ran("delete_message")
        seq = max(1, self.last_seq + offset)
        body: dict[str, Any] = {"seq": seq}
        if no_erase:
            body["no_erase"] = True
        got, _ = self.both(f"delete message {body}",
                           lambda js: normalise(js.msg_delete(self.stream, body)))
        if got.get("success"):
            # A pending message deleted is acked as terminated on both servers.
            self.unacked = {(c, q) for c, q in self.unacked if q != seq}
            for seqs in self.deadlines.values():
                seqs.pop(seq, None)

    @precondition(lambda self: any(self.deadlines.values()))
    @rule()
    def wait(self) -> None:
        """Let every outstanding ack wait run out on both servers."""
        latest = max(hi for seqs in self.deadlines.values() for _, hi in seqs.values())
        delay = latest + TAIL - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for seqs in self.deadlines.values():
            seqs.clear()
        self.note(f"{self.stream} wait {delay:.2f}")

    @precondition(lambda self: self.since_restart >= 15)
    @rule()
    def restart(self) -> None:
        self._settle()
        for side in self.sides:
            side.stop()
        for side in self.sides:
            side.start()
        self.since_restart = 0
        if self.unacked:
            # A restored pending message is redelivered once its ack wait, counted from its
            # delivery time truncated to whole seconds, has run out (nats-server checks as
            # the consumer starts, then at each deadline): waiting out the ack wait after the
            # restart makes both redeliver everything pending.
            time.sleep(ACK_WAIT + TAIL)
            for seqs in self.deadlines.values():
                seqs.clear()
        self.note(f"{self.stream} restart")

    # -------------------------------------------------------------- the comparison

    @invariant()
    def same_state(self) -> None:
        self.since_restart += 1
        self.step += 1
        self.since_consumer_change += 1
        self._settle()
        consumers = sorted(self.consumers)
        seen: list[Any] = [None, None]

        def agree() -> bool:
            seen[0] = observe(self.sides[0].js, self.stream, consumers)
            seen[1] = observe(self.sides[1].js, self.stream, consumers)
            return seen[0] == seen[1]

        deadline = time.monotonic() + AGREE_TIMEOUT
        while not agree() and time.monotonic() < deadline:
            time.sleep(0.05)
        stream = seen[1]["stream"]
        if isinstance(stream, dict):
            self.first_seq = stream["first_seq"]
        assert seen[0] == seen[1], (f"state differs\n  {self.sides[0].target}: {seen[0]!r}\n"
                                    f"  {REFERENCE}: {seen[1]!r}")

    def teardown(self) -> None:
        for side in self.sides:
            if side.client is not None:
                try:
                    side.js.delete(self.stream)
                except Exception:
                    pass


# ---------------------------------------------------------------------- the case


@pytest.fixture
def harness(target: str) -> Iterator[Harness]:
    if target == URL_TARGET:
        pytest.skip("restarts its servers on their store directories; not possible with --url")
    global HARNESS
    sides: list[Side] = []
    try:
        sides.append(Side(target))
        sides.append(Side(REFERENCE))
        HARNESS = Harness((sides[0], sides[1]))
        yield HARNESS
    finally:
        HARNESS = None
        for side in sides:
            side.close()


def test_js_model(target: str, harness: Harness) -> None:
    """A derandomized sequence of stream and consumer operations gets the same answers and
    leaves the same observable state on the target as on nats-server, step by step."""
    run_state_machine_as_test(Model, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, derandomize=True, database=None,
        deadline=None, phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck)))
    assert harness.generation >= EXAMPLES
