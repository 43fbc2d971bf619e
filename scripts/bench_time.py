#!/usr/bin/env python3
"""The example suite on minijs (virtual time) and on nats-server (real time), side by side.

    python scripts/bench_time.py [--runs N] [--no-warmup] [--per-test] [PATH ...] [-- PYTEST_ARGS ...]

Runs the same tests (``examples/`` by default) twice per run, as subprocesses:
``pytest PATH`` (minijs: ``clock.advance()`` moves virtual time at once; the ``scheduler``
example runs the test's event loop on the server's time, ``loop_clock=True``, so its sleeps
and client timeouts take no real time either) and ``pytest PATH --minijs-target=nats-server``
(the real server: everything waits in real time). Both runs must pass the same tests with
nothing skipped or failed, or the script stops with the pytest output and exit status 1.

What is measured, per target (min and median over ``--runs``, default 3):

* **sum of test times**: the suite's own time, from ``--junitxml``: each test's setup + call +
  teardown (``junit_duration_report=total``), summed. Server start and stop are in it (the
  fixtures start a fresh server per test); interpreter start-up, imports and collection are
  not. This is the figure the goals are about: minijs at least 100x faster on the whole
  suite, and at least 1,000x on the ``scheduler`` example (``GOALS_BY_EXAMPLE``).
* **pytest session**: pytest's own session duration (collection included).
* **whole process**: wall time of the ``python -m pytest`` process, start-up included.

Warm-up (on unless ``--no-warmup``): before the first test, each pytest process starts one
server of its target, connects a nats-py client and uses a stream and a consumer, then stops
it, so lazily imported modules (minijs loads its JetStream modules on the first start) and a
cold nats-server binary are not billed to whichever test happens to run first. It is the same
for both targets and shows up only in the whole-process time.

The ratio column is nats-server's figure over minijs's (min over min, median over median);
runs alternate between the targets. minijs's figures are CPU-bound and move with the machine's
load; nats-server's are dominated by the real waiting.

The table also breaks the sum of test times down by example folder (medians); ``--per-test``
adds every test's median. Arguments after ``--`` go to both pytest runs (e.g. ``-- -k kv``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 100.0
#: Examples with a goal of their own (nats-server's sum of test times over minijs's).
GOALS_BY_EXAMPLE = {"scheduler": 1000.0}
TARGETS = [
    ("minijs", "minijs (virtual clock)", []),
    ("nats-server", "nats-server (real time)", ["--minijs-target=nats-server"]),
]


# ---------------------------------------------------------------------- warm-up plugin
# Loaded into the pytest subprocess with ``-p bench_time`` (this file, importable by name).

def pytest_sessionstart(session) -> None:  # pragma: no cover - runs inside pytest
    import asyncio

    import nats
    from nats.js.api import ConsumerConfig

    from minijs.testing.pytest_plugin import _start, _stop

    server = _start(session.config, {"clock": "virtual"})

    async def use() -> None:
        nc = await nats.connect(server.client_url)
        js = nc.jetstream()
        await js.add_stream(name="WARMUP", subjects=["warmup.>"])
        await js.publish("warmup.1", b"x")
        await js.add_consumer("WARMUP", ConsumerConfig(durable_name="w"))
        sub = await js.pull_subscribe_bind("w", stream="WARMUP")
        for msg in await sub.fetch(1, timeout=5):
            await msg.ack_sync()
        await js.delete_stream("WARMUP")
        await nc.close()

    try:
        asyncio.run(use())
    finally:
        _stop(server)


# ---------------------------------------------------------------------- running the suite

@dataclass
class Run:
    test_times: dict[str, float]   # test id -> setup + call + teardown
    session: float
    wall: float
    outcome: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.test_times.values())


def run_suite(paths: list[str], target_args: list[str], pytest_args: list[str],
              warmup: bool) -> tuple[Run, subprocess.CompletedProcess]:
    with tempfile.TemporaryDirectory(prefix="bench-time-") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths,
               f"--junitxml={junit}", "-o", "junit_duration_report=total", *target_args,
               *pytest_args]
        env = dict(os.environ)
        env.pop("MINIJS_TARGET", None)
        if warmup:
            cmd += ["-p", "bench_time"]
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(Path(__file__).resolve().parent), env.get("PYTHONPATH")) if p)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if not junit.exists():
            return Run({}, 0.0, wall), proc
        root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    times: dict[str, float] = {}
    for case in suite.iter("testcase"):
        times[f"{case.get('classname')}.{case.get('name')}"] = float(case.get("time", 0))
    outcome = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    return Run(times, float(suite.get("time", 0)), wall, outcome), proc


def check(name: str, run: Run, proc: subprocess.CompletedProcess) -> None:
    o = run.outcome
    if proc.returncode != 0 or not o or o["failures"] or o["errors"] or o["skipped"]:
        sys.stderr.write(f"\n{name}: the suite did not pass cleanly (exit {proc.returncode}, "
                         f"{o}); pytest said:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}\n")
        sys.exit(1)


# ---------------------------------------------------------------------- reporting

def fmt_s(values: list[float]) -> str:
    return f"{min(values):8.3f} / {statistics.median(values):8.3f}"


def fmt_ratio(fast: list[float], slow: list[float]) -> str:
    return (f"{min(slow) / min(fast):7.1f}x / "
            f"{statistics.median(slow) / statistics.median(fast):7.1f}x")


def folder(test_id: str) -> str:
    parts = test_id.split(".")
    return parts[1] if len(parts) > 3 and parts[0] == "examples" else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["examples"],
                        help="test paths (default: examples)")
    parser.add_argument("--runs", type=int, default=3, help="runs per target (min/median)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="no warm-up server before the first test")
    parser.add_argument("--per-test", action="store_true", help="also list every test")
    argv = sys.argv[1:]
    pytest_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, pytest_args = argv[:i], argv[i + 1:]
    args = parser.parse_args(argv)
    # The suites run from the repository root (its pyproject.toml configures pytest).
    args.paths = [str(Path(p).resolve()) if Path(p).exists() else p for p in args.paths]

    runs: dict[str, list[Run]] = {key: [] for key, _, _ in TARGETS}
    for n in range(args.runs):
        for key, label, target_args in TARGETS:
            print(f"run {n + 1}/{args.runs}: {label} ...", end=" ", flush=True)
            run, proc = run_suite(args.paths, target_args, pytest_args, args.warmup)
            check(label, run, proc)
            runs[key].append(run)
            print(f"{run.outcome['tests']} passed, tests {run.total:.3f} s, "
                  f"process {run.wall:.2f} s")

    fast, slow = runs["minijs"], runs["nats-server"]
    ids = set(fast[0].test_times)
    if any(set(r.test_times) != ids for r in fast + slow):
        sys.exit("the two targets did not run the same tests")

    print()
    shown = ' '.join(os.path.relpath(p, ROOT) if os.path.isabs(p) else p for p in args.paths)
    print(f"Example suite {shown}: {len(ids)} tests, the same tests and "
          f"assertions on both targets; {args.runs} run(s) each, figures are min / median; "
          f"warm-up {'on' if args.warmup else 'off'}.")
    print()
    w = 22
    head = f"{'':{w}} {'minijs (virtual clock)':>21}   {'nats-server (real time)':>21}   " \
           f"{'nats-server / minijs':>21}"
    print(head)
    print("-" * len(head))
    rows = [("sum of test times (s)", lambda r: r.total),
            ("pytest session (s)", lambda r: r.session),
            ("whole process (s)", lambda r: r.wall)]
    for title, get in rows:
        a = [get(r) for r in fast]
        b = [get(r) for r in slow]
        print(f"{title:{w}} {fmt_s(a):>21}   {fmt_s(b):>21}   {fmt_ratio(a, b):>21}")

    print()
    print(f"{'by example (median s)':{w}} {'minijs':>21}   {'nats-server':>21}   {'ratio':>21}")
    for name in sorted({folder(t) for t in ids}):
        a = [sum(v for t, v in r.test_times.items() if folder(t) == name) for r in fast]
        b = [sum(v for t, v in r.test_times.items() if folder(t) == name) for r in slow]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"  {name:{w - 2}} {ma:21.3f}   {mb:21.3f}   {mb / ma:20.1f}x")

    if args.per_test:
        print()
        print(f"{'by test (median s)':{w}} {'minijs':>21}   {'nats-server':>21}   {'ratio':>21}")
        for test in sorted(ids):
            ma = statistics.median(r.test_times[test] for r in fast)
            mb = statistics.median(r.test_times[test] for r in slow)
            short = test.split(".", 2)[-1] if test.startswith("examples.") else test
            print(f"  {short}\n  {'':{w - 2}} {ma:21.3f}   {mb:21.3f}   "
                  f"{mb / ma if ma else float('inf'):20.1f}x")

    ratio = statistics.median(r.total for r in slow) / statistics.median(r.total for r in fast)
    print()
    print(f"goal: minijs >= {GOAL:.0f}x faster on the sum of test times: "
          f"{'met' if ratio >= GOAL else 'NOT met'} (median ratio {ratio:.1f}x)")
    others = [f for f in {folder(t) for t in ids} if f not in GOALS_BY_EXAMPLE]
    if others and len(others) < len({folder(t) for t in ids}):
        a = statistics.median(sum(v for t, v in r.test_times.items() if folder(t) in others)
                              for r in fast)
        b = statistics.median(sum(v for t, v in r.test_times.items() if folder(t) in others)
                              for r in slow)
        print(f"      without {', '.join(sorted(GOALS_BY_EXAMPLE))}: {b / a:.1f}x "
              f"({', '.join(sorted(others))})")
    for name, goal in GOALS_BY_EXAMPLE.items():
        a = statistics.median(sum(v for t, v in r.test_times.items() if folder(t) == name)
                              for r in fast)
        b = statistics.median(sum(v for t, v in r.test_times.items() if folder(t) == name)
                              for r in slow)
        if a:
            print(f"goal: the {name} example >= {goal:,.0f}x faster: "
                  f"{'met' if b / a >= goal else 'NOT met'} (median ratio {b / a:.1f}x)")


if __name__ == "__main__":
    main()
