"""Redelivery timing as a class: a model of nats-server's rule, checked against the target with
generated combinations of ``ack_wait``, ``backoff``, ``-NAK`` with and without a delay (as a Go
duration or as ``{"delay": ns}``), ``+WPI``, ``+ACK``/``+TERM``, ``max_deliver``, a consumer
paused at creation and ``ack_wait`` changed by an update while messages are pending.

The rule (nats-server ``trackPending``, ``checkPending``, ``processNak``, ``progressUpdate``,
``updateConfig``, ``getNextMsg``):

* a pending message carries a timestamp: its delivery time, or the time of its last ``+WPI``, or
  for ``-NAK <delay>`` the NAK time minus the consumer's configured ``ack_wait`` plus the delay;
* it is due when the timestamp plus its ack wait has passed; the ack wait is
  ``backoff[deliveries - 1]`` (the last entry repeating) when there is a backoff, else
  ``ack_wait`` — read when the check runs, so an update applies to messages already pending
  (the check then runs 100 ms after the update). With a backoff ``ack_wait`` is ``backoff[0]``,
  so a NAK delay on the n-th delivery waits ``delay + backoff[n-1] - backoff[0]``;
* a plain ``-NAK`` (or an unparsable delay) makes it due at once; ``-NAK 0`` and ``{}`` go the
  delay way with a zero delay;
* a due message is delivered again at once when the consumer can deliver (here a push
  subscription or a waiting pull request is always there), or when a pause ends;
* the delivery after the ``max_deliver``-th is not made: at the moment it would have been, the
  ``MAX_DELIVERIES`` advisory goes out instead (``deliveries`` = ``max_deliver``).

Each generated example runs a few messages at once on one consumer, each with its own plan of
what the worker answers to each delivery; the model predicts from each observed delivery when
the next one (or the advisory) must come, and every delivery must fall in its window. Windows
are generous late (the two cores are shared) and tight early; the generated values keep
different rules apart by more than a window. Derandomized, few examples (CI time).
``MINIJS_TIMING_EXAMPLES`` runs more by hand.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import nats
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.helpers import SpawnFn
from conformance.jshelpers import JsClient, ack_fields, unique_name
from conformance.jshelpers import Sub as Inbox
from conformance.servers import Endpoint

S = 1_000_000_000
EXAMPLES = int(os.environ.get("MINIJS_TIMING_EXAMPLES", "10"))
#: Set to a file name to log every plan and what came when.
LOG = os.environ.get("MINIJS_TIMING_LOG")
#: A delivery may come this much before its predicted time (clock reads on two sides)...
EARLY = 0.06
#: ...and this much after it (scheduling on a loaded machine).
LATE = 0.25
#: nats-server checks pending acks this long after an ack_wait update.
UPDATE_CHECK = 0.1
#: After the last predicted event, nothing else may arrive for this long.
QUIET = 0.4


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Action:
    """What the worker answers to one delivery: ``wait`` (nothing, the ack wait runs out),
    ``nak`` (``form`` ``plain``, or a delay nats-server cannot parse, which counts as none:
    ``unit`` / ``float`` / ``string``), ``nak_delay`` (``delay`` s, ``form`` ``go`` / ``json``
    / ``zero`` (``-NAK 0``) / ``empty`` (``-NAK {}``), the last two a zero delay), ``wpi``
    (``after`` s into the delivery, then nothing), ``ack``, ``term``."""
    kind: str
    delay: float = 0.0
    form: str = "go"
    after: float = 0.0

    def body(self) -> bytes:
        if self.kind == "nak":
            return {"plain": b"-NAK", "unit": b"-NAK 5", "float": b'-NAK {"delay": 1e9}',
                    "string": b'-NAK {"delay": "1s"}'}[self.form]
        if self.kind in ("ack", "term"):
            return {"ack": b"+ACK", "term": b"+TERM"}[self.kind]
        if self.kind == "nak_delay":
            if self.form == "zero":
                return b"-NAK 0"
            if self.form == "empty":
                return b"-NAK {}"
            if self.form == "json":
                return b"-NAK " + json.dumps({"delay": int(self.delay * S)}).encode()
            return b"-NAK " + f"{int(self.delay * 1000)}ms".encode()
        if self.kind == "wpi":
            return b"+WPI"
        raise ValueError(self.kind)


@dataclass(frozen=True)
class Plan:
    push: bool
    backoff: tuple[float, ...]
    ack_wait: float
    max_deliver: int
    #: (seconds from creation, seconds paused) or None: paused at creation (start 0, in the
    #: config) or later by the PAUSE API.
    pause: tuple[float, float] | None
    #: (seconds from creation, new ack_wait) or None; only without a backoff.
    update: tuple[float, float] | None
    #: Per message, the worker's answer to each delivery in turn (the last repeats).
    answers: tuple[tuple[Action, ...], ...]

    def configured_ack_wait(self, at_update: bool) -> float:
        if self.backoff:
            return self.backoff[0]
        if at_update and self.update is not None:
            return self.update[1]
        return self.ack_wait

    def wait_for(self, deliveries: int, updated: bool) -> float:
        if self.backoff:
            return self.backoff[min(deliveries - 1, len(self.backoff) - 1)]
        return self.configured_ack_wait(updated)


DELAYS = [0.0, 0.3, 0.7]
WAITS = [0.3, 0.6, 1.0]


@st.composite
def plans(draw: Any) -> Plan:
    push = draw(st.booleans())
    backoff: tuple[float, ...] = ()
    if draw(st.integers(0, 2)):  # two in three examples have a backoff
        backoff = tuple(draw(st.lists(st.sampled_from(WAITS), min_size=1, max_size=3)))
    ack_wait = draw(st.sampled_from(WAITS))
    max_deliver = draw(st.sampled_from([-1, 3, 4]))
    if max_deliver != -1:
        max_deliver = max(max_deliver, len(backoff))
    pause = draw(st.sampled_from([None, None, (0.0, 0.8), (0.5, 0.9)]))
    update = None
    if not backoff and draw(st.booleans()):
        update = (draw(st.sampled_from([0.2, 0.5])), draw(st.sampled_from(WAITS)))
    action = st.one_of(
        st.just(Action("wait")),
        st.builds(lambda f: Action("nak", form=f),
                  st.sampled_from(["plain", "plain", "unit", "float", "string"])),
        st.builds(Action, st.just("nak_delay"), st.sampled_from(DELAYS),
                  st.sampled_from(["go", "json", "go", "json", "zero", "empty"])),
        st.builds(lambda a: Action("wpi", after=a), st.sampled_from([0.15, 0.25])),
    )
    answers = []
    for _ in range(draw(st.integers(1, 3))):
        steps = draw(st.lists(action, min_size=1, max_size=4))
        # Without max_deliver a plan ends with an ack or a term.
        if max_deliver == -1 or draw(st.booleans()):
            steps.append(draw(st.sampled_from([Action("ack"), Action("term")])))
        answers.append(tuple(steps))
    return Plan(push, backoff, ack_wait, max_deliver, pause, update, tuple(answers))


@dataclass
class Track:
    """One message's deliveries: predicted (lo, hi) window of the next one."""
    seq: int
    answers: tuple[Action, ...]
    seen: list[tuple[int, float]] = field(default_factory=list)
    #: Monotonic (lo, hi) of the next delivery, or of the MAX_DELIVERIES advisory when
    #: ``advisory`` is set; None when nothing more is expected.
    window: tuple[float, float] | None = None
    advisory: bool = False


