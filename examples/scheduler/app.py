"""A retrying publisher and an interval scheduler on JetStream: code that lives by client
timeouts and its own sleeps.

:class:`RetryingPublisher` publishes with a JetStream ack timeout; when the ack does not come
(no stream listens yet: the server answers "no responders" at once; or nothing answers in
time: the publish times out), it sleeps and tries again with exponential backoff, the same
``Nats-Msg-Id`` every time, so a retry of a publish whose ack was only late is stored once.

:class:`Scheduler` runs a job every ``interval`` seconds (``asyncio.sleep`` between runs) and
publishes each run's result through the publisher.

Neither knows about minijs: in tests the event loop runs on the server's virtual time
(``@pytest.mark.minijs(clock="auto", loop_clock=True)``), so an hour of retries and ticks takes
milliseconds; in production the same code waits in real time.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import nats.errors
import nats.js.errors
from nats.js.api import PubAck

STREAM = "REPORTS"
SUBJECTS = ["reports.>"]


class PublishFailed(Exception):
    """Every attempt of a publish went unacknowledged."""


@dataclass
class Attempt:
    number: int
    at: float       # loop time the attempt started
    error: str = ""  # "", "no responders" or "timeout"


@dataclass
class RetryingPublisher:
    js: Any
    ack_timeout: float = 2.0
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_attempts: int = 8
    attempts: list[Attempt] = field(default_factory=list)

    async def publish(self, subject: str, payload: bytes, msg_id: str) -> PubAck:
        loop = asyncio.get_running_loop()
        delay = self.base_delay
        for number in range(1, self.max_attempts + 1):
            attempt = Attempt(number, loop.time())
            self.attempts.append(attempt)
            try:
                return await self.js.publish(subject, payload, timeout=self.ack_timeout,
                                             headers={"Nats-Msg-Id": msg_id})
            except nats.js.errors.NoStreamResponseError:  # the server's 503: no stream yet
                attempt.error = "no responders"
            except nats.errors.TimeoutError:
                attempt.error = "timeout"
            if number < self.max_attempts:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_delay)
        raise PublishFailed(f"{subject}: {self.max_attempts} attempts, no ack")


@dataclass
class Scheduler:
    publisher: RetryingPublisher
    name: str
    interval: float
    job: Callable[[int], Awaitable[dict]]
    runs: int = 0
    _task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_run = loop.time()
        while True:
            self.runs += 1
            result = await self.job(self.runs)
            body = json.dumps({"run": self.runs, "at": round(loop.time() - next_run, 3),
                               **result}).encode()
            await self.publisher.publish(f"reports.{self.name}", body,
                                         msg_id=f"{self.name}-{self.runs}")
            next_run += self.interval
            await asyncio.sleep(max(0.0, next_run - loop.time()))


async def create_stream(js: Any) -> None:
    await js.add_stream(name=STREAM, subjects=SUBJECTS, duplicate_window=120, storage="memory")
