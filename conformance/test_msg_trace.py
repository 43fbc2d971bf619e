"""Message tracing: ``Nats-Trace-Dest`` / ``Nats-Trace-Only`` (nats-server ``msgtrace.go``).

A traced message produces one JSON event message on the trace destination:
``{"server": {...}, "request": {"header": ..., "msgsize": n}, "events": [...]}`` with an
ingress (``in``), an egress (``eg``) per client subscription, the JetStream API service import
(``si``) and the stream that took it (``js``). Timestamps, client ids and the server's system
sequence differ run to run and are checked for form, then normalized. The order of the events
after the ingress follows nats-server's sublist, which it does not promise: compared as sets.
"""
from __future__ import annotations

import asyncio
import gzip
import json
import re
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsClient

from conformance.helpers import NatsFactory, ensure_subs
from conformance.servers import Endpoint

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
FEATURE_FLAGS = {"js_ack_fc_v2": False, "js_api_reply_v2": False, "js_raft_delete_range": True,
                 "js_snapshot_sources": False}


class Traces:
    """Collects the trace messages sent to one destination subject."""

    def __init__(self, nc: NatsClient, dest: str) -> None:
        self.nc = nc
        self.dest = dest
        self.msgs: asyncio.Queue = asyncio.Queue()

    async def start(self) -> "Traces":
        async def cb(m: Any) -> None:
            await self.msgs.put(m)
        await self.nc.subscribe(self.dest, cb=cb)
        await ensure_subs(self.nc)
        return self

    async def next_raw(self) -> Any:
        return await asyncio.wait_for(self.msgs.get(), 5)

    async def next(self) -> dict[str, Any]:
        m = await self.next_raw()
        assert m.headers is None
        return json.loads(m.data)


def normalize(event: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    """Check the volatile fields' form and replace them: timestamps by ``TS``, client ids by the
    test's names for them, the server block by its checked shape."""
    server = event["server"]
    assert TS_RE.match(server["time"]), server["time"]
    assert isinstance(server["seq"], int) and server["seq"] > 0
    server = dict(server, time="TS", seq="SEQ")
    events = []
    for ev in event["events"]:
        assert TS_RE.match(ev["ts"]), ev
        ev = dict(ev, ts="TS")
        if "cid" in ev:
            ev["cid"] = names.get(ev["cid"], ev["cid"])
        events.append(ev)
    return {"server": server, "request": event["request"], "events": events}


def as_set(events: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(e, sort_keys=True) for e in events)


def server_block(nc: NatsClient, jetstream: bool) -> dict[str, Any]:
    info = nc._server_info
    return {"name": info["server_name"], "host": info["host"], "id": info["server_id"],
            "ver": "2.15.1", "feature_flags": FEATURE_FLAGS, "jetstream": jetstream,
            "flags": 7 if jetstream else 0, "seq": "SEQ", "time": "TS"}


def ingress(subject: str, cid: str, name: str = "") -> dict[str, Any]:
    ev: dict[str, Any] = {"type": "in", "ts": "TS", "kind": 0, "cid": cid}
    if name:
        ev["name"] = name
    ev.update(acc="$G", subj=subject)
    return ev


def egress(cid: str, sub: str, name: str = "", queue: str = "", error: str = "") -> dict:
    ev: dict[str, Any] = {"type": "eg", "ts": "TS", "kind": 0, "cid": cid}
    if name:
        ev["name"] = name
    ev["sub"] = sub
    if queue:
        ev["queue"] = queue
    if error:
        ev["error"] = error
    return ev


def msgsize(headers: dict[str, str], payload: bytes) -> int:
    """The size nats-py sends on the HPUB line for these headers and payload."""
    block = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return len(block.encode()) + len(payload)


def snappy_unframe(data: bytes) -> bytes:
    """Decode the snappy framing format (stream identifier, compressed and uncompressed
    chunks; CRCs not checked): enough to read a trace event compressed by either server."""
    out = bytearray()
    i = 0
    while i < len(data):
        kind, n = data[i], int.from_bytes(data[i + 1:i + 4], "little")
        body = data[i + 4:i + 4 + n]
        i += 4 + n
        if kind == 0x00:
            out += snappy_block(body[4:])
        elif kind == 0x01:
            out += body[4:]
        else:
            assert kind == 0xFF or 0x80 <= kind <= 0xFE, kind
    return bytes(out)


def snappy_block(b: bytes) -> bytes:
    i = 0
    shift = 0
    while b[i] & 0x80:  # the uncompressed length (a varint), not needed
        i += 1
        shift += 7
    i += 1
    out = bytearray()
    while i < len(b):
        tag = b[i]
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            i += 1
            if ln >= 60:
                extra = ln - 59
                ln = int.from_bytes(b[i:i + extra], "little")
                i += extra
            ln += 1
            out += b[i:i + ln]
            i += ln
            continue
        if kind == 1:
            ln = 4 + ((tag >> 2) & 7)
            off = ((tag & 0xE0) << 3) | b[i + 1]
            i += 2
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i + 1:i + 3], "little")
            i += 3
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i + 1:i + 5], "little")
            i += 5
        for _ in range(ln):
            out.append(out[-off])
    return bytes(out)