class Run:
    """One plan on one server: the consumer, its messages, the worker's answers, and the
    check of every delivery and advisory against the window the rule predicts."""

    def __init__(self, plan: Plan, url: str) -> None:
        self.plan = plan
        self.url = url
        self.name = unique_name("T")
        self.errors: list[str] = []
        self.tracks: dict[int, Track] = {}
        #: The pause, as monotonic times (0, 0: none).
        self.paused_from = 0.0
        self.resume = 0.0
        self.updated_at: float | None = None
        self.loop = asyncio.get_running_loop()
        #: When the consumer was created (monotonic): times in messages count from it.
        self.t0 = self.loop.time()

    def fail(self, text: str) -> None:
        self.errors.append(text)

    # -------------------------------------------------------------- prediction

    def answer_for(self, track: Track, dc: int) -> Action:
        return track.answers[min(dc - 1, len(track.answers) - 1)]

    def due_window(self, due: float) -> tuple[float, float]:
        if self.resume and self.paused_from - LATE <= due < self.paused_from + EARLY:
            return (due - EARLY, self.resume + LATE)  # just before the pause, or after it
        if self.paused_from <= due < self.resume:
            due = self.resume
        return (due - EARLY, due + LATE)

    def predict(self, track: Track, dc: int, base: float, floor: float = 0.0) -> None:
        """The next event after delivery ``dc`` of ``track``, whose timestamp is ``base``
        (seconds, monotonic), due after the ack wait it has (not before ``floor``)."""
        due = base + self.plan.wait_for(dc, self.updated_at is not None)
        if self.plan.update is not None and self.updated_at is None:
            at = self.t0 + self.plan.update[0]
            if due > at:  # the update comes first: checked again 100 ms later
                due = max(base + self.plan.wait_for(dc, True), at + UPDATE_CHECK)
        self.expect_next(track, dc, max(due, floor))

    def expect_next(self, track: Track, dc: int, due: float) -> None:
        md = self.plan.max_deliver
        track.advisory = md != -1 and dc >= md
        track.window = self.due_window(due)

    # -------------------------------------------------------------- the run

    async def run(self) -> None:
        nc = await nats.connect(self.url, allow_reconnect=False, connect_timeout=5)
        try:
            await self._run(nc)
        finally:
            try:
                await nc.request(f"$JS.API.STREAM.DELETE.{self.name}", b"", timeout=5)
            except Exception:
                pass
            await nc.close()

    async def _run(self, nc: Any) -> None:
        plan, name = self.plan, self.name
        prefix = name.lower()
        out = await self.api(nc, f"STREAM.CREATE.{name}",
                             {"name": name, "subjects": [f"{prefix}.>"], "storage": "memory"})
        assert "error" not in out, out
        deliver = nc.new_inbox()
        config: dict[str, Any] = {"durable_name": "c", "ack_policy": "explicit",
                                  "max_deliver": plan.max_deliver,
                                  "ack_wait": int(plan.ack_wait * S)}
        if plan.backoff:
            config["backoff"] = [int(b * S) for b in plan.backoff]
            config.pop("ack_wait")
        if plan.push:
            config["deliver_subject"] = deliver
        if plan.pause is not None and plan.pause[0] == 0:
            config["pause_until"] = rfc3339(time.time() + plan.pause[1])
        events: asyncio.Queue = asyncio.Queue()

        async def on_msg(m: Any) -> None:
            await events.put(("msg", self.loop.time(), m))

        async def on_advisory(m: Any) -> None:
            await events.put(("advisory", self.loop.time(), m))

        await nc.subscribe(f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{name}.c",
                           cb=on_advisory)
        await nc.subscribe(deliver, cb=on_msg)
        await nc.flush()
        self.t0 = self.loop.time()
        if plan.pause is not None:
            self.paused_from = self.t0 + plan.pause[0]
            self.resume = self.paused_from + plan.pause[1]
        out = await self.api(nc, f"CONSUMER.CREATE.{name}.c",
                             {"stream_name": name, "config": config})
        assert "error" not in out, out
        if not plan.push:
            await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{name}.c",
                             json.dumps({"batch": 500, "expires": 60 * S}).encode(),
                             reply=deliver)
        if plan.pause is not None and plan.pause[0] > 0:
            self.loop.call_later(plan.pause[0], lambda: asyncio.ensure_future(self.pause(nc)))
        if plan.update is not None:
            self.loop.call_later(plan.update[0], lambda: asyncio.ensure_future(
                self.update(nc, config)))
        for i, answers in enumerate(plan.answers):
            ack = await nc.request(f"{prefix}.{i}", f"m{i}".encode(), timeout=5)
            seq = json.loads(ack.data)["seq"]
            track = Track(seq, answers)
            now = self.loop.time()
            track.window = self.due_window(now)
            track.window = (track.window[0] - 0.2, track.window[1])  # published just before
            self.tracks[seq] = track
        await self.watch(nc, events)

    async def pause(self, nc: Any) -> None:
        assert self.plan.pause is not None
        until = rfc3339(time.time() + self.plan.pause[1])
        out = await self.api(nc, f"CONSUMER.PAUSE.{self.name}.c", {"pause_until": until})
        if "error" in out:
            self.fail(f"pause: {out}")

    async def update(self, nc: Any, config: dict[str, Any]) -> None:
        assert self.plan.update is not None
        new = dict(config, ack_wait=int(self.plan.update[1] * S))
        self.updated_at = self.loop.time()
        out = await self.api(nc, f"CONSUMER.CREATE.{self.name}.c",
                             {"stream_name": self.name, "config": new})
        if "error" in out:
            self.fail(f"update: {out}")

    async def api(self, nc: Any, suffix: str, body: Any) -> Any:
        m = await nc.request(f"$JS.API.{suffix}", json.dumps(body).encode(), timeout=5)
        return json.loads(m.data)

    def horizon(self) -> float | None:
        ends = [t.window[1] for t in self.tracks.values() if t.window is not None]
        return max(ends) if ends else None

    async def watch(self, nc: Any, events: asyncio.Queue) -> None:
        while True:
            end = self.horizon()
            wait = (end + QUIET if end is not None else self.loop.time() + QUIET) \
                - self.loop.time()
            if end is None and wait <= 0:
                return
            try:
                kind, at, m = await asyncio.wait_for(events.get(), max(wait, 0.01))
            except asyncio.TimeoutError:
                if end is None:
                    return
                late = [t for t in self.tracks.values()
                        if t.window is not None and t.window[1] < self.loop.time()]
                for t in late:
                    what = "MAX_DELIVERIES advisory" if t.advisory else \
                        f"delivery {len(t.seen) + 1}"
                    self.fail(f"seq {t.seq}: {what} expected in {self.rel(t.window)}, "
                              f"none came (seen {self.rel_seen(t)})")
                    t.window = None
                continue
            if kind == "msg":
                await self.on_delivery(nc, at, m)
            else:
                self.on_advisory(at, m)

    def rel(self, window: tuple[float, float] | None) -> str:
        if window is None:
            return "-"
        return f"[{window[0] - self.t0:.3f}, {window[1] - self.t0:.3f}]"

    def rel_seen(self, t: Track) -> str:
        return ", ".join(f"{dc}@{at - self.t0:.3f}" for dc, at in t.seen)

    async def on_delivery(self, nc: Any, at: float, m: Any) -> None:
        if not m.reply:
            return  # a status (pull)
        tokens = m.reply.split(".")
        dc, seq = int(tokens[4]), int(tokens[5])
        t = self.tracks.get(seq)
        if t is None:
            self.fail(f"delivery of unknown seq {seq}")
            return
        expected_dc = len(t.seen) + 1
        if t.window is None or t.advisory or dc != expected_dc:
            self.fail(f"seq {t.seq}: unexpected delivery {dc} at {at - self.t0:.3f} "
                      f"(seen {self.rel_seen(t)}; expected "
                      f"{'advisory' if t.advisory else 'delivery'} in {self.rel(t.window)})")
            t.window = None
            t.seen.append((dc, at))
            return
        lo, hi = t.window
        if not lo <= at <= hi:
            self.fail(f"seq {t.seq}: delivery {dc} at {at - self.t0:.3f}, expected in "
                      f"{self.rel(t.window)} (seen {self.rel_seen(t)})")
        t.seen.append((dc, at))
        action = self.answer_for(t, dc)
        if action.kind == "wpi":
            self.loop.call_later(action.after, lambda: asyncio.ensure_future(
                self.progress(nc, t, dc, m.reply)))
            # Predicted from the moment the +WPI is sent (see progress).
            t.window = self.due_window(at + action.after + self.plan.wait_for(
                dc, self.updated_at is not None))
            t.advisory = False
            return
        sent = self.loop.time()
        if action.kind != "wait":
            await nc.publish(m.reply, action.body())
        if action.kind in ("ack", "term"):
            t.window = None
            return
        if action.kind == "wait":
            self.predict(t, dc, at)
        elif action.kind == "nak":
            self.expect_next(t, dc, sent)
        else:  # nak_delay
            delay = 0.0 if action.form in ("zero", "empty") else action.delay
            base = sent - self.plan.configured_ack_wait(self.updated_at is not None) + delay
            self.predict(t, dc, base, floor=sent)

    async def progress(self, nc: Any, t: Track, dc: int, reply: str) -> None:
        sent = self.loop.time()
        await nc.publish(reply, b"+WPI")
        self.predict(t, dc, sent)

    def on_advisory(self, at: float, m: Any) -> None:
        body = json.loads(m.data)
        seq = body["stream_seq"]
        t = self.tracks.get(seq)
        if t is None or not t.advisory or t.window is None:
            self.fail(f"unexpected MAX_DELIVERIES advisory for seq {seq} at "
                      f"{at - self.t0:.3f}")
            return
        if body["deliveries"] != self.plan.max_deliver:
            self.fail(f"seq {seq}: advisory deliveries {body['deliveries']}")
        lo, hi = t.window
        if not lo <= at <= hi:
            self.fail(f"seq {seq}: MAX_DELIVERIES advisory at {at - self.t0:.3f}, expected in "
                      f"{self.rel(t.window)} (seen {self.rel_seen(t)})")
        t.window = None


