"""An order-fulfilment worker that survives a server restart without losing or repeating work.

Orders are jobs on a *file*-storage work-queue stream (``ORDERS``, ``orders.*``) consumed by the
durable pull consumer ``fulfil``: both survive a restart of the server, with the consumer's
delivered/acked state. The worker

* owns its connection, reconnecting forever (``connect()``);
* acks with ``ack_sync`` so an order counts as done only once the server confirmed the ack,
  retrying the ack if the confirmation was lost to a disconnect (acks are idempotent);
* re-issues its pull request after a reconnect: a waiting pull request lives in the server's
  memory and is gone once the server restarted, and nats-py would otherwise sit out the
  long-poll timeout before asking again.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Awaitable, Callable

import nats
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType

log = logging.getLogger(__name__)

STREAM = "ORDERS"
CONSUMER = "fulfil"
ACK_WAIT = 30.0

Handler = Callable[[dict], Awaitable[None]]


async def connect(url: str, *, reconnect_time_wait: float = 0.25, **callbacks) -> nats.NATS:
    """A service's connection: it tries to reconnect every ``reconnect_time_wait`` seconds,
    forever. (A test against a server that restarts in milliseconds passes a smaller wait.)"""
    return await nats.connect(url, reconnect_time_wait=reconnect_time_wait,
                              max_reconnect_attempts=-1, connect_timeout=5, **callbacks)


async def setup(js) -> None:
    await js.add_stream(name=STREAM, subjects=["orders.*"], storage=StorageType.FILE,
                        retention=RetentionPolicy.WORK_QUEUE)
    await js.add_consumer(STREAM, ConsumerConfig(durable_name=CONSUMER,
                                                 ack_policy=AckPolicy.EXPLICIT,
                                                 ack_wait=ACK_WAIT))


async def place_order(js, order_id: str, **fields) -> int:
    ack = await js.publish(f"orders.{order_id}", json.dumps({"id": order_id, **fields}).encode(),
                           headers={"Nats-Msg-Id": order_id})
    return ack.seq


class Worker:
    def __init__(self, url: str, handler: Handler, *, fetch_timeout: float = 30.0,
                 reconnect_time_wait: float = 0.25) -> None:
        self.url = url
        self.reconnect_time_wait = reconnect_time_wait
        self.handler = handler
        self.fetch_timeout = fetch_timeout
        self.handled: Counter[str] = Counter()   # order id -> times the handler ran
        self.acked: list[str] = []               # order ids whose ack the server confirmed
        self.reconnects = 0
        self._changed = asyncio.Condition()
        self._reconnected = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self.nc = await connect(self.url, reconnect_time_wait=self.reconnect_time_wait,
                                reconnected_cb=self._on_reconnected)
        self.js = self.nc.jetstream()
        self._sub = await self.js.pull_subscribe_bind(CONSUMER, stream=STREAM)
        self._task = asyncio.create_task(self._run(), name="fulfil-worker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await self.nc.close()

    async def wait_until(self, predicate: Callable[["Worker"], bool], timeout: float = 10.0
                         ) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _on_reconnected(self) -> None:
        self.reconnects += 1
        self._reconnected.set()
        await self._notify()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        while True:
            msgs = await self._fetch()
            for msg in msgs:
                await self._process(msg)

    async def _fetch(self) -> list[Msg]:
        """One long-poll pull request, abandoned (and asked again) after a reconnect."""
        self._reconnected.clear()
        fetch = asyncio.ensure_future(self._sub.fetch(1, timeout=self.fetch_timeout))
        reconnected = asyncio.ensure_future(self._reconnected.wait())
        try:
            await asyncio.wait({fetch, reconnected}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reconnected.cancel()
            if not fetch.done():
                fetch.cancel()
                await asyncio.wait({fetch})
        if fetch.cancelled():
            return []
        try:
            return fetch.result()
        except nats.errors.TimeoutError:
            return []
        except (nats.errors.Error, nats.js.errors.Error) as exc:
            # E.g. 503 while the restarted server is still loading its streams.
            log.warning("fetch failed (%r); retrying", exc)
            await asyncio.sleep(0.05)
            return []

    async def _process(self, msg: Msg) -> None:
        order = json.loads(msg.data)
        await self.handler(order)
        self.handled[order["id"]] += 1
        await self._ack(msg)
        self.acked.append(order["id"])
        await self._notify()

    async def _ack(self, msg: Msg) -> None:
        for attempt in range(10):
            try:
                await msg.ack_sync(timeout=2)
                return
            except nats.errors.TimeoutError:
                log.warning("ack of %s not confirmed (attempt %d); again", msg.subject, attempt)
        raise RuntimeError(f"could not ack {msg.subject}")
