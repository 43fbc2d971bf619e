"""Runs of deliveries (``Consumer.peek_run`` / ``deliver_run``): a consumer that can give a
pull request or its deliver subject several first deliveries at once hands them to the
connection as one run. Every byte a client receives and the consumer's state after each step
are the same as when each message goes alone; the wire-visible behaviour around them (batches,
``max_ack_pending``, filters, gaps, headers, redeliveries) is in the conformance suite.
"""
from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from minijs import Server
from minijs.clock import VirtualClock
from minijs.jetstream.consumers.consumer import Consumer

from test_publish_runs import _client, _roundtrip

_START = 1_800_000_000.0

_CONFIGS: list[tuple[dict, dict, bool]] = [
    # (stream, consumer, does a run happen)
    ({"storage": "memory"}, {}, True),
    ({"storage": "file"}, {}, True),
    ({"storage": "memory"}, {"filter_subject": "a.1"}, True),
    ({"storage": "file"}, {"filter_subject": "a.*"}, True),
    ({"storage": "memory"}, {"filter_subjects": ["a.0", "a.2"]}, False),
    ({"storage": "memory"}, {"max_ack_pending": 7}, True),
    ({"storage": "memory"}, {"ack_policy": "all"}, True),
    ({"storage": "memory"}, {"ack_policy": "none"}, False),
    ({"storage": "memory", "retention": "workqueue"}, {}, True),
    ({"storage": "memory"}, {"deliver_policy": "last_per_subject", "filter_subject": "a.>"}, True),
    ({"storage": "memory"}, {"headers_only": True}, False),
    ({"storage": "memory"}, {"max_deliver": 2, "backoff": [2_000_000_000, 4_000_000_000],
                             "ack_wait": 2_000_000_000}, True),
    ({"storage": "memory"}, {"deliver_subject": "_D.x"}, True),
    ({"storage": "file"}, {"deliver_subject": "_D.x", "max_ack_pending": 10}, True),
    ({"storage": "memory"}, {"deliver_subject": "_D.x", "flow_control": True,
                             "idle_heartbeat": 5_000_000_000}, False),
]


async def _drain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """What the server sends up to a PONG, and whatever follows it in the next moments."""
    data = await _roundtrip(reader, writer)
    while True:
        try:
            chunk = await asyncio.wait_for(reader.read(65536), 0.05)
        except asyncio.TimeoutError:
            return data
        if not chunk:
            return data
        data += chunk


async def _exercise(server: Server, stream: dict, consumer: dict, seed: int) -> list:
    """Rounds of publishes (some with headers, some deleted), fetches of random sizes, and
    acks, NAKs and TERMs of random deliveries, under a virtual clock that moves past some ack
    waits: everything the client receives, and the consumer's state after each round."""
    rng = random.Random(seed)
    clock = server.clock
    reader, writer = await _client(server, pedantic=False)
    push = "deliver_subject" in consumer
    writer.write(b"SUB _I.> 1\r\nSUB _D.x 2\r\n")
    body = json.dumps({"name": "A", "subjects": ["a.>"], **stream}).encode()
    writer.write(b"PUB $JS.API.STREAM.CREATE.A _I.c %d\r\n%s\r\n" % (len(body), body))
    await _roundtrip(reader, writer)
    seen: list[Any] = []
    n = 0

    def publish(count: int) -> bytes:
        nonlocal n
        out = []
        for _ in range(count):
            n += 1
            if rng.random() < 0.1:
                hdr = b"NATS/1.0\r\nK: %d\r\n\r\n" % n
                out.append(b"HPUB a.%d %d %d\r\n%s%d\r\n"
                           % (n % 3, len(hdr), len(hdr) + len(b"%d" % n), hdr, n))
            else:
                out.append(b"PUB a.%d %d\r\n%d\r\n" % (n % 3, len(b"%d" % n), n))
        return b"".join(out)

    writer.write(publish(60))
    for seq in rng.sample(range(1, 61), 6):  # gaps
        body = b'{"seq":%d,"no_erase":true}' % seq
        writer.write(b"PUB $JS.API.STREAM.MSG.DELETE.A _I.x %d\r\n%s\r\n" % (len(body), body))
    body = json.dumps({"stream_name": "A", "config": {
        "durable_name": "d", "ack_policy": "explicit", **consumer}}).encode()
    writer.write(b"PUB $JS.API.CONSUMER.CREATE.A.d _I.d %d\r\n%s\r\n" % (len(body), body))
    seen.append(await _drain(reader, writer))
    cons = server.jetstream.streams["A"].consumers["d"]
    bodies = [b"+ACK", b"", b"-NAK", b"+TERM", b"+WPI"]
    for round_ in range(8):
        if not push:
            body = b'{"batch":%d,"no_wait":true}' % rng.randint(1, 30)
            writer.write(b"PUB $JS.API.CONSUMER.MSG.NEXT.A.d _I.n.%d %d\r\n%s\r\n"
                         % (round_, len(body), body))
        got = await _drain(reader, writer)
        seen.append(got)
        replies = [line.split(b" ")[3] for line in got.split(b"\r\n")
                   if line.startswith((b"MSG a.", b"HMSG a.")) and len(line.split(b" ")) > 4]
        acks = []
        for reply in rng.sample(replies, rng.randint(0, len(replies))):
            payload = rng.choice(bodies)
            acks.append(b"PUB %s %d\r\n%s\r\n" % (reply, len(payload), payload))
        if round_ % 3 == 1:
            acks.append(publish(rng.randint(1, 25)))  # new messages while consuming
        writer.write(b"".join(acks))
        seen.append(await _drain(reader, writer))
        if round_ % 4 == 3:
            clock.advance(3)  # some ack waits run out: redeliveries among first deliveries
            seen.append(await _drain(reader, writer))
        acks_state = cons.acks
        seen.append((cons.dseq, cons.sseq, cons.num_pending(), dict(acks_state.pending),
                     dict(acks_state.rdc), list(acks_state.rdq), acks_state.adflr,
                     acks_state.asflr, server.jetstream.streams["A"].store.state().msgs))
    writer.close()
    return seen


