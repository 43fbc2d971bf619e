"""JetStream account limits (``AccountLimits``) enforced by the engine, and the parsing of the
``jetstream { }`` options. The server-wide limits and options are checked against nats-server
in conformance/test_js_limits.py; account limits reach a single nats-server only through an
``accounts`` block, so they are checked here on the engine with nats-server's codes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.config import AccountLimits, JetStreamLimitOpts
from minijs.confparse import ConfigError, parse_config
from minijs.server import Server
from tests.jsapi import api


async def _server(clock: VirtualClock, tmp_path: Path, limits: AccountLimits) -> Server:
    srv = Server(port=0, jetstream=True, clock=clock, store_dir=str(tmp_path / "js"),
                 js_account_limits=limits)
    await srv.start()
    return srv


def _err(out: dict) -> tuple[int, int, str]:
    e = out["error"]
    return e["code"], e["err_code"], e["description"]


async def _pub(nc: Any, subject: str, data: bytes) -> dict:
    return json.loads((await nc.request(subject, data, timeout=5)).data)


async def test_account_limits_in_account_info_and_stream_create(clock: VirtualClock,
                                                                tmp_path: Path) -> None:
    limits = AccountLimits(max_memory=1000, max_storage=5000, max_streams=2, max_consumers=1,
                           max_ack_pending=10, memory_max_stream_bytes=600,
                           storage_max_stream_bytes=4000, max_bytes_required=True)
    srv = await _server(clock, tmp_path, limits)
    nc = await nats.connect(srv.client_url)
    try:
        info = await api(nc, "INFO")
        assert info["limits"] == {
            "max_memory": 1000, "max_storage": 5000, "max_streams": 2, "max_consumers": 1,
            "max_ack_pending": 10, "memory_max_stream_bytes": 600,
            "storage_max_stream_bytes": 4000, "max_bytes_required": True}
        base = {"subjects": ["a"], "storage": "memory"}
        out = await api(nc, "STREAM.CREATE.A", {"name": "A", **base})
        assert _err(out) == (400, 10113, "account requires a stream config to have max bytes set")
        out = await api(nc, "STREAM.CREATE.A", {"name": "A", **base, "max_bytes": 601})
        assert _err(out) == (400, 10122, "stream max bytes exceeds account limit max stream bytes")
        out = await api(nc, "STREAM.CREATE.A", {"name": "A", **base, "max_bytes": 500,
                                                "max_consumers": 2})
        assert _err(out) == (400, 10026, "maximum consumers limit reached")
        assert "error" not in await api(nc, "STREAM.CREATE.A", {"name": "A", **base,
                                                                "max_bytes": 600})
        out = await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b"],
                                                "storage": "memory", "max_bytes": 401})
        assert _err(out) == (500, 10028, "insufficient memory resources available")
        out = await api(nc, "STREAM.CREATE.F", {"name": "F", "subjects": ["f"],
                                                "max_bytes": 4000})
        assert "error" not in out, out
        out = await api(nc, "STREAM.CREATE.G", {"name": "G", "subjects": ["g"],
                                                "max_bytes": 100})
        assert _err(out) == (400, 10027, "maximum number of streams reached")
        # An update may grow a reservation up to the account's limit, not past it.
        out = await api(nc, "STREAM.UPDATE.F", {"name": "F", "subjects": ["f"],
                                                "max_bytes": 4001})
        assert _err(out) == (400, 10122, "stream max bytes exceeds account limit max stream bytes")
        info = await api(nc, "INFO")
        assert (info["reserved_memory"], info["reserved_storage"]) == (600, 4000)
    finally:
        await nc.close()
        await srv.stop()


async def test_account_limits_consumers(clock: VirtualClock, tmp_path: Path) -> None:
    srv = await _server(clock, tmp_path, AccountLimits(max_consumers=1, max_ack_pending=10))
    nc = await nats.connect(srv.client_url)
    try:
        await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s"]})
        out = await api(nc, "CONSUMER.CREATE.S.A", {"stream_name": "S", "config": {
            "durable_name": "A", "ack_policy": "explicit", "max_ack_pending": 11}})
        assert _err(out) == (400, 10121, "consumer max ack pending exceeds system limit of 10")
        out = await api(nc, "CONSUMER.CREATE.S.A", {"stream_name": "S", "config": {
            "durable_name": "A", "ack_policy": "explicit"}})
        assert out["config"]["max_ack_pending"] == 10
        out = await api(nc, "CONSUMER.CREATE.S.B", {"stream_name": "S", "config": {
            "durable_name": "B", "ack_policy": "explicit"}})
        assert _err(out) == (400, 10026, "maximum consumers limit reached")
    finally:
        await nc.close()
        await srv.stop()


async def test_account_storage_limit_at_publish(clock: VirtualClock, tmp_path: Path) -> None:
    """A publish whose size would take the account past ``max_memory`` is 400/10002; what
    was acked before stays; a warning is logged."""
    srv = await _server(clock, tmp_path, AccountLimits(max_memory=1000))
    nc = await nats.connect(srv.client_url)
    try:
        await api(nc, "STREAM.CREATE.M", {"name": "M", "subjects": ["m"], "storage": "memory"})
        size = 16 + 1 + 100  # memStoreMsgSize
        acked = 0
        while True:
            ack = await _pub(nc, "m", b"x" * 100)
            if "error" in ack:
                break
            acked += 1
        assert acked == 1000 // size  # the account never passes its limit
        assert ack == {"error": {"code": 400, "err_code": 10002,
                                 "description": "resource limits exceeded for account"},
                       "stream": "M", "seq": 0}
        assert (await _pub(nc, "m", b"")) == {"stream": "M", "seq": acked + 1}  # a small one fits
        info = await api(nc, "INFO")
        assert info["memory"] == acked * size + 17
    finally:
        await nc.close()
        await srv.stop()


async def test_set_account_limits_applies_to_later_requests(server: Server, nc: Any) -> None:
    """The accounts layer can give an engine its limits after start."""
    assert "error" not in await api(nc, "STREAM.CREATE.A", {"name": "A", "subjects": ["a"]})
    server.jetstream.set_account_limits(AccountLimits(max_streams=1))
    out = await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b"]})
    assert _err(out) == (400, 10027, "maximum number of streams reached")
    assert (await api(nc, "INFO"))["limits"]["max_streams"] == 1


def test_jetstream_options_parse() -> None:
    cfg = parse_config("""
        jetstream {
          domain: hub, strict: false, sync_interval: "1m", unique_tag: " AZ "
          max_buffered_size: 1MB, max_buffered_msgs: 10, max_outstanding_catchup: 32MB
          request_queue_limit: 100, info_queue_limit: 5, extension_hint: no_extend
          meta_compact: 10, meta_compact_size: 1MB, meta_compact_sync: true, max_concurrent_io: 8
          limits { max_ack_pending: 5, max_ha_assets: 2, max_request_batch: 3,
                   duplicate_window: "30s", batch { max_inflight_per_stream: 1,
                   max_inflight_total: 2, max_msgs: 3, timeout: "2s" } }
        }""")
    assert (cfg.js_domain, cfg.js_strict, cfg.js_sync_interval, cfg.js_unique_tag) == (
        "hub", False, 60.0, "az")
    assert (cfg.js_max_buffered_size, cfg.js_max_buffered_msgs) == (1 << 20, 10)
    assert cfg.js_limits == JetStreamLimitOpts(
        max_request_batch=3, max_ack_pending=5, max_ha_assets=2,
        duplicate_window=30_000_000_000, batch_max_inflight_per_stream=1,
        batch_max_inflight_total=2, batch_max_msgs=3, batch_timeout=2_000_000_000)
    assert parse_config("jetstream { sync: always }").js_sync_always


@pytest.mark.parametrize("text, fragment", [
    ("jetstream { key: abc }", 'field "key" in jetstream is a nats-server setting'),
    ("jetstream { cipher: aes }", 'field "cipher" in jetstream is a nats-server setting'),
    ("jetstream { tpm { keys_file: x } }", 'field "tpm" in jetstream is a nats-server setting'),
    ("jetstream { sync_interval: 5 }", 'invalid use of field "sync_interval"'),
    ('jetstream { max_buffered_msgs: "x" }', 'Expected a parseable size for "max_buffered_msgs"'),
    ("jetstream { max_concurrent_io: 2 }", "between 4 and 8192"),
    ("jetstream { limits { foo: 1 } }", 'unknown field "foo"'),
    ("jetstream { limits { duplicate_window: 5 } }", "duplicate_window"),
    ('jetstream { domain: "a.b" }', "invalid domain name: may not contain ., * or >"),
])
def test_jetstream_option_errors(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        parse_config(text)
    assert fragment in str(info.value)


async def test_mirror_stops_at_full_server(clock: VirtualClock, tmp_path: Path) -> None:
    """Mirrored messages go through the same server check as publishes: a memory mirror stops
    copying once the memory store is past its limit, keeping what it copied."""
    srv = Server(port=0, jetstream=True, clock=clock, store_dir=str(tmp_path / "js"),
                 max_memory_store=1000)
    await srv.start()
    nc = await nats.connect(srv.client_url)
    try:
        await api(nc, "STREAM.CREATE.O", {"name": "O", "subjects": ["o"]})
        for _ in range(20):
            assert "error" not in await _pub(nc, "o", b"x" * 100)
        out = await api(nc, "STREAM.CREATE.M", {"name": "M", "storage": "memory",
                                                "mirror": {"name": "O"}})
        assert "error" not in out, out
        size = 16 + 1 + 100
        for _ in range(50):
            await clock.advance_async(0.1)
            info = await api(nc, "STREAM.INFO.M")
            if info["state"]["messages"] == 1000 // size + 1 and info["mirror"].get("error"):
                break
        assert info["state"]["messages"] == 1000 // size + 1
    finally:
        await nc.close()
        await srv.stop()


def _account_js(text: str) -> Any:
    from minijs.confparse import _Mapper, parse_text
    entry = parse_text(text).entries["jetstream"]
    return _Mapper(None).account_jetstream(entry)


def test_account_jetstream_block_parses_to_account_limits() -> None:
    """The helper the accounts block uses for ``accounts { A: { jetstream: ... } }``."""
    assert _account_js("jetstream: enabled") == AccountLimits()
    assert _account_js("jetstream: false") is None
    assert _account_js("""jetstream {
        max_mem: 1G, max_file: 2G, max_streams: 3, consumers: 4, max_bytes_required: true
        mem_max_stream_bytes: 5MB, store_max_stream_bytes: 6, max_ack_pending: 7
        cluster_traffic: owner }""") == AccountLimits(
        max_memory=10 ** 9, max_storage=2 * 10 ** 9, max_streams=3, max_consumers=4,
        max_bytes_required=True, memory_max_stream_bytes=5 << 20, storage_max_stream_bytes=6,
        max_ack_pending=7)
    with pytest.raises(ConfigError, match='Expected a parseable size for "max_mem", got x'):
        _account_js("jetstream { max_mem: x }")
    with pytest.raises(ConfigError, match='unknown field "nope"'):
        _account_js("jetstream { nope: 1 }")
