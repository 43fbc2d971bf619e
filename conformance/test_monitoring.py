"""The monitoring endpoints harnesses and dashboards poll (``-m PORT``): ``/jsz``, ``/subsz``,
``/accountz``, ``/connz`` options and ``/healthz`` options.

Both targets must serve the same field names in the same order, the same shapes and types,
and the same values wherever the two can agree (stream and consumer state, counts of client
connections and subscriptions, option errors). Values that depend on a server's internals
(the sublist's counters, which in nats-server include its ``$SYS`` services) are checked for
type and for what follows from the case (a counter never goes down, and so on).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import SpawnFn, get_json, refused_start
from conformance.jshelpers import TIMESTAMP, JsClient
from conformance.rawclient import RawClient
from conformance.servers import free_port

JSZ_KEYS = ["memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets",
            "api", "server_id", "now", "config", "limits", "streams", "consumers", "messages",
            "bytes"]
ACCOUNT_DETAIL_KEYS = ["name", "id", "memory", "storage", "reserved_memory", "reserved_storage",
                       "accounts", "ha_assets", "api"]
CONSUMER_DETAIL_KEYS = ["stream_name", "name", "created", "config", "delivered", "ack_floor",
                        "num_ack_pending", "num_redelivered", "num_waiting", "num_pending", "ts"]
SUBLIST_STATS_KEYS = ["num_subscriptions", "num_cache", "num_inserts", "num_removes",
                      "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout"]
SUBSZ_KEYS = ["server_id", "now", *SUBLIST_STATS_KEYS, "total", "offset", "limit"]
U64_MAX = (1 << 64) - 1


def get_raw(port: int, path: str) -> tuple[int, str, bytes]:
    """GET ``path``: (status, content type, body), for error answers too."""
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def assert_bad_request(port: int, path: str, text: str) -> None:
    status, ctype, body = get_raw(port, path)
    assert (status, ctype, body.decode()) == (400, "text/plain; charset=utf-8", text), path


def js_server(spawn: SpawnFn) -> tuple[Any, int]:
    http_port = free_port()
    return spawn(args=["-m", str(http_port)], jetstream=True), http_port


def setup_streams(srv: Any) -> JsClient:
    """Streams S1 (file, 3 messages, durable C1) and S2 (memory, empty)."""
    js = JsClient.connect(srv)
    js.create("S1", subjects=["s1.>"])
    js.create("S2", subjects=["s2"], storage="memory")
    for _ in range(3):
        js.pub_ok("s1.a", b"hello")
    out = js.api("CONSUMER.CREATE.S1.C1",
                 {"stream_name": "S1", "config": {"durable_name": "C1", "ack_policy": "explicit"}})
    assert "error" not in out, out
    return js


# ----------------------------------------------------------------------------- /jsz


def test_jsz_summary(target: str, spawn: SpawnFn) -> None:
    """``/jsz``: usage totals in nats-server's field order, no account details unasked."""
    srv, http_port = js_server(spawn)
    js = setup_streams(srv)
    try:
        jsz = get_json(http_port, "/jsz")
        assert list(jsz) == [*JSZ_KEYS, "total"]
        assert jsz["server_id"] == js.raw.info["server_id"]
        assert TIMESTAMP.match(jsz["now"])
        assert (jsz["streams"], jsz["consumers"], jsz["messages"], jsz["accounts"],
                jsz["total"]) == (2, 1, 3, 1, 1)
        assert jsz["bytes"] == jsz["storage"] > 0 and jsz["memory"] == 0
        assert list(jsz["api"]) == ["level", "total", "errors"]
        assert jsz["api"]["level"] == 5 and jsz["api"]["errors"] == 0
        assert list(jsz["config"])[:3] == ["max_memory", "max_storage", "store_dir"]
        assert jsz["config"]["sync_interval"] == 120_000_000_000
        assert jsz["config"]["strict"] is True
    finally:
        js.close()