def check(plan: Plan, endpoint: Endpoint) -> None:
    async def go() -> list[str]:
        run = Run(plan, endpoint.url)
        await run.run()
        return run.errors

    errors = asyncio.run(go())
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"{plan}\n  {'ok' if not errors else errors}\n")
    assert not errors, f"{plan}\n" + "\n".join(errors)


def test_js_redelivery_timing_model(target: str, js_server: Endpoint) -> None:
    """Generated consumers and worker answers: every redelivery and MAX_DELIVERIES advisory
    comes when nats-server's rule says, in order, and nothing else comes."""

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(plan=plans())
    def run(plan: Plan) -> None:
        check(plan, js_server)

    run()


# ---------------------------------------------------------------------- restarts


def restartable(spawn: SpawnFn, tmp_path: Path) -> Callable[[], Any]:
    """Starts the target on the same store directory each time."""
    sd = str(tmp_path / "sd")
    return lambda: spawn(args=["-js", "-sd", sd])


def test_js_redelivery_deadlines_survive_restart(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """A restart keeps each pending message's timestamp (nats-server stores it in whole
    seconds, so a deadline may come up to 1 s early, never late) and checks them as the
    consumer starts: a delivered message and a message NAKed with a delay are redelivered
    after the restart when they are due (at once if that passed during the restart), in
    order, with their delivery counts."""
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"])
    js.pub_ok(f"{name.lower()}.a", "m0")
    js.pub_ok(f"{name.lower()}.b", "m1")
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
        "durable_name": "c", "ack_policy": "explicit", "ack_wait": 2 * S}})
    assert "error" not in out, out
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{name}.c"
    inbox = Inbox(js)
    js.send(nxt, {"batch": 2}, reply=inbox.subject)
    first = [inbox.next(), inbox.next()]
    delivered = time.monotonic()
    assert [m.data for m in first] == [b"m0", b"m1"]
    js.request(first[1].reply, b"-NAK 3s")  # timestamp: now - 2 s + 3 s
    naked = time.monotonic()
    js.close()
    srv.stop()
    srv = start()
    js = JsClient.connect(srv)
    inbox = Inbox(js)
    asked = time.monotonic()
    js.send(nxt, {"batch": 2, "expires": 6 * S}, reply=inbox.subject)
    again = inbox.next(5)
    at0 = time.monotonic()
    later = inbox.next(5)
    at1 = time.monotonic()
    assert (again.data, ack_fields(again)[2]) == (b"m0", 2)
    assert (later.data, ack_fields(later)[2]) == (b"m1", 2)

    def window(lo: float, hi: float) -> tuple[float, float]:
        # Due while the server was still starting: at once when asked.
        return max(lo, asked) - EARLY, max(hi, asked) + LATE

    lo, hi = window(delivered + 1, delivered + 2)
    assert lo <= at0 <= hi, (at0 - delivered, asked - delivered)
    lo, hi = window(naked + 2, naked + 3)
    assert lo <= at1 <= hi, (at1 - naked, asked - naked)
    js.close()


