"""JetStream resource limits and the ``jetstream { }`` options of one server (issue 16 items 3
and 6): ``max_memory_store`` / ``max_file_store`` at publish time, ``limits { }``, ``domain``
and the options that only show in /varz and /jsz. Both targets get the same config file."""
from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

import pytest

from conformance.helpers import SpawnFn, get_json
from conformance.jshelpers import (
    API_LEVEL,
    TYPE_PREFIX,
    JsClient,
    file_bytes,
    mem_bytes,
    wait_for,
)
from conformance.servers import LOCAL_TARGETS, command_for, free_port

NO_LIMITS = {
    "max_memory": -1, "max_storage": -1, "max_streams": -1, "max_consumers": -1,
    "max_ack_pending": -1, "memory_max_stream_bytes": -1, "storage_max_stream_bytes": -1,
    "max_bytes_required": False,
}
FULL = {"code": 503, "err_code": 10023, "description": "insufficient resources"}


def _fill(js: JsClient, subject: str, payload: bytes, most: int) -> tuple[int, dict]:
    """Publish until the first refusal; (messages acked, the refusal)."""
    for n in range(most):
        ack = js.pub(subject, payload)
        if "error" in ack:
            return n, ack
        assert ack["seq"] == n + 1, ack
    raise AssertionError(f"no refusal after {most} publishes")


@pytest.mark.parametrize("storage", ["memory", "file"])
def test_js_limits_publish_into_full_store(target: str, spawn: SpawnFn, storage: str) -> None:
    """A stream without ``max_bytes`` fills the server's store: the publish after the usage
    passed the limit (the message that crossed it is kept) is refused 503/10023 with seq 0;
    everything acked before stays, further publishes are refused too, and a purge makes room
    again. Account info reports the usage and the unlimited account limits exactly."""
    srv = spawn(jetstream=True,
                config="jetstream { max_memory_store: 10000, max_file_store: 20000 }")
    js = JsClient.connect(srv)
    try:
        js.create("S", subjects=["s"], storage=storage)
        payload = b"x" * 100
        size = mem_bytes("s", payload) if storage == "memory" else file_bytes("s", payload)
        limit = 10000 if storage == "memory" else 20000
        acked, refused = _fill(js, "s", payload, 1000)
        assert refused == {"error": FULL, "stream": "S", "seq": 0}
        assert acked == limit // size + 1  # the store may pass its limit by one message
        assert js.pub("s", b"") == {"error": FULL, "stream": "S", "seq": 0}
        state = js.state("S")
        assert (state["messages"], state["bytes"], state["last_seq"]) == (
            acked, acked * size, acked)
        got = js.msg_get("S", {"seq": acked})
        assert "error" not in got, got
        info = js.account_info()
        used = {"memory": acked * size, "storage": 0}
        if storage == "file":
            used = {"memory": 0, "storage": acked * size}
        assert info == {
            "type": TYPE_PREFIX + "account_info_response", **used,
            "reserved_memory": 0, "reserved_storage": 0, "streams": 1, "consumers": 0,
            "limits": NO_LIMITS, "api": info["api"],
        }
        assert js.purge("S")["purged"] == acked
        assert js.pub("s", payload) == {"stream": "S", "seq": acked + 1}
        line = f"[ERR] JetStream {storage} resource limits exceeded for server"
        assert wait_for(lambda: line in srv.log), srv.log
    finally:
        js.close()