def test_jsz_stream_and_consumer_detail(target: str, spawn: SpawnFn) -> None:
    """``/jsz?consumers=1&config=1``: the account, its streams (by name) with config and
    state, and each stream's consumers; without ``config`` the configs are left out."""
    srv, http_port = js_server(spawn)
    js = setup_streams(srv)
    try:
        jsz = get_json(http_port, "/jsz?consumers=1&config=1")
        assert list(jsz) == [*JSZ_KEYS, "account_details", "total"]
        (acc,) = jsz["account_details"]
        assert list(acc) == [*ACCOUNT_DETAIL_KEYS, "stream_detail"]
        assert (acc["name"], acc["id"]) == ("$G", "$G")
        assert acc["reserved_memory"] == acc["reserved_storage"] == U64_MAX
        assert acc["api"]["level"] == 0
        # nats-server lists an account's streams in map order: compare them by name.
        s1, s2 = sorted(acc["stream_detail"], key=lambda d: d["name"])
        assert list(s1) == ["name", "created", "cluster", "config", "state", "consumer_detail"]
        assert list(s2) == ["name", "created", "cluster", "config", "state"]
        assert (s1["name"], s2["name"]) == ("S1", "S2")
        assert s1["cluster"] == {"leader": js.raw.info["server_name"]}
        assert s1["config"]["subjects"] == ["s1.>"] and s2["config"]["storage"] == "memory"
        assert s1["config"]["metadata"] == {"_nats.req.level": "0"}
        assert s1["state"]["messages"] == 3 and s1["state"]["consumer_count"] == 1
        assert s2["state"]["first_ts"] == "0001-01-01T00:00:00Z"
        (c1,) = s1["consumer_detail"]
        assert list(c1) == CONSUMER_DETAIL_KEYS
        assert (c1["stream_name"], c1["name"], c1["num_pending"]) == ("S1", "C1", 3)
        assert c1["config"]["durable_name"] == "C1"
        assert c1["config"]["metadata"] == {"_nats.req.level": "0"}

        streams = get_json(http_port, "/jsz?streams=1")
        s1, s2 = streams["account_details"][0]["stream_detail"]
        assert list(s1) == list(s2) == ["name", "created", "cluster", "state"]
        consumers = get_json(http_port, "/jsz?consumers=1")
        details = consumers["account_details"][0]["stream_detail"]
        (c1,) = next(d for d in details if d["name"] == "S1")["consumer_detail"]
        assert list(c1) == [k for k in CONSUMER_DETAIL_KEYS if k != "config"]
    finally:
        js.close()


def test_jsz_accounts_paging_and_acc(target: str, spawn: SpawnFn) -> None:
    """``accounts=1`` lists ``$G``; ``offset``/``limit`` page accounts (``total`` stays the
    count); ``acc=$G`` selects it, an unknown ``acc`` gives no details (not an error)."""
    srv, http_port = js_server(spawn)
    js = setup_streams(srv)
    try:
        accounts = get_json(http_port, "/jsz?accounts=1")
        (acc,) = accounts["account_details"]
        assert list(acc) == ACCOUNT_DETAIL_KEYS and acc["name"] == "$G"
        paged = get_json(http_port, "/jsz?accounts=1&offset=1&limit=1")
        assert "account_details" not in paged and paged["total"] == 1
        one = get_json(http_port, "/jsz?acc=$G&streams=1")
        assert sorted(s["name"] for s in one["account_details"][0]["stream_detail"]) == ["S1", "S2"]
        other = get_json(http_port, "/jsz?acc=NOPE&streams=1")
        assert "account_details" not in other and other["total"] == 1
    finally:
        js.close()


def test_jsz_without_jetstream(target: str, spawn: SpawnFn) -> None:
    """A server without JetStream answers ``/jsz`` with ``disabled`` and zero usage."""
    http_port = free_port()
    spawn(args=["-m", str(http_port)])
    jsz = get_json(http_port, "/jsz?accounts=1")
    assert list(jsz) == ["memory", "storage", "reserved_memory", "reserved_storage", "accounts",
                         "ha_assets", "api", "server_id", "now", "disabled", "config", "streams",
                         "consumers", "messages", "bytes", "total"]
    assert jsz["disabled"] is True
    assert jsz["config"] == {"max_memory": 0, "max_storage": 0}
    assert jsz["api"] == {"level": 0, "total": 0, "errors": 0}
    assert (jsz["accounts"], jsz["streams"], jsz["total"]) == (0, 0, 0)


