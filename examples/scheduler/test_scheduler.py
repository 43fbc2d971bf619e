"""The retrying publisher and the scheduler, tested on the time they wait in.

The module's marker puts the test's event loop on the server's virtual time: the publisher's
ack timeouts and backoff sleeps (up to its 30 s cap), the scheduler's 30 s interval, the
test's own sleeps and the clients' fetch timeouts all run on one clock, which jumps ahead
whenever nothing is left to do. These tests span about three and a half minutes; on
``--minijs-target=nats-server`` the same tests wait them out in real time, and the loop times
they assert hold on both.
"""
import asyncio
import json

import nats
import pytest

from .app import STREAM, PublishFailed, RetryingPublisher, Scheduler, create_stream

pytestmark = pytest.mark.minijs(clock="auto", loop_clock=True)


def now() -> float:
    return asyncio.get_running_loop().time()


@pytest.fixture
async def nc(minijs_async_server):
    client = await nats.connect(minijs_async_server.client_url)
    yield client
    await client.close()


async def test_publish_retries_with_backoff_until_the_stream_exists(nc):
    js = nc.jetstream()
    publisher = RetryingPublisher(js)
    start = now()
    publishing = asyncio.create_task(publisher.publish("reports.daily", b"{}", "daily-1"))
    await asyncio.sleep(50)        # nobody stores reports.> yet: "no responders", at once
    await create_stream(js)
    ack = await publishing
    assert ack.stream == STREAM and ack.seq == 1
    # backoff 1, 2, 4, 8, 16, then the 30 s cap: the seventh attempt finds the stream
    assert [a.error for a in publisher.attempts] == ["no responders"] * 6 + [""]
    assert [round(a.at - start) for a in publisher.attempts] == [0, 1, 3, 7, 15, 31, 61]


async def test_a_publish_nobody_acks_times_out_and_is_retried(nc):
    js = nc.jetstream()

    async def deaf(msg):           # receives reports.> but never answers
        pass

    await nc.subscribe("reports.>", cb=deaf)
    publisher = RetryingPublisher(js, ack_timeout=5)
    start = now()
    publishing = asyncio.create_task(publisher.publish("reports.weekly", b"{}", "weekly-1"))
    await asyncio.sleep(20)
    await create_stream(js)        # from now on the stream acks as well
    ack = await publishing
    assert ack.seq == 1
    # timeouts end at 5, 11 and 18 s (5 + 1, then + 5 + 2, ...); the attempt at 22 s is acked
    assert [a.error for a in publisher.attempts] == ["timeout"] * 3 + [""]
    assert [round(a.at - start) for a in publisher.attempts] == [0, 6, 13, 22]


async def test_publisher_gives_up_after_its_last_attempt(nc):
    publisher = RetryingPublisher(nc.jetstream(), max_attempts=6)
    start = now()
    with pytest.raises(PublishFailed, match="6 attempts"):
        await publisher.publish("reports.none", b"{}", "none-1")
    assert round(now() - start) == 31  # slept 1 + 2 + 4 + 8 + 16 s between the six attempts


async def test_scheduler_runs_on_its_interval_and_a_worker_long_polls_the_reports(nc):
    js = nc.jetstream()
    await create_stream(js)

    async def job(run):
        await asyncio.sleep(0.5)   # the job's own work takes half a second
        return {"rows": run * 10}

    scheduler = Scheduler(RetryingPublisher(js), "hourly", interval=30, job=job)
    sub = await js.pull_subscribe("reports.hourly", "reader")
    start = now()
    scheduler.start()
    got, polls = [], 0
    try:
        while len(got) < 3:
            # a worker's long poll: each fetch waits up to 20 s for the next report
            polls += 1
            try:
                msgs = await sub.fetch(1, timeout=20)
            except nats.errors.TimeoutError:
                continue
            for msg in msgs:
                got.append((now() - start, json.loads(msg.data)))
                await msg.ack()
    finally:
        await scheduler.stop()
    assert [(r["run"], r["rows"]) for _, r in got] == [(1, 10), (2, 20), (3, 30)]
    assert [t for t, _ in got] == [pytest.approx(t, abs=0.3) for t in (0.5, 30.5, 60.5)]
    assert polls == 5  # two of the fetches between reports ran out after 20 s


async def test_fetch_times_out_when_nothing_is_scheduled(nc):
    js = nc.jetstream()
    await create_stream(js)
    sub = await js.pull_subscribe("reports.>", "reader")
    start = now()
    with pytest.raises(nats.errors.TimeoutError):
        await sub.fetch(1, timeout=30)   # nothing is published: the fetch waits out 30 s
    assert round(now() - start) == 30
