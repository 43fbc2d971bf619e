"""A minijs server in a process of its own, for the tests that kill it: the standalone
server (``python -m minijs``) with JetStream on a store directory, killed with SIGKILL and
restarted on the same directory."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

_LISTEN = re.compile(r"Listening for client connections on \S+:(\d+)")


class MinijsProcess:
    """``python -m minijs -js -sd STORE_DIR`` on a free loopback port, started and ready
    (its port read from the log) when the constructor returns; a thread keeps draining its
    stderr so the pipe never fills."""

    def __init__(self, store_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minijs", "-js", "-sd", str(store_dir), "-a", "127.0.0.1",
             "-p", "-1"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.port = 0
        ready = threading.Event()

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                m = _LISTEN.search(line)
                if m:
                    self.port = int(m.group(1))
                if "Server is ready" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(20) or not self.port:
            self.proc.kill()
            raise RuntimeError("minijs did not start")

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def kill9(self) -> None:
        """SIGKILL: no shutdown of any kind, as a crash."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL after 10 s); nothing when it has exited."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