# ----------------------------------------------------------------------------- /subsz


def test_subsz_stats_and_list(target: str, spawn: SpawnFn) -> None:
    """``/subsz``: the sublist statistics; ``subs=1`` adds the subscriptions (with account),
    ``test=SUBJECT`` keeps those matching it, ``offset``/``limit`` page them."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port)])
    before = get_json(http_port, "/subsz")
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake()
        client.send(b"SUB mon.* q1 1\r\nSUB mon.x 2\r\nSUB other 3\r\nPUB mon.x 1\r\nx\r\n")
        client.barrier()
        cid = client.info["client_id"]
        subsz = get_json(http_port, "/subsz")
        assert list(subsz) == SUBSZ_KEYS
        for key in SUBLIST_STATS_KEYS:
            assert isinstance(subsz[key], (int, float)) and not isinstance(subsz[key], bool), key
        assert subsz["num_subscriptions"] == before["num_subscriptions"] + 3
        assert subsz["num_inserts"] >= before["num_inserts"] + 3
        assert subsz["num_matches"] > before["num_matches"]
        assert 0 <= subsz["cache_hit_rate"] <= 1
        assert (subsz["total"], subsz["offset"], subsz["limit"]) == (0, 0, 1024)

        listed = get_json(http_port, "/subsz?subs=1&test=mon.x")
        assert list(listed) == [*SUBSZ_KEYS, "subscriptions_list"]
        assert listed["total"] == 2
        mine = sorted(listed["subscriptions_list"], key=lambda s: s["sid"])
        # the PUB to mon.x went to both: the queue group's only member and the plain SUB
        assert mine == [
            {"account": "$G", "account_tag": "$G", "subject": "mon.*", "qgroup": "q1",
             "sid": "1", "msgs": 1, "cid": cid},
            {"account": "$G", "account_tag": "$G", "subject": "mon.x", "sid": "2", "msgs": 1,
             "cid": cid},
        ]
        nothing = get_json(http_port, "/subsz?subs=1&test=none.here")
        assert nothing["total"] == 0 and "subscriptions_list" not in nothing
        paged = get_json(http_port, "/subsz?subs=1&offset=1&limit=2")
        assert (paged["offset"], paged["limit"]) == (1, 2)
        assert len(paged["subscriptions_list"]) == min(2, paged["total"] - 1)
        client.send(b"UNSUB 3\r\n")
        client.barrier()
        after = get_json(http_port, "/subsz")
        assert after["num_removes"] >= subsz["num_removes"] + 1
        assert after["num_subscriptions"] == subsz["num_subscriptions"] - 1


def test_subsz_bad_options(target: str, spawn: SpawnFn) -> None:
    """A wildcard ``test`` subject, a non-numeric ``limit`` or a bad ``subs`` are 400s with
    nats-server's text."""
    http_port = free_port()
    spawn(args=["-m", str(http_port)])
    assert_bad_request(http_port, "/subsz?test=foo.*",
                       "invalid test subject, must be valid publish subject: foo.*")
    assert_bad_request(http_port, "/subsz?limit=x",
                       "Error decoding int for 'limit': strconv.Atoi: parsing \"x\": "
                       "invalid syntax")
    assert_bad_request(http_port, "/subsz?subs=maybe",
                       "Error decoding boolean for 'subs': strconv.ParseBool: parsing "
                       "\"maybe\": invalid syntax")


# ----------------------------------------------------------------------------- /accountz