async def barrier(*clients: NatsClient) -> None:
    """Flush each client. The publisher too: nats-server 2.15.1 now and then loses the first
    PUB a fresh nats-py connection sends right after connecting (about 1 in 20 here, headers or
    not); a round trip first avoids it."""
    for nc in clients:
        await nc.flush()


# ------------------------------------------------------------------------- core


async def test_trace_events_for_subscribers(target: str, nats_connect: NatsFactory,
                                            subject: str) -> None:
    """Ingress, then an egress per subscription: plain, wildcard, queue member, the
    publisher's own (echo on); the message itself is delivered unchanged."""
    pub = await nats_connect(name="pubber")
    sub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    s_plain = await sub.subscribe(f"{subject}.x")
    s_wild = await sub.subscribe(f"{subject}.*")
    s_queue = await sub.subscribe(f"{subject}.x", queue="q")
    s_own = await pub.subscribe(f"{subject}.>")
    await barrier(sub, pub)
    headers = {"Nats-Trace-Dest": f"{subject}.trace", "X-Mine": "a<b&c>"}
    await pub.publish(f"{subject}.x", b"hello", headers=headers)
    event = normalize(await traces.next(), {pub.client_id: "pub", sub.client_id: "sub"})
    # The server block says whether JetStream is on (the --url target may have it).
    assert event["server"] == server_block(pub, bool(pub._server_info.get("jetstream")))
    assert event["request"] == {"header": {k: [v] for k, v in headers.items()},
                                "msgsize": msgsize(headers, b"hello")}
    assert event["events"][0] == ingress(f"{subject}.x", "pub", "pubber")
    assert as_set(event["events"][1:]) == as_set([
        egress("sub", f"{subject}.x"),
        egress("sub", f"{subject}.*"),
        egress("sub", f"{subject}.x", queue="q"),
        egress("pub", f"{subject}.>", name="pubber"),
    ])
    for s in (s_plain, s_wild, s_queue, s_own):
        m = await s.next_msg(timeout=5)
        assert m.data == b"hello" and m.headers == headers


async def test_trace_event_json_escaping(target: str, nats_connect: NatsFactory,
                                         subject: str) -> None:
    """The event is Go's JSON: ``<``, ``>`` and ``&`` as ``\\u003c``/``\\u003e``/``\\u0026``,
    other text as UTF-8."""
    pub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    await pub.publish(f"{subject}.x", b"", headers={"Nats-Trace-Dest": f"{subject}.trace",
                                                    "X-Y": "a>&\u00e9<"})
    raw = (await traces.next_raw()).data
    assert b'"X-Y":["a\\u003e\\u0026\xc3\xa9\\u003c"]' in raw


async def test_trace_no_echo_egress_error(target: str, nats_connect: NatsFactory,
                                          subject: str) -> None:
    """A publisher without echo subscribed to its own subject: an egress with the reason."""
    pub = await nats_connect(no_echo=True)
    other = await nats_connect()
    traces = await Traces(other, f"{subject}.trace").start()
    await pub.subscribe(f"{subject}.x")
    await barrier(pub)
    await pub.publish(f"{subject}.x", b"", headers={"Nats-Trace-Dest": f"{subject}.trace"})
    event = normalize(await traces.next(), {pub.client_id: "pub"})
    assert event["events"] == [
        ingress(f"{subject}.x", "pub"),
        egress("pub", f"{subject}.x", error="Not delivered because of no echo"),
    ]


