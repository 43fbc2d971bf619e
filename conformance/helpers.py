"""Shared type aliases and small helpers for the conformance cases: raw clients after the
handshake and their subscriptions, a server's log and HTTP monitoring port, restartable
servers."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.rawclient import RawClient
from conformance.servers import URL_TARGET, Endpoint, ServerProcess, command_for

#: ``spawn(args=[...], config="...")`` -> a freshly started, specially configured server.
SpawnFn = Callable[..., ServerProcess]
#: ``raw(endpoint=None, **kwargs)`` -> a connected RawClient that has read INFO.
RawFactory = Callable[..., RawClient]
#: ``await nats_connect(endpoint=None, **kwargs)`` -> a nats-py client.
NatsFactory = Callable[..., Any]


def connect_line(**fields: Any) -> bytes:
    """``CONNECT {json}\\r\\n`` with exactly the given fields."""
    return b"CONNECT " + json.dumps(fields, separators=(",", ":")).encode() + b"\r\n"


def ready(raw: RawFactory, endpoint: Endpoint | None = None, **options: Any) -> RawClient:
    """A raw client that has completed CONNECT+PING (non-verbose unless overridden)."""
    client = raw(endpoint)
    client.handshake(**options)
    return client


def subscribe(client: RawClient, subject: str, sid: int | str, queue: str | None = None) -> None:
    """SUB and wait (PING/PONG) until the server has registered it."""
    q = f" {queue}" if queue else ""
    client.send(f"SUB {subject}{q} {sid}\r\n".encode())
    assert client.barrier() == b""


async def ensure_subs_unpublished(nc: Any) -> None:
    """:func:`ensure_subs` for a nats-py connection that cannot see its own marker (its
    permissions refuse the publish, or it was made with ``no_echo``): two flushes. The first
    PING may overtake SUBs still queued in the client, but the flusher task that writes them
    was woken before that PING went out, so it has run by the time the PONG is read; the
    second PING follows the SUBs, and its PONG means the server has them."""
    await nc.flush()
    await nc.flush()


async def ensure_subs(nc: Any, timeout: float = 5.0) -> None:
    """Wait until the server has processed every SUB nats-py client ``nc`` sent so far.

    nats-py's ``flush()`` writes its PING straight to the socket, ahead of the SUBs its
    flusher task has not written yet, so the PONG can come back before they are processed
    (seen on nats-server, where another connection's message then found no interest). So
    instead subscribe to a fresh marker subject last and publish to it until the marker comes
    back: the server handles one connection's ops in order, so all earlier SUBs are in place.
    """
    import asyncio
    import uuid

    marker = f"_conformance.marker.{uuid.uuid4().hex}"
    sub = await nc.subscribe(marker)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while True:
            await nc.publish(marker, b"")
            try:
                await sub.next_msg(timeout=0.2)
                return
            except Exception as exc:  # nats.errors.TimeoutError; retry until the deadline
                if loop.time() > deadline:
                    raise AssertionError(
                        "marker never came back: subscriptions not in place"
                    ) from exc
    finally:
        await sub.unsubscribe()


def refused_start(target: str, tmp_path: Path, text: str) -> str:
    """Start ``target`` with config ``text`` expecting it to refuse: a non-zero exit before
    "Server is ready"; returns its stderr. Needs a server of our own (skipped with ``--url``,
    as every case that spawns one)."""
    if target == URL_TARGET:
        pytest.skip("needs a specially configured server; not possible with --url")
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    proc = subprocess.run(command_for(target) + ["-c", str(conf), "-p", "-1", "-a",
                                                 "127.0.0.1"],
                          capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Server is ready" not in proc.stderr
    return proc.stderr


def restartable(spawn: SpawnFn, tmp_path: Path) -> Callable[[], ServerProcess]:
    """A function starting a JetStream server on the same store directory each call (the
    previous one stopped or killed first), to check what survives a restart."""
    sd = str(tmp_path / "sd")
    return lambda: spawn(args=["-js", "-sd", sd])


def wait_for_log(server: object, needle: str, timeout: float = 3.0) -> str:
    """Wait until the server's captured stderr contains ``needle``; return the log."""
    deadline = time.monotonic() + timeout
    while True:
        log: str = server.log  # type: ignore[attr-defined]
        if needle in log or time.monotonic() > deadline:
            return log
        time.sleep(0.02)


def log_lines(srv: ServerProcess, needle: str, timeout: float = 6.0) -> list[str]:
    """The server's log lines containing ``needle``, once there is one (or [] after
    ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [ln for ln in srv.log.splitlines() if needle in ln]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def get_json(port: int, path: str) -> Any:
    """GET a monitoring endpoint (``path`` from its leading ``/``) on loopback ``port`` and
    decode its JSON; failures name the endpoint."""
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read())
    except urllib.error.URLError as exc:
        raise AssertionError(f"GET {path}: {exc}") from exc
