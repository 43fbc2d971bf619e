"""STREAM.MSG.GET and STREAM.MSG.DELETE."""
from __future__ import annotations

import pytest

from conformance.jshelpers import (
    TIMESTAMP,
    TYPE_PREFIX,
    JsClient,
    b64,
    error_reply,
    header_block,
    unique_name,
)

GET = "stream_msg_get_response"
DEL = "stream_msg_delete_response"


@pytest.fixture
def loaded(js: JsClient, stream_name: str) -> tuple[str, str]:
    """A stream ``<name>`` on ``<p>.*`` holding: 1 p.a "one", 2 p.b "two" (X-H: 1 header),
    3 p.a "three", 4 p.c "" (empty payload), 5 p.b "five"."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    js.pub_ok(f"{p}.a", b"one")
    js.pub_ok(f"{p}.b", b"two", header_block(("X-H", "1")))
    js.pub_ok(f"{p}.a", b"three")
    js.pub_ok(f"{p}.c", b"")
    js.pub_ok(f"{p}.b", b"five")
    return stream_name, p


def test_js_msg_get_by_seq(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    """By sequence: subject, seq, base64 ``hdrs`` (full stored block), base64 data, time."""
    name, p = loaded
    out = js.msg_get(name, {"seq": 2})
    assert list(out) == ["type", "message"]
    assert out["type"] == TYPE_PREFIX + GET
    msg = out["message"]
    assert list(msg) == ["subject", "seq", "hdrs", "data", "time"]
    assert msg["subject"] == f"{p}.b" and msg["seq"] == 2
    assert msg["hdrs"] == b64(b"NATS/1.0\r\nX-H: 1\r\n\r\n")
    assert msg["data"] == b64(b"two")
    assert TIMESTAMP.match(msg["time"])


def test_js_msg_get_no_headers_and_empty_data(target: str, js: JsClient,
                                              loaded: tuple[str, str]) -> None:
    """``hdrs`` is omitted without headers, ``data`` when the payload is empty; ``no_hdr``
    drops stored headers."""
    name, p = loaded
    assert list(js.msg_get(name, {"seq": 1})["message"]) == ["subject", "seq", "data", "time"]
    assert list(js.msg_get(name, {"seq": 4})["message"]) == ["subject", "seq", "time"]
    msg = js.msg_get(name, {"seq": 2, "no_hdr": True})["message"]
    assert list(msg) == ["subject", "seq", "data", "time"]


def test_js_msg_get_last_by_subject(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    name, p = loaded
    assert js.msg_get(name, {"last_by_subj": f"{p}.a"})["message"]["seq"] == 3
    assert js.msg_get(name, {"last_by_subj": f"{p}.*"})["message"]["seq"] == 5
    msg = js.msg_get(name, {"last_by_subj": f"{p}.b"})["message"]
    assert (msg["seq"], msg["data"]) == (5, b64(b"five"))


def test_js_msg_get_next_by_subject(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    """``next_by_subj`` finds the first match at or after ``seq`` (default the beginning)."""
    name, p = loaded
    assert js.msg_get(name, {"next_by_subj": f"{p}.b"})["message"]["seq"] == 2
    assert js.msg_get(name, {"next_by_subj": f"{p}.b", "seq": 3})["message"]["seq"] == 5
    assert js.msg_get(name, {"next_by_subj": f"{p}.a", "seq": 3})["message"]["seq"] == 3
    assert js.msg_get(name, {"next_by_subj": f"{p}.a", "seq": 4}) == error_reply(
        GET, 404, 10037, "no message found")


def test_js_msg_get_missing(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    """Missing sequence or subject: exact 404/10037 bytes; missing stream 404/10059."""
    name, p = loaded
    m = js.api_msg(f"STREAM.MSG.GET.{name}", {"seq": 99})
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","error":'
                      b'{"code":404,"err_code":10037,"description":"no message found"}}')
    assert js.msg_get(name, {"last_by_subj": f"{p}.zz"})["error"]["err_code"] == 10037
    assert js.msg_get(unique_name(), {"seq": 1}) == error_reply(
        GET, 404, 10059, "stream not found")


@pytest.mark.parametrize(
    "body",
    [
        None,
        {},
        {"seq": 1, "last_by_subj": "x"},
        {"last_by_subj": "x", "next_by_subj": "x"},
        {"seq": 1, "start_time": "2024-01-01T00:00:00Z"},
        {"seq": 1, "batch": 2},
        {"seq": 1, "max_bytes": 100},
        {"seq": 0},
        {"start_time": "2024-01-01T00:00:00Z", "last_by_subj": "x"},
    ],
    ids=["empty", "nothing", "seq+last", "last+next", "seq+time", "batch", "max_bytes", "seq0",
         "time+last"],
)
def test_js_msg_get_bad_requests(target: str, js: JsClient, loaded: tuple[str, str],
                                 body: dict | None) -> None:
    name, _ = loaded
    assert js.msg_get(name, body) == error_reply(GET, 400, 10003, "bad request")


def test_js_msg_get_deleted_seq(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    name, _ = loaded
    js.msg_delete(name, {"seq": 3})
    assert js.msg_get(name, {"seq": 3})["error"]["err_code"] == 10037


def test_js_msg_delete(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    """Exact success bytes; the gap shows as num_deleted; deleting it again is 400/10043."""
    name, _ = loaded
    m = js.api_msg(f"STREAM.MSG.DELETE.{name}", {"seq": 3})
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response",'
                      b'"success":true}')
    st = js.state(name)
    assert (st["messages"], st["first_seq"], st["last_seq"], st["num_deleted"]) == (4, 1, 5, 1)
    assert js.msg_delete(name, {"seq": 3}) == error_reply(DEL, 400, 10043, "sequence 3 not found")


@pytest.mark.parametrize(
    ("storage", "seq", "expected"),
    [
        ("memory", 6, (400, 10043, "sequence 6 not found")),
        ("memory", 0, (400, 10043, "sequence 0 not found")),
        ("file", 6, (500, 10057, "stream store EOF")),
        ("file", 0, (500, 10057, "no message found")),
    ],
)
def test_js_msg_delete_out_of_range(target: str, js: JsClient, stream_name: str, storage: str,
                                    seq: int, expected: tuple[int, int, str]) -> None:
    """Deleting a sequence outside first..last: the memory store answers 10043 like for a gap,
    the file store reports its own error wrapped as 500/10057."""
    js.create(stream_name, storage=storage)
    for _ in range(5):
        js.pub_ok(stream_name)
    assert js.msg_delete(stream_name, {"seq": seq}) == error_reply(DEL, *expected)
    assert js.state(stream_name)["messages"] == 5


@pytest.mark.parametrize("storage", ["memory", "file"])
@pytest.mark.parametrize("no_erase", [False, True])
def test_js_msg_delete_below_first(target: str, js: JsClient, stream_name: str, storage: str,
                                   no_erase: bool) -> None:
    """Deleting a sequence already gone from the head (below first_seq): the memory store
    answers 10043 as for a gap, the file store has no block holding it: 500/10057 "no message
    found". After a purge of everything every old sequence is below the first."""
    js.create(stream_name, storage=storage)
    for _ in range(4):
        js.pub_ok(stream_name)
    extra = {"no_erase": True} if no_erase else {}
    assert js.msg_delete(stream_name, {"seq": 1, **extra})["success"] is True
    below = ((500, 10057, "no message found") if storage == "file"
             else (400, 10043, "sequence 1 not found"))
    assert js.msg_delete(stream_name, {"seq": 1, **extra}) == error_reply(DEL, *below)
    js.purge(stream_name)
    assert js.state(stream_name)["first_seq"] == 5
    below = ((500, 10057, "no message found") if storage == "file"
             else (400, 10043, "sequence 3 not found"))
    assert js.msg_delete(stream_name, {"seq": 3, **extra}) == error_reply(DEL, *below)
    eof = ((500, 10057, "stream store EOF") if storage == "file"
           else (400, 10043, "sequence 5 not found"))
    assert js.msg_delete(stream_name, {"seq": 5, **extra}) == error_reply(DEL, *eof)


