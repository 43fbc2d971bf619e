"""Runs of publishes (several PUBs on one subject in one read, routed together by
``Router.publish_run``): the run is really taken, and a change to the subscriptions made by
a receiver partway through a run holds for the rest of it, as it does one by one.

The wire-visible cases (auto-unsubscribe, no-responders, refused replies, size tokens, a
stream filling up) are conformance cases (``conformance/test_publish_runs.py``); these are
the ones only an internal receiver can cause.
"""
from __future__ import annotations

import asyncio
import json
import random

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
        chunk = await asyncio.wait_for(reader.read(65536), 5)
        assert chunk, f"connection closed after {data[-200:]!r}"
        data += chunk
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


# ---------------------------------------------------------------- a stream taking runs whole

_CONFIGS = [
    {"storage": "memory"},
    {"storage": "file"},
    {"storage": "memory", "max_msgs": 50},
    {"storage": "file", "max_msgs": 50, "discard": "new"},
    {"storage": "memory", "max_bytes": 6000, "discard": "new"},
    {"storage": "file", "max_bytes": 9000},
    {"storage": "memory", "max_msg_size": 40},
    {"storage": "memory", "max_msgs_per_subject": 30, "discard": "new",
     "discard_new_per_subject": True},
    {"storage": "memory", "no_ack": True},
    {"storage": "file", "max_age": 60_000_000_000, "duplicate_window": 1_000_000_000},
]


async def _exercise(server: Server, config: dict, seed: int) -> dict:
    """Runs of publishes (random lengths, payloads and replies) into a stream with
    ``config``, with a pull consumer created halfway: every frame the publisher and the
    consumer's requester got, in order, the stream's state and its messages."""
    rng = random.Random(seed)
    reader, writer = await _client(server)
    writer.write(b"SUB _I.* 1\r\n")
    body = json.dumps({"name": "R", "subjects": ["r.>"], **config}).encode()
    writer.write(b"PUB $JS.API.STREAM.CREATE.R _I.c %d\r\n%s\r\n" % (len(body), body))
    frames = [await _roundtrip(reader, writer)]
    for round_ in range(8):
        if round_ == 4:
            body = json.dumps({"stream_name": "R", "config": {
                "durable_name": "d", "ack_policy": "explicit"}}).encode()
            writer.write(b"PUB $JS.API.CONSUMER.CREATE.R.d _I.d %d\r\n%s\r\n" % (len(body), body))
        subject = rng.choice([b"r.a", b"r.b"])
        run = []
        for i in range(rng.randint(2, 90)):
            reply = b" _I.%d.%d" % (round_, i) if rng.random() < 0.9 else b""
            size = rng.randint(0, 60) if rng.random() < 0.05 else rng.randint(0, 30)
            payload = bytes(rng.randrange(97, 123) for _ in range(size))
            run.append(b"PUB %s%s %d\r\n%s\r\n" % (subject, reply, len(payload), payload))
        writer.write(b"".join(run))
        frames.append(await _roundtrip(reader, writer))
    writer.write(b"PUB $JS.API.STREAM.INFO.R _I.i 0\r\n\r\n")
    info = await _roundtrip(reader, writer)
    state = json.loads(info.split(b"\r\n", 1)[1].rsplit(b"\r\n", 1)[0])["state"]
    body = b'{"batch":1000,"no_wait":true}'
    writer.write(b"PUB $JS.API.CONSUMER.MSG.NEXT.R.d _I.n %d\r\n%s\r\n" % (len(body), body))
    pulled = await _roundtrip(reader, writer)
    writer.close()
    for key in ("first_ts", "last_ts"):
        state.pop(key)
    # the API's answers carry times: only the answers to the publishes are compared
    frames = [[m for m in _messages(chunk) if m[0].split(b" ")[1] not in (b"_I.c", b"_I.d")]
              for chunk in frames]
    # the delivered messages' ack subjects carry their timestamps: subject and payload
    pulled_msgs = [(line.split(b" ")[1], data) for line, data in _messages(pulled)]
    return {"frames": frames, "state": state, "pulled": pulled_msgs}


def _messages(data: bytes) -> list[tuple[bytes, bytes]]:
    """The (control line, payload) of each MSG or HMSG in ``data``."""
    out = []
    pos = 0
    while pos < len(data):
        nl = data.index(b"\r\n", pos)
        line = data[pos:nl]
        size = int(line.rsplit(b" ", 1)[1])
        out.append((line, data[nl + 2:nl + 2 + size]))
        pos = nl + 4 + size
    return out


@pytest.mark.parametrize("config", _CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
async def test_stream_takes_runs_as_one_by_one(config: dict, tmp_path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The same runs into the same stream, taken whole where the stream can
    (``Stream.take_run``) and with every message going through ``Stream._on_publish``: the
    same answers in the same order, the same state, the same messages for a consumer."""
    from minijs.jetstream.streams.stream import Stream

    taken: list[int] = []
    take = Stream.take_run

    def counting(self, subject, replies, payloads):
        done = take(self, subject, replies, payloads)
        if done:
            taken.append(len(payloads))
        return done

    results = []
    for whole in (True, False):
        monkeypatch.setattr(Stream, "take_run", counting if whole else
                            lambda self, subject, replies, payloads: False)
        srv = Server(port=-1, jetstream=True, store_dir=str(tmp_path / f"whole-{whole}"))
        await srv.start()
        try:
            results.append(await _exercise(srv, config, seed=7))
        finally:
            await srv.stop()
    assert taken, "no run was taken whole: this case tests nothing"
    assert results[0] == results[1]