def test_js_limits_reservations_and_usage(target: str, spawn: SpawnFn) -> None:
    """Reservations count ``max_bytes`` only: a full store still takes a new stream whose
    ``max_bytes`` fits the reservations, and a stream refused for its reservation leaves the
    others untouched. /varz and /jsz report usage and reservations."""
    http = free_port()
    srv = spawn(args=["-m", str(http)], jetstream=True,
                config="jetstream { max_memory_store: 4000, max_file_store: 1MB }")
    js = JsClient.connect(srv)
    try:
        js.create("M", subjects=["m"], storage="memory")
        acked, refused = _fill(js, "m", b"y" * 200, 100)
        assert refused["error"] == FULL
        js.create("R", subjects=["r"], storage="memory", max_bytes=3000)  # usage is no reservation
        assert js.pub("r", b"z")["error"] == FULL  # but the server is full for every stream
        out = js.create("R2", check=False, subjects=["r2"], storage="memory", max_bytes=1001)
        assert out["error"] == {"code": 500, "err_code": 10028,
                                "description": "insufficient memory resources available"}
        assert js.state("M")["messages"] == acked
        varz = get_json(http, "/varz")["jetstream"]
        assert varz["stats"]["memory"] == acked * mem_bytes("m", b"y" * 200)
        assert (varz["stats"]["reserved_memory"], varz["stats"]["reserved_storage"]) == (3000, 0)
        jsz = get_json(http, "/jsz")
        assert (jsz["memory"], jsz["reserved_memory"]) == (varz["stats"]["memory"], 3000)
    finally:
        js.close()


DOMAIN_CONF = "jetstream { domain: hub }"


def test_js_limits_domain_api_prefix_and_replies(target: str, spawn: SpawnFn) -> None:
    """With ``domain: hub`` the API answers on ``$JS.hub.API.>`` as on ``$JS.API.>``: account
    info, stream info and list carry ``domain``, pub acks too (not the stream create reply,
    not errors); a subject of the domain prefix that is not mapped has no responders."""
    srv = spawn(jetstream=True, config=DOMAIN_CONF)
    js = JsClient.connect(srv)
    try:
        info = js.request("$JS.hub.API.INFO", b"").json()
        assert info == {
            "type": TYPE_PREFIX + "account_info_response", "memory": 0, "storage": 0,
            "reserved_memory": 0, "reserved_storage": 0, "streams": 0, "consumers": 0,
            "limits": NO_LIMITS, "domain": "hub",
            "api": {"level": API_LEVEL, "total": 0, "errors": 0},
        }
        body = json.dumps({"name": "S", "subjects": ["s"], "max_msg_size": 10}).encode()
        created = js.request("$JS.hub.API.STREAM.CREATE.S", body).json()
        assert list(created) == ["type", "config", "created", "state", "ts", "did_create"]
        assert js.pub("s", b"1") == {"stream": "S", "domain": "hub", "seq": 1}
        assert js.pub("s", b"x" * 11) == {
            "error": {"code": 400, "err_code": 10054,
                      "description": "message size exceeds maximum allowed"},
            "stream": "S", "seq": 0}
        si = js.request("$JS.hub.API.STREAM.INFO.S", b"").json()
        assert list(si)[:7] == ["type", "total", "offset", "limit", "config", "created", "state"]
        assert si["domain"] == "hub" and list(si).index("domain") == 7
        assert js.info("S")["domain"] == "hub"
        listed = js.request("$JS.hub.API.STREAM.LIST", b"").json()
        assert listed["streams"][0]["domain"] == "hub"
        # INFO, CREATE, INFO.S twice, LIST: both prefixes count as one API
        assert js.account_info()["api"] == {"level": API_LEVEL, "total": 5, "errors": 0}
        updated = js.update("S", subjects=["s", "t"], max_msg_size=100)
        assert list(updated) == ["type", "config", "created", "state", "domain", "ts"]
        dup = b"NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n"
        assert js.pub("s", b"2", dup) == {"stream": "S", "domain": "hub", "seq": 2}
        assert js.pub("s", b"2", dup) == {"stream": "S", "domain": "hub", "seq": 2,
                                          "duplicate": True}
        nothing = js.request("$JS.hub.API.NOPE", b"", timeout=5)
        assert nothing.status == "503"
        assert js.request("$JS.other.API.INFO", b"", timeout=5).status == "503"
    finally:
        js.close()