def test_js_redelivery_overdue_at_restart(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """A message whose backoff ran out while the server was down is redelivered as soon as a
    pull request comes after the restart (nats-server checks pending acks as the consumer
    starts, ``setLeader`` → ``checkPending``); its delivery count and backoff step carry
    over."""
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"])
    js.pub_ok(f"{name.lower()}.a", "m0")
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
        "durable_name": "c", "ack_policy": "explicit", "backoff": [S // 2, S, 3 * S // 2]}})
    assert "error" not in out, out
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{name}.c"
    inbox = Inbox(js)
    js.send(nxt, {"batch": 2, "expires": 3 * S}, reply=inbox.subject)
    assert ack_fields(inbox.next())[2] == 1
    assert ack_fields(inbox.next(3))[2] == 2  # after backoff[0]
    js.close()
    srv.stop()
    time.sleep(1.6)  # backoff[1] (1 s) runs out while the server is down
    srv = start()
    js = JsClient.connect(srv)
    inbox = Inbox(js)
    asked = time.monotonic()
    js.send(nxt, {"batch": 2, "expires": 6 * S}, reply=inbox.subject)
    m = inbox.next(5)
    assert (m.data, ack_fields(m)[2]) == (b"m0", 3)
    assert time.monotonic() - asked <= LATE
    # The next wait is backoff[2]: 1.5 s.
    redelivered = time.monotonic()
    m = inbox.next(6)
    assert ack_fields(m)[2] == 4
    assert 1.5 - EARLY <= time.monotonic() - redelivered <= 1.5 + LATE
    js.close()


# ---------------------------------------------------------------------- updates


def test_js_backoff_shortened_by_update_waits_for_armed_check(target: str, js: JsClient,
                                                               stream_name: str) -> None:
    """``backoff`` [0.3 s, 2 s] changed to [0.3 s, 0.5 s] right after the second delivery:
    ``ack_wait`` (``backoff[0]``) is unchanged, so nats-server keeps the check it armed for
    the old 2 s step; the third delivery comes 2 s after the second, not 0.5 s."""
    name = stream_name
    js.create(name, subjects=[f"{name.lower()}.>"])
    config: dict[str, Any] = {"durable_name": "c", "ack_policy": "explicit",
                              "backoff": [3 * S // 10, 2 * S]}
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": config})
    assert "error" not in out, out
    inbox = Inbox(js)
    js.send(f"$JS.API.CONSUMER.MSG.NEXT.{name}.c", {"batch": 5, "expires": 6 * S},
            reply=inbox.subject)
    js.pub_ok(f"{name.lower()}.a", "m0")
    assert ack_fields(inbox.next())[2] == 1
    assert ack_fields(inbox.next(2))[2] == 2
    second = time.monotonic()
    config["backoff"] = [3 * S // 10, S // 2]
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": config})
    assert out["config"]["backoff"] == [3 * S // 10, S // 2], out
    m = inbox.next(4)
    assert ack_fields(m)[2] == 3
    assert 2 - EARLY <= time.monotonic() - second <= 2 + LATE
