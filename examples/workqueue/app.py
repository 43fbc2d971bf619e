"""A work-queue worker: jobs on a WorkQueue stream, one durable pull consumer shared by workers.

* ``setup(js)`` creates the ``JOBS`` work-queue stream (``jobs.<kind>``), the ``JOBS_DLQ``
  dead-letter stream (``dlq.jobs.<kind>``) and the ``workers`` consumer with a retry schedule:
  ``backoff=[1, 2]`` (the first redelivery 1 s after a failed delivery, then every 2 s) and
  ``max_deliver=3``.
* ``Worker`` fetches jobs one at a time and hands each to the application's handler:

  - the handler returns: the job is acked (``ack_sync``: the server confirmed it, and the
    work queue has removed it);
  - it raises ``RetryLater(delay)``: the job is NAKed with that delay (e.g. a rate-limited
    upstream said "come back in 2 s");
  - it raises anything else: the job is left unacked, so the consumer's backoff schedule
    brings it back;
  - after ``max_deliver`` failed deliveries the server gives up and publishes the
    ``$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.workers`` advisory; the worker listens
    to it, copies the job to the dead-letter stream and deletes it from the work queue.

What happened is kept on the worker (``done``, ``attempts``, ``dead_letters``) and
``wait_until(predicate)`` lets a caller await a state change instead of polling.
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Awaitable, Callable

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType

log = logging.getLogger(__name__)

STREAM = "JOBS"
DLQ_STREAM = "JOBS_DLQ"
CONSUMER = "workers"
BACKOFF = [1.0, 2.0]   # seconds before the 1st redelivery, then before each later one
MAX_DELIVER = 3

Handler = Callable[[dict, int], Awaitable[None]]


class RetryLater(Exception):
    """Raised by a handler: try this job again after ``delay`` seconds (a delayed NAK)."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"retry in {delay}s")
        self.delay = delay


@dataclass
class DeadLetter:
    job_id: str
    stream_seq: int
    deliveries: int


async def setup(js, *, backoff: list[float] = BACKOFF, max_deliver: int = MAX_DELIVER) -> None:
    """Create the streams and the shared consumer (idempotent)."""
    await js.add_stream(name=STREAM, subjects=["jobs.*"], retention=RetentionPolicy.WORK_QUEUE,
                        storage=StorageType.MEMORY)
    await js.add_stream(name=DLQ_STREAM, subjects=["dlq.jobs.*"], storage=StorageType.MEMORY)
    await js.add_consumer(STREAM, ConsumerConfig(
        durable_name=CONSUMER, ack_policy=AckPolicy.EXPLICIT, backoff=list(backoff),
        max_deliver=max_deliver))


async def submit(js, kind: str, job_id: str, **fields) -> int:
    """Queue a job; returns its stream sequence."""
    ack = await js.publish(f"jobs.{kind}", json.dumps({"id": job_id, **fields}).encode(),
                           headers={"Nats-Msg-Id": job_id})
    return ack.seq


class Worker:
    """Fetches jobs from the ``workers`` consumer and runs ``handler(job, attempt)``.

    Each fetch is a long poll: one pull request that waits up to ``fetch_timeout`` seconds for
    a job. (nats-py's single-message fetch ignores the server's ``408 Request Timeout`` and
    waits out its own timeout, so a request should outlive the server-side waits it spans.)
    """

    def __init__(self, nc: NATS, handler: Handler, *, fetch_timeout: float = 30.0) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.handler = handler
        self.fetch_timeout = fetch_timeout
        self.done: list[str] = []                 # job ids, in the order they were acked
        self.attempts: Counter[str] = Counter()   # job id -> deliveries seen
        self.dead_letters: list[DeadLetter] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None
        self._advisories = None

    async def start(self) -> None:
        self._sub = await self.js.pull_subscribe_bind(CONSUMER, stream=STREAM)
        self._advisories = await self.nc.subscribe(
            f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{STREAM}.{CONSUMER}",
            cb=self._on_max_deliveries)
        # The advisory subscription must be known to the server before a job can exhaust its
        # deliveries, or the advisory would be published to nobody.
        await self.nc.flush()
        self._task = asyncio.create_task(self._run(), name="worker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._advisories is not None:
            await self._advisories.unsubscribe()
        await self._sub.unsubscribe()

    async def wait_until(self, predicate: Callable[["Worker"], bool], timeout: float = 10.0
                         ) -> None:
        """Return once ``predicate(worker)`` holds (checked at every state change)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: predicate(self)), timeout)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        while True:
            try:
                msgs = await self._sub.fetch(1, timeout=self.fetch_timeout)
            except nats.errors.TimeoutError:
                continue  # nothing to do yet: ask again
            except nats.errors.ConnectionClosedError:
                return
            except (nats.errors.Error, nats.js.errors.Error) as exc:
                log.warning("fetch failed (%s); retrying", exc)
                await asyncio.sleep(0.1)
                continue
            for msg in msgs:
                await self._process(msg)

    async def _process(self, msg: Msg) -> None:
        job = json.loads(msg.data)
        attempt = msg.metadata.num_delivered
        self.attempts[job["id"]] += 1
        try:
            await self.handler(job, attempt)
        except RetryLater as retry:
            log.info("job %s: retry in %ss", job["id"], retry.delay)
            await msg.nak(delay=retry.delay)
            await self.nc.flush()  # the NAK has reached the server before we carry on
        except Exception as exc:
            # Not acked: the consumer's backoff schedule redelivers it, max_deliver ends it.
            log.info("job %s failed on attempt %d: %s", job["id"], attempt, exc)
        else:
            await msg.ack_sync()
            self.done.append(job["id"])
        await self._notify()

    async def _on_max_deliveries(self, msg: Msg) -> None:
        advisory = json.loads(msg.data)
        seq, deliveries = advisory["stream_seq"], advisory["deliveries"]
        stored = await self.js.get_msg(STREAM, seq)
        job = json.loads(stored.data)
        await self.js.publish(f"dlq.{stored.subject}", stored.data, headers={
            "Nats-Msg-Id": f"dlq-{job['id']}", "Jobs-Stream-Seq": str(seq),
            "Jobs-Deliveries": str(deliveries)})
        await self.js.delete_msg(STREAM, seq)
        self.dead_letters.append(DeadLetter(job["id"], seq, deliveries))
        log.warning("job %s dead-lettered after %d deliveries", job["id"], deliveries)
        await self._notify()
