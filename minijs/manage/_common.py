"""Shared pieces of the management commands: the argument parser that never exits the
process, the connection (fast failure naming the URL), output (tables or ``--json``) and the
error types every command reports the same way."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Callable, TextIO

PROG = "minijs"
DEFAULT_URL = "nats://127.0.0.1:4222"
CONNECT_TIMEOUT = 2.0


class CommandError(Exception):
    """A failure reported as ``minijs: <message>`` with exit code 1."""


class UsageError(CommandError):
    """A bad command line: the message names the flag or argument."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main([...])`` can run in-process."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def connection_options() -> argparse.ArgumentParser:
    """The flags every command takes, named as the ``nats`` CLI names them."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("connection")
    g.add_argument("-s", "--server", metavar="URL", default=None,
                   help=f"NATS server URL (default: $NATS_URL or {DEFAULT_URL})")
    g.add_argument("--user", default=None, help="username")
    g.add_argument("--password", default=None, help="password")
    g.add_argument("--creds", default=None, metavar="FILE",
                   help="user credentials (.creds) file, for operator mode")
    g.add_argument("--timeout", default="5s", metavar="DURATION",
                   help="how long to wait for replies and messages (default: 5s)")
    g.add_argument("--json", "-j", action="store_true", help="print JSON instead of tables")
    return p


def server_url(args: argparse.Namespace) -> str:
    return args.server or os.environ.get("NATS_URL") or DEFAULT_URL


async def connect(args: argparse.Namespace) -> Any:
    """A nats-py connection that fails within ~3 s, with a message naming the URL."""
    import asyncio

    import nats
    from nats.errors import NoServersError

    url = server_url(args)
    kwargs: dict[str, Any] = {
        "servers": [u.strip() for u in url.split(",")],
        "connect_timeout": CONNECT_TIMEOUT,
        "allow_reconnect": False,
        "max_reconnect_attempts": 0,
        "name": "minijs-cli",
    }
    if args.user is not None:
        kwargs["user"] = args.user
    if args.password is not None:
        kwargs["password"] = args.password
    if getattr(args, "creds", None):
        from minijs.auth.jwt import CredsError, parse_creds

        try:
            with open(args.creds, encoding="utf-8") as f:
                parse_creds(f.read(), args.creds)
        except OSError as exc:
            raise CommandError(f"cannot read --creds {args.creds}: "
                               f"{exc.strerror or exc}") from None
        except CredsError as exc:
            raise CommandError(f"--creds {exc}") from None
        kwargs["user_credentials"] = args.creds
    last: list[BaseException] = []

    async def on_error(exc: BaseException) -> None:
        last.append(exc)

    kwargs["error_cb"] = on_error
    try:
        return await asyncio.wait_for(nats.connect(**kwargs), CONNECT_TIMEOUT + 1.0)
    except (NoServersError, OSError, asyncio.TimeoutError) as exc:
        why = last[-1] if last else exc
        detail = f" ({why})" if str(why) else ""
        if "authorization" in str(why).lower():
            raise CommandError(f"cannot connect to {url}: authorization violation; pass the "
                               "right --user/--password or --creds") from None
        raise CommandError(f"cannot connect to {url}{detail}: is a server running there? Start "
                           "one with 'minijs -js' or point at yours with -s/--server URL or "
                           "NATS_URL") from None
    except Exception as exc:
        text = str(exc) or type(exc).__name__
        if "authorization" in text.lower():
            raise CommandError(f"cannot connect to {url}: authorization violation; pass the "
                               "right --user/--password or --creds") from None
        raise CommandError(f"cannot connect to {url}: {text}") from None


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w|y)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
          "d": 86400.0, "w": 7 * 86400.0, "y": 365 * 86400.0}


def parse_duration(text: str, flag: str) -> float:
    """Seconds from ``1h30m``, ``500ms``, ``10s``, ``2d`` or a bare number of seconds."""
    value = text.strip()
    if value in ("0", "", "-1", "unlimited", "inf"):
        return 0.0
    try:
        return float(value)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(value):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(value) or pos == 0:
        raise UsageError(f'invalid duration "{text}" for {flag} (use e.g. 30s, 5m, 1h, 2d)')
    return total


def parse_size(text: str, flag: str) -> int:
    """Bytes from ``1024``, ``1KB``, ``10MB``, ``1GiB``; ``-1`` means unlimited."""
    value = text.strip().upper()
    m = re.fullmatch(r"(-?\d+)\s*(B|K|KB|KIB|M|MB|MIB|G|GB|GIB|T|TB|TIB)?", value)
    if not m:
        raise UsageError(f'invalid size "{text}" for {flag} (use e.g. 1024, 10MB, 1GB)')
    n = int(m.group(1))
    unit = (m.group(2) or "B")[:1]
    return n * {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]


def human_duration(seconds: float | None) -> str:
    if not seconds:
        return "unlimited"
    out, rest = [], float(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if rest >= size:
            n = int(rest // size)
            out.append(f"{n}{unit}")
            rest -= n * size
    if rest or not out:
        out.append(f"{rest:g}s")
    return "".join(out)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "0 B"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def enum_value(value: Any) -> Any:
    return getattr(value, "value", value)


class Output:
    """Where a command writes: stdout for results, stderr for progress and notes."""

    def __init__(self, as_json: bool, out: TextIO | None = None, err: TextIO | None = None):
        self.as_json = as_json
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def note(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def json(self, value: Any) -> None:
        self.out.write(json.dumps(value, indent=2, sort_keys=True, default=_json_default) + "\n")

    def table(self, headers: list[str], rows: list[list[Any]], title: str | None = None) -> None:
        cells = [[str(c) for c in row] for row in rows]
        widths = [len(h) for h in headers]
        for row in cells:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]
        if title:
            self.line(title)
        sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        self.line(sep)
        self.line("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |")
        self.line(sep)
        for row in cells:
            self.line("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        self.line(sep)

    def pairs(self, title: str, items: list[tuple[str, Any]]) -> None:
        """An aligned ``Key: value`` block, as ``nats stream info`` prints."""
        self.line(title)
        self.line()
        width = max((len(k) for k, _ in items), default=0)
        for key, value in items:
            if key == "":
                self.line()
            else:
                self.line(f"{key.rjust(width)}: {value}")
        self.line()


def _json_default(value: Any) -> Any:
    import base64
    import datetime

    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return base64.b64encode(value).decode()
    if hasattr(value, "as_dict"):
        return value.as_dict()
    return str(value)


def message_dict(subject: str, data: bytes, headers: Any = None, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"subject": subject, "data": _json_default(data or b"")}
    if headers:
        d["headers"] = dict(headers)
    d.update({k: v for k, v in extra.items() if v is not None})
    return d


def print_message(out: Output, title: str, data: bytes, headers: Any = None) -> None:
    out.line(title)
    for key, value in (headers or {}).items():
        out.line(f"{key}: {value}")
    if headers:
        out.line()
    out.line((data or b"").decode(errors="replace"))


Handler = Callable[[argparse.Namespace, Output], Any]
