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


async def _client(server: Server, pedantic: bool = True
                  ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    await reader.readline()  # INFO
    writer.write(b'CONNECT {"verbose":false,"headers":true,"no_responders":true,'
                 b'"pedantic":%s}\r\n' % (b"true" if pedantic else b"false"))
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


# ---------------------------------------------------------------- runs of acks

#: stream config, consumer config, whether some run of plain acks is taken whole
_ACK_CONFIGS = [
    ({"storage": "memory"}, {}, True),
    ({"storage": "file"}, {}, True),
    ({"storage": "memory", "retention": "workqueue"}, {}, False),
    ({"storage": "file", "retention": "interest"}, {}, False),
    ({"storage": "memory"}, {"ack_policy": "all"}, False),
    ({"storage": "memory"}, {"max_deliver": 2}, True),
    ({"storage": "memory"}, {"sample_freq": "100%"}, False),
]


def _ack_subject(line: bytes) -> tuple[bytes, list[bytes]]:
    """A delivery's ack reply subject, and its tokens without the timestamp."""
    reply = line.split(b" ")[3]
    toks = reply.split(b".")
    return reply, toks[:7] + toks[8:]


async def _exercise_acks(server: Server, stream: dict, consumer: dict, seed: int) -> dict:
    """Rounds of a fetch (no wait) and one write of acks for what it got, in random order
    with random bodies, some as requests, among stray subjects: what the client got (ack
    timestamps left out) and the consumer's state after each round."""
    rng = random.Random(seed)
    reader, writer = await _client(server, pedantic=False)  # (as clients connect)
    writer.write(b"SUB _I.> 1\r\n")
    body = json.dumps({"name": "A", "subjects": ["a.>"], **stream}).encode()
    writer.write(b"PUB $JS.API.STREAM.CREATE.A _I.c %d\r\n%s\r\n" % (len(body), body))
    body = json.dumps({"stream_name": "A", "config": {
        "durable_name": "d", "ack_policy": "explicit", **consumer}}).encode()
    writer.write(b"PUB $JS.API.CONSUMER.CREATE.A.d _I.d %d\r\n%s\r\n" % (len(body), body))
    writer.write(b"".join(b"PUB a.%d 2\r\n%02d\r\n" % (i % 3, i % 100) for i in range(120)))
    await _roundtrip(reader, writer)
    cons = server.jetstream.streams["A"].consumers["d"]
    seen: list = []
    bodies = [b"+ACK", b"+ACK", b"", b"", b"-NAK", b"+WPI", b"+TERM", b"+ACK "]
    for round_ in range(6):
        body = b'{"batch":%d,"no_wait":true}' % rng.randint(5, 40)
        writer.write(b"PUB $JS.API.CONSUMER.MSG.NEXT.A.d _I.n.%d %d\r\n%s\r\n"
                     % (round_, len(body), body))
        got = await _roundtrip(reader, writer)
        msgs = [line for line, _ in _messages(got) if line.startswith(b"MSG a.")]
        seen.append([_ack_subject(line)[1] for line in msgs])
        acks = []
        in_order = round_ % 3 == 0  # plain acks of the first ones, in order
        for line in (msgs[:rng.randint(2, len(msgs))] if in_order
                     else rng.sample(msgs, len(msgs))):
            reply, _ = _ack_subject(line)
            if in_order:
                acks.append(b"PUB %s 4\r\n+ACK\r\n" % reply)
                continue
            if rng.random() < 0.1:
                reply = rng.choice([b"$JS.ACK.A.d.1.9999.9999.1.0", b"$JS.ACK.A.d.1.x.y.1.0",
                                    b"$JS.ACK.A.d.1.2", reply.replace(b".1.", b"..", 1)])
            inbox = b" _I.r.%d.%d" % (round_, len(acks)) if rng.random() < 0.2 else b""
            payload = rng.choice(bodies if round_ % 2 else bodies[:4])  # plain acks only
            acks.append(b"PUB %s%s %d\r\n%s\r\n" % (reply, inbox, len(payload), payload))
            if rng.random() < 0.1:
                acks.append(acks[-1])  # the same ack again
        writer.write(b"".join(acks) + b"PING\r\n")
        answers = b""
        while b"PONG\r\n" not in answers:
            answers += await asyncio.wait_for(reader.read(65536), 5)
        while True:  # answers that wait for a commit may come after the PONG
            try:
                answers += await asyncio.wait_for(reader.read(65536), 0.2)
            except asyncio.TimeoutError:
                break
        seen.append(sorted(line for line, _ in _messages(answers.replace(b"PONG\r\n", b""))))
        if cons.durable.persist:
            # the state document reads back as the tracker's state
            from minijs.jetstream.consumers.state import read_document
            saved = read_document(json.loads(cons.durable.document()), 1 << 62)
            second = 1_000_000_000
            assert saved.pending == [(s, p[0], p[2] // second * second)
                                     for s, p in cons.acks.pending.items()]
            assert (saved.adflr, saved.asflr) == cons.acks.reported_floor()
        acks_state = cons.acks
        seen.append((sorted(acks_state.pending), dict(acks_state.rdc), list(acks_state.rdq),
                     acks_state.adflr, acks_state.asflr, acks_state.reported_floor(),
                     server.jetstream.streams["A"].store.state().msgs))
    writer.close()
    return {"seen": seen}


@pytest.mark.parametrize("stream,consumer,whole", _ACK_CONFIGS, ids=lambda c: ",".join(
    f"{k}={v}" for k, v in c.items()) if isinstance(c, dict) else str(c))
async def test_consumer_takes_ack_runs_as_one_by_one(stream: dict, consumer: dict, whole: bool,
                                                     tmp_path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same fetches and acks, with each read's acks routed as a run
    (``Router.publish_shared_run``, taken whole by ``AckTracker.take_shared_run`` where it
    can) and one by one: the same answers, the same deliveries, the same consumer state."""
    from minijs.core.connection import Connection
    from minijs.jetstream.consumers.acks import AckTracker

    taken: list[int] = []
    take = AckTracker.take_shared_run
    in_order: list[bool] = []
    take_in_order = AckTracker._take_in_order

    def counting(self, subjects, replies, payloads):
        done = take(self, subjects, replies, payloads)
        taken.append(len(payloads) if done else 0)
        return done

    def counting_in_order(self, subjects):
        done = take_in_order(self, subjects)
        in_order.append(done)
        return done

    monkeypatch.setattr(AckTracker, "take_shared_run", counting)
    monkeypatch.setattr(AckTracker, "_take_in_order", counting_in_order)
    results = []
    for runs in (True, False):
        if not runs:
            monkeypatch.setattr(Connection, "_publish_shared_run", lambda self, ops, i, n: 0)
        srv = Server(port=-1, jetstream=True, store_dir=str(tmp_path / f"runs-{runs}"), seed=3)
        await srv.start()
        try:
            results.append(await _exercise_acks(srv, stream, consumer, seed=11))
        finally:
            await srv.stop()
    assert taken, "no run of acks reached the consumer: this case tests nothing"
    assert any(taken) == whole
    assert any(in_order) == whole  # the in-order rounds went the one-step way
    assert results[0] == results[1]


async def test_a_long_run_is_written_where_one_by_one_writes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run to one client subscriber larger than the early-write size is framed in one
    loop and written at exactly the points one by one writes (each time the queued output
    reaches ``EARLY_WRITE_SIZE``): the same writes, byte for byte."""
    from minijs.core.connection import Connection

    def one_by_one(self, sub, subject, replies, payloads):
        for reply, payload in zip(replies, payloads):
            self.deliver(sub, subject, reply, None, payload)

    writes: list[list[int]] = []
    for runs in (True, False):
        if not runs:
            monkeypatch.setattr(Connection, "deliver_run", one_by_one)
        srv = Server(port=-1)
        await srv.start()
        try:
            sub_reader, sub_writer = await _client(srv)
            sub_writer.write(b"SUB big 1\r\n")
            await _roundtrip(sub_reader, sub_writer)
            conn = next(c for c in srv.connections.values() if c.subs)
            sizes: list[int] = []
            transport_write = conn.transport.write
            monkeypatch.setattr(conn.transport, "write",
                                lambda data: (sizes.append(len(data)), transport_write(data)))
            reader, writer = await _client(srv)
            run = b"".join(b"PUB big %s200\r\n%s\r\n" % (b"r " if i % 3 else b"",
                                                           bytes([65 + i % 26]) * 200)
                           for i in range(900))
            writer.write(run)
            await _roundtrip(reader, writer)
            got = b""
            while got.count(b"MSG big 1 ") < 900:
                got += await asyncio.wait_for(sub_reader.read(1 << 20), 5)
            assert got.count(b"MSG big 1 r 200\r\n") == 600
            writes.append(sizes)
            sub_writer.close()
            writer.close()
        finally:
            await srv.stop()
    assert len(writes[0]) > 2
    assert writes[0] == writes[1]


async def test_a_burst_is_traced_message_by_message() -> None:
    """With tracing on (``-V``), PUBs that repeat one control line (which the parser hands
    over as one run) are each traced and delivered, in order."""
    import io

    from minijs.log import Logger

    log = io.StringIO()
    srv = Server(port=-1, logger=Logger(log, trace=True))
    await srv.start()
    try:
        got: list[bytes] = []
        srv.subscribe_internal(b"burst", lambda sub, s, r, h, p, o: got.append(p))
        reader, writer = await _client(srv)
        writer.write(b"PUB burst 2\r\nab\r\n" * 4)
        await _roundtrip(reader, writer)
        writer.close()
    finally:
        await srv.stop()
    assert got == [b"ab"] * 4
    assert log.getvalue().count("<<- [PUB burst 2]") == 4
    assert log.getvalue().count('<<- MSG_PAYLOAD: ["ab"]') == 4


def test_a_burst_is_one_parser_operation() -> None:
    """PUBs that repeat one control line come out of the parser as one ``OP_PUB_RUN``."""
    from minijs.protocol.parser import OP_PUB_RUN, Parser

    p = Parser()
    p.pedantic = False
    assert p.feed(b"PUB a r 2\r\nx1\r\nPUB a r 2\r\nx2\r\nPUB a r 2\r\nx3\r\nPUB a 2\r\nx4\r\n") == [
        (OP_PUB_RUN, b"a", b"r", [b"x1", b"x2", b"x3"]), (1, b"a", None, b"x4")]
