"""nats-py 2.16 Object Store against the server: bucket creation and the
stream config it yields, multi-chunk put (chunks on ``$O.<b>.C.<nuid>``, meta with a
subject rollup on ``$O.<b>.M.<base64url name>``), get_info, get (an ordered push consumer on
the chunk subject), list (an ordered push consumer on the meta subjects), delete (deleted
meta + chunk purge), overwrite (old chunks purged), status and delete bucket.

Every case uses its own bucket and deletes it afterwards.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import nats.js.errors
import pytest
from nats.js.api import ObjectMeta, ObjectMetaOptions, StorageType
from nats.js.object_store import ObjectStore

from conformance.helpers import NatsFactory
from conformance.jshelpers import JsClient, default_config, unique_name

CHUNK = 32 * 1024
SIZE = 300 * 1000  # 10 chunks of 32 KiB (the last one short)


def obj_config(bucket: str, **overrides: Any) -> dict[str, Any]:
    """The StreamConfig the server echoes for ``create_object_store(bucket)``."""
    cfg = default_config(f"OBJ_{bucket}", [f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"],
                         discard="new", allow_direct=True, allow_rollup_hdrs=True)
    cfg.update(overrides)
    return cfg


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


def digest(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


@asynccontextmanager
async def store(js_nats: NatsFactory, **params: Any) -> AsyncIterator[tuple[Any, ObjectStore, str]]:
    """A fresh object store bucket, deleted afterwards: (js context, store, bucket name)."""
    nc = await js_nats()
    js = nc.jetstream()
    name = unique_name("OB")
    obs = await js.create_object_store(name, **params)
    try:
        yield js, obs, name
    finally:
        try:
            await js.delete_object_store(name)
        except Exception:
            pass


async def put_chunked(obs: ObjectStore, name: str, data: bytes, chunk: int = CHUNK) -> Any:
    meta = ObjectMeta(name=name, options=ObjectMetaOptions(max_chunk_size=chunk))
    return await obs.put(name, data, meta=meta)


# ---------------------------------------------------------------------- buckets


async def test_objstore_create_bucket_stream_config(target: str, js_nats: NatsFactory,
                                                    js: JsClient) -> None:
    """``create_object_store(bucket)`` makes ``OBJ_<bucket>`` on the chunk and meta subjects;
    STREAM.INFO echoes exactly this config (max_consumers 0 → -1, duplicate_window → 2 min)."""
    async with store(js_nats) as (_, _obs, name):
        info = js.info(f"OBJ_{name}")
        assert "error" not in info, info
        expected = obj_config(name)
        assert info["config"] == expected
        assert list(info["config"]) == list(expected)


async def test_objstore_create_bucket_options(target: str, js_nats: NatsFactory,
                                              js: JsClient) -> None:
    """Description, ttl, max_bytes and memory storage in the stream config; status() reads
    them back."""
    async with store(js_nats, description="objs", ttl=120, max_bytes=1 << 22,
                     storage=StorageType.MEMORY) as (_, obs, name):
        info = js.info(f"OBJ_{name}")
        assert "error" not in info, info
        expected = obj_config(name, max_age=120_000_000_000, max_bytes=1 << 22, storage="memory")
        expected = {"name": expected.pop("name"), "description": "objs", **expected}
        assert info["config"] == expected
        assert list(info["config"]) == list(expected)
        st = await obs.status()
        assert (st.bucket, st.description, st.ttl, st.storage_type, st.sealed, st.size) == (
            name, "objs", 120.0, StorageType.MEMORY, False, 0)


async def test_objstore_bind_and_delete_bucket(target: str, js_nats: NatsFactory,
                                               js: JsClient) -> None:
    """``object_store(bucket)`` binds an existing bucket, a missing one raises
    BucketNotFoundError; ``delete_object_store`` removes the stream."""
    nc = await js_nats()
    jsc = nc.jetstream()
    name = unique_name("OB")
    await jsc.create_object_store(name)
    bound = await jsc.object_store(name)
    await bound.put("x", b"data")
    assert await jsc.delete_object_store(name) is True
    assert js.info(f"OBJ_{name}")["error"]["err_code"] == 10059
    with pytest.raises(nats.js.errors.BucketNotFoundError):
        await jsc.object_store(name)
    with pytest.raises(nats.js.errors.NotFoundError):
        await jsc.delete_object_store(name)


# ---------------------------------------------------------------------- put / info


async def test_objstore_put_multi_chunk(target: str, js_nats: NatsFactory,
                                        js: JsClient) -> None:
    """A 300 KB object with 32 KiB chunks: 10 chunk messages on ``$O.<b>.C.<nuid>`` plus one
    meta message; the ObjectInfo carries size, chunks and the SHA-256 digest."""
    data = os.urandom(SIZE)
    async with store(js_nats) as (_, obs, name):
        info = await put_chunked(obs, "big.bin", data)
        assert (info.name, info.bucket, info.size, info.chunks) == ("big.bin", name, SIZE, 10)
        assert info.digest == digest(data)
        st = js.state(f"OBJ_{name}")
        assert (st["messages"], st["first_seq"], st["last_seq"]) == (11, 1, 11)
        first = js.msg_get(f"OBJ_{name}", {"seq": 1})["message"]
        assert first["subject"] == f"$O.{name}.C.{info.nuid}"
        assert base64.b64decode(first["data"]) == data[:CHUNK]
        last = js.msg_get(f"OBJ_{name}", {"seq": 10})["message"]
        assert base64.b64decode(last["data"]) == data[9 * CHUNK:]


async def test_objstore_meta_message(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """The meta message: JSON ObjectInfo under the base64url name, stored with the
    ``Nats-Rollup: sub`` header."""
    data = b"hello world" * 100
    async with store(js_nats) as (_, obs, name):
        info = await put_chunked(obs, "dir/file name.txt", data, chunk=256)
        out = js.msg_get(f"OBJ_{name}", {"last_by_subj": meta_subject(name, "dir/file name.txt")})
        msg = out["message"]
        assert msg["seq"] == 6
        assert base64.b64decode(msg["hdrs"]) == b"NATS/1.0\r\nNats-Rollup: sub\r\n\r\n"
        meta = json.loads(base64.b64decode(msg["data"]))
        assert (meta["name"], meta["bucket"], meta["nuid"]) == ("dir/file name.txt", name,
                                                                info.nuid)
        assert (meta["size"], meta["chunks"], meta["digest"]) == (1100, 5, digest(data))
        assert meta["options"] == {"max_chunk_size": 256}


async def test_objstore_get_info(target: str, js_nats: NatsFactory) -> None:
    """get_info reads the meta via STREAM.MSG.GET last_by_subj; a missing object raises
    ObjectNotFoundError."""
    data = os.urandom(5000)
    async with store(js_nats) as (_, obs, _name):
        put = await put_chunked(obs, "a.dat", data, chunk=1024)
        info = await obs.get_info("a.dat")
        assert (info.name, info.nuid, info.size, info.chunks, info.digest, info.deleted) == (
            "a.dat", put.nuid, 5000, 5, digest(data), False)
        assert info.options.max_chunk_size == 1024
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await obs.get_info("nope")


async def test_objstore_put_get_empty(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """An empty object is only a meta message (no chunks); get returns b'' without
    subscribing."""
    async with store(js_nats) as (_, obs, name):
        info = await obs.put("empty", b"")
        assert (info.size, info.chunks) == (0, 0)
        assert js.state(f"OBJ_{name}")["messages"] == 1
        res = await obs.get("empty")
        assert (res.info.name, res.info.size, res.data) == ("empty", 0, b"")


async def test_objstore_get_multi_chunk(target: str, js_nats: NatsFactory) -> None:
    """get() streams the 10 chunks through an ordered push consumer and checks the digest."""
    data = os.urandom(SIZE)
    async with store(js_nats) as (_, obs, _name):
        await put_chunked(obs, "big.bin", data)
        res = await asyncio.wait_for(obs.get("big.bin"), 15)
        assert res.info.size == SIZE and res.info.chunks == 10
        assert len(res.data) == SIZE and res.data == data


async def test_objstore_get_default_chunks(target: str, js_nats: NatsFactory) -> None:
    """The default 128 KiB chunking of a 300 KB object (3 chunks) round-trips."""
    data = os.urandom(SIZE)
    async with store(js_nats) as (_, obs, _name):
        info = await obs.put("dflt", data)
        assert (info.size, info.chunks) == (SIZE, 3)
        res = await asyncio.wait_for(obs.get("dflt"), 15)
        assert res.data == data


# ---------------------------------------------------------------------- delete / overwrite


async def test_objstore_delete(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """delete() publishes a deleted meta (size 0, chunks 0) and purges the chunks; the object
    is then not found unless show_deleted."""
    data = os.urandom(10_000)
    async with store(js_nats) as (_, obs, name):
        put = await put_chunked(obs, "gone", data, chunk=4096)
        await obs.put("kept", b"k")
        await obs.delete("gone")
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await obs.get_info("gone")
        info = await obs.get_info("gone", show_deleted=True)
        assert (info.deleted, info.size, info.chunks, info.nuid) == (True, 0, 0, put.nuid)
        st = js.state(f"OBJ_{name}")
        # Left: the chunk and meta of "kept" and the deleted meta of "gone".
        assert (st["messages"], st["first_seq"], st["last_seq"]) == (3, 5, 7)
        purged = js.msg_get(f"OBJ_{name}", {"last_by_subj": f"$O.{name}.C.{put.nuid}"})
        assert purged["error"]["err_code"] == 10037
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await obs.delete("gone")


async def test_objstore_overwrite(target: str, js_nats: NatsFactory, js: JsClient) -> None:
    """Putting an existing name writes new chunks under a new nuid, rolls the meta up and
    purges the old chunks."""
    old = os.urandom(9000)
    new = os.urandom(3000)
    async with store(js_nats) as (_, obs, name):
        first = await put_chunked(obs, "f", old, chunk=4096)
        second = await put_chunked(obs, "f", new, chunk=4096)
        assert first.nuid != second.nuid
        info = await obs.get_info("f")
        assert (info.nuid, info.size, info.chunks, info.digest) == (second.nuid, 3000, 1,
                                                                    digest(new))
        st = js.state(f"OBJ_{name}")
        # 3 old chunks + old meta gone; new chunk + new meta remain.
        assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 5, 6)
        old_chunks = js.msg_get(f"OBJ_{name}", {"last_by_subj": f"$O.{name}.C.{first.nuid}"})
        assert old_chunks["error"]["err_code"] == 10037


async def test_objstore_overwrite_get(target: str, js_nats: NatsFactory) -> None:
    """After an overwrite get() returns the new content."""
    async with store(js_nats) as (_, obs, _name):
        await put_chunked(obs, "f", os.urandom(9000), chunk=4096)
        new = os.urandom(20_000)
        await put_chunked(obs, "f", new, chunk=4096)
        res = await asyncio.wait_for(obs.get("f"), 15)
        assert res.data == new and res.info.chunks == 5


# ---------------------------------------------------------------------- list


async def test_objstore_list(target: str, js_nats: NatsFactory) -> None:
    """list() replays the last meta of every object (ordered push consumer, last per subject);
    ignore_deletes drops deleted ones; an empty bucket raises NotFoundError."""
    async with store(js_nats) as (_, obs, _name):
        with pytest.raises(nats.js.errors.NotFoundError):
            await asyncio.wait_for(obs.list(), 10)
        await obs.put("one", b"1")
        await obs.put("two", b"22")
        await obs.put("three", b"333")
        await obs.put("two", b"2222")
        await obs.delete("one")
        entries = await asyncio.wait_for(obs.list(), 10)
        assert [(e.name, e.size, e.deleted) for e in entries] == [
            ("three", 3, False), ("two", 4, False), ("one", 0, True)]
        live = await asyncio.wait_for(obs.list(ignore_deletes=True), 10)
        assert sorted(e.name for e in live) == ["three", "two"]
