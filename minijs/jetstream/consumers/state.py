"""Durable state: consumers of file streams (unless ``mem_storage``) keep their config, creation
time and delivery state — positions, ack floor, pending acks with delivery counts and
timestamps, redelivery counts — under the key ``consumer/<name>`` of the stream store's
metadata, and come back after a restart (:func:`recover`, which the engine calls once the
stream is recovered), as nats-server's consumer file store does.

The document is ``{"v": 2, "name", "created", "config", "state": {"dseq", "sseq", "adflr",
"asflr", "pending": {"sseq": [...], "dseq": [...], "ts": [...]}, "rdc": [[stream seq, count],
...]}}``: the pending acks as three columns (stream sequence, consumer sequence, timestamp in
nanoseconds), so that thousands of them are written by one call of the JSON encoder. ``rdc``
lists only counts over 1 (also of messages given up at ``max_deliver``); the floor is the
reported one (nats-server's consumer store floor, see :mod:`~minijs.jetstream.consumers.acks`),
which a restarted consumer takes as its floor. Documents of version 1, whose ``pending`` is a
list of ``[stream seq, consumer seq, timestamp]``, are read as well.

Invariants:

* ``persist`` is decided at creation (a file stream, not ``mem_storage``) and cleared by
  delete, which drops the document; a consumer that does not persist never writes.
* A change of the persisted state is written into the store's metadata (``scheduled``) and
  committed by the engine's grouped flush: at the end of the event-loop turn in which it
  changed when the last write is :data:`WRITE_INTERVAL` or more of the server's clock ago,
  else when that interval has passed since the last write. So under load a consumer's state
  is written about ten times a second, however many turns deliver or ack, as nats-server's
  consumer file store flushes its state (at most every 100 ms): a kill loses at most the last
  interval's deliveries and acks, which come back as redeliveries. A change that ack replies
  wait for (:meth:`DurableState.confirm`), and every change of a replicated stream's
  consumer (proposed to its group as nats-server proposes each update), is written at the
  end of its turn. Stop writes a change still scheduled, and nothing is written once the
  consumer, its stream or its store has closed. The config's JSON is kept until the config
  changes.
* The replies of acks sent as requests (``ack_replies``) wait for the write of the state they
  left and go out after the commit that carries it (``Stream.confirm_after_commit``), with the
  stream's pub acks; a crash before that commit loses ack and reply together.
* Restoring follows nats-server's file store: pending timestamps come back truncated to whole
  seconds, the redelivery queue (NAKs) is not kept, and the first ack-wait check runs at once
  (a wait that ran out while the server was down is over now; the others end at their
  deadlines). An auto-named ephemeral now shows
  its name in the config; a ``last_per_subject`` consumer resumes like a plain one from its
  position, its pending counted once as the subjects whose last message is still ahead.
  Ephemerals come back too and are then removed by their inactivity threshold, as nats-server
  does.

:class:`DurableState` owns the write scheduling, the waiting ack replies and the document's
format (:func:`read_document` reads it back into a :class:`SavedState` the consumer applies).
It reads the consumer through :class:`StateHost`: its identity, config, position and ack
tracking.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from minijs.jetstream.config import consumer as C

if TYPE_CHECKING:
    from minijs.clock import Clock, Timer
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.consumers.acks import AckTracker
    from minijs.jetstream.streams.stream import Stream

_SECOND = 1_000_000_000
#: Seconds of the server's clock between two writes of a consumer's state under load.
WRITE_INTERVAL = 0.1
#: Store metadata key prefix of persisted consumers (``consumer/<name>``).
STATE_PREFIX = "consumer/"
_STATE_VERSION = 2
_encode = json.JSONEncoder(separators=(",", ":")).encode
_consumer_seq = itemgetter(0)
_timestamp = itemgetter(2)


@runtime_checkable
class StateHost(Protocol):
    """What the durable state reads of its consumer."""

    stream: "Stream"
    bus: "MessageBus"
    clock: "Clock"
    name: str
    created: int
    config: C.ConsumerConfig
    closed: bool
    sseq: int
    dseq: int
    acks: "AckTracker"


@dataclasses.dataclass
class SavedState:
    """A persisted consumer, read back (:func:`read_document`)."""

    name: str
    created: int
    config: C.ConsumerConfig
    dseq: int
    sseq: int
    adflr: int
    asflr: int
    #: (stream seq, consumer seq, timestamp truncated to whole seconds) of each pending ack
    pending: list[tuple[int, int, int]]
    #: delivery counts of messages still in the stream at or above the ack floor
    rdc: dict[int, int]


def read_document(doc: dict[str, Any], last_seq: int) -> SavedState:
    """The state a persisted document describes (the stream's last sequence now at
    ``last_seq``). As in nats-server, an auto-named ephemeral now shows its name in the
    config and pending timestamps are whole seconds."""
    name = doc["name"]
    cfg = C.consumer_config_from_dict(doc["config"])
    if not cfg.name:
        cfg.name = name
    st = doc["state"]
    adflr, asflr = int(st["adflr"]), int(st["asflr"])
    rdc = {int(s): int(dc) for s, dc in st.get("rdc", ())}
    rdc = {s: dc for s, dc in rdc.items() if asflr <= s <= last_seq}
    saved = st.get("pending", ())
    if isinstance(saved, dict):  # version 2: columns
        saved = zip(saved["sseq"], saved["dseq"], saved["ts"], strict=True)
    pending = [(int(s), int(dseq), (int(ts) // _SECOND) * _SECOND) for s, dseq, ts in saved]
    return SavedState(name, int(doc["created"]), cfg, int(st["dseq"]), int(st["sseq"]),
                      adflr, asflr, pending, rdc)


class DurableState:
    """The persisted state of one consumer: save scheduling, the state document, the replies
    of acks waiting for their commit."""

    def __init__(self, host: StateHost, persist: bool) -> None:
        self.host = host
        #: written to the store (a file stream, not ``mem_storage``; cleared by delete)
        self.persist = persist
        #: a write is scheduled for the end of this loop turn
        self.scheduled = False
        #: replies of acks sent as requests, answered after the commit of the state they left
        self.ack_replies: list[bytes] = []
        #: restored from a document (its state needs no write at start)
        self.restored = False
        self._cfg_json = ""
        #: the server clock's monotonic time of the last write
        self._written_at = float("-inf")
        #: the write scheduled for when :data:`WRITE_INTERVAL` has passed since the last one
        self._timer: "Timer | None" = None

    def changed(self) -> None:
        """The persisted part of the state changed: write it at the end of this turn."""
        if self.persist and not self.scheduled:
            self._schedule()

    def config_changed(self) -> None:
        self._cfg_json = ""

    def confirm(self, reply: bytes) -> None:
        """Answer an ack sent as a request (``ack_sync``): at once on a memory consumer; on a
        durable one only after the commit that carries the state the ack left (the state is
        written at the end of this turn and committed with the stream's next grouped flush)."""
        if not self.persist:
            self.host.bus.publish(reply, None, None, b"")
            return
        self.ack_replies.append(reply)
        if not self.scheduled:
            self._schedule()
        elif self._timer is not None:  # the reply waits: write at the end of this turn
            self._cancel_timer()
            self._schedule()

    def _schedule(self) -> None:
        self.scheduled = True
        host = self.host
        if not self.ack_replies and not host.stream.replicated:
            clock = host.clock
            wait = self._written_at + WRITE_INTERVAL - clock.monotonic()
            if wait > 0:
                self._timer = clock.call_later(wait, self._save_soon, housekeeping=True)
                return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (direct use in a test): write at once
            self._save_soon()
            return
        loop.call_soon(self._save_soon)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _save_soon(self) -> None:
        self.scheduled = False
        self._timer = None
        host = self.host
        if host.closed or not self.persist:
            return
        stream = host.stream
        if stream.closed or stream.store.closed:
            return
        self.write()
        if self.ack_replies:
            replies, self.ack_replies = self.ack_replies, []
            stream.confirm_after_commit(replies)
        else:
            stream.engine.mark_dirty(stream)

    def write(self) -> None:
        """Buffer the state document in the store metadata (committed by the next flush)."""
        host = self.host
        host.stream.store.put_meta(STATE_PREFIX + host.name, self.document())
        self._written_at = host.clock.monotonic()

    def document(self) -> bytes:
        """The persisted document of this consumer (also what a stream snapshot carries)."""
        host = self.host
        if not self._cfg_json:
            self._cfg_json = json.dumps(dataclasses.asdict(host.config), separators=(",", ":"))
        acks = host.acks
        # The same JSON as json.dumps of {"dseq", "sseq", "adflr", "asflr", "pending": {"sseq",
        # "dseq", "ts"}, "rdc": [[seq, count], ...]}, the pending columns taken out of the
        # tracker's entries ([consumer seq, deadline, timestamp]) and encoded in C: this runs
        # for every write, and a consumer may have thousands of deliveries pending.
        entries = acks.pending
        values = entries.values()
        pending = _encode({"sseq": list(entries), "dseq": list(map(_consumer_seq, values)),
                           "ts": list(map(_timestamp, values))})
        rdc = ",".join([f"[{s},{dc}]" for s, dc in acks.rdc.items() if dc > 1])
        adflr, asflr = acks.reported_floor()
        state = (f'{{"dseq":{host.dseq},"sseq":{host.sseq},"adflr":{adflr},'
                 f'"asflr":{asflr},"pending":{pending},"rdc":[{rdc}]')
        doc = (f'{{"v":{_STATE_VERSION},"name":{json.dumps(host.name)},"created":{host.created},'
               f'"config":{self._cfg_json},"state":{state}}}}}')
        return doc.encode()

    def write_now(self) -> None:
        """A write scheduled for the end of this turn is done now (a cluster leader hands over:
        what the turn wrote is proposed before it steps down)."""
        if self.scheduled:
            self._cancel_timer()
            self._save_soon()

    def flush_on_stop(self) -> None:
        """The consumer stops (server shutdown): a change not yet written is written now, and
        the ack replies waiting for it go out after the stream's closing commit."""
        self._cancel_timer()
        if self.scheduled and self.persist and not self.host.closed:
            self.scheduled = False
            self.write()
            if self.ack_replies:
                replies, self.ack_replies = self.ack_replies, []
                self.host.stream.confirm_after_commit(replies)

    def release(self) -> bool:
        """The consumer is deleted: acks already applied are answered (nats-server answered
        them), nothing more is written. Returns whether a document may exist to drop."""
        for reply in self.ack_replies:
            self.host.bus.publish(reply, None, None, b"")
        self.ack_replies = []
        self._cancel_timer()
        self.scheduled = False
        persisted = self.persist
        self.persist = False
        return persisted

    def drop(self) -> None:
        """Delete the document."""
        host = self.host
        stream = host.stream
        store = stream.store
        if store.closed:
            return
        store.delete_meta(STATE_PREFIX + host.name)
        stream.engine.mark_dirty(stream)


class Recovered(Protocol):
    """A consumer brought back from its document (not started yet)."""

    name: str

    def start(self) -> None: ...


def recover(stream: "Stream", restore: Callable[["Stream", dict[str, Any]], Recovered]) -> int:
    """Bring back the persisted consumers of a recovered file stream (``restore`` makes one
    from its document) and start them; returns how many. A document that cannot be read is
    logged and skipped."""
    log = stream.engine.log
    found = stream.store.iter_meta(STATE_PREFIX)
    if not found:
        return 0
    log.info(f"  Recovering {len(found)} consumers for stream - "
             f"'{stream.engine.account_name} > {stream.name}'")
    restored: list[Recovered] = []
    for key, raw in found:
        try:
            consumer = restore(stream, json.loads(raw))
        except Exception as exc:
            log.error(f"  Error recovering consumer {key[len(STATE_PREFIX):]!r} "
                      f"of stream '{stream.name}': {exc!r}")
            continue
        stream.consumers[consumer.name] = consumer
        restored.append(consumer)
    for consumer in restored:
        consumer.start()
    return len(restored)
