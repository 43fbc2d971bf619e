"""Edges of the ``$JS.API`` request bodies (issue 14): which bodies count as "empty", the
order in which an endpoint checks body, stream and consumer, paging offsets past the end, the
error envelopes of the list endpoints, and ``first_seq`` of a new stream.

nats-server's two body predicates decide most of it:

* ``isEmptyRequest`` — no bytes, or exactly one JSON value that is an object without members
  (``{}``, ``{ }``, `` {}\\n``). A whitespace-only body is *not* empty (``json.Unmarshal``
  fails on it), nor are ``null``, ``[]`` or ``{}{}``. STREAM.DELETE, CONSUMER.DELETE and
  CONSUMER.INFO demand an empty body (else 400/10038, before any lookup); MSG.GET,
  MSG.DELETE, SNAPSHOT and RESTORE demand a non-empty one (else 400/10003, before any lookup).
* ``isJSONObjectOrArray`` — the first byte after JSON white space (space, tab, CR, LF; not
  FF or VT) is ``{`` or ``[``. Endpoints with an optional body (STREAM.INFO, PURGE, NAMES,
  LIST, CONSUMER.NAMES, LIST, PAUSE) decode it only then and ignore anything else.
"""
from __future__ import annotations

import json
import socket
import urllib.request
from typing import Any

import pytest

from conformance.helpers import SpawnFn
from conformance.jshelpers import (
    TYPE_PREFIX,
    JsClient,
    api_error,
    error_reply,
    header_block,
    unique_name,
)

NOT_EMPTY = (400, 10038, "expected an empty request payload")
BAD_REQUEST = (400, 10003, "bad request")
STREAM_NOT_FOUND = (404, 10059, "stream not found")
CONSUMER_NOT_FOUND = (404, 10014, "consumer not found")

#: Bodies nats-server treats as empty.
EMPTY_BODIES = (b"", b"{}", b"{ }", b" {}\n", b"\t{\r\n}")
#: Bodies that are not empty although they carry nothing.
NON_EMPTY_BODIES = (b" ", b"\n\t ", b"\r\n", b"null", b"[]", b"{}{}", b'{"a":1}', b"\x0c")


def err(out: dict[str, Any]) -> tuple[int, int, str]:
    e = out["error"]
    return e["code"], e["err_code"], e["description"]


def durable(js: JsClient, stream: str, name: str) -> None:
    js.create_consumer(stream, {"durable_name": name, "ack_policy": "explicit"}, name)


# ---------------------------------------------------------------------- empty bodies


@pytest.mark.parametrize("body", NON_EMPTY_BODIES, ids=repr)
def test_js_api_edges_empty_body_endpoints_refuse(target: str, js: JsClient, stream_name: str,
                                                  body: bytes) -> None:
    """STREAM.DELETE, CONSUMER.DELETE and CONSUMER.INFO answer 400/10038 to a body that is not
    empty — white space only included — before looking anything up; nothing is deleted."""
    js.create(stream_name)
    durable(js, stream_name, "C")
    missing = unique_name()
    for suffix in (f"STREAM.DELETE.{stream_name}", f"STREAM.DELETE.{missing}"):
        assert js.api(suffix, body) == error_reply("stream_delete_response", *NOT_EMPTY)
    for op in ("DELETE", "INFO"):
        for where in (f"{stream_name}.C", f"{stream_name}.NOPE", f"{missing}.C"):
            assert js.api(f"CONSUMER.{op}.{where}", body) == error_reply(
                f"consumer_{op.lower()}_response", *NOT_EMPTY)
    assert js.api(f"CONSUMER.NAMES.{stream_name}")["consumers"] == ["C"]
    assert js.state(stream_name)["consumer_count"] == 1


