"""INFO on accept: wire form, field set, types and order."""
from __future__ import annotations

import pytest

import json
import re

from conformance.helpers import RawFactory, SpawnFn
from conformance.rawclient import RawClient
from conformance.servers import LOCAL_TARGETS, Endpoint

#: Client-visible INFO fields in nats-server's (Go struct) emission order.
GO_FIELD_ORDER = [
    "server_id", "server_name", "version", "proto", "git_commit", "go", "host", "port",
    "headers", "auth_required", "tls_required", "tls_verify", "tls_available", "max_payload",
    "jetstream", "ip", "client_id", "client_ip", "nonce", "cluster", "cluster_dynamic",
    "domain", "connect_urls", "ws_connect_urls", "ldm", "compression", "connect_info",
    "remote_account", "acc_is_sys", "api_lvl", "xkey",
]

SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
NKEY_SERVER = re.compile(r"^N[A-Z2-7]{55}$")


def test_info_sent_immediately_with_trailing_space(target: str, server: Endpoint) -> None:
    """The server speaks first: one ``INFO {json} \\r\\n`` line, compact JSON, space before CRLF."""
    client = RawClient(server.host, server.port)
    try:
        line = client.read_line(timeout=3)
    finally:
        client.close()
    assert line.startswith(b"INFO {"), line
    assert line.endswith(b"} \r\n"), f"INFO must end with '}} \\r\\n': {line[-10:]!r}"
    body = line[len(b"INFO ") : -len(b" \r\n")]
    info = json.loads(body)
    # Compact Go encoding: re-encoding compactly in the same key order gives the same text.
    assert json.dumps(info, separators=(",", ":"), ensure_ascii=False).encode() == body


@pytest.mark.needs_plain_server
def test_info_fields_and_types(target: str, server: Endpoint, raw: RawFactory) -> None:
    """Required fields and their types on a plain server (no auth, no JetStream)."""
    info = raw().info
    assert isinstance(info["server_id"], str) and NKEY_SERVER.match(info["server_id"]), info
    assert len(info["server_id"]) == 56
    assert isinstance(info["server_name"], str) and info["server_name"]
    m = SEMVER.match(info["version"])
    assert m, f"version must be semver: {info['version']!r}"
    assert (int(m.group(1)), int(m.group(2))) >= (2, 9), info["version"]
    assert info["proto"] == 1
    assert isinstance(info["go"], str) and info["go"]
    assert isinstance(info["host"], str)
    assert isinstance(info["port"], int)
    assert info["headers"] is True
    assert info["max_payload"] == 1048576
    assert isinstance(info["client_id"], int) and info["client_id"] > 0
    assert isinstance(info["client_ip"], str) and info["client_ip"]
    assert isinstance(info["api_lvl"], int) and info["api_lvl"] >= 1
    if target in LOCAL_TARGETS:
        assert info["port"] == server.port
        assert info["client_ip"] == "127.0.0.1"
        assert info["server_name"] == info["server_id"]  # defaults to the id
    # Absent on a plain server (omitempty fields).
    for absent in ("auth_required", "jetstream", "tls_required", "nonce", "connect_info",
                   "remote_account", "ldm"):
        assert absent not in info, f"{absent} must be omitted: {info}"


def test_info_field_order(target: str, raw: RawFactory) -> None:
    """Known fields appear in the Go struct order, in the INFO on accept and after CONNECT."""
    client = raw()
    after = client.handshake()
    assert after is not None
    for info in (client.info, after):
        known = [k for k in info if k in GO_FIELD_ORDER]
        assert known == sorted(known, key=GO_FIELD_ORDER.index), list(info)


def test_info_client_id_unique_per_connection(target: str, raw: RawFactory) -> None:
    """Each connection gets its own, increasing ``client_id``; the server id is stable."""
    a, b = raw(), raw()
    assert b.info["client_id"] > a.info["client_id"]
    assert a.info["server_id"] == b.info["server_id"]


def test_info_auth_required_with_auth(target: str, spawn: SpawnFn) -> None:
    """``auth_required: true`` appears once any authorization is configured (no nonce)."""
    ep = spawn(config="authorization {\n  user: alice\n  password: s3cret\n}\n")
    with RawClient.connect(ep.host, ep.port) as client:
        assert client.info.get("auth_required") is True
        assert "nonce" not in client.info


@pytest.mark.needs_plain_server
def test_info_no_jetstream_without_js(target: str, raw: RawFactory) -> None:
    """A server started without ``-js`` does not advertise ``jetstream`` in INFO."""
    info = raw().info
    assert "jetstream" not in info
    assert info["headers"] is True


def test_info_jetstream_true_with_js(target: str, js_raw: RawFactory) -> None:
    """A server started with ``-js`` says ``"jetstream":true`` in INFO, right after
    ``max_payload``, in the INFO on accept and in the one after CONNECT."""
    client = js_raw()
    after = client.handshake()
    assert after is not None
    for info in (client.info, after):
        assert info["jetstream"] is True
        keys = list(info)
        assert keys.index("jetstream") == keys.index("max_payload") + 1
    assert b',"max_payload":1048576,"jetstream":true,' in client.info_line


def test_info_reflects_config(target: str, spawn: SpawnFn) -> None:
    """``server_name`` and ``max_payload`` from the config file show up in INFO."""
    ep = spawn(config="server_name: conformance_srv\nmax_payload: 2048\n")
    with RawClient.connect(ep.host, ep.port) as client:
        assert client.info["server_name"] == "conformance_srv"
        assert client.info["max_payload"] == 2048
        assert NKEY_SERVER.match(client.info["server_id"])
