"""Mirrors and sources: streams of one server fed from other streams' stores.

nats-server feeds a mirror or a sourcing stream through an internal push consumer on the origin
stream. A :class:`Link` (one per mirror, one per entry of ``sources``) reads the origin's store
directly instead: it is set up the way nats-server sets up its consumer (same start positions,
same retry schedule, the same API accounting), then woken by the origin each time new messages
are committed there (``Stream.followers``), and it stores what it reads with
``Stream.store_sourced``.

What a client sees, as on nats-server 2.15.1:

* **mirror** — every origin message (matching ``filter_subject`` or a ``subject_transforms``
  source, subject transformed) at the origin's sequence and timestamp; gaps in the origin
  become deleted sequences in a mirror that holds messages, or its first sequence when it holds
  none; ``Nats-Expected-*`` and ``Nats-Batch-*`` headers dropped; stream info ``mirror``:
  ``name``, ``lag``, ``active``, ``error``, ``filter_subject`` / ``subject_transforms``.
* **source** — a copy under the sourcing stream's next sequence, stamped now, with the
  ``Nats-Stream-Source: <name> <origin seq> <filter> <dest> <origin subject> <identity>``
  header (any earlier one replaced); duplicates (``Nats-Msg-Id``) dropped within the sourcing
  stream's duplicate window; stream info ``sources`` adds ``seq`` (the last origin sequence).
* **setup** — the first attempt runs on the next loop turn (so a create reply shows an empty
  stream and ``active: -1``); a missing origin sets ``error`` (404/10059) and retries after
  ``2 s + 10 s × failures`` (at most 2 min) plus 150 ms; a deleted origin is noticed by the
  10 s health check; a source whose origin was re-created (new identity) starts over from its
  configured start; each attempt counts as one API request (an error when it fails).
* **limits origins** — the consumer nats-server creates there is an ephemeral direct one that
  no consumer list shows: a live link counts one consumer in account info and announces its
  create; removing a link counts one failed consumer delete (nats-server asks for the stable
  name, the consumer got a random suffix) and the consumer lingers 10 s in account info.
* **work-queue and interest origins** — nats-server upgrades the request to a durable consumer,
  and so does the link: a real :class:`~minijs.jetstream.consumers.consumer.Consumer` on the origin
  called ``JS_MIRROR_<hash>`` / ``JS_SRC_<hash>`` (no suffix), ``ack_policy: flow_control``,
  ``sourcing``, a ``$JS.M.<8>`` / ``$JS.S.<8>`` deliver subject, the follower in its metadata
  (``_nats.mirror.stream``/``.acc``, ``_nats.src.…``), the follower's start and filters. The
  link stays its ``feeder`` (the consumer pushes nothing, shows ``push_bound``), records each
  message it read as delivered and acks them all at the next flow-control tick (1 s after the
  first unacked one, or at once when ``max_ack_pending`` are unacked), so the origin removes a
  message once this consumer and every other one still interested are done with it. Every
  setup finds the consumer again (it survives restarts on file origins) and resets it to its
  ack floor, as nats-server does; what the target already holds is delivered and acked again,
  never copied twice. Deleting the follower, removing the source by an update or promoting
  the mirror deletes the consumer (an API success). A consumer deleted by ``CONSUMER.DELETE``
  is noticed like a deleted origin (the health check sets a new one up).
* **a given consumer** (``consumer: {name, deliver_subject}``, any origin) — the application's
  durable push consumer is used the same way instead (nats-server resets it, ``CONSUMER.RESET``,
  and binds its deliver subject): the link reads what that consumer's filters select from its
  ack floor on, a mirror skipping what it holds. One that is not ``flow_control`` acked is the
  link's ``error`` (400/10214 mirror, 10217 source), retried with backoff; a missing one is
  waited for without an error (polled every 2 s). The source's index name, and so its
  ``Nats-Stream-Source`` header, becomes ``<origin>:C=<hash of the consumer name>``. It is
  never deleted by the follower, and none of this counts as API requests.

* **a limits origin updated to interest retention** while followed — the link keeps its
  limits mode (nats-server keeps the ephemeral direct consumer it had): it counts as interest
  for what its filters select (``interested``, asked by ``Stream._has_interest``), so those
  messages are stored, and it never removes them; the next setup (a restart, a lost origin)
  finds an interest stream and makes the durable consumer.

``external`` (``{api, deliver}``) reaches an origin of another account of this server through
the follower account's imports (a service import of that account's ``$JS.API.>`` under
``api``, a stream import covering ``deliver``); any other ``external`` is refused at
create/update (``minijs does not support …``). The index name hashes ``api``
(``<origin>:<hash>``); a missing origin there is reported as a local one is.

Invariants:

* A link's ``sseq`` (the last origin sequence handled) only moves forward, except when a
  source's origin is found re-created, which restarts it from its configured start.
* A mirror only stores a message whose sequence is above its last sequence, so it never holds
  a message twice; a mirror resumes after its last sequence.
* A file-stored source writes its position (``sseq`` and the origin's identity) into store
  metadata in the same commit as the message it copied, so a restart resumes with no gap and
  no duplicate; a source without that record finds its position in the newest
  ``Nats-Stream-Source`` header of its store, as nats-server does.
* A work-queue or interest origin removes a message only after the target's commit that
  holds it: the flow-control ack is taken after a commit of the target scheduled ahead of it,
  and covers only what was delivered before the tick.
* Links run on the server loop only; every delay (retries, backoff, stall detection, the
  linger of a removed link's consumer) is a timer on the server clock. Catch-up runs in chunks
  of :data:`CHUNK` messages per loop turn.
* A stream followed by no link pays nothing beyond an empty-list test per published message.

The module is given what it needs as :class:`ReplicationHost` (the engine) and works on the
streams through their public surface; ``stream.py`` does not know it exists. A durable
consumer it feeds from is driven through the consumer's feeder interface (``feed_from``,
``record_feed``, ``acks.ack_all``, ``reset``; ``Link._delivered``, ``Link._ack_through``).
"""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.advisory import Advisories, new_id
from minijs.jetstream.store.base import StoredMessage, subject_matches
from minijs.core.transform import SubjectTransform

