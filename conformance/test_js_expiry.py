"""Time based removal: ``max_age``, per-message ``Nats-TTL`` and subject delete markers.
These are the only cases of the JetStream suite that wait in real time (1 s limits, polled
for up to 5 s)."""
from __future__ import annotations

import time

from conformance.jshelpers import JsClient, b64, file_bytes, header_block, wait_for

H = header_block
SECOND = 1_000_000_000


def test_js_max_age_expires_messages(target: str, js: JsClient, stream_name: str) -> None:
    """With max_age 1 s the old message goes; a ``Nats-TTL: never`` message stays."""
    js.create(stream_name, max_age=SECOND, allow_msg_ttl=True)
    js.pub_ok(stream_name, b"old")
    never = H(("Nats-TTL", "never"))
    js.pub_ok(stream_name, b"kept", never)
    start = time.monotonic()
    st = wait_for(lambda: (s := js.state(stream_name))["messages"] == 1 and s, timeout=5)
    assert time.monotonic() - start >= 0.5, "removed too early"
    assert (st["first_seq"], st["last_seq"]) == (2, 2)
    assert st["bytes"] == file_bytes(stream_name, b"kept", never)
    assert js.msg_get(stream_name, {"seq": 1})["error"]["err_code"] == 10037


def test_js_ttl_expires_message(target: str, js: JsClient, stream_name: str) -> None:
    """A message with ``Nats-TTL: 1s`` is removed; its neighbour without TTL is not."""
    js.create(stream_name, allow_msg_ttl=True)
    js.pub_ok(stream_name, b"short", H(("Nats-TTL", "1s")))
    js.pub_ok(stream_name, b"plain")
    st = wait_for(lambda: (s := js.state(stream_name))["messages"] == 1 and s, timeout=5)
    assert (st["first_seq"], st["last_seq"]) == (2, 2)
    assert st["bytes"] == file_bytes(stream_name, b"plain")


def test_js_subject_delete_marker_after_ttl(target: str, js: JsClient, stream_name: str) -> None:
    """When the last message of a subject expires, a delete marker (empty payload, reason
    ``MaxAge``, the marker TTL as a duration, ``Nats-Rollup: sub``) takes a new sequence."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"], subject_delete_marker_ttl=5 * SECOND,
              max_msgs_per_subject=1)
    js.pub_ok(f"{p}.a", b"v", H(("Nats-TTL", "1s")))
    st = wait_for(lambda: (s := js.state(stream_name))["last_seq"] == 2 and s, timeout=5)
    marker = H(("Nats-Marker-Reason", "MaxAge"), ("Nats-TTL", "5s"), ("Nats-Rollup", "sub"))
    assert (st["messages"], st["first_seq"]) == (1, 2)
    assert st["bytes"] == file_bytes(f"{p}.a", b"", marker)
    msg = js.msg_get(stream_name, {"seq": 2})["message"]
    assert list(msg) == ["subject", "seq", "hdrs", "time"]
    assert (msg["subject"], msg["hdrs"]) == (f"{p}.a", b64(marker))


def test_js_ttl_raised_to_marker_ttl(target: str, js: JsClient, stream_name: str) -> None:
    """With delete markers on (and no per-subject limit of 1) a shorter message TTL is raised to
    the marker TTL and the stored header rewritten to integer seconds (no waiting needed)."""
    js.create(stream_name, subject_delete_marker_ttl=5 * SECOND)
    js.pub_ok(stream_name, b"1", H(("Nats-TTL", "1s")))
    msg = js.msg_get(stream_name, {"seq": 1})["message"]
    assert msg["hdrs"] == b64(H(("Nats-TTL", "5")))
