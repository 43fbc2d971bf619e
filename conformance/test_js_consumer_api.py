"""Consumer endpoints: CREATE (all subject forms), DURABLE.CREATE, INFO, DELETE, NAMES, LIST and
the starting position of each deliver policy."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.jshelpers import (
    DYNAMIC_METADATA,
    TIMESTAMP,
    TYPE_PREFIX,
    JsClient,
    error_reply,
    header_block,
)


def setup_stream(js: JsClient, name: str, subjects: list[str] | None = None, **cfg: Any) -> str:
    p = name.lower()
    js.create(name, subjects=subjects or [f"{p}.>"], **cfg)
    return p


def strip(info: dict[str, Any]) -> dict[str, Any]:
    out = dict(info)
    assert TIMESTAMP.match(out.pop("created"))
    assert TIMESTAMP.match(out.pop("ts"))
    return out


def test_js_consumer_create_durable_pull_reply(target: str, js: JsClient, stream_name: str) -> None:
    """A durable pull consumer echoes every default; num_pending counts the stream."""
    p = setup_stream(js, stream_name)
    for i in range(3):
        js.pub_ok(f"{p}.a", b"x%d" % i)
    out = js.create_consumer(stream_name, {
        "durable_name": "d1", "ack_policy": "explicit"}, "d1", check=False)
    assert strip(out) == {
        "type": TYPE_PREFIX + "consumer_create_response", "stream_name": stream_name, "name": "d1",
        "config": {"durable_name": "d1", "name": "d1", "deliver_policy": "all",
                   "ack_policy": "explicit", "ack_wait": 30_000_000_000, "max_deliver": -1,
                   "replay_policy": "instant", "max_waiting": 512, "max_ack_pending": 1000,
                   "num_replicas": 0, "metadata": DYNAMIC_METADATA},
        "delivered": {"consumer_seq": 0, "stream_seq": 0},
        "ack_floor": {"consumer_seq": 0, "stream_seq": 0},
        "num_ack_pending": 0, "num_redelivered": 0, "num_waiting": 0, "num_pending": 3}
    info = js.api(f"CONSUMER.INFO.{stream_name}.d1")
    assert info["type"] == TYPE_PREFIX + "consumer_info_response"
    assert info["created"] == out["created"] and info["config"] == out["config"]
    assert js.state(stream_name)["consumer_count"] == 1


def test_js_consumer_create_legacy_ephemeral(target: str, js: JsClient, stream_name: str) -> None:
    """Auto-named: 8 base62 characters, no ``name`` in config, 5 s inactive threshold."""
    setup_stream(js, stream_name)
    out = js.create_consumer(stream_name, {"ack_policy": "none"}, check=False)
    assert len(out["name"]) == 8 and out["name"].isalnum()
    assert out["config"] == {"deliver_policy": "all", "ack_policy": "none", "max_deliver": -1,
                             "replay_policy": "instant", "max_waiting": 512,
                             "inactive_threshold": 5_000_000_000, "num_replicas": 0,
                             "metadata": DYNAMIC_METADATA}


def test_js_consumer_create_named_with_filter_subject(target: str, js: JsClient,
                                                     stream_name: str) -> None:
    """``CREATE.<S>.<C>.<filter>`` with a wildcard filter, as nats-py sends it."""
    p = setup_stream(js, stream_name)
    js.pub_ok(f"{p}.a.1")
    js.pub_ok(f"{p}.b.1")
    out = js.create_consumer(stream_name, {
        "durable_name": "f", "filter_subject": f"{p}.a.*"}, f"f.{p}.a.*", check=False)
    assert out["name"] == "f" and out["config"]["filter_subject"] == f"{p}.a.*"
    assert out["num_pending"] == 1
    bad = js.create_consumer(stream_name, {
        "durable_name": "g", "filter_subject": f"{p}.b"}, f"g.{p}.a", check=False)
    assert bad["error"]["err_code"] == 10131


def test_js_consumer_durable_create_form(target: str, js: JsClient, stream_name: str) -> None:
    setup_stream(js, stream_name)
    out = js.api(f"CONSUMER.DURABLE.CREATE.{stream_name}.dd",
                 {"stream_name": stream_name, "config": {"durable_name": "dd"}})
    assert out["name"] == "dd" and out["config"]["durable_name"] == "dd"
    missing = js.api(f"CONSUMER.DURABLE.CREATE.{stream_name}.de",
                     {"stream_name": stream_name, "config": {}})
    assert missing == error_reply("consumer_create_response", 400, 10018,
                                  "consumer expected to be durable but a durable name was not set")


def test_js_consumer_create_idempotent_and_action(target: str, js: JsClient,
                                                  stream_name: str) -> None:
    """Same config → same consumer; a different one is an update; ``action`` rules."""
    setup_stream(js, stream_name)
    a = js.create_consumer(stream_name, {
        "durable_name": "d", "ack_policy": "explicit"}, "d", check=False)
    b = js.create_consumer(stream_name, {
        "durable_name": "d", "ack_policy": "explicit"}, "d", action="create", check=False)
    assert a["created"] == b["created"]
    c = js.create_consumer(stream_name, {
        "durable_name": "d", "ack_policy": "explicit", "ack_wait": 5_000_000_000
        }, "d", action="create", check=False)
    assert c["error"] == {"code": 400, "err_code": 10148, "description": "consumer already exists"}
    d = js.create_consumer(stream_name, {
        "durable_name": "d", "ack_policy": "explicit", "ack_wait": 5_000_000_000}, "d", check=False)
    assert d["config"]["ack_wait"] == 5_000_000_000 and d["created"] == a["created"]
    e = js.create_consumer(stream_name, {
        "durable_name": "d", "ack_policy": "all"}, "d", check=False)
    assert e["error"] == {"code": 500, "err_code": 10012, "description": "ack policy can not be updated"}
    f = js.create_consumer(stream_name, {"durable_name": "x"}, "x", action="update", check=False)
    assert f["error"]["err_code"] == 10149


def test_js_consumer_create_missing_stream(target: str, js: JsClient, stream_name: str) -> None:
    out = js.create_consumer(stream_name, {"durable_name": "d"}, "d", check=False)
    assert out == error_reply("consumer_create_response", 404, 10059, "stream not found")


def test_js_consumer_info_delete_errors(target: str, js: JsClient, stream_name: str) -> None:
    setup_stream(js, stream_name)
    assert js.api(f"CONSUMER.INFO.{stream_name}.nope") == error_reply(
        "consumer_info_response", 404, 10014, "consumer not found")
    assert js.api(f"CONSUMER.DELETE.{stream_name}.nope") == error_reply(
        "consumer_delete_response", 404, 10014, "consumer not found")
    assert js.api("CONSUMER.INFO.NOSUCHSTREAM.x") == error_reply(
        "consumer_info_response", 404, 10059, "stream not found")
    js.create_consumer(stream_name, {"durable_name": "d"}, "d", check=False)
    assert js.api(f"CONSUMER.INFO.{stream_name}.d", {"x": 1}) == error_reply(
        "consumer_info_response", 400, 10038, "expected an empty request payload")
    assert js.api(f"CONSUMER.DELETE.{stream_name}.d") == {
        "type": TYPE_PREFIX + "consumer_delete_response", "success": True}
    assert js.api(f"CONSUMER.INFO.{stream_name}.d")["error"]["err_code"] == 10014
    assert js.state(stream_name)["consumer_count"] == 0


def test_js_consumer_names_and_list(target: str, js: JsClient, stream_name: str) -> None:
    """NAMES sorted, ``[]`` when none; LIST entries carry only ``_nats.req.level``."""
    setup_stream(js, stream_name)
    empty = js.api(f"CONSUMER.NAMES.{stream_name}")
    assert empty == {"type": TYPE_PREFIX + "consumer_names_response", "total": 0, "offset": 0,
                     "limit": 1024, "consumers": []}
    for name in ("b", "a"):
        js.create_consumer(stream_name, {
            "durable_name": name, "ack_policy": "explicit"}, name, check=False)
    names = js.api(f"CONSUMER.NAMES.{stream_name}")
    assert (names["total"], names["consumers"]) == (2, ["a", "b"])
    assert js.api(f"CONSUMER.NAMES.{stream_name}", {"offset": 1})["consumers"] == ["b"]
    lst = js.api(f"CONSUMER.LIST.{stream_name}")
    assert (lst["total"], lst["offset"], lst["limit"]) == (2, 0, 256)
    assert [c["name"] for c in lst["consumers"]] == ["a", "b"]
    assert lst["consumers"][0]["config"]["metadata"] == {"_nats.req.level": "0"}
    assert js.api("CONSUMER.NAMES.NOSUCHSTREAM") == error_reply(
        "consumer_names_response", 404, 10059, "stream not found",
        total=0, offset=0, limit=0, consumers=[])


def test_js_consumer_workqueue_rules(target: str, js: JsClient, stream_name: str) -> None:
    p = setup_stream(js, stream_name, retention="workqueue")
    ok = js.create_consumer(stream_name, {"durable_name": "w1", "ack_policy": "explicit",
                              "filter_subject": f"{p}.a"}, "w1", check=False)
    assert "error" not in ok
    dup = js.create_consumer(stream_name, {"durable_name": "w2", "ack_policy": "explicit",
                               "filter_subject": f"{p}.a"}, "w2", check=False)
    assert dup["error"]["err_code"] == 10100
    unf = js.create_consumer(stream_name, {
        "durable_name": "w3", "ack_policy": "explicit"}, "w3", check=False)
    assert unf["error"]["err_code"] == 10099


def test_js_consumer_limits_skip_sourcing_and_direct(target: str, js: JsClient,
                                                    stream_name: str) -> None:
    """``max_consumers`` counts new consumers but not those created with ``sourcing`` (as a
    mirror's or source's is), and does not refuse an update at the limit; on a work-queue
    stream a ``sourcing`` or ``direct`` consumer does not overlap an unfiltered one. (Only the
    reply bodies of the ``sourcing``/``direct`` creates are compared: nats-server also sends
    them with a ``Nats-Stream-Identity`` header.)"""
    def made(stream: str, config: dict[str, Any], name: str) -> dict[str, Any]:
        suffix = f"CONSUMER.CREATE.{stream}.{name}"
        out = js.api_msg(suffix, {"stream_name": stream, "config": config}).json()
        assert "error" not in out, out
        return out

    setup_stream(js, stream_name, max_consumers=2)
    assert "error" not in js.create_consumer(stream_name, {"durable_name": "a"}, "a", check=False)
    made(stream_name, {"durable_name": "m", "sourcing": True}, "m")
    assert "error" not in js.create_consumer(stream_name, {"durable_name": "b"}, "b", check=False)
    assert js.create_consumer(stream_name, {"durable_name": "c"}, "c", check=False) == error_reply(
        "consumer_create_response", 400, 10026, "maximum consumers limit reached")
    upd = js.create_consumer(stream_name, {
        "durable_name": "a", "description": "x"}, "a", check=False)
    assert upd["config"]["description"] == "x"
    wq = stream_name + "W"
    p = setup_stream(js, wq, retention="workqueue")
    made(wq, {"durable_name": "m", "ack_policy": "explicit", "sourcing": True}, "m")
    made(wq, {"name": "dd", "ack_policy": "explicit", "direct": True,
              "deliver_subject": f"{p}x.dd"}, "dd")
    out = js.create_consumer(wq, {"durable_name": "w", "ack_policy": "explicit"}, "w", check=False)
    assert "error" not in out and "filter_subject" not in out["config"]
    assert js.create_consumer(wq, {
        "durable_name": "w2", "ack_policy": "explicit"}, "w2", check=False) == error_reply(
        "consumer_create_response", 400, 10099,
        "multiple non-filtered consumers not allowed on workqueue stream")


@pytest.mark.parametrize("config, delivered, pending", [
    ({"deliver_policy": "all"}, 1, 4),
    ({"deliver_policy": "all", "filter_subject": "{p}.c"}, 1, 1),
    ({"deliver_policy": "last"}, 4, 1),
    ({"deliver_policy": "last", "filter_subject": "{p}.a"}, 2, 1),
    ({"deliver_policy": "new"}, 5, 0),
    ({"deliver_policy": "by_start_sequence", "opt_start_seq": 3}, 2, 3),
    ({"deliver_policy": "by_start_sequence", "opt_start_seq": 3, "filter_subject": "{p}.b"}, 2, 1),
    ({"deliver_policy": "by_start_sequence", "opt_start_seq": 100}, 99, 0),
    ({"deliver_policy": "last_per_subject", "filter_subject": "{p}.*"}, 2, 3),
    ({"deliver_policy": "all", "filter_subjects": ["{p}.c", "{p}.b"]}, 1, 3),
])
def test_js_consumer_start_position(target: str, js: JsClient, stream_name: str,
                                    config: dict[str, Any], delivered: int, pending: int) -> None:
    """Stream a, b, a, c, b with seq 1 deleted: ``delivered.stream_seq`` = start − 1 (also the
    initial ack floor) and ``num_pending`` for every deliver policy."""
    p = setup_stream(js, stream_name)
    for s in ("a", "b", "a", "c", "b"):
        js.pub_ok(f"{p}.{s}")
    assert js.msg_delete(stream_name, {"seq": 1})["success"]

    def fill(v: Any) -> Any:
        if isinstance(v, str):
            return v.replace("{p}", p)
        if isinstance(v, list):
            return [fill(x) for x in v]
        return v

    out = js.create_consumer(stream_name, {k: fill(v) for k, v in config.items()}, check=False)
    assert out["delivered"] == {"consumer_seq": 0, "stream_seq": delivered}
    assert out["ack_floor"] == {"consumer_seq": 0, "stream_seq": delivered}
    assert out["num_pending"] == pending


def test_js_consumer_push_delete_with_stream(target: str, js: JsClient, stream_name: str) -> None:
    """Deleting the stream deletes its consumers (a new stream of that name has none)."""
    setup_stream(js, stream_name)
    js.create_consumer(stream_name, {"durable_name": "d"}, "d", check=False)
    js.delete(stream_name)
    setup_stream(js, stream_name)
    assert js.api(f"CONSUMER.NAMES.{stream_name}")["consumers"] == []


def test_js_consumer_leader_stepdown_cluster_only(target: str, js: JsClient, stream_name: str) -> None:
    setup_stream(js, stream_name)
    js.create_consumer(stream_name, {"durable_name": "d"}, "d", check=False)
    out = js.api(f"CONSUMER.LEADER.STEPDOWN.{stream_name}.d")
    assert out["error"]["err_code"] == 10010
    assert header_block() == b"NATS/1.0\r\n\r\n"
