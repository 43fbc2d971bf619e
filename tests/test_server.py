"""The in-process server with real clients: nats-py, a raw socket, the thread helper, the clock."""
from __future__ import annotations

import asyncio
import json
import socket

import nats
import pytest
from nats.errors import NoRespondersError

from minijs import Server, ServerThread, VirtualClock


async def raw_connect(server: Server, connect: dict | None = None):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    info = await reader.readline()
    if connect is not None:
        writer.write(b"CONNECT " + json.dumps(connect).encode() + b"\r\n")
    return reader, writer, json.loads(info[5:])


async def read_until_closed(reader: asyncio.StreamReader, timeout: float = 2.0) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout)


async def test_start_stop_and_info(minijs_async_server: Server):
    reader, writer, info = await raw_connect(minijs_async_server)
    assert info["port"] == minijs_async_server.port
    assert info["headers"] is True and info["max_payload"] == 1024 * 1024
    assert len(info["server_id"]) == 56 and info["server_id"].startswith("N")
    writer.close()


async def test_nats_py_pub_sub_request_queue(nats_client):
    nc = nats_client
    got: list[bytes] = []
    q_got: dict[str, int] = {"a": 0, "b": 0}

    async def on_msg(msg):
        got.append(msg.data)

    async def handler(msg):
        await msg.respond(msg.data.upper())

    await nc.subscribe("t.*", cb=on_msg)
    for name in q_got:
        async def q(msg, name=name):
            q_got[name] += 1
        await nc.subscribe("work", queue="g", cb=q)
    await nc.subscribe("svc", cb=handler)
    await nc.flush()
    await nc.flush()
    for i in range(20):
        await nc.publish("t.x", b"%d" % i)
        await nc.publish("work", b"w")
    reply = await nc.request("svc", b"hello", timeout=2)
    assert reply.data == b"HELLO"
    with pytest.raises(NoRespondersError):
        await nc.request("nobody.home", b"", timeout=2)
    await nc.flush()
    await asyncio.sleep(0.05)
    assert got == [b"%d" % i for i in range(20)]
    assert sum(q_got.values()) == 20


def test_server_thread_serves_sync_code():
    with ServerThread() as srv:
        sock = socket.create_connection(("127.0.0.1", srv.port))
        sock.settimeout(2)
        info = sock.recv(4096)
        assert info.startswith(b"INFO ") and info.endswith(b" \r\n")
        sock.sendall(b'CONNECT {"verbose":false}\r\nSUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n')
        data = b""
        while b"PONG\r\n" not in data:
            data += sock.recv(4096)
        assert b"MSG a 1 2\r\nhi\r\n" in data
        sock.close()


def test_sync_fixture(minijs_url):
    assert minijs_url.startswith("nats://127.0.0.1:")


@pytest.mark.minijs(max_payload=16)
async def test_marker_configures_fixture(minijs_server):
    assert minijs_server.server.config.max_payload == 16


async def test_keepalive_runs_on_real_time_and_detects_stale():
    async with Server(port=0, ping_interval=0.1, ping_max=2) as server:
        reader, writer, _ = await raw_connect(server, {"verbose": False})
        assert await asyncio.wait_for(reader.readline(), 2) == b"PING\r\n"
        assert await asyncio.wait_for(reader.readline(), 2) == b"PING\r\n"
        assert await read_until_closed(reader) == b"-ERR 'Stale Connection'\r\n"


async def test_virtual_time_never_disconnects_a_live_client():
    """Keep-alive and auth deadlines follow real time: a jump of an hour sends no PING and
    closes nobody, authenticated or not yet."""
    clock = VirtualClock()
    async with Server(port=0, clock=clock, ping_interval=10, ping_max=2,
                      user="u", password="p") as server:
        reader, writer, _ = await raw_connect(server)
        await clock.advance_async(3600)
        await asyncio.sleep(0.05)
        assert not reader.at_eof()
        writer.write(b'CONNECT {"verbose":false,"user":"u","pass":"p"}\r\nPING\r\n')
        assert await asyncio.wait_for(reader.readline(), 1) == b"PONG\r\n"
        await clock.advance_async(3600)
        writer.write(b"PING\r\n")
        assert await asyncio.wait_for(reader.readline(), 1) == b"PONG\r\n"


