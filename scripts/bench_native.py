#!/usr/bin/env python3
"""Server-bound benchmarks: a native C load generator against minijs and nats-server in one run.

The nats-py benchmarks (``scripts/bench.py``, ``bench_core.py``) saturate their own core before
either server does. This one drives both servers with ``scripts/loadgen/loadgen.c``, a small
program on the NATS C client (Debian's ``libnats-dev``), compiled on first use into a cache
directory (``$XDG_CACHE_HOME/minijs-loadgen/<source hash>/``, default ``~/.cache``). If the
headers or a C compiler are missing it installs ``libnats-dev build-essential`` with apt-get
when it runs as root, and otherwise says exactly what to run.

For every scenario (core pub, pub->sub with N publishers x M subscribers, request/reply,
JetStream sync and async publish on memory and file, pull consume with acks, push consume with
acks, KV put and get; payloads 16 B to 64 KiB) the load generator is started against each
server in turn; it connects and sets up (stream, pre-fill), says ``ready``, and the measured
section starts only when this script has read the server's CPU time (user + system, summed
over its threads from ``/proc/<pid>/task/*/schedstat`` in ns, since utime + stime in
``/proc/<pid>/stat`` count 10 ms ticks); it is read again once the load generator reports.
The table shows msgs/s, MB/s (payload bytes), p50/p99 latency and server CPU us per operation
for both, and ratios (minijs / nats-server: above 1 is better for msgs/s, below 1 is better
for CPU), and how many cores each server kept busy (CPU seconds / wall seconds): a minijs
figure is server-bound when that is near 1.0, its one event loop being saturated.

Latency is a round trip for request/reply, sync publish and KV; publish-to-ack for async
publish (with up to ``--window`` in flight, so queueing is included); publish-to-delivery for
pub->sub, where publishers send as fast as they can (throughput mode, queueing included).

``--memory`` adds bytes of RSS per stored message (memory stream; 16 B, 128 B, 1 KiB payloads,
with and without headers), each in a fresh server, and the RSS of a minijs holding
``--million-count`` small messages, extrapolated to 1,000,000 unless that is the count.
``--load N`` adds a row loading N acked 32-byte messages into a memory stream (async publish,
``--window`` in flight): ``--load 1000000`` is the million-message load of issue 30's goals.

    python scripts/bench_native.py [--count 20000] [--rounds 1] [--scenarios pub,js-pull]
                                   [--pubs N] [--subs M]
                                   [--targets minijs,nats-server] [--loop asyncio,uvloop]
                                   [--load 1000000] [--memory] [--memory-only]
                                   [--memory-count 50000] [--million-count 200000]
                                   [--out scripts/output/bench_native] [--no-install]

``--loop NAME`` runs minijs with ``minijs --loop NAME``; ``--loop asyncio,uvloop`` runs minijs
on both loops (the second as target ``minijs/uvloop``) beside nats-server in the same run and
adds a table comparing them (the main table and the memory figures are minijs on the first).

Output: a table on stdout; ``native.md`` and ``native.json`` (and ``native.png`` when
matplotlib is importable) under ``--out`` (gitignored).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "loadgen" / "loadgen.c"
DEFAULT_OUT = HERE / "output" / "bench_native"
TARGETS = ("minijs", "nats-server")
APT_PACKAGES = ("libnats-dev", "build-essential")
#: Bytes published per scenario at most (big payloads get fewer messages).
BYTE_BUDGET = 64 * 1024 * 1024
RUN_TIMEOUT = 300.0
KIB = 1024

sys.path.insert(0, str(HERE))
from bench import (ServerProc, find_nats_server, loop_table, minijs_commands,  # noqa: E402
                   parse_loops, proc_cpu_seconds, spawn)


def server_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) ``pid`` has used, to the nanosecond where possible.

    utime + stime in ``/proc/<pid>/stat`` count clock ticks (10 ms), too coarse for a
    scenario lasting a fraction of a second; the first field of each thread's
    ``/proc/<pid>/task/<tid>/schedstat`` is the same time in nanoseconds. (Threads that exit
    during a scenario would be missed; neither server ends threads under load.)
    """
    try:
        total = 0
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"{task.path}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        return proc_cpu_seconds(pid)


