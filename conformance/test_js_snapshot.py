"""Stream snapshots: the transfer protocol of ``$JS.API.STREAM.SNAPSHOT`` (jetstream_api.go).

The snapshot bytes are each server's own (nats-server: an s2-compressed tar of its file store;
minijs: its own format), so only the protocol is compared: the API reply (config and state),
the chunks on the deliver subject with their ack reply subjects
``$JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>`` (a last, short chunk has none), flow
control by those acks, the final empty ``NATS/1.0 204``, the restore handshake and the
advisories. The API-level errors are in ``test_js_api_edges``.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

import nats

from conformance.jshelpers import unique_name
from conformance.servers import Endpoint


async def test_js_snapshot_transfer_protocol(target: str, js_server: Endpoint) -> None:
    nc = await nats.connect(js_server.url, allow_reconnect=False)
    name = unique_name("SNAP")
    js = nc.jetstream()
    try:
        await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
        for i in range(8):
            await js.publish(f"{name.lower()}.{i}", os.urandom(1500))
        info = json.loads((await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=5)).data)
        inbox = nc.new_inbox()
        chunks: list[Any] = []
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        async def on_chunk(m: Any) -> None:
            if not m.data:
                done.set_result(m)
                return
            chunks.append(m)
            if m.reply:
                await nc.publish(m.reply, b"")
        await nc.subscribe(inbox, cb=on_chunk)
        advisories = await nc.subscribe(f"$JS.EVENT.ADVISORY.STREAM.*.{name}")
        await nc.flush()
        req = {"deliver_subject": inbox, "chunk_size": 1024, "window_size": 4096}
        r = json.loads((await nc.request(f"$JS.API.STREAM.SNAPSHOT.{name}",
                                         json.dumps(req).encode(), timeout=5)).data)
        assert r["type"] == "io.nats.jetstream.api.v1.stream_snapshot_response"
        assert list(r) == ["type", "config", "state"]
        assert r["config"]["name"] == name and r["config"]["subjects"] == [f"{name.lower()}.>"]
        assert r["state"] == info["state"]
        end = await asyncio.wait_for(done, 10)
        assert end.headers == {"Status": "204"} and end.data == b""
        ack_re = re.compile(r"^\$JS\.SNAPSHOT\.ACK\.%s\.([A-Za-z0-9]+)\.(\d+)\.(\d+)$" % name)
        assert len(chunks) > 4  # 12 KB of random bytes do not compress below 4 chunks
        ids = set()
        last = chunks[-1]
        if len(last.data) < 1024:  # a last, short chunk asks for no ack
            assert last.reply == "" and last.headers is None
            chunks = chunks[:-1]
        for index, m in enumerate(chunks, 1):
            found = ack_re.match(m.reply)
            assert found, (m.reply, index, len(m.data), m.headers)
            ids.add(found.group(1))
            assert int(found.group(2)) == len(m.data) == 1024 and int(found.group(3)) == index
            assert m.headers is None
        assert len(ids) == 1
        seen = {}
        for _ in range(2):
            m = await advisories.next_msg(timeout=5)
            seen[m.subject] = json.loads(m.data)
        create = seen[f"$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.{name}"]
        assert list(create) == ["type", "id", "timestamp", "stream", "state", "client"]
        assert create["type"] == "io.nats.jetstream.advisory.v1.snapshot_create"
        assert create["state"] == info["state"] and create["client"]["id"] == nc.client_id
        complete = seen[f"$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.{name}"]
        assert list(complete) == ["type", "id", "timestamp", "stream", "start", "end", "client"]
        assert complete["type"] == "io.nats.jetstream.advisory.v1.snapshot_complete"
        assert complete["stream"] == name and complete["client"]["id"] == nc.client_id
    finally:
        try:
            await js.delete_stream(name)
        finally:
            await nc.close()


async def test_js_restore_transfer_without_data(target: str, js_server: Endpoint) -> None:
    """A restore answers with its deliver subject ``$JS.SNAPSHOT.RESTORE.<stream>.<id>``; an
    empty chunk at once ends the transfer, and its reply is the outcome: nothing to restore."""
    nc = await nats.connect(js_server.url, allow_reconnect=False)
    name = unique_name("REST")
    try:
        body = {"config": {"name": name, "subjects": [f"{name.lower()}.>"]}}
        advisories = await nc.subscribe(f"$JS.EVENT.ADVISORY.STREAM.*.{name}")
        await nc.flush()
        r = await nc.request(f"$JS.API.STREAM.RESTORE.{name}", json.dumps(body).encode(),
                             timeout=5)
        reply = json.loads(r.data)
        assert list(reply) == ["type", "deliver_subject"]
        assert reply["type"] == "io.nats.jetstream.api.v1.stream_restore_response"
        assert re.match(r"^\$JS\.SNAPSHOT\.RESTORE\.%s\.[A-Za-z0-9]+$" % name,
                        reply["deliver_subject"])
        final = await nc.request(reply["deliver_subject"], b"", timeout=5)
        assert final.data == (b'{"type":"io.nats.jetstream.api.v1.stream_create_response",'
                              b'"error":{"code":500,"err_code":10062,'
                              b'"description":"restore failed: EOF"}}')
        info = json.loads((await nc.request(f"$JS.API.STREAM.INFO.{name}", b"",
                                            timeout=5)).data)
        assert info["error"]["err_code"] == 10059
        seen = {}
        for _ in range(2):
            m = await advisories.next_msg(timeout=5)
            seen[m.subject] = json.loads(m.data)
        create = seen[f"$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.{name}"]
        assert list(create) == ["type", "id", "timestamp", "stream", "client"]
        assert create["type"] == "io.nats.jetstream.advisory.v1.restore_create"
        assert create["stream"] == name and create["client"]["id"] == nc.client_id
        complete = seen[f"$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.{name}"]
        assert list(complete) == ["type", "id", "timestamp", "stream", "start", "end", "bytes",
                                  "client"]
        assert complete["type"] == "io.nats.jetstream.advisory.v1.restore_complete"
        assert complete["bytes"] == 0 and complete["client"]["id"] == nc.client_id
    finally:
        await nc.close()


async def test_js_snapshot_single_short_chunk(target: str, js_server: Endpoint) -> None:
    """A snapshot smaller than one chunk: that chunk asks for no ack, and the end is a bare
    empty message (no ``204`` status: nats-server sets it when sending a full chunk)."""
    nc = await nats.connect(js_server.url, allow_reconnect=False)
    name = unique_name("SNAP")
    js = nc.jetstream()
    try:
        await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
        await js.publish(f"{name.lower()}.a", b"small")
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.flush()
        await nc.request(f"$JS.API.STREAM.SNAPSHOT.{name}",
                         json.dumps({"deliver_subject": inbox}).encode(), timeout=5)
        chunk = await sub.next_msg(timeout=5)
        assert chunk.data and chunk.reply == "" and chunk.headers is None
        end = await sub.next_msg(timeout=5)
        assert (end.data, end.reply, end.headers) == (b"", "", None)
    finally:
        try:
            await js.delete_stream(name)
        finally:
            await nc.close()