def test_accountz(target: str, spawn: SpawnFn) -> None:
    """``/accountz`` lists ``$SYS`` and ``$G``; ``acc=$G`` details the global account (its
    JetStream API import, its connections); an unknown account is a 400."""
    srv, http_port = js_server(spawn)
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake()
        client.send(b"SUB acc.test 1\r\n")
        client.barrier()
        accountz = get_json(http_port, "/accountz")
        assert list(accountz) == ["server_id", "now", "system_account", "accounts"]
        assert accountz["system_account"] == "$SYS"
        # nats-server lists its accounts in map order (either way round).
        assert sorted(accountz["accounts"]) == ["$G", "$SYS"]
        detail = get_json(http_port, "/accountz?acc=$G")
        assert list(detail) == ["server_id", "now", "system_account", "account_detail"]
        acc = detail["account_detail"]
        assert list(acc) == ["account_name", "update_time", "expired", "complete",
                             "jetstream_enabled", "leafnode_connections", "client_connections",
                             "subscriptions", "imports", "name_tag", "sublist_stats"]
        assert (acc["account_name"], acc["name_tag"]) == ("$G", "$G")
        assert acc["jetstream_enabled"] is True and acc["expired"] is False
        assert acc["client_connections"] == 1
        assert TIMESTAMP.match(acc["update_time"])
        assert list(acc["sublist_stats"]) == SUBLIST_STATS_KEYS
        assert acc["subscriptions"] == acc["sublist_stats"]["num_subscriptions"] >= 1
        js_import = [imp for imp in acc["imports"] if imp["subject"] == "$JS.API.>"]
        assert js_import == [{"subject": "$JS.API.>", "account": "$SYS", "to": "$JS.API.>",
                              "local_subject": "$JS.API.>", "type": "service",
                              "invalid": False, "share": True, "tracking": False}]
        system = get_json(http_port, "/accountz?acc=$SYS")["account_detail"]
        assert system["account_name"] == "$SYS" and system["is_system"] is True
        assert system["jetstream_enabled"] is False and system["client_connections"] == 0
        assert_bad_request(http_port, "/accountz?acc=NOPE", "Account NOPE does not exist")


# ----------------------------------------------------------------------------- /connz


def test_connz_subs_and_auth(target: str, spawn: SpawnFn) -> None:
    """``subs=1`` lists subjects, ``subs=detail`` the subscriptions, ``auth=1`` adds the
    authorized user and the account's ``name_tag``; ``pending_bytes`` is a count."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port), "--user", "mon", "--pass", "pw"])
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake(user="mon", **{"pass": "pw"})
        client.send(b"SUB c.one 1\r\nSUB c.two grp 2\r\n")
        client.barrier()
        cid = client.info["client_id"]
        conn = get_json(http_port, f"/connz?cid={cid}&subs=1&auth=1")["connections"][0]
        assert isinstance(conn["pending_bytes"], int) and conn["pending_bytes"] >= 0
        keys = list(conn)
        assert keys[-3:] == ["authorized_user", "subscriptions_list", "name_tag"]
        assert conn["authorized_user"] == "mon" and conn["name_tag"] == "$G"
        assert sorted(conn["subscriptions_list"]) == ["c.one", "c.two"]
        detail = get_json(http_port, f"/connz?cid={cid}&subs=detail")["connections"][0]
        assert "authorized_user" not in detail and "name_tag" not in detail
        assert sorted(detail["subscriptions_list_detail"], key=lambda s: s["sid"]) == [
            {"subject": "c.one", "sid": "1", "msgs": 0, "cid": cid},
            {"subject": "c.two", "qgroup": "grp", "sid": "2", "msgs": 0, "cid": cid},
        ]
        plain = get_json(http_port, f"/connz?cid={cid}")["connections"][0]
        assert "subscriptions_list" not in plain and "name_tag" not in plain


def test_connz_auth_token_is_redacted(target: str, spawn: SpawnFn) -> None:
    """With token auth, ``auth=1`` shows the authorized user as ``[REDACTED]``."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port), "--auth", "s3cret"])
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake(auth_token="s3cret")
        cid = client.info["client_id"]
        conn = get_json(http_port, f"/connz?cid={cid}&auth=1")["connections"][0]
        assert (conn["authorized_user"], conn["name_tag"]) == ("[REDACTED]", "$G")
        assert list(conn)[-2:] == ["authorized_user", "name_tag"]


