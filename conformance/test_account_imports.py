"""Account exports and imports, and subject mappings, from a config file (both targets get the
same file).

Stream imports (``prefix``, ``to`` with wildcards), service imports (the ``_R_`` reply that
leads back, ``Nats-Request-Info``, singleton and streamed responses, no-responders, wildcard
services, the importer's own subscribers), account and top-level ``mappings`` (applied before
permissions; weighted; ``partition``), the startup errors for bad ones, and a small
three-account application through nats-py.
"""
from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import (SpawnFn, ensure_subs, ensure_subs_unpublished, get_json,
                                 refused_start)
from conformance.rawclient import RawClient, hpub, msg, pub, split_frames
from conformance.servers import Endpoint, free_port

CONF = """
accounts {
  A: {
    users: [ {user: a, password: pa} ]
    exports: [
      {stream: "a.>"}
      {stream: "t.*.x"}
      {stream: "private.>", accounts: [C]}
      {service: "svc.>"}
      {service: "feed", response_type: stream, response_threshold: "10s"}
    ]
  }
  B: {
    users: [ {user: b, password: pb, permissions: {publish: {deny: ["m2", "q2"]}}} ]
    imports: [
      {stream: {account: A, subject: "a.>"}, prefix: "x"}
      {stream: {account: A, subject: "t.*.x"}, to: "tt.{{wildcard(1)}}"}
      {service: {account: A, subject: "svc.q"}, to: "q"}
      {service: {account: A, subject: "svc.w.*"}, to: "w.*"}
      {service: {account: A, subject: "svc.none"}, to: "nn"}
      {service: {account: A, subject: "feed"}}
      {service: {account: A, subject: "svc.s"}, to: "shared", share: true}
    ]
    mappings: { "m1": "m2", "q2": "q" }
  }
  C: {
    users: [ {user: c, password: pc} ]
    imports: [ {stream: {account: A, subject: "private.>"}} ]
  }
}
"""

R_REPLY = re.compile(rb"_R_\.[A-Za-z0-9]+\.[A-Za-z0-9]+")


def login(ep: Endpoint, user: str, password: str) -> RawClient:
    client = RawClient.connect(ep.host, ep.port)
    client.handshake(user=user, headers=True, no_responders=True, **{"pass": password})
    return client


def service_request(frame: bytes, subject: str, sid: int, payload: bytes) -> bytes:
    """Check one service request as the exporter gets it and return its ``_R_`` reply:
    ``HMSG <subject> <sid> _R_.x.y`` with ``Nats-Request-Info`` naming the importing account
    (its ``rtt`` is a measurement, not compared)."""
    head, _, rest = frame.partition(b"\r\n")
    parts = head.split(b" ")
    assert parts[:3] == [b"HMSG", subject.encode(), str(sid).encode()], frame
    assert R_REPLY.fullmatch(parts[3]), frame
    header, _, body = rest.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    assert lines[0] == b"NATS/1.0" and len(lines) == 2, frame
    name, _, value = lines[1].partition(b": ")
    assert name == b"Nats-Request-Info", frame
    info = json.loads(value)
    assert info["acc"] == "B" and set(info) <= {"acc", "rtt"}, info
    assert body == payload + b"\r\n", frame
    return parts[3]


