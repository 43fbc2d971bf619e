"""STREAM.INFO, STREAM.DELETE, STREAM.PURGE, STREAM.NAMES and STREAM.LIST."""
from __future__ import annotations

from conformance.helpers import SpawnFn
from conformance.jshelpers import (
    TIMESTAMP,
    TYPE_PREFIX,
    ZERO_TIME,
    JsClient,
    default_config,
    error_reply,
    file_bytes,
    unique_name,
)

INFO = "stream_info_response"
PURGE = "stream_purge_response"


def fill(js: JsClient, name: str, counts: dict[str, int]) -> None:
    """Publish round-robin over the subjects until each has its count."""
    left = dict(counts)
    while any(left.values()):
        for subj in list(left):
            if left[subj]:
                js.pub_ok(subj, b"x")
                left[subj] -= 1


# ---------------------------------------------------------------------- INFO


def test_js_info_shape(target: str, js: JsClient, stream_name: str) -> None:
    """Info: paging fields always present, config with dynamic metadata, state, cluster leader =
    server name, ts; key order as the server emits it."""
    p = stream_name.lower()
    created = js.create(stream_name, subjects=[f"{p}.*"])
    js.pub_ok(f"{p}.a", b"one")
    js.pub_ok(f"{p}.b", b"two")
    out = js.info(stream_name)
    assert list(out) == ["type", "total", "offset", "limit", "config", "created", "state",
                         "cluster", "ts"]
    assert (out["type"], out["total"], out["offset"], out["limit"]) == (TYPE_PREFIX + INFO, 0, 0, 0)
    assert out["config"] == default_config(stream_name, [f"{p}.*"])
    assert out["created"] == created["created"]
    st = out["state"]
    assert list(st) == ["messages", "bytes", "first_seq", "first_ts", "last_seq", "last_ts",
                        "num_subjects", "consumer_count"]
    assert st["messages"] == 2
    assert st["bytes"] == file_bytes(f"{p}.a", b"one") + file_bytes(f"{p}.b", b"two")
    assert (st["first_seq"], st["last_seq"], st["num_subjects"], st["consumer_count"]) == (1, 2, 2, 0)
    assert TIMESTAMP.match(st["first_ts"]) and TIMESTAMP.match(st["last_ts"])
    assert st["first_ts"] <= st["last_ts"]
    assert out["cluster"] == {"leader": js.raw.info["server_name"]}


def test_js_info_not_found_keeps_paging_fields(target: str, js: JsClient) -> None:
    m = js.api_msg(f"STREAM.INFO.{unique_name()}")
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_info_response","error":'
                      b'{"code":404,"err_code":10059,"description":"stream not found"},'
                      b'"total":0,"offset":0,"limit":0}')


def test_js_info_subjects_filter(target: str, js: JsClient, stream_name: str) -> None:
    """``subjects_filter`` adds ``state.subjects`` with per-subject counts; total = matching
    subjects, limit 100000, offset echoed."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    fill(js, stream_name, {f"{p}.m.0": 4, f"{p}.m.1": 2, f"{p}.m.2": 2, f"{p}.z": 1})
    out = js.info(stream_name, {"subjects_filter": f"{p}.m.*"})
    assert (out["total"], out["offset"], out["limit"]) == (3, 0, 100000)
    assert out["state"]["subjects"] == {f"{p}.m.0": 4, f"{p}.m.1": 2, f"{p}.m.2": 2}
    assert out["state"]["num_subjects"] == 4
    keys = list(out["state"])
    assert keys.index("subjects") == keys.index("num_subjects") + 1
    everything = js.info(stream_name, {"subjects_filter": ">"})
    assert everything["total"] == 4 and len(everything["state"]["subjects"]) == 4
    exact = js.info(stream_name, {"subjects_filter": f"{p}.z"})
    assert exact["state"]["subjects"] == {f"{p}.z": 1} and exact["total"] == 1


def test_js_info_subjects_filter_no_match(target: str, js: JsClient, stream_name: str) -> None:
    """A filter matching nothing: no ``subjects`` map, paging fields stay zero."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    out = js.info(stream_name, {"subjects_filter": f"{p}.nothing"})
    assert (out["total"], out["offset"], out["limit"]) == (0, 0, 0)
    assert "subjects" not in out["state"]