async def test_trace_no_subscribers(target: str, nats_connect: NatsFactory,
                                    subject: str) -> None:
    """Nobody subscribed: the event has the ingress alone."""
    pub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    await pub.publish(f"{subject}.nobody", b"x", headers={"Nats-Trace-Dest": f"{subject}.trace"})
    event = normalize(await traces.next(), {pub.client_id: "pub"})
    assert event["events"] == [ingress(f"{subject}.nobody", "pub")]


@pytest.mark.parametrize("only", ["true", "1", "on", "TRUE"])
async def test_trace_only_delivers_nothing(target: str, nats_connect: NatsFactory,
                                           subject: str, only: str) -> None:
    """``Nats-Trace-Only`` (``true``, ``1``, ``on``, any case): the egress events are recorded
    but no subscriber receives the message (the next one it gets is the one sent after)."""
    pub = await nats_connect()
    sub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    s = await sub.subscribe(f"{subject}.x")
    await barrier(sub, pub)
    await pub.publish(f"{subject}.x", b"traced",
                      headers={"Nats-Trace-Dest": f"{subject}.trace", "Nats-Trace-Only": only})
    await pub.publish(f"{subject}.x", b"plain")
    event = normalize(await traces.next(), {pub.client_id: "pub", sub.client_id: "sub"})
    assert event["events"] == [ingress(f"{subject}.x", "pub"), egress("sub", f"{subject}.x")]
    assert (await s.next_msg(timeout=5)).data == b"plain"


async def test_trace_only_request_gets_no_reply(target: str, nats_connect: NatsFactory,
                                                subject: str) -> None:
    """A trace-only request never reaches the responder: no reply and no 503 either (the
    first answer on the inbox is the one to the request sent after it)."""
    requester = await nats_connect()
    responder = await nats_connect()

    async def answer(m: Any) -> None:
        await m.respond(b"re:" + m.data)
    await responder.subscribe(f"{subject}.svc", cb=answer)
    await barrier(responder)
    traces = await Traces(requester, f"{subject}.trace").start()
    inbox = requester.new_inbox()
    replies = await requester.subscribe(inbox)
    await requester.publish(f"{subject}.svc", b"one", reply=inbox,
                            headers={"Nats-Trace-Dest": f"{subject}.trace",
                                     "Nats-Trace-Only": "true"})
    await requester.publish(f"{subject}.svc", b"two", reply=inbox)
    first = await replies.next_msg(timeout=5)
    assert first.data == b"re:two" and first.headers is None
    event = normalize(await traces.next(), {requester.client_id: "req",
                                            responder.client_id: "resp"})
    assert event["events"] == [ingress(f"{subject}.svc", "req"),
                               egress("resp", f"{subject}.svc")]


async def test_trace_invalid_destination(target: str, nats_connect: NatsFactory,
                                         subject: str) -> None:
    """A destination that is not a valid publish subject: not traced; the message goes on,
    unless it is trace-only, then it is dropped."""
    pub = await nats_connect()
    sub = await nats_connect()
    s = await sub.subscribe(f"{subject}.x")
    await barrier(sub, pub)
    await pub.publish(f"{subject}.x", b"only",
                      headers={"Nats-Trace-Dest": f"{subject}.*", "Nats-Trace-Only": "true"})
    await pub.publish(f"{subject}.x", b"delivered", headers={"Nats-Trace-Dest": f"{subject}.*"})
    m = await s.next_msg(timeout=5)
    assert m.data == b"delivered" and m.headers == {"Nats-Trace-Dest": f"{subject}.*"}


async def test_trace_only_without_destination(target: str, nats_connect: NatsFactory,
                                              subject: str) -> None:
    """``Nats-Trace-Only`` alone traces nothing and the message is delivered."""
    pub = await nats_connect()
    sub = await nats_connect()
    s = await sub.subscribe(f"{subject}.x")
    await barrier(sub, pub)
    await pub.publish(f"{subject}.x", b"m", headers={"Nats-Trace-Only": "true"})
    m = await s.next_msg(timeout=5)
    assert m.data == b"m" and m.headers == {"Nats-Trace-Only": "true"}