def test_stream_import_prefix_and_to(target: str, spawn: SpawnFn) -> None:
    """What account A publishes on an exported stream reaches B's subscribers under the
    import's prefix (or its ``to`` mapping), reply included; B's own ``a.>`` sees nothing of
    A, A's subscribers still get theirs, and B publishing on the imported subjects stays in B.
    A stream export limited to account C reaches C only."""
    ep = spawn(config=CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b, login(ep, "c", "pc") as c:
        b.send(b"SUB x.> 1\r\nSUB tt.> 2\r\nSUB a.> 3\r\nSUB private.> 4\r\n")
        c.send(b"SUB private.> 1\r\nSUB x.> 2\r\nSUB a.> 3\r\n")
        a.send(b"SUB a.> 1\r\n")
        assert b.barrier() == b"" and c.barrier() == b"" and a.barrier() == b""
        a.send(pub("a.one", b"s1", reply="back"))
        assert a.barrier() == msg("a.one", 1, b"s1", reply="back")
        assert b.barrier() == msg("x.a.one", 1, b"s1", reply="back")
        a.send(pub("t.7.x", b"s2") + pub("t.7.y", b"s3"))
        a.barrier()
        assert b.barrier() == msg("tt.7", 2, b"s2")
        a.send(pub("private.p", b"s4"))
        a.barrier()
        assert c.barrier() == msg("private.p", 1, b"s4")
        assert b.barrier() == b""
        b.send(pub("x.a.two", b"own") + pub("a.two", b"own"))
        got = split_frames(b.barrier())
        assert sorted(got) == sorted([msg("x.a.two", 1, b"own"), msg("a.two", 3, b"own")])
        assert a.barrier() == b"" and c.barrier() == b""


def test_service_import_request_and_singleton_response(target: str, spawn: SpawnFn) -> None:
    """A request B publishes on its import subject reaches A on the export subject with a
    ``_R_`` reply and the ``Nats-Request-Info`` header; A's first response reaches B's reply
    subject, a second one goes nowhere (singleton). B's own subscriber on the import subject
    gets the request too, unchanged."""
    ep = spawn(config=CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB svc.> 1\r\n")
        b.send(b"SUB _INBOX.> 1\r\nSUB q 2\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        b.send(pub("q", b"req", reply="_INBOX.r1"))
        assert b.barrier() == msg("q", 2, b"req", reply="_INBOX.r1")
        reply = service_request(a.barrier(), "svc.q", 1, b"req")
        a.send(pub(reply.decode(), b"resp1"))
        a.barrier()
        assert b.barrier() == msg("_INBOX.r1", 1, b"resp1")
        a.send(pub(reply.decode(), b"resp2"))
        a.barrier()
        assert b.barrier() == b""
        # A request without a reply reaches the service without one.
        b.send(pub("q", b"fire"))
        b.barrier()
        frame = a.barrier()
        assert frame.startswith(b"HMSG svc.q 1 ") and frame.count(b" ", 0, frame.index(b"\r\n")) == 4
        assert frame.endswith(b"\r\n\r\nfire\r\n") and b"Nats-Request-Info: {" in frame


def test_service_import_wildcard_and_stream_responses(target: str, spawn: SpawnFn) -> None:
    """A wildcard service import maps the published subject token for token (``w.5`` →
    ``svc.w.5``); a ``response_type: stream`` export lets every response through."""
    ep = spawn(config=CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB svc.w.* 1\r\nSUB feed 2\r\n")
        b.send(b"SUB _INBOX.> 1\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        b.send(pub("w.5", b"wreq", reply="_INBOX.w"))
        b.barrier()
        reply = service_request(a.barrier(), "svc.w.5", 1, b"wreq")
        a.send(pub(reply.decode(), b"wresp"))
        a.barrier()
        assert b.barrier() == msg("_INBOX.w", 1, b"wresp")
        b.send(pub("feed", b"more", reply="_INBOX.f"))
        b.barrier()
        reply = service_request(a.barrier(), "feed", 2, b"more")
        a.send(pub(reply.decode(), b"c1") + pub(reply.decode(), b"c2")
               + pub(reply.decode(), b"c3"))
        a.barrier()
        got = split_frames(b.barrier())
        assert got == [msg("_INBOX.f", 1, p) for p in (b"c1", b"c2", b"c3")]


def test_service_import_share(target: str, spawn: SpawnFn) -> None:
    """``share: true``: the request's ``Nats-Request-Info`` carries the requester's details
    (connection start, host, id, user, name, lang, version) and the server's name, in
    nats-server's field order."""
    ep = spawn(config=CONF)
    with login(ep, "a", "pa") as a, RawClient.connect(ep.host, ep.port) as b:
        b.handshake(user="b", headers=True, name="requester", lang="python3",
                    version="9.9", **{"pass": "pb"})
        a.send(b"SUB svc.> 1\r\n")
        assert a.barrier() == b""
        b.send(pub("shared", b"req", reply="_INBOX.s"))
        b.barrier()
        frame = a.barrier()
        head, _, rest = frame.partition(b"\r\n")
        assert head.split(b" ")[:3] == [b"HMSG", b"svc.s", b"1"], frame
        name, _, value = rest.partition(b"\r\n\r\n")[0].split(b"\r\n")[1].partition(b": ")
        assert name == b"Nats-Request-Info"
        info = json.loads(value)
        order = ["start", "host", "id", "acc", "user", "name", "lang", "ver", "rtt", "server",
                 "kind", "client_type"]
        assert [k for k in order if k in info] == list(info), info
        assert {k: info[k] for k in ("host", "acc", "user", "name", "lang", "ver", "server",
                                     "kind", "client_type")} == {
            "host": "127.0.0.1", "acc": "B", "user": "b", "name": "requester",
            "lang": "python3", "ver": "9.9", "server": b.info["server_name"],
            "kind": "Client", "client_type": "nats"}
        assert info["id"] == b.info["client_id"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", info["start"])


CHAIN_CONF = """
accounts {
  C: { users: [ {user: c, password: pc} ], exports: [ {service: "deep.>"}, {stream: "cs.>"} ] }
  A: { users: [ {user: a, password: pa} ], exports: [ {service: "svc.>"}, {stream: "as.>"} ],
       imports: [ {service: {account: C, subject: "deep.q"}, to: "svc.q"},
                  {stream: {account: C, subject: "cs.>"}, to: "as.>"} ] }
  B: { users: [ {user: b, password: pb} ],
       imports: [ {service: {account: A, subject: "svc.q"}, to: "q"},
                  {stream: {account: A, subject: "as.>"}} ] }
}
"""


def test_service_import_chain(target: str, spawn: SpawnFn) -> None:
    """B imports A's service, which A itself imports from C: the request reaches C with
    ``Nats-Request-Info`` naming the requester's account and the middle one (``svc``), and
    C's response travels back through both response imports. Stream imports do not chain:
    what C publishes reaches A's import, not B's import of A."""
    ep = spawn(config=CHAIN_CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b, login(ep, "c", "pc") as c:
        b.send(b"SUB _INBOX.> 1\r\nSUB as.> 2\r\n")
        c.send(b"SUB deep.> 1\r\n")
        a.send(b"SUB as.> 1\r\n")
        assert b.barrier() == b"" and c.barrier() == b"" and a.barrier() == b""
        b.send(pub("q", b"req", reply="_INBOX.r1"))
        b.barrier()
        frame = c.barrier()
        head, _, rest = frame.partition(b"\r\n")
        parts = head.split(b" ")
        assert parts[:3] == [b"HMSG", b"deep.q", b"1"] and R_REPLY.fullmatch(parts[3]), frame
        header = rest.partition(b"\r\n\r\n")[0].split(b"\r\n")
        info = json.loads(header[1].partition(b": ")[2])
        assert header[1].startswith(b"Nats-Request-Info: ") and info["acc"] == "B"
        assert info["svc"] == "A" and list(info)[:2] == ["acc", "svc"], info
        c.send(pub(parts[3].decode(), b"deep-resp"))
        c.barrier()
        assert b.barrier() == msg("_INBOX.r1", 1, b"deep-resp")
        assert a.barrier() == b""
        c.send(pub("cs.1", b"chain"))
        c.barrier()
        assert a.barrier() == msg("as.1", 1, b"chain")
        assert b.barrier() == b""


def test_service_import_no_responders(target: str, spawn: SpawnFn) -> None:
    """A request through a service import nobody in the exporting account serves gets the 503
    status naming the subject the requester published on."""
    ep = spawn(config=CONF)
    with login(ep, "b", "pb") as b:
        b.send(b"SUB _INBOX.> 1\r\n")
        assert b.barrier() == b""
        b.send(pub("nn", b"req", reply="_INBOX.r2"))
        assert b.read_frame() == (b"HMSG _INBOX.r2 1 34 34\r\nNATS/1.0 503\r\n"
                                  b"Nats-Subject: nn\r\n\r\n\r\n")


def test_mappings_apply_before_permissions(target: str, spawn: SpawnFn) -> None:
    """An account mapping rewrites the published subject before anything else: publishing
    ``m1`` (mapped to the denied ``m2``) is a violation naming ``m2``; the denied ``q2``
    (mapped to ``q``) is allowed and reaches the service import behind ``q``."""
    ep = spawn(config=CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB svc.q 1\r\n")
        b.send(b"SUB m2 1\r\nSUB _INBOX.> 2\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        b.send(pub("m1", b"mm"))
        assert b.barrier() == b"-ERR 'Permissions Violation for Publish to \"m2\"'\r\n"
        b.send(pub("q2", b"via-map", reply="_INBOX.m"))
        b.barrier()
        reply = service_request(a.barrier(), "svc.q", 1, b"via-map")
        a.send(pub(reply.decode(), b"ok"))
        a.barrier()
        assert b.barrier() == msg("_INBOX.m", 2, b"ok")


TRACE_CONF = """
accounts {
  A: { users: [ {user: a, password: pa} ], exports: [ {stream: "a.>"}, {service: "svc.>"} ] }
  B: { users: [ {user: b, password: pb} ],
       imports: [ {stream: {account: A, subject: "a.>"}, prefix: "x"},
                  {service: {account: A, subject: "svc.q"}, to: "q"} ],
       mappings: { "m1": "q" } }
}
"""


def _trace_events(frames: list[bytes]) -> list[tuple]:
    """The events of the one trace message among ``frames`` (on subject ``tr``), without
    times, ids and names, sorted (nats-server does not order subscribers)."""
    traces = [f for f in frames if f.split(b" ")[1] == b"tr"]
    assert len(traces) == 1, frames
    body = traces[0].split(b"\r\n", 1)[1]
    events = json.loads(body.strip())["events"]
    return sorted(tuple(sorted((k, str(v)) for k, v in e.items() if k not in ("ts", "cid", "name")))
                  for e in events)


def test_message_trace_through_imports(target: str, spawn: SpawnFn) -> None:
    """``Nats-Trace-Dest`` across accounts: a stream import adds an ``se`` event per
    subscriber it reaches (the copies keep the trace header); a mapping adds ``sm``; a
    service import adds ``si`` and the request goes on with ``Nats-Trace-Dest: trace
    disabled``. Trace-only: nothing is delivered, a request through a service import gets
    the 503."""
    ep = spawn(config=TRACE_CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB svc.q 1\r\nSUB tr 2\r\nSUB a.> 3\r\n")
        b.send(b"SUB x.> 1\r\nSUB tr 2\r\nSUB _INBOX.> 3\r\nSUB x.a.> 4\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        hdr = b"NATS/1.0\r\nNats-Trace-Dest: tr\r\n\r\n"
        a.send(hpub("a.1", hdr, b"s1"))
        got = split_frames(a.read_frame() + a.read_frame())
        copy = b"HMSG a.1 3 33 35\r\nNATS/1.0\r\nNats-Trace-Dest: tr\r\n\r\ns1\r\n"
        assert copy in got
        assert _trace_events(got) == _trace_events([
            b'MSG tr 2 1\r\n{"events":[{"type":"in","kind":0,"acc":"A","subj":"a.1"},'
            b'{"type":"se","acc":"B","to":"x.a.1"},{"type":"se","acc":"B","to":"x.a.1"},'
            b'{"type":"eg","kind":0,"sub":"a.>"}]}\r\n'])
        assert sorted(split_frames(b.read_frame() + b.read_frame())) == sorted(
            [copy.replace(b"a.1 3", b"x.a.1 1"), copy.replace(b"a.1 3", b"x.a.1 4")])
        b.send(hpub("m1", hdr, b"rq", reply="_INBOX.1"))
        got = [b.read_frame()]
        assert _trace_events(got) == _trace_events([
            b'MSG tr 2 1\r\n{"events":[{"type":"in","kind":0,"acc":"B","subj":"m1"},'
            b'{"type":"sm","to":"q"},{"type":"si","acc":"A","from":"q","to":"svc.q"}]}\r\n'])
        frame = a.read_frame()
        reply = service_request_head(frame, "svc.q", 1)
        assert frame.endswith(b"\r\nNats-Trace-Dest: trace disabled\r\n\r\nrq\r\n"), frame
        a.send(pub(reply.decode(), b"answer"))
        assert b.read_frame() == msg("_INBOX.1", 3, b"answer")
        only = b"NATS/1.0\r\nNats-Trace-Dest: tr\r\nNats-Trace-Only: true\r\n\r\n"
        b.send(hpub("m1", only, b"rq", reply="_INBOX.2"))
        got = split_frames(b.read_frame() + b.read_frame())
        assert (b"HMSG _INBOX.2 3 33 33\r\nNATS/1.0 503\r\nNats-Subject: q\r\n\r\n\r\n"
                in got)
        assert len(_trace_events(got)) == 3
        a.send(hpub("a.2", only, b"s2"))
        got = [a.read_frame()]
        assert len(_trace_events(got)) == 4
        assert a.barrier() == b"" and b.barrier() == b""


ALLOW_TRACE_CONF = """
accounts {
  A: { users: [ {user: a, password: pa} ],
       exports: [ {stream: "a.>"}, {stream: "t.*.x"}, {service: "svc.>", allow_trace: true} ] }
  B: { users: [ {user: b, password: pb} ],
       imports: [ {stream: {account: A, subject: "a.>"}, prefix: "x", allow_trace: true},
                  {stream: {account: A, subject: "t.*.x"}, to: "tt.{{wildcard(1)}}",
                   allow_trace: true},
                  {service: {account: A, subject: "svc.q"}, to: "q"} ] }
}
"""


def test_message_trace_allowed_through_imports(target: str, spawn: SpawnFn) -> None:
    """``allow_trace``: past a stream import each subscriber gets an ``eg`` event naming its
    account and the subscription nats-server makes for it in the exporting account (the
    import's subject, or the subscriber's subject taken back through the mapping); past a
    service export the exporter's receivers are traced and the request names a ``_R_`` trace
    destination."""
    ep = spawn(config=ALLOW_TRACE_CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB tr 9\r\nSUB svc.q 1\r\n")
        b.send(b"SUB x.a.one 1\r\nSUB x.a.* 2\r\nSUB tt.5 3\r\nSUB tt.* q 4\r\nSUB tr 9\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        only = b"NATS/1.0\r\nNats-Trace-Dest: tr\r\nNats-Trace-Only: true\r\n\r\n"
        a.send(hpub("a.one", only, b"s"))
        assert _trace_events([a.read_frame()]) == _trace_events([
            b'MSG tr 9 1\r\n{"events":[{"type":"in","kind":0,"acc":"A","subj":"a.one"},'
            b'{"type":"se","acc":"B","to":"x.a.one"},{"type":"se","acc":"B","to":"x.a.one"},'
            b'{"type":"eg","kind":0,"acc":"B","sub":"a.*"},'
            b'{"type":"eg","kind":0,"acc":"B","sub":"a.one"}]}\r\n'])
        a.send(hpub("t.5.x", only, b"s"))
        assert _trace_events([a.read_frame()]) == _trace_events([
            b'MSG tr 9 1\r\n{"events":[{"type":"in","kind":0,"acc":"A","subj":"t.5.x"},'
            b'{"type":"se","acc":"B","to":"tt.5"},{"type":"se","acc":"B","to":"tt.5"},'
            b'{"type":"eg","kind":0,"acc":"B","sub":"t.*.x","queue":"q"},'
            b'{"type":"eg","kind":0,"acc":"B","sub":"t.5.x"}]}\r\n'])
        assert b.barrier() == b""
        traced = b"NATS/1.0\r\nNats-Trace-Dest: tr\r\n\r\n"
        b.send(hpub("q", traced, b"rq", reply="_INBOX.1"))
        assert _trace_events([b.read_frame()]) == _trace_events([
            b'MSG tr 9 1\r\n{"events":[{"type":"in","kind":0,"acc":"B","subj":"q"},'
            b'{"type":"si","acc":"A","from":"q","to":"svc.q"},'
            b'{"type":"eg","kind":0,"acc":"A","sub":"svc.q"}]}\r\n'])
        frame = a.read_frame()
        service_request_head(frame, "svc.q", 1)
        tail = frame.split(b"\r\n")[3]
        assert tail.startswith(b"Nats-Trace-Dest: _R_.") and R_REPLY.fullmatch(tail[17:]), frame


def service_request_head(frame: bytes, subject: str, sid: int) -> bytes:
    """The ``_R_`` reply of a service request frame (headers checked by the caller)."""
    parts = frame.partition(b"\r\n")[0].split(b" ")
    assert parts[:3] == [b"HMSG", subject.encode(), str(sid).encode()], frame
    assert R_REPLY.fullmatch(parts[3]), frame
    assert b"\r\nNats-Request-Info: {\"acc\":\"B\"" in frame, frame
    return parts[3]


def _fnv1a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


MAP_CONF = """
mappings: {
  "g1": "g2"
  "p.*.*": "p.{{partition(3,1,2)}}.{{wildcard(2)}}"
  "s.*": "{{wildcard(1)}}.s"
  "split": [ {destination: "half.1", weight: 50%}, {destination: "half.2", weight: "50"} ]
  "some": [ {destination: "all", weight: 100}, {destination: "none", weight: 0} ]
}
"""


def test_top_level_mappings(target: str, spawn: SpawnFn) -> None:
    """Top-level ``mappings`` (the global account): a literal mapping, a wildcard reorder, a
    partition (FNV-1a of the chosen tokens, modulo n), and weighted destinations (a 100/0
    split always picks the first; a 50/50 split reaches both halves over many messages)."""
    ep = spawn(config=MAP_CONF)
    with RawClient.connect(ep.host, ep.port) as g:
        g.handshake()
        g.send(b"SUB g2 1\r\nSUB p.> 2\r\nSUB *.s 3\r\nSUB all 4\r\nSUB none 5\r\n")
        assert g.barrier() == b""
        g.send(pub("g1", b"x") + pub("s.k", b"y"))
        assert split_frames(g.barrier()) == [msg("g2", 1, b"x"), msg("k.s", 3, b"y")]
        for a, b in (("a", "b"), ("foo", "bar"), ("x", "y"), ("1", "2")):
            g.send(pub(f"p.{a}.{b}", b"z"))
            part = _fnv1a((a + b).encode()) % 3
            assert g.barrier() == msg(f"p.{part}.{b}", 2, b"z")
        g.send(b"".join(pub("some", b"w") for _ in range(20)))
        assert split_frames(g.barrier()) == [msg("all", 4, b"w")] * 20
        g.send(b"SUB half.* 6\r\n")
        g.barrier()
        g.send(b"".join(pub("split", b"h") for _ in range(60)))
        got = split_frames(g.barrier())
        assert len(got) == 60
        assert {f.split(b" ")[1] for f in got} == {b"half.1", b"half.2"}


def test_accountz_shows_mappings(target: str, spawn: SpawnFn) -> None:
    """``/accountz?acc=$G`` lists the top-level mappings right after ``subscriptions``, each
    source with its destinations and their cumulative weights (the source itself added for
    a weight left over)."""
    http_port = free_port()
    ep = spawn(args=["-m", str(http_port)],
               config='mappings: { "g1": "g2", "w": [ {destination: "w1", weight: 30%} ] }\n')
    acc = get_json(http_port, "/accountz?acc=$G")["account_detail"]
    keys = list(acc)
    assert keys[keys.index("subscriptions") + 1] == "mappings"
    assert acc["mappings"] == {"g1": [{"subject": "g2", "weight": 100}],
                               "w": [{"subject": "w1", "weight": 30},
                                     {"subject": "w", "weight": 100}]}
    assert ep.port


TOKEN_CONF = """
accounts {
  A: { users: [ {user: a, password: pa} ],
       exports: [ {service: "svc.*.req", account_token_position: 2},
                  {stream: "ev.*.>", account_token_position: 2} ] }
  B: { users: [ {user: b, password: pb} ],
       imports: [ {service: {account: A, subject: "svc.B.req"}, to: "req"},
                  {stream: {account: A, subject: "ev.B.>"}} ] }
}
"""


def test_account_token_position(target: str, spawn: SpawnFn) -> None:
    """``account_token_position``: B may import the subjects that carry its own name at that
    token, and they work as any import (other accounts' names are refused at startup)."""
    ep = spawn(config=TOKEN_CONF)
    with login(ep, "a", "pa") as a, login(ep, "b", "pb") as b:
        a.send(b"SUB svc.> 1\r\n")
        b.send(b"SUB ev.> 1\r\n")
        assert a.barrier() == b"" and b.barrier() == b""
        b.send(pub("req", b"hi", reply="_INBOX.t"))
        b.barrier()
        frame = a.barrier()
        assert frame.startswith(b"HMSG svc.B.req 1 _R_."), frame
        a.send(pub("ev.B.x", b"mine") + pub("ev.C.x", b"theirs"))
        a.barrier()
        assert b.barrier() == msg("ev.B.x", 1, b"mine")


_A = ('  A: { exports: [ {stream: "a.>"}, {service: "svc.>", accounts: [B]}, '
      '{service: "priv", accounts: [C]} ] }\n')


def _accounts(b: str) -> str:
    return "accounts {\n" + _A + "  B: " + b + "\n  C: {}\n}\n"


@pytest.mark.parametrize("text,message", [
    (_accounts('{ imports: [ {stream: {account: Z, subject: "a.>"}} ] }'),
     'bad.conf:1:0: "Z" account not defined for stream import'),
    (_accounts('{ imports: [ {service: {account: Z, subject: "svc.q"}} ] }'),
     '"Z" account not defined for service import'),
    (_accounts('{ imports: [ {stream: {account: A, subject: "b.>"}} ] }'),
     'Error adding stream import "b.>": stream import not authorized'),
    (_accounts('{ imports: [ {service: {account: A, subject: "other"}} ] }'),
     'Error adding service import "other": service import not authorized'),
    (_accounts('{ imports: [ {service: {account: A, subject: "priv"}} ] }'),
     'Error adding service import "priv": service import not authorized'),
    (_accounts('{ imports: [ {stream: {account: A}} ] }'),
     "bad.conf:3:20: Expect an account name and a subject"),
    (_accounts('{ imports: [ {service: {account: A, subject: "svc.q"}, to: "q"}, '
               '{service: {account: A, subject: "svc.r"}, to: "q"} ] }'),
     'Duplicate service import subject "q", previously used in import for account "A", '
     'subject "svc.q"'),
    (_accounts('{ imports: [ {stream: {account: A, subject: "a.>"}, nope: 1} ] }'),
     'bad.conf:3:58: unknown field "nope"'),
    (_accounts('{ exports: [ {service: "x", response_type: "bogus"} ] }'),
     'bad.conf:3:34: Unknown response type: "bogus"'),
    (_accounts('{ exports: [ {stream: "s", response_type: "stream"} ] }'),
     "bad.conf:3:33: Detected response directive on non-service"),
    (_accounts('{ exports: [ {service: "x", accounts: [Q]} ] }'),
     '"Q" account not defined for service export'),
    (_accounts('{ mappings: { "a..b": "c" } }'), 'bad.conf:3:8: Subject "a..b" is not a valid subject'),
    (_accounts('{ mappings: { "a.*": "b.{{wildcard(2)}}" } }'),
     'Error adding mapping for "a.*" to "b.{{wildcard(2)}}" : invalid mapping destination: '
     "wildcard index out of range in {{wildcard(2)}}: [2]"),
    (_accounts('{ imports: "x" }'), "bad.conf:3:8: Imports should be an array, got string"),
    (_accounts('{ mappings: { m: [ {destination: "a", weight: 60}, '
               '{destination: "b", weight: 50} ] } }'),
     'Error adding mapping for "m" : total weight needs to be <= 100'),
    ('accounts {\n  A: { exports: [ {service: "a"} ], imports: [ {service: {account: B, '
     'subject: "b"}, to: "a"} ] }\n  B: { exports: [ {service: "b"} ], imports: [ {service: '
     '{account: A, subject: "a"}, to: "b"} ] }\n}\n',
     '": import forms a cycle'),  # "a" or "b": nats-server reads accounts in map order
    ('mappings: { "foo": "bar.$2" }\n',
     'bad.conf:1:13: Error adding mapping for "foo" to "bar.$2" : invalid mapping '
     "destination: wildcard index out of range in $2"),
    ('# first\n\nport: -1\naccounts {\n  A: { }\n  B: { imports: [ {stream: {account: Z, '
     'subject: "a.>"}} ] }\n}\n', 'bad.conf:4:1: "Z" account not defined for stream import'),
    (_accounts('{ imports: [ {service: {account: A, subject: "svc.q"}, to: "q..r"} ] }'),
     'Error adding service import "svc.q": sublist: invalid subject'),
    (_accounts('{ imports: [ {stream: {account: A, subject: "a.>"}, prefix: "p.*"} ] }'),
     'Error adding stream import "a.>": stream import prefix can not contain wildcard tokens'),
    (_accounts('{ imports: [ {stream: {account: A, subject: "a.*"}, to: "x.$2"} ] }'),
     'Error adding stream import "a.*": failed to create mapping transform for stream import '
     'subject from "a.*" to "x.$2": invalid mapping destination: wildcard index out of range '
     "in $2: [2]"),
    (_accounts('{ imports: [ {service: {account: A, subject: "svc.*"}, to: "q.*.*"} ] }'),
     'Error adding service import "svc.*": failed to create mapping transform for service '
     'import subject from "q.*.*" to "svc.*": invalid mapping destination: wildcard index out '
     "of range in $2: [2]"),
    (_accounts('{ imports: [ {stream: {account: A, subject: "a.>"}}, '
               '{stream: {account: A, subject: "a.>"}} ] }'),
     'Error adding stream import "a.>": stream import already exists'),
    (_accounts('{ exports: [ {service: "x", response_threshold: "abc"} ] }'),
     'bad.conf:3:34: Expected response threshold to be a parseable time duration, got "abc"'),
    ('accounts {\n  A: { exports: [ {service: "svc.*.req", account_token_position: 2} ] }\n'
     '  B: { imports: [ {service: {account: A, subject: "svc.C.req"}} ] }\n}\n',
     'Error adding service import "svc.C.req": service import not authorized'),
    ('accounts {\n  A: { exports: [ {stream: "x.*", account_token_position: 3} ] }\n}\n',
     'Error adding stream export "x.*": sublist: invalid subject'),
    (_accounts('{ exports: [ {stream: "s", allow_trace: true} ] }'),
     "bad.conf:3:33: Detected allow_trace directive on non-service"),
    (_accounts('{ imports: [ {service: {account: A, subject: "svc.q"}, allow_trace: true} ] }'),
     "Detected allow_trace directive on a non-stream"),
], ids=["stream-unknown-account", "service-unknown-account", "stream-not-exported",
        "service-not-exported", "service-not-for-this-account", "no-subject",
        "duplicate-service-subject", "unknown-field", "bad-response-type",
        "response-type-on-stream", "export-unknown-account", "bad-mapping-subject",
        "mapping-wildcard-range", "imports-not-array", "weights-over-100", "service-cycle",
        "top-level-mapping", "error-at-accounts-line", "invalid-import-subject",
        "wildcard-prefix", "stream-transform", "service-transform", "duplicate-stream-import",
        "bad-threshold", "token-position-other-account", "token-position-not-wildcard",
        "allow-trace-on-stream-export", "allow-trace-on-service-import"])
def test_bad_imports_refused(target: str, tmp_path: Path, text: str, message: str) -> None:
    """Bad exports, imports and mappings stop the server at startup with nats-server's
    message (and, where this case checks it, its file position)."""
    stderr = refused_start(target, tmp_path, text)
    assert message in stderr, stderr


APP_CONF = """
jetstream { store_dir: "STORE" }
accounts {
  ORDERS: {
    jetstream: { max_mem: 1M, max_streams: 1 }
    users: [ {user: orders, password: po} ]
    exports: [
      {service: "orders.create"}
      {stream: "orders.events.>"}
    ]
  }
  SHOP: {
    users: [ {user: shop, password: ps, permissions: {
        publish: ["place.order", "_INBOX.>"], subscribe: ["_INBOX.>", "shop.orders.>"] }} ]
    imports: [
      {service: {account: ORDERS, subject: "orders.create"}, to: "place.order"}
      {stream: {account: ORDERS, subject: "orders.events.>"}, prefix: "shop"}
    ]
  }
  AUDIT: {
    users: [ {user: auditor, password: pa} ]
    imports: [ {stream: {account: ORDERS, subject: "orders.events.>"}, to: "audit.>"} ]
  }
}
no_auth_user: auditor
"""


async def test_three_account_app(target: str, spawn: SpawnFn, nats_connect: Any,
                                 tmp_path: Any) -> None:
    """A small application across three accounts: ORDERS serves ``orders.create``, keeps
    each order in its JetStream (with account limits) and publishes ``orders.events.*``; SHOP
    (a user with permissions) places orders through its service import and watches the
    events through a stream import with a prefix; AUDIT, the ``no_auth_user``, sees every
    event under ``audit.>`` without credentials and has no JetStream."""
    ep = spawn(config=APP_CONF.replace("STORE", str(tmp_path / "js")))
    orders = await nats_connect(ep, user="orders", password="po")
    ojs = orders.jetstream()
    await ojs.add_stream(name="BOOK", subjects=["book.>"], storage="memory")
    shop = await nats_connect(ep, user="shop", password="ps")
    audit = await nats_connect(ep)
    seq = 0

    async def create(m: Any) -> None:
        nonlocal seq
        seq += 1
        assert json.loads(m.headers["Nats-Request-Info"])["acc"] == "SHOP"
        await ojs.publish(f"book.{seq}", m.data)
        await orders.publish(f"orders.events.{seq}", m.data)
        await m.respond(f"order-{seq}".encode())

    await orders.subscribe("orders.create", cb=create)
    shop_events = await shop.subscribe("shop.orders.events.>")
    audit_events = await audit.subscribe("audit.>")
    await ensure_subs(orders)
    await ensure_subs(audit)
    await ensure_subs_unpublished(shop)  # SHOP may not publish a marker
    answers = [await shop.request("place.order", f"item-{i}".encode(), timeout=5)
               for i in range(3)]
    assert [m.data for m in answers] == [b"order-1", b"order-2", b"order-3"]
    for i in range(3):
        m = await shop_events.next_msg(timeout=5)
        assert (m.subject, m.data) == (f"shop.orders.events.{i + 1}", f"item-{i}".encode())
        m = await audit_events.next_msg(timeout=5)
        assert (m.subject, m.data) == (f"audit.{i + 1}", f"item-{i}".encode())
    # The auditor has no service import: a request there has no responders.
    import nats.errors

    with pytest.raises(nats.errors.NoRespondersError):
        await audit.request("orders.create", b"x", timeout=2)
    import nats.js.errors

    assert (await ojs.stream_info("BOOK")).state.messages == 3
    with pytest.raises(nats.js.errors.APIError) as limit:
        await ojs.add_stream(name="MORE", subjects=["more"], storage="memory")
    assert limit.value.err_code == 10027  # ORDERS may have one stream
    reply = await audit.request("$JS.API.INFO", b"", timeout=2)
    assert json.loads(reply.data)["error"]["err_code"] == 10039
    await asyncio.sleep(0)
