"""Which event loop minijs runs on where it owns the loop (the CLI and ``ServerThread``).

asyncio's own loop by default. uvloop (the ``minijs[uvloop]`` extra) on request:
``--loop uvloop`` on the command line or ``MINIJS_LOOP=uvloop`` in the environment (which
``ServerThread`` and the sync pytest fixtures read too); ``auto`` takes uvloop when it is
importable and asyncio otherwise. uvloop is not the default because, measured with the native
load generator (docs, "Faster event loop"), it saves about a tenth of the server's CPU per
request/reply round trip and nothing on pipelined traffic, which is within this project's
benchmark noise, while costing more on large fan-out. A ``Server`` run in a loop of the
caller's (``asyncio.run``, pytest-asyncio) keeps that loop.
"""
from __future__ import annotations

import os
from importlib import import_module
from typing import Any, Callable

LOOPS = ("asyncio", "uvloop", "auto")
ENV = "MINIJS_LOOP"
DEFAULT = "asyncio"


class LoopError(ValueError):
    """An unknown loop name, or uvloop asked for but not installed."""


def loop_choice(value: str | None = None) -> str:
    """``asyncio`` or ``uvloop``: ``value`` (a ``--loop`` flag), else ``$MINIJS_LOOP``, else
    asyncio; ``auto`` is uvloop when it is importable."""
    value = (value or os.environ.get(ENV) or DEFAULT).strip().lower()
    if value not in LOOPS:
        raise LoopError(f'invalid value "{value}" for flag -loop: use asyncio, uvloop or auto')
    if value == "asyncio":
        return "asyncio"
    try:
        import_module("uvloop")
    except ImportError:
        if value == "uvloop":
            raise LoopError("uvloop is not installed: pip install 'minijs[uvloop]'") from None
        return "asyncio"
    return "uvloop"


def loop_factory(name: str) -> Callable[[], Any]:
    """A callable that makes a new event loop of the kind ``loop_choice`` named."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    import asyncio

    return asyncio.new_event_loop


def describe(loop: Any) -> str:
    """``uvloop 0.23.0`` or ``asyncio (_UnixSelectorEventLoop)``: for the debug log."""
    if type(loop).__module__.split(".")[0] == "uvloop":
        import uvloop

        return f"uvloop {getattr(uvloop, '__version__', '')}".strip()
    return f"asyncio ({type(loop).__name__})"
