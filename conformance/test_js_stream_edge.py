"""Edge cases of streams where an implementation is easy to get subtly wrong: check order on
publish, what survives purge/delete, implicit changes made by sealing, pedantic mode, API
counters."""
from __future__ import annotations

from conformance.helpers import SpawnFn
from conformance.jshelpers import (
    JsClient,
    b64,
    default_config,
    empty_state,
    error_reply,
    file_bytes,
    header_block,
)

H = header_block


def test_js_edge_purge_new_empty_stream(target: str, js: JsClient, stream_name: str) -> None:
    """Purging a never-used stream moves first_seq from 0 to 1 (last_seq + 1)."""
    js.create(stream_name)
    assert js.purge(stream_name)["purged"] == 0
    assert js.state(stream_name) == empty_state(first_seq=1, last_seq=0)


def test_js_edge_purge_first_seq_stream(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name, first_seq=10)
    assert js.purge(stream_name)["purged"] == 0
    assert js.state(stream_name) == empty_state(first_seq=10, last_seq=9)
    assert js.pub_ok(stream_name) == 10


def test_js_edge_purge_filter_and_seq(target: str, js: JsClient, stream_name: str) -> None:
    """``filter`` + ``seq``: only matching messages below seq go."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    for s in "abab":
        js.pub_ok(f"{p}.{s}")
    assert js.purge(stream_name, {"filter": f"{p}.a", "seq": 3})["purged"] == 1
    st = js.info(stream_name, {"subjects_filter": ">"})["state"]
    assert st["subjects"] == {f"{p}.a": 1, f"{p}.b": 2}
    assert (st["messages"], st["first_seq"]) == (3, 2)


def test_js_edge_subjects_filter_offset_past_end(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """An offset past the matching subjects: total/limit still set, no ``subjects`` map."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    out = js.info(stream_name, {"subjects_filter": ">", "offset": 10})
    assert (out["total"], out["offset"], out["limit"]) == (2, 10, 100000)
    assert "subjects" not in out["state"]


def test_js_edge_publish_status_text_stripped(target: str, js: JsClient,
                                              stream_name: str) -> None:
    """A status code/text on the published ``NATS/1.0`` line is dropped before storing (and
    the bytes are accounted for the stored block)."""
    js.create(stream_name)
    js.pub_ok(stream_name, b"z", b"NATS/1.0 503 Oops\r\nX: 1\r\n\r\n")
    stored = b"NATS/1.0\r\nX: 1\r\n\r\n"
    assert js.msg_get(stream_name, {"seq": 1})["message"]["hdrs"] == b64(stored)
    assert js.state(stream_name)["bytes"] == file_bytes(stream_name, b"z", stored)


def test_js_edge_dedup_survives_delete_and_purge(target: str, js: JsClient,
                                                 stream_name: str) -> None:
    """The dedup table is independent of the stored messages."""
    js.create(stream_name)
    hdr = H(("Nats-Msg-Id", "q"))
    js.pub_ok(stream_name, b"", hdr)
    js.msg_delete(stream_name, {"seq": 1})
    assert js.pub(stream_name, b"", hdr) == {"stream": stream_name, "seq": 1, "duplicate": True}
    js.purge(stream_name)
    assert js.pub(stream_name, b"", hdr) == {"stream": stream_name, "seq": 1, "duplicate": True}
    assert js.state(stream_name)["last_seq"] == 1