async def test_auth_timeout_on_real_time():
    async with Server(port=0, user="u", password="p", auth_timeout=0.2) as server:
        reader, writer, info = await raw_connect(server)
        assert info["auth_required"] is True
        assert await read_until_closed(reader) == b"-ERR 'Authentication Timeout'\r\n"


async def test_token_and_user_auth():
    async with Server(port=0, token="s3cret") as server:
        reader, writer, _ = await raw_connect(server, {"auth_token": "nope"})
        assert await read_until_closed(reader) == b"-ERR 'Authorization Violation'\r\n"
        nc = await nats.connect(server.client_url, token="s3cret")
        await nc.close()
    async with Server(port=0, user="u", password="p") as server:
        nc = await nats.connect(server.client_url, user="u", password="p")
        await nc.close()


async def test_slow_consumer_is_cut_and_others_keep_receiving():
    async with Server(port=0, max_pending=256 * 1024) as server:
        # A raw subscriber that never reads, with a tiny receive buffer.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b'CONNECT {"verbose":false}\r\nSUB big 1\r\nPING\r\n')
        good = await nats.connect(server.client_url)
        count = 0

        async def on_msg(msg):
            nonlocal count
            count += 1

        await good.subscribe("big", cb=on_msg)
        await good.flush()
        await asyncio.sleep(0.05)
        pub = await nats.connect(server.client_url)
        payload = b"x" * 8192
        for _ in range(400):
            await pub.publish("big", payload)
        await pub.flush()
        for _ in range(100):
            if count == 400:
                break
            await asyncio.sleep(0.02)
        assert count == 400
        assert server.stats.slow_consumers == 1
        assert len(server.connections) == 2
        sock.close()
        await pub.close()
        await good.close()


async def test_graceful_stop_flushes_pending_output():
    server = Server(port=0)
    await server.start()
    reader, writer, _ = await raw_connect(server, {"verbose": False})
    writer.write(b"SUB a 1\r\nPUB a 3\r\nabc\r\nPING\r\n")
    await writer.drain()
    assert await asyncio.wait_for(reader.readuntil(b"PONG\r\n"), 1) == b"MSG a 1 3\r\nabc\r\nPONG\r\n"
    await server.stop()
    assert await read_until_closed(reader) == b""


async def test_max_connections():
    async with Server(port=0, max_connections=1) as server:
        r1, w1, _ = await raw_connect(server)
        r2, w2, _ = await raw_connect(server)
        assert await read_until_closed(r2) == b"-ERR 'maximum connections exceeded'\r\n"
        w1.close()


async def test_lame_duck_mode_in_process_on_the_virtual_clock():
    """Server.lame_duck_mode(): listener closed, an ldm INFO to the protocol-1 client that had
    its first PONG, nothing to a protocol-0 one, both closed after the grace period (on the
    server clock), then the server stops."""
    clock = VirtualClock()
    server = Server(port=0, clock=clock, jetstream=True, lame_duck_grace_period=5,
                    lame_duck_duration=30)
    await server.start()
    r1, w1, _ = await raw_connect(server, {"verbose": False, "protocol": 1})
    w1.write(b"PING\r\n")
    assert await asyncio.wait_for(r1.readline(), 1) == b"PONG\r\n"
    connect_info = json.loads((await asyncio.wait_for(r1.readline(), 1))[5:])
    r0, w0, _ = await raw_connect(server, {"verbose": False, "protocol": 0})
    w0.write(b"PING\r\n")
    assert await asyncio.wait_for(r0.readline(), 1) == b"PONG\r\n"
    ldm = asyncio.ensure_future(server.lame_duck_mode())
    line = await asyncio.wait_for(r1.readline(), 1)
    info = json.loads(line[5:])
    assert info["ldm"] is True and info["server_id"] == connect_info["server_id"]
    assert list(info)[-3:] == ["ldm", "api_lvl", "xkey"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    await asyncio.sleep(0.05)
    assert not ldm.done() and not r1.at_eof()  # the grace period runs on the virtual clock
    await clock.advance_async(5)
    for _ in range(4):
        await clock.advance_async(1)
    await asyncio.wait_for(ldm, 2)
    assert await read_until_closed(r1) == b"" and await read_until_closed(r0) == b""
    assert not server.running
