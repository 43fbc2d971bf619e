"""minijs: an embeddable mini NATS JetStream server, in pure Python, for testing."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minijs.clock import Clock, WallClock
    from minijs.config import NATS_SERVER_VERSION, ServerConfig
    from minijs.loopclock import LoopClock
    from minijs.randomness import RandomSource
    from minijs.server import Server, ServerThread
    from minijs.virtualclock import VirtualClock

__version__ = "0.1.0"

__all__ = [
    "Clock",
    "LoopClock",
    "NATS_SERVER_VERSION",
    "RandomSource",
    "Server",
    "ServerConfig",
    "ServerThread",
    "VirtualClock",
    "WallClock",
    "__version__",
]

#: Imported on first use (PEP 562), so ``minijs -h``, ``-v`` and the management commands do
#: not pay for asyncio and the server.
_HOMES = {
    "Clock": "minijs.clock",
    "VirtualClock": "minijs.virtualclock",
    "WallClock": "minijs.clock",
    "LoopClock": "minijs.loopclock",
    "RandomSource": "minijs.randomness",
    "NATS_SERVER_VERSION": "minijs.config",
    "ServerConfig": "minijs.config",
    "Server": "minijs.server",
    "ServerThread": "minijs.server",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'minijs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
