"""``/minijs`` on the monitoring port: the HTML it serves, and a headless Chromium loading it
against a busy server (a publisher running, pending acks, a waiting pull request, a push
consumer, fault rules, a virtual clock), checking what it shows and that it refreshes by
itself. The browser test keeps a screenshot in tests/artifacts/minijs-page.png."""
from __future__ import annotations

import asyncio
import re
import threading
import urllib.error
import urllib.request
from typing import Any, Iterator

import nats
import pytest
from nats.js.api import ConsumerConfig

from browser import chromium_page, screenshot
from minijs import ServerThread


def get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_page_without_jetstream_and_bad_queries() -> None:
    with ServerThread(http_port=-1) as srv:
        port = srv.server.monitor.port
        status, ctype, body = get(port, "/minijs")
        assert status == 200 and ctype == "text/html; charset=utf-8"
        assert body.startswith("<!doctype html>") and "<script>" in body
        assert "no streams" in body and "no fault rules" in body
        assert 'data-key="kind">wall<' in body
        assert "http" not in body.split("<body>", 1)[1].replace('href="/"', "")  # no outside
        status, _, part = get(port, "/minijs?part=state")
        assert status == 200 and "<html" not in part and part.startswith('<section id="clock">')
        for query, why in (("part=all", "unknown part 'all'"), ("refresh=soon", "give seconds"),
                           ("refresh=-1", "between 0 and 3600")):
            status, ctype, text = get(port, f"/minijs?{query}")
            assert (status, ctype) == (400, "text/plain; charset=utf-8") and why in text
        status, _, body = get(port, "/minijs?refresh=0")
        assert "refresh off" in body and "var every = 0;" in body


def test_values_are_escaped_and_accounts_shown() -> None:
    with ServerThread(jetstream=True, http_port=-1) as srv:
        async def setup() -> None:
            nc = await nats.connect(srv.client_url)
            js = nc.jetstream()
            await js.add_stream(name="ODD", subjects=["odd.<b>", "odd.&"])
            await nc.close()

        run(setup())
        srv.faults.fail_requests("odd.<b>", status=408, description="<script>")
        _, _, body = get(srv.server.monitor.port, "/minijs")
        assert "odd.&lt;b&gt;, odd.&amp;" in body
        assert "answer 408 &lt;script&gt; messages on odd.&lt;b&gt;" in body
        assert "<b>" not in body.split("<main", 1)[1]