@pytest.mark.parametrize("body", EMPTY_BODIES, ids=repr)
def test_js_api_edges_empty_body_endpoints_accept(target: str, js: JsClient, stream_name: str,
                                                  body: bytes) -> None:
    """Bodies that are empty for nats-server (``{ }`` and white space around ``{}`` too) go on
    to the lookups and succeed."""
    js.create(stream_name)
    durable(js, stream_name, "C")
    info = js.api(f"CONSUMER.INFO.{stream_name}.C", body)
    assert info["type"] == TYPE_PREFIX + "consumer_info_response" and info["name"] == "C"
    assert err(js.api(f"CONSUMER.INFO.{stream_name}.NOPE", body)) == CONSUMER_NOT_FOUND
    assert err(js.api(f"CONSUMER.DELETE.{unique_name()}.C", body)) == STREAM_NOT_FOUND
    assert js.api(f"CONSUMER.DELETE.{stream_name}.C", body) == {
        "type": TYPE_PREFIX + "consumer_delete_response", "success": True}
    assert js.api(f"STREAM.DELETE.{stream_name}", body) == {
        "type": TYPE_PREFIX + "stream_delete_response", "success": True}
    assert js.api(f"STREAM.DELETE.{stream_name}", body) == error_reply(
        "stream_delete_response", *STREAM_NOT_FOUND)


# ---------------------------------------------------------------------- order of checks