def test_js_info_subjects_filter_offset(target: str, js: JsClient, stream_name: str) -> None:
    """With an offset the map holds the sorted window after it."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    fill(js, stream_name, {f"{p}.c": 1, f"{p}.a": 1, f"{p}.b": 2, f"{p}.d": 1})
    out = js.info(stream_name, {"subjects_filter": ">", "offset": 2})
    assert (out["total"], out["offset"], out["limit"]) == (4, 2, 100000)
    assert out["state"]["subjects"] == {f"{p}.c": 1, f"{p}.d": 1}


def test_js_info_deleted_details(target: str, js: JsClient, stream_name: str) -> None:
    """Interior gaps are counted in ``num_deleted``; listed in ``deleted`` only on request."""
    js.create(stream_name)
    for _ in range(6):
        js.pub_ok(stream_name, b"x")
    for seq in (2, 4, 5):
        assert js.msg_delete(stream_name, {"seq": seq})["success"] is True
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"], st["num_deleted"]) == (3, 1, 6, 3)
    assert "deleted" not in st
    detailed = js.info(stream_name, {"deleted_details": True})["state"]
    assert detailed["deleted"] == [2, 4, 5]
    keys = list(detailed)
    assert keys[keys.index("num_subjects") + 1:] == ["num_deleted", "deleted", "consumer_count"]
    # Deleting the first message moves first_seq; it is not a gap.
    js.msg_delete(stream_name, {"seq": 1})
    st = js.state(stream_name)
    assert (st["first_seq"], st["num_deleted"]) == (3, 2)


def test_js_info_non_json_body_ignored(target: str, js: JsClient, stream_name: str) -> None:
    """A body that does not start with ``{`` is ignored; bad JSON is 400/10025."""
    js.create(stream_name)
    assert "error" not in js.info(stream_name, b"garbage")
    out = js.info(stream_name, b'{"subjects_filter":1}')
    assert out["error"]["err_code"] == 10025 and out["error"]["code"] == 400
    out = js.info(stream_name, {"bogus": True})
    assert out == error_reply(INFO, 400, 10025, 'invalid JSON: json: unknown field "bogus"',
                              total=0, offset=0, limit=0)


# ---------------------------------------------------------------------- DELETE


def test_js_delete(target: str, js: JsClient, stream_name: str) -> None:
    """Delete: exact success reply; afterwards 404/10059 and the subject is free again."""
    js.create(stream_name)
    js.pub_ok(stream_name, b"x")
    m = js.api_msg(f"STREAM.DELETE.{stream_name}")
    assert m.data == b'{"type":"io.nats.jetstream.api.v1.stream_delete_response","success":true}'
    assert js.delete(stream_name) == error_reply(
        "stream_delete_response", 404, 10059, "stream not found")
    assert js.publish(stream_name, b"x").status == "503"


def test_js_delete_requires_empty_body(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name)
    for body in (b'{"a":1}', b"garbage"):
        assert js.api(f"STREAM.DELETE.{stream_name}", body) == error_reply(
            "stream_delete_response", 400, 10038, "expected an empty request payload")
    assert js.api(f"STREAM.DELETE.{stream_name}", b"{}")["success"] is True


# ---------------------------------------------------------------------- PURGE


def test_js_purge_all(target: str, js: JsClient, stream_name: str) -> None:
    """Purge everything: ``purged`` count; first_seq moves to last_seq+1, first_ts zero,
    last_ts kept; the next publish continues the sequence."""
    js.create(stream_name)
    for _ in range(5):
        js.pub_ok(stream_name, b"x")
    last_ts = js.state(stream_name)["last_ts"]
    m = js.api_msg(f"STREAM.PURGE.{stream_name}")
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_purge_response",'
                      b'"success":true,"purged":5}')
    st = js.state(stream_name)
    assert st == {"messages": 0, "bytes": 0, "first_seq": 6, "first_ts": ZERO_TIME,
                  "last_seq": 5, "last_ts": last_ts, "consumer_count": 0}
    assert js.pub_ok(stream_name, b"y") == 6


def test_js_purge_filter(target: str, js: JsClient, stream_name: str) -> None:
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    fill(js, stream_name, {f"{p}.a.1": 3, f"{p}.a.2": 2, f"{p}.b": 2})
    out = js.purge(stream_name, {"filter": f"{p}.a.*"})
    assert out == {"type": TYPE_PREFIX + PURGE, "success": True, "purged": 5}
    st = js.state(stream_name)
    assert (st["messages"], st["num_subjects"]) == (2, 1)


def test_js_purge_seq(target: str, js: JsClient, stream_name: str) -> None:
    """``seq: N`` purges messages below N (``seq: 1`` purges nothing)."""
    js.create(stream_name)
    for _ in range(6):
        js.pub_ok(stream_name, b"x")
    assert js.purge(stream_name, {"seq": 1})["purged"] == 0
    assert js.purge(stream_name, {"seq": 4})["purged"] == 3
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (3, 4, 6)


def test_js_purge_keep(target: str, js: JsClient, stream_name: str) -> None:
    """``keep: K`` keeps the newest K (per filter when given)."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    fill(js, stream_name, {f"{p}.a": 4, f"{p}.b": 3})
    assert js.purge(stream_name, {"filter": f"{p}.a", "keep": 1})["purged"] == 3
    assert js.purge(stream_name, {"keep": 2})["purged"] == 2
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 6, 7)


