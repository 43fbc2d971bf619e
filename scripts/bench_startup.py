#!/usr/bin/env python3
"""How fast a server is ready for a test: minijs in-process, minijs spawned, nats-server spawned.

    python scripts/bench_startup.py [--runs 50] [--spawns 10] [--fixtures 50] [--fresh 1000]
                                    [--isolation 20] [--loop asyncio,uvloop]

In-process: ``Server(port=0)``, ``await start()``, then a TCP connect that reads the INFO line
(the moment a client can really talk to it), then ``stop()``. Spawned: from ``Popen`` until the
``Server is ready`` log line, and (as harnesses do) until the ``Listening for client
connections`` line names the port and a TCP connect there has read the INFO line; both for
``minijs``/``nats-server`` with and without ``-js``, interleaved so a busy machine hurts both
alike. Beside them, the interpreter's own floor (``python -c pass`` and ``python -S -c pass``):
no Python server can be spawned faster than that; and the asyncio floor, the least an asyncio
server in Python does (import asyncio, listen, log the listening line, write ``INFO {}`` to
each client), spawned and timed to INFO exactly as the servers are, plain and with ``-I -S``. The fixture: an in-process JetStream server,
a nats-py client, 10 memory streams created, then the client closed and the server stopped.
Fresh servers: ``--fresh`` times start, connect (read INFO), stop, summed. ``--loop NAME``
spawns ``minijs --loop NAME``; with two names the second adds rows ``minijs --loop NAME``. Prints a plain-text
table with medians, p90s, minimums and ratios.

Per-test isolation (``--isolation N`` tests per way, 0 skips it): what a harness outside
Python pays to give each test a clean server, for one small test body (a nats-py client
connects, creates a memory stream, publishes 5 messages with acks, fetches them through a
pull consumer and acks them, closes). Three ways, interleaved test by test: ``nats-server -js``
spawned per test (``Popen``, its listening line, the body, ``kill``, reap, its store removed),
``minijs -js`` spawned per test the same way, and one long-lived ``minijs -js --control``
with a ``$MINIJS.RESET`` request at the end of each test (the body's own connection sends it
before closing). Beside them, the body alone against a long-lived server of each kind (no
isolation at all), so the isolation's own cost per test is the difference.

Child interpreters inherit this environment; when ``PYTHONDONTWRITEBYTECODE`` is set they
are given a private ``PYTHONPYCACHEPREFIX`` instead (so the spawn figures are those of an
installed package with its bytecode cached, not of recompiling every module each time).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minijs import Server  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from bench import child_env  # noqa: E402

GOAL_MS = 1.0  # in-process start()
FIXTURE_GOAL_MS = 5.0  # 10 streams created and torn down
FRESH_GOAL_S = 10.0  # 1,000 fresh servers
SPAWN_GOAL_RATIO = 3.0  # minijs -js spawn -> INFO within 3x nats-server's
FLOOR_GOAL_RATIO = 1.2  # minijs -js spawn -> INFO within 1.2x the asyncio floor's

_LISTEN_RE = re.compile(rb"Listening for client connections on (\S+):(\d+)")

#: The asyncio floor: a server that imports asyncio, listens, logs nats-server's listening line
#: and writes an INFO line to each client. minijs cannot be spawned faster than this.
ASYNCIO_FLOOR = """\
import asyncio, sys
async def main():
    def hello(reader, writer):
        writer.write(b"INFO {}\\r\\n")
    server = await asyncio.start_server(hello, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"Listening for client connections on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


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


async def fixture_10_streams(runs: int) -> dict[str, list[float]]:
    """A JetStream test's fixture: server, client, 10 streams; then client and server gone."""
    import nats

    times: dict[str, list[float]] = {"total": [], "streams": [], "teardown": []}
    for i in range(runs + 3):
        t0 = time.perf_counter()
        server = Server(port=0, jetstream=True)
        await server.start()
        client = await nats.connect(server.client_url)
        js = client.jetstream()
        t1 = time.perf_counter()
        for n in range(10):
            await js.add_stream(name=f"S{n}", subjects=[f"s{n}.>"], storage="memory")
        t2 = time.perf_counter()
        await client.close()
        await server.stop()
        t3 = time.perf_counter()
        if i >= 3:
            times["total"].append((t3 - t0) * 1000)
            times["streams"].append((t2 - t1) * 1000)
            times["teardown"].append((t3 - t2) * 1000)
    return times


async def fresh_servers(count: int) -> float:
    """Seconds spent by ``count`` fresh servers: start, a client reads INFO, stop."""
    total = 0.0
    for _ in range(count):
        t0 = time.perf_counter()
        server = Server(port=0)
        await server.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        line = await reader.readline()
        assert line.startswith(b"INFO "), line
        writer.close()
        await server.stop()
        total += time.perf_counter() - t0
    return total


async def streams_on(url: str, runs: int) -> list[float]:
    """The same 10 ``add_stream`` calls against a server already running at ``url`` (then
    deleted, not timed): what the client costs."""
    import nats

    out: list[float] = []
    for i in range(runs + 3):
        client = await nats.connect(url)
        js = client.jetstream()
        t0 = time.perf_counter()
        for n in range(10):
            await js.add_stream(name=f"S{n}", subjects=[f"s{n}.>"], storage="memory")
        t1 = time.perf_counter()
        for n in range(10):
            await js.delete_stream(f"S{n}")
        await client.close()
        if i >= 3:
            out.append((t1 - t0) * 1000)
    return out


def nats_server_streams(nats_bin: str, runs: int) -> list[float]:
    store = tempfile.mkdtemp(prefix="minijs-bench-startup-")
    proc = subprocess.Popen([nats_bin, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            m = _LISTEN_RE.search(line)
            if m:
                break
        else:
            raise RuntimeError("nats-server exited before it listened")
        return asyncio.run(streams_on(f"nats://127.0.0.1:{int(m.group(2))}", runs))
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
        shutil.rmtree(store, ignore_errors=True)


def spawn_until_info(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Milliseconds from Popen until a client connected to the logged port has read INFO."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            m = _LISTEN_RE.search(line)
            if m:
                break
        else:
            raise RuntimeError(f"{argv[0]} exited before it listened")
        with socket.create_connection(("127.0.0.1", int(m.group(2)))) as sock:
            with sock.makefile("rb") as f:
                first = f.readline()
        elapsed = (time.perf_counter() - t0) * 1000
        assert first.startswith(b"INFO "), first
        return elapsed
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


#: Messages the isolation test body publishes and consumes.
BODY_MESSAGES = 5


async def test_body(url: str, reset: bool = False) -> None:
    """One small JetStream test: connect, a memory stream, 5 acked publishes, a pull consumer
    fetching and acking them; with ``reset``, ``$MINIJS.RESET`` before the client closes."""
    import nats

    nc = await nats.connect(url, allow_reconnect=False)
    try:
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"], storage="memory")
        for i in range(BODY_MESSAGES):
            ack = await js.publish(f"orders.{i}", b"order %d" % i)
            assert ack.seq == i + 1, ack
        sub = await js.pull_subscribe("orders.>", durable="worker")
        msgs = await sub.fetch(BODY_MESSAGES, timeout=5)
        assert [m.data for m in msgs] == [b"order %d" % i for i in range(BODY_MESSAGES)]
        for m in msgs:
            await m.ack()
        if reset:
            reply = await nc.request("$MINIJS.RESET", b"{}", timeout=5)
            assert json.loads(reply.data) == {"reset": True}, reply.data
    finally:
        await nc.close()


async def spawn_listening(argv: list[str], env: dict[str, str] | None
                          ) -> tuple[asyncio.subprocess.Process, int]:
    """A server process and the client port its listening line names."""
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE, env=env)
    assert proc.stderr is not None
    while True:
        line = await proc.stderr.readline()
        if not line:
            await proc.wait()
            raise RuntimeError(f"{argv[0]} exited before it listened")
        m = _LISTEN_RE.search(line)
        if m:
            return proc, int(m.group(2))


async def drain(proc: asyncio.subprocess.Process) -> None:
    """Read a server's log until it ends (so its writes never block)."""
    assert proc.stderr is not None
    while await proc.stderr.read(65536):
        pass


async def spawned_test(argv: list[str], env: dict[str, str] | None) -> float:
    """Milliseconds for one test on a server spawned for it: spawn, listening line, the body,
    kill, reap, store removed."""
    store = tempfile.mkdtemp(prefix="minijs-bench-isolation-")
    t0 = time.perf_counter()
    proc, port = await spawn_listening(argv + ["-sd", store], env)
    drainer = asyncio.ensure_future(drain(proc))
    try:
        await test_body(f"nats://127.0.0.1:{port}")
    finally:
        proc.kill()
        await proc.wait()
        await drainer
        shutil.rmtree(store, ignore_errors=True)
    return (time.perf_counter() - t0) * 1000


async def isolation(tests: int, commands: dict[str, list[str]],
                    env: dict[str, str] | None) -> dict[str, list[float]]:
    """ms per test for each isolation way (see the module docstring), interleaved."""
    store = tempfile.mkdtemp(prefix="minijs-bench-isolation-")
    minijs_js = commands["minijs -js"][:-2]  # without its -sd
    long_lived = {"minijs -js --control": minijs_js + ["--control", "-sd",
                                                       os.path.join(store, "m")]}
    nats_js = commands.get("nats-server -js")
    if nats_js:
        long_lived["nats-server -js"] = nats_js[:-2] + ["-sd", os.path.join(store, "n")]
    running: dict[str, tuple[asyncio.subprocess.Process, int, asyncio.Future]] = {}
    out: dict[str, list[float]] = {}
    try:
        for name, argv in long_lived.items():
            proc, port = await spawn_listening(argv, env)
            running[name] = (proc, port, asyncio.ensure_future(drain(proc)))
        minijs_url = f"nats://127.0.0.1:{running['minijs -js --control'][1]}"
        ways: dict[str, Any] = {}
        if nats_js:
            ways["nats-server -js: spawn per test"] = lambda: spawned_test(nats_js[:-2], env)
        ways["minijs -js: spawn per test"] = lambda: spawned_test(minijs_js, env)

        async def reset_test() -> float:
            t0 = time.perf_counter()
            await test_body(minijs_url, reset=True)
            return (time.perf_counter() - t0) * 1000

        ways["minijs -js --control: one server, $MINIJS.RESET per test"] = reset_test
        for name in long_lived:
            url = f"nats://127.0.0.1:{running[name][1]}"

            async def body_only(url: str = url, name: str = name) -> float:
                t0 = time.perf_counter()
                await test_body(url)
                elapsed = (time.perf_counter() - t0) * 1000
                await _cleanup(url)  # not timed: the next body needs the names free
                return elapsed

            ways[f"{name.split()[0]}: body alone on a long-lived server (no isolation)"] = \
                body_only
        out = {name: [] for name in ways}
        for i in range(tests + 1):  # the first round warms caches; not counted
            for name, way in ways.items():
                elapsed = await way()
                if i:
                    out[name].append(elapsed)
    finally:
        for proc, _, drainer in running.values():
            proc.kill()
            await proc.wait()
            await drainer
        shutil.rmtree(store, ignore_errors=True)
    return out


async def _cleanup(url: str) -> None:
    """Delete the body's stream (what isolation would do), for the no-isolation rows."""
    import nats

    nc = await nats.connect(url, allow_reconnect=False)
    try:
        await nc.jetstream().delete_stream("ORDERS")
    finally:
        await nc.close()


def run_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def spawn_until_ready(argv: list[str], runs: int,
                      env: dict[str, str] | None = None) -> list[float]:
    """Milliseconds from Popen to the ``Server is ready`` line, ``runs`` times."""
    out: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=env)
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


def print_isolation(isolated: dict[str, list[float]]) -> None:
    """Per-test isolation medians, their ratios to nats-server's spawn, and the goal."""
    med = {name: statistics.median(values) for name, values in isolated.items()}
    reset = med["minijs -js --control: one server, $MINIJS.RESET per test"]
    spawn_minijs = med["minijs -js: spawn per test"]
    body_minijs = med["minijs: body alone on a long-lived server (no isolation)"]
    print(f"per-test isolation (medians): minijs spawn {spawn_minijs:.1f} ms, minijs reset "
          f"{reset:.1f} ms (isolation itself {reset - body_minijs:+.1f} ms over the body's "
          f"{body_minijs:.1f} ms)")
    spawn_nats = med.get("nats-server -js: spawn per test")
    if spawn_nats is None:
        return
    body_nats = med["nats-server: body alone on a long-lived server (no isolation)"]
    print(f"  nats-server spawn per test {spawn_nats:.1f} ms (isolation itself "
          f"{spawn_nats - body_nats:+.1f} ms over the body's {body_nats:.1f} ms); "
          f"ratios to it: minijs spawn {spawn_minijs / spawn_nats:.2f}x, minijs reset "
          f"{reset / spawn_nats:.2f}x")
    verdict = "met" if reset < spawn_nats else "MISSED"
    print(f"goal: a minijs reset between tests cheaper than nats-server's spawn per test: "
          f"{verdict} ({reset / spawn_nats:.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="in-process starts (default 50)")
    parser.add_argument("--spawns", type=int, default=10, help="process spawns (default 10)")
    parser.add_argument("--fixtures", type=int, default=50,
                        help="10-stream fixtures (default 50)")
    parser.add_argument("--fresh", type=int, default=1000,
                        help="fresh in-process servers (default 1000)")
    parser.add_argument("--isolation", type=int, default=20,
                        help="tests per isolation way: spawn per test vs $MINIJS.RESET "
                        "(default 20; 0 skips)")
    parser.add_argument("--loop", default="",
                        help="spawn minijs with --loop NAME (asyncio or uvloop); asyncio,uvloop "
                        "adds rows for the second (default: minijs picks its loop)")
    args = parser.parse_args()
    loops = [w.strip() for w in args.loop.split(",") if w.strip()]
    if any(loop not in ("asyncio", "uvloop") for loop in loops) or len(set(loops)) < len(loops):
        parser.error("--loop: asyncio, uvloop or asyncio,uvloop")

    inproc = asyncio.run(in_process(args.runs))
    fixture = asyncio.run(fixture_10_streams(args.fixtures))
    fresh_s = asyncio.run(fresh_servers(args.fresh)) if args.fresh else 0.0

    env = child_env()
    nats_bin = find_nats_server()
    real_streams = nats_server_streams(nats_bin, args.fixtures) if nats_bin else []
    store = tempfile.mkdtemp(prefix="minijs-bench-startup-")
    commands: dict[str, list[str]] = {}
    for i, loop in enumerate(loops or [""]):
        flag = ["--loop", loop] if loop else []
        suffix = f" --loop {loop}" if i else ""
        commands[f"minijs{suffix}"] = minijs_argv() + flag
        commands[f"minijs -js{suffix}"] = minijs_argv() + flag + [
            "-js", "-sd", os.path.join(store, f"m{i or ''}")]
    if nats_bin:
        commands["nats-server"] = [nats_bin, "-a", "127.0.0.1", "-p", "-1"]
        commands["nats-server -js"] = [nats_bin, "-a", "127.0.0.1", "-p", "-1", "-js",
                                       "-sd", os.path.join(store, "n")]
    floors = {"python -c pass": [sys.executable, "-c", "pass"],
              "python -S -c pass": [sys.executable, "-S", "-c", "pass"]}
    servers = {"python -c <asyncio server>": [sys.executable, "-c", ASYNCIO_FLOOR],
               "python -I -S -c <asyncio server>": [sys.executable, "-I", "-S", "-c",
                                                    ASYNCIO_FLOOR]}
    ready: dict[str, list[float]] = {name: [] for name in commands}
    info: dict[str, list[float]] = {name: [] for name in commands}
    floor: dict[str, list[float]] = {name: [] for name in floors}
    floor_info: dict[str, list[float]] = {name: [] for name in servers}
    run_once(minijs_argv() + ["-v"], env)  # writes the bytecode cache; not counted
    try:
        for _ in range(args.spawns):  # interleaved: load on the machine hits all alike
            for name, argv in commands.items():
                ready[name] += spawn_until_ready(argv, 1, env)
                info[name].append(spawn_until_info(argv, env))
            for name, argv in floors.items():
                floor[name].append(run_once(argv, env))
            for name, argv in servers.items():
                floor_info[name].append(spawn_until_info(argv, env))
    finally:
        shutil.rmtree(store, ignore_errors=True)
    isolated = asyncio.run(isolation(args.isolation, commands, env)) if args.isolation else {}

    rows = [
        (f"minijs in-process start() ({args.runs} runs)", inproc["start"]),
        (f"minijs in-process start() + INFO read ({args.runs} runs)", inproc["info"]),
        (f"minijs in-process stop() ({args.runs} runs)", inproc["stop"]),
        (f"fixture: -js server + client + 10 streams + teardown ({args.fixtures})",
         fixture["total"]),
        ("  of which 10 x add_stream", fixture["streams"]),
        ("  of which client close + server stop", fixture["teardown"]),
    ]
    if real_streams:
        rows.append(("  the same 10 x add_stream on nats-server", real_streams))
    for name in commands:
        rows.append((f"{name} spawn -> 'Server is ready' ({args.spawns} runs)", ready[name]))
        rows.append((f"{name} spawn -> INFO read on its port ({args.spawns} runs)", info[name]))
    for name in floors:
        rows.append((f"interpreter floor: {name} ({args.spawns} runs)", floor[name]))
    for name in servers:
        rows.append((f"asyncio floor: {name} spawn -> INFO ({args.spawns} runs)",
                     floor_info[name]))
    for name, values in isolated.items():
        rows.append((f"per test: {name} ({args.isolation})", values))
    width = max(len(name) for name, _ in rows)
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cpus"
          + (f", bytecode cache in {env['PYTHONPYCACHEPREFIX']}"
             if "PYTHONPYCACHEPREFIX" in env else "")
          + (f"; minijs rows without --loop: --loop {loops[0]}" if loops else ""))
    print(f"{'measurement':<{width}}  {'median ms':>10}  {'p90 ms':>8}  {'min ms':>8}")
    print("-" * (width + 32))
    for name, values in rows:
        print(f"{name:<{width}}  {statistics.median(values):>10.3f}  {pct(values, 90):>8.3f}  "
              f"{min(values):>8.3f}")
    print()
    start_median = statistics.median(inproc["start"])
    info_median = statistics.median(inproc["info"])
    fixture_median = statistics.median(fixture["total"])
    js_info = statistics.median(info["minijs -js"])
    py_floor = statistics.median(floor["python -c pass"])
    aio_floor = statistics.median(floor_info["python -c <asyncio server>"])
    print(f"interpreter floor (python -c pass) median: {py_floor:.1f} ms; minijs -js spawn -> "
          f"INFO above it: {js_info - py_floor:.1f} ms")
    print(f"asyncio floor (an asyncio server that only writes INFO) median: {aio_floor:.1f} ms; "
          f"minijs -js spawn -> INFO above it: {js_info - aio_floor:.1f} ms")
    if nats_bin:
        real = statistics.median(info["nats-server -js"])
        ratio = js_info / real
        print(f"minijs -js / nats-server -js, spawn -> INFO (medians): {ratio:6.1f}x "
              f"(min/min {min(info['minijs -js']) / min(info['nats-server -js']):.1f}x; "
              f"the interpreter floor alone is {py_floor / real:.1f}x, the asyncio floor "
              f"{aio_floor / real:.1f}x)")
        verdict = "met" if ratio <= SPAWN_GOAL_RATIO else "MISSED"
        print(f"goal: minijs -js spawn -> INFO within {SPAWN_GOAL_RATIO:g}x nats-server's: "
              f"{verdict}")
    else:
        print("nats-server not found: no comparison")
    ratio = js_info / aio_floor
    verdict = "met" if ratio <= FLOOR_GOAL_RATIO else "MISSED"
    print(f"goal: minijs -js spawn -> INFO within {FLOOR_GOAL_RATIO:g}x the asyncio floor: "
          f"{verdict} ({ratio:.2f}x)")
    if isolated:
        print_isolation(isolated)
    verdict = "met" if start_median < GOAL_MS else "MISSED"
    print(f"goal: in-process start() median < {GOAL_MS:g} ms: {verdict} ({start_median:.3f} ms;"
          f" to INFO {info_median:.3f} ms)")
    verdict = "met" if fixture_median < FIXTURE_GOAL_MS else "MISSED"
    print(f"goal: 10-stream fixture median < {FIXTURE_GOAL_MS:g} ms: {verdict} "
          f"({fixture_median:.3f} ms)")
    if args.fresh:
        scaled = fresh_s * 1000 / args.fresh
        verdict = "met" if scaled < FRESH_GOAL_S else "MISSED"
        print(f"goal: 1,000 fresh servers (start, INFO, stop) < {FRESH_GOAL_S:g} s: {verdict} "
              f"({args.fresh} took {fresh_s:.2f} s, {scaled:.2f} s per 1,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