def test_js_api_edges_msg_delete_checks_body_first(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    """MSG.DELETE: an empty body (``{}`` too) is 400/10003 and a bad one 10025, both before the
    stream lookup; a white-space body decodes to nothing and deletes sequence 0."""
    missing = unique_name()
    mem = stream_name + "M"
    js.create(stream_name)
    js.create(mem, storage="memory")
    for name in (stream_name, mem):
        js.pub_ok(name, b"x")
    rtype = "stream_msg_delete_response"
    for name in (missing, stream_name):
        for body in (b"", b"{}", b"{ }", b" {}\n"):
            assert js.api(f"STREAM.MSG.DELETE.{name}", body) == error_reply(rtype, *BAD_REQUEST)
        assert js.api(f"STREAM.MSG.DELETE.{name}", b"garbage") == error_reply(
            rtype, 400, 10025,
            "invalid JSON: invalid character 'g' looking for beginning of value at offset 1")
        assert js.api(f"STREAM.MSG.DELETE.{name}", {"seq": -1}) == error_reply(
            rtype, 400, 10025, "invalid JSON: json: cannot unmarshal number -1 into Go struct "
            "field JSApiMsgDeleteRequest.seq of type uint64")
        assert js.api(f"STREAM.MSG.DELETE.{name}", {"offset": 1}) == error_reply(
            rtype, 400, 10025, 'invalid JSON: json: unknown field "offset"')
    assert js.api(f"STREAM.MSG.DELETE.{missing}", {"seq": 1}) == error_reply(
        rtype, *STREAM_NOT_FOUND)
    assert js.api(f"STREAM.MSG.DELETE.{missing}", b" ") == error_reply(rtype, *STREAM_NOT_FOUND)
    # White space decodes to {"seq":0}: the file store has no message 0, the memory store
    # reports the sequence.
    assert js.api(f"STREAM.MSG.DELETE.{stream_name}", b" \n") == error_reply(
        rtype, 500, 10057, "no message found")
    assert js.api(f"STREAM.MSG.DELETE.{mem}", b"\t") == error_reply(
        rtype, 400, 10043, "sequence 0 not found")
    assert js.state(stream_name)["messages"] == 1 and js.state(mem)["messages"] == 1


def test_js_api_edges_purge_missing_stream(target: str, js: JsClient) -> None:
    """PURGE decodes a JSON body (and refuses ``seq`` with ``keep``) before the stream lookup;
    a body that is not a JSON object or array is ignored."""
    missing = unique_name()
    suffix = f"STREAM.PURGE.{missing}"
    rtype = "stream_purge_response"
    assert js.api(suffix, {"seq": 2, "keep": 1}) == error_reply(rtype, *BAD_REQUEST, purged=0)
    assert js.api(suffix, {"subject": "x"}) == error_reply(
        rtype, 400, 10025, 'invalid JSON: json: unknown field "subject"', purged=0)
    assert js.api(suffix, b"[]") == error_reply(
        rtype, 400, 10025, "invalid JSON: json: cannot unmarshal array into Go value of type "
        "server.JSApiStreamPurgeRequest", purged=0)
    for body in (b"", b" ", b"garbage", b"null", b"7", b'"x"', b'\x0c{"subject":"x"}', b"{}"):
        assert js.api(suffix, body) == error_reply(rtype, *STREAM_NOT_FOUND, purged=0)


@pytest.mark.parametrize("suffix,body,expected", [
    # Optional bodies are decoded before the lookup.
    ("STREAM.INFO.{m}", {"offset": "1"}, (400, 10025, "invalid JSON: json: cannot unmarshal "
     "string into Go struct field JSApiStreamInfoRequest.offset of type int")),
    ("STREAM.INFO.{m}", b"null", STREAM_NOT_FOUND),
    ("CONSUMER.NAMES.{m}", {"offset": 1.5}, (400, 10025, "invalid JSON: json: cannot unmarshal "
     "number 1.5 into Go struct field JSApiConsumersRequest.offset of type int")),
    ("CONSUMER.LIST.{m}", b"[1]", (400, 10025, "invalid JSON: json: cannot unmarshal array "
     "into Go value of type server.JSApiConsumersRequest")),
    ("CONSUMER.NAMES.{m}", b"garbage", STREAM_NOT_FOUND),
    ("CONSUMER.PAUSE.{m}.C", {"pause_until": 5}, (400, 10025, "invalid JSON: json: cannot "
     "unmarshal number into Go struct field JSApiConsumerPauseRequest.pause_until of type "
     "time.Time")),
    # Required bodies: empty first, then the body, then the stream.
    ("STREAM.MSG.GET.{m}", b"{ }", BAD_REQUEST),
    ("STREAM.MSG.GET.{m}", b"null", BAD_REQUEST),
    ("STREAM.MSG.GET.{m}", {"seq": 1, "last_by_subj": "x"}, BAD_REQUEST),
    ("STREAM.MSG.GET.{m}", {"seq": 1}, STREAM_NOT_FOUND),
    # SNAPSHOT looks the stream up before it decodes the body.
    ("STREAM.SNAPSHOT.{m}", b"{}", BAD_REQUEST),
    ("STREAM.SNAPSHOT.{m}", b"garbage", STREAM_NOT_FOUND),
    ("STREAM.SNAPSHOT.{s}", b"garbage", (400, 10025, "invalid JSON: invalid character 'g' "
     "looking for beginning of value at offset 1")),
    ("STREAM.SNAPSHOT.{s}", b" ", (400, 10015, "deliver subject not valid")),
    ("STREAM.SNAPSHOT.{s}", {"deliver_subject": "a.*"}, (400, 10015, "deliver subject not valid")),
    # RESTORE decodes and checks the config; the name defaults to the subject's.
    ("STREAM.RESTORE.{m}", b"", BAD_REQUEST),
    ("STREAM.RESTORE.{m}", {"config": {"name": "OTHER"}}, (400, 10056, "stream name in "
     "subject does not match request")),
    ("STREAM.RESTORE.{m}", {"state": {"messages": -1}}, (400, 10025, "invalid JSON: json: "
     "cannot unmarshal number -1 into Go struct field JSApiStreamRestoreRequest.state.messages "
     "of type uint64")),
    ("STREAM.RESTORE.{m}", {"config": {"pedantic": True}}, (400, 10025, "invalid JSON: json: "
     'unknown field "pedantic"')),
    ("STREAM.RESTORE.{m}", {"config": {"subjects": ["a b"]}}, (500, 10052, "invalid subject")),
    ("STREAM.RESTORE.{s}", b" ", (400, 10130, "stream name already in use, cannot restore")),
    ("STREAM.RESTORE.{s}", {"config": {"sealed": True}}, (400, 10130, "stream name already in "
     "use, cannot restore")),
], ids=lambda v: v if isinstance(v, str) else repr(v))
def test_js_api_edges_check_order(target: str, js: JsClient, stream_name: str, suffix: str,
                                  body: Any, expected: tuple[int, int, str]) -> None:
    """Per endpoint, which of body, stream and consumer is checked first (``{m}`` is a missing
    stream, ``{s}`` an existing one)."""
    js.create(stream_name)
    out = js.api(suffix.format(m=unique_name(), s=stream_name), body)
    assert err(out) == expected


def test_js_api_edges_restore_error_envelope(target: str, js: JsClient) -> None:
    """A restore error still carries the (empty) ``deliver_subject``."""
    m = js.api_msg(f"STREAM.RESTORE.{unique_name()}", b"{}")
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.stream_restore_response","error":'
                      b'{"code":400,"err_code":10003,"description":"bad request"},'
                      b'"deliver_subject":""}')


