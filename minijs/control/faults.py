"""Fault injection: break things on purpose, deterministically, and say so in the log.

A :class:`FaultInjector` holds rules and plugs into the router's one hook
(``router.fault_hook``) only while it has rules, so a server without faults pays nothing. Two
kinds of traffic can be caught:

* **deliveries of a consumer** (messages routed with a ``$JS.ACK.<stream>.<consumer>.>`` reply):
  *dropped* (the consumer counts them delivered, so they come back after ``ack_wait``, which
  exercises redelivery, backoff and ``max_deliver``) or *delayed* (delivered later on the
  server clock);
* **requests and publishes** whose subject matches a rule's subject (wildcards allowed: a
  publish into a stream, ``$JS.API.>`` requests, pull requests on
  ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>``): *answered* at once with a status
  (``408 Request Timeout``, a ``409`` variant, ``503`` no responders) or a JSON API error from
  the error table (any ``err_code``, e.g. 10076 JetStream not enabled), without reaching the
  server; or *delayed* (handed on later on the server clock).

Invariants:

* a rule fires on its next ``count`` matches (``count=None``: every match) or, with
  ``fraction``, on that share of matches drawn from the server's seeded source (the stream
  ``faults/<rule id>``: see :mod:`minijs.randomness`), or from the rule's own ``seed`` when it
  has one: the same seed and traffic inject the same faults;
* every injection is logged at INF (``[INF] minijs fault #<id>: ...``) and recorded in
  :attr:`FaultInjector.log`; a rule whose count is spent is removed;
* a rule that names a stream or consumer that does not exist is rejected when added
  (:class:`FaultError`), and so is one with an unknown action or status;
* what a delayed rule hands on is never caught again by the rule that delayed it, and what a
  rule answers is never caught by any rule;
* the ``$MINIJS.>`` control plane is never caught: neither its requests nor its replies.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from minijs.core.subjects import is_valid_subject, subject_matches
from minijs.jetstream import errors as E
from minijs.protocol import wire
from minijs.protocol.gomarshal import dumps
from minijs.randomness import RandomSource

#: Status texts nats-server uses for the statuses a rule may answer with.
STATUS_TEXTS = {
    408: "Request Timeout",
    409: "Consumer Deleted",
    503: "",
}
#: 409 descriptions nats-server sends to pull requests (any may be chosen by ``description``).
KNOWN_409 = ("Consumer Deleted", "Consumer is push based", "Exceeded MaxWaiting",
             "Exceeded MaxRequestBatch", "Exceeded MaxRequestExpires",
             "Exceeded MaxRequestMaxBytes", "Message Size Exceeds MaxBytes",
             "Leadership Change", "Server Shutdown", "Consumer Paused")

DELIVERY_ACTIONS = ("drop", "delay")
REQUEST_ACTIONS = ("status", "error", "delay")


class FaultError(ValueError):
    """A fault rule or action that cannot be applied; the text names the fix."""


@dataclass
class FaultRule:
    """One fault rule. ``target`` is ``"deliveries"`` (of ``stream``/``consumer``) or
    ``"requests"`` (messages published on ``subject``)."""

    id: int
    """Its number, from 1, in the order rules were added (the log names it)."""
    target: str
    """``"deliveries"`` or ``"requests"``."""
    action: str
    """For deliveries ``"drop"`` or ``"delay"``; for requests ``"status"``, ``"error"`` or
    ``"delay"``."""
    stream: str = ""
    """The stream whose consumer's deliveries it catches."""
    consumer: str = ""
    """That consumer."""
    subject: str = ""
    """The subject (wildcards allowed) of the requests or publishes it catches."""
    count: int | None = 1
    """How many matches it fires on before it is removed (None: every match, until removed)."""
    fraction: float | None = None
    """With a fraction, it fires on that share of matches, drawn from its random source."""
    seed: int | None = None
    """The seed of its own random source (None: one derived from the server's seed): the
    same seed and traffic, the same faults."""
    delay: float = 0.0
    """For ``"delay"``: how late, in seconds of the server clock."""
    status: int = 0
    """For ``"status"``: 408, 409 or 503 (no responders)."""
    description: str = ""
    """The status line's text (a 409's reason), or the API error's text where its template
    has placeholders."""
    error: int = 0
    """For ``"error"``: the ``err_code`` of nats-server's JetStream error table."""
    fired: int = 0
    """How many times it fired so far."""
    _rng: RandomSource = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The rule's fields as the control plane sends them (empty ones left out)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if not k.startswith("_")}
        return {k: v for k, v in out.items() if v not in ("", None) or k in ("count",)}

    def describe(self) -> str:
        """One line for the log: ``drop deliveries of S > C (next 1)``."""
        where = (f"deliveries of {self.stream} > {self.consumer}" if self.target == "deliveries"
                 else f"messages on {self.subject}")
        what = {"drop": "drop", "delay": f"delay {self.delay:g}s",
                "status": f"answer {self.status} {self.description}".rstrip(),
                "error": f"answer API error {self.error}"}[self.action]
        many = ("every one" if self.count is None else f"next {self.count}")
        if self.fraction is not None:
            many += f", fraction {self.fraction:g}"
            if self.seed is not None:
                many += f" (seed {self.seed})"
            elif self._rng is not None:
                many += f" (server seed {self._rng.seed})"
        return f"{what} {where} ({many})"


