"""Clusters, side by side with nats-server: failover time, start-up, CPU per replicated publish.

* **failover**: time from the crash of the node leading an R3 stream to the first publish it
  acknowledges again. minijs: its in-process cluster on the virtual clock, the test moving
  time past the election timeout (real time measured, and the virtual time it needed);
  nats-server: three processes joined by routes on loopback, ``kill -9`` of the leader, real
  time.
* **start**: ``Server(cluster_size=3)`` ready (listening, linked, meta leader elected), in
  process; and nats-server's three processes to a meta leader.
* **publish CPU**: server CPU per acknowledged publish (sync, one at a time) into an R1 and an
  R3 stream: the ``minijs --cluster_size 3`` process against the sum of nats-server's three.

``python scripts/bench_cluster.py [--rounds 5] [--count 2000]``; prints a table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nats  # noqa: E402
from nats.js.api import StreamConfig  # noqa: E402


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


async def _publish_until_acked(js, subject: str, deadline: float) -> float:
    while time.monotonic() < deadline:
        try:
            await js.publish(subject, b"x", timeout=0.25)
            return time.monotonic()
        except Exception:
            await asyncio.sleep(0.01)
    raise RuntimeError("no publish acknowledged")


# ---------------------------------------------------------------------- minijs

async def minijs_failover() -> tuple[float, float]:
    from minijs import Server

    async with Server(cluster_size=3, jetstream=True, clock="virtual", port=0) as cluster:
        nc = await nats.connect(servers=cluster.client_urls, reconnect_time_wait=0.01)
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name="F", subjects=["f"], num_replicas=3))
        await js.publish("f", b"x")
        start = time.monotonic()
        await cluster.node(info.cluster.leader).crash()
        virtual = 0.0
        done = asyncio.ensure_future(_publish_until_acked(js, "f", start + 30))
        while not done.done():
            await cluster.clock.advance_async(0.5)
            virtual += 0.5
            await asyncio.sleep(0.01)
        end = await done
        await nc.close()
        return end - start, virtual


async def minijs_start() -> float:
    from minijs import Server

    cluster = Server(cluster_size=3, jetstream=True, clock="virtual", port=0)
    start = time.perf_counter()
    await cluster.start()
    took = time.perf_counter() - start
    await cluster.stop()
    return took


async def minijs_publish_cpu(count: int, replicas: int) -> float:
    """Server CPU per publish of a ``minijs --cluster_size 3`` process (all three nodes)."""
    import re
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "minijs", "-js", "--cluster_size", "3",
                             "-a", "127.0.0.1", "-p", "-1"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    ports = []
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(rb"Listening for client connections on \S+:(\d+)", line)
        if m:
            ports.append(int(m.group(1)))
        if b"Server is ready" in line:
            break
    try:
        nc = await nats.connect(f"nats://127.0.0.1:{ports[0]}")
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="P", subjects=["p"], num_replicas=replicas))
        for _ in range(100):
            await js.publish("p", b"x" * 128)
        before = _proc_cpu(proc.pid)
        for _ in range(count):
            await js.publish("p", b"x" * 128)
        used = _proc_cpu(proc.pid) - before
        await nc.close()
        return used / count * 1e6
    finally:
        proc.terminate()
        proc.wait(10)


# ---------------------------------------------------------------------- nats-server

def nats_cluster():
    from minijs.testing.natsserver import NatsServerCluster

    return NatsServerCluster(3)


async def nats_failover() -> float:
    cluster = nats_cluster().start()
    try:
        nc = await nats.connect(servers=cluster.client_urls, reconnect_time_wait=0.01)
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name="F", subjects=["f"], num_replicas=3))
        await js.publish("f", b"x")
        start = time.monotonic()
        await asyncio.to_thread(cluster.node(info.cluster.leader).crash)
        end = await _publish_until_acked(js, "f", start + 30)
        await nc.close()
        return end - start
    finally:
        cluster.close()


def nats_start() -> float:
    cluster = nats_cluster()
    start = time.perf_counter()
    cluster.start()
    took = time.perf_counter() - start
    cluster.close()
    return took


async def nats_publish_cpu(count: int, replicas: int) -> float:
    cluster = nats_cluster().start()
    try:
        nc = await nats.connect(cluster.client_url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="P", subjects=["p"], num_replicas=replicas))
        for _ in range(100):
            await js.publish("p", b"x" * 128)
        pids = [n.proc.pid for n in cluster.nodes]
        before = sum(_proc_cpu(p) for p in pids)
        for _ in range(count):
            await js.publish("p", b"x" * 128)
        used = sum(_proc_cpu(p) for p in pids) - before
        await nc.close()
        return used / count * 1e6
    finally:
        cluster.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    med = statistics.median
    out: dict[str, float] = {}
    fo = [await minijs_failover() for _ in range(args.rounds)]
    out["minijs_failover_s"] = med(f[0] for f in fo)
    out["minijs_failover_virtual_s"] = med(f[1] for f in fo)
    out["nats_failover_s"] = med([await nats_failover() for _ in range(args.rounds)])
    out["minijs_start_ms"] = med([await minijs_start() for _ in range(args.rounds * 3)]) * 1e3
    out["nats_start_ms"] = med([nats_start() for _ in range(args.rounds)]) * 1e3
    for r in (1, 3):
        out[f"minijs_r{r}_us"] = med([await minijs_publish_cpu(args.count, r)
                                      for _ in range(args.rounds)])
        out[f"nats_r{r}_us"] = med([await nats_publish_cpu(args.count, r)
                                    for _ in range(args.rounds)])
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"failover, crash of the stream leader to the next ack (median of {args.rounds}):")
    print(f"  minijs (virtual clock)  {out['minijs_failover_s']:.3f} s real "
          f"({out['minijs_failover_virtual_s']:.1f} s of virtual time)")
    print(f"  nats-server (3 procs)   {out['nats_failover_s']:.3f} s real  "
          f"-> {out['nats_failover_s'] / out['minijs_failover_s']:.0f}x")
    print("start of a 3-node cluster to a meta leader:")
    print(f"  minijs in process       {out['minijs_start_ms']:.1f} ms")
    print(f"  nats-server processes   {out['nats_start_ms']:.1f} ms")
    print("server CPU per acknowledged publish, 128 B, one at a time (minijs: its process,"
          " three nodes; nats-server: its three processes):")
    for r in (1, 3):
        print(f"  R{r}: minijs {out[f'minijs_r{r}_us']:.0f} us, nats-server "
              f"{out[f'nats_r{r}_us']:.0f} us")
    print(f"  R3/R1: minijs {out['minijs_r3_us'] / out['minijs_r1_us']:.2f}x, nats-server "
          f"{out['nats_r3_us'] / out['nats_r1_us']:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
