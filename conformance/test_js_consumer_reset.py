"""``CONSUMER.UNPIN`` and ``CONSUMER.RESET`` as nats-server 2.15.1 answers them: the body checks and error
texts, the UNPINNED advisory, the reset reply (consumer info + ``reset_seq``) and where a reset consumer continues."""
from __future__ import annotations

from typing import Any

from conformance.jshelpers import JsClient, Sub, ack_fields, check_envelope, error_reply
from conformance.pullconsumer import pull


def setup(js: JsClient, name: str, msgs: int = 5) -> None:
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i in range(msgs):
        js.pub_ok(f"{name.lower()}.{i}", f"m{i}")


def test_js_consumer_unpin_errors(target: str, js: JsClient, stream_name: str) -> None:
    setup(js, stream_name, 0)
    js.create_consumer(stream_name, {
        "durable_name": "p", "ack_policy": "explicit", "priority_groups": ["A"],
        "priority_policy": "pinned_client"}, "p")
    js.create_consumer(stream_name, {"durable_name": "plain"}, "plain")
    t = "consumer_unpin_response"
    cases = [
        ("p", b"", 400, 10025, "invalid JSON: unexpected end of JSON input"),
        ("p", b"{}", 400, 10025, "invalid JSON: consumer group not specified"),
        ("p", b'{"group":""}', 400, 10025, "invalid JSON: consumer group not specified"),
        ("p", b'{bad', 400, 10025,
         "invalid JSON: invalid character 'b' looking for beginning of object key string"),
        ("p", b'{"group":"bad name!"}', 400, 10162, "Valid priority group name must match "
         "A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters"),
        ("p", b'{"group":"B"}', 400, 10160,
         "Provided priority group does not exist for this consumer"),
        ("plain", b'{"group":"A"}', 400, 10160,
         "Provided priority group does not exist for this consumer"),
        ("zz", b'{"group":"A"}', 404, 10014, "consumer not found"),
    ]
    for cname, body, code, err_code, text in cases:
        out = js.api(f"CONSUMER.UNPIN.{stream_name}.{cname}", body)
        assert out == error_reply(t, code, err_code, text), (cname, body, out)
    out = js.api(f"CONSUMER.UNPIN.NO{stream_name}.p", b'{"group":"A"}')
    assert out == error_reply(t, 404, 10059, "stream not found")
    # The body is checked before the stream is looked up.
    out = js.api(f"CONSUMER.UNPIN.NO{stream_name}.p", b"")
    assert out["error"]["err_code"] == 10025


def test_js_consumer_unpin_success_and_advisory(target: str, js: JsClient,
                                                stream_name: str) -> None:
    setup(js, stream_name, 0)
    js.create_consumer(stream_name, {
        "durable_name": "p", "ack_policy": "explicit", "priority_groups": ["A", "B"],
        "priority_policy": "pinned_client"}, "p")
    ev = Sub(js, f"$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.{stream_name}.p")
    out = js.api(f"CONSUMER.UNPIN.{stream_name}.p", b'{"group":"B","extra":1}')
    assert out == {"type": "io.nats.jetstream.api.v1.consumer_unpin_response"}
    subject, body = ev.event()
    assert check_envelope(body, "advisory.v1.consumer_group_unpinned") == {
        "account": "$G", "stream": stream_name, "consumer": "p", "group": "B",
        "reason": "admin"}
    assert list(body)[3:] == ["account", "stream", "consumer", "group", "reason"]


def reset(js: JsClient, stream: str, cname: str, body: Any = None) -> dict[str, Any]:
    m = js.api_msg(f"CONSUMER.RESET.{stream}.{cname}", body)
    assert not m.header
    return m.json()


def test_js_consumer_reset_to_ack_floor_and_to_seq(target: str, js: JsClient,
                                                   stream_name: str) -> None:
    setup(js, stream_name)
    created = js.create_consumer(stream_name, {"durable_name": "d", "ack_policy": "explicit"}, "d")
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", {"batch": 3},
               until_status=False, count=3)
    js.request(got[0].reply or "", b"")
    out = reset(js, stream_name, "d")
    assert list(out)[:4] == ["type", "stream_name", "name", "created"]
    assert out["type"] == "io.nats.jetstream.api.v1.consumer_reset_response"
    assert list(out)[-2:] == ["ts", "reset_seq"] and out["reset_seq"] == 2
    assert out["config"] == created["config"]
    assert (out["delivered"], out["ack_floor"]) == ({"consumer_seq": 0, "stream_seq": 1},
                                                    {"consumer_seq": 0, "stream_seq": 1})
    assert (out["num_ack_pending"], out["num_redelivered"], out["num_pending"]) == (0, 0, 4)
    out = reset(js, stream_name, "d", {"seq": 4, "unknown": True})
    assert out["reset_seq"] == 4 and out["delivered"]["stream_seq"] == 3
    assert out["num_pending"] == 2
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{stream_name}.d", {"batch": 1},
               until_status=False, count=1)
    assert got[0].data == b"m3" and ack_fields(got[0])[2:5] == (1, 4, 1)
    out = reset(js, stream_name, "d", {"seq": 40})
    assert (out["reset_seq"], out["delivered"]["stream_seq"], out["num_pending"]) == (40, 39, 0)
    out = reset(js, stream_name, "d", {"seq": 0})  # after the (moved) ack floor
    assert out["reset_seq"] == 40


def test_js_consumer_reset_errors_and_policies(target: str, js: JsClient,
                                               stream_name: str) -> None:
    setup(js, stream_name)
    js.create_consumer(stream_name, {
        "durable_name": "bss", "deliver_policy": "by_start_sequence", "opt_start_seq": 2}, "bss")
    js.create_consumer(stream_name, {"durable_name": "new", "deliver_policy": "new"}, "new")
    t = "io.nats.jetstream.api.v1.consumer_reset_response"

    def err(code: int, err_code: int, text: str) -> dict[str, Any]:
        return {"type": t, "error": {"code": code, "err_code": err_code, "description": text},
                "reset_seq": 0}

    assert reset(js, stream_name, "bss", {"seq": 1}) == err(400, 10204,
                                                            "invalid reset: below start seq")
    assert reset(js, stream_name, "bss", {"seq": 3})["reset_seq"] == 3
    assert reset(js, stream_name, "new", {"seq": 3}) == err(400, 10204,
                                                            "invalid reset: not allowed")
    assert reset(js, stream_name, "new")["reset_seq"] == 6
    assert reset(js, stream_name, "new", b"{bad") == err(
        400, 10025,
        "invalid JSON: invalid character 'b' looking for beginning of object key string")
    assert reset(js, stream_name, "new", b"text") == err(
        400, 10025, "invalid JSON: invalid character 'e' in literal true (expecting 'r')")
    # Served by the consumer: nothing answers for a missing consumer or stream.
    js.no_reply(f"$JS.API.CONSUMER.RESET.{stream_name}.zz")
    js.no_reply(f"$JS.API.CONSUMER.RESET.NO{stream_name}.zz")
