"""``minijs --signal CMD[=PID]``: send a signal to a running server, as nats-server's
``--signal`` does (``-sl``): ``reload`` (SIGHUP), ``reopen`` (SIGUSR1, the log file), ``ldm``
(SIGUSR2, lame duck mode), ``quit`` (SIGINT), ``term`` (SIGTERM), ``stop`` (SIGKILL). ``PID``
is a process id or a pid file (``-P``/``pid_file``); without it the one running ``minijs``
process is found with ``pgrep``. Errors are nats-server's words."""
from __future__ import annotations

import os
import signal
import subprocess

COMMANDS = {"stop": signal.SIGKILL, "quit": signal.SIGINT, "reopen": signal.SIGUSR1,
            "reload": signal.SIGHUP, "ldm": signal.SIGUSR2, "term": signal.SIGTERM}


class SignalError(Exception):
    """The signal could not be sent; the text says why."""


def process_signal(value: str, process_name: str = "minijs") -> None:
    """Send the signal ``value`` (``CMD`` or ``CMD=PID``) names; raises :class:`SignalError`."""
    parts = value.split("=")
    if len(parts) > 2:
        raise SignalError(f"invalid signal parameters: [{' '.join(parts[2:])}]")
    command = parts[0]
    pid_expr = ""
    if len(parts) == 2:
        pid_expr = _maybe_read_pid_file(parts[1]).strip()
    glob = pid_expr.endswith("*")
    pid_text = pid_expr.rstrip("*")
    pids: list[int] = []
    if pid_text:
        if not pid_text.isdigit():
            raise SignalError(f"invalid pid: {pid_text}")
        pids = [int(pid_text)]
    if not pid_text or glob:
        pids = _running(process_name)
    if len(pids) > 1 and not glob:
        raise SignalError(f"multiple {process_name} processes running:"
                          + "".join(f"\n{p}" for p in pids))
    if not pids:
        raise SignalError(f"no {process_name} processes running")
    signum = COMMANDS.get(command)
    if signum is None:
        raise SignalError(f'unknown signal "{command}"')
    errors = ""
    for pid in pids:
        if pid_text and glob and not str(pid).startswith(pid_text):
            continue
        try:
            os.kill(pid, signum)
        except OSError as exc:
            errors += f'\nsignal "{command}" {pid}: {(exc.strerror or str(exc)).lower()}'
    if errors:
        raise SignalError(errors)


def _maybe_read_pid_file(text: str) -> str:
    try:
        with open(text, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return text


def _running(name: str) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        raise SignalError("unable to resolve pid, try providing one") from None
    me = os.getpid()
    return [int(p) for p in out.split() if p.isdigit() and int(p) != me]
