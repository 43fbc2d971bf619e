"""JetStream in configured accounts (``accounts { A: { jetstream: enabled } }``): each account
with JetStream has its own streams, consumers, limits and API counters; an account without it
(the global account too, once accounts are configured) answers every API request 503/10039;
file streams live under ``<store_dir>/jetstream/<account>/streams/<name>`` and come back in
their account after a restart; ``/jsz``, ``/varz`` and ``/healthz`` report per account."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import SpawnFn, refused_start
from conformance.jshelpers import JsClient, wait_for
from conformance.servers import free_port

ACCOUNTS = """
accounts {
  A: { jetstream: enabled, users: [ {user: a, password: a} ] }
  B: { users: [ {user: b, password: b} ] }
  C: { jetstream: { max_mem: 1M, max_file: 1M, max_streams: 2, max_consumers: 3 },
       users: [ {user: c, password: c} ] }
}
"""
NOT_ENABLED = {"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}
U64_MAX = (1 << 64) - 1


def get(port: int, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def start(spawn: SpawnFn, store: Path, *, extra: str = "", http: int | None = None) -> Any:
    conf = f'jetstream {{\n store_dir: "{store}"\n {extra}\n}}\n' + ACCOUNTS
    if http is not None:
        conf += f"http_port: {http}\n"
    return spawn(config=conf)


def login(srv: Any, user: str) -> JsClient:
    return JsClient.connect(srv, user=user, **{"pass": user})


def test_js_accounts_api_in_an_account_without_jetstream(target: str, spawn: SpawnFn,
                                                         tmp_path: Path) -> None:
    """B has no JetStream: JSON endpoints answer 503/10039 with their usual error fields (a
    consumer create body is checked first), stepdowns 503/10010, DIRECT.GET and MSG.NEXT get
    no responders, an unknown endpoint nothing; INFO still advertises JetStream."""
    srv = start(spawn, tmp_path / "sd")
    js = login(srv, "b")
    try:
        assert js.raw.info.get("jetstream") is True
        cases = {
            "INFO": ("account_info_response", {}),
            "STREAM.CREATE.S": ("stream_create_response", {}),
            "STREAM.NAMES": ("stream_names_response",
                             {"total": 0, "offset": 0, "limit": 0, "streams": None}),
            "STREAM.LIST": ("stream_list_response",
                            {"total": 0, "offset": 0, "limit": 0, "streams": []}),
            "STREAM.INFO.S": ("stream_info_response", {"total": 0, "offset": 0, "limit": 0}),
            "STREAM.PURGE.S": ("stream_purge_response", {"purged": 0}),
            "STREAM.DELETE.S": ("stream_delete_response", {}),
            "STREAM.MSG.GET.S": ("stream_msg_get_response", {}),
            "CONSUMER.INFO.S.C": ("consumer_info_response", {}),
            "CONSUMER.NAMES.S": ("consumer_names_response",
                                 {"total": 0, "offset": 0, "limit": 0, "consumers": []}),
            "CONSUMER.DELETE.S.C": ("consumer_delete_response", {}),
        }
        for suffix, (rtype, extras) in cases.items():
            body = json.loads(js.request(f"$JS.API.{suffix}", b"").data)
            assert body == {"type": f"io.nats.jetstream.api.v1.{rtype}", "error": NOT_ENABLED,
                            **extras}, suffix
        create = json.loads(js.request("$JS.API.CONSUMER.CREATE.S", b"{").data)
        assert create["error"]["err_code"] == 10025
        create = json.loads(js.request("$JS.API.CONSUMER.CREATE.S",
                                       b'{"stream_name":"S","config":{}}').data)
        assert create["error"] == NOT_ENABLED
        unpin = json.loads(js.request("$JS.API.CONSUMER.UNPIN.S.C", b"{}").data)
        assert unpin["error"]["description"] == "invalid JSON: consumer group not specified"
        unpin = json.loads(js.request("$JS.API.CONSUMER.UNPIN.S.C", b'{"group":"g"}').data)
        assert unpin["error"] == NOT_ENABLED
        step = json.loads(js.request("$JS.API.STREAM.LEADER.STEPDOWN.S", b"").data)
        assert step["error"]["err_code"] == 10010
        for suffix in ("DIRECT.GET.S", "CONSUMER.MSG.NEXT.S.C"):
            assert js.request(f"$JS.API.{suffix}", b'{"seq":1}').status == "503", suffix
        with pytest.raises(TimeoutError):
            js.request("$JS.API.NOPE", b"", timeout=0.5)
    finally:
        js.close()


def test_js_accounts_streams_are_per_account(target: str, spawn: SpawnFn,
                                             tmp_path: Path) -> None:
    """A and C each create a stream ORDERS on the same subjects: a publish in one account lands
    in that account's stream only, consumers and counts are per account, and account info
    shows each account's own usage, limits and API counters."""
    srv = start(spawn, tmp_path / "sd")
    a, c = login(srv, "a"), login(srv, "c")
    try:
        for js in (a, c):
            js.create("ORDERS", subjects=["orders.>"], storage="file")
        for i in range(3):
            a.pub_ok(f"orders.{i}", f"a{i}")
        c.pub_ok("orders.x", "c0")
        assert a.api("STREAM.INFO.ORDERS")["state"]["messages"] == 3
        assert c.api("STREAM.INFO.ORDERS")["state"]["messages"] == 1
        got = a.api("STREAM.MSG.GET.ORDERS", {"seq": 1})["message"]
        assert got["subject"] == "orders.0"
        got = c.api("STREAM.MSG.GET.ORDERS", {"seq": 1})["message"]
        assert got["subject"] == "orders.x"
        out = a.api("CONSUMER.CREATE.ORDERS.D", {"stream_name": "ORDERS",
                                                 "config": {"durable_name": "D"}})
        assert out["num_pending"] == 3
        assert c.api("CONSUMER.NAMES.ORDERS")["consumers"] == []
        info_a, info_c = a.api("INFO"), c.api("INFO")
        assert (info_a["streams"], info_a["consumers"]) == (1, 1)
        assert (info_c["streams"], info_c["consumers"]) == (1, 0)
        assert info_a["limits"]["max_memory"] == -1
        assert info_c["limits"] == {
            "max_memory": 1000000, "max_storage": 1000000, "max_streams": 2,
            "max_consumers": 3, "max_ack_pending": -1, "memory_max_stream_bytes": -1,
            "storage_max_stream_bytes": -1, "max_bytes_required": False}
        assert info_a["storage"] > info_c["storage"] > 0
        assert a.api("STREAM.NAMES")["streams"] == ["ORDERS"]
        a.api("STREAM.DELETE.ORDERS")
        assert c.api("STREAM.INFO.ORDERS")["state"]["messages"] == 1
    finally:
        a.close()
        c.close()


