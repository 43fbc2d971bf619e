"""Log lines in nats-server's format: ``[PID] YYYY/MM/DD HH:MM:SS.ffffff [INF] text``.

Harnesses that spawn nats-server wait for ``[INF] Server is ready``; minijs prints the same.
"""
from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Logger:
    """A small leveled logger writing nats-server style lines to a stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, debug: bool = False, trace: bool = False,
                 enabled: bool = True, tag: str = "") -> None:
        self.stream = stream
        self.debug_enabled = debug
        self.trace_enabled = trace
        self.enabled = enabled
        #: Written before each text (a cluster node's ``[name] ``), after the level.
        self.tag = tag
        self._pid = os.getpid()

    def child(self, tag: str) -> "Logger":
        """The same logger with ``[tag] `` before each text (one node of an in-process
        cluster: ``[INF] [n2] Listening for client connections on ...``)."""
        return Logger(self.stream, debug=self.debug_enabled, trace=self.trace_enabled,
                      enabled=self.enabled, tag=f"[{tag}] ")

    def _write(self, level: str, text: str) -> None:
        if not self.enabled:
            return
        now = time.time()
        stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now))
        micros = int((now % 1) * 1_000_000)
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            stream.write(f"[{self._pid}] {stamp}.{micros:06d} [{level}] {self.tag}{text}\n")
            stream.flush()
        except (ValueError, OSError):  # closed stream at interpreter exit
            pass

    #: The log file this logger opened itself (:meth:`use_file`), reopened on SIGUSR1.
    path: str | None = None

    def use_file(self, path: str | None) -> None:
        """Write to the file ``path`` (appending; None: stderr), closing a file this logger
        opened before. Raises OSError when it cannot be opened (nothing changes then)."""
        stream = open(path, "a", encoding="utf-8") if path else None
        old, owned = self.stream, self.path is not None
        self.stream, self.path = stream, path
        if owned and old is not None:
            old.close()

    def reopen(self) -> bool:
        """Reopen the log file (after a rotation moved it away): False without one."""
        if self.path is None:
            return False
        self.use_file(self.path)
        return True

    def info(self, text: str) -> None:
        self._write("INF", text)

    def warn(self, text: str) -> None:
        self._write("WRN", text)

    def error(self, text: str) -> None:
        self._write("ERR", text)

    def fatal(self, text: str) -> None:
        self._write("FTL", text)

    def debug(self, text: str) -> None:
        if self.debug_enabled:
            self._write("DBG", text)

    def trace(self, text: str) -> None:
        if self.trace_enabled:
            self._write("TRC", text)


#: A logger that says nothing: the in-process default, so tests stay quiet.
NULL_LOGGER = Logger(enabled=False)
