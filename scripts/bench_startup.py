#!/usr/bin/env python3
"""How fast a server is ready for a test: minijs in-process, minijs spawned, nats-server spawned.

    python scripts/bench_startup.py [--runs 50] [--spawns 10]

In-process: ``Server(port=0)``, ``await start()``, then a TCP connect that reads the INFO line
(the moment a client can really talk to it), then ``stop()``. Spawned: from ``Popen`` until the
``Server is ready`` log line. Prints a plain-text table with medians, p90s and ratios. The goal
is an in-process median under 5 ms.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minijs import Server  # noqa: E402

GOAL_MS = 5.0


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of values."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def in_process(runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"start": [], "info": [], "stop": []}
    for i in range(runs + 3):  # the first few warm caches; not counted
        t0 = time.perf_counter()
        server = Server(port=0)
        await server.start()
        t1 = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        line = await reader.readline()
        t2 = time.perf_counter()
        assert line.startswith(b"INFO "), line
        writer.close()
        t3 = time.perf_counter()
        await server.stop()
        t4 = time.perf_counter()
        if i >= 3:
            times["start"].append((t1 - t0) * 1000)
            times["info"].append((t2 - t0) * 1000)
            times["stop"].append((t4 - t3) * 1000)
    return times


def spawn_until_ready(argv: list[str], runs: int) -> list[float]:
    """Milliseconds from Popen to the ``Server is ready`` line, ``runs`` times."""
    out: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if "Server is ready" in line:
                    out.append((time.perf_counter() - t0) * 1000)
                    break
            else:
                raise RuntimeError(f"{argv[0]} exited before it was ready")
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    return out


def find_nats_server() -> str | None:
    candidate = Path(sys.executable).parent / "nats-server"
    return str(candidate) if candidate.exists() else shutil.which("nats-server")


def minijs_argv() -> list[str]:
    script = Path(sys.executable).parent / "minijs"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "minijs"]
    return base + ["-a", "127.0.0.1", "-p", "-1"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="in-process starts (default 50)")
    parser.add_argument("--spawns", type=int, default=10, help="process spawns (default 10)")
    args = parser.parse_args()

    inproc = asyncio.run(in_process(args.runs))
    cli = spawn_until_ready(minijs_argv(), args.spawns)
    nats_bin = find_nats_server()
    real = spawn_until_ready([nats_bin, "-a", "127.0.0.1", "-p", "-1"], args.spawns) \
        if nats_bin else []

    rows = [
        (f"minijs in-process start() ({args.runs} runs)", inproc["start"]),
        (f"minijs in-process start() + INFO read ({args.runs} runs)", inproc["info"]),
        (f"minijs in-process stop() ({args.runs} runs)", inproc["stop"]),
        (f"minijs CLI spawn -> 'Server is ready' ({args.spawns} runs)", cli),
    ]
    if real:
        rows.append((f"nats-server spawn -> 'Server is ready' ({args.spawns} runs)", real))
    width = max(len(name) for name, _ in rows)
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cpus")
    print(f"{'measurement':<{width}}  {'median ms':>10}  {'p90 ms':>8}  {'min ms':>8}")
    print("-" * (width + 32))
    for name, values in rows:
        print(f"{name:<{width}}  {statistics.median(values):>10.3f}  {pct(values, 90):>8.3f}  "
              f"{min(values):>8.3f}")
    print()
    info_median = statistics.median(inproc["info"])
    cli_median = statistics.median(cli)
    if real:
        real_median = statistics.median(real)
        print(f"nats-server spawn / minijs in-process (to INFO): {real_median / info_median:8.1f}x")
        print(f"minijs CLI spawn / nats-server spawn:            {cli_median / real_median:8.1f}x")
    else:
        print("nats-server not found: no comparison")
    print(f"minijs CLI spawn / minijs in-process (to INFO):  {cli_median / info_median:8.1f}x")
    verdict = "met" if info_median < GOAL_MS else "MISSED"
    print(f"goal: in-process start to INFO median < {GOAL_MS:g} ms: {verdict} "
          f"({info_median:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