def test_js_msg_delete_no_erase(target: str, js: JsClient, loaded: tuple[str, str]) -> None:
    name, _ = loaded
    assert js.msg_delete(name, {"seq": 5, "no_erase": True})["success"] is True
    st = js.state(name)
    assert (st["messages"], st["last_seq"]) == (4, 5)
    # last_seq stays 5, so the removed last message still counts as deleted.
    assert st["num_deleted"] == 1
    assert js.info(name, {"deleted_details": True})["state"]["deleted"] == [5]


def test_js_msg_delete_errors(target: str, js: JsClient, stream_name: str) -> None:
    """Empty body 10003, deny_delete 500/10057, missing stream 10059, unknown field 10025."""
    js.create(stream_name, deny_delete=True)
    js.pub_ok(stream_name)
    assert js.msg_delete(stream_name, None) == error_reply(DEL, 400, 10003, "bad request")
    assert js.msg_delete(stream_name, {"seq": 1}) == error_reply(
        DEL, 500, 10057, "message delete not permitted")
    assert js.msg_delete(unique_name(), {"seq": 1}) == error_reply(
        DEL, 404, 10059, "stream not found")
    assert js.msg_delete(stream_name, {"sequence": 1}) == error_reply(
        DEL, 400, 10025, 'invalid JSON: json: unknown field "sequence"')
    assert js.state(stream_name)["messages"] == 1