def test_js_edge_expectations_checked_before_dedup(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    """A duplicate id with a failing expectation header gets the error, not the duplicate ack;
    a duplicate does not change what ``Nats-Expected-Last-Msg-Id`` compares with."""
    js.create(stream_name)
    js.pub_ok(stream_name, b"", H(("Nats-Msg-Id", "1")))
    js.pub_ok(stream_name, b"", H(("Nats-Msg-Id", "2")))
    assert js.pub(stream_name, b"", H(("Nats-Msg-Id", "1")))["duplicate"] is True
    assert js.pub(stream_name, b"", H(("Nats-Expected-Last-Msg-Id", "1"))) == {
        "error": {"code": 400, "err_code": 10070, "description": "wrong last msg ID: 2"},
        "stream": stream_name, "seq": 0}
    assert js.pub(stream_name, b"", H(("Nats-Msg-Id", "2"),
                                      ("Nats-Expected-Last-Sequence", "99")))["error"] == {
        "code": 400, "err_code": 10071, "description": "wrong last sequence: 2"}
    assert js.pub(stream_name, b"", H(("Nats-Msg-Id", "2"),
                                      ("Nats-Expected-Stream", "ZZ")))["error"]["err_code"] == 10060


def test_js_edge_discard_new_replaces_at_subject_limit(target: str, js: JsClient,
                                                       stream_name: str) -> None:
    """With discard new and a full stream, a message whose subject is at its per-subject limit
    is still accepted (it replaces that subject's oldest); a new subject is refused."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], max_msgs=2, max_msgs_per_subject=1,
              discard="new")
    js.pub_ok(f"{p}.x")
    js.pub_ok(f"{p}.y")
    assert js.pub_ok(f"{p}.x") == 3
    assert js.pub(f"{p}.z")["error"] == {"code": 503, "err_code": 10077,
                                         "description": "maximum messages exceeded"}
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"], st["num_subjects"]) == (2, 2, 3, 2)


def test_js_edge_update_lower_limit_truncates(target: str, js: JsClient, stream_name: str) -> None:
    """Lowering max_msgs applies at once; the update reply already shows the new state."""
    js.create(stream_name)
    for _ in range(5):
        js.pub_ok(stream_name, b"x")
    st = js.update(stream_name, max_msgs=2)["state"]
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (2, 4, 5)
    assert st["bytes"] == 2 * file_bytes(stream_name, b"x")


def test_js_edge_seal_rewrites_config(target: str, js: JsClient, stream_name: str) -> None:
    """Sealing forces max_age 0, discard new, deny_delete/deny_purge on and rollups off."""
    js.create(stream_name, max_age=3_600_000_000_000, allow_rollup_hdrs=True)
    cfg = js.update(stream_name, sealed=True, max_age=3_600_000_000_000,
                    allow_rollup_hdrs=True)["config"]
    assert cfg == default_config(stream_name, max_age=0, discard="new", sealed=True,
                                 deny_delete=True, deny_purge=True, allow_rollup_hdrs=False)


def test_js_edge_pedantic_create(target: str, js: JsClient, stream_name: str) -> None:
    """``pedantic: true`` turns silent fix-ups into 400/10157; without it the same config is
    accepted and normalised."""
    body = {"name": stream_name, "max_msgs": -5, "pedantic": True}
    assert js.api(f"STREAM.CREATE.{stream_name}", body) == error_reply(
        "stream_create_response", 400, 10157, "pedantic mode: max_msgs must be set to -1")
    body = {"name": stream_name, "subject_delete_marker_ttl": 2_000_000_000, "pedantic": True}
    assert js.api(f"STREAM.CREATE.{stream_name}", body) == error_reply(
        "stream_create_response", 500, 10052,
        "subject delete marker cannot be set if message TTLs are disabled")
    assert js.create(stream_name, max_msgs=-5)["config"]["max_msgs"] == -1


def test_js_edge_msg_get_success_not_counted(target: str, spawn: SpawnFn) -> None:
    """A successful STREAM.MSG.GET is answered outside the API accounting: it does not bump
    ``api.total``; a failed one counts as a request and an error."""
    js = JsClient.connect(spawn(jetstream=True))
    try:
        js.create("A")
        js.pub_ok("A", b"x")
        assert js.account_info()["api"] == {"level": 5, "total": 1, "errors": 0}
        assert "message" in js.msg_get("A", {"seq": 1})
        assert "error" in js.msg_get("A", {"seq": 9})
        assert js.account_info()["api"] == {"level": 5, "total": 3, "errors": 1}
    finally:
        js.close()
