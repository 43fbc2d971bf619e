"""Start the `minijs` command many times back to back, as a client's test harness does, and
check that every start comes up.

Each start uses what harnesses use: `-js`, a random port (`-p -1`), `--ports_file_dir`, and on
every other start a store directory shared with the previous server (`-sd`), which is told to
stop (SIGTERM) while the next one is starting. A start counts as good when `Server is ready` is
logged, its ports file names the port, and a client gets INFO from it.

    python scripts/startup_soak.py --count 1000      # prints starts, failures, ms per start

The test suite runs the same loop with a smaller count (tests/test_startup.py).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

_LISTEN = re.compile(r"Listening for client connections on \S+:(\d+)")


@dataclass
class SoakResult:
    starts: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ms_per_start(self) -> float:
        return self.seconds / max(self.starts, 1) * 1000


def _command() -> list[str]:
    script = Path(sys.executable).parent / "minijs"
    return [str(script)] if script.exists() else [sys.executable, "-m", "minijs"]


def _check(proc: subprocess.Popen[str], ports_dir: str, timeout: float) -> str | None:
    """None when the server came up properly, else what went wrong (with its log)."""
    lines: list[str] = []
    port = None
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        m = _LISTEN.search(line)
        if m:
            port = int(m.group(1))
        if "Server is ready" in line:
            break
        if time.monotonic() > deadline:
            break
    else:
        proc.wait(5)
        return f"exited with {proc.returncode} before ready:\n" + "".join(lines)
    if port is None or not any("Server is ready" in ln for ln in lines):
        return "no ready line:\n" + "".join(lines)
    files = [p for p in os.listdir(ports_dir) if p.endswith(f"_{proc.pid}.ports")]
    if len(files) != 1:
        return f"ports file missing for pid {proc.pid}"
    with open(os.path.join(ports_dir, files[0]), encoding="utf-8") as f:
        urls = json.load(f)["nats"]
    if f"nats://127.0.0.1:{port}" not in urls:
        return f"ports file {urls} does not name port {port}"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        if not sock.recv(4096).startswith(b"INFO "):
            return "no INFO from the server"
    return None


def soak(count: int, timeout: float = 20.0) -> SoakResult:
    result = SoakResult()
    base = tempfile.mkdtemp(prefix="minijs-soak-")
    store = os.path.join(base, "store")
    previous: subprocess.Popen[str] | None = None
    t0 = time.monotonic()
    try:
        for i in range(count):
            args = _command() + ["-js", "-a", "127.0.0.1", "-p", "-1", "--ports_file_dir", base]
            if i % 2 == 0:
                args += ["-sd", store]
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            if previous is not None:
                previous.terminate()  # the previous server shuts down while this one starts
            problem = _check(proc, base, timeout)
            result.starts += 1
            if problem is not None:
                result.failures.append(f"start {i}: {problem}")
            if previous is not None:
                previous.wait(10)
                if previous.stderr is not None:
                    previous.stderr.close()
            previous = proc
    finally:
        if previous is not None:
            previous.terminate()
            previous.wait(10)
            if previous.stderr is not None:
                previous.stderr.close()
        result.seconds = time.monotonic() - t0
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    res = soak(args.count)
    print(f"{res.starts} starts, {len(res.failures)} failed, {res.ms_per_start:.0f} ms per start")
    for failure in res.failures[:5]:
        print(failure)
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
