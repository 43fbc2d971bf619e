"""JetStream account level: INFO advertising, ``$JS.API.INFO``, API counters, unknown and
cluster-only API subjects."""
from __future__ import annotations

import pytest

from conformance.helpers import RawFactory, SpawnFn, ready
from conformance.jshelpers import (
    API_LEVEL,
    TYPE_PREFIX,
    JsClient,
    error_reply,
    file_bytes,
    header_block,
    mem_bytes,
    unique_name,
)

ACCOUNT_LIMITS = {
    "max_memory": -1, "max_storage": -1, "max_streams": -1, "max_consumers": -1,
    "max_ack_pending": -1, "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
    "max_bytes_required": False,
}


def test_js_account_info_fresh_server(target: str, spawn: SpawnFn) -> None:
    """``$JS.API.INFO`` on a fresh server: the whole reply, exactly."""
    ep = spawn(jetstream=True)
    js = JsClient.connect(ep)
    try:
        assert js.account_info() == {
            "type": TYPE_PREFIX + "account_info_response",
            "memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
            "streams": 0, "consumers": 0, "limits": ACCOUNT_LIMITS,
            "api": {"level": API_LEVEL, "total": 0, "errors": 0},
        }
    finally:
        js.close()


def test_js_account_info_usage_and_api_counters(target: str, spawn: SpawnFn) -> None:
    """Usage follows the stored bytes per storage type; stream count; ``api.total`` counts
    every API request handled before this one, ``api.errors`` the ones answered with an error."""
    ep = spawn(jetstream=True)
    js = JsClient.connect(ep)
    try:
        js.create("F", subjects=["f.>"])
        js.create("M", subjects=["m.>"], storage="memory")
        hdr = header_block(("X-A", "1"))
        js.pub_ok("f.1", b"hello")
        js.pub_ok("f.2", b"hi", hdr)
        js.pub_ok("m.1", b"hello", hdr)
        assert "error" in js.info("NOPE")  # one error
        info = js.account_info()
        assert info["storage"] == file_bytes("f.1", b"hello") + file_bytes("f.2", b"hi", hdr)
        assert info["memory"] == mem_bytes("m.1", b"hello", hdr)
        assert (info["streams"], info["consumers"]) == (2, 0)
        # Publishes are not API requests: 2 creates + 1 info so far.
        assert info["api"] == {"level": API_LEVEL, "total": 3, "errors": 1}
        info2 = js.account_info()
        assert info2["api"] == {"level": API_LEVEL, "total": 4, "errors": 1}
        assert js.delete("M")["success"] is True
        info3 = js.account_info()
        assert (info3["memory"], info3["streams"]) == (0, 1)
        assert info3["api"]["total"] == 6
    finally:
        js.close()


@pytest.mark.needs_plain_server
def test_js_api_without_jetstream_is_no_responders(target: str, raw: RawFactory) -> None:
    """On a server without JetStream nobody listens on ``$JS.API.>``: the 503 status."""
    client = ready(raw)
    client.send(b"SUB _INBOX.nojs.* 1\r\nPUB $JS.API.INFO _INBOX.nojs.1 0\r\n\r\n")
    hdr = b"NATS/1.0 503\r\nNats-Subject: $JS.API.INFO\r\n\r\n"
    client.expect(b"HMSG _INBOX.nojs.1 1 %d %d\r\n" % (len(hdr), len(hdr)) + hdr + b"\r\n")


def test_js_unknown_api_subject_gets_no_reply(target: str, js: JsClient) -> None:
    """Unknown ``$JS.API`` subjects (also a wrong token count) get no reply at all, not a 503."""
    js.no_reply("$JS.API.FOO")
    js.no_reply("$JS.API.STREAM.CREATE.A.B", {"name": "A.B"})
    js.no_reply("$JS.API.STREAM.FROB.X")


@pytest.mark.parametrize(
    ("suffix", "type_name"),
    [
        ("STREAM.LEADER.STEPDOWN.{s}", "stream_leader_stepdown_response"),
        ("STREAM.PEER.REMOVE.{s}", "stream_remove_peer_response"),
        ("STREAM.PEER.EVACUATE.{s}", "stream_evacuate_peer_response"),
        ("STREAM.CANCEL_MOVE.{s}", "stream_cancel_move_response"),
        ("CONSUMER.LEADER.STEPDOWN.{s}.c1", "consumer_leader_stepdown_response"),
    ],
)
def test_js_cluster_only_endpoints(target: str, js: JsClient, suffix: str, type_name: str) -> None:
    """Cluster-only endpoints answer 503/10010 on a standalone server (stream exists or not)."""
    name = unique_name()
    js.create(name)
    for s in (name, "NOSUCH"):
        assert js.api(suffix.format(s=s)) == error_reply(
            type_name, 503, 10010, "JetStream clustering support required")


def test_js_api_required_level(target: str, js: JsClient) -> None:
    """``Nats-Required-Api-Level`` above 5 is refused with 412/10185; 5 is fine."""
    too_high = header_block(("Nats-Required-Api-Level", "6"))
    assert js.api("INFO", headers=too_high) == error_reply(
        "account_info_response", 412, 10185, "JetStream minimum api level required")
    ok = js.api("INFO", headers=header_block(("Nats-Required-Api-Level", "5")))
    assert "error" not in ok and ok["api"]["level"] == API_LEVEL
