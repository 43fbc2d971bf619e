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

from typing import Any

import pytest

from conformance.jshelpers import TYPE_PREFIX, JsClient, error_reply, unique_name

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
    out = js.api(f"CONSUMER.CREATE.{stream}.{name}",
                 {"stream_name": stream, "config": {"durable_name": name, "ack_policy": "explicit"}})
    assert "error" not in out, out


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