# --------------------------------------------------------------------------- building


class BuildError(RuntimeError):
    pass


def have_headers() -> bool:
    """Whether the NATS C client's headers and library are installed (libnats-dev)."""
    if shutil.which("pkg-config"):
        r = subprocess.run(["pkg-config", "--exists", "libnats"], capture_output=True)
        if r.returncode == 0:
            return True
    return Path("/usr/include/nats/nats.h").exists() or Path("/usr/include/nats.h").exists()


def compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def install_command() -> str:
    return "sudo apt-get update && sudo apt-get install -y " + " ".join(APT_PACKAGES)


def ensure_packages(allow_install: bool = True) -> None:
    """Install libnats-dev and a compiler with apt-get if missing (as root), else explain."""
    if have_headers() and compiler():
        return
    apt = shutil.which("apt-get")
    if not allow_install or apt is None or os.geteuid() != 0:
        raise BuildError("the load generator needs the NATS C client and a C compiler; run: "
                         + install_command())
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = [apt, "install", "-y", "--no-install-recommends", *APT_PACKAGES]
    print("installing " + " ".join(APT_PACKAGES) + " with apt-get", file=sys.stderr)
    out = sys.stderr  # keep apt's chatter out of the table on stdout
    if subprocess.run(cmd, env=env, stdout=out).returncode != 0:
        subprocess.run([apt, "update"], env=env, stdout=out, check=False)
        if subprocess.run(cmd, env=env, stdout=out).returncode != 0:
            raise BuildError("apt-get install failed; run: " + install_command())
    if not (have_headers() and compiler()):
        raise BuildError("still no libnats headers or C compiler; run: " + install_command())


