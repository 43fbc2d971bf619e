"""Runs of publishes (several PUBs on one subject in one read, routed together by
``Router.publish_run``): the run is really taken, and a change to the subscriptions made by
a receiver partway through a run holds for the rest of it, as it does one by one.

The wire-visible cases (auto-unsubscribe, no-responders, refused replies, size tokens, a
stream filling up) are conformance cases (``conformance/test_publish_runs.py``); these are
the ones only an internal receiver can cause.
"""
from __future__ import annotations

import asyncio

import pytest

from minijs import Server


async def _client(server: Server) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    await reader.readline()  # INFO
    writer.write(b'CONNECT {"verbose":false,"headers":true,"no_responders":true}\r\n')
    return reader, writer


async def _roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """PING, and everything the server sent before its PONG."""
    writer.write(b"PING\r\n")
    await writer.drain()
    data = b""
    while not data.endswith(b"PONG\r\n"):
        data += await asyncio.wait_for(reader.read(65536), 5)
    return data[:-6]


def _pubs(subject: bytes, count: int, reply: bytes | None = None) -> bytes:
    rep = b" " + reply if reply else b""
    return b"".join(b"PUB %s%s 2\r\n%02d\r\n" % (subject, rep, i) for i in range(count))


@pytest.fixture
async def server():
    srv = Server(port=-1)
    await srv.start()
    yield srv
    await srv.stop()


async def test_a_run_is_routed_as_one(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five PUBs on one subject in one write reach the router as one run of five (the
    other tests here would pass one by one too: this one shows they test the run)."""
    runs: list[int] = []
    route_run = server.publish_run

    def spy(subject, replies, payloads, origin):
        runs.append(len(payloads))
        route_run(subject, replies, payloads, origin)

    monkeypatch.setattr(server, "publish_run", spy)
    got: list[bytes] = []
    server.subscribe_internal(b"run.a", lambda sub, s, r, h, p, o: got.append(p))
    reader, writer = await _client(server)
    writer.write(_pubs(b"run.a", 5))
    await _roundtrip(reader, writer)
    assert runs == [5]
    assert got == [b"00", b"01", b"02", b"03", b"04"]
    stats = server.stats
    assert (stats.in_msgs, stats.in_bytes, stats.out_msgs, stats.out_bytes) == (5, 10, 5, 10)
    writer.close()


async def test_receiver_subscribing_partway(server: Server) -> None:
    """The first message of a run makes a new subscription on the run's subject: the
    messages after it reach both receivers."""
    first: list[bytes] = []
    second: list[bytes] = []

    def on_first(sub, subject, reply, hdr, payload, origin):
        first.append(payload)
        if len(first) == 1:
            server.subscribe_internal(b"run.*", lambda *a: second.append(a[4]))

    server.subscribe_internal(b"run.b", on_first)
    reader, writer = await _client(server)
    writer.write(_pubs(b"run.b", 4))
    await _roundtrip(reader, writer)
    assert first == [b"00", b"01", b"02", b"03"]
    assert second == [b"01", b"02", b"03"]
    writer.close()


async def test_receiver_leaving_partway(server: Server) -> None:
    """The only receiver unsubscribes on the second message of a run of requests: the
    requests after it reach no one, so each gets its 503, in order."""
    got: list[bytes] = []

    def on_msg(sub, subject, reply, hdr, payload, origin):
        got.append(payload)
        if len(got) == 2:
            server.unsubscribe_internal(sub)

    server.subscribe_internal(b"run.c", on_msg)
    reader, writer = await _client(server)
    writer.write(b"SUB _INBOX.r.* 1\r\n" + b"".join(
        b"PUB run.c _INBOX.r.%d 2\r\n%02d\r\n" % (i, i) for i in range(4)))
    out = await _roundtrip(reader, writer)
    assert got == [b"00", b"01"]
    status = b"NATS/1.0 503\r\nNats-Subject: run.c\r\n\r\n"
    assert out == b"".join(b"HMSG _INBOX.r.%d 1 %d %d\r\n%s\r\n"
                           % (i, len(status), len(status), status) for i in (2, 3))
    writer.close()


async def test_receiver_closing_partway(server: Server) -> None:
    """A receiver closed (not yet removed) partway through a run gets nothing more; the
    rest of the run finds no one."""
    got: list[bytes] = []

    def on_msg(sub, subject, reply, hdr, payload, origin):
        got.append(payload)
        sub.closed = True

    server.subscribe_internal(b"run.d", on_msg)
    reader, writer = await _client(server)
    writer.write(_pubs(b"run.d", 3))
    await _roundtrip(reader, writer)
    assert got == [b"00"]
    assert server.stats.out_msgs == 1
    writer.close()


async def test_counters_move_message_by_message(server: Server) -> None:
    """A receiver that reads the counters (as a ``$SYS`` statistics request does) sees each
    message of a run counted in, and the ones before it delivered, as one by one."""
    seen: list[tuple[int, int, int]] = []

    def on_msg(sub, subject, reply, hdr, payload, origin):
        stats = server.stats
        seen.append((stats.in_msgs, stats.out_msgs, origin.in_msgs))

    server.subscribe_internal(b"run.e", on_msg)
    reader, writer = await _client(server)
    await _roundtrip(reader, writer)
    sublist = server.sublist
    hits, misses = sublist.cache_hits, sublist.cache_misses
    writer.write(_pubs(b"run.e", 3))
    await _roundtrip(reader, writer)
    assert seen == [(1, 0, 1), (2, 1, 2), (3, 2, 3)]
    # /subsz's matches: one per message, the first a miss (a subject not matched before)
    assert (sublist.cache_hits - hits, sublist.cache_misses - misses) == (2, 1)
    writer.close()
