"""Which event loop minijs runs on where it owns the loop (the CLI and ``ServerThread``).

uvloop (the ``minijs[uvloop]`` extra) is used when it is importable, unless turned off:
``--loop asyncio`` on the command line or ``MINIJS_LOOP=asyncio`` in the environment (which
``ServerThread`` and the sync pytest fixtures read too). ``uvloop`` insists on it (an error
when it is not installed); ``auto`` (the default) takes it when it is there. A ``Server`` run
in a loop of the caller's (``asyncio.run``, pytest-asyncio) keeps that loop.
"""
from __future__ import annotations

import os
from importlib import import_module
from typing import Any, Callable

LOOPS = ("auto", "asyncio", "uvloop")
ENV = "MINIJS_LOOP"
#: Whether ``auto`` (the default) takes uvloop when it is importable.
AUTO_PREFERS_UVLOOP = True


class LoopError(ValueError):
    """An unknown loop name, or uvloop asked for but not installed."""


def loop_choice(value: str | None = None) -> str:
    """``asyncio`` or ``uvloop``: ``value`` (a ``--loop`` flag), else ``$MINIJS_LOOP``, else
    ``auto`` (uvloop when importable)."""
    value = (value or os.environ.get(ENV) or "auto").strip().lower()
    if value not in LOOPS:
        raise LoopError(f'invalid value "{value}" for flag -loop: use auto, asyncio or uvloop')
    if value == "asyncio" or (value == "auto" and not AUTO_PREFERS_UVLOOP):
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
    module = type(loop).__module__.split(".")[0]
    if module == "uvloop":
        import uvloop

        return f"uvloop {getattr(uvloop, '__version__', '')}".strip()
    return f"asyncio ({type(loop).__name__})"
