"""Lame duck mode (``SIGUSR2``): the server stops accepting clients, tells each client that takes
async INFO (protocol 1, past its first PING) with an INFO carrying ``"ldm":true``, waits
``lame_duck_grace_period``, closes the clients one at a time (spread over the rest of
``lame_duck_duration``, at most 1 s apart) and exits with status 0. nats-py calls its
``lame_duck_mode_cb`` on that INFO."""
from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path
from typing import Any

import nats
import pytest

from conformance.helpers import SpawnFn, refused_start
from conformance.rawclient import RawClient, parse_info
from conformance.servers import ServerProcess

LDM_CONFIG = "lame_duck_grace_period: 1s\nlame_duck_duration: 30s\n"


def lame_duck(srv: ServerProcess) -> None:
    assert srv.proc is not None
    srv.proc.send_signal(signal.SIGUSR2)


def expected_ldm_info(connect_info: dict[str, Any]) -> list[tuple[str, Any]]:
    """The INFO after CONNECT without ``connect_info``/``remote_account``, ``ldm`` before
    ``api_lvl`` (nats-server's Info struct order)."""
    out = []
    for key, value in connect_info.items():
        if key in ("connect_info", "remote_account"):
            continue
        if key == "api_lvl":
            out.append(("ldm", True))
        out.append((key, value))
    return out


def test_lame_duck_info_then_close(target: str, spawn: SpawnFn) -> None:
    srv = spawn(config=LDM_CONFIG, jetstream=True)
    c1 = RawClient.connect(srv.host, srv.port)
    after_connect = c1.handshake()
    assert after_connect is not None
    c0 = RawClient.connect(srv.host, srv.port)
    assert c0.handshake(protocol=0) is None
    lame_duck(srv)

    data = c1.read_until_closed(timeout=10)
    assert data.startswith(b"INFO ") and data.endswith(b" \r\n") and data.count(b"\r\n") == 1, data
    ldm = parse_info(data)
    assert list(ldm.items()) == expected_ldm_info(after_connect)
    assert c0.read_until_closed(timeout=10) == b""  # protocol 0: no async INFO
    try:
        socket.create_connection((srv.host, srv.port), timeout=1).close()
        refused = False
    except OSError:
        refused = True
    assert refused
    assert srv.proc is not None
    assert srv.proc.wait(10) == 0


async def test_lame_duck_natspy_callback(target: str, spawn: SpawnFn) -> None:
    srv = spawn(config=LDM_CONFIG)
    fired = asyncio.get_running_loop().create_future()

    async def on_lame_duck() -> None:
        if not fired.done():
            fired.set_result(True)

    nc = await nats.connect(srv.url, lame_duck_mode_cb=on_lame_duck, allow_reconnect=False)
    try:
        lame_duck(srv)
        await asyncio.wait_for(fired, 5)
        assert nc.is_connected  # closed only after the grace period
    finally:
        await nc.close()


@pytest.mark.parametrize("text,message", [
    ("lame_duck_duration: \"10s\"\n", "invalid lame_duck_duration of 10s, minimum is 30 seconds"),
    ("lame_duck_grace_period: \"-1s\"\n", "invalid lame_duck_grace_period, needs to be positive"),
    ("lame_duck_duration: 30s\nlame_duck_grace_period: 40s\n",
     "lame duck grace period (40s) should be strictly lower than lame duck duration (30s)"),
], ids=["duration-under-30s", "negative-grace", "grace-not-below-duration"])
def test_lame_duck_config_refused(target: str, tmp_path: Path, text: str, message: str) -> None:
    """Lame duck settings nats-server refuses stop the server at startup with its message."""
    assert message in refused_start(target, tmp_path, text)