def test_js_limits_domain_in_info(target: str, spawn: SpawnFn) -> None:
    """The INFO a client gets from a server with a domain names it, after ``client_ip``."""
    srv = spawn(jetstream=True, config=DOMAIN_CONF)
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        data = b""
        while not data.endswith(b"\r\n"):
            data += sock.recv(4096)
    info = json.loads(data[len(b"INFO "):])
    keys = list(info)
    assert info["domain"] == "hub"
    assert keys[keys.index("client_ip") + 1] == "domain"
    assert keys[keys.index("domain") + 1] == "api_lvl"


def test_js_limits_domain_in_advisories(target: str, spawn: SpawnFn) -> None:
    """Advisories and the API audit of a server with a domain end with ``domain``; a request
    through the domain prefix is audited under its ``$JS.API`` subject."""
    srv = spawn(jetstream=True, config=DOMAIN_CONF)
    js = JsClient.connect(srv)
    try:
        js.raw.send(b"SUB $JS.EVENT.ADVISORY.> 2\r\n")
        js.raw.barrier()
        js.request("$JS.hub.API.STREAM.CREATE.A", json.dumps({"name": "A"}).encode())
        seen: dict[str, dict] = {}
        for _ in range(2):
            frame = None
            for subj in ("$JS.EVENT.ADVISORY.STREAM.CREATED.A", "$JS.EVENT.ADVISORY.API"):
                if subj not in seen:
                    try:
                        frame = js.next_msg(subj, timeout=5)
                    except TimeoutError:
                        continue
                    seen[subj] = frame.json()
        created = seen["$JS.EVENT.ADVISORY.STREAM.CREATED.A"]
        assert list(created) == ["type", "id", "timestamp", "stream", "action", "domain"]
        assert (created["stream"], created["action"], created["domain"]) == ("A", "create", "hub")
        audit = seen["$JS.EVENT.ADVISORY.API"]
        assert audit["subject"] == "$JS.API.STREAM.CREATE.A"
        assert list(audit)[-1] == "domain" and audit["domain"] == "hub"
    finally:
        js.close()


ALL_OPTIONS = """
jetstream {
  domain: edge
  max_buffered_size: 1MB
  max_buffered_msgs: 1000
  sync_interval: "30s"
  unique_tag: "AZ"
  strict: false
  max_outstanding_catchup: 64MB
  request_queue_limit: 5000
  extension_hint: no_extend
  limits {
    max_ack_pending: 100
    max_ha_assets: 5
    max_request_batch: 50
    duplicate_window: "1m"
  }
}
"""


def test_js_limits_every_option_shows_in_varz_and_jsz(target: str, spawn: SpawnFn) -> None:
    """A server starts with the whole ``jetstream { }`` list; /varz and /jsz show the
    configured ``sync_interval``, ``domain``, ``unique_tag`` (lower-cased), no ``strict`` when
    it is off, and the ``limits`` (``max_duplicate_window`` in nanoseconds)."""
    http = free_port()
    srv = spawn(args=["-m", str(http)], jetstream=True, config=ALL_OPTIONS)
    varz = get_json(http, "/varz")["jetstream"]
    tail = {k: v for k, v in varz["config"].items()
            if k not in ("max_memory", "max_storage", "store_dir")}
    assert tail == {"sync_interval": 30_000_000_000, "domain": "edge", "unique_tag": "az"}
    limits = {"max_request_batch": 50, "max_ack_pending": 100, "max_ha_assets": 5,
              "max_duplicate_window": 60_000_000_000, "default_max_consumers": 1000}
    assert varz["limits"] == limits
    jsz = get_json(http, "/jsz?config=true")
    assert jsz["config"] == varz["config"]
    assert jsz["limits"] == limits
    assert srv.port > 0


