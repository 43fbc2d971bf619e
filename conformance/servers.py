"""Spawning and stopping server processes for the conformance targets.

Both local targets are started the same way: an executable plus nats-server style flags
(``-a 127.0.0.1 -p -1`` and friends). The port is taken from the
``Listening for client connections on HOST:PORT`` log line, and the server is considered up
once ``Server is ready`` has been logged. A background thread keeps draining stderr so the
pipe can never fill up and block the server.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

#: Names of the targets that are spawned locally.
LOCAL_TARGETS = ("minijs", "nats-server")
#: Name of the external target given with ``--url``.
URL_TARGET = "url"

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0

_LISTEN_RE = re.compile(rb"Listening for client connections on (\S+):(\d+)")
_READY_RE = re.compile(rb"Server is ready")
_WEBSOCKET_RE = re.compile(rb"Listening for websocket clients on (wss?)://(\S+):(\d+)")


#: Every server spawned and not yet stopped; stopped at interpreter exit as a safety net so
#: an aborted session never leaves orphaned servers behind.
_LIVE: dict[int, "ServerProcess"] = {}


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE.values()):
        server.stop()


def _beside_python(name: str) -> str | None:
    """An executable called ``name`` in the same directory as the running interpreter."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() and os.access(candidate, os.X_OK) else None


def free_port() -> int:
    """A currently free loopback TCP port (for a listener a case configures itself: monitor,
    cluster, websocket)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def command_for(target: str) -> list[str]:
    """The command (without flags) that starts a local target."""
    if target == "nats-server":
        exe = shutil.which("nats-server") or _beside_python("nats-server")
        if exe is None:
            raise RuntimeError("nats-server executable not found on PATH nor beside python")
        return [exe]
    if target == "minijs":
        exe = shutil.which("minijs") or _beside_python("minijs")
        if exe is not None:
            return [exe]
        return [sys.executable, "-m", "minijs"]
    raise ValueError(f"unknown local target {target!r}")


@dataclass
class Endpoint:
    """Where a target server listens."""

    target: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"


@dataclass
class ServerProcess(Endpoint):
    """A spawned server subprocess."""

    proc: subprocess.Popen[bytes] | None = None
    stderr_lines: list[bytes] = field(default_factory=list)
    tempdir: tempfile.TemporaryDirectory[str] | None = None
    #: The websocket listener's port (from its log line), 0 without a websocket block.
    ws_port: int = 0

    @property
    def log(self) -> str:
        return b"".join(self.stderr_lines).decode(errors="replace")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if the process does not exit in time."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)
            except ProcessLookupError:
                pass
        _LIVE.pop(id(self), None)
        if self.tempdir is not None:
            self.tempdir.cleanup()
            self.tempdir = None


def spawn_server(
    target: str,
    args: list[str] | None = None,
    config: str | None = None,
    jetstream: bool = False,
    files: dict[str, str] | None = None,
) -> ServerProcess:
    """Start ``target`` on a random loopback port and wait until it is ready.

    ``config`` is nats-server configuration text; it is written to a temp file passed with
    ``-c``. ``jetstream=True`` adds ``-js -sd <tempdir>/jetstream`` (a store directory that is
    removed with the server). ``files`` maps names to contents written beside the config file
    (for ``include``). Raises RuntimeError with the captured stderr when the server does
    not come up.
    """
    tempdir = tempfile.TemporaryDirectory(prefix=f"conformance-{target}-")
    cmd = command_for(target) + ["-a", "127.0.0.1", "-p", "-1"]
    for name, text in (files or {}).items():
        (Path(tempdir.name) / name).write_text(text)
    if config is not None:
        conf_path = Path(tempdir.name) / "server.conf"
        conf_path.write_text(config)
        cmd += ["-c", str(conf_path)]
    if jetstream:
        cmd += ["-js", "-sd", str(Path(tempdir.name) / "jetstream")]
    cmd += list(args or [])
    return start_process(target, cmd, cwd=tempdir.name, tempdir=tempdir)


def start_process(
    target: str,
    cmd: list[str],
    cwd: str,
    tempdir: tempfile.TemporaryDirectory[str] | None = None,
    timeout: float = START_TIMEOUT,
) -> ServerProcess:
    """Run ``cmd`` (a server command line) in ``cwd`` and wait until it has logged its client
    listener and ``Server is ready``. ``tempdir`` (if given) is removed when the server is
    stopped. Raises RuntimeError with the captured stderr when the server does not come up."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    server = ServerProcess(target=target, host="", port=0, proc=proc, tempdir=tempdir)
    _LIVE[id(server)] = server
    ready = threading.Event()
    found: dict[str, str] = {}

    def drain() -> None:
        assert proc.stderr is not None
        for line in iter(proc.stderr.readline, b""):
            server.stderr_lines.append(line)
            if not ready.is_set():
                m = _LISTEN_RE.search(line)
                if m:
                    found["host"] = m.group(1).decode()
                    found["port"] = m.group(2).decode()
                ws = _WEBSOCKET_RE.search(line)
                if ws:
                    server.ws_port = int(ws.group(3))
                if _READY_RE.search(line) and "port" in found:
                    ready.set()
        ready.set()  # EOF: wake the waiter, which then sees the process died

    threading.Thread(target=drain, name=f"{target}-stderr", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready.wait(0.05):
        if time.monotonic() > deadline:
            break
    if "port" not in found or proc.poll() is not None:
        code = proc.poll()
        server.stop()
        why = (f"exited with code {code} before becoming ready" if code is not None
               else f"did not log 'Server is ready' within {timeout:.0f}s")
        raise RuntimeError(f"{target} {why} (command {' '.join(cmd)!r}); stderr:\n{server.log}")
    host = found["host"]
    server.host = "127.0.0.1" if host in ("0.0.0.0", "::", "[::]") else host
    server.port = int(found["port"])
    return server


def endpoint_from_url(url: str) -> Endpoint:
    """The external ``url`` target, from ``nats://host:port``."""
    parsed = urlparse(url if "://" in url else f"nats://{url}")
    host = parsed.hostname or "127.0.0.1"
    return Endpoint(target=URL_TARGET, host=host, port=parsed.port or 4222)