def test_connz_filters(target: str, spawn: SpawnFn) -> None:
    """``cid`` picks one connection (limit 1, a bad id is a 400), ``user`` keeps the
    connections of that authorized user, ``acc`` an account (an unknown one: empty answer)."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port), "--user", "mon", "--pass", "pw"])
    clients = [RawClient.connect(srv.host, srv.port) for _ in range(2)]
    try:
        for client in clients:
            client.handshake(user="mon", **{"pass": "pw"})
        cids = sorted(c.info["client_id"] for c in clients)
        one = get_json(http_port, f"/connz?cid={cids[1]}")
        # total still counts every open connection
        assert (one["num_connections"], one["total"], one["limit"]) == (1, 2, 1)
        assert [c["cid"] for c in one["connections"]] == [cids[1]]
        missing = get_json(http_port, "/connz?cid=999999")
        assert (missing["num_connections"], missing["total"], missing["connections"]) == (
            0, 2, [])
        assert_bad_request(http_port, "/connz?cid=x",
                           "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"x\": "
                           "invalid syntax")
        mine = get_json(http_port, "/connz?user=mon&auth=1")
        assert sorted(c["cid"] for c in mine["connections"]) == cids and mine["total"] == 2
        other = get_json(http_port, "/connz?user=bob&auth=1")
        # as with cid, total counts every open connection
        assert (other["num_connections"], other["total"], other["connections"]) == (0, 2, [])
        acc = get_json(http_port, "/connz?acc=$G")
        assert sorted(c["cid"] for c in acc["connections"]) == cids
        nope = get_json(http_port, "/connz?acc=NOPE")
        assert (nope["server_id"], nope["num_connections"], nope["total"],
                nope["connections"]) == ("", 0, 0, None)
        subs = get_json(http_port, "/subsz?subs=1&acc=NOPE")
        assert subs["total"] == 0 and "subscriptions_list" not in subs
    finally:
        for client in clients:
            client.close()


def test_connz_sort_and_paging(target: str, spawn: SpawnFn) -> None:
    """``sort=subs`` puts the connection with most subscriptions first, ``sort=cid`` orders
    by id; ``offset``/``limit`` page the sorted list while ``total`` counts them all."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port)])
    clients = [RawClient.connect(srv.host, srv.port) for _ in range(3)]
    try:
        for n, client in enumerate(clients):
            client.handshake()
            client.send(b"".join(f"SUB s.{n}.{i} {i + 1}\r\n".encode() for i in range(n + 1)))
            client.barrier()
        cids = [c.info["client_id"] for c in clients]
        by_subs = get_json(http_port, "/connz?sort=subs")
        assert [c["cid"] for c in by_subs["connections"]] == cids[::-1]
        assert [c["subscriptions"] for c in by_subs["connections"]] == [3, 2, 1]
        for sort in ("cid", "start", "pending", "msgs_to", "msgs_from", "bytes_to",
                     "bytes_from", "last", "idle", "uptime", "rtt"):
            report = get_json(http_port, f"/connz?sort={sort}")
            assert sorted(c["cid"] for c in report["connections"]) == cids, sort
        page = get_json(http_port, "/connz?sort=cid&offset=1&limit=1")
        assert (page["num_connections"], page["total"], page["offset"], page["limit"]) == (
            1, 3, 1, 1)
        assert [c["cid"] for c in page["connections"]] == [cids[1]]
        past = get_json(http_port, "/connz?offset=5")
        assert (past["num_connections"], past["total"], past["connections"]) == (0, 3, [])
    finally:
        for client in clients:
            client.close()


def test_connz_bad_options(target: str, spawn: SpawnFn) -> None:
    """Bad ``sort``, ``state``, ``limit`` values and ``sort=stop`` on open connections are
    400s with nats-server's text."""
    http_port = free_port()
    spawn(args=["-m", str(http_port)])
    assert_bad_request(http_port, "/connz?sort=nope", "invalid sorting option: nope")
    assert_bad_request(http_port, "/connz?sort=stop",
                       "sort by stop only valid on closed connections")
    assert_bad_request(http_port, "/connz?sort=reason&state=all",
                       "sort by reason only valid on closed connections")
    assert_bad_request(http_port, "/connz?state=nope", "Error decoding state for nope")
    assert_bad_request(http_port, "/connz?limit=abc",
                       "Error decoding int for 'limit': strconv.Atoi: parsing \"abc\": "
                       "invalid syntax")


