"""``$JS.API.STREAM.UPDATE.<S>``: what may change, what may not, sealing."""
from __future__ import annotations

import pytest

from conformance.jshelpers import (
    TIMESTAMP,
    TYPE_PREFIX,
    JsClient,
    default_config,
    error_reply,
    unique_name,
)

UPDATE = "stream_update_response"


def update_error(code: int, err_code: int, description: str) -> dict:
    return error_reply(UPDATE, code, err_code, description)


def test_js_update_allowed_fields(target: str, js: JsClient, stream_name: str) -> None:
    """Subjects, limits and description can change; the reply has config, created, state, ts
    (no ``did_create``, no ``cluster``) and the stream keeps its messages."""
    p = stream_name.lower()
    created = js.create(stream_name, subjects=[f"{p}.a"])
    js.pub_ok(f"{p}.a", b"1")
    out = js.update(stream_name, subjects=[f"{p}.a", f"{p}.b"], max_msgs=10, max_bytes=4096,
                    max_age=60_000_000_000, description="now described", max_msg_size=100,
                    allow_direct=True, deny_delete=True)
    assert list(out) == ["type", "config", "created", "state", "ts"]
    assert out["type"] == TYPE_PREFIX + UPDATE
    assert out["created"] == created["created"] and TIMESTAMP.match(out["ts"])
    expected = default_config(stream_name, [f"{p}.a", f"{p}.b"], max_msgs=10, max_bytes=4096,
                              max_age=60_000_000_000, max_msg_size=100,
                              duplicate_window=60_000_000_000, allow_direct=True,
                              deny_delete=True)
    expected = {"name": stream_name, "description": "now described",
                **{k: v for k, v in expected.items() if k != "name"}}
    assert out["config"] == expected
    assert list(out["config"]) == list(expected)
    assert out["state"]["messages"] == 1
    assert js.pub_ok(f"{p}.b", b"2") == 2


def test_js_update_not_found(target: str, js: JsClient) -> None:
    name = unique_name()
    assert js.update(name) == update_error(404, 10059, "stream not found")


def test_js_update_name_mismatch(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name)
    out = js.api(f"STREAM.UPDATE.{stream_name}", {"name": "OTHER"})
    assert out == update_error(400, 10056, "stream name in subject does not match request")


@pytest.mark.parametrize(
    ("initial", "change", "description"),
    [
        ({}, {"storage": "memory"}, "stream configuration update can not change storage type"),
        ({}, {"retention": "workqueue"},
         "stream configuration update can not change retention policy to/from workqueue"),
        ({"retention": "workqueue"}, {"retention": "limits"},
         "stream configuration update can not change retention policy to/from workqueue"),
        ({"deny_delete": True}, {"deny_delete": False},
         "stream configuration update can not cancel deny message deletes"),
        ({"deny_purge": True}, {"deny_purge": False},
         "stream configuration update can not cancel deny purge"),
        ({"allow_msg_ttl": True}, {"allow_msg_ttl": False},
         "message TTL status can not be disabled"),
    ],
    ids=["storage", "to-workqueue", "from-workqueue", "deny-delete", "deny-purge", "msg-ttl"],
)
def test_js_update_immutable(target: str, js: JsClient, stream_name: str, initial: dict,
                             change: dict, description: str) -> None:
    """Changes the server refuses with 500/10052."""
    js.create(stream_name, **initial)
    out = js.update(stream_name, **{**initial, **change})
    assert out == update_error(500, 10052, description)


def test_js_update_retention_limits_to_interest(target: str, js: JsClient,
                                                stream_name: str) -> None:
    js.create(stream_name)
    assert js.update(stream_name, retention="interest")["config"]["retention"] == "interest"
    assert js.update(stream_name, retention="limits")["config"]["retention"] == "limits"


def test_js_update_subjects_overlap(target: str, js: JsClient) -> None:
    a, b = unique_name(), unique_name()
    js.create(a, subjects=[f"{a.lower()}.>"])
    js.create(b, subjects=[f"{b.lower()}.>"])
    out = js.update(b, subjects=[f"{b.lower()}.>", f"{a.lower()}.x"])
    assert out == update_error(400, 10065, "subjects overlap with an existing stream")


def test_js_update_replicas_refused(target: str, js: JsClient, stream_name: str) -> None:
    js.create(stream_name)
    assert js.update(stream_name, num_replicas=3) == update_error(
        500, 10074, "replicas > 1 not supported in non-clustered mode")


def test_js_update_seal(target: str, js: JsClient, stream_name: str) -> None:
    """Sealing forces deny_delete/deny_purge; the sealed stream refuses publishes, purges and
    deletes with 10109 and cannot be unsealed."""
    p = stream_name.lower()
    js.create(stream_name, subjects=[f"{p}.*"])
    js.pub_ok(f"{p}.a", b"1")
    cfg = js.update(stream_name, subjects=[f"{p}.*"], sealed=True)["config"]
    assert (cfg["sealed"], cfg["deny_delete"], cfg["deny_purge"]) == (True, True, True)
    ack = js.publish(f"{p}.a", b"2")
    assert ack.data == (b'{"error":{"code":400,"err_code":10109,"description":'
                        b'"invalid operation on sealed stream"},"stream":"%s","seq":0}'
                        % stream_name.encode())
    assert js.purge(stream_name) == error_reply(
        "stream_purge_response", 400, 10109, "invalid operation on sealed stream", purged=0)
    assert js.msg_delete(stream_name, {"seq": 1}) == error_reply(
        "stream_msg_delete_response", 400, 10109, "invalid operation on sealed stream")
    out = js.update(stream_name, subjects=[f"{p}.*"], sealed=False)
    assert out == update_error(
        500, 10052, "stream configuration update can not unseal a sealed stream")
    assert js.state(stream_name)["messages"] == 1
    assert js.delete(stream_name)["success"] is True  # deleting the stream is still allowed


def test_js_update_republish_with_bad_source(target: str, js: JsClient, stream_name: str) -> None:
    """A republish source that is no valid subject and no destination: accepted at create
    (no transform is built without a destination), refused by an update, where the
    destination defaults to ``>`` and the transform is built (500/10069); the stream keeps
    its config and takes messages."""
    p = stream_name.lower()
    created = js.create(stream_name, subjects=[f"{p}.>"], republish={"src": "a b"})
    assert "error" not in created, created
    out = js.update(stream_name, subjects=[f"{p}.>"], republish={"src": "a b"})
    assert out == update_error(
        500, 10069, "stream configuration for republish from 'a b' to '>': invalid subject")
    assert js.info(stream_name)["config"]["subjects"] == [f"{p}.>"]
    assert js.pub_ok(f"{p}.x") == 1