@pytest.mark.parametrize("stream,consumer,runs", _CONFIGS, ids=lambda c: ",".join(
    f"{k}={v}" for k, v in c.items()) if isinstance(c, dict) else str(c))
async def test_consumer_delivers_runs_as_one_by_one(stream: dict, consumer: dict, runs: bool,
                                                    tmp_path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same publishes, fetches and acks with runs of deliveries and with every message
    alone: the same bytes to the client, the same consumer state after every step."""
    taken: list[int] = []
    deliver_run = Consumer.deliver_run

    def counting(self: Consumer, reply: bytes, sms: list) -> None:
        taken.append(len(sms))
        deliver_run(self, reply, sms)

    monkeypatch.setattr(Consumer, "deliver_run", counting)
    results = []
    for with_runs in (True, False):
        if not with_runs:
            monkeypatch.setattr(Consumer, "peek_run", lambda self, limit: [])
        srv = Server(port=-1, jetstream=True, store_dir=str(tmp_path / f"runs-{with_runs}"),
                     seed=3, clock=VirtualClock(start=_START))
        await srv.start()
        try:
            results.append(await _exercise(srv, stream, consumer, seed=17))
        finally:
            await srv.stop()
    assert bool(taken) == runs, taken
    for step, (a, b) in enumerate(zip(results[0], results[1])):
        assert a == b, f"step {step} differs"
    assert len(results[0]) == len(results[1])


@pytest.mark.parametrize("push", [False, True])
async def test_a_long_run_is_written_where_one_by_one_writes(push: bool, tmp_path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A run of deliveries larger than the early-write size, on two subjects, is written at
    exactly the points one by one writes: the same writes, byte for byte."""
    writes: list[list[bytes]] = []
    for with_runs in (True, False):
        if not with_runs:
            monkeypatch.setattr(Consumer, "peek_run", lambda self, limit: [])
        srv = Server(port=-1, jetstream=True, store_dir=str(tmp_path / f"runs-{with_runs}"),
                     clock=VirtualClock(start=_START))
        await srv.start()
        try:
            reader, writer = await _client(srv)
            writer.write(b"SUB _I.> 1\r\nSUB _D.x 2\r\n")
            body = b'{"name":"A","subjects":["a.>"]}'
            writer.write(b"PUB $JS.API.STREAM.CREATE.A _I.c %d\r\n%s\r\n" % (len(body), body))
            writer.write(b"".join(b"PUB a.%d 200\r\n%s\r\n" % (i % 7 // 5,
                                                                bytes([65 + i % 26]) * 200)
                                  for i in range(1500)))
            await _roundtrip(reader, writer)
            conn = next(c for c in srv.connections.values() if c.subs)
            out: list[bytes] = []
            transport_write = conn.transport.write
            monkeypatch.setattr(conn.transport, "write",
                                lambda data: (out.append(bytes(data)), transport_write(data)))
            config = {"durable_name": "d", "ack_policy": "explicit", "max_ack_pending": 5000}
            if push:
                config["deliver_subject"] = "_D.x"
            body = json.dumps({"stream_name": "A", "config": config}).encode()
            writer.write(b"PUB $JS.API.CONSUMER.CREATE.A.d _I.d %d\r\n%s\r\n" % (len(body), body))
            if not push:
                body = b'{"batch":1500,"no_wait":true}'
                writer.write(b"PUB $JS.API.CONSUMER.MSG.NEXT.A.d _I.n %d\r\n%s\r\n"
                             % (len(body), body))
            got = b""
            while got.count(b"MSG a.") < 1500:
                got += await asyncio.wait_for(reader.read(1 << 20), 5)
            await _roundtrip(reader, writer)
            writes.append([w for w in out if b"MSG a." in w])
            writer.close()
        finally:
            await srv.stop()
    assert len(writes[0]) > 2
    assert writes[0] == writes[1]