@pytest.mark.parametrize("header", [
    {"Nats-Trace-Dest": "trace disabled"},
    {"nats-trace-dest": "DEST"},
    {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
], ids=["disabled", "lower-case", "traceparent"])
async def test_not_traced(target: str, nats_connect: NatsFactory, subject: str,
                          header: dict[str, str]) -> None:
    """Not a trace: ``Nats-Trace-Dest: trace disabled``, the name in another case (matched
    case-sensitively), and a sampled W3C ``traceparent`` (traced only for an account with a
    configured trace destination, which the default account has not). The message goes on
    untouched and nothing is published besides it."""
    header = {k: v.replace("DEST", f"{subject}.trace") for k, v in header.items()}
    pub = await nats_connect()
    sub = await nats_connect()
    s = await sub.subscribe(f"{subject}.>")
    await barrier(sub, pub)
    await pub.publish(f"{subject}.x", b"m", headers=header)
    await pub.publish(f"{subject}.end", b"")
    m = await s.next_msg(timeout=5)
    assert (m.subject, m.data, m.headers) == (f"{subject}.x", b"m", header)
    assert (await s.next_msg(timeout=5)).subject == f"{subject}.end"


async def test_trace_origin_account_header_disables(target: str, nats_connect: NatsFactory,
                                                    subject: str) -> None:
    """``Nats-Trace-Origin-Account`` (an old server's header): no trace, and the message is
    delivered with ``Nats-Trace-Dest`` rewritten to ``trace disabled``, moved last."""
    pub = await nats_connect()
    sub = await nats_connect()
    s = await sub.subscribe(f"{subject}.>")
    await barrier(sub, pub)
    await pub.publish(f"{subject}.x", b"m", headers={"Nats-Trace-Dest": f"{subject}.trace",
                                                     "Nats-Trace-Origin-Account": "A"})
    await pub.publish(f"{subject}.end", b"")
    m = await s.next_msg(timeout=5)
    assert m.subject == f"{subject}.x"
    assert list(m.headers.items()) == [("Nats-Trace-Origin-Account", "A"),
                                       ("Nats-Trace-Dest", "trace disabled")]
    assert (await s.next_msg(timeout=5)).subject == f"{subject}.end"


async def test_trace_publish_permission_violation(target: str, nats_connect: NatsFactory,
                                                  subject: str) -> None:
    """A publish to a reserved subject (``$NRG.``): the -ERR, and a trace whose ingress carries
    the violation."""
    errors: list[Exception] = []

    async def on_error(e: Exception) -> None:
        errors.append(e)
    pub = await nats_connect(error_cb=on_error)
    traces = await Traces(pub, f"{subject}.trace").start()
    await pub.publish("$NRG.x", b"", headers={"Nats-Trace-Dest": f"{subject}.trace"})
    event = normalize(await traces.next(), {pub.client_id: "pub"})
    want = ingress("$NRG.x", "pub")
    want["error"] = 'Permissions Violation for Publish to "$NRG.x"'
    assert event["events"] == [want]


async def test_trace_gzip_compressed(target: str, nats_connect: NatsFactory,
                                     subject: str) -> None:
    """``Accept-Encoding: gzip`` on the traced message: the event comes gzip-compressed with
    ``Content-Encoding: gzip``."""
    pub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    headers = {"Nats-Trace-Dest": f"{subject}.trace", "Accept-Encoding": "gzip"}
    await pub.publish(f"{subject}.x", b"", headers=headers)
    m = await traces.next_raw()
    assert m.headers == {"Content-Encoding": "gzip"}
    event = normalize(json.loads(gzip.decompress(m.data)), {pub.client_id: "pub"})
    assert event["request"]["header"] == {k: [v] for k, v in headers.items()}
    assert event["events"] == [ingress(f"{subject}.x", "pub")]


@pytest.mark.parametrize("encoding", ["snappy", "s2", "application/S2"])
async def test_trace_snappy_compressed(target: str, nats_connect: NatsFactory, subject: str,
                                       encoding: str) -> None:
    """``Accept-Encoding`` naming snappy or s2: the event comes in the snappy framing format
    with ``Content-Encoding: snappy``."""
    pub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    headers = {"Nats-Trace-Dest": f"{subject}.trace", "Accept-Encoding": encoding}
    await pub.publish(f"{subject}.x", b"", headers=headers)
    m = await traces.next_raw()
    assert m.headers == {"Content-Encoding": "snappy"}
    assert m.data.startswith(b"\xff\x06\x00\x00sNaPpY")
    event = normalize(json.loads(snappy_unframe(m.data)), {pub.client_id: "pub"})
    assert event["events"] == [ingress(f"{subject}.x", "pub")]


async def test_trace_unknown_encoding(target: str, nats_connect: NatsFactory,
                                      subject: str) -> None:
    """An encoding the server does not know: uncompressed, ``Content-Encoding: identity``."""
    pub = await nats_connect()
    traces = await Traces(pub, f"{subject}.trace").start()
    await pub.publish(f"{subject}.x", b"", headers={"Nats-Trace-Dest": f"{subject}.trace",
                                                    "Accept-Encoding": "br"})
    m = await traces.next_raw()
    assert m.headers == {"Content-Encoding": "identity"}
    assert json.loads(m.data)["events"][0]["subj"] == f"{subject}.x"


# ------------------------------------------------------------------------- JetStream


@pytest.fixture
async def js_conn(js_server: Endpoint) -> Any:
    clients: list[NatsClient] = []

    async def connect(**kwargs: Any) -> NatsClient:
        nc = await nats.connect(js_server.url, allow_reconnect=False, **kwargs)
        clients.append(nc)
        return nc
    yield connect
    for nc in clients:
        await nc.close()


@pytest.fixture
async def stream(js_conn: Any, subject: str) -> Any:
    nc = await js_conn()
    js = nc.jetstream()
    name = "TR" + subject.split(".")[-1].upper()
    created: list[str] = []

    async def make(suffix: str = "", **config: Any) -> str:
        await js.add_stream(name=name + suffix, **config)
        created.append(name + suffix)
        return name + suffix
    yield make
    for n in created:
        try:
            await js.delete_stream(n)
        except Exception:
            pass


async def test_trace_jetstream_stored(target: str, js_conn: Any, stream: Any,
                                      subject: str) -> None:
    """A traced publish a stream stores: the ``js`` event names the stream and subject; the
    stored message carries ``Nats-Trace-Dest: trace disabled``, so its deliveries are never
    traced again."""
    nc = await js_conn(name="p")
    name = await stream(subjects=[f"{subject}.s.>"])
    traces = await Traces(nc, f"{subject}.trace").start()
    ack = await nc.request(f"{subject}.s.a", b"v", timeout=5,
                           headers={"Nats-Trace-Dest": f"{subject}.trace", "K": "1"})
    assert json.loads(ack.data) == {"stream": name, "seq": 1}
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["server"] == server_block(nc, True)
    assert event["events"] == [ingress(f"{subject}.s.a", "pub", "p"),
                               {"type": "js", "ts": "TS", "stream": name,
                                "subject": f"{subject}.s.a"}]
    stored = await nc.jetstream().get_msg(name, 1)
    assert stored.headers == {"Nats-Trace-Dest": "trace disabled", "K": "1"}


async def test_trace_only_jetstream_not_stored(target: str, js_conn: Any, stream: Any,
                                               subject: str) -> None:
    """Trace-only: the stream runs its checks and records where it would store, but stores
    nothing and sends no pub ack (the first ack on the inbox is the next publish's, seq 1)."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.s.>"], subject_transform={
        "src": f"{subject}.s.>", "dest": f"{subject}.s.t.>"})
    traces = await Traces(nc, f"{subject}.trace").start()
    inbox = nc.new_inbox()
    acks = await nc.subscribe(inbox)
    await nc.publish(f"{subject}.s.a", b"v", reply=inbox,
                     headers={"Nats-Trace-Dest": f"{subject}.trace", "Nats-Trace-Only": "true"})
    await nc.publish(f"{subject}.s.b", b"v", reply=inbox)
    assert json.loads((await acks.next_msg(timeout=5)).data) == {"stream": name, "seq": 1}
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"] == [ingress(f"{subject}.s.a", "pub"),
                               {"type": "js", "ts": "TS", "stream": name,
                                "subject": f"{subject}.s.t.a"}]
    info = await nc.jetstream().stream_info(name)
    assert info.state.messages == 1


async def test_trace_jetstream_interest_no_interest(target: str, js_conn: Any, stream: Any,
                                                    subject: str) -> None:
    """An interest stream without consumers: ``nointerest`` in the ``js`` event."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.i.>"], retention="interest")
    traces = await Traces(nc, f"{subject}.trace").start()
    await nc.request(f"{subject}.i.a", b"", timeout=5,
                     headers={"Nats-Trace-Dest": f"{subject}.trace"})
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                  "subject": f"{subject}.i.a", "nointerest": True}


