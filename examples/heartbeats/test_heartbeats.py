"""The alert monitor's watchdog: heartbeats prove the push consumer alive; when they stop (the
consumer is deleted under it) the watchdog notices and recreates the consumer, and no alert is
lost or handled twice. Idle heartbeat: 1 s; the watchdog gives up after 2 silent seconds.

Every check of the watchdog happens at least a second away from its threshold, so the same
assertions hold on nats-server, where ``advance`` waits in real time.
"""
import pytest

from .app import CONSUMER, STREAM, AlertMonitor, create_stream, raise_alert

pytestmark = pytest.mark.minijs(clock="virtual")


@pytest.fixture
async def monitor(minijs_server, nats_client, js):
    await create_stream(js)
    monitor = AlertMonitor(nats_client, idle_heartbeat=1.0, now=minijs_server.clock.time)
    await monitor.start()
    yield monitor
    await monitor.stop()


async def test_heartbeats_keep_an_idle_consumer_alive(minijs_server, js, monitor):
    await raise_alert(js, "db", "disk 91% full")
    await monitor.wait_until(lambda m: len(m.alerts) == 1)

    for _ in range(3):                                  # idle for 3 s, checked every second
        seen = monitor.heartbeats
        await minijs_server.clock.advance_async(1)
        await monitor.wait_until(lambda m: m.heartbeats > seen)
        assert await monitor.check()

    assert monitor.recreations == 0


async def test_watchdog_recreates_a_deleted_consumer(minijs_server, js, monitor):
    for i in range(3):
        await raise_alert(js, "api", f"p99 latency high #{i}")
    await monitor.wait_until(lambda m: len(m.alerts) == 3)

    # Alive: a heartbeat after 1 s of silence.
    await minijs_server.clock.advance_async(1)
    await monitor.wait_until(lambda m: m.heartbeats >= 1)
    assert await monitor.check()

    # Gone: someone deletes the consumer; its heartbeats stop.
    await js.delete_consumer(STREAM, CONSUMER)
    await raise_alert(js, "api", "error rate 5%")        # stored, but nobody delivers it

    await minijs_server.clock.advance_async(1)           # 1 s silent: could be a hiccup
    assert await monitor.check()
    assert monitor.recreations == 0

    await minijs_server.clock.advance_async(2)           # 3 s silent: the consumer is lost
    assert not await monitor.check()
    assert monitor.recreations == 1

    # The new consumer starts after the last alert handled: the missed one arrives, once.
    await monitor.wait_until(lambda m: len(m.alerts) == 4)
    await raise_alert(js, "db", "replica lag 30s")
    await monitor.wait_until(lambda m: len(m.alerts) == 5)
    assert [text for _, _, text in monitor.alerts] == [
        "p99 latency high #0", "p99 latency high #1", "p99 latency high #2",
        "error rate 5%", "replica lag 30s"]
    assert [seq for seq, _, _ in monitor.alerts] == [1, 2, 3, 4, 5]

    # And it is watched like the first one.
    seen = monitor.heartbeats
    await minijs_server.clock.advance_async(1)
    await monitor.wait_until(lambda m: m.heartbeats > seen)
    assert await monitor.check()
    info = await js.consumer_info(STREAM, CONSUMER)
    assert (info.num_pending, info.num_ack_pending) == (0, 0)


async def test_flow_control_is_answered_so_a_large_backlog_flows(minijs_server, js, monitor):
    # 40 x 64 KiB = 2.5 MiB: more than the server's first flow-control window (2 MiB), so
    # delivery would stall unless the monitor answers the flow-control requests.
    blob = "x" * (64 * 1024)
    for i in range(40):
        await raise_alert(js, "batch", f"report {i}", attachment=blob)

    await monitor.wait_until(lambda m: len(m.alerts) == 40)

    assert monitor.flow_control_replies >= 1
    assert [seq for seq, _, _ in monitor.alerts] == list(range(1, 41))