if TYPE_CHECKING:
    from minijs.clock import Clock, Timer
    from minijs.jetstream.consumers.consumer import Consumer
    from minijs.jetstream.config.stream import StreamConfig
    from minijs.jetstream.streams.stream import Stream
    from minijs.log import Logger

__all__ = ["Replicator", "ReplicationHost", "Link", "get_hash", "stream_identity", "CHUNK"]

#: Messages copied per loop turn while catching up.
CHUNK = 512
#: nats-server's ``sourceConsumerRetryThreshold``: at most one setup attempt per 2 s.
RETRY_THRESHOLD = 2.0
#: ``retryBackOff`` and ``retryMaximum``: 5 s × 2 per failure, at most 2 min.
RETRY_BACKOFF = 5.0
RETRY_MAXIMUM = 120.0
#: The 100-200 ms of jitter nats-server adds, fixed at its middle so runs are repeatable.
JITTER = 0.15
#: ``sourceHealthHB`` (the consumer's idle heartbeat) and ``sourceHealthCheckInterval``.
HEARTBEAT = 1.0
HEALTH_CHECK = 10.0
#: A mirror serves ``DIRECT.GET`` of its origin once less than this many messages are pending.
DIRECT_CAUGHT_UP = 10
_NS = 1_000_000_000
_META_PREFIX = "src:"
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def get_hash(name: str, size: int = 8) -> str:
    """nats-server's ``getHash``: the first ``size`` bytes of SHA-256 in base 62 digits."""
    digest = hashlib.sha256(name.encode()).digest()
    return "".join(_DIGITS[b % 62] for b in digest[:size])


def stream_identity(created_ns: int) -> str:
    """A stream's identity (``Nats-Stream-Identity``): the hash of its creation time, so a
    stream deleted and created again under the same name has another one."""
    return get_hash(J.go_time(created_ns))


def backoff(fails: int) -> float:
    """``calculateRetryBackoff``."""
    return min(RETRY_BACKOFF * fails * 2, RETRY_MAXIMUM)


def index_name(src: dict) -> str:
    """``composeIName``: ``<name>[:C=<hash of the consumer>] <filters> <destinations>``
    (``\\f``-joined for several transforms, ``>`` for empty ones). Identifies a source; its
    parts make the source header."""
    trs = src.get("subject_transforms") or []
    name = src["name"]
    if src.get("external"):
        name += ":" + get_hash(src["external"].get("api") or "")
    if src.get("consumer"):
        name += ":C=" + get_hash(src["consumer"]["name"])
    if not trs:
        return " ".join([name, src.get("filter_subject") or ">", ">"])
    sources = "\f".join(t.get("src") or ">" for t in trs)
    dests = "\f".join(t.get("dest") or ">" for t in trs)
    return " ".join([name, sources, dests])


def _remove_header(hdr: bytes | None, name: bytes, prefix: bool = False) -> bytes | None:
    """``removeHeaderIfPresent`` / ``removeHeaderIfPrefixPresent``: drop ``name`` lines (or
    lines starting with it); None when only the first line is left."""
    if not hdr or name not in hdr:
        return hdr
    lines = hdr.split(b"\r\n")
    key = name if prefix else name + b":"
    kept = [lines[0]] + [ln for ln in lines[1:] if not ln.startswith(key)]
    out = b"\r\n".join(kept)
    if not out.endswith(b"\r\n\r\n"):
        out = out.rstrip(b"\r\n") + b"\r\n\r\n"
    return None if len(out) <= len(b"NATS/1.0\r\n\r\n") else out


def _strip_feed_headers(hdr: bytes | None) -> bytes | None:
    if hdr:
        hdr = _remove_header(hdr, b"Nats-Expected-", prefix=True)
        hdr = _remove_header(hdr, b"Nats-Batch-", prefix=True)
    return hdr


class ReplicationHost(Protocol):
    """What links need from the engine."""

    clock: "Clock"
    log: "Logger"
    advisories: Advisories

    #: The account the engine serves (in consumer names, metadata and log lines).
    account_name: str
    #: Its JetStream domain ("": none).
    domain: str

    def lookup(self, name: str) -> "Stream | None":
        """The live stream called ``name``, or None."""

    def count_api(self, error: bool) -> None:
        """Count one internal API request (as ``api.total``; ``api.errors`` when it failed)."""

    def lookup_external(self, api: str, deliver: str, name: str) -> "Stream | None":
        """The stream ``name`` behind the JetStream API prefix ``api`` (``external``), if its
        requests reach one from here and deliveries on ``deliver`` come back; else None."""

    def soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the next loop turn."""

    def mark_dirty(self, stream: "Stream") -> None:
        """Commit ``stream``'s buffered writes at the end of this turn."""