@pytest.mark.parametrize("headers,ack_error,trace_error", [
    ({"Nats-Expected-Last-Sequence": "7"},
     {"code": 400, "err_code": 10071, "description": "wrong last sequence: 1"},
     "last sequence mismatch: 7 vs 1"),
    ({"Nats-Expected-Last-Subject-Sequence": "5"},
     {"code": 400, "err_code": 10071, "description": "wrong last sequence: 1"},
     "last sequence by subject mismatch: 5 vs 1"),
    ({"Nats-Expected-Stream": "OTHER"},
     {"code": 400, "err_code": 10060, "description": "expected stream does not match"},
     "expected stream does not match"),
    ({"Nats-Expected-Last-Msg-Id": "zz"},
     {"code": 400, "err_code": 10070, "description": "wrong last msg ID: "},
     'last msgid mismatch: "zz" vs ""'),
    ({"Nats-TTL": "1s"},
     {"code": 400, "err_code": 10166, "description": "per-message TTL is disabled"},
     "message TTL disabled"),
    ({"Nats-Rollup": "bad"},
     {"code": 500, "err_code": 10111, "description": 'rollup value invalid: "bad"'},
     'rollup value invalid: "bad"'),
], ids=["last-seq", "last-subject-seq", "stream", "last-msg-id", "ttl", "rollup"])
@pytest.mark.parametrize("only", [False, True], ids=["delivered", "trace-only"])
async def test_trace_jetstream_refused(target: str, js_conn: Any, stream: Any, subject: str,
                                       headers: dict[str, str], ack_error: dict, trace_error: str,
                                       only: bool) -> None:
    """A publish the stream refuses: the error pub ack (sent for trace-only too) and the
    stream's own error text in the ``js`` event, without a subject."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.s.>"], allow_rollup_hdrs=True)
    js = nc.jetstream()
    await js.publish(f"{subject}.s.a", b"first")
    traces = await Traces(nc, f"{subject}.trace").start()
    hdrs = {"Nats-Trace-Dest": f"{subject}.trace", **headers}
    if only:
        hdrs["Nats-Trace-Only"] = "true"
    ack = await nc.request(f"{subject}.s.a", b"v", timeout=5, headers=hdrs)
    assert json.loads(ack.data) == {"error": ack_error, "stream": name, "seq": 0}
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                  "error": trace_error}


async def test_trace_jetstream_duplicate(target: str, js_conn: Any, stream: Any,
                                         subject: str) -> None:
    """A duplicate ``Nats-Msg-Id``: acknowledged as a duplicate, traced as
    ``msgid is duplicate``."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.s.>"])
    traces = await Traces(nc, f"{subject}.trace").start()
    hdrs = {"Nats-Trace-Dest": f"{subject}.trace", "Nats-Msg-Id": "m1"}
    for _ in range(2):
        ack = await nc.request(f"{subject}.s.a", b"v", timeout=5, headers=hdrs)
    assert ack.data == b'{"stream":"%s","seq":1,"duplicate": true}' % name.encode()
    first = normalize(await traces.next(), {nc.client_id: "pub"})
    second = normalize(await traces.next(), {nc.client_id: "pub"})
    assert first["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                  "subject": f"{subject}.s.a"}
    assert second["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                   "error": "msgid is duplicate"}


async def test_trace_jetstream_api_service_import(target: str, js_conn: Any,
                                                  subject: str) -> None:
    """A traced API request: the ``si`` event of the import from ``$SYS``, and the reply.
    Trace-only: the request stops at the import (no reply: a 503; nothing is created)."""
    nc = await js_conn()
    traces = await Traces(nc, f"{subject}.trace").start()
    r = await nc.request("$JS.API.INFO", b"", timeout=5,
                         headers={"Nats-Trace-Dest": f"{subject}.trace"})
    assert json.loads(r.data)["type"] == "io.nats.jetstream.api.v1.account_info_response"
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"] == [
        ingress("$JS.API.INFO", "pub"),
        {"type": "si", "ts": "TS", "acc": "$SYS", "from": "$JS.API.INFO",
         "to": "$JS.API.INFO"}]
    name = "TRAPI" + subject.split(".")[-1].upper()
    api = f"$JS.API.STREAM.CREATE.{name}"
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request(api, json.dumps({"name": name, "subjects": [f"{subject}.c"]}).encode(),
                         timeout=5, headers={"Nats-Trace-Dest": f"{subject}.trace",
                                             "Nats-Trace-Only": "true"})
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert [e["type"] for e in event["events"]] == ["in", "si"]
    with pytest.raises(nats.js.errors.NotFoundError):
        await nc.jetstream().stream_info(name)


async def test_trace_direct_get_served_in_account(target: str, js_conn: Any, stream: Any,
                                                  subject: str) -> None:
    """DIRECT.GET is served by the stream's own subscription in the client's account: no
    ``si`` event, and it is answered even when trace-only."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.d"], allow_direct=True)
    await nc.jetstream().publish(f"{subject}.d", b"stored")
    traces = await Traces(nc, f"{subject}.trace").start()
    for only in (False, True):
        hdrs = {"Nats-Trace-Dest": f"{subject}.trace"}
        if only:
            hdrs["Nats-Trace-Only"] = "true"
        r = await nc.request(f"$JS.API.DIRECT.GET.{name}", b'{"seq":1}', timeout=5,
                             headers=hdrs)
        assert r.data == b"stored" and r.headers["Nats-Sequence"] == "1"
        event = normalize(await traces.next(), {nc.client_id: "pub"})
        assert event["events"] == [ingress(f"$JS.API.DIRECT.GET.{name}", "pub")]


async def test_trace_jetstream_limits_refusals(target: str, js_conn: Any, stream: Any,
                                               subject: str) -> None:
    """A message over ``max_msg_size`` and a publish to a sealed stream: the stream's own
    error texts (``maximum payload exceeded``; an API error as ``description (code)``)."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.s.>"], max_msg_size=10)
    traces = await Traces(nc, f"{subject}.trace").start()
    hdrs = {"Nats-Trace-Dest": f"{subject}.trace"}
    ack = await nc.request(f"{subject}.s.a", b"x" * 200, timeout=5, headers=hdrs)
    assert json.loads(ack.data)["error"]["err_code"] == 10054
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                  "error": "maximum payload exceeded"}
    sealed = await stream("Z", subjects=[f"{subject}.z"])
    info = (await nc.jetstream().stream_info(sealed)).config
    info.sealed = True
    await nc.jetstream().update_stream(info)
    ack = await nc.request(f"{subject}.z", b"", timeout=5, headers=hdrs)
    assert json.loads(ack.data)["error"] == {"code": 400, "err_code": 10109,
                                             "description": "invalid operation on sealed stream"}
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"][1] == {"type": "js", "ts": "TS", "stream": sealed,
                                  "error": "invalid operation on sealed stream (10109)"}


