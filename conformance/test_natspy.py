"""The same core behaviour seen through the nats-py client library."""
from __future__ import annotations

import asyncio

import nats
import nats.errors
import pytest
from nats.aio.msg import Msg

from conformance.helpers import NatsFactory, SpawnFn, ensure_subs, ensure_subs_unpublished


async def test_natspy_connect_and_server_info(target: str, nats_connect: NatsFactory) -> None:
    """nats-py connects and sees the server's advertised limits and version."""
    nc = await nats_connect()
    assert nc.is_connected
    assert nc.max_payload == 1048576
    info = nc._server_info  # the INFO nats-py parsed
    assert info["headers"] is True
    assert info["proto"] == 1
    version = nc.connected_server_version
    assert (version.major, version.minor) >= (2, 9)
    assert isinstance(nc.client_id, int)
    rtt = await nc.rtt()
    assert rtt >= 0


async def test_natspy_publish_subscribe(
    target: str, nats_connect: NatsFactory, subject: str
) -> None:
    """Publish from one connection, receive on another with subject, reply and data."""
    sub_nc, pub_nc = await nats_connect(), await nats_connect()
    sub = await sub_nc.subscribe(f"{subject}.*")
    await ensure_subs(sub_nc)
    await pub_nc.publish(f"{subject}.a", b"hello", reply=f"{subject}.reply")
    await pub_nc.flush()
    m = await sub.next_msg(timeout=5)
    assert (m.subject, m.reply, m.data) == (f"{subject}.a", f"{subject}.reply", b"hello")
    assert m.headers is None


async def test_natspy_headers_roundtrip(
    target: str, nats_connect: NatsFactory, subject: str
) -> None:
    """Headers published by nats-py arrive intact (multi-value headers keep the first value
    through nats-py's parser; the block itself is verified byte-exact in test_headers)."""
    nc = await nats_connect()
    sub = await nc.subscribe(subject)
    await ensure_subs(nc)
    await nc.publish(subject, b"body", headers={"X-One": "1", "Nats-Msg-Id": "abc"})
    m = await sub.next_msg(timeout=5)
    assert m.data == b"body"
    assert m.headers == {"X-One": "1", "Nats-Msg-Id": "abc"}


async def test_natspy_request_reply(target: str, nats_connect: NatsFactory, subject: str) -> None:
    """``request`` gets the responder's answer (new-style muxed inbox)."""
    service, client = await nats_connect(), await nats_connect()

    async def handler(msg: Msg) -> None:
        await msg.respond(b"echo:" + msg.data)

    await service.subscribe(f"{subject}.svc", cb=handler)
    await ensure_subs(service)
    for i in range(5):
        reply = await client.request(f"{subject}.svc", str(i).encode(), timeout=5)
        assert reply.data == f"echo:{i}".encode()


async def test_natspy_no_responders(target: str, nats_connect: NatsFactory, subject: str) -> None:
    """A request nobody listens to fails fast with ``NoRespondersError`` (the 503)."""
    nc = await nats_connect()
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request(f"{subject}.nobody", b"?", timeout=5)
    assert loop.time() - start < 2.5, "no-responders must not wait for the timeout"


async def test_natspy_queue_subscribe(
    target: str, nats_connect: NatsFactory, subject: str
) -> None:
    """Two queue members on two connections share the messages: each message exactly once."""
    a_nc, b_nc, pub_nc = await nats_connect(), await nats_connect(), await nats_connect()
    got: dict[str, list[bytes]] = {"a": [], "b": []}

    async def collect_a(msg: Msg) -> None:
        got["a"].append(msg.data)

    async def collect_b(msg: Msg) -> None:
        got["b"].append(msg.data)

    await a_nc.subscribe(subject, queue="workers", cb=collect_a)
    await b_nc.subscribe(subject, queue="workers", cb=collect_b)
    await ensure_subs(a_nc)
    await ensure_subs(b_nc)
    n = 200
    for i in range(n):
        await pub_nc.publish(subject, str(i).encode())
    await pub_nc.flush()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while len(got["a"]) + len(got["b"]) < n and loop.time() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # catch any duplicate delivery
    assert sorted(got["a"] + got["b"], key=int) == [str(i).encode() for i in range(n)]
    assert got["a"] and got["b"]


async def test_natspy_ordering_1000(target: str, nats_connect: NatsFactory, subject: str) -> None:
    """1000 messages published by nats-py arrive in order at a nats-py subscriber."""
    sub_nc, pub_nc = await nats_connect(), await nats_connect()
    sub = await sub_nc.subscribe(subject)
    await ensure_subs(sub_nc)
    for i in range(1000):
        await pub_nc.publish(subject, str(i).encode())
    await pub_nc.flush()
    received = [(await sub.next_msg(timeout=5)).data for _ in range(1000)]
    assert received == [str(i).encode() for i in range(1000)]


