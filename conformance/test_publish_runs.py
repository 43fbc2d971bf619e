"""Many publishes on one subject in a single write: each one has exactly the effects it has
alone, in order, whatever else the same write holds.

A server may route such a run of publishes together; these cases pin what a client sees of
each message in it: a subscription that reaches its auto-unsubscribe limit partway, a request
that nobody hears (the 503 for each), a reply subject refused or unanswerable partway, a size
token repeated as the client wrote it, a stream that fills up partway (the acks and the errors
in order), and the order of all of it with the other operations of the write.
"""
from __future__ import annotations

import json

import pytest

from conformance.helpers import RawFactory, SpawnFn, ready, subscribe
from conformance.jshelpers import JsClient
from conformance.rawclient import RawClient, hmsg, msg, pub, split_frames
from conformance.servers import Endpoint

REPLY_RESERVED = "Permissions Violation for Publish with Reply of"


def no_responders(reply: str, sid: int | str, subject: str) -> bytes:
    return hmsg(reply, sid, f"NATS/1.0 503\r\nNats-Subject: {subject}\r\n\r\n".encode(), b"")


def test_run_to_a_subscriber(target: str, raw: RawFactory, subject: str) -> None:
    """Twenty messages on one subject in one write arrive once each, in order."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(b"".join(pub(subject, b"m%d" % i) for i in range(20)))
    assert client.barrier() == b"".join(msg(subject, 1, b"m%d" % i) for i in range(20))


def test_run_meets_auto_unsubscribe(target: str, raw: RawFactory, subject: str) -> None:
    """A subscription with ``UNSUB <sid> 2`` takes the first two messages of a run; the
    requests after them reach nobody, so each gets its 503."""
    client = ready(raw)
    subscribe(client, subject, 1)
    subscribe(client, f"_INBOX.{subject}.*", 2)
    client.send(b"UNSUB 1 2\r\n" + b"".join(
        pub(subject, b"r%d" % i, reply=f"_INBOX.{subject}.{i}") for i in range(4)))
    assert client.barrier() == (
        msg(subject, 1, b"r0", reply=f"_INBOX.{subject}.0")
        + msg(subject, 1, b"r1", reply=f"_INBOX.{subject}.1")
        + no_responders(f"_INBOX.{subject}.2", 2, subject)
        + no_responders(f"_INBOX.{subject}.3", 2, subject))


def test_run_of_requests_nobody_hears(target: str, raw: RawFactory, subject: str) -> None:
    """Requests in a run to a subject with no subscribers get one 503 each, in order; a
    plain publish among them gets nothing."""
    client = ready(raw)
    subscribe(client, f"_INBOX.{subject}.*", 2)
    client.send(pub(f"{subject}.none", b"a", reply=f"_INBOX.{subject}.1")
                + pub(f"{subject}.none", b"b")
                + pub(f"{subject}.none", b"c", reply=f"_INBOX.{subject}.3"))
    assert client.barrier() == (no_responders(f"_INBOX.{subject}.1", 2, f"{subject}.none")
                                + no_responders(f"_INBOX.{subject}.3", 2, f"{subject}.none"))


def test_run_with_refused_and_unanswerable_replies(
    target: str, raw: RawFactory, subject: str
) -> None:
    """Partway through a run: a reply in a reserved namespace is refused with its ``-ERR``
    (that message goes nowhere) in its place in the output; a reply with an empty token is
    delivered with its message; the run goes on after both."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(pub(subject, b"1", reply="ok.1") + pub(subject, b"2", reply="_R_.x")
                + pub(subject, b"3", reply="ok..3") + pub(subject, b"4"))
    frames = split_frames(client.barrier())
    assert frames == [
        msg(subject, 1, b"1", reply="ok.1"),
        f"-ERR '{REPLY_RESERVED} \"_R_.x\"'\r\n".encode(),
        msg(subject, 1, b"3", reply="ok..3"),
        msg(subject, 1, b"4"),
    ]