def test_js_api_edges_consumer_reset_whitespace_body(target: str, js: JsClient,
                                                     stream_name: str) -> None:
    """CONSUMER.RESET hands any non-empty body to ``json.Unmarshal``: white space alone is
    ``unexpected end of JSON input``."""
    js.create(stream_name)
    durable(js, stream_name, "C")
    m = js.request(f"$JS.API.CONSUMER.RESET.{stream_name}.C", b" \n")
    assert m.data == (b'{"type":"io.nats.jetstream.api.v1.consumer_reset_response","error":'
                      b'{"code":400,"err_code":10025,"description":'
                      b'"invalid JSON: unexpected end of JSON input"},"reset_seq":0}')


@pytest.mark.parametrize("body", [b'\x0c{"bogus":1}', b"\x0b[]"], ids=repr)
def test_js_api_edges_optional_body_form_feed(target: str, js: JsClient, stream_name: str,
                                              body: bytes) -> None:
    """FF and VT are not JSON white space: a body starting with them is not a JSON object for
    the optional-body endpoints and is ignored."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    durable(js, stream_name, "C")
    assert "error" not in js.api(f"STREAM.INFO.{stream_name}", body)
    assert "error" not in js.api(f"STREAM.PURGE.{stream_name}", body)
    assert "error" not in js.api("STREAM.NAMES", body)
    assert "error" not in js.api("STREAM.LIST", body)
    assert js.api(f"CONSUMER.NAMES.{stream_name}", body)["consumers"] == ["C"]
    assert js.api(f"CONSUMER.LIST.{stream_name}", body)["total"] == 1
    assert js.api(f"CONSUMER.PAUSE.{stream_name}.C", body)["paused"] is False


# ---------------------------------------------------------------------- paging


@pytest.mark.parametrize("offset,expected", [(0, 0), (1, 1), (2, 2), (3, 2), (100, 2),
                                             (2**63 - 1, 2), (-1, 0), (-2**63, 0)])
def test_js_api_edges_offset_clamped(target: str, js: JsClient, stream_name: str, offset: int,
                                     expected: int) -> None:
    """NAMES/LIST: a negative offset counts as 0, one past the end is clamped to the total and
    echoed clamped; empty pages are ``null`` for STREAM.NAMES, ``[]`` elsewhere."""
    p = stream_name.lower()
    a, b = stream_name + "A", stream_name + "B"
    js.create(a, subjects=[f"{p}.a"])
    js.create(b, subjects=[f"{p}.b"])
    durable(js, a, "C1")
    durable(js, a, "C2")
    names = js.api("STREAM.NAMES", {"subject": f"{p}.>", "offset": offset})
    assert (names["total"], names["offset"], names["limit"]) == (2, expected, 1024)
    assert names["streams"] == ([a, b][expected:] or None)
    listed = js.api("STREAM.LIST", {"subject": f"{p}.>", "offset": offset})
    assert (listed["total"], listed["offset"], listed["limit"]) == (2, expected, 256)
    assert [s["config"]["name"] for s in listed["streams"]] == [a, b][expected:]
    cnames = js.api(f"CONSUMER.NAMES.{a}", {"offset": offset})
    assert (cnames["total"], cnames["offset"], cnames["limit"]) == (2, expected, 1024)
    assert cnames["consumers"] == ["C1", "C2"][expected:]
    clist = js.api(f"CONSUMER.LIST.{a}", {"offset": offset})
    assert (clist["total"], clist["offset"], clist["limit"]) == (2, expected, 256)
    assert [c["name"] for c in clist["consumers"]] == ["C1", "C2"][expected:]


def test_js_api_edges_info_subjects_offset_not_clamped(target: str, js: JsClient,
                                                       stream_name: str) -> None:
    """STREAM.INFO's subjects paging echoes the offset as asked, even past the end."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    js.pub_ok(f"{p}.b")
    out = js.info(stream_name, {"subjects_filter": ">", "offset": 5})
    assert (out["total"], out["offset"], out["limit"]) == (2, 5, 100000)
    assert "subjects" not in out["state"]