async def test_natspy_unsubscribe_limit(
    target: str, nats_connect: NatsFactory, subject: str
) -> None:
    """``unsubscribe(limit=3)`` (UNSUB sid 3) delivers exactly three messages."""
    nc = await nats_connect()
    sub = await nc.subscribe(subject)
    await sub.unsubscribe(limit=3)
    await ensure_subs(nc)
    for i in range(6):
        await nc.publish(subject, str(i).encode())
    await ensure_subs(nc)  # round trip: all six publishes processed
    assert [(await sub.next_msg(timeout=2)).data for _ in range(3)] == [b"0", b"1", b"2"]
    with pytest.raises(nats.errors.TimeoutError):
        await sub.next_msg(timeout=0.3)


async def test_natspy_echo_false(target: str, nats_connect: NatsFactory, subject: str) -> None:
    """``no_echo=True`` suppresses a connection's own messages."""
    nc = await nats_connect(no_echo=True)
    other = await nats_connect()
    sub = await nc.subscribe(subject)
    await ensure_subs_unpublished(nc)  # no_echo: its own marker would never come back
    other_sub = await other.subscribe(subject)
    await ensure_subs(other)
    await nc.publish(subject, b"own")
    await other.publish(subject, b"theirs")
    await other.flush()
    # `other` gets both messages (in publish order per publisher); `nc` only the foreign one.
    got_other = {(await other_sub.next_msg(timeout=5)).data for _ in range(2)}
    assert got_other == {b"own", b"theirs"}
    assert (await sub.next_msg(timeout=5)).data == b"theirs"
    with pytest.raises(nats.errors.TimeoutError):
        await sub.next_msg(timeout=0.3)


async def test_natspy_max_payload_enforced_locally(target: str, nats_connect: NatsFactory) -> None:
    """nats-py refuses payloads above the advertised max_payload before sending."""
    nc = await nats_connect()
    with pytest.raises(nats.errors.MaxPayloadError):
        await nc.publish("conf.too.big", b"x" * (nc.max_payload + 1))
    assert nc.is_connected


async def test_natspy_user_password(
    target: str, spawn: SpawnFn, nats_connect: NatsFactory, subject: str
) -> None:
    """nats-py connects with user/password; wrong credentials are refused."""
    ep = spawn(config="authorization {\n  user: alice\n  password: s3cret\n}\n")
    nc = await nats_connect(ep, user="alice", password="s3cret")
    sub = await nc.subscribe(subject)
    await ensure_subs(nc)
    await nc.publish(subject, b"authed")
    assert (await sub.next_msg(timeout=5)).data == b"authed"
    with pytest.raises(Exception) as excinfo:
        await nats_connect(ep, user="alice", password="wrong")
    assert "authorization violation" in str(excinfo.value).lower()


async def test_natspy_token(target: str, spawn: SpawnFn, nats_connect: NatsFactory) -> None:
    """nats-py connects with a token; a wrong token is refused."""
    ep = spawn(config='authorization {\n  token: "t0k3n-abc"\n}\n')
    nc = await nats_connect(ep, token="t0k3n-abc")
    assert nc.is_connected
    await nc.flush()
    with pytest.raises(Exception) as excinfo:
        await nats_connect(ep, token="nope")
    assert "authorization violation" in str(excinfo.value).lower()


@pytest.mark.needs_plain_server
async def test_natspy_jetstream_disabled_no_responders(
    target: str, nats_connect: NatsFactory
) -> None:
    """On a server without JetStream, a ``$JS.API`` request surfaces as no responders."""
    nc = await nats_connect()
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request("$JS.API.INFO", b"", timeout=5)


async def test_natspy_drain(target: str, nats_connect: NatsFactory, subject: str) -> None:
    """``drain()`` delivers everything already published, then closes the connection."""
    sub_nc, pub_nc = await nats_connect(), await nats_connect()
    got: list[bytes] = []

    async def handler(msg: Msg) -> None:
        got.append(msg.data)

    await sub_nc.subscribe(subject, cb=handler)
    await ensure_subs(sub_nc)
    for i in range(50):
        await pub_nc.publish(subject, str(i).encode())
    await ensure_subs(pub_nc)  # publishes processed by the server
    await ensure_subs(sub_nc)  # ... and their MSGs received ahead of this marker
    await sub_nc.drain()
    assert sub_nc.is_closed
    assert got == [str(i).encode() for i in range(50)]
