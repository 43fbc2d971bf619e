"""Fixtures shared by minijs's own JetStream tests: an in-loop server on a virtual clock with
a store directory, and a nats-py client on it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
async def server(clock: VirtualClock, tmp_path: Path) -> Any:
    srv = Server(port=0, jetstream=True, clock=clock, store_dir=str(tmp_path / "js"))
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def nc(server: Server) -> Any:
    client = await nats.connect(server.client_url)
    yield client
    await client.close()
