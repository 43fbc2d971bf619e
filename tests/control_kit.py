"""Helpers shared by the test-control tests (tests/test_control*.py)."""
from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Awaitable, TypeVar

import nats

S = 1_000_000_000
NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.c"

T = TypeVar("T")


async def nothing_arrived(nc: Any, *subs: Any) -> None:
    """Nothing is queued on ``subs``: after a PING/PONG round trip every message the server
    wrote before its PONG has been read, so an empty queue means nothing was sent."""
    await nc.flush()
    for sub in subs:
        assert sub.pending_msgs == 0, f"{sub.subject} got {sub.pending_msgs} message(s)"


async def arrived(nc: Any, sub: Any) -> Any:
    """The message the server has already written to ``sub`` (it must not be still on its way:
    a round trip, then it is taken from the queue without waiting)."""
    await nc.flush()
    assert sub.pending_msgs >= 1, f"nothing arrived on {sub.subject}"
    return await sub.next_msg(timeout=1)


async def pull(nc: Any, reply: str, *, subject: str = NEXT, **request: Any) -> None:
    """Send one pull request (a ``MSG.NEXT`` body from ``request``) answered on ``reply``; the
    round trip makes sure the server has taken it before the test moves time."""
    body = json.dumps(request).encode() if request else b""
    await nc.publish(subject, body, reply=reply)
    await nc.flush()


def status(msg: Any) -> tuple[str, str]:
    """The status and description headers of a status message ('' when absent)."""
    headers = msg.headers or {}
    return headers.get("Status", ""), headers.get("Description", "")


class Events:
    """nats-py connection callbacks as awaitable events."""

    def __init__(self) -> None:
        self.disconnected = asyncio.Event()
        self.reconnected = asyncio.Event()
        self.closed = asyncio.Event()
        self.errors: list[Exception] = []

    def options(self) -> dict[str, Any]:
        async def disconnected() -> None:
            self.disconnected.set()

        async def reconnected() -> None:
            self.reconnected.set()

        async def closed() -> None:
            self.closed.set()

        async def error(exc: Exception) -> None:
            self.errors.append(exc)

        return {"disconnected_cb": disconnected, "reconnected_cb": reconnected,
                "closed_cb": closed, "error_cb": error}


async def connect(url: str, events: Events | None = None, **options: Any) -> Any:
    """A nats-py client; with ``events``, its callbacks set those events."""
    if events is not None:
        options = {**events.options(), **options}
    return await nats.connect(url, **options)


async def wait(event: asyncio.Event, timeout: float = 5) -> None:
    await asyncio.wait_for(event.wait(), timeout)


class SyncNats:
    """A nats-py client on its own event-loop thread, for a plain synchronous test."""

    def __init__(self, url: str, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sync-nats",
                                       daemon=True)
        self.thread.start()
        self.nc = self.run(nats.connect(url, **options))

    def run(self, coro: Awaitable[T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        return future.result(10)

    def close(self) -> None:
        try:
            self.run(self.nc.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()

    def __enter__(self) -> "SyncNats":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
