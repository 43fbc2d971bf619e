"""Server keep-alive, slow consumers and connection limits."""
from __future__ import annotations

import threading
import time

from conformance.helpers import RawFactory, SpawnFn
from conformance.rawclient import PING, PONG, ConnectionClosed, RawClient, msg, pub, split_frames

KEEPALIVE_CONF = 'ping_interval: "1s"\nping_max: 2\n'


def test_server_ping_then_stale_connection(target: str, spawn: SpawnFn) -> None:
    """With ping_interval 1s / ping_max 2, a client that never answers gets two PINGs, then
    ``-ERR 'Stale Connection'`` and a close (at about 3 s)."""
    ep = spawn(config=KEEPALIVE_CONF)
    with RawClient.connect(ep.host, ep.port, auto_pong=False) as client:
        client.handshake()
        start = time.monotonic()
        client.expect(PING, timeout=3)
        first = time.monotonic() - start
        client.expect(PING, timeout=3)
        client.assert_closed(timeout=3, expect_data=b"-ERR 'Stale Connection'\r\n")
        total = time.monotonic() - start
        assert 0.5 <= first <= 2.0, f"first PING after {first:.2f}s"
        assert 2.0 <= total <= 5.0, f"stale after {total:.2f}s"


def test_answering_pings_keeps_connection(target: str, spawn: SpawnFn, subject: str) -> None:
    """A client that answers every server PING stays connected past ping_max intervals."""
    ep = spawn(config=KEEPALIVE_CONF)
    with RawClient.connect(ep.host, ep.port, auto_pong=False) as client:
        client.handshake()
        for _ in range(3):  # an unanswering client is dropped at the third tick
            client.expect(PING, timeout=3)
            client.send(PONG)
        client.send(f"SUB {subject} 1\r\n".encode() + pub(subject, b"alive") + PING)
        # A server PING may cross our PING; answer it and keep reading.
        frames = []
        while True:
            frame = client.read_frame(timeout=3)
            if frame == PING:
                client.send(PONG)
                continue
            frames.append(frame)
            if frame == PONG:
                break
        assert frames == [msg(subject, 1, b"alive"), PONG]


def test_slow_consumer_disconnected(target: str, spawn: SpawnFn, subject: str) -> None:
    """A subscriber that never reads is cut off once ``max_pending`` is exceeded (no -ERR);
    another subscriber on the same subject keeps receiving every message."""
    ep = spawn(config='max_pending: 65536\nmax_payload: 4096\nwrite_deadline: "2s"\n')
    count = 6000  # 6 MB: more than loopback socket buffers can absorb
    payload = b"z" * 1024
    frame = msg(subject, 1, payload)
    slow = RawClient.connect(ep.host, ep.port, rcvbuf=4096)
    good = RawClient.connect(ep.host, ep.port)
    publisher = RawClient.connect(ep.host, ep.port)
    try:
        for client in (slow, good):
            client.handshake()
            client.send(f"SUB {subject} 1\r\n".encode())
            assert client.barrier() == b""
        publisher.handshake()

        received = 0
        errors: list[BaseException] = []

        def read_good() -> None:
            nonlocal received
            try:
                while received < count:
                    got = good.read_frame(timeout=20)
                    assert got == frame, got[:80]
                    received += 1
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        reader = threading.Thread(target=read_good, daemon=True)
        reader.start()
        batch = pub(subject, payload) * 100
        for _ in range(count // 100):
            publisher.send(batch)
        assert publisher.barrier(timeout=30) == b""
        reader.join(30)
        assert not errors, errors
        assert received == count

        # The slow subscriber was dropped: draining its socket ends in EOF, and everything it
        # got is a run of our MSG frames (possibly cut mid-frame) with no -ERR.
        data = slow.read_until_closed(timeout=15)
        frames = split_frames(data)
        assert all(f == frame for f in frames[:-1]), "unexpected bytes for the slow consumer"
        if frames:
            assert frame.startswith(frames[-1])
        assert len(frames) < count, "slow consumer got everything: it was never cut off"
        # The good subscriber is still connected.
        assert good.barrier() == b""
    finally:
        for client in (slow, good, publisher):
            client.close()


def test_max_connections(target: str, spawn: SpawnFn) -> None:
    """Beyond ``max_connections`` a new client gets INFO, then
    ``-ERR 'maximum connections exceeded'`` and a close."""
    ep = spawn(config="max_connections: 2\n")
    first = RawClient.connect(ep.host, ep.port)
    second = RawClient.connect(ep.host, ep.port)
    try:
        first.handshake()
        second.handshake()
        third = RawClient(ep.host, ep.port)
        try:
            assert third.read_line().startswith(b"INFO {")
            third.assert_closed(expect_data=b"-ERR 'maximum connections exceeded'\r\n")
        finally:
            third.close()
        # Existing connections are unaffected; once one leaves, a new one is accepted.
        assert first.barrier() == b""
        second.close()
        deadline = time.monotonic() + 5
        while True:
            fourth = RawClient.connect(ep.host, ep.port)
            try:
                fourth.handshake()
                break
            except (ConnectionClosed, AssertionError, OSError):
                fourth.close()
                assert time.monotonic() < deadline, "slot never freed after a disconnect"
                time.sleep(0.05)
        fourth.close()
    finally:
        first.close()
        second.close()


def test_default_first_server_ping(target: str, raw: RawFactory) -> None:
    """With default settings the server sends its first keep-alive PING about 2 s after the
    connection opens (not only after the 2-minute ping interval)."""
    start = time.monotonic()
    client = raw(auto_pong=False)
    client.handshake()
    client.expect(PING, timeout=5)
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed <= 4.0, f"first PING after {elapsed:.2f}s"
    client.send(PONG)
    assert client.barrier() == b""