async def test_trace_jetstream_discard_new_refusal(target: str, js_conn: Any, stream: Any,
                                                  subject: str) -> None:
    """Discard-new at its limit refuses in the store, after the storage step: the ``js``
    event has the subject and the store's error."""
    nc = await js_conn()
    name = await stream(subjects=[f"{subject}.s.>"], max_msgs=1, discard="new")
    await nc.jetstream().publish(f"{subject}.s.a", b"first")
    traces = await Traces(nc, f"{subject}.trace").start()
    ack = await nc.request(f"{subject}.s.b", b"v", timeout=5,
                           headers={"Nats-Trace-Dest": f"{subject}.trace"})
    assert json.loads(ack.data)["error"] == {"code": 503, "err_code": 10077,
                                             "description": "maximum messages exceeded"}
    event = normalize(await traces.next(), {nc.client_id: "pub"})
    assert event["events"][1] == {"type": "js", "ts": "TS", "stream": name,
                                  "subject": f"{subject}.s.b",
                                  "error": "maximum messages exceeded"}


ACCOUNTS_CONF = """
accounts {
  A: { users = [ { user: a1, password: p1 }, { user: a2, password: p2,
        permissions: { publish: ["x.>"], subscribe: ">" } } ] }
  B: { users = [ { user: b1, password: p1 } ] }
}
"""


