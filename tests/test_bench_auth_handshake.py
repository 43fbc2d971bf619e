"""scripts/bench_auth_handshake.py runs its three logins against a server and prints its table
(figures are measured by running it, never asserted here)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_bench_logs_in_with_each_scheme():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_auth_handshake.py"),
                           "--count", "3", "--rounds", "1", "--targets", "minijs"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("|")[1].strip() for line in proc.stdout.splitlines()[2:]]
    assert rows == ["password", "nkey", "jwt"]
