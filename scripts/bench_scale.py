#!/usr/bin/env python3
"""Scale curves: how server CPU per operation grows with stored messages, subjects, consumers,
connections and KV keys, for minijs and nats-server in one run.

Same harness as ``scripts/bench_native.py`` (its helpers are imported): the C load generator
``scripts/loadgen/loadgen.c`` on Debian's ``libnats-dev``, built on first use; everything that
sets the scale (pre-filled messages, subjects, idle consumers, idle connections, KV keys) is
done before the load generator says ``ready``, and server CPU is read from
``/proc/<pid>/task/*/schedstat`` just before and just after the measured section. Each range
gets a fresh pair of servers.

Ranges (each point is one load generator run per server):

* ``stored``: publish (``js-pub-async``) and consume (``js-pull`` with acks) ``--count``
  messages with 1k, 100k, 1M messages already stored (memory and file; ``--stored-top`` caps it).
* ``subjects``: ``js-pub-async`` round-robin over 1, 100, 10,000 subjects with
  ``max_msgs_per_subject: 1``, every subject already at its limit (each publish replaces one).
* ``consumers``: 1, 10, 100, 1,000 consumers on one stream, pull or push, filtered on subjects
  that match nothing or unfiltered: publishing with N idle consumers, and consuming with one
  active consumer among N (``--consumers-top`` caps it).
* ``connections``: pub->sub and ``js-pub-async`` with 1, 10, 100, 1,000 idle connections
  (each with a subscription of its own) besides the measured ones.
* ``kv``: a bucket with 1k, 10k, 100k keys: put, get (round trips, over existing keys), watch
  (a watcher receiving every key's value) and keys (listing them); per key for the last two.

The growth factor of a series is its CPU per operation at the largest point over the smallest.
The issue's goal per series: minijs's growth within 2x, and not above nats-server's (with a
``--tolerance`` margin for noise, 1.25 by default, stated in the output).

    python scripts/bench_scale.py [--ranges stored,subjects,consumers,connections,kv]
                                  [--count 10000] [--rounds 1] [--stored-top 1000000]
                                  [--consumers-top 1000] [--connections-top 1000]
                                  [--kv-top 100000] [--targets minijs,nats-server]
                                  [--out scripts/output/bench_scale] [--no-install]

Output: a table on stdout; ``scale.md`` and ``scale.json`` (and ``scale.png`` when matplotlib is
importable) under ``--out`` (gitignored).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_native as bn  # noqa: E402

DEFAULT_OUT = HERE / "output" / "bench_scale"
RANGES = ("stored", "subjects", "consumers", "connections", "kv")
STORED_POINTS = (1_000, 100_000, 1_000_000)
SUBJECT_POINTS = (1, 100, 10_000)
CONSUMER_POINTS = (1, 10, 100, 1_000)
CONNECTION_POINTS = (1, 10, 100, 1_000)
KV_POINTS = (1_000, 10_000, 100_000)
SIZE = 128


@dataclass(frozen=True)
class Point:
    """One load generator run: a series of a range at one scale ``x``."""

    range: str
    series: str
    x: int
    mode: str
    count: int
    storage: str = "memory"
    flags: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.range}: {self.series} @ {self.x:,}"

    def argv(self, exe: Path, url: str, window: int) -> list[str]:
        return [str(exe), "-i", "-s", url, "-m", self.mode, "-n", str(self.count),
                "-z", str(SIZE), "-S", self.storage, "-w", str(window), *self.flags]


def capped(points: tuple[int, ...], top: int | None) -> list[int]:
    """``points`` up to ``top`` (``top`` itself added when it falls between two points)."""
    if top is None:
        return list(points)
    out = [p for p in points if p <= top]
    if top > (out[-1] if out else 0) and top < points[-1]:
        out.append(top)
    return out or [top]


def build_points(args: argparse.Namespace) -> list[Point]:
    """Every run of the selected ranges, in order."""
    n = args.count
    pts: list[Point] = []
    if "stored" in args.ranges:
        for storage in ("memory", "file"):
            for mode, what in (("js-pub-async", "publish"), ("js-pull", "consume")):
                for x in capped(STORED_POINTS, args.stored_top):
                    pts.append(Point("stored", f"{what} {storage}", x, mode, n, storage,
                                     ("-B", str(x))))
    if "subjects" in args.ranges:
        for storage in ("memory", "file"):
            for x in SUBJECT_POINTS:
                pts.append(Point("subjects", f"publish {storage} max_msgs_per_subject=1", x,
                                 "js-pub-async", n, storage,
                                 ("-J", str(x), "-L", "1", "-B", str(x))))
    if "consumers" in args.ranges:
        for kind in ("pull", "push"):
            for filtered in (False, True):
                label = f"{kind}{' filtered' if filtered else ''}"
                extra = ("-P", kind) + (("-F",) if filtered else ())
                for x in capped(CONSUMER_POINTS, args.consumers_top):
                    pts.append(Point("consumers", f"publish, N idle {label}", x, "js-pub-async",
                                     n, "memory", ("-C", str(x), *extra)))
                for x in capped(CONSUMER_POINTS, args.consumers_top):
                    # one measured consumer (unfiltered) plus N - 1 idle ones
                    pts.append(Point("consumers", f"consume 1 of N {label}", x, f"js-{kind}",
                                     n, "memory", ("-C", str(x - 1), *extra)))
    if "connections" in args.ranges:
        for mode in ("pubsub", "js-pub-async"):
            for x in capped(CONNECTION_POINTS, args.connections_top):
                pts.append(Point("connections", f"{mode}, N idle connections", x, mode,
                                 n * 2 if mode == "pubsub" else n, "memory", ("-X", str(x))))
    if "kv" in args.ranges:
        for mode in ("kv-put", "kv-get", "kv-watch", "kv-keys"):
            for x in capped(KV_POINTS, args.kv_top):
                ops = max(1, n // 4) if mode in ("kv-put", "kv-get") else x
                pts.append(Point("kv", mode.removeprefix("kv-"), x, mode, ops, "memory",
                                 ("-N", str(x))))
    return pts


def series_of(points: list[Point]) -> list[tuple[str, str, list[Point]]]:
    """(range, series, points) in first-seen order."""
    out: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        out.setdefault((p.range, p.series), []).append(p)
    return [(r, s, ps) for (r, s), ps in out.items()]


# --------------------------------------------------------------------------- running


def run_points(exe: Path, points: list[Point], args: argparse.Namespace,
               commands: dict[str, list[str]]) -> dict[str, dict[str, bn.Result]]:
    """Every point on every target; a fresh pair of servers per range."""
    results: dict[str, dict[str, bn.Result]] = {t: {} for t in commands}
    for rng in RANGES:
        todo = [p for p in points if p.range == rng]
        if not todo:
            continue
        servers = {t: bn.spawn(t, cmd) for t, cmd in commands.items()}
        try:
            for p in todo:
                rounds: dict[str, list[bn.Result]] = {t: [] for t in servers}
                for _ in range(args.rounds):
                    for t, server in servers.items():
                        if not server.alive():
                            rounds[t].append(bn.Result(error="server died"))
                            continue
                        rounds[t].append(bn.run_loadgen(p.argv(exe, server.url, args.window),
                                                        server))
                for t in servers:
                    results[t][p.key] = bn.median_result(rounds[t])
                if args.verbose:
                    print(p.key, {t: asdict(results[t][p.key]) for t in servers},
                          file=sys.stderr, flush=True)
        finally:
            for server in servers.values():
                server.stop()
    return results


# --------------------------------------------------------------------------- growth


def growth(first: bn.Result | None, last: bn.Result | None) -> float | None:
    """CPU per operation at the largest point over the smallest."""
    if (first is None or last is None or first.error or last.error
            or not first.server_cpu_us or last.server_cpu_us is None):
        return None
    return last.server_cpu_us / first.server_cpu_us


def verdict(g_minijs: float | None, g_nats: float | None, tolerance: float) -> str:
    """Whether a series meets the goal: minijs within 2x, and not above nats-server's growth
    (times ``tolerance`` for noise)."""
    if g_minijs is None:
        return "-"
    flat = g_minijs <= 2.0
    if g_nats is None:
        return "met (flat)" if flat else "NOT met (> 2x)"
    not_worse = g_minijs <= max(g_nats, 1.0) * tolerance
    if flat and not_worse:
        return "met"
    why = [w for w, bad in (("> 2x", not flat), ("grows more than nats", not not_worse)) if bad]
    return "NOT met (" + ", ".join(why) + ")"


def cell(r: bn.Result | None, what: str) -> str:
    if r is None:
        return "skipped"
    if r.error:
        return "error: " + r.error.replace("|", "/")[:40]
    return bn.fmt(r.msgs_per_s) if what == "rate" else bn.fmt(r.server_cpu_us, 1)


def points_table(points: list[Point], results: dict[str, dict[str, bn.Result]]) -> str:
    header = ["range / series", "N", "ops", "minijs msg/s", "nats msg/s", "minijs cpu us/op",
              "nats cpu us/op", "cpu ratio"]
    rows = []
    for p in points:
        ra = results.get("minijs", {}).get(p.key)
        rb = results.get("nats-server", {}).get(p.key)
        ok = ra is not None and rb is not None and not ra.error and not rb.error
        rows.append([f"{p.range}: {p.series}", f"{p.x:,}", f"{p.count:,}", cell(ra, "rate"),
                     cell(rb, "rate"), cell(ra, "cpu"), cell(rb, "cpu"),
                     bn.ratio(ra.server_cpu_us, rb.server_cpu_us) if ok else "-"])
    return bn.markdown_table(header, rows)


def growth_rows(points: list[Point], results: dict[str, dict[str, bn.Result]],
                tolerance: float) -> list[dict]:
    rows = []
    for rng, series, ps in series_of(points):
        lo, hi = ps[0], ps[-1]
        row = {"range": rng, "series": series, "from": lo.x, "to": hi.x}
        for t in ("minijs", "nats-server"):
            res = results.get(t, {})
            row[t] = growth(res.get(lo.key), res.get(hi.key))
        row["verdict"] = verdict(row["minijs"], row["nats-server"], tolerance)
        rows.append(row)
    return rows


def growth_table(rows: list[dict]) -> str:
    header = ["range / series", "from -> to", "minijs growth", "nats growth", "goal"]
    return bn.markdown_table(header, [
        [f"{r['range']}: {r['series']}", f"{r['from']:,} -> {r['to']:,}",
         bn.fmt(r["minijs"], 2) + ("x" if r["minijs"] is not None else ""),
         bn.fmt(r["nats-server"], 2) + ("x" if r["nats-server"] is not None else ""),
         r["verdict"]] for r in rows])


def write_plot(path: Path, points: list[Point],
               results: dict[str, dict[str, bn.Result]]) -> bool:
    """CPU per operation against N, one panel per series, if matplotlib is importable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = series_of(points)
    if not groups:
        return False
    cols = 4
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, (rng, series, ps) in zip(axes.flat, groups):
        for t in ("minijs", "nats-server"):
            xs = [p.x for p in ps if (r := results.get(t, {}).get(p.key)) and not r.error]
            ys = [results[t][p.key].server_cpu_us for p in ps
                  if (r := results.get(t, {}).get(p.key)) and not r.error]
            if xs:
                ax.plot(xs, ys, marker="o", label=t)
        ax.set_xscale("log")
        ax.set_title(f"{rng}: {series}", fontsize=8)
        ax.set_ylabel("server CPU us/op", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- main


def _ranges(text: str) -> list[str]:
    words = [w.strip() for w in text.split(",") if w.strip()]
    for w in words:
        if w not in RANGES:
            raise argparse.ArgumentTypeError(f"unknown range {w!r} (choose from "
                                             f"{', '.join(RANGES)})")
    return words


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranges", type=_ranges, default=list(RANGES),
                   help="comma-separated: " + ",".join(RANGES) + " (default: all)")
    p.add_argument("--count", type=int, default=10000,
                   help="measured operations per run (KV put/get: a quarter; default 10000)")
    p.add_argument("--rounds", type=int, default=1, help="runs per point; medians shown")
    p.add_argument("--window", type=int, default=256,
                   help="async publishes in flight / pull fetch batch (default 256)")
    p.add_argument("--stored-top", type=int, help="largest stored-message point (default 1M)")
    p.add_argument("--consumers-top", type=int, help="most consumers (default 1000)")
    p.add_argument("--connections-top", type=int, help="most idle connections (default 1000)")
    p.add_argument("--kv-top", type=int, help="most KV keys (default 100000)")
    p.add_argument("--tolerance", type=float, default=1.25,
                   help="noise margin when comparing growth with nats-server's (default 1.25)")
    p.add_argument("--targets", default="minijs,nats-server",
                   type=lambda s: [t.strip() for t in s.split(",") if t.strip()])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--no-install", action="store_true",
                   help="never apt-get install; fail with the command to run instead")
    p.add_argument("--minijs-cmd", help="command that runs minijs (default: python -m minijs)")
    p.add_argument("--nats-server-cmd", help="command that runs nats-server")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    for t in args.targets:
        if t not in bn.TARGETS:
            p.error(f"unknown target {t!r} (choose from {', '.join(bn.TARGETS)})")
    if not args.ranges:
        p.error("--ranges: no range given")
    tops = [v for v in (args.stored_top, args.consumers_top, args.connections_top, args.kv_top)
            if v is not None]
    if min(args.count, args.rounds, args.window, *tops) < 1:
        p.error("--count, --rounds, --window and the --*-top options must be positive")
    if args.tolerance < 1.0:
        p.error("--tolerance must be at least 1.0")
    args.loops = []  # bench_native.server_commands: minijs on its default event loop
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    points = build_points(args)
    try:
        exe = bn.build_loadgen(allow_install=not args.no_install)
    except bn.BuildError as e:
        print(f"bench_scale: {e}", file=sys.stderr)
        return 2
    commands = bn.server_commands(args)
    if "nats-server" in args.targets and "nats-server" not in commands:
        print("nats-server not found on PATH; running minijs alone", file=sys.stderr)
    env_note = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
                f"{SIZE}-byte payloads; {args.rounds} round(s) per point (median); "
                f"load generator {exe}")
    results = run_points(exe, points, args, commands)
    rows = growth_rows(points, results, args.tolerance)
    text = "\n\n".join([
        f"# Scale curves: minijs vs nats-server\n\n{env_note}",
        "## Growth of server CPU per operation across each range\n\n"
        f"growth = CPU us/op at the largest N over the smallest; goal: minijs <= 2x and <= "
        f"nats-server's growth (x{args.tolerance} for noise, nats-server's taken as at least "
        f"1.0)\n\n" + growth_table(rows),
        "## Every point\n\n" + points_table(points, results),
    ]) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.md").write_text(text)
    doc = {"count": args.count, "rounds": args.rounds, "window": args.window, "cpus": os.cpu_count(),
           "loadavg": os.getloadavg()[0], "tolerance": args.tolerance, "growth": rows,
           "points": [{"key": p.key, **asdict(p),
                       "results": {t: asdict(results[t][p.key]) for t in results}}
                      for p in points]}
    (args.out / "scale.json").write_text(json.dumps(doc, indent=2) + "\n")
    if write_plot(args.out / "scale.png", points, results):
        print(f"plot: {args.out / 'scale.png'}")
    print(f"written: {args.out / 'scale.md'}")
    failed = any(r.error for per in results.values() for r in per.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