def compile_command(source: Path, output: Path) -> list[str]:
    """The cc command line that builds ``source`` into ``output``."""
    flags: list[str] = []
    if shutil.which("pkg-config"):
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "libnats"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            flags = shlex.split(r.stdout)
    if not any(f.startswith("-lnats") for f in flags):
        flags.append("-lnats")
    return [compiler() or "cc", "-O2", "-std=gnu11", "-Wall", "-Wno-unused-parameter",
            "-o", str(output), str(source), *flags, "-lpthread"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "minijs-loadgen"


def build_loadgen(allow_install: bool = True, source: Path = SOURCE) -> Path:
    """The compiled load generator, built into the cache on first use (keyed by source hash)."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    exe = cache_dir() / digest / "loadgen"
    if exe.exists():
        return exe
    ensure_packages(allow_install)
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(f"loadgen.{os.getpid()}.tmp")
    r = subprocess.run(compile_command(source, tmp), capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"compiling {source} failed:\n{r.stderr}")
    tmp.replace(exe)
    return exe


# --------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    """One row: a load generator mode with its size, fan-in/out and storage."""

    mode: str
    size: int
    pubs: int = 1
    subs: int = 1
    storage: str = "memory"
    #: Fraction of ``--count`` this scenario handles (round-trip modes are slower).
    share: float = 1.0
    headers: bool = False
    #: A fixed message count (the ``--load`` row), ``--count`` and the byte budget aside.
    messages: int | None = None

    @property
    def key(self) -> str:
        parts = [self.mode, size_label(self.size)]
        if self.mode.startswith(("js-", "kv-")):
            parts.append(self.storage)
        if self.pubs != 1 or self.subs != 1:
            parts.append(f"{self.pubs}x{self.subs}")
        if self.headers:
            parts.append("hdr")
        if self.messages is not None:
            parts.append(f"load {self.messages:,}")
        return " ".join(parts)

    def count(self, total: int) -> int:
        if self.messages is not None:
            return self.messages
        n = max(1, round(total * self.share))
        return max(1, min(n, BYTE_BUDGET // self.size))

    def argv(self, exe: Path, url: str, total: int, window: int) -> list[str]:
        argv = [str(exe), "-i", "-s", url, "-m", self.mode, "-n", str(self.count(total)),
                "-z", str(self.size), "-p", str(self.pubs), "-c", str(self.subs),
                "-S", self.storage, "-w", str(window)]
        return argv + (["-H"] if self.headers else [])


def size_label(n: int) -> str:
    return f"{n // KIB}KiB" if n >= KIB and n % KIB == 0 else f"{n}B"


def build_scenarios() -> list[Scenario]:
    s: list[Scenario] = []
    for size in (16, 128, KIB, 64 * KIB):
        s.append(Scenario("pub", size, share=5.0))
    for size in (16, 128, KIB, 64 * KIB):
        s.append(Scenario("pubsub", size, share=2.0))
    s.append(Scenario("pubsub", 128, pubs=1, subs=4, share=1.0))
    s.append(Scenario("pubsub", 128, pubs=4, subs=1, share=2.0))
    s.append(Scenario("reqrep", 128, share=0.25))
    s.append(Scenario("reqrep", 128, pubs=4, subs=2, share=0.5))
    for storage in ("memory", "file"):
        s.append(Scenario("js-pub-sync", 128, storage=storage, share=0.25))
        s.append(Scenario("js-pub-async", 128, storage=storage))
    for size in (16, KIB, 64 * KIB):
        s.append(Scenario("js-pub-async", size))
    s.append(Scenario("js-pub-async", 128, pubs=4, share=1.0))
    for storage in ("memory", "file"):
        s.append(Scenario("js-pull", 128, storage=storage))
        s.append(Scenario("js-push", 128, storage=storage))
    s.append(Scenario("js-pull", 128, subs=4))
    s.append(Scenario("kv-put", 128, share=0.25))
    s.append(Scenario("kv-get", 128, share=0.25))
    return s


#: Modes with subscribers / responders / consumers (the M of N x M).
SUBSCRIBER_MODES = ("pubsub", "reqrep", "js-pull", "js-push")
#: Modes with publishers / requesters / writers (the N of N x M).
PUBLISHER_MODES = ("pub", "pubsub", "reqrep", "js-pub-sync", "js-pub-async", "kv-put", "kv-get")


def with_fanout(scenarios: list[Scenario], pubs: int | None,
                subs: int | None) -> list[Scenario]:
    """Every scenario with ``pubs`` publishers and ``subs`` subscribers where its mode has them
    (duplicates dropped)."""
    out: list[Scenario] = []
    for sc in scenarios:
        if pubs and sc.mode in PUBLISHER_MODES:
            sc = replace(sc, pubs=pubs)
        if subs and sc.mode in SUBSCRIBER_MODES:
            sc = replace(sc, subs=subs)
        if all(o.key != sc.key for o in out):
            out.append(sc)
    return out


def select(scenarios: list[Scenario], words: str | None) -> list[Scenario]:
    """Scenarios whose key contains one of the comma-separated ``words`` (all when None)."""
    if not words:
        return scenarios
    wanted = [w.strip() for w in words.split(",") if w.strip()]
    return [s for s in scenarios if any(w in s.key for w in wanted)]


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    ops: int = 0
    seconds: float = 0.0
    msgs_per_s: float | None = None
    mb_per_s: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    server_cpu_us: float | None = None
    error: str | None = None


def run_loadgen(argv: list[str], server: ServerProc) -> Result:
    """Run one scenario: handshake, server CPU before/after, the load generator's JSON."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    try:
        line = proc.stdout.readline()
        if line.strip() != "ready":
            proc.wait(RUN_TIMEOUT)
            return Result(error=(proc.stderr.read() if proc.stderr else "").strip()[-200:]
                          or f"load generator exited {proc.returncode}")
        cpu0 = server_cpu_seconds(server.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        cpu = server_cpu_seconds(server.pid) - cpu0
        proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return Result(error="timed out")
    stderr = (proc.stderr.read() if proc.stderr else "").strip()
    if not line.strip():
        return Result(error=stderr[-200:] or f"load generator exited {proc.returncode}")
    doc = json.loads(line)
    ops = doc["ops"]
    r = Result(ops=ops, seconds=doc["seconds"], msgs_per_s=doc["msgs_per_s"],
               mb_per_s=doc["mb_per_s"],
               p50_us=doc["p50_us"] if doc["p50_us"] >= 0 else None,
               p99_us=doc["p99_us"] if doc["p99_us"] >= 0 else None,
               server_cpu_us=cpu / ops * 1e6)
    if doc["errors"]:
        r.error = f"{doc['errors']} errors" + (f": {stderr[-150:]}" if stderr else "")
    return r


def median_result(rounds: list[Result]) -> Result:
    ok = [r for r in rounds if r.error is None]
    if not ok:
        return rounds[-1]

    def med(attr: str) -> float | None:
        values = [getattr(r, attr) for r in ok if getattr(r, attr) is not None]
        return statistics.median(values) if values else None

    return Result(ops=ok[0].ops, seconds=med("seconds") or 0.0, msgs_per_s=med("msgs_per_s"),
                  mb_per_s=med("mb_per_s"), p50_us=med("p50_us"), p99_us=med("p99_us"),
                  server_cpu_us=med("server_cpu_us"))


def server_commands(args: argparse.Namespace) -> dict[str, list[str]]:
    minijs = (shlex.split(args.minijs_cmd) if args.minijs_cmd
              else [sys.executable, "-m", "minijs"])
    commands: dict[str, list[str]] = {}
    if "minijs" in args.targets:
        commands.update(minijs_commands(minijs, args.loops))
    exe = shlex.split(args.nats_server_cmd) if args.nats_server_cmd else (
        [p] if (p := find_nats_server()) else None)
    if exe and "nats-server" in args.targets:
        commands["nats-server"] = exe
    return commands


def run_scenarios(exe: Path, scenarios: list[Scenario], args: argparse.Namespace,
                  commands: dict[str, list[str]]) -> dict[str, dict[str, Result]]:
    servers = {t: spawn(t, cmd) for t, cmd in commands.items()}
    results: dict[str, dict[str, Result]] = {t: {} for t in servers}
    try:
        for sc in scenarios:
            rounds: dict[str, list[Result]] = {t: [] for t in servers}
            order = list(servers.items())
            for rnd in range(args.rounds):
                # Each round starts with the next target, so none always runs first or last.
                for t, server in order[rnd % len(order):] + order[:rnd % len(order)]:
                    if not server.alive():
                        rounds[t].append(Result(error="server died"))
                        continue
                    rounds[t].append(run_loadgen(sc.argv(exe, server.url, args.count,
                                                         args.window), server))
            for t in servers:
                results[t][sc.key] = median_result(rounds[t])
            if args.verbose:
                print(sc.key, {t: asdict(results[t][sc.key]) for t in servers}, file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    return results


# --------------------------------------------------------------------------- memory


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (VmRSS from /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


@dataclass
class MemoryResult:
    messages: int = 0
    rss_before: int = 0
    rss_after: int = 0
    error: str | None = None

    @property
    def per_message(self) -> float | None:
        if self.error or not self.messages:
            return None
        return (self.rss_after - self.rss_before) / self.messages


def measure_memory(exe: Path, cmd: list[str], name: str, size: int, headers: bool,
                   messages: int) -> MemoryResult:
    """RSS growth of a fresh server while ``messages`` are published into a memory stream."""
    server = spawn(name, cmd)
    try:
        argv = [str(exe), "-i", "-k", "-s", server.url, "-m", "js-pub-async", "-n",
                str(messages), "-z", str(size), "-S", "memory", "-w", "256"]
        if headers:
            argv.append("-H")
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdin and proc.stdout
        if proc.stdout.readline().strip() != "ready":
            proc.wait(RUN_TIMEOUT)
            return MemoryResult(error=(proc.stderr.read() if proc.stderr else "")[-200:])
        time.sleep(0.2)  # let the server settle after the stream was created
        before = rss_bytes(server.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        doc = json.loads(proc.stdout.readline() or "{}")
        after = rss_bytes(server.pid)
        proc.wait(RUN_TIMEOUT)
        if doc.get("errors") or doc.get("stored") != messages:
            return MemoryResult(error=f"stored {doc.get('stored')} of {messages}")
        return MemoryResult(messages, before, after)
    finally:
        server.stop()


def run_memory(exe: Path, args: argparse.Namespace, commands: dict[str, list[str]]) -> dict:
    rows = []
    for size in (16, 128, KIB):
        for headers in (False, True):
            row = {"size": size, "headers": headers, "results": {}}
            for t, cmd in commands.items():
                row["results"][t] = measure_memory(exe, cmd, t, size, headers,
                                                   args.memory_count)
            rows.append(row)
    million = None
    if "minijs" in commands and args.million_count:
        m = measure_memory(exe, commands["minijs"], "minijs", 16, False, args.million_count)
        if m.per_message is not None:
            projected = m.rss_before + m.per_message * 1_000_000
            million = {"messages": m.messages, "rss_before": m.rss_before,
                       "rss_after": m.rss_after, "per_message": m.per_message,
                       "projected_1m": projected, "under_1gib": projected < 1024 ** 3,
                       "extrapolated": m.messages != 1_000_000}
        else:
            million = {"error": m.error}
    return {"rows": rows, "million": million}


# --------------------------------------------------------------------------- output


def fmt(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def busy(r: Result | None) -> str:
    """Cores the server kept busy during the scenario (server CPU seconds / wall seconds).

    Near 1.0 for minijs (one event loop) means the figure is bound by the server; well below,
    by the client, the round trips or the machine.
    """
    if r is None or r.error or r.server_cpu_us is None or r.msgs_per_s is None:
        return "-"
    return f"{r.server_cpu_us * r.msgs_per_s / 1e6:.2f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    sep = "|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":")
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def scenario_table(scenarios: list[Scenario], results: dict[str, dict[str, Result]],
                   count: int) -> str:
    a, b = "minijs", "nats-server"
    header = ["scenario", "msgs", "minijs msg/s", "nats msg/s", "ratio", "minijs MB/s",
              "nats MB/s", "minijs p50/p99 us", "nats p50/p99 us", "minijs cpu us/op",
              "nats cpu us/op", "cpu ratio", "minijs busy", "nats busy"]
    rows = []
    for sc in scenarios:
        ra, rb = results.get(a, {}).get(sc.key), results.get(b, {}).get(sc.key)

        def cell(r: Result | None, what: str) -> str:
            if r is None:
                return "skipped"
            if r.error:
                return "error: " + r.error.replace("|", "/")[:40]
            if what == "rate":
                return fmt(r.msgs_per_s)
            if what == "mb":
                return fmt(r.mb_per_s, 1)
            if what == "lat":
                return "-" if r.p50_us is None else f"{r.p50_us:,.0f} / {r.p99_us:,.0f}"
            return fmt(r.server_cpu_us, 1)

        ok_a = ra is not None and ra.error is None
        ok_b = rb is not None and rb.error is None
        rows.append([
            sc.key, f"{sc.count(count):,}", cell(ra, "rate"), cell(rb, "rate"),
            ratio(ra.msgs_per_s, rb.msgs_per_s) if ok_a and ok_b else "-",
            cell(ra, "mb"), cell(rb, "mb"), cell(ra, "lat"), cell(rb, "lat"),
            cell(ra, "cpu"), cell(rb, "cpu"),
            ratio(ra.server_cpu_us, rb.server_cpu_us) if ok_a and ok_b else "-",
            busy(ra), busy(rb),
        ])
    return markdown_table(header, rows)


def memory_table(memory: dict) -> str:
    header = ["payload", "headers", "msgs", "minijs B/msg", "nats B/msg", "ratio"]
    rows = []
    for row in memory["rows"]:
        res = row["results"]
        ma, mb = res.get("minijs"), res.get("nats-server")
        pa = ma.per_message if ma else None
        pb = mb.per_message if mb else None
        n = (ma or mb).messages if (ma or mb) else 0
        rows.append([size_label(row["size"]), "yes" if row["headers"] else "no", f"{n:,}",
                     (ma.error and "error") or fmt(pa) if ma else "skipped",
                     (mb.error and "error") or fmt(pb) if mb else "skipped", ratio(pa, pb)])
    text = markdown_table(header, rows)
    m = memory.get("million")
    if m and "error" not in m:
        how = (f"extrapolated from {m['messages']:,}" if m["extrapolated"] else "measured")
        text += (f"\n\nminijs holding 1,000,000 16-byte messages in a memory stream: "
                 f"{m['projected_1m'] / 2**20:,.0f} MiB RSS ({how} messages: "
                 f"{m['rss_before'] / 2**20:,.0f} MiB before, {m['rss_after'] / 2**20:,.0f} MiB "
                 f"after, {m['per_message']:,.0f} B/msg); "
                 f"{'under' if m['under_1gib'] else 'OVER'} 1 GiB.")
    elif m:
        text += f"\n\n1M-message check failed: {m['error']}"
    return text


def write_plot(path: Path, scenarios: list[Scenario],
               results: dict[str, dict[str, Result]]) -> bool:
    """A PNG of msgs/s and CPU-per-op ratios per scenario, if matplotlib is importable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys, rate, cpu = [], [], []
    for sc in scenarios:
        ra, rb = results.get("minijs", {}).get(sc.key), results.get("nats-server", {}).get(sc.key)
        if not ra or not rb or ra.error or rb.error:
            continue
        keys.append(sc.key)
        rate.append(ra.msgs_per_s / rb.msgs_per_s)
        cpu.append(ra.server_cpu_us / rb.server_cpu_us if rb.server_cpu_us else 0.0)
    if not keys:
        return False
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(keys) + 1.5))
    ys = range(len(keys))
    ax.barh([y - 0.2 for y in ys], rate, height=0.4, label="msgs/s ratio (higher is better)")
    ax.barh([y + 0.2 for y in ys], cpu, height=0.4, label="server CPU/op ratio (lower is better)")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(list(ys), keys)
    ax.invert_yaxis()
    ax.set_xlabel("minijs / nats-server")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=20000,
                   help="operations per scenario before its share (default 20000)")
    p.add_argument("--rounds", type=int, default=1, help="runs per scenario; medians shown")
    p.add_argument("--window", type=int, default=256,
                   help="async publishes in flight / pull fetch batch (default 256)")
    p.add_argument("--scenarios", help="comma-separated words; scenarios whose key has one")
    p.add_argument("--pubs", type=int, help="publishers (N) in every scenario that has them")
    p.add_argument("--subs", type=int,
                   help="subscribers / responders / consumers (M) in every scenario that has them")
    p.add_argument("--targets", default="minijs,nats-server",
                   type=lambda s: [t.strip() for t in s.split(",") if t.strip()])
    p.add_argument("--loop", default="",
                   help="run minijs with --loop NAME (asyncio or uvloop); asyncio,uvloop runs "
                   "both beside nats-server and compares them (default: minijs picks)")
    p.add_argument("--load", type=int, default=0, metavar="N",
                   help="add a row loading N acked 32-byte messages into a memory stream "
                   "(js-pub-async, --window in flight; 1000000 for the issue's 1M load)")
    p.add_argument("--memory", action="store_true", help="also measure RSS per stored message")
    p.add_argument("--memory-only", action="store_true", help="only the memory figures")
    p.add_argument("--memory-count", type=int, default=50000,
                   help="messages stored per memory figure (default 50000)")
    p.add_argument("--million-count", type=int, default=200000,
                   help="small messages stored in minijs for the 1M check (0: skip)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--no-install", action="store_true",
                   help="never apt-get install; fail with the command to run instead")
    p.add_argument("--minijs-cmd", help="command that runs minijs (default: python -m minijs)")
    p.add_argument("--nats-server-cmd", help="command that runs nats-server")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    for t in args.targets:
        if t not in TARGETS:
            p.error(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    try:
        args.loops = parse_loops(args.loop)
    except ValueError as e:
        p.error(str(e))
    if args.loops and "minijs" not in args.targets:
        p.error("--loop needs the minijs target")
    fanout = [n for n in (args.pubs, args.subs) if n is not None]
    if args.load < 0:
        p.error("--load must not be negative")
    if min(args.count, args.rounds, args.window, args.memory_count, *fanout) < 1:
        p.error("--count, --rounds, --window, --memory-count, --pubs and --subs must be positive")
    if args.memory_only:
        args.memory = True
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scenarios = [] if args.memory_only else select(
        with_fanout(build_scenarios(), args.pubs, args.subs), args.scenarios)
    if args.load and not args.memory_only:
        scenarios.append(Scenario("js-pub-async", 32, messages=args.load))
    if args.scenarios and not scenarios and not args.memory_only:
        print(f"--scenarios {args.scenarios!r}: no scenario matches", file=sys.stderr)
        return 2
    try:
        exe = build_loadgen(allow_install=not args.no_install)
    except BuildError as e:
        print(f"bench_native: {e}", file=sys.stderr)
        return 2
    commands = server_commands(args)
    if "nats-server" in args.targets and "nats-server" not in commands:
        print("nats-server not found on PATH; running minijs alone", file=sys.stderr)
    env_note = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
                f"load generator {exe}")
    parts = [f"# Native load generator: minijs vs nats-server\n\n{env_note}\n"]
    doc: dict = {"count": args.count, "rounds": args.rounds, "window": args.window,
                 "loops": args.loops,
                 "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0]}
    failed = False
    if scenarios:
        results = run_scenarios(exe, scenarios, args, commands)
        table = scenario_table(scenarios, results, args.count)
        parts.append(table)
        if len(args.loops) > 1:
            parts.append(f"## minijs on each event loop (--loop {','.join(args.loops)})\n\n"
                         + loop_table([(sc.key, sc.key) for sc in scenarios], results,
                                      args.loops, lambda r: r.msgs_per_s,  # type: ignore
                                      lambda r: r.server_cpu_us))  # type: ignore
        doc["scenarios"] = [{"key": sc.key, **asdict(sc), "messages": sc.count(args.count),
                             "results": {t: asdict(results[t][sc.key]) for t in results}}
                            for sc in scenarios]
        failed = any(r.error for per in results.values() for r in per.values())
    if args.memory:
        memory = run_memory(exe, args, {t: c for t, c in commands.items() if t in TARGETS})
        parts.append("## RSS per stored message (memory stream)\n\n" + memory_table(memory))
        doc["memory"] = {"rows": [{"size": r["size"], "headers": r["headers"],
                                   "results": {t: {**asdict(m), "per_message": m.per_message}
                                               for t, m in r["results"].items()}}
                                  for r in memory["rows"]],
                         "million": memory["million"]}
    text = "\n\n".join(parts) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "native.md").write_text(text)
    (args.out / "native.json").write_text(json.dumps(doc, indent=2) + "\n")
    if scenarios and write_plot(args.out / "native.png", scenarios, results):
        print(f"plot: {args.out / 'native.png'}")
    print(f"written: {args.out / 'native.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