def test_js_limits_sync_always_and_defaults(target: str, spawn: SpawnFn) -> None:
    """``sync_interval: always`` shows ``sync_always`` with the default interval; without a
    ``limits`` block only ``default_max_consumers`` is reported; ``strict`` defaults on."""
    http = free_port()
    spawn(args=["-m", str(http)], jetstream=True, config="jetstream { sync: always }")
    varz = get_json(http, "/varz")["jetstream"]
    tail = {k: v for k, v in varz["config"].items()
            if k not in ("max_memory", "max_storage", "store_dir")}
    assert tail == {"sync_interval": 120_000_000_000, "sync_always": True, "strict": True}
    assert varz["limits"] == {"default_max_consumers": 1000}


def test_js_limits_batch_limits_in_varz(target: str, spawn: SpawnFn) -> None:
    """``limits { batch { } }`` shows in /varz ``limits`` with nats-server's names."""
    http = free_port()
    spawn(args=["-m", str(http)], jetstream=True, config="""
        jetstream { limits { batch {
          max_inflight_per_stream: 3, max_inflight_total: 7, max_msgs: 9, timeout: "4s" } } }""")
    assert get_json(http, "/varz")["jetstream"]["limits"] == {
        "max_batch_inflight_per_stream": 3, "max_batch_inflight_total": 7,
        "max_batch_size": 9, "max_batch_timeout": 4_000_000_000, "default_max_consumers": 1000}


LIMITS_CONF = """
jetstream {
  limits { max_ack_pending: 100, max_request_batch: 50, duplicate_window: "1m" }
}
"""


def test_js_limits_server_limits_shape_streams_and_consumers(target: str, spawn: SpawnFn) -> None:
    """``limits { duplicate_window }`` is the default (and the most) a stream's
    ``duplicate_window`` can be; ``max_ack_pending`` and ``max_request_batch`` are a pull
    consumer's defaults and maxima."""
    srv = spawn(jetstream=True, config=LIMITS_CONF)
    js = JsClient.connect(srv)
    try:
        out = js.create("D", subjects=["d"])
        assert out["config"]["duplicate_window"] == 60_000_000_000
        out = js.create("E", check=False, subjects=["e"], duplicate_window=120_000_000_000)
        assert out["error"] == {"code": 500, "err_code": 10052, "description":
                                "duplicates window can not be larger then server limit of 1m0s"}
        short = js.create("F", subjects=["f"], max_age=30_000_000_000)
        assert short["config"]["duplicate_window"] == 30_000_000_000
        made = js.api("CONSUMER.CREATE.D.C", {"stream_name": "D", "config": {
            "durable_name": "C", "ack_policy": "explicit"}})
        assert (made["config"]["max_ack_pending"], made["config"]["max_batch"]) == (100, 50)
        refused = js.request("$JS.API.CONSUMER.MSG.NEXT.D.C", {"batch": 51, "expires": 10**9})
        assert refused.status_line == "NATS/1.0 409 Exceeded MaxRequestBatch of 50"
        over = js.api("CONSUMER.CREATE.D.P", {"stream_name": "D", "config": {
            "durable_name": "P", "ack_policy": "explicit", "max_ack_pending": 101}})
        assert over["error"]["err_code"] == 10121, over
        assert over["error"]["description"] == "consumer max ack pending exceeds system limit of 100"
        over = js.api("CONSUMER.CREATE.D.B", {"stream_name": "D", "config": {
            "durable_name": "B", "ack_policy": "explicit", "max_batch": 51}})
        assert over["error"]["err_code"] == 10125, over
        assert over["error"]["description"] == "consumer max request batch exceeds server limit of 50"
    finally:
        js.close()


