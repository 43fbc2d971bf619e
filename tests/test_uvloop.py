"""The event loop where minijs owns it: the ``minijs`` command and ``ServerThread`` run asyncio's
loop by default and uvloop (the ``minijs[uvloop]`` extra) with ``--loop uvloop`` /
``MINIJS_LOOP=uvloop``, or with ``auto`` when it is installed; the virtual and auto clocks and
the pytest fixtures work on either.

The tests that run uvloop skip when it is not importable; the ``test`` extra installs it (CI
installs the ``test`` extra), so they run there.
"""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.cli import UsageError, event_loop_choice, parse_args
from minijs.eventloop import ENV, LoopError, loop_choice
from minijs.server import ServerThread

from control_kit import S, arrived, nothing_arrived, pull
from jsapi import pull_consumer

ROOT = Path(__file__).resolve().parent.parent

try:
    import uvloop
except ImportError:  # pragma: no cover - the test extra installs it
    uvloop = None  # type: ignore[assignment]

needs_uvloop = pytest.mark.skipif(uvloop is None, reason="uvloop is not installed "
                                  "(pip install -e '.[test]' installs it)")
LOOP_KINDS = ["asyncio", pytest.param("uvloop", marks=needs_uvloop)]


@pytest.fixture(autouse=True)
def no_loop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import uvloop`` fail, as on a machine without the extra."""
    monkeypatch.setitem(sys.modules, "uvloop", None)


# ----------------------------------------------------------------------------- the choice


def test_asyncio_is_the_default() -> None:
    assert loop_choice() == "asyncio"
    assert event_loop_choice(parse_args([])) == "asyncio"


@needs_uvloop
def test_uvloop_and_auto_take_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert loop_choice("uvloop") == "uvloop"
    assert loop_choice("auto") == "uvloop"
    assert event_loop_choice(parse_args(["--loop", "uvloop"])) == "uvloop"
    assert event_loop_choice(parse_args(["--loop=auto"])) == "uvloop"
    monkeypatch.setenv(ENV, "uvloop")
    assert event_loop_choice(parse_args([])) == "uvloop"
    assert event_loop_choice(parse_args(["--loop", "asyncio"])) == "asyncio"  # the flag wins
    monkeypatch.setenv(ENV, "auto")
    assert loop_choice() == "uvloop"


def test_auto_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    without_uvloop(monkeypatch)
    assert loop_choice("auto") == "asyncio"
    assert event_loop_choice(parse_args(["--loop", "auto"])) == "asyncio"
    with pytest.raises(LoopError, match=r"uvloop is not installed: pip install 'minijs\[uvloop\]'"):
        loop_choice("uvloop")
    with pytest.raises(UsageError, match="uvloop is not installed"):
        event_loop_choice(parse_args(["--loop", "uvloop"]))


def test_unknown_loop_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match='invalid value "trio" for flag -loop: use asyncio, '
                                         'uvloop or auto'):
        event_loop_choice(parse_args(["--loop", "trio"]))
    monkeypatch.setenv(ENV, "nope")
    with pytest.raises(LoopError, match='invalid value "nope"'):
        loop_choice()


# ----------------------------------------------------------------------------- the command


def spawn_minijs(*flags: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run ``python -m minijs -D -p -1 FLAGS``, read its log until the event loop line, check a
    client gets INFO, stop it with SIGTERM; return the exit code and the log lines."""
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    environ.pop(ENV, None)
    environ.update(env or {})
    proc = subprocess.Popen([sys.executable, "-m", "minijs", "-a", "127.0.0.1", "-p", "-1", "-D",
                             *flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=environ)
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        port = 0
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "Listening for client connections on" in line:
                port = int(line.rsplit(":", 1)[1])
            if "Event loop:" in line:
                break
        assert port, "\n".join(lines)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            assert sock.recv(4096).startswith(b"INFO ")
        proc.terminate()
        rest = proc.communicate(timeout=20)[1]
        lines += rest.splitlines()
        return proc.returncode, lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def loop_line(lines: list[str]) -> str:
    found = [line for line in lines if "Event loop:" in line]
    assert len(found) == 1, "\n".join(lines)
    assert "[DBG] Event loop: " in found[0]  # debug level only: nats-server logs no such line
    return found[0].split("Event loop: ", 1)[1]


@pytest.mark.parametrize("flags,env", [
    ([], {}),
    (["--loop", "asyncio"], {ENV: "uvloop"}),
    ([], {ENV: "asyncio"}),
])
def test_cli_runs_asyncio_by_default_and_when_told(flags: list[str], env: dict[str, str]
                                                   ) -> None:
    code, lines = spawn_minijs("-js", *flags, env=env)
    assert loop_line(lines).startswith("asyncio (")
    assert code == 0 and any("Server Exiting.." in line for line in lines)


@needs_uvloop
@pytest.mark.parametrize("flags,env", [
    (["--loop", "uvloop"], {}),
    (["--loop=auto"], {}),
    ([], {ENV: "uvloop"}),
])
def test_cli_runs_uvloop_when_asked(flags: list[str], env: dict[str, str]) -> None:
    code, lines = spawn_minijs("-js", *flags, env=env)
    assert loop_line(lines) == f"uvloop {uvloop.__version__}"
    assert code == 0 and any("Server Exiting.." in line for line in lines)


def test_no_event_loop_line_without_debug() -> None:
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "minijs", "-a", "127.0.0.1", "-p", "-1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=environ)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "Server is ready" in line:
                break
        proc.terminate()
        rest = proc.communicate(timeout=20)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "Event loop" not in rest


def test_cli_refuses_an_unknown_loop() -> None:
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "minijs", "--loop", "trio"], capture_output=True,
                         text=True, env=environ, timeout=30)
    assert out.returncode == 1
    assert 'minijs: invalid value "trio" for flag -loop: use asyncio, uvloop or auto' in out.stderr