async def test_trace_in_an_account(target: str, spawn: Any) -> None:
    """A traced message of account ``A``: the ingress names ``A``, the egresses are ``A``'s
    subscribers, and the event is published in ``A`` (a subscriber of ``B`` on the same
    subject sees nothing)."""
    ep = spawn(config=ACCOUNTS_CONF)
    a1 = await nats.connect(f"nats://a1:p1@{ep.host}:{ep.port}", allow_reconnect=False)
    a2 = await nats.connect(f"nats://a2:p2@{ep.host}:{ep.port}", allow_reconnect=False)
    b1 = await nats.connect(f"nats://b1:p1@{ep.host}:{ep.port}", allow_reconnect=False)
    try:
        traces = await Traces(a1, "t.a").start()
        other = await b1.subscribe("t.a")
        await a2.subscribe("x.1")
        await b1.subscribe("x.1")
        await barrier(a2, b1)
        await a1.publish("x.1", b"", headers={"Nats-Trace-Dest": "t.a"})
        event = normalize(await traces.next(), {a1.client_id: "a1", a2.client_id: "a2"})
        assert event["events"] == [ingress("x.1", "a1") | {"acc": "A"}, egress("a2", "x.1")]
        await b1.publish("t.a", b"end")
        assert (await other.next_msg(timeout=5)).data == b"end"
    finally:
        for nc in (a1, a2, b1):
            await nc.close()