class Link:
    """One mirror or one source of a stream: the state nats-server keeps in ``sourceInfo``."""

    def __init__(self, owner: "Replicator", target: "Stream", spec: dict, *, mirror: bool) -> None:
        self.owner = owner
        self.host = owner.host
        self.clock = owner.host.clock
        self.target = target
        self.spec = spec
        self.mirror = mirror
        self.name: str = spec["name"]
        self.iname = index_name(spec)
        trs = spec.get("subject_transforms") or []
        #: (filter, transform or None) pairs; one ``(filter_subject or None, None)`` without
        #: transforms.
        self.filters: list[tuple[str | None, SubjectTransform | None]]
        if trs:
            self.filters = [(t.get("src") or ">",
                             SubjectTransform(t.get("src") or ">", t["dest"]) if t.get("dest") else None)
                            for t in trs]
        else:
            self.filters = [(spec.get("filter_subject") or None, None)]
        #: the origin subjects read (the given consumer's filters when ``consumer`` is set)
        self.rfilters: list[str | None] = [f for f, _ in self.filters]
        self._single = self.rfilters[0] if len(self.rfilters) == 1 else None
        #: ``consumer``: the durable consumer the application made for this link (by name)
        self.given: str = (spec.get("consumer") or {}).get("name", "")
        #: ``external``: {api, deliver} — the origin is in another account of this server
        #: (reached through imports) or this account under its own JetStream domain
        self.external: dict | None = spec.get("external") or None
        self.sseq = 0
        #: sources: the origin sequence of the last message stored (duplicates dropped are not):
        #: what info reports as ``seq`` and what a restart resumes after
        self.stored = 0
        self._scan = 0          # next origin sequence to look at
        self.lag = 0
        self.err: dict | None = None
        self.fails = 0
        self.ident = ""
        self.rc = False          # the origin was found re-created
        self.lreq: float | None = None  # clock.monotonic() of the last setup attempt
        self.origin: "Stream | None" = None
        self.connected = False   # following a live origin
        self.last_seen = 0       # ns of the last message / connect (0: never heard from)
        self.connected_at = 0    # ns of the last successful setup (heartbeats tick from it)
        self.direct = False      # a mirror serving DIRECT.GET of its origin
        #: name of the origin's consumer nats-server would have created for this link
        self.consumer_name = ""
        #: work-queue and interest origins: the origin's durable sourcing consumer this link
        #: delivers through and acks (None for limits origins, which see no real consumer)
        self.durable: "Consumer | None" = None
        self._ack_timer: "Timer | None" = None
        self._ack_due = False  # a flow-control ack waits for the next turn
        self.closed = False
        self._timer: "Timer | None" = None
        self._pumping = False
        self._again = False
        self._chunk_pending = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """First setup attempt on the next loop turn."""
        self.host.soon(self._first_attempt)

    def _first_attempt(self) -> None:
        if not self.closed and self._timer is None and not self.connected:
            self._attempt()

    def stop(self) -> None:
        """Stop following (stream deleted, promoted, source removed, server stopping)."""
        self.closed = True
        self._cancel_timer()
        self._unfollow()
        self._release()

    def _release(self) -> None:
        """Stop feeding the origin's durable consumer (it stays on the origin)."""
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        c = self.durable
        self.durable = None
        if c is not None and c.feeder is self:
            c.feed_from(None)
            if not c.closed and not c.active:
                c.start_delete_timer()  # its inactivity threshold counts from now

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _unfollow(self) -> None:
        origin = self.origin
        if origin is not None:
            try:
                origin.followers.remove(self)
            except ValueError:
                pass
        self.origin = None
        self.connected = False

    def _schedule(self, delay: float) -> None:
        self._cancel_timer()
        self._timer = self.clock.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self.closed:
            self._attempt()

    def _retry_later(self, *, failed: bool) -> None:
        """``scheduleSetupMirrorConsumerRetry`` / ``setupSourceConsumer``: wait out the 2 s
        throttle since the last attempt, plus the backoff for failures, plus jitter."""
        now = self.clock.monotonic()
        wait = 0.0 if self.lreq is None else max(0.0, RETRY_THRESHOLD - (now - self.lreq))
        if failed:
            wait += backoff(self.fails)
        self._schedule(wait + JITTER)

    # ------------------------------------------------------------------ setup

    def lookup_origin(self) -> "Stream | None":
        """The live origin stream: in this engine, or for ``external`` wherever its API
        prefix leads (see :meth:`ReplicationHost.lookup_external`)."""
        if self.external is None:
            return self.host.lookup(self.name)
        ext = self.external
        return self.host.lookup_external(ext.get("api") or "", ext.get("deliver") or "",
                                         self.name)

    def _attempt(self) -> None:
        """One consumer create request to the origin, answered at once."""
        if self.closed or self.target.closed:
            return
        self._unfollow()
        self.lreq = self.clock.monotonic()
        origin = self.lookup_origin()
        if origin is None:
            self.host.count_api(True)
            self.err = E.stream_not_found().to_json()
            self.fails += 1
            self._retry_later(failed=True)
            return
        if not self.mirror:
            ident = stream_identity(origin.created)
            if self.ident and self.ident != ident:
                # 10225: the origin was re-created; start over without counting a failure.
                self.host.count_api(True)
                self.err = None
                self.sseq = 0
                self.ident = ""
                self.rc = True
                self._retry_later(failed=False)
                return
            self.ident = ident
        self._release()
        floor = 0
        if self.given:
            durable = origin.consumers.get(self.given)
            if durable is None or durable.closed:
                # nats-server waits for it (a probe on its deliver subject): no error shown
                self._retry_later(failed=False)
                return
            if durable.config.ack_policy != "flow_control":
                self.err = (E.mirror_consumer_requires_ack_fc() if self.mirror
                            else E.source_consumer_requires_ack_fc()).to_json()
                self.fails += 1
                self._retry_later(failed=True)
                return
            durable.feed_from(self)
            durable.reset(0)  # CONSUMER.RESET: back to its ack floor
            self.durable = durable
            self.consumer_name = durable.name
            self.rfilters = list(durable.filters) or [None]
            self._single = self.rfilters[0] if len(self.rfilters) == 1 else None
            floor = durable.sseq
            created = False
        elif origin.config.retention != "limits":
            try:
                durable, created = self._durable_consumer(origin)
            except E.ApiError as exc:
                self.host.count_api(True)
                self.err = exc.to_json()
                self.fails += 1
                self._retry_later(failed=True)
                return
            # nats-server resets a sourcing consumer to its ack floor at every setup
            durable.feed_from(self)
            durable.reset(0)
            self.durable = durable
            self.consumer_name = durable.name
            floor = durable.sseq
        else:
            created = True
            self.consumer_name = self.owner.consumer_name(self)
        if not self.given:
            self.host.count_api(False)
        self.err = None
        self.fails = 0
        self.origin = origin
        origin.followers.append(self)
        self.connected = True
        self.connected_at = self.last_seen = self.clock.time_ns()
        if created:
            self.host.advisories.consumer_action(self.name, self.consumer_name, "create")
        if self.mirror:
            self._position_mirror(origin, floor)
        else:
            self._position_source(origin, floor)
        if self.durable is not None:
            # what the target already holds (stored before a restart or a reconnect) counts
            # as delivered again and is acked at the next flow-control tick
            for sm in self._iter_matching(self.durable.sseq):
                if sm.seq >= self._scan:
                    break
                self._delivered(sm.seq)
        self.rc = False
        self.wake()

    # ------------------------------------------------------------------ durable consumer

    def _durable_consumer(self, origin: "Stream") -> "tuple[Consumer, bool]":
        """The origin's durable sourcing consumer for this link (``JS_MIRROR_<hash>`` /
        ``JS_SRC_<hash>``), created as nats-server upgrades the direct consumer a mirror or
        source asks for on a work-queue or interest stream: durable, ``flow_control`` acks, no
        ack wait, no inactivity threshold. An existing one (after a restart, a reconnect) is
        kept with its config and state. Returns it and whether it was created."""
        from minijs.jetstream.config import consumer as C
        from minijs.jetstream.consumers.consumer import Consumer

        name = self.owner.stable_consumer_name(self)
        existing = origin.consumers.get(name)
        if existing is not None and not existing.closed:
            return existing, False
        cfg = C.ConsumerConfig(durable_name=name, name=name, ack_policy="flow_control",
                               flow_control=True, idle_heartbeat=int(HEARTBEAT * _NS),
                               sourcing=True)
        kind = "mirror" if self.mirror else "src"
        cfg.deliver_subject = (f"$JS.{'M' if self.mirror else 'S'}."
                               f"{C.generate_consumer_name(origin.bus.randomness)}")
        cfg.metadata = {f"_nats.{kind}.stream": self.target.name,
                        f"_nats.{kind}.acc": self.host.account_name}
        if getattr(self.host, "domain", ""):
            cfg.metadata[f"_nats.{kind}.domain"] = self.host.domain
        self._start_options(cfg, origin)
        trs = self.spec.get("subject_transforms") or []
        if self.spec.get("filter_subject"):
            cfg.filter_subject = self.spec["filter_subject"]
        if trs:
            srcs = [t.get("src") or "" for t in trs]
            if not cfg.filter_subject and len(srcs) == 1:
                cfg.filter_subject = srcs[0]
            else:
                cfg.filter_subjects = srcs
        cfg = C.finalize_new(C.validate_and_default(cfg, origin.config))
        consumer = Consumer(origin, name, cfg)
        consumer.feed_from(self)
        origin.consumers[name] = consumer
        consumer.start()
        return consumer, True

    def _start_options(self, cfg: Any, origin: "Stream") -> None:
        """The start of the consumer nats-server asks for (``setupMirrorConsumer`` /
        ``setupSourceConsumer``)."""
        spec = self.spec
        tst = self.target.store
        if self.mirror:
            if tst.msgs == 0 and tst.first_seq == 0:
                if spec.get("opt_start_seq"):
                    cfg.deliver_policy, cfg.opt_start_seq = "by_start_sequence", spec["opt_start_seq"]
                elif spec.get("opt_start_time") is not None:
                    cfg.deliver_policy = "by_start_time"
                    cfg.opt_start_time = int(spec["opt_start_time"])
            else:
                cfg.deliver_policy, cfg.opt_start_seq = "by_start_sequence", tst.last_seq + 1
            return
        if self.sseq > 0:
            cfg.deliver_policy, cfg.opt_start_seq = "by_start_sequence", self.sseq + 1
        elif spec.get("opt_start_seq"):
            cfg.deliver_policy, cfg.opt_start_seq = "by_start_sequence", spec["opt_start_seq"]
        elif spec.get("opt_start_time") is not None:
            when = int(spec["opt_start_time"])
            if tst.last_ts and when < tst.last_ts:
                when = tst.last_ts
            cfg.deliver_policy, cfg.opt_start_time = "by_start_time", when
        elif tst.first_seq > 1 and tst.last_ts and not self.rc:
            cfg.deliver_policy, cfg.opt_start_time = "by_start_time", tst.last_ts

    def _delivered(self, seq: int) -> None:
        """Record origin message ``seq`` as delivered by the durable consumer (the link read
        it), and make sure a flow-control ack follows."""
        c = self.durable
        if c is None:
            return
        if c.closed:
            self._consumer_lost()
            return
        if seq < c.sseq:
            return
        now = self.clock.time_ns()
        # pending until the link's ack: flow-control acks have no ack wait
        c.record_feed(seq, now, now + 22 * 3600 * _NS)
        if len(c.pending) >= max(c.config.max_ack_pending, 1):
            # nats-server sends a flow-control request at once when max_ack_pending is reached
            if not self._ack_due:
                self._cancel_ack_timer()
                self._ack_tick()
        elif self._ack_timer is None and not self._ack_due:
            self._ack_timer = self.clock.call_later(HEARTBEAT, self._ack_tick)

    def _cancel_ack_timer(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None

    def _ack_tick(self) -> None:
        """A flow-control round trip: everything delivered so far is acked once the target's
        commit that holds it is done (the ack runs after this turn's commits)."""
        self._ack_timer = None
        c = self.durable
        if c is None or not c.pending or self._ack_due:
            return
        self._ack_due = True
        upto = max(c.pending)
        dseq = c.pending[upto][0]
        self.host.mark_dirty(self.target)
        self.host.soon(lambda: self._ack_through(c, upto, dseq))

    def _ack_through(self, c: "Consumer", sseq: int, dseq: int) -> None:
        self._ack_due = False
        if c is not self.durable or c.closed:
            return
        before = len(c.pending)
        c.acks.ack_all(sseq, dseq)
        if before > len(c.pending) >= max(c.config.max_ack_pending, 1):
            self._cancel_ack_timer()
            self._ack_tick()
        elif c.pending and self._ack_timer is None:
            self._ack_timer = self.clock.call_later(HEARTBEAT, self._ack_tick)

    def interested(self, subject: str) -> bool:
        """Does this link's consumer make ``subject`` interesting on an interest origin? Only a
        limits-mode link counts here (its origin was updated to interest retention while it
        followed: the ephemeral direct consumer nats-server made still counts as interest and
        never removes anything); a durable consumer is one of the origin's consumers."""
        return (self.connected and self.durable is None
                and any(subject_matches(f, subject) for f in self.rfilters))

    def _durable_lost(self) -> bool:
        """Was the durable consumer deleted under the link? (Then handle it.)"""
        c = self.durable
        if c is not None and c.closed:
            self._consumer_lost()
            return True
        return False

    def _consumer_lost(self) -> None:
        """The durable consumer was deleted under the link (``CONSUMER.DELETE``): like a lost
        origin, the health check sets the link up again (with a new consumer)."""
        self._release()
        self.origin_gone()

    @staticmethod
    def _delivered_before(start: int) -> int:
        """The consumer's ``delivered.stream`` right after its creation at ``start``."""
        return max(start - 1, 0)

    def _first_origin_seq(self, origin: "Stream") -> int:
        st = origin.store
        if st.msgs:
            return st.first_seq
        return st.last_seq + 1 if st.last_seq else 1

    def _position_mirror(self, origin: "Stream", floor: int = 0) -> None:
        """``floor``: the durable consumer's next sequence (nothing below it is delivered)."""
        tst = self.target.store
        spec = self.spec
        if tst.msgs == 0 and tst.first_seq == 0:
            if spec.get("opt_start_seq"):
                start = spec["opt_start_seq"]
            elif spec.get("opt_start_time") is not None:
                start = origin.store.first_seq_at_or_after_time(int(spec["opt_start_time"]))
            else:
                start = self._first_origin_seq(origin)
        else:
            start = tst.last_seq + 1
        if self.given and tst.msgs == 0 and tst.first_seq == 0:
            start = floor  # the given consumer decides where to start
        start = max(start, floor)
        delivered = self._delivered_before(start)
        last = tst.last_seq
        if last < delivered:
            if tst.msgs == 0:
                tst.compact(delivered + 1)
            else:
                tst.skip_msgs(delivered - last)
            self.host.mark_dirty(self.target)
        self.sseq = max(delivered, tst.last_seq)
        self._scan = self.sseq + 1

    def _position_source(self, origin: "Stream", floor: int = 0) -> None:
        spec = self.spec
        tst = self.target.store
        if self.sseq == 0 and self.given:
            start = floor  # the given consumer decides where to start
        elif self.sseq == 0:
            if spec.get("opt_start_seq"):
                start = spec["opt_start_seq"]
            elif spec.get("opt_start_time") is not None:
                when = int(spec["opt_start_time"])
                if tst.last_ts and when < tst.last_ts:
                    when = tst.last_ts
                start = origin.store.first_seq_at_or_after_time(when)
            elif tst.first_seq > 1 and tst.last_ts and not self.rc:
                start = origin.store.first_seq_at_or_after_time(tst.last_ts)
            else:
                start = self._first_origin_seq(origin)
        else:
            start = self.sseq + 1
        start = max(start, floor)
        self.sseq = max(self.sseq, self._delivered_before(start))
        self._scan = start

    # ------------------------------------------------------------------ following

    def wake(self) -> None:
        """The origin committed new messages (or the link just connected): copy them."""
        if not self.connected or self.closed or self._durable_lost():
            return
        if self._pumping:
            self._again = True
            return
        if self._chunk_pending:
            return
        self._pump()

    def _continue(self) -> None:
        self._chunk_pending = False
        self.wake()

    def _next(self) -> StoredMessage | None:
        origin = self.origin
        if origin is None:
            return None
        store = origin.store
        if len(self.rfilters) == 1:
            return store.load_next(self._scan, self._single)
        seq = self._scan
        while True:
            sm = store.load_next(seq)
            if sm is None:
                return None
            for filt in self.rfilters:
                if subject_matches(filt, sm.subject):
                    return sm
            seq = sm.seq + 1

    def _subject_for(self, subject: str) -> str:
        for filt, tr in self.filters:
            if tr is not None and (filt is None or subject_matches(filt, subject)):
                out = tr.apply(subject)
                if out is not None:
                    return out
        return subject

    def _pump(self) -> None:
        self._pumping = True
        try:
            count = 0
            while True:
                self._again = False
                while True:
                    if not self.connected or self.closed or self.target.closed:
                        return
                    sm = self._next()
                    if sm is None:
                        break
                    if not self._copy(sm):
                        return
                    count += 1
                    if count >= CHUNK:
                        self._caught_up(self._pending_after(self.sseq))
                        self._chunk_pending = True
                        self.host.soon(self._continue)
                        return
                if not self._again:
                    break
            self._caught_up(0)  # nothing left that matches
        finally:
            self._pumping = False

    def _caught_up(self, lag: int) -> None:
        self.lag = lag
        if self.mirror and not self.direct and lag < DIRECT_CAUGHT_UP and self.sseq:
            self.direct = True

    def _copy(self, sm: StoredMessage) -> bool:
        """Store one origin message; False (and a retry scheduled) when the target refused."""
        target = self.target
        self.last_seen = self.clock.time_ns()
        try:
            if self.mirror:
                if sm.seq > target.store.last_seq:
                    target.store_sourced(self._subject_for(sm.subject),
                                         _strip_feed_headers(sm.hdr), sm.data,
                                         ts=sm.ts, seq=sm.seq)
            else:
                hdr = _remove_header(sm.hdr, b"Nats-Stream-Source")
                hdr = _strip_feed_headers(hdr)
                hdr = H.append(hdr, [(H.STREAM_SOURCE, self._source_header(sm))])
                if target.store_sourced(self._subject_for(sm.subject), hdr, sm.data):
                    self.stored = sm.seq
                    self.owner.save_position(self)
        except E.ApiError as exc:
            self.host.log.warn(
                f"Error processing inbound {'mirror' if self.mirror else 'source'} message for "
                f"'{self.host.account_name} > {target.name}' from '{self.name}': "
                f"{exc.description}")
            # nats-server drops this consumer (it lingers on the origin until its inactivity
            # threshold) and sets up a new one at the same message
            if self.connected and self.durable is None:
                self.owner.linger(self.name, self.consumer_name)
            self._unfollow()
            self._retry_later(failed=False)
            return False
        self.sseq = sm.seq
        self._scan = sm.seq + 1
        if self.durable is not None:
            self._delivered(sm.seq)
        return True

    def _source_header(self, sm: StoredMessage) -> str:
        name, filters, dests = self.iname.split(" ", 2)
        value = f"{name} {sm.seq} {filters} {dests} {sm.subject}"
        if self.ident:
            value += " " + self.ident
        return value

    def _pending_after(self, seq: int) -> int:
        origin = self.origin
        if origin is None:
            return 0
        store = origin.store
        if seq >= store.last_seq:
            return 0
        if len(self.rfilters) == 1:
            return store.num_pending(seq + 1, self._single)
        return sum(1 for _ in self._iter_matching(seq + 1))

    def _iter_matching(self, seq: int):
        store = self.origin.store if self.origin is not None else None
        while store is not None:
            sm = store.load_next(seq)
            if sm is None:
                return
            if any(subject_matches(f, sm.subject) for f in self.rfilters):
                yield sm
            seq = sm.seq + 1

    # ------------------------------------------------------------------ origin events

    def origin_gone(self) -> None:
        """The origin was deleted: its consumer with it. Noticed by the next health check that
        finds nothing heard for 10 s (heartbeats stop), which sets the link up again."""
        if not self.connected:
            return
        last = self._last_activity()
        self._unfollow()
        self.last_seen = last
        started = self.lreq if self.lreq is not None else self.clock.monotonic()
        now_mono = self.clock.monotonic()
        silent_for = (self.clock.time_ns() - last) / _NS
        # health checks tick every 10 s from the setup; the first one after 10 s of silence
        due = now_mono + max(HEALTH_CHECK - silent_for, 0.0)
        ticks = max(1, math.ceil((due - started) / HEALTH_CHECK - 1e-3))
        delay = started + ticks * HEALTH_CHECK - now_mono
        if not self.mirror:
            delay += JITTER  # sources schedule the new setup through setupSourceConsumer
        self._schedule(max(delay, 0.0))

    def _last_activity(self) -> int:
        """ns of the last message or heartbeat heard (the origin's consumer sends a heartbeat
        every second from its creation)."""
        last = self.last_seen
        if not self.connected or not last:
            return last
        now = self.clock.time_ns()
        beat = int(HEARTBEAT * _NS)
        since = now - self.connected_at
        return max(last, now - since % beat) if since >= beat else last

    # ------------------------------------------------------------------ info

    def info(self) -> dict:
        """``StreamSourceInfo`` as nats-server 2.15.1 emits it."""
        self._durable_lost()
        out: dict[str, Any] = {"name": self.name}
        if self.external is not None:
            out["external"] = {"api": self.external.get("api") or "",
                               "deliver": self.external.get("deliver") or ""}
        out["lag"] = self.lag
        if not self.mirror and self.stored:
            out["seq"] = self.stored
        last = self._last_activity()
        out["active"] = -1 if not last else max(self.clock.time_ns() - last, 0)
        if self.err is not None:
            out["error"] = self.err
        trs = self.spec.get("subject_transforms") or []
        if not trs and self.spec.get("filter_subject"):
            out["filter_subject"] = self.spec["filter_subject"]
        if trs:
            out["subject_transforms"] = [{"src": t.get("src", ""), "dest": t.get("dest", "")}
                                         for t in trs]
        return out


class Replicator:
    """Every link of one engine: created with their streams, changed by updates, woken by
    their origins, stopped with their streams."""

    def __init__(self, host: ReplicationHost) -> None:
        self.host = host
        self.clock = host.clock
        #: target stream name -> its links (the mirror, or one per source in config order)
        self.links: dict[str, list[Link]] = {}
        #: origin name -> consumers nats-server still counts there after their link went away
        #: (until the consumer's 10 s inactivity threshold, or the origin's deletion)
        self._lingering: dict[str, list[list]] = {}  # origin -> [consumer name, timer] entries

    # ------------------------------------------------------------------ streams

    def attach(self, stream: "Stream") -> None:
        """A stream was created or recovered: set up its mirror or sources."""
        cfg = stream.config
        links: list[Link] = []
        if cfg.mirror is not None:
            links.append(Link(self, stream, cfg.mirror, mirror=True))
        for src in cfg.sources or []:
            links.append(Link(self, stream, src, mirror=False))
        if not links:
            return
        self.links[stream.name] = links
        self._recover_positions(stream, [ln for ln in links if not ln.mirror])
        stream.links_info = lambda: self._info(stream.name)
        for link in links:
            link.start()

    def detach(self, stream: "Stream", *, deleted: bool) -> None:
        """A stream goes away: stop its links (a delete also tries to delete their consumers,
        a request nats-server sends and that fails); its followers lose their origin."""
        for link in self.links.pop(stream.name, []):
            if deleted:
                self._remove(link)
            else:
                link.stop()
        stream.links_info = None
        if deleted:
            # the consumers of its followers, live or lingering, go with it
            for follower in list(stream.followers):
                if follower.connected and follower.durable is None:
                    # (a durable consumer is announced with the origin's own consumers)
                    self.host.advisories.consumer_action(stream.name, follower.consumer_name,
                                                         "delete")
                follower._release()
                follower.origin_gone()
            for consumer, timer in self._lingering.pop(stream.name, []):
                timer.cancel()
                self.host.advisories.consumer_action(stream.name, consumer, "delete")
        stream.followers.clear()

    def reconfigure(self, stream: "Stream", old: "StreamConfig") -> None:
        """An update changed ``stream``'s config: promotion (mirror removed), sources added or
        removed. Unchanged sources keep their link and position."""
        cfg = stream.config
        links = self.links.get(stream.name, [])
        keep: list[Link] = []
        link: Link | None
        if old.mirror is not None and cfg.mirror is None:
            for link in links:
                if link.mirror:
                    self._remove(link)
            links = [ln for ln in links if not ln.mirror]
        new_sources = cfg.sources or []
        old_keys = {self._consumer_key(s, old.sources or []) for s in old.sources or []
                    if not s.get("consumer")}
        new_keys = {self._consumer_key(s, new_sources) for s in new_sources
                    if not s.get("consumer")}
        removed_keys = old_keys - new_keys
        by_iname = {ln.iname: ln for ln in links if not ln.mirror}
        added: list[Link] = []
        for src in new_sources:
            iname = index_name(src)
            link = by_iname.pop(iname, None)
            if link is None:
                link = Link(self, stream, src, mirror=False)
                added.append(link)
            else:
                link.spec = src
            keep.append(link)
        deleted = 0
        for link in by_iname.values():
            live = link.connected and link.durable is None
            link.stop()
            if link.given:
                pass  # the application's consumer: no delete request
            elif self._delete_durable(link):
                deleted += 1
            elif live:
                self.linger(link.name, link.consumer_name)
            self.forget_position(link)
        # the best-effort consumer deletes nats-server sends, one per removed consumer key:
        # successes for durable consumers it found, errors otherwise
        for i, _ in enumerate(removed_keys):
            self.host.count_api(i >= deleted)
        keep = [ln for ln in links if ln.mirror] + keep
        if keep:
            self.links[stream.name] = keep
            stream.links_info = lambda: self._info(stream.name)
        else:
            self.links.pop(stream.name, None)
            stream.links_info = None
        self._recover_positions(stream, added)
        for link in added:
            link.start()

    def stop_all(self) -> None:
        """Server stopping, crashing or resetting: stop every link, no accounting."""
        for links in self.links.values():
            for link in links:
                link.stop()
                link.target.links_info = None
        self.links.clear()
        for entries in self._lingering.values():
            for _, timer in entries:
                timer.cancel()
        self._lingering.clear()

    # ------------------------------------------------------------------ accounting

    def stable_consumer_name(self, link: Link) -> str:
        """``JS_MIRROR_<hash>`` / ``JS_SRC_<hash>``: stable per stream, with the index name
        when one origin is sourced twice (the durable consumer's name on a work-queue or
        interest origin)."""
        stable = f"{link.target.name} {self.host.account_name}"
        domain = getattr(self.host, "domain", "")
        if domain:
            stable += " " + domain
        stable = get_hash(stable)
        if link.mirror:
            return f"JS_MIRROR_{stable}"
        name, iname = self._consumer_key(link.spec, link.target.config.sources or [])
        key = f"{stable} {iname}" if iname else stable
        return f"JS_SRC_{get_hash(key)}"

    def consumer_name(self, link: Link) -> str:
        """The stable name plus the random suffix nats-server gives the direct consumer of a
        limits stream."""
        return f"{self.stable_consumer_name(link)}-{get_hash(new_id(link.target.bus))}"

    def _remove(self, link: Link, *, count: bool = True) -> None:
        """Stop a link whose stream (or config entry) goes away. nats-server asks the origin
        to delete the consumer under its stable name: that deletes the durable consumer of a
        work-queue or interest origin (an API success), and fails for a limits stream (whose
        consumer got a random suffix): one API error, and the consumer stays until its 10 s
        inactivity threshold."""
        live = link.connected and link.durable is None
        link.stop()
        if link.given:
            return  # a consumer given in the config is the application's: left alone
        if live:
            if count:
                self.host.count_api(True)
            self.linger(link.name, link.consumer_name)
            return

        def delete() -> None:
            # (the request nats-server sends once the stream is gone: its advisory comes after)
            deleted = self._delete_durable(link)
            if count:
                self.host.count_api(not deleted)
        self.host.soon(delete)

    def _delete_durable(self, link: Link) -> bool:
        """Delete the origin's consumer under the link's stable name, if there is one."""
        origin = link.lookup_origin()
        if origin is None or origin.closed:
            return False
        consumer = origin.consumers.get(self.stable_consumer_name(link))
        if consumer is None or not consumer.config.sourcing:
            return False
        origin.remove_consumer(consumer)
        return True

    def linger(self, origin: str, consumer: str) -> None:
        """The origin keeps the link's consumer until its 10 s inactivity threshold."""
        entries = self._lingering.setdefault(origin, [])
        entry: list = [consumer]
        entry.append(self.clock.call_later(HEALTH_CHECK, self._unlinger, origin, entry,
                                           housekeeping=True))
        entries.append(entry)

    def _unlinger(self, origin: str, entry: list) -> None:
        entries = self._lingering.get(origin)
        if entries is not None and entry in entries:
            entries.remove(entry)
            if not entries:
                del self._lingering[origin]
            self.host.advisories.consumer_action(origin, entry[0], "delete")

    def num_consumers(self) -> int:
        """Consumers on origins that account info counts for links (durable ones are counted
        with their origin's consumers)."""
        live = sum(1 for links in self.links.values() for ln in links
                   if ln.connected and ln.durable is None)
        return live + sum(len(t) for t in self._lingering.values())

    @staticmethod
    def _consumer_key(src: dict, sources: list) -> tuple[str, str]:
        """What ``createSourcingConsumerHash`` distinguishes: the name, and the index name when
        the same origin is sourced more than once."""
        name = src["name"]
        same = sum(1 for s in sources if s and s["name"] == name)
        return name, index_name(src) if same > 1 else ""

    # ------------------------------------------------------------------ positions

    def save_position(self, link: Link) -> None:
        store = link.target.store
        if store.storage == "file":
            store.put_meta(_META_PREFIX + link.iname,
                           J.dumps({"seq": link.stored, "ident": link.ident}))

    def forget_position(self, link: Link) -> None:
        store = link.target.store
        if store.storage == "file" and not store.closed:
            store.delete_meta(_META_PREFIX + link.iname)
            self.host.mark_dirty(link.target)

    def _recover_positions(self, stream: "Stream", links: list[Link]) -> None:
        """A source's position: its metadata record, else the newest message carrying its
        ``Nats-Stream-Source`` header (``startingSequenceForSources``)."""
        if not links:
            return
        store = stream.store
        wanted: dict[str, Link] = {}
        link: Link | None
        for link in links:
            raw = store.get_meta(_META_PREFIX + link.iname) if store.storage == "file" else None
            if raw is not None:
                doc = J.parse_json(raw)
                link.sseq = link.stored = int(doc.get("seq", 0))
                link.ident = doc.get("ident", "")
            else:
                wanted[link.iname] = link
        if not wanted or not store.msgs:
            return
        seq = store.last_seq
        first = store.first_seq
        while wanted and seq >= first:
            sm = store.load(seq)
            seq -= 1
            if sm is None or not sm.hdr or b"Nats-Stream-Source" not in sm.hdr:
                continue
            value = H.parse(sm.hdr).get(H.STREAM_SOURCE, "")
            fields = value.split(" ")
            if len(fields) < 4:
                continue
            iname = " ".join([fields[0], fields[2], fields[3]])
            link = wanted.pop(iname, None)
            if link is None:
                continue
            try:
                link.sseq = link.stored = int(fields[1])
            except ValueError:
                continue
            link.ident = fields[5] if len(fields) >= 6 else ""

    # ------------------------------------------------------------------ reads

    def _info(self, name: str) -> dict:
        out: dict[str, Any] = {}
        links = self.links.get(name, [])
        for link in links:
            if link.mirror:
                out["mirror"] = link.info()
        sources = [ln.info() for ln in links if not ln.mirror]
        if sources:
            out["sources"] = sources
        return out

    def direct_mirror(self, origin_name: str) -> "Stream | None":
        """A mirror of ``origin_name`` serving its DIRECT.GET (``mirror_direct``, caught up)."""
        for links in self.links.values():
            for link in links:
                if (link.mirror and link.direct and link.name == origin_name
                        and link.target.config.mirror_direct and not link.target.closed):
                    return link.target
        return None