@pytest.mark.parametrize("body,description", [
    (b'{"a":1}', 'invalid JSON: json: unknown field "a"'),
    (b"[]", "invalid JSON: json: cannot unmarshal array into Go value of type "
     "server.{req}"),
    (b'{"offset":1e3}', "invalid JSON: json: cannot unmarshal number 1e3 into Go struct field "
     "{req}.offset of type int"),
    (b'{"offset":9223372036854775808}', "invalid JSON: json: cannot unmarshal number "
     "9223372036854775808 into Go struct field {req}.offset of type int"),
    (b"{", "invalid JSON: unexpected EOF"),
], ids=repr)
def test_js_api_edges_list_error_envelopes(target: str, js: JsClient, stream_name: str,
                                           body: bytes, description: str) -> None:
    """The exact error replies of the four paging endpoints: each names its own request type;
    STREAM.NAMES keeps ``"streams":null``, the others an empty list."""
    js.create(stream_name)
    cases = [
        ("STREAM.NAMES", "stream_names_response", "JSApiStreamNamesRequest", b'"streams":null'),
        ("STREAM.LIST", "stream_list_response", "JSApiStreamListRequest", b'"streams":[]'),
        (f"CONSUMER.NAMES.{stream_name}", "consumer_names_response", "JSApiConsumersRequest",
         b'"consumers":[]'),
        (f"CONSUMER.LIST.{stream_name}", "consumer_list_response", "JSApiConsumersRequest",
         b'"consumers":[]'),
    ]
    for suffix, rtype, req, tail in cases:
        desc = description.replace("{req}", req).replace('"', '\\"').encode()
        m = js.api_msg(suffix, body)
        assert m.data == (b'{"type":"io.nats.jetstream.api.v1.' + rtype.encode()
                          + b'","error":{"code":400,"err_code":10025,"description":"' + desc
                          + b'"},"total":0,"offset":0,"limit":0,' + tail + b"}")


# ---------------------------------------------------------------------- first_seq


@pytest.mark.parametrize("storage", ["file", "memory"])
@pytest.mark.parametrize("first_seq,first,last", [(0, 0, 0), (1, 1, 0), (2, 2, 1),
                                                  (100, 100, 99)])
def test_js_api_edges_first_seq(target: str, js: JsClient, stream_name: str, storage: str,
                                first_seq: int, first: int, last: int) -> None:
    """A new stream with ``first_seq`` N reports first_seq N, last_seq N-1 (``first_seq`` 1
    too: only an unset one gives 0/0); the first message gets max(N, 1)."""
    created = js.create(stream_name, storage=storage, first_seq=first_seq)
    st = created["state"]
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (0, first, last)
    assert (created["config"].get("first_seq"), js.state(stream_name)["first_seq"]) == (
        first_seq or None, first)
    assert js.pub_ok(stream_name, b"x") == max(first_seq, 1)
    st = js.state(stream_name)
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (1, max(first_seq, 1),
                                                                 max(first_seq, 1))


# ---------------------------------------------------------------------- found by the fuzzer


def test_js_api_edges_unsigned_minus_zero(target: str, js: JsClient, stream_name: str) -> None:
    """``-0`` is no uint64 for Go (ParseUint takes no sign), though it is a fine int64."""
    js.create(stream_name)
    assert err(js.purge(stream_name, b'{"seq":-0}')) == (
        400, 10025, "invalid JSON: json: cannot unmarshal number -0 into Go struct field "
        "JSApiStreamPurgeRequest.seq of type uint64")
    assert err(js.api(f"STREAM.MSG.DELETE.{stream_name}", b'{"SEQ":-0}')) == (
        400, 10025, "invalid JSON: json: cannot unmarshal number -0 into Go struct field "
        "JSApiMsgDeleteRequest.SEQ of type uint64")
    assert js.api("STREAM.NAMES", b'{"offset":-0,"subject":"nothing.here"}')["total"] == 0


