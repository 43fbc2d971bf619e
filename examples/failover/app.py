"""An order worker on a replicated (R3) stream that keeps going when a node dies.

* ``setup(js)`` creates the ``ORDERS`` stream (``orders.<id>``, three replicas, file storage)
  and the ``fulfilment`` durable pull consumer (explicit acks, ``ack_wait`` 10 s).
* ``Publisher.submit(order_id)`` publishes an order with ``Nats-Msg-Id: <order id>`` and
  retries until the stream acknowledges it: while a stream elects a new leader a publish gets
  the 503 no-responders status (nobody subscribes to the stream's subjects) or no ack at all;
  the retry carries the same message id, so the stream keeps one copy.
* ``Worker`` long-polls the consumer one order at a time, processes it and acks it with
  ``ack_sync`` (the ack is confirmed once the consumer's replicated state holds it). During a
  leader change a fetch fails (503, ``409 Leadership Change``, a timeout) and an ack may go
  unconfirmed: the worker fetches again, and an order whose ack was not confirmed may come back
  after ``ack_wait`` (processing is idempotent by order id: ``processed`` records each order
  once, ``deliveries`` counts every delivery).

The client connects to every node of the cluster and reconnects quickly to the survivors.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Callable

import nats
import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, StorageType

log = logging.getLogger(__name__)

STREAM = "ORDERS"
CONSUMER = "fulfilment"
ACK_WAIT = 10.0


async def connect(urls: list[str]) -> nats.NATS:
    """A connection that fails over to the other nodes at once."""
    return await nats.connect(servers=urls, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                              allow_reconnect=True, connect_timeout=2)


async def setup(js) -> None:
    await js.add_stream(name=STREAM, subjects=["orders.*"], num_replicas=3,
                        storage=StorageType.FILE)
    await js.add_consumer(STREAM, ConsumerConfig(durable_name=CONSUMER,
                                                 ack_policy=AckPolicy.EXPLICIT,
                                                 ack_wait=ACK_WAIT))


class Publisher:
    """Publishes orders, retrying until each is acknowledged."""

    def __init__(self, nc: nats.NATS) -> None:
        self.js = nc.jetstream()
        self.acked: dict[str, int] = {}   # order id -> stream sequence

    async def submit(self, order_id: str, *, attempts: int = 200) -> int:
        body = json.dumps({"id": order_id}).encode()
        for _ in range(attempts):
            try:
                ack = await self.js.publish(f"orders.{order_id}", body, timeout=0.5,
                                            headers={"Nats-Msg-Id": order_id})
            except (nats.errors.TimeoutError, nats.errors.NoRespondersError,
                    nats.js.errors.NoStreamResponseError, nats.errors.ConnectionClosedError,
                    nats.js.errors.ServiceUnavailableError):
                await asyncio.sleep(0.05)  # an election, or our node went away: again
                continue
            self.acked[order_id] = ack.seq
            return ack.seq
        raise RuntimeError(f"order {order_id} was never acknowledged")


class Worker:
    """Processes orders from the ``fulfilment`` consumer (see the module docstring)."""

    def __init__(self, nc: nats.NATS, *, fetch_timeout: float = 0.5) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.fetch_timeout = fetch_timeout
        self.processed: list[str] = []
        self.deliveries: Counter[str] = Counter()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="order-worker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def wait_until(self, predicate: Callable[["Worker"], bool], timeout: float = 30.0
                         ) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    async def _run(self) -> None:
        sub = None
        while True:
            try:
                if sub is None:
                    sub = await self.js.pull_subscribe_bind(CONSUMER, stream=STREAM)
                msgs = await sub.fetch(1, timeout=self.fetch_timeout)
            except nats.errors.TimeoutError:
                continue
            except (nats.errors.Error, nats.js.errors.Error) as exc:
                log.info("fetch failed (%s); again", exc)  # 503, 409, reconnecting...
                await asyncio.sleep(0.05)
                continue
            for msg in msgs:
                order = json.loads(msg.data)["id"]
                self.deliveries[order] += 1
                if order not in self.processed:
                    self.processed.append(order)   # the work, done once per order
                try:
                    await msg.ack_sync(timeout=1)
                except (nats.errors.Error, nats.js.errors.Error) as exc:
                    log.info("ack of %s not confirmed (%s)", order, exc)
                async with self._changed:
                    self._changed.notify_all()