# ----------------------------------------------------------------------------- ServerThread


def loop_kind(srv: ServerThread) -> str:
    return type(srv._loop).__module__.split(".")[0]


def test_server_thread_runs_asyncio_by_default() -> None:
    with ServerThread() as srv:
        assert loop_kind(srv) == "asyncio"


@needs_uvloop
@pytest.mark.parametrize("value", ["uvloop", "auto"])
def test_server_thread_runs_uvloop_when_asked(value: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, value)
    with ServerThread() as srv:
        assert loop_kind(srv) == "uvloop"


def test_server_thread_reports_a_bad_loop_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "nope")
    with pytest.raises(LoopError, match='invalid value "nope"'):
        ServerThread().start()


@pytest.mark.parametrize("kind", LOOP_KINDS)
async def test_virtual_clock_on_a_server_thread(kind: str, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    """The virtual clock bound to the thread's loop, advanced from another thread."""
    monkeypatch.setenv(ENV, kind)
    with ServerThread(clock="virtual", jetstream=True) as srv:
        assert loop_kind(srv) == kind
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        assert (await sub.next_msg(timeout=2)).metadata.num_delivered == 1
        await pull(nc, "pull.2")
        await asyncio.to_thread(srv.clock.advance, 29.999)
        await nothing_arrived(nc, sub)
        await srv.clock.advance_async(0.001)  # from this (other) loop
        again = await arrived(nc, sub)
        assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
        await nc.close()


@pytest.mark.parametrize("kind", LOOP_KINDS)
async def test_auto_clock_on_a_server_thread(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The auto clock jumps by itself to a pull request's expiry an hour of server time away,
    and to a 30 s ack deadline."""
    monkeypatch.setenv(ENV, kind)
    with ServerThread(clock="auto", jetstream=True) as srv:
        assert loop_kind(srv) == kind
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1", batch=1, expires=3600 * S)
        first = await sub.next_msg(timeout=5)
        assert first.metadata.num_delivered == 1
        await pull(nc, "pull.2")  # nobody advances: the idle server jumps to the ack deadline
        again = await sub.next_msg(timeout=5)
        assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
        assert srv.clock.monotonic() >= 30
        await nc.close()


@needs_uvloop
async def test_in_process_server_keeps_the_callers_loop() -> None:
    from minijs import Server

    async with Server(port=0) as server:
        assert server is not None
        assert type(asyncio.get_running_loop()).__module__.startswith("asyncio")


@pytest.fixture
def loop_env(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, kind)


@pytest.mark.parametrize("kind", LOOP_KINDS)
@pytest.mark.minijs(clock="virtual")
def test_sync_fixture_on_either_loop(kind: str, loop_env: None, minijs_server: Any) -> None:
    """The pytest plugin's sync fixture (a ServerThread) on the loop MINIJS_LOOP names, with a
    virtual clock."""
    assert loop_kind(minijs_server) == kind
    minijs_server.clock.advance(5)
    assert minijs_server.clock.monotonic() == 5
    with socket.create_connection(("127.0.0.1", minijs_server.port)) as sock:
        assert sock.recv(4096).startswith(b"INFO ")
