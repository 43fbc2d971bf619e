"""nats-py 2.16 Key-Value store against the server: bucket creation and the
stream config it yields, put/get through STREAM.MSG.GET and DIRECT.GET, optimistic
concurrency (update with a revision, create-if-absent), delete and purge markers, history,
keys, watch, bucket status, bind and delete bucket.

History, keys and watch run on nats-py's ordered push consumer (``js.subscribe(...,
ordered_consumer=True)``), the rest only needs the publish path and the message-get APIs.
Every case uses its own bucket and deletes it afterwards.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import nats.errors
import nats.js.errors
import pytest
from nats.js.api import AckPolicy, DeliverPolicy, StorageType
from nats.js.kv import KeyValue

from conformance.helpers import NatsFactory
from conformance.jshelpers import (
    DYNAMIC_METADATA,
    JsClient,
    default_config,
    header_block,
    unique_name,
)


def kv_config(bucket: str, **overrides: Any) -> dict[str, Any]:
    """The StreamConfig the server echoes for nats-py's ``create_key_value(bucket=...)``
    (history 1 unless overridden): discard new, deny_delete, rollups and per-message TTLs
    allowed (the latter raises ``_nats.req.level`` to 1)."""
    cfg = default_config(
        f"KV_{bucket}", [f"$KV.{bucket}.>"],
        discard="new", max_msgs_per_subject=1, deny_delete=True, allow_rollup_hdrs=True,
        allow_msg_ttl=True, metadata={**DYNAMIC_METADATA, "_nats.req.level": "1"},
    )
    cfg.update(overrides)
    return cfg


@asynccontextmanager
async def bucket(js_nats: NatsFactory, **params: Any) -> AsyncIterator[tuple[Any, KeyValue, str]]:
    """A fresh bucket (``create_key_value(bucket=<unique>, **params)``), deleted afterwards.
    Yields the JetStream context, the KeyValue handle and the bucket name."""
    nc = await js_nats()
    js = nc.jetstream()
    name = unique_name("KV")
    kv = await js.create_key_value(bucket=name, **params)
    try:
        yield js, kv, name
    finally:
        try:
            await js.delete_key_value(name)
        except Exception:
            pass


async def initial_entries(watcher: KeyValue.KeyWatcher, count: int,
                          timeout: float = 3.0) -> list[Any]:
    """The first ``count`` entries of a watcher plus its one ``None`` "initial values done"
    marker.

    nats-py decides where the marker goes from a CONSUMER.INFO reply that races with the
    first deliveries: nats-server now and then answers the info (num_pending 0) before the
    deliveries reach the client, and nats-py then queues the marker first. Both orders are
    accepted; exactly one marker is required.
    """
    entries: list[Any] = []
    markers = 0
    while len(entries) < count or markers == 0:
        entry = await watcher.updates(timeout=timeout)
        if entry is None:
            markers += 1
        else:
            entries.append(entry)
    assert markers == 1 and len(entries) == count, (markers, entries)
    return entries


async def expecting_keys(call: Callable[[], Awaitable[Any]], tries: int = 3) -> Any:
    """``kv.history(...)`` / ``kv.keys()`` when entries exist. The same nats-py race as in
    ``initial_entries`` can make either call end at once with NoKeysError (the marker is
    queued before the entries); try again a few times, as an application would have to."""
    for attempt in range(tries):
        try:
            return await asyncio.wait_for(call(), 10)
        except nats.js.errors.NoKeysError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def summary(entry: Any) -> tuple[str, bytes, int, str | None]:
    return (entry.key, entry.value, entry.revision, entry.operation)


# ---------------------------------------------------------------------- buckets


async def test_kv_create_bucket_stream_config(target: str, js_nats: NatsFactory,
                                              js: JsClient) -> None:
    """``create_key_value(bucket, history=5)`` makes stream ``KV_<bucket>`` on ``$KV.<bucket>.>``;
    STREAM.INFO echoes exactly the config below (no allow_direct: nats-py leaves it out)."""
    async with bucket(js_nats, history=5) as (_, kv, name):
        info = js.info(f"KV_{name}")
        assert "error" not in info, info
        expected = kv_config(name, max_msgs_per_subject=5)
        assert info["config"] == expected
        assert list(info["config"]) == list(expected)
        assert kv._direct is False


async def test_kv_create_bucket_all_options(target: str, js_nats: NatsFactory,
                                            js: JsClient) -> None:
    """Description, ttl (also caps the duplicate window), max value size, max bytes, memory
    storage and direct get all land in the stream config."""
    async with bucket(js_nats, history=3, description="kv conf", ttl=60, max_value_size=1024,
                      max_bytes=1 << 20, storage=StorageType.MEMORY, direct=True) as (_, kv, name):
        info = js.info(f"KV_{name}")
        assert "error" not in info, info
        expected = kv_config(name, max_msgs_per_subject=3)
        expected = {"name": expected.pop("name"), "description": "kv conf", **expected}
        expected.update(max_age=60_000_000_000, duplicate_window=60_000_000_000,
                        max_msg_size=1024, max_bytes=1 << 20, storage="memory",
                        allow_direct=True)
        assert info["config"] == expected
        assert list(info["config"]) == list(expected)
        assert kv._direct is True
        st = await kv.status()
        assert (st.bucket, st.history, st.ttl, st.values) == (name, 3, 60.0, 0)


async def test_kv_create_bucket_again(target: str, js_nats: NatsFactory) -> None:
    """Creating the same bucket again with the same config is fine; a different history is a
    10058 'stream name already in use with a different configuration'."""
    async with bucket(js_nats, history=2) as (js, kv, name):
        await kv.put("k", b"v")
        again = await js.create_key_value(bucket=name, history=2)
        assert (await again.get("k")).value == b"v"
        with pytest.raises(nats.js.errors.BadRequestError) as err:
            await js.create_key_value(bucket=name, history=4)
        assert (err.value.code, err.value.err_code) == (400, 10058)
        assert err.value.description == "stream name already in use with a different configuration"


async def test_kv_bind_existing_and_missing(target: str, js_nats: NatsFactory) -> None:
    """``key_value(bucket)`` binds through STREAM.INFO (picking up allow_direct); a missing
    bucket raises BucketNotFoundError."""
    async with bucket(js_nats, direct=True) as (js, kv, name):
        await kv.put("a", b"1")
        bound = await js.key_value(name)
        assert bound._direct is True
        assert (await bound.get("a")).value == b"1"
        with pytest.raises(nats.js.errors.BucketNotFoundError):
            await js.key_value(unique_name("KV"))


async def test_kv_status(target: str, js_nats: NatsFactory) -> None:
    """``status()`` reads STREAM.INFO: values counts every stored revision and marker."""
    async with bucket(js_nats, history=4) as (_, kv, name):
        await kv.put("a", b"1")
        await kv.put("a", b"2")
        await kv.put("b", b"3")
        await kv.delete("b")
        st = await kv.status()
        assert (st.bucket, st.values, st.history, st.ttl) == (name, 4, 4, 0)
        assert st.stream_info.config.name == f"KV_{name}"
        assert st.stream_info.config.subjects == [f"$KV.{name}.>"]
        assert st.stream_info.state.last_seq == 4


async def test_kv_delete_bucket(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """``delete_key_value`` deletes the stream; binding then fails, deleting again is a 404
    10059."""
    nc = await js_nats()
    jsc = nc.jetstream()
    name = unique_name("KV")
    kv = await jsc.create_key_value(bucket=name)
    await kv.put("k", b"v")
    assert await jsc.delete_key_value(name) is True
    out = js.info(f"KV_{name}")
    assert out["error"]["err_code"] == 10059
    with pytest.raises(nats.js.errors.BucketNotFoundError):
        await jsc.key_value(name)
    with pytest.raises(nats.js.errors.NotFoundError) as err:
        await jsc.delete_key_value(name)
    assert (err.value.code, err.value.err_code) == (404, 10059)


# ---------------------------------------------------------------------- put / get


@pytest.mark.parametrize("direct", [False, True], ids=["msg-get", "direct-get"])
async def test_kv_put_get(target: str, js_nats: NatsFactory, direct: bool) -> None:
    """put returns the stream sequence as revision; get returns the latest value (via
    STREAM.MSG.GET last_by_subj, or DIRECT.GET when the bucket allows direct), a given
    revision, and KeyNotFoundError for missing keys or a revision of another key."""
    async with bucket(js_nats, history=5, direct=direct or None) as (_, kv, name):
        assert kv._direct is direct
        assert await kv.put("k1", b"v1") == 1
        assert await kv.put("k2", b"other") == 2
        assert await kv.put("k1", b"v2") == 3
        e = await kv.get("k1")
        assert (e.bucket, e.key, e.value, e.revision, e.operation) == (name, "k1", b"v2", 3, None)
        old = await kv.get("k1", revision=1)
        assert (old.key, old.value, old.revision) == ("k1", b"v1", 1)
        assert (await kv.get("k2")).value == b"other"
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("missing")
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k1", revision=2)  # revision 2 belongs to k2
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k1", revision=99)


@pytest.mark.parametrize("direct", [False, True], ids=["msg-get", "direct-get"])
async def test_kv_put_get_binary_and_nested_keys(target: str, js_nats: NatsFactory,
                                                 direct: bool) -> None:
    """Keys with dots, dashes, slashes, '=' and '_' map to subject tokens; values are binary
    safe (CR LF, NUL) and may be empty."""
    async with bucket(js_nats, direct=direct or None) as (_, kv, _name):
        value = b"\x00\r\nbinary\xff" * 10
        await kv.put("a.b.c", value)
        await kv.put("x/y=z_w-v", b"")
        assert (await kv.get("a.b.c")).value == value
        e = await kv.get("x/y=z_w-v")
        assert (e.value, e.revision) == (None, 2)  # nats-py maps an empty payload to None
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("a.b")


async def test_kv_history_limit_keeps_last_revisions(target: str, js_nats: NatsFactory,
                                                     js: JsClient) -> None:
    """History 2: older revisions fall off per key (max_msgs_per_subject), getting one of them
    is KeyNotFoundError."""
    async with bucket(js_nats, history=2) as (_, kv, name):
        for i in range(4):
            await kv.put("k", b"v%d" % i)
        await kv.put("j", b"j")
        st = js.state(f"KV_{name}")
        assert (st["messages"], st["first_seq"], st["last_seq"]) == (3, 3, 5)
        assert (await kv.get("k", revision=3)).value == b"v2"
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k", revision=2)


# ---------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("direct", [False, True], ids=["msg-get", "direct-get"])
async def test_kv_update_with_revision(target: str, js_nats: NatsFactory, direct: bool) -> None:
    """update(last=rev) succeeds only while rev is the key's latest revision; otherwise the
    10071 'wrong last sequence: N' surfaces as KeyWrongLastSequenceError."""
    async with bucket(js_nats, history=3, direct=direct or None) as (_, kv, _name):
        r1 = await kv.put("k", b"a")
        await kv.put("other", b"x")
        r2 = await kv.update("k", b"b", last=r1)
        assert (r1, r2) == (1, 3)
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError) as err:
            await kv.update("k", b"c", last=r1)
        assert err.value.description == "wrong last sequence: 3"
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError) as err:
            await kv.update("nokey", b"c", last=5)
        assert err.value.description == "wrong last sequence: 0"
        assert await kv.update("k", b"c", last=r2) == 4
        assert (await kv.get("k")).value == b"c"


async def test_kv_update_wrong_revision_raw_ack(target: str, js_nats: NatsFactory,
                                                js: JsClient) -> None:
    """The raw pub ack nats-py turns into KeyWrongLastSequenceError."""
    async with bucket(js_nats) as (_, kv, name):
        await kv.put("k", b"a")
        hdr = header_block(("Nats-Expected-Last-Subject-Sequence", "7"))
        ack = js.publish(f"$KV.{name}.k", b"z", headers=hdr)
        assert ack.data == (b'{"error":{"code":400,"err_code":10071,'
                            b'"description":"wrong last sequence: 1"},'
                            + f'"stream":"KV_{name}","seq":0}}'.encode())
        hdr = header_block(("Nats-Expected-Last-Subject-Sequence", "1"))
        ack = js.publish(f"$KV.{name}.k", b"z", headers=hdr)
        assert ack.data == f'{{"stream":"KV_{name}","seq":2}}'.encode()


@pytest.mark.parametrize("direct", [False, True], ids=["msg-get", "direct-get"])
async def test_kv_create_if_absent(target: str, js_nats: NatsFactory, direct: bool) -> None:
    """create() only writes a missing key; an existing one raises KeyWrongLastSequenceError;
    after a delete or a purge the key can be created again (nats-py re-reads the marker's
    revision and retries with it)."""
    async with bucket(js_nats, history=5, direct=direct or None) as (_, kv, _name):
        assert await kv.create("k", b"first") == 1
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError) as err:
            await kv.create("k", b"again")
        assert err.value.description == "wrong last sequence: 1"
        await kv.delete("k")
        assert await kv.create("k", b"second") == 3
        assert (await kv.get("k")).value == b"second"
        await kv.purge("k")
        assert await kv.create("k", b"third") == 5
        e = await kv.get("k")
        assert (e.value, e.revision) == (b"third", 5)
        with pytest.raises(nats.js.errors.KeyWrongLastSequenceError):
            await kv.create("k", b"fourth")


# ---------------------------------------------------------------------- delete / purge


@pytest.mark.parametrize("direct", [False, True], ids=["msg-get", "direct-get"])
async def test_kv_delete(target: str, js_nats: NatsFactory, js: JsClient, direct: bool) -> None:
    """delete() stores a ``KV-Operation: DEL`` marker (history kept); get then raises
    KeyNotFoundError carrying the marker; a stale ``last`` is refused."""
    async with bucket(js_nats, history=5, direct=direct or None) as (_, kv, name):
        await kv.put("k", b"a")
        await kv.put("k", b"b")
        assert await kv.delete("k") is True
        with pytest.raises(nats.js.errors.KeyNotFoundError) as err:
            await kv.get("k")
        assert err.value.op == "DEL"
        assert err.value.entry.revision == 3
        st = js.state(f"KV_{name}")
        assert (st["messages"], st["last_seq"]) == (3, 3)
        assert (await kv.get("k", revision=2)).value == b"b"
        await kv.put("k", b"c")
        with pytest.raises(nats.js.errors.APIError) as aerr:
            await kv.delete("k", last=2)
        assert aerr.value.err_code == 10071
        assert await kv.delete("k", last=4) is True


async def test_kv_delete_marker_raw(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """The delete marker as STREAM.MSG.GET returns it: empty data, the KV-Operation header."""
    async with bucket(js_nats) as (_, kv, name):
        await kv.put("k", b"a")
        await kv.delete("k")
        out = js.msg_get(f"KV_{name}", {"last_by_subj": f"$KV.{name}.k"})
        msg = out["message"]
        assert (msg["subject"], msg["seq"]) == (f"$KV.{name}.k", 2)
        assert "data" not in msg
        assert msg["hdrs"] == "TkFUUy8xLjANCktWLU9wZXJhdGlvbjogREVMDQoNCg=="


async def test_kv_purge(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """purge() rolls the key up to one ``KV-Operation: PURGE`` marker (``Nats-Rollup: sub``);
    other keys are untouched."""
    async with bucket(js_nats, history=10) as (_, kv, name):
        for i in range(3):
            await kv.put("k", b"%d" % i)
        await kv.put("other", b"o")
        assert await kv.purge("k") is True
        with pytest.raises(nats.js.errors.KeyNotFoundError) as err:
            await kv.get("k")
        assert err.value.op == "PURGE"
        assert err.value.entry.revision == 5
        st = js.state(f"KV_{name}")
        assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 4, 5)
        assert (await kv.get("other")).value == b"o"
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k", revision=1)


async def test_kv_direct_get_delete_marker_raw(target: str, js_nats: NatsFactory,
                                               js: JsClient) -> None:
    """DIRECT.GET (empty body, subject in the API subject) of a purged key: the stored headers
    first, then the Nats-* headers the server adds."""
    async with bucket(js_nats, direct=True) as (_, kv, name):
        await kv.put("k", b"a")
        await kv.purge("k")
        m = js.request(f"$JS.API.DIRECT.GET.KV_{name}.$KV.{name}.k")
        assert m.status_line == "NATS/1.0"
        names = [k for k, _ in m.header_pairs]
        assert names == ["KV-Operation", "Nats-Rollup", "Nats-Stream", "Nats-Subject",
                         "Nats-Sequence", "Nats-Time-Stamp"]
        h = m.headers
        assert (h["KV-Operation"], h["Nats-Rollup"], h["Nats-Stream"], h["Nats-Subject"],
                h["Nats-Sequence"]) == ("PURGE", "sub", f"KV_{name}", f"$KV.{name}.k", "2")
        assert m.data == b""
        miss = js.request(f"$JS.API.DIRECT.GET.KV_{name}.$KV.{name}.none")
        assert miss.header == b"NATS/1.0 404 Message Not Found\r\n\r\n" and miss.data == b""


# ---------------------------------------------------------------------- markers and TTLs


async def wait_stream(js: JsClient, stream: str, done: Callable[[dict], bool],
                      timeout: float = 8.0) -> dict:
    """Poll STREAM.INFO until ``done(state)`` (expiry runs on the server's own timers)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        st = js.state(stream)
        if done(st):
            return st
        assert asyncio.get_running_loop().time() < deadline, st
        await asyncio.sleep(0.05)


def stored_headers(js: JsClient, stream: str, seq: int) -> dict[str, str]:
    m = js.request(f"$JS.API.DIRECT.GET.{stream}", {"seq": seq})
    return {k: v for k, v in m.header_pairs if not k.startswith("Nats-S")
            and k != "Nats-Time-Stamp"}


@pytest.mark.parametrize("history", [1, 5])
async def test_kv_purge_marker_ttl_expires_without_new_marker(
        target: str, js_nats: NatsFactory, js: JsClient, history: int) -> None:
    """``kv.purge(key, msg_ttl=1)`` on a bucket with ``limit_marker_ttl`` 2 s: the purge marker
    is itself a subject delete marker, so when it expires it is simply gone (no ``MaxAge``
    marker in its place) and ``get`` finds nothing. Its TTL is raised to the marker TTL unless
    the bucket keeps one revision."""
    async with bucket(js_nats, history=history, limit_marker_ttl=2, direct=True) as (_, kv, name):
        stream = f"KV_{name}"
        await kv.put("k", b"v1")
        await kv.put("other", b"o")
        await kv.purge("k", msg_ttl=1)
        assert stored_headers(js, stream, 3) == {
            "KV-Operation": "PURGE", "Nats-Rollup": "sub",
            "Nats-TTL": "1" if history == 1 else "2"}
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k")
        st = await wait_stream(js, stream, lambda st: st["messages"] == 1)
        assert (st["first_seq"], st["last_seq"]) == (2, 3)
        with pytest.raises(nats.js.errors.KeyNotFoundError) as err:
            await kv.get("k")
        assert err.value.op is None  # nothing stored for the key: not even a marker
        assert (await kv.get("other")).value == b"o"


async def test_kv_purge_marker_ttl_before_bucket_ttl(target: str, js_nats: NatsFactory,
                                                     js: JsClient) -> None:
    """A purge marker's TTL (2 s, the marker TTL) ends it long before the bucket's 60 s max
    age."""
    async with bucket(js_nats, history=5, ttl=60, limit_marker_ttl=2) as (_, kv, name):
        await kv.put("k", b"v1")
        await kv.purge("k", msg_ttl=1)
        st = await wait_stream(js, f"KV_{name}", lambda st: st["messages"] == 0)
        assert st["last_seq"] == 2


async def test_kv_raw_purge_marker_with_ttl(target: str, js: JsClient) -> None:
    """The same marker published by hand (``KV-Operation: PURGE``, ``Nats-Rollup: sub``,
    ``Nats-TTL``) on a plain stream with ``subject_delete_marker_ttl``: it expires without a
    new marker, while a plain TTL message that expires leaves one."""
    name = unique_name()
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], allow_rollup_hdrs=True, allow_msg_ttl=True,
              subject_delete_marker_ttl=1_000_000_000)
    js.pub_ok(f"{p}.k", b"v")
    js.pub_ok(f"{p}.k", b"", header_block(("KV-Operation", "PURGE"), ("Nats-Rollup", "sub"),
                                         ("Nats-TTL", "1s")))
    js.pub_ok(f"{p}.j", b"v", header_block(("Nats-TTL", "1s")))
    st = await wait_stream(js, name, lambda st: st["last_seq"] == 4 and st["messages"] == 0)
    assert st["first_seq"] == 5
    markers = js.info(name, {"subjects_filter": ">"})["state"]
    assert "subjects" not in markers