@dataclass(frozen=True)
class FaultEvent:
    """One injected fault, as recorded in :attr:`FaultInjector.log`."""

    rule: int
    """The id of the rule that fired (0 for ``disconnect()`` and ``slow_consumer()``)."""
    action: str
    """``drop``, ``delay``, ``status``, ``error``, ``disconnect`` or ``slow_consumer``."""
    subject: str
    """The subject of the message it caught ("" for a client fault)."""
    detail: str
    """What it did, as logged (the status, the delay, the delivery's ack subject, the client)."""
    at: float
    """When, in seconds since the epoch on the server clock."""


class FaultInjector:
    """The fault rules of one server. ``server`` is the router (with ``jetstream`` attached
    when JetStream runs)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        #: The rules in force, in the order they were added.
        self.rules: list[FaultRule] = []
        #: Every fault injected, oldest first.
        self.log: list[FaultEvent] = []
        self._ids = itertools.count(1)
        self._bypass = 0

    # ------------------------------------------------------------------ adding rules

    def drop_deliveries(self, stream: str, consumer: str, count: int | None = 1, *,
                        fraction: float | None = None, seed: int | None = None) -> FaultRule:
        """Drop the next ``count`` deliveries of a consumer (or a seeded ``fraction`` of them):
        the consumer counts them delivered, so they are redelivered after ``ack_wait``."""
        return self.add(target="deliveries", action="drop", stream=stream, consumer=consumer,
                        count=count, fraction=fraction, seed=seed)

    def delay_deliveries(self, stream: str, consumer: str, seconds: float,
                         count: int | None = 1, *, fraction: float | None = None,
                         seed: int | None = None) -> FaultRule:
        """Deliver the next ``count`` messages of a consumer ``seconds`` late (server clock)."""
        return self.add(target="deliveries", action="delay", stream=stream, consumer=consumer,
                        delay=seconds, count=count, fraction=fraction, seed=seed)

    def fail_requests(self, subject: str, *, status: int = 0, description: str = "",
                      error: int = 0, count: int | None = 1, fraction: float | None = None,
                      seed: int | None = None) -> FaultRule:
        """Answer the next ``count`` messages on ``subject`` (a pull request, a publish, an API
        request) with ``status`` (408, 409, 503) or the JSON API ``error`` of that err_code,
        instead of letting them through."""
        if bool(status) == bool(error):
            raise FaultError("give exactly one of status= (408, 409, 503) or error= (an "
                             "err_code of the JetStream error table, e.g. 10076)")
        return self.add(target="requests", action="status" if status else "error",
                        subject=subject, status=status, description=description, error=error,
                        count=count, fraction=fraction, seed=seed)

    def delay_requests(self, subject: str, seconds: float, count: int | None = 1, *,
                       fraction: float | None = None, seed: int | None = None) -> FaultRule:
        """Hand the next ``count`` messages on ``subject`` on ``seconds`` late (server clock),
        which delays their replies."""
        return self.add(target="requests", action="delay", subject=subject, delay=seconds,
                        count=count, fraction=fraction, seed=seed)

    def add(self, **spec: Any) -> FaultRule:
        """Add a rule from its fields (what the control plane's ``FAULT.ADD`` sends)."""
        known = {f.name for f in dataclasses.fields(FaultRule)} - {"id", "fired", "_rng"}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise FaultError(f"unknown fault rule field {unknown[0]!r}; known: "
                             + ", ".join(sorted(known)))
        try:
            rule = FaultRule(id=0, **spec)
        except TypeError as exc:
            raise FaultError(f"bad fault rule: {exc}") from None
        self._validate(rule)
        rule.id = next(self._ids)
        rule._rng = (RandomSource(rule.seed) if rule.seed is not None
                     else self.server.randomness.child("faults").child(str(rule.id)))
        self.rules.append(rule)
        self._install()
        self.server.log.info(f"minijs fault #{rule.id} added: {rule.describe()}")
        return rule

    def _validate(self, rule: FaultRule) -> None:
        if rule.target == "deliveries":
            if rule.action not in DELIVERY_ACTIONS:
                raise FaultError(f"deliveries can be {' or '.join(DELIVERY_ACTIONS)}, "
                                 f"not {rule.action!r}")
            from minijs.control.snapshots import find_stream

            try:
                stream = find_stream(self.server, rule.stream)
            except LookupError:
                stream = None
            if stream is None:
                raise FaultError(f"no stream {rule.stream!r}: create it (and the consumer) "
                                 "before adding a delivery fault")
            if rule.consumer not in stream.consumers:
                raise FaultError(f"stream {rule.stream!r} has no consumer {rule.consumer!r}: "
                                 "create it before adding a delivery fault")
        elif rule.target == "requests":
            if rule.action not in REQUEST_ACTIONS:
                raise FaultError(f"requests can be {', '.join(REQUEST_ACTIONS)}, "
                                 f"not {rule.action!r}")
            if not isinstance(rule.subject, str) or not is_valid_subject(rule.subject.encode()):
                raise FaultError(f"invalid subject {rule.subject!r} for a request fault")
            if rule.action == "status" and rule.status not in STATUS_TEXTS:
                raise FaultError(f"status must be one of {sorted(STATUS_TEXTS)}, "
                                 f"not {rule.status!r}")
            if rule.action == "error":
                if not isinstance(rule.error, int) or rule.error not in E.ERRORS:
                    raise FaultError(f"no JetStream API error with err_code {rule.error!r}")
                if "{" in E.spec(rule.error).template and not rule.description:
                    raise FaultError(f"err_code {rule.error}'s text has placeholders "
                                     f"({E.spec(rule.error).template!r}): give description=")
            if rule.action == "status" and not rule.description:
                rule.description = STATUS_TEXTS[rule.status]
        else:
            raise FaultError(f"target must be 'deliveries' or 'requests', not {rule.target!r}")
        if rule.count is not None and (not isinstance(rule.count, int) or rule.count < 1):
            raise FaultError("count must be a positive integer (or None for every match)")
        if rule.fraction is not None and not (0.0 < float(rule.fraction) <= 1.0):
            raise FaultError("fraction must be in (0, 1]")
        if rule.action == "delay" and not (isinstance(rule.delay, (int, float))
                                           and rule.delay > 0):
            raise FaultError("delay must be a positive number of seconds")

    def remove(self, rule: FaultRule | int) -> bool:
        """Remove a rule (or the rule with that id); True when there was one."""
        rid = rule if isinstance(rule, int) else rule.id
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.id != rid]
        self._install()
        return len(self.rules) != before

    def clear(self) -> None:
        """Remove every rule (the log stays until :meth:`reset`)."""
        self.rules.clear()
        self._install()

    def reset(self) -> None:
        """Remove every rule and forget the log (what ``server.reset()`` does)."""
        self.clear()
        self.log.clear()

    def _install(self) -> None:
        self.server.fault_hook = self if self.rules else None

    # ------------------------------------------------------------------ immediate faults

    def disconnect(self, client: int | str | None = None) -> int:
        """Close one client (by id or connection name) or, with None, every client; returns how
        many. Clients see the socket close, as when nats-server drops them."""
        conns = self._clients(client)
        for conn in conns:
            self._record(0, "disconnect", "", f"cid:{conn.cid} {conn.name!r}")
            conn.flush()
            conn.close()
        return len(conns)

    def slow_consumer(self, client: int | str) -> int:
        """Treat one client as a slow consumer now: nats-server's cut (the connection is closed
        and counted in ``slow_consumers``)."""
        conns = self._clients(client)
        for conn in conns:
            self._record(0, "slow_consumer", "", f"cid:{conn.cid} {conn.name!r}")
            conn.slow_consumer()
        return len(conns)

    def _clients(self, client: int | str | None) -> list[Any]:
        conns = [c for c in self.server.connections.values() if not c.closed]
        if client is None:
            return conns
        found = [c for c in conns if c.cid == client or (isinstance(client, str)
                                                           and c.name == client)]
        if not found:
            raise FaultError(f"no connected client {client!r} (give a client id or the "
                             "connection name the client set)")
        return found

    # ------------------------------------------------------------------ the router's hook

    def on_publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                   payload: bytes, origin: Any) -> bool:
        """Called by the router for every message; True when a rule took it."""
        if self._bypass or subject.startswith(b"$MINIJS."):
            return False  # the control plane is never caught
        subj = subject.decode("utf-8", "replace")
        for rule in self.rules:
            if rule.target != "requests" or not subject_matches(rule.subject, subj):
                continue
            if not self._fires(rule):
                continue
            if rule.action == "delay":
                self._record(rule.id, "delay", subj, f"{rule.delay:g}s")
                self.server.clock.call_later(rule.delay, self._hand_on, subject, reply, header,
                                             payload, origin)
                return True
            if rule.action == "status":
                detail = f"{rule.status} {rule.description}".rstrip()
                self._record(rule.id, "status", subj, detail)
                if reply:
                    if rule.status == 503:
                        hdr = wire.no_responders_header(subject)
                    else:
                        hdr = wire.status_header(rule.status, rule.description)
                    self._answer(reply, hdr, b"", origin)
                return True
            spec = E.spec(rule.error)
            err = E.ApiError(spec.code, rule.error, rule.description or spec.template)
            self._record(rule.id, "error", subj, f"{err.code}/{err.err_code} {err.description}")
            if reply:
                self._answer(reply, None, dumps({"error": err.to_json()}), origin)
            return True
        return False

    def on_deliver(self, target: bytes, subject: bytes, reply: bytes, hdr: bytes | None,
                   data: bytes) -> bool:
        """Called by the router for each consumer delivery; True when a rule took it."""
        if self._bypass or not reply.startswith(b"$JS.ACK."):
            return False
        parts = reply.split(b".", 4)
        if len(parts) < 4:
            return False
        stream, consumer = parts[2].decode(), parts[3].decode()
        for rule in self.rules:
            if rule.target != "deliveries" or rule.stream != stream or rule.consumer != consumer:
                continue
            if not self._fires(rule):
                continue
            subj = subject.decode("utf-8", "replace")
            if rule.action == "drop":
                self._record(rule.id, "drop", subj, f"delivery {reply.decode()}")
                return True
            self._record(rule.id, "delay", subj, f"{rule.delay:g}s {reply.decode()}")
            self.server.clock.call_later(rule.delay, self._deliver_later, target, subject,
                                         reply, hdr, data)
            return True
        return False

    def _fires(self, rule: FaultRule) -> bool:
        if rule.fraction is not None and rule._rng.random() >= rule.fraction:
            return False
        rule.fired += 1
        if rule.count is not None and rule.fired >= rule.count:
            self.rules.remove(rule)
            self._install()
        return True

    def publish_unfaulted(self, subject: bytes, reply: bytes | None, hdr: bytes | None,
                          body: bytes, to: Any = None) -> int:
        """Publish past every rule: a rule's own answers and the control plane's replies;
        ``to``: the requester, whose account the answer goes to (the global one without)."""
        self._bypass += 1
        try:
            sublist = getattr(to, "sublist", None)
            return self.server.publish(subject, reply, hdr, body, None, sublist)
        finally:
            self._bypass -= 1

    def _answer(self, reply: bytes, hdr: bytes | None, body: bytes, origin: Any) -> None:
        self.publish_unfaulted(reply, None, hdr, body, origin)

    def _hand_on(self, subject: bytes, reply: bytes | None, header: bytes | None,
                 payload: bytes, origin: Any) -> None:
        if origin is not None and getattr(origin, "closed", False):
            origin = None
        self._bypass += 1
        try:
            self.server.publish(subject, reply, header, payload, origin)
        finally:
            self._bypass -= 1

    def _deliver_later(self, target: bytes, subject: bytes, reply: bytes, hdr: bytes | None,
                       data: bytes) -> None:
        self._bypass += 1
        try:
            self.server.deliver_as(target, subject, reply, hdr, data)
        finally:
            self._bypass -= 1

    def _record(self, rule: int, action: str, subject: str, detail: str) -> None:
        event = FaultEvent(rule, action, subject, detail, self.server.clock.time())
        self.log.append(event)
        where = f" {subject}" if subject else ""
        self.server.log.info(f"minijs fault #{rule}: {action}{where} {detail}".rstrip())