def test_js_api_edges_info_subjects_filter_no_match_offset(target: str, js: JsClient,
                                                           stream_name: str) -> None:
    """A subjects filter matching nothing leaves all paging fields 0, the offset too."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    js.pub_ok(f"{p}.a")
    out = js.info(stream_name, {"subjects_filter": f"{p}.none", "offset": 1024})
    assert (out["total"], out["offset"], out["limit"]) == (0, 0, 0)


@pytest.mark.parametrize("when,first", [("2999-01-01T00:00:00+01:00", True),
                                        ("1000-01-01T00:00:00Z", False)])
def test_js_api_edges_start_time_out_of_int64(target: str, js: JsClient, stream_name: str,
                                              when: str, first: bool) -> None:
    """A start time outside Go's UnixNano range (years 1678-2262) wraps around int64: 2999
    lands before the first message (MSG.GET and DIRECT.GET answer message 1), the year 1000
    after the last one (no message)."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], allow_direct=True)
    js.pub_ok(f"{p}.a", b"one")
    js.pub_ok(f"{p}.b", b"two")
    out = js.msg_get(stream_name, {"start_time": when})
    m = js.request(f"$JS.API.DIRECT.GET.{stream_name}", {"start_time": when})
    if first:
        assert (out["message"]["seq"], out["message"]["subject"]) == (1, f"{p}.a")
        assert (m.headers["Nats-Sequence"], m.data) == ("1", b"one")
    else:
        assert err(out) == (404, 10037, "no message found")
        assert (m.status, m.data) == ("404 Message Not Found", b"")


def test_js_api_edges_msg_delete_store_errors_not_counted(target: str, spawn: SpawnFn) -> None:
    """MSG.DELETE's store refusals (no message, sequence not found) reach the client as errors
    but count as plain requests in ``api``; the checks before them count as errors."""
    js = JsClient.connect(spawn(jetstream=True))
    try:
        js.create("F")
        js.create("M", storage="memory")
        js.pub_ok("F")
        js.pub_ok("M")
        before = js.account_info()["api"]
        for name, seq in (("F", 0), ("F", 7), ("M", 7), ("M", 0)):
            assert "error" in js.msg_delete(name, {"seq": seq})
        after = js.account_info()["api"]
        assert (after["total"] - before["total"], after["errors"] - before["errors"]) == (5, 0)
        assert "error" in js.msg_delete("F", b"{}")
        assert "error" in js.msg_delete("NOPE", {"seq": 1})
        last = js.account_info()["api"]
        assert (last["total"] - after["total"], last["errors"] - after["errors"]) == (3, 2)
    finally:
        js.close()