CLOSED_KEYS = ["cid", "kind", "type", "ip", "port", "start", "last_activity", "stop", "reason",
               "rtt", "uptime", "idle", "pending_bytes", "in_msgs", "out_msgs", "in_bytes",
               "out_bytes", "subscriptions"]


def test_connz_closed_connections(target: str, spawn: SpawnFn) -> None:
    """``state=closed`` keeps each closed connection as it was at its close, with ``stop`` and
    nats-server's ``reason``: ``Client Closed`` (the client hung up), ``Protocol Violation``
    (an unknown operation), ``Maximum Message Payload Exceeded``, ``Authentication Failure``;
    its subscriptions (``subs=1``), its user (``auth=1``); ``state=all`` lists open and closed
    by cid; ``sort=stop`` newest first, ``sort=reason`` by reason; ``cid`` finds a closed one."""
    import time

    http_port = free_port()
    srv = spawn(args=["-m", str(http_port), "--user", "u", "--pass", "pw"],
                config="max_payload: 100")
    cids: dict[str, int] = {}
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake(user="u", name="polite", **{"pass": "pw"})
        client.send(b"SUB a.b 1\r\nSUB a.c q 2\r\n")
        client.barrier()
        cids["Client Closed"] = client.info["client_id"]
    for reason, line in (("Protocol Violation", b"FOO\r\n"),
                         ("Maximum Message Payload Exceeded", b"PUB a 200\r\n"),
                         ("Authentication Failure", None)):
        with RawClient.connect(srv.host, srv.port) as client:
            if line is None:
                client.send(b'CONNECT {"verbose":false,"user":"u","pass":"bad"}\r\n')
            else:
                client.handshake(user="u", **{"pass": "pw"})
                client.send(line)
            cids[reason] = client.info["client_id"]
            client.read_available(0.3)
    live = RawClient.connect(srv.host, srv.port)
    live.handshake(user="u", **{"pass": "pw"})
    try:
        def closed(query: str = "") -> Any:
            return get_json(http_port, "/connz?state=closed" + query)

        deadline = time.monotonic() + 5
        while closed()["total"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        report = closed()
        assert (report["total"], report["num_connections"]) == (4, 4)
        by_cid = {c["cid"]: c for c in report["connections"]}
        assert sorted(by_cid) == sorted(cids.values())
        assert [c["cid"] for c in report["connections"]] == sorted(by_cid)
        for reason, cid in cids.items():
            conn = by_cid[cid]
            assert list(conn)[:len(CLOSED_KEYS)] == CLOSED_KEYS, list(conn)
            assert conn["reason"] == reason
            assert conn["start"] <= conn["stop"]
        polite = by_cid[cids["Client Closed"]]
        assert (polite["subscriptions"], polite["name"]) == (2, "polite")
        assert "subscriptions_list" not in polite and "authorized_user" not in polite
        polite = closed(f"&cid={cids['Client Closed']}&subs=1&auth=1")
        assert (polite["total"], polite["limit"], polite["num_connections"]) == (4, 1, 1)
        (polite,) = polite["connections"]
        assert sorted(polite["subscriptions_list"]) == ["a.b", "a.c"]
        assert polite["authorized_user"] == "u"
        detail = closed(f"&cid={cids['Client Closed']}&subs=detail")["connections"][0]
        assert sorted(d["subject"] for d in detail["subscriptions_list_detail"]) == ["a.b", "a.c"]

        by_stop = [c["cid"] for c in closed("&sort=stop")["connections"]]
        assert by_stop == sorted(cids.values(), reverse=True)
        by_reason = [c["reason"] for c in closed("&sort=reason")["connections"]]
        assert by_reason == sorted(cids)

        everything = get_json(http_port, "/connz?state=all")
        assert everything["total"] == 5
        assert [c["cid"] for c in everything["connections"]] == sorted(
            [*cids.values(), live.info["client_id"]])
        assert "reason" not in everything["connections"][-1]
        assert get_json(http_port, "/connz")["total"] == 1
    finally:
        live.close()


# ----------------------------------------------------------------------------- /healthz


def test_healthz_options(target: str, spawn: SpawnFn) -> None:
    """``js-enabled-only`` and ``js-server-only`` answer ``ok`` on a healthy server, with or
    without JetStream; a value that is not a Go boolean is a 400."""
    srv, http_port = js_server(spawn)
    plain_port = free_port()
    spawn(args=["-m", str(plain_port)])
    for port in (http_port, plain_port):
        for query in ("js-enabled-only=true", "js-server-only=true", "js-enabled-only=1",
                      "js-server-only=false"):
            status, ctype, body = get_raw(port, f"/healthz?{query}")
            assert (status, ctype, json.loads(body)) == (200, "application/json",
                                                         {"status": "ok"}), query
    assert_bad_request(http_port, "/healthz?js-enabled-only=yes",
                       "Error decoding boolean for 'js-enabled-only': strconv.ParseBool: "
                       "parsing \"yes\": invalid syntax")
    assert srv.port


def _healthz(port: int, query: str) -> tuple[int, Any]:
    status, ctype, body = get_raw(port, "/healthz?" + query.replace("$", "%24"))
    assert ctype == "application/json", (query, ctype, body)
    return status, json.loads(body)


def test_healthz_assets(target: str, spawn: SpawnFn) -> None:
    """``account``, ``stream`` and ``consumer`` ask whether those exist: 404 ``unavailable``
    naming what is missing, 400 when a stream is asked without its account or a consumer
    without its stream; ``details`` turns the one ``error`` into typed ``errors``. Like a
    single nats-server, which finds streams in its store directory, a memory stream is "not
    found"; ``js-enabled-only`` skips the asset checks; a server without JetStream has none."""
    srv, http_port = js_server(spawn)
    js = setup_streams(srv)
    try:
        ok = (200, {"status": "ok"})
        assert _healthz(http_port, "account=$G") == ok
        assert _healthz(http_port, "account=$G&stream=S1") == ok
        assert _healthz(http_port, "account=$G&stream=S1&consumer=C1&details=true") == ok
        missing_stream = 'JetStream stream "{}" not found on account "$G"'
        for name in ("S2", "NOPE"):  # S2 is a memory stream
            assert _healthz(http_port, f"account=$G&stream={name}") == (
                404, {"status": "unavailable", "error": missing_stream.format(name)})
            assert _healthz(http_port, f"account=$G&stream={name}&details=1") == (
                404, {"status": "error", "errors": [{
                    "type": "STREAM", "account": "$G", "stream": name,
                    "error": missing_stream.format(name)}]})
        text = 'JetStream consumer "C9" not found for stream "S1" on account "$G"'
        assert _healthz(http_port, "account=$G&stream=S1&consumer=C9") == (
            404, {"status": "unavailable", "error": text})
        assert _healthz(http_port, "account=$G&stream=S1&consumer=C9&details=true") == (
            404, {"status": "error", "errors": [{
                "type": "CONSUMER", "account": "$G", "stream": "S1", "consumer": "C9",
                "error": text}]})
        assert _healthz(http_port, "account=B") == (
            404, {"status": "unavailable", "error": 'JetStream account "B" not found'})
        assert _healthz(http_port, "account=B&details=true") == (
            404, {"status": "error", "errors": [{
                "type": "ACCOUNT", "account": "B", "error": 'JetStream account "B" not found'}]})
        assert _healthz(http_port, "account=B&js-enabled-only=true") == ok
        assert _healthz(http_port, "account=B&js-server-only=true") == ok
    finally:
        js.close()
    plain_port = free_port()
    spawn(args=["-m", str(plain_port)])
    for port in (http_port, plain_port):
        bad = '"account" must not be empty when checking stream health'
        assert _healthz(port, "stream=S1") == (400, {"status": "error", "error": bad})
        assert _healthz(port, "stream=S1&details=true") == (
            400, {"status": "error", "errors": [{"type": "BAD_REQUEST", "error": bad}]})
        bad = '"stream" must not be empty when checking consumer health'
        assert _healthz(port, "account=$G&consumer=C1") == (400, {"status": "error",
                                                                 "error": bad})
    assert _healthz(plain_port, "account=B&stream=S1") == (200, {"status": "ok"})
    assert_bad_request(http_port, "/healthz?js-meta-only=maybe",
                       "Error decoding boolean for 'js-meta-only': strconv.ParseBool: "
                       "parsing \"maybe\": invalid syntax")


def test_healthz_stream_that_could_not_be_recovered(target: str, spawn: SpawnFn,
                                                     tmp_path: Any) -> None:
    """A file stream whose files are damaged while the server is down is not recovered: it
    is gone from the API, and ``/healthz`` reports JetStream unhealthy (503, ``could not be
    recovered``, also for ``account`` and that ``stream``) until a stream of that name is
    created again; other streams and ``js-enabled-only`` stay ``ok``."""
    import os

    store = str(tmp_path / "store")
    http_port = free_port()
    args = ["-js", "-sd", store, "-m", str(http_port)]
    srv = spawn(args=args)
    js = JsClient.connect(srv)
    for name in ("GOOD", "BAD"):
        js.create(name, subjects=[name.lower()])
        js.pub_ok(name.lower(), b"x")
    js.close()
    srv.stop()
    bad = os.path.join(store, "jetstream", "$G", "streams", "BAD")
    damaged = 0
    for root, _, files in os.walk(bad):
        for f in files:
            with open(os.path.join(root, f), "wb") as fh:
                fh.write(b"garbage" * 3)
            damaged += 1
    assert damaged
    srv = spawn(args=args)
    text = "JetStream stream '$G > BAD' could not be recovered"
    unhealthy = (503, {"status": "unavailable", "error": text})
    assert _healthz(http_port, "") == unhealthy
    assert _healthz(http_port, "account=$G") == unhealthy
    assert _healthz(http_port, "account=$G&stream=BAD") == unhealthy
    assert _healthz(http_port, "details=true") == (503, {"status": "error", "errors": [{
        "type": "STREAM", "account": "$G", "stream": "BAD", "error": text}]})
    assert _healthz(http_port, "account=$G&stream=GOOD") == (200, {"status": "ok"})
    assert _healthz(http_port, "js-enabled-only=true") == (200, {"status": "ok"})
    js = JsClient.connect(srv)
    try:
        assert js.api("STREAM.NAMES")["streams"] == ["GOOD"]
        assert js.info("BAD")["error"]["err_code"] == 10059
        js.create("BAD", subjects=["bad"])
        assert _healthz(http_port, "") == (200, {"status": "ok"})
    finally:
        js.close()


def test_varz_server_tags(target: str, spawn: SpawnFn) -> None:
    """``server_tags`` shows in ``/varz`` as ``tags``, trimmed, lower-cased and without repeats;
    a single server takes any stream placement tags (it does not match them). Without
    ``server_tags`` there is no ``tags`` key."""
    http_port = free_port()
    srv = spawn(config='server_tags: ["SSD", " az:1 ", "ssd", "x"]\n',
                args=["-m", str(http_port)], jetstream=True)
    varz = get_json(http_port, "/varz")
    assert varz["tags"] == ["ssd", "az:1", "x"]
    js = JsClient.connect(srv)
    name = "TAGS"
    out = js.api(f"STREAM.CREATE.{name}", {"name": name, "subjects": ["tags.x"],
                                            "placement": {"tags": ["nvme"]}})
    assert out["config"]["placement"] == {"tags": ["nvme"]}, out
    js.close()
    plain_port = free_port()
    spawn(args=["-m", str(plain_port)])
    assert "tags" not in get_json(plain_port, "/varz")


@pytest.mark.parametrize("value,error", [
    ("5", "error parsing tags: unsupported type int64"),
    ('[1, "a"]', "error parsing tags: unsupported type *conf.token where string is expected"),
], ids=["int", "int-in-list"])
def test_server_tags_refused(target: str, tmp_path: Path, value: str, error: str) -> None:
    assert error in refused_start(target, tmp_path, f"server_tags: {value}\n")