def test_js_accounts_limits_of_an_account(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """C's ``max_streams``, ``max_consumers`` and ``max_mem`` are enforced with nats-server's
    errors; A (no limits) is not bound by them."""
    srv = start(spawn, tmp_path / "sd")
    a, c = login(srv, "a"), login(srv, "c")
    try:
        c.create("S1", subjects=["s1"], storage="memory")
        c.create("S2", subjects=["s2"], storage="memory")
        third = c.api("STREAM.CREATE.S3", {"name": "S3", "subjects": ["s3"], "storage": "memory"})
        assert third["error"] == {"code": 400, "err_code": 10027,
                                  "description": "maximum number of streams reached"}
        for n in ("S1", "S2", "S3"):
            a.create(n, subjects=[n.lower()], storage="memory")
        for i in range(3):
            out = c.api(f"CONSUMER.CREATE.S1.D{i}", {"stream_name": "S1",
                                                     "config": {"durable_name": f"D{i}"}})
            assert "error" not in out, out
        out = c.api("CONSUMER.CREATE.S1.D9", {"stream_name": "S1",
                                              "config": {"durable_name": "D9"}})
        assert out["error"]["err_code"] == 10026
        big = c.api("STREAM.UPDATE.S2", {"name": "S2", "subjects": ["s2"], "storage": "memory",
                                          "max_bytes": 2_000_000})
        assert big["error"]["err_code"] == 10028
        c.pub_ok("s2", "x" * 600_000)
        full = json.loads(c.request("s2", "y" * 600_000).data)
        assert full["error"]["err_code"] == 10002, full
        assert c.api("STREAM.INFO.S2")["state"]["messages"] == 1
    finally:
        a.close()
        c.close()


def test_js_accounts_files_and_restart(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """File streams go to ``<store_dir>/jetstream/<account>/streams/<name>`` and come back in
    their own account, with their messages and consumers, after a restart."""
    store = tmp_path / "sd"
    srv = start(spawn, store)
    a, c = login(srv, "a"), login(srv, "c")
    a.create("KEEP", subjects=["keep.>"], storage="file")
    c.create("KEEP", subjects=["keep.>"], storage="file")
    c.create("ONLYC", subjects=["only.>"], storage="file")
    for i in range(2):
        a.pub_ok(f"keep.{i}", f"a{i}")
    c.pub_ok("keep.c", "c")
    a.api("CONSUMER.CREATE.KEEP.D", {"stream_name": "KEEP", "config": {"durable_name": "D"}})
    a.close()
    c.close()
    srv.stop()
    root = store / "jetstream"
    assert (root / "A" / "streams" / "KEEP").is_dir()
    assert sorted(p.name for p in (root / "C" / "streams").iterdir()) == ["KEEP", "ONLYC"]
    assert not (root / "B").exists() and not (root / "$G").exists()

    srv = start(spawn, store)
    a, c = login(srv, "a"), login(srv, "c")
    try:
        assert a.api("STREAM.INFO.KEEP")["state"]["messages"] == 2
        assert a.api("CONSUMER.INFO.KEEP.D")["num_pending"] == 2
        assert c.api("STREAM.INFO.KEEP")["state"]["messages"] == 1
        assert a.api("STREAM.NAMES")["streams"] == ["KEEP"]
        assert sorted(c.api("STREAM.NAMES")["streams"]) == ["KEEP", "ONLYC"]
    finally:
        a.close()
        c.close()


def test_js_accounts_monitoring(target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    """``/jsz`` sums every account and details each (its limits as reservations),
    ``/varz`` counts the JetStream accounts, ``/healthz`` finds an account by its store
    directory and ``/accountz`` says which accounts have JetStream."""
    http = free_port()
    srv = start(spawn, tmp_path / "sd", extra="max_mem: 10M", http=http)
    a, c = login(srv, "a"), login(srv, "c")
    try:
        a.create("SA", subjects=["a.>"], storage="memory", max_bytes=1000)
        c.create("SC", subjects=["c.>"], storage="file", max_bytes=1000)
        a.pub_ok("a.1", "hello")
        c.pub_ok("c.1", "hello")
        _, jsz = get(http, "/jsz")
        assert (jsz["accounts"], jsz["total"], jsz["streams"], jsz["messages"]) == (2, 2, 2, 2)
        assert (jsz["reserved_memory"], jsz["reserved_storage"]) == (1000, 1000)
        assert jsz["api"]["total"] == 2  # the two stream creates
        _, jsz = get(http, "/jsz?accounts=true")
        details = {d["name"]: d for d in jsz["account_details"]}
        assert set(details) == {"A", "C"}
        assert details["A"]["reserved_memory"] == U64_MAX
        assert (details["C"]["reserved_memory"], details["C"]["reserved_storage"]) == \
            (1000000, 1000000)
        assert "stream_detail" not in details["A"]
        _, jsz = get(http, "/jsz?acc=C&streams=true")
        assert [d["name"] for d in jsz["account_details"]] == ["C"]
        assert [s["name"] for s in jsz["account_details"][0]["stream_detail"]] == ["SC"]
        _, varz = get(http, "/varz")
        assert varz["jetstream"]["stats"]["accounts"] == 2
        assert get(http, "/healthz?account=C&stream=SC") == (200, {"status": "ok"})
        code, body = get(http, "/healthz?account=A")  # memory streams only: no directory
        assert (code, body) == (404, {"status": "unavailable",
                                      "error": 'JetStream account "A" not found'})
        code, body = get(http, "/healthz?account=C&stream=NOPE")
        assert (code, body["error"]) == (404, 'JetStream stream "NOPE" not found on account "C"')
        _, acc = get(http, "/accountz?acc=A")
        assert acc["account_detail"]["jetstream_enabled"] is True
        _, acc = get(http, "/accountz?acc=B")
        assert acc["account_detail"]["jetstream_enabled"] is False
    finally:
        a.close()
        c.close()


IMPORTED = """
jetstream {}
accounts {
  A: { jetstream: enabled, users: [ {user: a, password: a} ],
       exports: [ {service: "$JS.API.>", response_type: stream}, {service: "$JS.ACK.>"},
                  {service: "orders.>"} ] }
  B: { users: [ {user: b, password: b} ],
       imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "JSA.API.>"},
                  {service: {account: A, subject: "$JS.ACK.>"}},
                  {service: {account: A, subject: "orders.>"}} ] }
}
"""


def test_js_accounts_api_through_an_import(target: str, spawn: SpawnFn) -> None:
    """B uses A's JetStream through imports (the pattern of a shared JetStream account): the
    API under B's prefix, publishes with their acks, a pull whose messages keep their stored
    subject on the way back, and acks; the stream and its consumer live in A."""
    srv = spawn(config=IMPORTED)
    b = login(srv, "b")
    a = login(srv, "a")
    try:
        created = json.loads(b.request("JSA.API.STREAM.CREATE.ORDERS", json.dumps(
            {"name": "ORDERS", "subjects": ["orders.>"], "storage": "memory"})).data)
        assert created["config"]["name"] == "ORDERS", created
        for i in range(3):
            ack = json.loads(b.request(f"orders.{i}", f"o{i}").data)
            assert ack == {"stream": "ORDERS", "seq": i + 1}
        assert a.api("STREAM.INFO.ORDERS")["state"]["messages"] == 3
        consumer = json.loads(b.request("JSA.API.CONSUMER.CREATE.ORDERS.D", json.dumps(
            {"stream_name": "ORDERS", "config": {"durable_name": "D",
                                                 "ack_policy": "explicit"}})).data)
        assert consumer["name"] == "D", consumer
        b.send("JSA.API.CONSUMER.MSG.NEXT.ORDERS.D", {"batch": 3, "expires": 2_000_000_000},
               reply=b.new_reply())
        # delivered to the request's reply subject, under the subject each was stored with
        got = [b.next_msg(f"orders.{i}") for i in range(3)]
        assert [(m.subject, m.data) for m in got] == [(f"orders.{i}", f"o{i}".encode())
                                                      for i in range(3)]
        assert got[0].reply.startswith("$JS.ACK.ORDERS.D.1.1.1.")
        assert b.request(got[0].reply, b"+ACK").data == b""  # an ack with a reply is confirmed
        info = wait_for(lambda: (lambda i: i if i["num_ack_pending"] == 2 else None)(
            a.api("CONSUMER.INFO.ORDERS.D")))
        assert info["ack_floor"]["stream_seq"] == 1
        # a filter subject in the request subject keeps its ">" through the import's mapping
        filtered = json.loads(b.request("JSA.API.CONSUMER.CREATE.ORDERS.F.orders.>", json.dumps(
            {"stream_name": "ORDERS", "config": {"name": "F", "filter_subject": "orders.>"}}
        )).data)
        assert filtered["config"]["filter_subject"] == "orders.>", filtered
        assert json.loads(b.request("$JS.API.INFO", b"").data)["error"] == NOT_ENABLED
    finally:
        a.close()
        b.close()


PUSH_IMPORTED = """
jetstream {}
accounts {
  A: { jetstream: enabled, users: [ {user: a, password: a} ],
       exports: [ {service: "$JS.API.>"}, {stream: "deliver.>"}, {stream: "pfx.>"},
                  {stream: "lit.b3"} ] }
  B: { users: [ {user: b, password: b} ],
       imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "JSA.API.>"},
                  {stream: {account: A, subject: "deliver.>"}},
                  {stream: {account: A, subject: "pfx.>"}, prefix: "fromA"},
                  {stream: {account: A, subject: "lit.b3"}} ] }
}
"""


def test_js_accounts_push_consumer_delivers_through_a_stream_import(target: str,
                                                                    spawn: SpawnFn) -> None:
    """A push consumer of A whose deliver subject B imports as a stream (nats.js's KV watch
    and history from another account): it stays inactive until B subscribes (the shadow
    subscription in A is interest), then delivers to B, the MSG line keeping the stored
    subject through a wildcard, a ``prefix`` and a literal import alike."""
    srv = spawn(config=PUSH_IMPORTED)
    b = login(srv, "b")
    a = login(srv, "a")
    try:
        created = json.loads(b.request("JSA.API.STREAM.CREATE.ORDERS", json.dumps(
            {"name": "ORDERS", "subjects": ["orders.>"], "storage": "memory"})).data)
        assert created["config"]["name"] == "ORDERS", created
        for i in range(2):
            a.pub_ok(f"orders.{i}", f"o{i}")
        for name, dsubj in (("P", "deliver.b1"), ("Q", "pfx.b2"), ("R", "lit.b3")):
            consumer = json.loads(b.request(f"JSA.API.CONSUMER.CREATE.ORDERS.{name}", json.dumps(
                {"stream_name": "ORDERS", "config": {"name": name, "deliver_subject": dsubj,
                                                     "ack_policy": "none"}})).data)
            assert consumer["config"]["deliver_subject"] == dsubj, consumer
            assert "push_bound" not in consumer, consumer  # nobody listens yet
        b.raw.send(b"SUB deliver.b1 7\r\nSUB fromA.pfx.b2 8\r\nSUB lit.b3 9\r\n")
        got = sorted((m.sid, m.subject, m.data, m.reply.split(".")[3:7])
                     for m in (b.next_msg(f"orders.{i % 2}") for i in range(6)))
        # each subscriber (sid) gets its consumer's two messages under their stored subjects
        assert got == [(sid, f"orders.{i}", f"o{i}".encode(), [name, "1", str(i + 1), str(i + 1)])
                       for sid, name in (("7", "P"), ("8", "Q"), ("9", "R")) for i in range(2)]
        for name in ("P", "Q", "R"):
            info = wait_for(lambda: (lambda i: i if i.get("push_bound") else None)(
                a.api(f"CONSUMER.INFO.ORDERS.{name}")))
            assert info["delivered"]["stream_seq"] == 2, info
    finally:
        a.close()
        b.close()


def test_js_accounts_work_queue_mirror_names_its_account(target: str, spawn: SpawnFn,
                                                         tmp_path: Path) -> None:
    """A mirror of a work-queue stream in account C: the durable sourcing consumer on the
    origin hashes C into its name and names C in its metadata."""
    srv = start(spawn, tmp_path / "sd")
    c = login(srv, "c")
    try:
        c.create("WQ", subjects=["wq.>"], retention="workqueue", storage="memory")
        out = c.api("STREAM.CREATE.M", {"name": "M", "mirror": {"name": "WQ"},
                                        "storage": "memory"})
        assert "error" not in out, out
        listed = wait_for(lambda: c.api("CONSUMER.LIST.WQ")["consumers"], timeout=10)
        assert listed[0]["name"] == "JS_MIRROR_2LaIgioN"  # the hash of "M C"
        meta = listed[0]["config"]["metadata"]
        assert (meta["_nats.mirror.acc"], meta["_nats.mirror.stream"]) == ("C", "M")
    finally:
        c.close()


EXTERNAL = """
jetstream {}
accounts {
  A: { jetstream: enabled, users: [ {user: a, password: a} ],
       exports: [ {service: "$JS.API.>"}, {stream: "deliver.>"} ] }
  B: { jetstream: enabled, users: [ {user: b, password: b} ],
       imports: [ {service: {account: A, subject: "$JS.API.>"}, to: "$JS.A.API.>"},
                  {stream: {account: A, subject: "deliver.>"}} ] }
}
"""


def test_js_accounts_external_mirror_and_source(target: str, spawn: SpawnFn) -> None:
    """B sources and mirrors A's stream with ``external`` (A's API imported under
    ``$JS.A.API``, deliveries imported from ``deliver.>``): every message arrives, the source
    header's index name hashes the API prefix, stream info echoes ``external``; a missing
    origin there is 404/10059 in the source's ``error``."""
    srv = spawn(config=EXTERNAL, jetstream=True)
    a, b = login(srv, "a"), login(srv, "b")
    try:
        a.create("ORIG", subjects=["o.>"], storage="memory")
        for i in range(3):
            a.pub_ok(f"o.{i}", f"m{i}")
        ext = {"api": "$JS.A.API", "deliver": "deliver.b"}
        out = b.api("STREAM.CREATE.AGG", {"name": "AGG", "storage": "memory",
                                          "sources": [{"name": "ORIG", "external": ext}]})
        assert out["config"]["sources"] == [{"name": "ORIG", "external": ext}], out
        out = b.api("STREAM.CREATE.MIR", {"name": "MIR", "storage": "memory", "mirror": {
            "name": "ORIG", "external": {"api": "$JS.A.API", "deliver": "deliver.m"}}})
        assert "error" not in out, out
        for name in ("AGG", "MIR"):
            wait_for(lambda: b.api(f"STREAM.INFO.{name}")["state"]["messages"] == 3,
                     timeout=10)
        info = b.api("STREAM.INFO.AGG")
        src = info["sources"][0]
        assert (src["name"], src["external"], src["lag"], src["seq"]) == ("ORIG", ext, 0, 3)
        assert "error" not in src and src["active"] >= 0
        mirror = b.api("STREAM.INFO.MIR")["mirror"]
        assert mirror["external"] == {"api": "$JS.A.API", "deliver": "deliver.m"}
        got = b.api("STREAM.MSG.GET.AGG", {"seq": 1})["message"]
        import base64

        hdr = base64.b64decode(got["hdrs"]).decode()
        assert hdr.startswith("NATS/1.0\r\nNats-Stream-Source: ORIG:z0zeNTHp 1 > > o.0 "), hdr
        a.pub_ok("o.9", "late")
        wait_for(lambda: b.api("STREAM.INFO.MIR")["state"]["last_seq"] == 4, timeout=10)
        out = b.api("STREAM.CREATE.NOPE", {"name": "NOPE", "storage": "memory", "sources": [
            {"name": "MISSING", "external": ext}]})
        assert "error" not in out, out
        nope = wait_for(lambda: b.api("STREAM.INFO.NOPE")["sources"][0].get("error"),
                        timeout=10)
        assert nope == {"code": 404, "err_code": 10059, "description": "stream not found"}
    finally:
        a.close()
        b.close()


def test_js_accounts_with_a_domain(target: str, spawn: SpawnFn) -> None:
    """With ``jetstream { domain: hub }`` every account maps ``$JS.hub.API.`` onto its own
    API: A's JetStream answers there (pub acks name the domain), B's 503/10039 there too."""
    conf = "jetstream { domain: hub }\n" + ACCOUNTS
    srv = spawn(config=conf, jetstream=True)
    a, b = login(srv, "a"), login(srv, "b")
    try:
        info = json.loads(a.request("$JS.hub.API.INFO", b"").data)
        assert info["domain"] == "hub" and info["streams"] == 0
        names = json.loads(b.request("$JS.hub.API.STREAM.NAMES", b"").data)
        assert names["error"] == NOT_ENABLED
        out = json.loads(a.request("$JS.hub.API.STREAM.CREATE.S", json.dumps(
            {"name": "S", "subjects": ["s"], "storage": "memory"})).data)
        assert out["config"]["name"] == "S", out
        assert json.loads(a.request("s", "x").data) == {"stream": "S", "domain": "hub", "seq": 1}
    finally:
        a.close()
        b.close()


def test_js_accounts_system_account_may_not_have_jetstream(target: str, tmp_path: Path
                                                           ) -> None:
    """JetStream enabled on the ``system_account`` stops the server at startup."""
    stderr = refused_start(target, tmp_path, f'jetstream {{ store_dir: "{tmp_path / "sd"}" }}\n'
                      "accounts { SYS: { jetstream: enabled, users: [ {user: s} ] } }\n"
                      "system_account: SYS\n")
    assert "[FTL] Not allowed to enable JetStream on the system account" in stderr, stderr


@pytest.mark.parametrize("a,b,error", [
    ("max_mem: 10M", "max_mem: 1K", "insufficient memory resources available (10028)"),
    ("max_mem: 500K", "max_mem: 600K", "insufficient memory resources available (10028)"),
    ("max_file: 2M", "max_mem: 1K", "insufficient storage resources available (10047)"),
    ("max_mem: 400K", "max_mem: 600K", None),
], ids=["one-too-big", "together-too-big", "storage", "fits"])
def test_js_accounts_limits_must_fit_the_server(target: str, spawn: SpawnFn, tmp_path: Path,
                                                a: str, b: str, error: str | None) -> None:
    """The accounts' JetStream limits together must fit the server's ``max_mem`` /
    ``max_file``, or the server does not start (``Can't start JetStream``)."""
    text = (f'jetstream {{\n store_dir: "{tmp_path / "sd"}"\n max_mem: 1M\n max_file: 1M\n}}\n'
            f"accounts {{\n  A: {{ jetstream: {{ {a} }}, users: [ {{user: a, password: a}} ] }}\n"
            f"  B: {{ jetstream: {{ {b} }}, users: [ {{user: b, password: b}} ] }}\n}}\n")
    if error is None:
        srv = spawn(config=text)
        js = login(srv, "a")
        assert js.api("INFO")["limits"]["max_memory"] == 400000
        js.close()
        return
    stderr = refused_start(target, tmp_path, text)
    assert ("[FTL] Can't start JetStream: Error enabling jetstream on configured accounts: "
            + error) in stderr, stderr


SYSTEM_ONLY = """
authorization { users: [ {user: app, password: app} ] }
accounts { SYS: { users: [ {user: sys, password: sys} ] } }
system_account: SYS
no_auth_user: app
"""


def test_js_accounts_only_a_system_account_keeps_jetstream_global(target: str, spawn: SpawnFn,
                                                                  tmp_path: Path) -> None:
    """An accounts block that defines only the system account leaves the global account
    alone (nats-server's ``globalAccountOnly``): its users have JetStream, the system account
    answers 503/10039."""
    conf = f'jetstream {{ store_dir: "{tmp_path}" }}\n' + SYSTEM_ONLY
    srv = spawn(config=conf)
    app = JsClient.connect(srv)
    sys = login(srv, "sys")
    try:
        info = app.api("INFO")
        assert "error" not in info, info
        assert info["streams"] == 0
        created = app.api("STREAM.CREATE.G", {"name": "G", "subjects": ["g.>"]})
        assert "error" not in created, created
        assert sys.api("INFO")["error"] == NOT_ENABLED
    finally:
        app.close()
        sys.close()
