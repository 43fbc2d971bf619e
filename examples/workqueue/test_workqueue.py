"""Retries, backoff and dead-lettering of the work-queue worker.

The consumer's schedule is ``backoff=[1, 2]``, ``max_deliver=3``: a job that keeps failing is
delivered at t=0, 1 and 3 s, and given up at t=5 s. The tests move the server's clock by
exactly those amounts (on nats-server, ``advance`` waits in real time) and await what the
worker reports; nothing here waits for a client-side timeout.
"""
import pytest

from .app import DLQ_STREAM, STREAM, CONSUMER, DeadLetter, RetryLater, Worker, setup, submit

pytestmark = pytest.mark.minijs(clock="virtual")


@pytest.fixture
async def jobs(js):
    await setup(js)
    return js


async def start_worker(nats_client, handler) -> Worker:
    worker = Worker(nats_client, handler)
    await worker.start()
    return worker


async def test_job_that_succeeds_is_acked_once_and_leaves_the_queue(minijs_server, nats_client,
                                                                     jobs):
    seen = []

    async def handler(job, attempt):
        seen.append((job["id"], attempt))

    worker = await start_worker(nats_client, handler)
    try:
        for i in range(3):
            await submit(jobs, "email", f"job-{i}", to=f"user{i}@example.com")
        await worker.wait_until(lambda w: len(w.done) == 3)
    finally:
        await worker.stop()

    assert worker.done == ["job-0", "job-1", "job-2"]
    assert seen == [("job-0", 1), ("job-1", 1), ("job-2", 1)]
    assert (await jobs.stream_info(STREAM)).state.messages == 0  # work queue: acked = gone


async def test_flaky_job_is_retried_on_the_backoff_schedule_and_succeeds(minijs_server,
                                                                         nats_client, jobs):
    attempts = []

    async def handler(job, attempt):
        attempts.append(attempt)
        if attempt < 3:
            raise ConnectionError("upstream hiccup")

    worker = await start_worker(nats_client, handler)
    try:
        await submit(jobs, "resize", "flaky")
        await worker.wait_until(lambda w: w.attempts["flaky"] == 1)

        await minijs_server.clock.advance_async(1)      # backoff[0]
        await worker.wait_until(lambda w: w.attempts["flaky"] == 2)

        await minijs_server.clock.advance_async(2)      # backoff[1]
        await worker.wait_until(lambda w: w.done == ["flaky"])
    finally:
        await worker.stop()

    assert attempts == [1, 2, 3]
    assert worker.dead_letters == []
    assert (await jobs.stream_info(STREAM)).state.messages == 0
    info = await jobs.consumer_info(STREAM, CONSUMER)
    assert (info.num_ack_pending, info.num_redelivered, info.num_pending) == (0, 0, 0)


async def test_poison_job_is_dead_lettered_after_max_deliver(minijs_server, nats_client, jobs):
    async def handler(job, attempt):
        if job["id"] == "poison":
            raise ValueError("cannot parse job")

    worker = await start_worker(nats_client, handler)
    try:
        seq = await submit(jobs, "resize", "poison", image="corrupt.png")
        await worker.wait_until(lambda w: w.attempts["poison"] == 1)
        await minijs_server.clock.advance_async(1)
        await worker.wait_until(lambda w: w.attempts["poison"] == 2)
        await minijs_server.clock.advance_async(2)
        await worker.wait_until(lambda w: w.attempts["poison"] == 3)

        # The third delivery's ack wait (the last backoff value, 2 s) runs out: the server
        # gives up and advises; the worker moves the job to the dead-letter stream.
        await minijs_server.clock.advance_async(2)
        await worker.wait_until(lambda w: len(w.dead_letters) == 1)

        # Other work still flows after a job was given up.
        await submit(jobs, "resize", "fine")
        await worker.wait_until(lambda w: w.done == ["fine"])
    finally:
        await worker.stop()

    assert worker.dead_letters == [DeadLetter("poison", seq, 3)]
    assert worker.attempts["poison"] == 3           # never delivered a fourth time
    dead = await jobs.get_msg(DLQ_STREAM, 1)
    assert dead.subject == "dlq.jobs.resize"
    assert dead.headers["Jobs-Deliveries"] == "3"
    assert b'"corrupt.png"' in dead.data
    assert (await jobs.stream_info(STREAM)).state.messages == 0
    info = await jobs.consumer_info(STREAM, CONSUMER)
    assert (info.num_ack_pending, info.num_pending) == (0, 0)


async def test_retry_later_naks_with_a_delay_that_overrides_the_backoff(minijs_server,
                                                                         nats_client, jobs):
    attempts = []

    async def handler(job, attempt):
        attempts.append(attempt)
        if attempt == 1:
            raise RetryLater(2)    # e.g. the upstream answered 429, Retry-After: 2

    worker = await start_worker(nats_client, handler)
    try:
        await submit(jobs, "webhook", "rate-limited")
        await worker.wait_until(lambda w: w.attempts["rate-limited"] == 1)

        await minijs_server.clock.advance_async(1)      # backoff[0] would redeliver now...
        info = await jobs.consumer_info(STREAM, CONSUMER)
        assert info.delivered.consumer_seq == 1          # ...but the NAK asked for 2 s
        assert info.num_ack_pending == 1

        await minijs_server.clock.advance_async(1)
        await worker.wait_until(lambda w: w.done == ["rate-limited"])
    finally:
        await worker.stop()

    assert attempts == [1, 2]
    assert (await jobs.stream_info(STREAM)).state.messages == 0
