"""Durable state (reference ``jetstream-behavior.md`` §4): consumers of file streams (unless
``mem_storage``) keep their config, creation time and delivery state — positions, ack floor,
pending acks with delivery counts and timestamps, redelivery counts — under the key
``consumer/<name>`` of the stream store's metadata, and come back after a restart
(:meth:`DurableState.recover`, which the engine calls once the stream is recovered).

The document is ``{"v": 1, "name", "created", "config", "state": {"dseq", "sseq", "adflr",
"asflr", "pending": [[stream seq, consumer seq, timestamp], ...], "rdc": [[stream seq, count],
...]}}``, ``rdc`` listing only counts over 1 (also of messages given up at ``max_deliver``); the
floor is the reported one (nats-server's consumer store floor, see :mod:`acks`), which a
restarted consumer takes as its floor.

Invariants:

* ``_persist`` is decided at creation (a file stream, not ``mem_storage``) and cleared by
  delete, which drops the document; a consumer that does not persist never writes.
* A change of the persisted state is written at most once per event-loop turn in which it
  changed (``_save_scheduled``), at the end of that turn, into the store's metadata, and
  committed by the engine's grouped flush; stop writes a change still scheduled, and nothing is
  written once the consumer, its stream or its store has closed. The config's JSON is kept
  until the config changes.
* The replies of acks sent as requests (``_ack_replies``) wait for the write of the state they
  left and go out after the commit that carries it (``Stream.confirm_after_commit``), with the
  stream's pub acks; a crash before that commit loses ack and reply together.
* Restoring follows nats-server's file store: pending timestamps come back truncated to whole
  seconds, the redelivery queue (NAKs) is not kept, and the first ack-wait check runs 0.5–1.5 s
  after the restart (sooner when the ack wait is shorter). An auto-named ephemeral now shows
  its name in the config; a ``last_per_subject`` consumer resumes like a plain one from its
  position, its pending counted once as the subjects whose last message is still ahead.
  Ephemerals come back too and are then removed by their inactivity threshold, as nats-server
  does.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import deque
from typing import TYPE_CHECKING, Self

from minijs.jetstream.config import consumer as C
if TYPE_CHECKING:
    from minijs.jetstream.streams.stream import Stream

_SECOND = 1_000_000_000
#: Store metadata key prefix of persisted consumers (``consumer/<name>``).
STATE_PREFIX = "consumer/"
_STATE_VERSION = 1


class DurableState:
    """The persisted state of a :class:`~minijs.jetstream.consumers.consumer.Consumer`: save scheduling,
    the state document, restore and recovery."""

    def _changed(self) -> None:
        """The persisted part of the state changed: write it at the end of this turn."""
        if self._persist and not self._save_scheduled:
            self._schedule_save()

    def _schedule_save(self) -> None:
        self._save_scheduled = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (direct use in a test): write at once
            self._save_soon()
            return
        loop.call_soon(self._save_soon)

    def _save_soon(self) -> None:
        self._save_scheduled = False
        if self.closed or not self._persist:
            return
        stream = self.stream
        if stream.closed or stream.store.closed:
            return
        self._write_state()
        if self._ack_replies:
            replies, self._ack_replies = self._ack_replies, []
            stream.confirm_after_commit(replies)
        else:
            stream.engine.mark_dirty(stream)

    def _write_state(self) -> None:
        """Buffer the state document in the store metadata (committed by the next flush)."""
        self.stream.store.put_meta(STATE_PREFIX + self.name, self.state_document())

    def state_document(self) -> bytes:
        """The persisted document of this consumer (also what a stream snapshot carries)."""
        if not self._cfg_json:
            self._cfg_json = json.dumps(dataclasses.asdict(self.config), separators=(",", ":"))
        # The same JSON as json.dumps of {"dseq", "sseq", "adflr", "asflr", "pending": [[seq,
        # dseq, ts], ...], "rdc": [[seq, count], ...]}, written by hand:
        # this runs once per event-loop turn with deliveries or acks, and every value is an int.
        pending = ",".join([f"[{s},{p[0]},{p[2]}]" for s, p in self.pending.items()])
        rdc = ",".join([f"[{s},{dc}]" for s, dc in self.rdc.items() if dc > 1])
        adflr, asflr = (self.adflr, self.asflr) if self._sflr is None else self._sflr
        state = (f'{{"dseq":{self.dseq},"sseq":{self.sseq},"adflr":{adflr},'
                 f'"asflr":{asflr},"pending":[{pending}],"rdc":[{rdc}]')
        doc = (f'{{"v":{_STATE_VERSION},"name":{json.dumps(self.name)},"created":{self.created},'
               f'"config":{self._cfg_json},"state":{state}}}}}')
        return doc.encode()

    def _drop_state(self) -> None:
        stream = self.stream
        store = stream.store
        if store.closed:
            return
        store.delete_meta(STATE_PREFIX + self.name)
        stream.engine.mark_dirty(stream)

    @classmethod
    def restore(cls, stream: "Stream", doc: dict) -> Self:
        """A consumer from its persisted document (not started). As in nats-server, an
        auto-named ephemeral now shows its name in the config, pending timestamps are whole
        seconds and nothing is queued for redelivery until the first ack-wait check."""
        name = doc["name"]
        cfg = C.consumer_config_from_dict(doc["config"])
        if not cfg.name:
            cfg.name = name
        consumer = cls(stream, name, cfg, created=int(doc["created"]))
        consumer._restored = True
        st = doc["state"]
        consumer.dseq, consumer.sseq = int(st["dseq"]), int(st["sseq"])
        consumer.adflr, consumer.asflr = int(st["adflr"]), int(st["asflr"])
        # nats-server keeps no last-per-subject start list: delivery resumes as for a plain
        # consumer from the position, and pending is counted once as the subjects whose last
        # message is still ahead (calculateNumPending), then kept up by deliveries and stores.
        consumer._lps = deque()
        rdc = {int(s): int(dc) for s, dc in st.get("rdc", ())}
        last = stream.store.last_seq
        rdc = {s: dc for s, dc in rdc.items() if consumer.asflr <= s <= last}
        pending: dict[int, list[int]] = {}
        for s, dseq, ts in st.get("pending", ()):
            ts = (int(ts) // _SECOND) * _SECOND
            dc = rdc.get(s, 1)
            pending[int(s)] = [int(dseq), ts + consumer._ack_wait(dc), ts]
            rdc.setdefault(int(s), 1)
        consumer.pending = pending
        consumer.rdc = rdc
        consumer._npc_valid = False
        if cfg.deliver_policy == "last_per_subject" and stream.store.msgs:
            lasts = stream.store.multi_last_seqs(consumer.filters or [">"])
            consumer._npc = sum(1 for q in lasts if q >= consumer.sseq)
            consumer._np_base(stream.store.last_seq)
        if pending and cfg.ack_policy != "none":
            # nats-server checks restored pending acks after 0.5–1.5 s (or one ack wait).
            delay = 0.5 + consumer.server.randomness.child("restore").randrange(1000) / 1000
            aw = consumer.config.ack_wait or C.DEFAULT_ACK_WAIT
            if aw / 1e9 < delay:
                delay = aw / 1e9 + 0.001
            consumer._ack_timer_at = consumer.clock.time_ns() + int(delay * 1e9)
            consumer._ack_timer = consumer.clock.call_later(delay, consumer._check_pending)
        return consumer

    @classmethod
    def recover(cls, stream: "Stream") -> int:
        """Bring back the persisted consumers of a recovered file stream and start them; returns
        how many. A document that cannot be read is logged and skipped."""
        log = stream.engine.log
        found = stream.store.iter_meta(STATE_PREFIX)
        if not found:
            return 0
        log.info(f"  Recovering {len(found)} consumers for stream - '{stream.engine.account_name} > {stream.name}'")
        restored: list[Self] = []
        for key, raw in found:
            try:
                consumer = cls.restore(stream, json.loads(raw))
            except Exception as exc:
                log.error(f"  Error recovering consumer {key[len(STATE_PREFIX):]!r} "
                          f"of stream '{stream.name}': {exc!r}")
                continue
            stream.consumers[consumer.name] = consumer
            restored.append(consumer)
        for consumer in restored:
            consumer.start()
        return len(restored)
