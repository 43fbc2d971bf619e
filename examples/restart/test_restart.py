"""The fulfilment worker keeps going through a server restart: every order is handled and acked
exactly once, nothing is lost (file storage, durable consumer).

``minijs_server.restart()`` stops the server and starts it again on the same port with the same
store (on nats-server: SIGTERM and a new process). The tests use connections that try to
reconnect every 10 ms (``app.connect``) rather than the ``nats_client`` fixture, whose
clients wait 2 s between attempts.
"""
import asyncio

import pytest

from .app import CONSUMER, STREAM, Worker, connect, place_order, setup

pytestmark = pytest.mark.minijs(clock="virtual")

ORDERS = [f"order-{i}" for i in range(1, 11)]
RECONNECT_WAIT = 0.01   # the server is back within milliseconds (nats-server: ~0.1 s)


class Publisher:
    """The shop front: places orders on its own connection and knows when it reconnected."""

    async def open(self, url: str) -> "Publisher":
        self.reconnected = asyncio.Event()

        async def on_reconnected():
            self.reconnected.set()

        self.nc = await connect(url, reconnect_time_wait=RECONNECT_WAIT,
                                reconnected_cb=on_reconnected)
        self.js = self.nc.jetstream()
        return self


@pytest.fixture
async def shop(minijs_server):
    publisher = await Publisher().open(minijs_server.client_url)
    await setup(publisher.js)
    yield publisher
    await publisher.nc.close()


async def restart(server) -> None:
    await asyncio.to_thread(server.restart)


async def check_all_done_exactly_once(js, worker) -> None:
    assert sorted(worker.acked) == sorted(ORDERS)          # nothing lost...
    assert len(worker.acked) == len(set(worker.acked))     # ...nothing acked twice
    assert worker.handled == {order: 1 for order in ORDERS}
    assert (await js.stream_info(STREAM)).state.messages == 0   # work queue drained
    info = await js.consumer_info(STREAM, CONSUMER)
    assert (info.num_pending, info.num_ack_pending, info.num_redelivered) == (0, 0, 0)
    assert info.ack_floor.stream_seq == len(ORDERS)


async def test_restart_with_an_order_in_flight(minijs_server, shop):
    for order in ORDERS:
        await place_order(shop.js, order, qty=1)

    in_flight = asyncio.Event()
    release = asyncio.Event()

    async def fulfil(order):
        if order["id"] == "order-5":
            in_flight.set()
            await release.wait()       # order-5 is being worked on while the server restarts

    worker = Worker(minijs_server.client_url, fulfil, reconnect_time_wait=RECONNECT_WAIT)
    await worker.start()
    try:
        await asyncio.wait_for(in_flight.wait(), 10)
        assert worker.acked == ORDERS[:4]

        await restart(minijs_server)
        release.set()                  # finishes order-5, acks it on the new server

        await worker.wait_until(lambda w: len(w.acked) == len(ORDERS))
    finally:
        await worker.stop()

    assert worker.reconnects == 1
    assert worker.acked == ORDERS                          # and in order
    await check_all_done_exactly_once(shop.js, worker)


async def test_restart_while_idle_then_new_orders_flow(minijs_server, shop):
    worker = Worker(minijs_server.client_url, lambda order: asyncio.sleep(0),
                    reconnect_time_wait=RECONNECT_WAIT)
    await worker.start()
    try:
        for order in ORDERS[:3]:
            await place_order(shop.js, order)
        await worker.wait_until(lambda w: len(w.acked) == 3)

        # The worker's pull request is waiting on the server when it goes away.
        await restart(minijs_server)
        await worker.wait_until(lambda w: w.reconnects == 1)
        await asyncio.wait_for(shop.reconnected.wait(), 10)

        for order in ORDERS[3:]:
            await place_order(shop.js, order)
        await worker.wait_until(lambda w: len(w.acked) == len(ORDERS))
    finally:
        await worker.stop()

    assert worker.acked == ORDERS
    await check_all_done_exactly_once(shop.js, worker)


async def test_orders_placed_before_a_restart_are_not_lost(minijs_server, shop):
    for order in ORDERS:
        await place_order(shop.js, order)

    await restart(minijs_server)                 # before any worker ran
    await asyncio.wait_for(shop.reconnected.wait(), 10)

    worker = Worker(minijs_server.client_url, lambda order: asyncio.sleep(0),
                    reconnect_time_wait=RECONNECT_WAIT)
    await worker.start()
    try:
        await worker.wait_until(lambda w: len(w.acked) == len(ORDERS))
    finally:
        await worker.stop()

    assert worker.acked == ORDERS
    await check_all_done_exactly_once(shop.js, worker)