class BusyServer:
    """A JetStream server on a virtual clock with traffic going on: a publisher thread
    (ORDERS, a message every few ms), a pull consumer holding unacked deliveries, a pull
    request waiting on an empty filter, a push consumer, a KV bucket, fault rules."""

    def __init__(self) -> None:
        self.srv = ServerThread(jetstream=True, http_port=-1, clock="virtual",
                                server_name="busy-test")
        self.stop = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.published = 0

    def start(self) -> "BusyServer":
        self.srv.start()
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._setup(), self.loop).result(30)
        self.publisher = asyncio.run_coroutine_threadsafe(self._publish(), self.loop)
        self.waiting = asyncio.run_coroutine_threadsafe(self._wait_pull(), self.loop)
        return self

    async def _setup(self) -> None:
        self.nc = await nats.connect(self.srv.client_url, name="busy-client")
        js = self.js = self.nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        await js.add_stream(name="ALERTS", subjects=["alerts.>"])
        for i in range(3):
            await js.publish(f"orders.eu.{i}", b"espresso")
        self.worker = await js.pull_subscribe("orders.eu.*", "worker",
                                              config=ConsumerConfig(ack_wait=30))
        await self.worker.fetch(3, timeout=2)  # delivered, never acked: three pending acks
        self.idle = await js.pull_subscribe("alerts.none", "idle")
        await js.add_consumer("ALERTS", ConsumerConfig(durable_name="pager",
                                                       deliver_subject="deliver.pager"))
        kv = await js.create_key_value(bucket="settings")
        await kv.put("mode", b"fast")

    async def _wait_pull(self) -> None:
        try:  # a pull request that stays waiting (expires 30 s of virtual time)
            await self.idle.fetch(5, timeout=600)
        except Exception:
            pass

    async def _publish(self) -> None:
        while not self.stop.is_set():
            await self.js.publish("orders.us.1", b"latte")
            self.published += 1
            await asyncio.sleep(0.005)

    def close(self) -> None:
        self.stop.set()
        try:
            self.publisher.result(10)
        finally:
            self.waiting.cancel()
            asyncio.run_coroutine_threadsafe(self.nc.close(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.srv.stop()


@pytest.fixture
def busy() -> Iterator[BusyServer]:
    server = BusyServer().start()
    try:
        yield server
    finally:
        server.close()


def cell(page: Any, section: str, row_text: str, column: str) -> str:
    """The text of ``column`` in the first row of table ``section`` that contains
    ``row_text``."""
    return page.evaluate(
        """([section, rowText, column]) => {
            const table = document.querySelector(`#${section} table`);
            if (!table) return null;
            const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent);
            const i = heads.indexOf(column);
            const row = [...table.querySelectorAll('tbody tr')]
                .find(tr => tr.textContent.includes(rowText));
            return row && i >= 0 ? row.children[i].textContent : null;
        }""", [section, row_text, column])


@pytest.mark.browser
def test_browser_shows_a_busy_server_and_refreshes(busy: BusyServer) -> None:
    srv = busy.srv
    srv.faults.drop_deliveries("ALERTS", "pager", count=2)  # a rule in force
    srv.faults.delay_requests("orders.late", 2)
    srv.faults.fail_requests("orders.fail", status=408)
    asyncio.run(_fire("orders.fail", srv.client_url))  # one fault injected: in the log
    url = f"http://127.0.0.1:{srv.server.monitor.port}/minijs"
    errors: list[str] = []
    with chromium_page() as page:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(url)
        assert page.title() == "minijs busy-test"
        assert page.locator("h1").inner_text() == "minijs busy-test"

        # the clock
        assert page.locator('#clock dd[data-key="kind"]').inner_text() == "virtual"
        assert page.locator('#clock dd[data-key="connections"]').inner_text() == "1"
        # streams: ORDERS growing, ALERTS, the KV bucket's stream
        first = int(cell(page, "streams", "ORDERS", "messages"))
        assert first >= 3
        assert cell(page, "streams", "ORDERS", "subjects") == "orders.>"
        assert cell(page, "streams", "KV_settings", "messages") == "1"
        assert cell(page, "streams", "ALERTS", "consumers") == "idle, pager"
        # consumers
        assert cell(page, "consumers", "worker", "kind") == "pull"
        assert cell(page, "consumers", "worker", "ack pending") == "3"
        assert cell(page, "consumers", "worker", "filter") == "orders.eu.*"
        assert cell(page, "consumers", "pager", "kind") == "push"
        assert cell(page, "consumers", "pager", "state") == "unbound"
        page.wait_for_function(  # the pull request is waiting (it may land just after load)
            "() => document.querySelector('#waiting table') !== null", timeout=5000)
        assert cell(page, "consumers", "idle", "waiting pulls") == "1"
        # pending acks: three, each delivered once, due in 30 s of virtual time
        rows = page.locator("#pending tbody tr")
        assert rows.count() == 3
        assert cell(page, "pending", "worker", "ack due") == "in 30.0 s"
        assert cell(page, "pending", "worker", "deliveries") == "1"
        # the waiting pull request
        assert cell(page, "waiting", "idle", "batch") == "5"
        assert cell(page, "waiting", "idle", "expires") == "after 10.0 min"
        assert cell(page, "waiting", "idle", "reply subject").startswith("_INBOX.")
        # fault rules and the log
        rules = page.locator("#fault-rules > table tbody tr")
        assert rules.count() == 2  # the 408 rule fired its one time and is gone
        assert "drop deliveries of ALERTS > pager (next 2)" in page.locator(
            "#fault-rules").inner_text()
        assert "delay 2s messages on orders.late" in page.locator("#fault-rules").inner_text()
        assert cell(page, "fault-log", "orders.fail", "action") == "status"
        # the cluster hook renders nothing on a single server
        assert page.locator("#cluster").count() == 0

        # refreshing by itself: virtual time moves, the publisher goes on
        srv.clock.advance(10)
        page.wait_for_function(
            """() => [...document.querySelectorAll('#pending tbody td')]
                    .some(td => td.textContent === 'in 20.0 s')""", timeout=5000)
        page.wait_for_function(
            f"""() => {{
                const row = [...document.querySelectorAll('#streams tbody tr')]
                    .find(tr => tr.children[0].textContent === 'ORDERS');
                return row && Number(row.children[3].textContent) > {first};
            }}""", timeout=5000)
        shot = screenshot(page, "minijs-page")

        # the "live" box pauses the refresh
        page.locator("#live").uncheck()
        page.wait_for_timeout(1200)  # a refresh that was in flight lands
        before = cell(page, "streams", "ORDERS", "messages")
        srv.clock.advance(5)
        page.wait_for_timeout(2500)
        assert cell(page, "streams", "ORDERS", "messages") == before
        assert cell(page, "pending", "worker", "ack due") == "in 20.0 s"
    assert errors == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


async def _fire(subject: str, url: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.request(subject, b"", timeout=2)
    except Exception:
        pass
    finally:
        await nc.close()


def test_monitor_page_is_not_in_nats_servers_index() -> None:
    """The index at / stays nats-server's; /minijs is an extra path only."""
    with ServerThread(http_port=-1) as srv:
        _, _, index = get(srv.server.monitor.port, "/")
        assert "/minijs" not in index
        assert re.search(r"href=\./varz", index)