def test_js_api_edges_update_republish_empty_dest(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """An update with a republish lacking ``dest`` stores ``">"`` as the destination (and
    ``">"`` as the missing source), no cycle check applied; a create keeps it empty."""
    p = stream_name.lower()
    created = js.create(stream_name, subjects=[f"{p}.>"], republish={"src": f"{p}.a"})
    assert created["config"]["republish"] == {"src": f"{p}.a", "dest": ""}
    out = js.update(stream_name, subjects=[f"{p}.>"], republish={})
    assert out["config"]["republish"] == {"src": ">", "dest": ">"}
    assert js.info(stream_name)["config"]["republish"] == {"src": ">", "dest": ">"}
    out = js.update(stream_name, subjects=[f"{p}.>"], republish={"headers_only": True})
    assert out["config"]["republish"] == {"src": ">", "dest": ">", "headers_only": True}


@pytest.mark.parametrize("value,refused", [
    ("", False), (" 5", False), ("+5", False), ("-9223372036854775808", False), ("5 ", True),
    ("6", True), ("abc", True), ("5.0", True), ("0x5", True), ("\u0665", True),
    ("-9223372036854775809", True), ("99999999999999999999", True),
], ids=repr)
def test_js_api_edges_required_api_level_values(target: str, js: JsClient, stream_name: str,
                                                value: str, refused: bool) -> None:
    """``Nats-Required-Api-Level`` is read raw (leading spaces skipped, trailing ones kept) and
    parsed like Go's ``strconv.Atoi``; an empty value asks for nothing. The same on the JSON
    endpoints, DIRECT.GET and CONSUMER.RESET; a lower-case header name is not the header."""
    js.create(stream_name, allow_direct=True)
    js.pub_ok(stream_name, b"x")
    durable(js, stream_name, "C")
    hdr = header_block(("Nats-Required-Api-Level", value))
    level_error = api_error(412, 10185, "JetStream minimum api level required")
    info = js.api(f"STREAM.INFO.{stream_name}", headers=hdr)
    assert (info.get("error") == level_error) is refused
    m = js.request(f"$JS.API.DIRECT.GET.{stream_name}", {"seq": 1}, headers=hdr)
    assert (m.status, m.data) == (("412 Required Api Level", b"") if refused else ("", b"x"))
    reset = js.request(f"$JS.API.CONSUMER.RESET.{stream_name}.C", b"", headers=hdr).json()
    assert (reset.get("error") == level_error) is refused
    if refused:
        assert reset == {"type": TYPE_PREFIX + "consumer_reset_response", "error": level_error,
                         "reset_seq": 0}
    lower = header_block(("nats-required-api-level", "99"))
    assert "error" not in js.api(f"STREAM.INFO.{stream_name}", headers=lower)


def test_js_api_edges_server_resource_limits(target: str, js: JsClient, stream_name: str) -> None:
    """A ``max_bytes`` beyond what the server has (75% of its memory or disk unless configured)
    is refused on create and update — after the existing-name check, before the subject
    overlap; 4 EiB is beyond any host."""
    huge = 2**62
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    other = stream_name + "X"
    out = js.create(other, check=False, subjects=[f"{p}x"], max_bytes=huge)
    assert err(out) == (500, 10047, "insufficient storage resources available")
    out = js.create(other, check=False, subjects=[f"{p}x"], max_bytes=huge, storage="memory")
    assert err(out) == (500, 10028, "insufficient memory resources available")
    out = js.create(other, check=False, subjects=[f"{p}.a"], max_bytes=huge)
    assert err(out) == (500, 10047, "insufficient storage resources available")
    out = js.create(stream_name, check=False, subjects=[f"{p}.>"], max_bytes=huge)
    assert err(out) == (400, 10058, "stream name already in use with a different configuration")
    out = js.update(stream_name, subjects=[f"{p}.>"], max_bytes=huge)
    assert err(out) == (500, 10047, "insufficient storage resources available")
    out = js.update(stream_name, subjects=[f"{p}.>"], max_bytes=huge, max_age=-1)
    assert err(out) == (500, 10052, "max age can not be negative")
    assert js.info(stream_name)["config"]["max_bytes"] == -1


def test_js_api_edges_reserved_resources(target: str, spawn: SpawnFn) -> None:
    """Account info reserves each stream's ``max_bytes`` (by storage type) until it changes or
    the stream goes."""
    js = JsClient.connect(spawn(jetstream=True))
    try:
        js.create("F", max_bytes=1000)
        js.create("M", max_bytes=2000, storage="memory")
        js.create("N")
        info = js.account_info()
        assert (info["reserved_storage"], info["reserved_memory"]) == (1000, 2000)
        assert "error" not in js.update("F", subjects=["F"], max_bytes=3000)
        assert "error" not in js.update("M", subjects=["M"], max_bytes=500, storage="memory")
        info = js.account_info()
        assert (info["reserved_storage"], info["reserved_memory"]) == (3000, 500)
        js.delete("F")
        assert "error" not in js.update("M", subjects=["M"], storage="memory")
        info = js.account_info()
        assert (info["reserved_storage"], info["reserved_memory"]) == (0, 0)
    finally:
        js.close()


def test_js_api_edges_refusals_before_feature_checks(target: str, js: JsClient,
                                                     stream_name: str) -> None:
    """Configs with options nats-server accepts (counters here) still get every other
    refusal first: the existing name, the subject overlap, the update rules."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.>"])
    out = js.create(stream_name, check=False, subjects=[f"{p}.>"], allow_msg_counter=True)
    assert err(out) == (400, 10058, "stream name already in use with a different configuration")
    out = js.create(stream_name + "X", check=False, subjects=[f"{p}.a"], allow_msg_counter=True)
    assert err(out) == (400, 10065, "subjects overlap with an existing stream")
    out = js.update(stream_name, subjects=[f"{p}.>"], allow_msg_counter=True)
    assert err(out) == (500, 10052,
                        "stream configuration update can not change message counter setting")


def test_js_api_edges_required_api_level_check_order(target: str, js: JsClient,
                                                     stream_name: str) -> None:
    """Most endpoints refuse a too-high ``Nats-Required-Api-Level`` before looking at the body;
    CONSUMER.CREATE and CONSUMER.PAUSE decode their body first, CONSUMER.INFO checks for an
    empty one first, and the cluster-only endpoints ignore it."""
    js.create(stream_name)
    durable(js, stream_name, "C")
    hdr = header_block(("Nats-Required-Api-Level", "99"))
    level = (412, 10185, "JetStream minimum api level required")
    assert err(js.api(f"STREAM.INFO.{stream_name}", b"{", headers=hdr)) == level
    assert err(js.api(f"CONSUMER.DELETE.{stream_name}.C", b" ", headers=hdr)) == level
    assert err(js.api(f"CONSUMER.INFO.{stream_name}.C", b" ", headers=hdr)) == NOT_EMPTY
    assert err(js.api(f"CONSUMER.INFO.{stream_name}.C", b"{}", headers=hdr)) == level
    assert err(js.api(f"CONSUMER.CREATE.{stream_name}.D", b"{", headers=hdr)) == (
        400, 10025, "invalid JSON: unexpected EOF")
    assert err(js.api(f"CONSUMER.CREATE.{unique_name()}", b"{}", headers=hdr)) == level
    assert err(js.api(f"CONSUMER.PAUSE.{stream_name}.C", b'{"x":1}', headers=hdr)) == (
        400, 10025, 'invalid JSON: json: unknown field "x"')
    assert err(js.api(f"CONSUMER.PAUSE.{stream_name}.C", b"{}", headers=hdr)) == level
    # The cluster-only endpoints refuse on a single server before they look at it.
    clustering = (503, 10010, "JetStream clustering support required")
    assert err(js.api(f"STREAM.LEADER.STEPDOWN.{stream_name}", headers=hdr)) == clustering
    assert err(js.api(f"CONSUMER.LEADER.STEPDOWN.{stream_name}.C", headers=hdr)) == clustering


def test_js_api_edges_configured_limits(target: str, spawn: SpawnFn) -> None:
    """Configured ``max_memory_store`` / ``max_file_store`` are the server's limits: /varz
    reports them with the reservations, and a ``max_bytes`` that does not fit next to the
    other streams' is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        http_port = int(s.getsockname()[1])
    srv = spawn(args=["-m", str(http_port)], jetstream=True,
                config="jetstream { max_memory_store: 1048576, max_file_store: 2097152 }")
    js = JsClient.connect(srv)
    try:
        js.create("F", max_bytes=2_000_000)
        out = js.create("G", check=False, max_bytes=97_153)
        assert err(out) == (500, 10047, "insufficient storage resources available")
        js.create("G", max_bytes=97_152)
        assert err(js.create("H", check=False)) == (
            500, 10047, "insufficient storage resources available")  # no room for 1 more byte
        js.create("M", storage="memory", max_bytes=1_048_576)
        out = js.update("M", subjects=["M"], storage="memory", max_bytes=1_048_577)
        assert err(out) == (500, 10028, "insufficient memory resources available")
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/varz", timeout=5) as resp:
            varz = json.loads(resp.read())["jetstream"]
        assert (varz["config"]["max_memory"], varz["config"]["max_storage"]) == (1048576, 2097152)
        assert (varz["config"]["sync_interval"], varz["config"]["strict"]) == (120_000_000_000, True)
        stats = varz["stats"]
        assert (stats["reserved_memory"], stats["reserved_storage"]) == (1048576, 2097152)
    finally:
        js.close()