def test_run_keeps_each_size_token(target: str, raw: RawFactory, subject: str) -> None:
    """A size token with leading zeros partway through a run is repeated in that message's
    MSG line, and only in it."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(pub(subject, b"ab") + f"PUB {subject} 002\r\ncd\r\n".encode()
                + pub(subject, b"ef"))
    assert client.barrier() == (msg(subject, 1, b"ab")
                                + f"MSG {subject} 1 002\r\ncd\r\n".encode()
                                + msg(subject, 1, b"ef"))


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_run_into_a_stream_that_fills_up(
    target: str, js: JsClient, js_server: Endpoint, raw: RawFactory, stream_name: str,
    storage: str
) -> None:
    """Six publishes in one write to a stream holding at most three messages (discard new):
    three acks with sequences 1-3, then the error ack for each of the rest, in order; a
    subscriber on the subject gets all six."""
    subject = f"{stream_name.lower()}.run"
    js.create(stream_name, subjects=[f"{stream_name.lower()}.>"], storage=storage,
              max_msgs=3, discard="new")
    client = ready(raw, js_server)
    subscribe(client, f"_INBOX.{stream_name}.*", 2)
    watcher = ready(raw, js_server)
    subscribe(watcher, subject, 9)
    client.send(b"".join(pub(subject, b"m%d" % i, reply=f"_INBOX.{stream_name}.{i}")
                         for i in range(6)))
    acks = []
    for _ in range(6):  # nats-server answers from its stream's own goroutine: read, not barrier
        head, _, body = client.read_frame().partition(b"\r\n")
        acks.append((head.split()[1].decode(), json.loads(body)))
    assert [reply for reply, _ in acks] == [f"_INBOX.{stream_name}.{i}" for i in range(6)]
    assert [ack for _, ack in acks[:3]] == [
        {"stream": stream_name, "seq": seq} for seq in (1, 2, 3)]
    for _, ack in acks[3:]:
        assert ack == {"error": {"code": 503, "err_code": 10077,
                                 "description": "maximum messages exceeded"},
                       "stream": stream_name, "seq": 0}
    assert watcher.barrier() == b"".join(
        msg(subject, 9, b"m%d" % i, reply=f"_INBOX.{stream_name}.{i}") for i in range(6))


def test_run_acks_meet_auto_unsubscribe(
    target: str, js: JsClient, js_server: Endpoint, raw: RawFactory, stream_name: str
) -> None:
    """The acks of a run go to an inbox subscription limited to three messages
    (``UNSUB <sid> 3``): the first three acks arrive, in order, and nothing after them; all
    six messages are stored."""
    subject = f"{stream_name.lower()}.run"
    js.create(stream_name, subjects=[f"{stream_name.lower()}.>"], storage="memory")
    client = ready(raw, js_server)
    subscribe(client, f"_INBOX.{stream_name}.*", 2)
    client.send(b"UNSUB 2 3\r\n" + b"".join(
        pub(subject, b"m%d" % i, reply=f"_INBOX.{stream_name}.{i}") for i in range(6)))
    for i in range(3):
        head, _, body = client.read_frame().partition(b"\r\n")
        assert head.split()[1].decode() == f"_INBOX.{stream_name}.{i}"
        assert json.loads(body) == {"stream": stream_name, "seq": i + 1}
    assert js.api(f"STREAM.INFO.{stream_name}")["state"]["messages"] == 6
    assert client.read_available(0.3) == b""


RUN_PERMS_CONF = """
authorization {
  users = [
    { user: app, password: pa, permissions: {
        publish: ["run.>", "$JS.API.>"]
        subscribe: { allow: ["_INBOX.>"], deny: ["_INBOX.app.3"] }
    } }
  ]
}
"""


def test_run_acks_through_a_deny_rule(target: str, spawn: SpawnFn) -> None:
    """A user whose inbox wildcard a deny rule overlaps (``_INBOX.app.3``) publishes a run
    into a stream: every message is stored, and the acks arrive in order but for the one
    on the denied subject."""
    ep = spawn(config=RUN_PERMS_CONF, jetstream=True)
    client = RawClient.connect(ep.host, ep.port)
    client.handshake(user="app", **{"pass": "pa"})
    subscribe(client, "_INBOX.app.*", 1)
    body = json.dumps({"name": "RUN", "subjects": ["run.>"], "storage": "memory"}).encode()
    client.send(b"PUB $JS.API.STREAM.CREATE.RUN _INBOX.app.c %d\r\n%s\r\n" % (len(body), body))
    assert b'"error"' not in client.read_frame()
    client.send(b"".join(pub("run.x", b"m%d" % i, reply=f"_INBOX.app.{i}") for i in range(6)))
    got = []
    for _ in range(5):
        head, _, ack = client.read_frame().partition(b"\r\n")
        got.append((head.split()[1].decode(), json.loads(ack)["seq"]))
    assert got == [(f"_INBOX.app.{i}", i + 1) for i in (0, 1, 2, 4, 5)]
    client.send(b"PUB $JS.API.STREAM.INFO.RUN _INBOX.app.i 0\r\n\r\n")
    head, _, info = client.read_frame().partition(b"\r\n")
    assert head.split()[1] == b"_INBOX.app.i"
    assert json.loads(info)["state"]["messages"] == 6
    client.close()


def test_run_with_replies_to_a_subscriber(target: str, raw: RawFactory, subject: str) -> None:
    """A run of requests to one subscriber arrives with each message's reply subject."""
    client = ready(raw)
    subscribe(client, subject, 1)
    client.send(b"".join(pub(subject, b"q%d" % i, reply=f"in.{i}") for i in range(12)))
    assert client.barrier() == b"".join(
        msg(subject, 1, b"q%d" % i, reply=f"in.{i}") for i in range(12))


def test_run_to_own_subscription_without_echo(target: str, raw: RawFactory, subject: str) -> None:
    """A publisher connected with ``echo: false`` gets none of its own run; another
    subscriber gets all of it."""
    client = ready(raw, echo=False)
    subscribe(client, subject, 1)
    other = ready(raw)
    subscribe(other, subject, 2)
    client.send(b"".join(pub(subject, b"e%d" % i) for i in range(5)))
    assert client.barrier() == b""
    assert other.barrier() == b"".join(msg(subject, 2, b"e%d" % i) for i in range(5))


def test_long_run_to_a_subscriber(target: str, raw: RawFactory, subject: str) -> None:
    """Nine hundred 200-byte messages in one write (more than one read, and more than a
    server queues before it writes), some with a reply subject: each arrives once, in
    order."""
    client = ready(raw)
    subscribe(client, subject, 1)
    sender = ready(raw)
    body = [bytes([65 + i % 26]) * 200 for i in range(900)]
    sender.send(b"".join(pub(subject, body[i], reply=f"r.{i}" if i % 3 else None)
                         for i in range(900)))
    sender.barrier()
    want = b"".join(msg(subject, 1, body[i], reply=f"r.{i}" if i % 3 else None)
                    for i in range(900))
    got = b""
    while len(got) < len(want):
        more = client.read_available(0.5)
        if not more:
            break
        got += more
    assert got == want