async def test_trace_destination_needs_publish_permission(target: str, spawn: Any) -> None:
    """A trace destination the client may not publish to: a publish violation for it, and the
    message goes nowhere."""
    ep = spawn(config=ACCOUNTS_CONF)
    errors: list[Exception] = []

    async def on_error(e: Exception) -> None:
        errors.append(e)
    a2 = await nats.connect(f"nats://a2:p2@{ep.host}:{ep.port}", allow_reconnect=False,
                            error_cb=on_error)
    a1 = await nats.connect(f"nats://a1:p1@{ep.host}:{ep.port}", allow_reconnect=False)
    try:
        s = await a1.subscribe("x.>")
        traces = await a1.subscribe("t.>")
        await barrier(a1, a2)
        await a2.publish("x.1", b"traced", headers={"Nats-Trace-Dest": "t.denied"})
        await a2.publish("x.2", b"plain")
        m = await s.next_msg(timeout=5)
        assert (m.subject, m.data) == ("x.2", b"plain")
        await a2.flush()
        assert [str(e) for e in errors] == [
            'nats: permissions violation for publish to "t.denied"']
        assert traces.pending_msgs == 0
    finally:
        for nc in (a1, a2):
            await nc.close()


TRACEPARENT_CONF = """
accounts {
  A: { users = [ { user: a1, password: p1 } ], msg_trace: { dest: "trace.a", sampling: 100 } }
}
"""
SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
NOT_SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


async def test_traceparent_traced_to_the_account_destination(target: str, spawn: Any) -> None:
    """An account with ``msg_trace``: a sampled W3C ``traceparent`` (any case) is traced to the
    account's destination, never trace-only (``Nats-Trace-Only`` is ignored: delivered); an
    unsampled one is not traced."""
    ep = spawn(config=TRACEPARENT_CONF)
    nc = await nats.connect(f"nats://a1:p1@{ep.host}:{ep.port}", allow_reconnect=False)
    try:
        traces = await Traces(nc, "trace.a").start()
        s = await nc.subscribe("foo.*")
        await barrier(nc)
        await nc.publish("foo.1", b"", headers={"TraceParent": NOT_SAMPLED})
        await nc.publish("foo.2", b"", headers={"traceparent": SAMPLED,
                                                "Nats-Trace-Only": "true"})
        for want in ("foo.1", "foo.2"):
            assert (await s.next_msg(timeout=5)).subject == want
        event = normalize(await traces.next(), {nc.client_id: "a1"})
        assert event["request"]["header"] == {"traceparent": [SAMPLED],
                                              "Nats-Trace-Only": ["true"]}
        assert event["events"] == [ingress("foo.2", "a1") | {"acc": "A"},
                                   egress("a1", "foo.*")]
    finally:
        await nc.close()


@pytest.mark.parametrize("conf,error", [
    ('accounts { A: { msg_trace: { dest: "a.*" } } }', 'Trace destination "a.*" is not valid'),
    ("accounts { A: { msg_trace: { dest: a, sampling: 101 } } }",
     "Ttrace destination sampling value 101 is invalid, needs to be [1..100]"),
], ids=["dest", "sampling"])
def test_account_msg_trace_config_errors(target: str, spawn: Any, conf: str,
                                         error: str) -> None:
    """Bad ``msg_trace`` settings stop the server with nats-server's texts."""
    with pytest.raises(RuntimeError) as info:
        spawn(config=conf)
    assert error in str(info.value)
