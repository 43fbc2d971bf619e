"""The pytest plugin's time and seed options, run as a user runs them (pytest in a subprocess):
``--minijs-seed`` reruns a test with the same server-side choices, a failure names the seed,
and on ``--minijs-target=nats-server`` an advance over ``--minijs-real-time-limit`` skips with
a reason naming it while ``clock="auto"``/``loop_clock`` warn that real time is used."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CHOICES = '''
import json, os
import nats
import pytest
from nats.js.api import ConsumerConfig

@pytest.mark.minijs(clock="auto", loop_clock=True)
async def test_choices(minijs_async_server):
    nc = await nats.connect(minijs_async_server.client_url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s"], storage="memory")
    info = await js.add_consumer("S", ConsumerConfig(deliver_subject="d"))
    got = []
    for name in "abc":
        async def cb(msg, name=name):
            got.append(name)
        await nc.subscribe("q", queue="g", cb=cb)
    for _ in range(20):
        await nc.publish("q", b"")
    await nc.flush()
    while len(got) < 20:
        await nc.flush()
    with open(os.environ["CHOICES_OUT"], "a") as f:
        f.write(json.dumps([minijs_async_server.server_id, info.name, got]) + "\\n")
    await nc.close()

def test_thread_server(minijs_server):
    with open(os.environ["CHOICES_OUT"], "a") as f:
        f.write(json.dumps([minijs_server.server.server_id]) + "\\n")

def test_fails(minijs_server):
    assert minijs_server.server.server_id == "not this one"
'''

REAL_TIME = '''
import pytest

@pytest.mark.minijs(clock="virtual")
def test_long_advance(minijs_server):
    minijs_server.clock.advance(25 * 3600)

@pytest.mark.minijs(clock="virtual")
def test_short_advance(minijs_server):
    minijs_server.clock.advance(0.2)

@pytest.mark.minijs(clock="auto", loop_clock=True)
async def test_loop_clock_on_nats_server(minijs_async_server):
    await minijs_async_server.clock.advance_async(0.1)
'''


def _pytest(tmp_path: Path, name: str, code: str, *args: str, env: dict | None = None
            ) -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_text(code)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
           "-rs", str(path), *args]
    import os

    full_env = {**os.environ, **(env or {})}
    full_env.pop("MINIJS_TARGET", None)
    return subprocess.run(cmd, cwd=tmp_path, env=full_env, capture_output=True, text=True,
                          timeout=300)


def test_same_seed_same_choices_and_a_failure_names_the_seed(tmp_path: Path) -> None:
    runs = []
    for n in range(3):
        out = tmp_path / f"choices{n}.jsonl"
        seed = ["--minijs-seed", "4242"] if n < 2 else ["--minijs-seed", "7"]
        proc = _pytest(tmp_path, "test_choices.py", CHOICES, *seed,
                       env={"CHOICES_OUT": str(out)})
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "1 failed, 2 passed" in proc.stdout
        seed_value = seed[1]
        assert f"pytest 'test_choices.py::test_fails' --minijs-seed {seed_value}" in proc.stdout
        runs.append(out.read_text())
    assert runs[0] == runs[1]  # server ids, consumer name, queue picks: all the same
    assert runs[0] != runs[2]
    # Rerunning one test alone with the seed gives it the same choices as in the full run.
    alone = tmp_path / "alone.jsonl"
    _pytest(tmp_path, "test_choices.py", CHOICES, "--minijs-seed", "4242", "-k",
            "thread_server", env={"CHOICES_OUT": str(alone)})
    assert alone.read_text().strip() == runs[0].strip().splitlines()[1]


def test_without_a_seed_the_failure_prints_the_one_drawn(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "test_choices.py", CHOICES, "-k", "fails",
                   env={"CHOICES_OUT": str(tmp_path / "x")})
    m = re.search(r"--minijs-seed (\d+)", proc.stdout)
    assert m, proc.stdout[-3000:]
    assert "minijs seed" in proc.stdout


def test_real_time_limit_on_nats_server(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "test_real.py", REAL_TIME, "--minijs-target=nats-server",
                   "-W", "default")
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert "2 passed, 1 skipped" in out, out[-3000:]
    assert ("clock.advance(90000) would wait 25 h of real time on nats-server, over "
            "--minijs-real-time-limit=60 s") in out
    assert "MinijsRealTimeWarning" in out and "loop_clock=True: nats-server runs in real time" \
        in out
    raised = _pytest(tmp_path, "test_real.py", REAL_TIME, "--minijs-target=nats-server",
                     "--minijs-real-time-limit=100000", "-k", "short")
    assert "1 passed" in raised.stdout, raised.stdout[-3000:]