@pytest.mark.parametrize("domain", ["a.b", "a*", "x>"])
def test_js_limits_bad_domain_stops_startup(target: str, tmp_path: Any, domain: str) -> None:
    """A domain with ``.``, ``*`` or ``>`` stops the server at startup with exit code 1 and
    nats-server's reason."""
    if target not in LOCAL_TARGETS:
        pytest.skip("needs a locally started server")
    conf = tmp_path / "bad.conf"
    conf.write_text(f'jetstream {{ domain: "{domain}", store_dir: "{tmp_path}/js" }}\n')
    done = subprocess.run(command_for(target) + ["-a", "127.0.0.1", "-p", "-1", "-c", str(conf)],
                          capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert b"invalid domain name: may not contain ., * or >" in done.stderr


def test_js_limits_max_buffered_size_refuses_larger_message(target: str, spawn: SpawnFn) -> None:
    """A message larger than ``max_buffered_size`` (subject, reply, headers and payload
    counted) never fits the stream's ingest queue: answered ``429 Too Many Requests`` with
    the 10167 error and seq 0, nothing stored; smaller messages are stored."""
    srv = spawn(jetstream=True, config="jetstream { max_buffered_size: 60 }")
    js = JsClient.connect(srv)
    try:
        js.create("S", subjects=["s"])
        assert js.pub("s", b"x" * 10) == {"stream": "S", "seq": 1}
        m = js.request("s", b"x" * 100)
        assert m.status_line == "NATS/1.0 429 Too Many Requests"
        assert m.json() == {"error": {"code": 429, "err_code": 10167,
                                      "description": "too many requests"},
                            "stream": "S", "seq": 0}
        js.send("s", b"y" * 100)  # no reply subject: dropped silently
        assert js.pub("s", b"z") == {"stream": "S", "seq": 2}
        assert js.state("S")["messages"] == 2
        line = ("[WRN] Dropping messages due to excessive stream ingest rate on '$G' > 'S': "
                "IPQ size limit reached")
        assert wait_for(lambda: line in srv.log), srv.log
    finally:
        js.close()


async def test_js_limits_domain_with_natspy(target: str, spawn: SpawnFn) -> None:
    """nats-py's ``jetstream(domain=...)`` context works against a server with that domain:
    streams, pub acks with the domain, and a key-value bucket through the domain prefix."""
    import nats

    srv = spawn(jetstream=True, config=DOMAIN_CONF)
    nc = await nats.connect(srv.url)
    try:
        js = nc.jetstream(domain="hub")
        await js.add_stream(name="N", subjects=["n.>"])
        ack = await js.publish("n.1", b"hello")
        assert (ack.stream, ack.seq, ack.domain) == ("N", 1, "hub")
        info = await js.account_info()
        assert (info.streams, info.domain) == (1, "hub")
        kv = await js.create_key_value(bucket="B")
        assert await kv.put("k", b"v1") == 1
        entry = await kv.get("k")
        assert (entry.value, entry.revision) == (b"v1", 1)
    finally:
        await nc.close()


def test_js_limits_strict_off_accepts_unknown_fields(target: str, spawn: SpawnFn) -> None:
    """``strict: false``: an API body with unknown fields is decoded as Go's ``json.Unmarshal``
    would (unknown fields ignored) instead of refused; a body that is not one JSON value is
    still refused, with ``json.Unmarshal``'s text (no offset)."""
    srv = spawn(jetstream=True, config="jetstream { strict: false }")
    js = JsClient.connect(srv)
    try:
        out = js.api("STREAM.CREATE.S", {"name": "S", "subjects": ["s"], "bogus": 1})
        assert "error" not in out, out
        assert "bogus" not in out["config"]
        out = js.api("CONSUMER.CREATE.S.C", {"stream_name": "S", "extra": True, "config": {
            "durable_name": "C", "ack_policy": "explicit", "nope": "x"}})
        assert out["name"] == "C", out
        out = js.api("STREAM.INFO.S", b'{"deleted_details": true} x')
        assert out["error"] == {"code": 400, "err_code": 10025, "description":
                                "invalid JSON: invalid character 'x' after top-level value"}
        assert js.account_info()["api"]["errors"] == 1
    finally:
        js.close()
