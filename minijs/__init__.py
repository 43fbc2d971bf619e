"""minijs: an embeddable mini NATS JetStream server, in pure Python, for testing."""
from minijs.clock import Clock, VirtualClock, WallClock
from minijs.config import NATS_SERVER_VERSION, ServerConfig
from minijs.server import Server, ServerThread

__version__ = "0.1.0"

__all__ = [
    "Clock",
    "NATS_SERVER_VERSION",
    "Server",
    "ServerConfig",
    "ServerThread",
    "VirtualClock",
    "WallClock",
    "__version__",
]
