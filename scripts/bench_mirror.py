#!/usr/bin/env python3
"""A mirror following an origin under a steady publish rate, minijs beside nats-server.

For each target a server is spawned exactly as ``scripts/bench.py`` does (``-js -sd <tempdir>
-a 127.0.0.1 -p -1``); an origin stream and a mirror of it are created (file storage unless
``--storage memory``), the mirror is given time to connect, then a nats-py client publishes
``--rate`` messages per second (default 5,000) for ``--seconds`` (default 5), pipelined with
one reply inbox, every ack checked. While it publishes, STREAM.INFO of both streams is sampled
every 100 ms: how far the mirror is behind (origin last sequence minus mirror last sequence,
the mirror asked first, so an upper bound).
When the publisher stops, the mirror is polled every 5 ms until it holds the origin's last
sequence and reports ``lag`` 0; that time is the catch-up figure (goal: under 1 s). Finally the
mirror must hold exactly the published messages.

    python scripts/bench_mirror.py [--rate 5000] [--seconds 5] [--payload 128]
                                   [--storage file|memory] [--targets minijs,nats-server]
                                   [--json out.json] [-v]

Prints a Markdown table: achieved publish rate, the largest and the average distance behind
while publishing, the catch-up time after the last ack, and the server's CPU use while
publishing (utime + stime from /proc, as a share of one core).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import nats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (spawn, CPU accounting, nats-server lookup)

GOAL_CATCH_UP_S = 1.0
SAMPLE_EVERY = 0.1
POLL_EVERY = 0.005


@dataclass
class Outcome:
    target: str
    published: int = 0
    publish_rate: float = 0.0
    max_behind: int = 0
    avg_behind: float = 0.0
    catch_up_ms: float | None = None
    server_cpu_pct: float = 0.0
    error: str | None = None


async def info(nc: nats.NATS, name: str) -> dict:
    msg = await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=5)
    out = json.loads(msg.data)
    if "error" in out:
        raise RuntimeError(f"STREAM.INFO {name}: {out['error']}")
    return out


async def api(nc: nats.NATS, subject: str, body: dict) -> dict:
    msg = await nc.request(f"$JS.API.{subject}", json.dumps(body).encode(), timeout=5)
    out = json.loads(msg.data)
    if "error" in out:
        raise RuntimeError(f"{subject}: {out['error']}")
    return out


async def run(server: bench.ServerProc, args: argparse.Namespace, log) -> Outcome:
    out = Outcome(server.name)
    nc = await nats.connect(server.url)
    try:
        await api(nc, "STREAM.CREATE.ORIGIN", {"name": "ORIGIN", "subjects": ["orders.>"],
                                               "storage": args.storage})
        await api(nc, "STREAM.CREATE.MIRROR", {"name": "MIRROR", "mirror": {"name": "ORIGIN"},
                                               "storage": args.storage})
        deadline = time.monotonic() + 10
        while (await info(nc, "MIRROR"))["mirror"]["active"] < 0:
            if time.monotonic() > deadline:
                raise RuntimeError("the mirror did not connect within 10 s")
            await asyncio.sleep(0.05)

        acks = 0
        bad: list[bytes] = []
        done = asyncio.Event()
        total = int(args.rate * args.seconds)

        async def on_ack(msg) -> None:
            nonlocal acks
            if not msg.data.startswith(b'{"stream":"ORIGIN","seq":'):
                bad.append(msg.data)
            acks += 1
            if acks == total:
                done.set()

        inbox = nc.new_inbox()
        await nc.subscribe(inbox, cb=on_ack)
        payload = b"x" * args.payload
        behind: list[int] = []

        async def sampler() -> None:
            while not done.is_set():
                # mirror first: the distance is an upper bound (the origin may have grown
                # between the two requests)
                m, o = await info(nc, "MIRROR"), await info(nc, "ORIGIN")
                behind.append(o["state"]["last_seq"] - m["state"]["last_seq"])
                await asyncio.sleep(SAMPLE_EVERY)

        sampling = asyncio.create_task(sampler())
        cpu0 = bench.proc_cpu_seconds(server.pid)
        t0 = time.monotonic()
        tick = 0.01
        per_tick = max(1, round(args.rate * tick))
        sent = 0
        next_at = t0
        while sent < total:
            n = min(per_tick, total - sent)
            for _ in range(n):
                await nc.publish("orders.new", payload, reply=inbox)
            sent += n
            next_at += tick
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                await nc.flush()
        await asyncio.wait_for(done.wait(), args.timeout)
        t1 = time.monotonic()
        cpu1 = bench.proc_cpu_seconds(server.pid)
        await sampling
        if bad:
            raise RuntimeError(f"{len(bad)} bad acks, first {bad[0]!r}")
        last = (await info(nc, "ORIGIN"))["state"]["last_seq"]
        while True:
            m = await info(nc, "MIRROR")
            if m["state"]["last_seq"] == last and m["mirror"]["lag"] == 0:
                break
            if time.monotonic() - t1 > args.timeout:
                raise RuntimeError(f"the mirror did not catch up within {args.timeout} s")
            await asyncio.sleep(POLL_EVERY)
        t2 = time.monotonic()
        if m["state"]["messages"] != total:
            raise RuntimeError(f"the mirror holds {m['state']['messages']} of {total} messages")
        out.published = total
        out.publish_rate = total / (t1 - t0)
        out.max_behind = max(behind) if behind else 0
        out.avg_behind = sum(behind) / len(behind) if behind else 0.0
        out.catch_up_ms = (t2 - t1) * 1000
        out.server_cpu_pct = (cpu1 - cpu0) / (t1 - t0) * 100
        log(f"{server.name}: {out}")
    finally:
        await nc.close()
    return out


def table(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    head = ["target", "published", "publish msg/s", "max behind", "avg behind",
            "catch-up after stop", "server CPU"]
    rows = []
    for o in outcomes:
        if o.error:
            rows.append([o.target, "error: " + o.error, "", "", "", "", ""])
            continue
        ok = "ok" if o.catch_up_ms is not None and o.catch_up_ms <= GOAL_CATCH_UP_S * 1000 else "MISSED"
        rows.append([o.target, f"{o.published:,}", f"{o.publish_rate:,.0f}", f"{o.max_behind:,}",
                     f"{o.avg_behind:,.1f}", f"{o.catch_up_ms:,.0f} ms ({ok})",
                     f"{o.server_cpu_pct:.0f}%"])
    lines = [f"Mirror following an origin at {args.rate:,} msg/s for {args.seconds:g} s, "
             f"{args.payload} B payloads, {args.storage} storage (goal: caught up within "
             f"{GOAL_CATCH_UP_S:g} s of the last ack)", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=5000, help="publishes per second (5000)")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long to publish (5)")
    parser.add_argument("--payload", type=int, default=128, help="payload bytes (128)")
    parser.add_argument("--storage", choices=("file", "memory"), default="file")
    parser.add_argument("--targets", default=",".join(bench.TARGETS))
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if set(args.targets) - set(bench.TARGETS) or args.rate <= 0 or args.seconds <= 0:
        parser.error("bad --targets, --rate or --seconds")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def log(text: str) -> None:
        if args.verbose:
            print(text, file=sys.stderr)

    commands = {"minijs": [sys.executable, "-m", "minijs"], "nats-server": [bench.find_nats_server()]}
    outcomes = []
    for target in args.targets:
        cmd = commands[target]
        if cmd[0] is None:
            outcomes.append(Outcome(target, error="nats-server not found"))
            continue
        server = bench.spawn(target, cmd)
        try:
            outcomes.append(asyncio.run(run(server, args, log)))
        except Exception as exc:  # keep going with the other target
            outcomes.append(Outcome(target, error=str(exc)))
        finally:
            server.stop()
    print(table(outcomes, args))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2))
    return 0 if all(o.error is None for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
