"""scripts/bench_startup.py runs on small inputs and prints every row it promises, the
per-test isolation ways among them (spawn per test on both servers, one minijs with
``$MINIJS.RESET`` between tests). Figures are printed, never asserted."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_startup_prints_the_isolation_ways() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_startup.py"),
                           "--runs", "1", "--spawns", "1", "--fixtures", "1", "--fresh", "0",
                           "--isolation", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for row in ("per test: minijs -js: spawn per test (1)",
                "per test: minijs -js --control: one server, $MINIJS.RESET per test (1)",
                "per test: minijs: body alone on a long-lived server (no isolation) (1)",
                "goal: minijs -js spawn -> INFO within 1.2x the asyncio floor:",
                "per-test isolation (medians): minijs spawn"):
        assert row in out, out
    if "nats-server not found" not in out:
        assert "per test: nats-server -js: spawn per test (1)" in out, out
        assert "goal: a minijs reset between tests cheaper than nats-server's spawn" in out, out
