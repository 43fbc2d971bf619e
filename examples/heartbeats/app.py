"""An alert monitor on a push consumer that notices when its consumer has gone and recreates it.

The monitor follows the ``ALERTS`` stream through the durable push consumer ``alert-monitor``
with ``idle_heartbeat`` and ``flow_control`` on. It reads its deliver subject itself (a plain
subscription), so it sees what nats-py's JetStream push subscription hides:

* ``100 Idle Heartbeat`` status messages, sent by the server after each ``idle_heartbeat``
  without a delivery: proof that the consumer is alive (answering ``Nats-Consumer-Stalled``
  if one carries it);
* ``100 FlowControl Request`` messages, which it answers so delivery keeps flowing.

Its watchdog, ``check()`` (``watch()`` runs it every ``idle_heartbeat``), declares the
consumer lost once ``missed_heartbeats`` intervals pass without a heartbeat or a message (the
consumer was deleted, the server lost it, the subscription broke) and recreates it from the
stream sequence after the last alert it handled, so nothing is skipped or seen twice.

The monitor keeps its position (``last_seq``) in memory: ``start()`` (re)creates the consumer
from the beginning of the stream, a recreation from where it left off.

``now`` is the clock the watchdog measures silence with; a test passes the test server's clock
(``minijs_server.clock.time``) so that the watchdog and the server's heartbeats share one time.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Callable

import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header, StorageType

log = logging.getLogger(__name__)

STREAM = "ALERTS"
CONSUMER = "alert-monitor"


async def create_stream(js) -> None:
    await js.add_stream(name=STREAM, subjects=["alerts.>"], storage=StorageType.MEMORY)


async def raise_alert(js, source: str, text: str, **extra) -> int:
    ack = await js.publish(f"alerts.{source}", json.dumps({"text": text, **extra}).encode())
    return ack.seq


class AlertMonitor:
    def __init__(self, nc, *, idle_heartbeat: float = 1.0, missed_heartbeats: int = 2,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.idle_heartbeat = idle_heartbeat
        self.missed_heartbeats = missed_heartbeats
        self.now = now
        self.alerts: list[tuple[int, str, str]] = []   # (stream seq, source, text)
        self.heartbeats = 0
        self.flow_control_replies = 0
        self.recreations = 0
        self.last_seq = 0            # the last stream sequence handled
        self.last_seen = 0.0         # when the consumer last showed a sign of life
        self._sub = None
        self._changed = asyncio.Condition()

    async def start(self) -> None:
        await self._create_consumer()

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    async def wait_until(self, predicate: Callable[["AlertMonitor"], bool],
                         timeout: float = 10.0) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    # ------------------------------------------------------------------ the watchdog

    async def check(self) -> bool:
        """True while the consumer shows signs of life; otherwise recreate it, return False."""
        silent = self.now() - self.last_seen
        if silent < self.missed_heartbeats * self.idle_heartbeat:
            return True
        log.warning("no heartbeat for %.1fs: recreating consumer %s", silent, CONSUMER)
        await self._create_consumer()
        self.recreations += 1
        await self._notify()
        return False

    async def watch(self) -> None:
        """Run :meth:`check` every heartbeat interval, forever (cancel to stop)."""
        while True:
            await asyncio.sleep(self.idle_heartbeat)
            await self.check()

    # ------------------------------------------------------------------ the consumer

    async def _create_consumer(self) -> None:
        await self.stop()
        try:  # a consumer that looks dead might still exist: replace it
            await self.js.delete_consumer(STREAM, CONSUMER)
        except nats.js.errors.NotFoundError:
            pass
        inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe(inbox, cb=self._on_msg)
        if self.last_seq:
            start = dict(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                         opt_start_seq=self.last_seq + 1)
        else:
            start = dict(deliver_policy=DeliverPolicy.ALL)
        await self.js.add_consumer(STREAM, ConsumerConfig(
            durable_name=CONSUMER, deliver_subject=inbox, ack_policy=AckPolicy.EXPLICIT,
            idle_heartbeat=self.idle_heartbeat, flow_control=True, **start))
        self.last_seen = self.now()

    async def _on_msg(self, msg: Msg) -> None:
        self.last_seen = self.now()
        headers = msg.headers or {}
        if not msg.data and headers.get(Header.STATUS) == "100":
            description = headers.get(Header.DESCRIPTION, "")
            if description.startswith("Idle"):
                self.heartbeats += 1
                stalled = headers.get(Header.CONSUMER_STALLED)
                if stalled:
                    await self.nc.publish(stalled, b"")
            elif description.startswith("FlowControl") and msg.reply:
                await self.nc.publish(msg.reply, b"")
                self.flow_control_replies += 1
        else:
            seq = msg.metadata.sequence.stream
            if seq > self.last_seq:
                alert = json.loads(msg.data)
                self.alerts.append((seq, msg.subject.split(".", 1)[1], alert["text"]))
                self.last_seq = seq
            await msg.ack()
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