async def test_kv_delete_marker_expiring_by_max_age_leaves_marker(
        target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """A ``DEL`` marker is no subject delete marker: expiring by the bucket's max age (1 s) it
    leaves a ``MaxAge`` marker (TTL 2 s), which nats-py's ``get`` returns as an empty entry,
    until that expires too."""
    async with bucket(js_nats, history=5, ttl=1, limit_marker_ttl=2, direct=True) as (_, kv, name):
        stream = f"KV_{name}"
        await kv.put("k", b"v1")
        await kv.delete("k")
        st = await wait_stream(js, stream, lambda st: st["last_seq"] == 3)
        assert (st["messages"], st["first_seq"]) == (1, 3)
        assert stored_headers(js, stream, 3) == {
            "Nats-Marker-Reason": "MaxAge", "Nats-TTL": "2s", "Nats-Rollup": "sub"}
        entry = await kv.get("k")
        assert (entry.value, entry.revision, entry.operation) == (None, 3, None)
        st = await wait_stream(js, stream, lambda st: st["messages"] == 0)
        assert st["last_seq"] == 3


# ---------------------------------------------------------------------- consumers


async def test_kv_history(target: str, js_nats: NatsFactory) -> None:
    """history(key) replays every kept revision of the key (deliver all), markers included,
    with deltas counting down to 0; a missing key raises NoKeysError."""
    async with bucket(js_nats, history=10) as (_, kv, _name):
        await kv.put("k", b"1")
        await kv.put("j", b"x")
        await kv.put("k", b"2")
        await kv.delete("k")
        await kv.put("k", b"3")
        entries = await expecting_keys(lambda: kv.history("k"))
        assert [summary(e) for e in entries] == [
            ("k", b"1", 1, None), ("k", b"2", 3, None), ("k", b"", 4, "DEL"), ("k", b"3", 5, None)]
        assert [e.delta for e in entries] == [3, 2, 1, 0]
        assert all(e.created is not None for e in entries)
        with pytest.raises(nats.js.errors.NoKeysError):
            await asyncio.wait_for(kv.history("nothing"), 10)


async def test_kv_keys(target: str, js_nats: NatsFactory) -> None:
    """keys() lists the current keys (last per subject, headers only), skipping deleted and
    purged ones; an empty bucket raises NoKeysError."""
    async with bucket(js_nats, history=3) as (_, kv, _name):
        with pytest.raises(nats.js.errors.NoKeysError):
            await asyncio.wait_for(kv.keys(), 10)
        await kv.put("a", b"1")
        await kv.put("b.c", b"2")
        await kv.put("a", b"3")
        await kv.put("d", b"4")
        await kv.put("e", b"5")
        await kv.delete("d")
        await kv.purge("e")
        keys = await expecting_keys(kv.keys)
        assert sorted(keys) == ["a", "b.c"]
        assert await expecting_keys(lambda: kv.keys(filters=["b"])) == ["b.c"]


async def test_kv_keys_only_deleted(target: str, js_nats: NatsFactory) -> None:
    """A bucket whose every key is deleted has no keys."""
    async with bucket(js_nats) as (_, kv, _name):
        await kv.put("a", b"1")
        await kv.delete("a")
        with pytest.raises(nats.js.errors.NoKeysError):
            await asyncio.wait_for(kv.keys(), 10)


async def test_kv_watch_all(target: str, js_nats: NatsFactory) -> None:
    """watchall() delivers the last entry of every key, then the None marker, then live
    puts, deletes and purges in order."""
    async with bucket(js_nats, history=5) as (_, kv, _name):
        await kv.put("a", b"1")
        await kv.put("b", b"2")
        await kv.put("a", b"3")
        w = await kv.watchall()
        try:
            initial = await initial_entries(w, 2)
            assert [summary(e) for e in initial] == [("b", b"2", 2, None), ("a", b"3", 3, None)]
            assert [e.delta for e in initial] == [1, 0]
            await kv.put("c", b"4")
            await kv.delete("a")
            await kv.purge("b")
            live = [await w.updates(timeout=3) for _ in range(3)]
            assert [summary(e) for e in live] == [("c", b"4", 4, None), ("a", b"", 5, "DEL"),
                                                  ("b", b"", 6, "PURGE")]
            # Live deltas depend on how far the stream got when each one was delivered
            # (a racy count on both servers); the last one is always 0.
            assert live[-1].delta == 0
        finally:
            await w.stop()


async def test_kv_watch_empty_bucket(target: str, js_nats: NatsFactory) -> None:
    """Watching an empty bucket yields the None marker at once, then updates."""
    async with bucket(js_nats) as (_, kv, _name):
        w = await kv.watchall()
        try:
            assert await initial_entries(w, 0) == []
            await kv.put("x", b"1")
            e = await w.updates(timeout=3)
            assert summary(e) == ("x", b"1", 1, None)
        finally:
            await w.stop()


async def test_kv_watch_key_filter(target: str, js_nats: NatsFactory) -> None:
    """watch('a.*') only sees matching keys; include_history replays all revisions;
    meta_only (headers only) delivers empty values."""
    async with bucket(js_nats, history=5) as (_, kv, _name):
        await kv.put("a.1", b"x")
        await kv.put("b.1", b"y")
        await kv.put("a.1", b"z")
        await kv.put("a.2", b"w")
        w = await kv.watch("a.*")
        hist = await kv.watch("a.*", include_history=True)
        meta = await kv.watch("a.*", meta_only=True)
        try:
            assert [summary(e) for e in await initial_entries(w, 2)] == [
                ("a.1", b"z", 3, None), ("a.2", b"w", 4, None)]
            assert [summary(e) for e in await initial_entries(hist, 3)] == [
                ("a.1", b"x", 1, None), ("a.1", b"z", 3, None), ("a.2", b"w", 4, None)]
            assert [(e.key, e.value, e.revision) for e in await initial_entries(meta, 2)] == [
                ("a.1", b"", 3), ("a.2", b"", 4)]
            await kv.put("b.2", b"no")
            await kv.put("a.3", b"yes")
            e = await w.updates(timeout=3)
            assert summary(e) == ("a.3", b"yes", 6, None)
            e = await hist.updates(timeout=3)
            assert summary(e) == ("a.3", b"yes", 6, None)
            with pytest.raises(nats.errors.TimeoutError):
                await w.updates(timeout=0.3)
        finally:
            await w.stop()
            await hist.stop()
            await meta.stop()


async def test_kv_watch_consumer_config(target: str, js_nats: NatsFactory,
                                        js: JsClient) -> None:
    """The ordered push consumer a watcher creates, as CONSUMER.INFO shows it."""
    async with bucket(js_nats) as (_, kv, name):
        await kv.put("a", b"1")
        w = await kv.watch("a")
        try:
            await initial_entries(w, 1)
            info = await w._sub.consumer_info()
            cfg = info.config
            assert DeliverPolicy(cfg.deliver_policy) is DeliverPolicy.LAST_PER_SUBJECT
            assert AckPolicy(cfg.ack_policy) is AckPolicy.NONE
            assert (cfg.filter_subject, cfg.max_deliver, cfg.flow_control) == (
                f"$KV.{name}.a", 1, True)
            assert (cfg.idle_heartbeat, cfg.mem_storage, cfg.num_replicas) == (5.0, True, 1)
            assert cfg.inactive_threshold == 300.0
            assert info.num_pending == 0 and info.delivered.stream_seq == 1
        finally:
            await w.stop()
