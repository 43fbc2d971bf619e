"""The stream side of nats-py's JetStream context against the server (nats-py
2.16 maps API errors to exception classes by ``err_code``)."""
from __future__ import annotations

import nats.js.errors
import pytest
from nats.js.api import StorageType, StreamConfig

from conformance.helpers import NatsFactory
from conformance.jshelpers import unique_name


async def test_js_natspy_add_stream_and_info(target: str, js_nats: NatsFactory,
                                             stream_name: str) -> None:
    """``add_stream`` returns a StreamInfo with the defaults; ``stream_info`` parses
    ``cluster``."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    try:
        si = await js.add_stream(name=stream_name, subjects=[f"{p}.*"], storage=StorageType.MEMORY)
        assert si.config.name == stream_name
        assert si.config.subjects == [f"{p}.*"]
        assert si.config.storage == StorageType.MEMORY
        assert si.config.max_msgs == -1 and si.config.duplicate_window == 120.0
        assert si.state.messages == 0 and si.state.last_seq == 0
        info = await js.stream_info(stream_name)
        assert info.cluster is not None and info.cluster.leader == nc._server_info["server_name"]
        assert info.config.metadata is not None and info.config.metadata["_nats.level"] == "5"
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_publish_pub_ack(target: str, js_nats: NatsFactory,
                                         stream_name: str) -> None:
    """``publish`` returns PubAck(stream, seq); a repeated msg id is flagged duplicate."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        ack = await js.publish(f"{p}.a", b"one")
        assert (ack.stream, ack.seq, ack.duplicate) == (stream_name, 1, None)
        ack = await js.publish(f"{p}.b", b"two", headers={"Nats-Msg-Id": "id-1"})
        assert ack.seq == 2 and not ack.duplicate
        dup = await js.publish(f"{p}.b", b"two", headers={"Nats-Msg-Id": "id-1"})
        assert (dup.seq, dup.duplicate) == (2, True)
        info = await js.stream_info(stream_name)
        assert info.state.messages == 2
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_publish_errors(target: str, js_nats: NatsFactory,
                                        stream_name: str) -> None:
    """Error acks raise APIError with the server's err_code; no stream → NoStreamResponseError."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        await js.publish(f"{p}.a", b"x")
        with pytest.raises(nats.js.errors.APIError) as err:
            await js.publish(f"{p}.a", b"x", headers={"Nats-Expected-Last-Sequence": "9"})
        assert (err.value.code, err.value.err_code) == (400, 10071)
        assert err.value.description == "wrong last sequence: 1"
        with pytest.raises(nats.js.errors.APIError) as err:
            await js.publish(f"{p}.a", b"x", stream="OTHER")
        assert err.value.err_code == 10060
        with pytest.raises(nats.js.errors.NoStreamResponseError):
            await js.publish(f"{unique_name().lower()}.none", b"x")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_get_msg_and_last(target: str, js_nats: NatsFactory,
                                          stream_name: str) -> None:
    """``get_msg`` by sequence and ``get_last_msg`` by subject (STREAM.MSG.GET), headers
    decoded."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.*"])
    try:
        await js.publish(f"{p}.a", b"one", headers={"X-H": "1"})
        await js.publish(f"{p}.a", b"two")
        await js.publish(f"{p}.b", b"three")
        msg = await js.get_msg(stream_name, 1)
        assert (msg.subject, msg.seq, msg.data) == (f"{p}.a", 1, b"one")
        assert msg.headers == {"X-H": "1"}
        last = await js.get_last_msg(stream_name, f"{p}.a")
        assert (last.seq, last.data) == (2, b"two")
        with pytest.raises(nats.js.errors.NotFoundError):
            await js.get_msg(stream_name, 99)
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_direct_get(target: str, js_nats: NatsFactory,
                                    stream_name: str) -> None:
    """``get_msg(direct=True)`` uses DIRECT.GET and reads the Nats-* reply headers."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.*"], allow_direct=True)
    try:
        await js.publish(f"{p}.a", b"one")
        await js.publish(f"{p}.b", b"two")
        msg = await js.get_msg(stream_name, seq=2, direct=True)
        assert (msg.subject, msg.seq, msg.data) == (f"{p}.b", 2, b"two")
        last = await js.get_msg(stream_name, subject=f"{p}.a", direct=True)
        assert (last.subject, last.seq, last.data) == (f"{p}.a", 1, b"one")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_purge_and_delete(target: str, js_nats: NatsFactory,
                                          stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.*"])
    for s in ("a", "a", "b"):
        await js.publish(f"{p}.{s}", b"x")
    assert await js.purge_stream(stream_name, subject=f"{p}.a") is True
    info = await js.stream_info(stream_name)
    assert (info.state.messages, info.state.first_seq) == (1, 3)
    assert await js.purge_stream(stream_name) is True
    info = await js.stream_info(stream_name)
    assert (info.state.messages, info.state.first_seq, info.state.last_seq) == (0, 4, 3)
    assert await js.delete_stream(stream_name) is True
    with pytest.raises(nats.js.errors.NotFoundError) as err:
        await js.stream_info(stream_name)
    assert err.value.err_code == 10059


async def test_js_natspy_find_stream_by_subject(target: str, js_nats: NatsFactory,
                                                stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        assert await js.find_stream_name_by_subject(f"{p}.x.y") == stream_name
        with pytest.raises(nats.js.errors.NotFoundError):
            await js.find_stream_name_by_subject(f"{unique_name().lower()}.x")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_update_and_errors(target: str, js_nats: NatsFactory,
                                           stream_name: str) -> None:
    """``update_stream`` changes limits; creating a conflicting config raises BadRequestError
    with 10058; ``account_info`` counts the stream."""
    nc = await js_nats()
    js = nc.jetstream()
    await js.add_stream(name=stream_name)
    try:
        si = await js.update_stream(StreamConfig(name=stream_name, max_msgs=5,
                                                 description="upd"))
        assert (si.config.max_msgs, si.config.description) == (5, "upd")
        with pytest.raises(nats.js.errors.BadRequestError) as err:
            await js.add_stream(name=stream_name, max_msgs=7)
        assert err.value.err_code == 10058
        acct = await js.account_info()
        assert acct.streams >= 1 and acct.limits.max_streams == -1
    finally:
        await js.delete_stream(stream_name)


@pytest.mark.needs_plain_server
async def test_js_natspy_without_jetstream(target: str, nats_connect: NatsFactory) -> None:
    """Against a server without ``-js`` the 503 no-responders status on ``$JS.API.INFO``
    surfaces as ServiceUnavailableError ("JetStream not enabled")."""
    nc = await nats_connect()
    js = nc.jetstream()
    with pytest.raises(nats.js.errors.ServiceUnavailableError):
        await js.account_info()
