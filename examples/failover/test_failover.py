"""The order worker on a three-node cluster, through the loss of the node that leads its stream.

Marked ``cluster_size=3`` and ``clock="virtual"``: the fixture starts minijs's in-process
cluster, and elections wait for the test to move the server's clock (nats-server's election
timeout is 4 to 9 s; ``advance_async(10)`` covers it). With ``--minijs-target=nats-server`` the
same test runs on three nats-server processes joined by routes, where the crash is a
``kill -9`` and the advance a real 10 s wait.
"""
import asyncio

import pytest

from .app import ACK_WAIT, STREAM, Publisher, Worker, connect, setup

pytestmark = pytest.mark.minijs(cluster_size=3, clock="virtual")


async def test_worker_keeps_going_when_its_streams_leader_crashes(minijs_server):
    nc = await connect(minijs_server.client_urls)
    js = nc.jetstream()
    await setup(js)
    publisher = Publisher(nc)
    worker = Worker(nc)
    await worker.start()
    try:
        for i in range(10):
            await publisher.submit(f"order-{i}")
        await worker.wait_until(lambda w: len(w.processed) == 10)

        leader = (await js.stream_info(STREAM)).cluster.leader
        await asyncio.to_thread(minijs_server.node(leader).crash)  # kill -9 on nats-server

        # Orders keep coming during the election: the publisher retries until acked.
        more = asyncio.gather(*(publisher.submit(f"order-{i}") for i in range(10, 20)))
        await minijs_server.clock.advance_async(10)          # a new leader is elected
        await more
        await worker.wait_until(lambda w: len(w.processed) == 20)
        # An order whose ack went unconfirmed in the crash may come back once ack_wait passes.
        await minijs_server.clock.advance_async(ACK_WAIT + 1)
        await asyncio.sleep(0.2)

        assert sorted(worker.processed) == sorted(publisher.acked)   # nothing acked is lost
        info = await js.stream_info(STREAM)
        assert info.state.messages == 20                             # and nothing stored twice
        assert info.cluster.leader != leader
        redelivered = [o for o, n in worker.deliveries.items() if n > 1]
        assert len(redelivered) <= 1   # at most the one in flight when the node died

        await asyncio.to_thread(minijs_server.node(leader).restart)
    finally:
        await worker.stop()
        await nc.close()