def test_js_purge_seq_and_keep(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name)
    assert js.purge(stream_name, {"seq": 2, "keep": 1}) == error_reply(
        PURGE, 400, 10003, "bad request", purged=0)


def test_js_purge_errors(target: str, js: JsClient, stream_name: str) -> None:
    """deny_purge 500/10110; missing stream 404/10059; unknown field 10025 — all with purged 0."""
    js.create(stream_name, deny_purge=True)
    js.pub_ok(stream_name)
    assert js.purge(stream_name) == error_reply(
        PURGE, 500, 10110, "stream purge not permitted", purged=0)
    assert js.purge(unique_name()) == error_reply(
        PURGE, 404, 10059, "stream not found", purged=0)
    assert js.purge(stream_name, {"subject": "x"}) == error_reply(
        PURGE, 400, 10025, 'invalid JSON: json: unknown field "subject"', purged=0)
    assert js.state(stream_name)["messages"] == 1


# ---------------------------------------------------------------------- NAMES / LIST


def test_js_names_subject_filter(target: str, js: JsClient) -> None:
    """NAMES with a subject filter returns the streams whose subjects collide with it, sorted;
    no match gives ``"streams":null``."""
    base = unique_name()
    a, b = base + "B", base + "A"
    p = base.lower()
    js.create(a, subjects=[f"{p}.x.*"])
    js.create(b, subjects=[f"{p}.y"])
    out = js.api("STREAM.NAMES", {"subject": f"{p}.>"})
    assert out == {"type": TYPE_PREFIX + "stream_names_response", "total": 2, "offset": 0,
                   "limit": 1024, "streams": [b, a]}
    assert js.api("STREAM.NAMES", {"subject": f"{p}.x.q"})["streams"] == [a]
    m = js.api_msg("STREAM.NAMES", {"subject": f"{p}.none"})
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_names_response","total":0,'
                      b'"offset":0,"limit":1024,"streams":null}')


def test_js_names_unknown_field(target: str, js: JsClient) -> None:
    assert js.api("STREAM.NAMES", {"filter": "x"}) == error_reply(
        "stream_names_response", 400, 10025, 'invalid JSON: json: unknown field "filter"',
        total=0, offset=0, limit=0, streams=None)


def test_js_names_and_list_paging_fresh_server(target: str, spawn: SpawnFn) -> None:
    """On a private server: empty NAMES is null, empty LIST is ``[]``; offsets page through
    the sorted names."""
    js = JsClient.connect(spawn(jetstream=True))
    try:
        m = js.api_msg("STREAM.NAMES")
        assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_names_response",'
                          b'"total":0,"offset":0,"limit":1024,"streams":null}')
        m = js.api_msg("STREAM.LIST")
        assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_list_response",'
                          b'"total":0,"offset":0,"limit":256,"streams":[]}')
        for name in ("C", "A", "B"):
            js.create(name)
        assert js.api("STREAM.NAMES")["streams"] == ["A", "B", "C"]
        out = js.api("STREAM.NAMES", {"offset": 1})
        assert (out["total"], out["offset"], out["streams"]) == (3, 1, ["B", "C"])
        out = js.api("STREAM.NAMES", {"offset": -4})
        assert (out["offset"], out["streams"]) == (0, ["A", "B", "C"])
        listed = js.api("STREAM.LIST", {"offset": 2})
        assert (listed["total"], listed["offset"], listed["limit"]) == (3, 2, 256)
        assert [s["config"]["name"] for s in listed["streams"]] == ["C"]
    finally:
        js.close()


def test_js_list_entries(target: str, js: JsClient, stream_name: str) -> None:
    """LIST entries: config (metadata only the stored ``_nats.req.level``), created, state, ts —
    no cluster."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    js.pub_ok(f"{p}.a", b"abc")
    out = js.api("STREAM.LIST", {"subject": f"{p}.a"})
    assert (out["type"], out["total"], out["offset"], out["limit"]) == (
        TYPE_PREFIX + "stream_list_response", 1, 0, 256)
    (entry,) = out["streams"]
    assert list(entry) == ["config", "created", "state", "ts"]
    assert entry["config"] == default_config(stream_name, [f"{p}.*"],
                                             metadata={"_nats.req.level": "0"})
    assert entry["state"]["messages"] == 1
    assert entry["state"]["bytes"] == file_bytes(f"{p}.a", b"abc")
