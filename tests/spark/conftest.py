"""Fixtures for the Spark data source tests: one local SparkSession, two JetStream targets.

Every test runs against ``nats-server`` (the real binary, spawned) and ``minijs`` (in-process,
on a background thread; Spark's Python workers are separate processes and reach it over TCP).
Select one with ``-k nats-server`` / ``-k minijs``, or ``MINIJS_SPARK_TARGETS=nats-server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

TARGETS = [
    t.strip()
    for t in os.environ.get("MINIJS_SPARK_TARGETS", "nats-server,minijs").split(",")
    if t.strip()
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nats_server_exe() -> str | None:
    beside = Path(sys.executable).with_name("nats-server")
    return shutil.which("nats-server") or (str(beside) if beside.exists() else None)


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{proc.args[0]} did not start listening")


@contextlib.contextmanager
def serve(target: str, *args: str) -> Iterator[str]:
    """Run one JetStream server of ``target`` (``nats-server`` or ``minijs``) and yield its URL.

    ``args`` are extra command-line flags (``--user u --pass p``, ``--auth t``); minijs gets
    the same ones (it runs through its CLI then, in a subprocess of its own)."""
    if target == "nats-server":
        exe = _nats_server_exe()
        if exe is None:
            pytest.skip("nats-server binary not found (install the 'test' extra)")
        cmd = [exe]
    elif target == "minijs" and args:
        cmd = [sys.executable, "-m", "minijs"]
    elif target == "minijs":
        from minijs.server import ServerThread

        srv = ServerThread(jetstream=True).start()
        try:
            yield srv.client_url
        finally:
            srv.stop()
        return
    else:
        raise ValueError(f"unknown target {target!r}")
    store = tempfile.mkdtemp(prefix=f"minijs-spark-{target}-")
    port = _free_port()
    proc = subprocess.Popen(
        [*cmd, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, proc)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(store, ignore_errors=True)


@pytest.fixture(scope="session", params=TARGETS)
def nats_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A JetStream-enabled server URL; session-scoped, so each target starts once."""
    with serve(request.param) as url:
        yield url


@pytest.fixture(scope="session")
def nats_urls() -> Iterator[dict[str, str]]:
    """Every target at once (``{"nats-server": url, "minijs": url}``), for tests that pay for
    a Spark start of their own and check all targets in it."""
    with contextlib.ExitStack() as stack:
        urls = {}
        for target in TARGETS:
            if target == "nats-server" and _nats_server_exe() is None:
                continue
            urls[target] = stack.enter_context(serve(target))
        if not urls:
            pytest.skip("no JetStream target available")
        yield urls


def _dead_url() -> str:
    return f"nats://127.0.0.1:{_free_port()}"


@pytest.fixture(scope="session")
def dead_url() -> Any:
    """``dead_url()``: a loopback URL where nothing listens (its port was free a moment ago)."""
    return _dead_url


@pytest.fixture(scope="session")
def serve_target() -> Any:
    """``with serve_target("minijs", "--auth", "t") as url:`` (see :func:`serve`)."""
    return serve


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One ``local[2]`` SparkSession for the whole run (a JVM start costs seconds)."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (17+)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from minijs.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("minijs-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()


class JS:
    """Synchronous JetStream admin for tests: set up streams and inspect them without Spark."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _run(self, fn: Any) -> Any:
        import nats

        async def main() -> Any:
            nc = await nats.connect(self.url, connect_timeout=5, allow_reconnect=False)
            try:
                return await fn(nc, nc.jetstream(timeout=10))
            finally:
                await nc.close()

        return asyncio.run(main())

    def create_stream(self, name: str, subjects: list[str], **config: Any) -> None:
        async def fn(nc: Any, js: Any) -> None:
            await js.add_stream(name=name, subjects=subjects, **config)

        self._run(fn)

    def update_stream(self, name: str, **changes: Any) -> None:
        async def fn(nc: Any, js: Any) -> None:
            info = await js.stream_info(name)
            await js.update_stream(info.config.evolve(**changes))

        self._run(fn)

    def delete_stream(self, name: str) -> None:
        async def fn(nc: Any, js: Any) -> None:
            await js.delete_stream(name)

        self._run(fn)

    def purge(self, name: str) -> None:
        async def fn(nc: Any, js: Any) -> None:
            await js.purge_stream(name)

        self._run(fn)

    def publish(self, messages: list[tuple[str, bytes, dict[str, str] | None]]) -> list[int]:
        """Publish with acks awaited (pipelined); returns the stream sequences."""

        async def fn(nc: Any, js: Any) -> list[int]:
            futs = [await js.publish_async(s, d, headers=h) for s, d, h in messages]
            return [(await f).seq for f in futs]

        return self._run(fn)

    def stored_time_ns(self, name: str, seq: int) -> int:
        """The message's time stamp from STREAM.MSG.GET, in ns (nats-py would cut it to µs)."""
        import json

        from minijs.spark._nats import rfc3339_to_ns

        async def fn(nc: Any, js: Any) -> int:
            reply = await nc.request(f"$JS.API.STREAM.MSG.GET.{name}", json.dumps({"seq": seq}).encode())
            return rfc3339_to_ns(json.loads(reply.data)["message"]["time"])

        return self._run(fn)

    def info(self, name: str) -> Any:
        async def fn(nc: Any, js: Any) -> Any:
            return await js.stream_info(name)

        return self._run(fn)


@pytest.fixture
def js(nats_url: str) -> JS:
    return JS(nats_url)


@pytest.fixture
def stream_name() -> str:
    """A fresh stream name per test, so tests sharing a server never collide."""
    return "S" + uuid.uuid4().hex[:10].upper()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")


class SubjectTap:
    """Counts core NATS messages on a subject from a background thread.

    Core subscribers see every publish, including the ones a stream drops as duplicates, so a
    tap proves that a replay really re-published (and the stream really deduplicated).
    """

    def __init__(self, url: str, subject: str) -> None:
        import threading

        self.url, self.subject, self.count = url, subject, 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        import nats

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        nc = await nats.connect(self.url, allow_reconnect=False)

        async def on_msg(_msg: Any) -> None:
            self.count += 1

        await nc.subscribe(self.subject, cb=on_msg)
        await nc.flush()
        self._ready.set()
        await self._stop.wait()
        await nc.flush()
        await nc.close()

    def __enter__(self) -> "SubjectTap":
        self._thread.start()
        assert self._ready.wait(10), "tap did not connect"
        return self

    def __exit__(self, *exc: Any) -> None:
        time.sleep(0.2)  # let in-flight messages arrive
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def subject_tap(nats_url: str) -> Any:
    """``with subject_tap("orders.>") as tap: ...; tap.count``."""
    return lambda subject: SubjectTap(nats_url, subject)
