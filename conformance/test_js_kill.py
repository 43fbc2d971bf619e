"""File streams across a killed server (``kill -9``, then a start on the same store directory).

What a file stream stored survives the kill whether or not a publisher was told: a message
published without a reply subject (nats-py's ``nc.publish``, as the ordered-consumer tests of
nats.py publish their data) is written by nats-server's file store within milliseconds, with
no pub ack and no consumer to wait for it. So is the position a durable consumer reached
through acks sent without a reply subject (``msg.ack()``).
"""
from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest

from conformance.helpers import SpawnFn, restartable
from conformance.jshelpers import JsClient, unique_name, wait_for
from conformance.pullconsumer import pull
from conformance.servers import ServerProcess

#: nats-server's file store flushes its write buffer a few milliseconds after a store; both
#: servers have written everything long before this.
SETTLE = 0.5


def kill(srv: ServerProcess) -> None:
    assert srv.proc is not None
    srv.proc.kill()
    srv.proc.wait()
    srv.stop()


@pytest.mark.parametrize("with_consumer", [False, True])
def test_js_kill_keeps_messages_published_without_reply(target: str, spawn: SpawnFn,
                                                        tmp_path: Path,
                                                        with_consumer: bool) -> None:
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"], duplicate_window=60_000_000_000)
    if with_consumer:
        out = js.api(f"CONSUMER.CREATE.{name}.d",
                     {"stream_name": name, "config": {"durable_name": "d",
                                                      "ack_policy": "explicit"}})
        assert "error" not in out, out
    for i in range(20):
        js.send(f"{p}.{i % 3}", b"m%d" % i)
    js.send(f"{p}.id", b"with-id", headers=b"NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n")
    before = wait_for(lambda: (lambda st: st if st["messages"] == 21 else None)(js.state(name)))
    time.sleep(SETTLE)
    js.close()
    kill(srv)

    srv = start()
    js = JsClient.connect(srv)
    assert js.state(name) == before
    last = js.msg_get(name, {"last_by_subj": f"{p}.1"})["message"]
    assert (last["seq"], base64.b64decode(last["data"])) == (20, b"m19")
    # The message id came back with its message: a second publish of it is a duplicate.
    dup = js.publish(f"{p}.id", b"again", headers=b"NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n").json()
    assert dup == {**dup, "seq": 21, "duplicate": True}
    if with_consumer:
        info = js.api(f"CONSUMER.INFO.{name}.d")
        assert (info["num_pending"], info["num_ack_pending"]) == (21, 0)
    js.close()


def test_js_kill_keeps_durable_acks_sent_without_reply(target: str, spawn: SpawnFn,
                                                       tmp_path: Path) -> None:
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    p = name.lower()
    js.create(name, subjects=[f"{p}.>"])
    for i in range(6):
        js.pub_ok(f"{p}.x", b"m%d" % i)
    out = js.api(f"CONSUMER.CREATE.{name}.d",
                 {"stream_name": name, "config": {"durable_name": "d", "ack_policy": "explicit"}})
    assert "error" not in out, out
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{name}.d", {"batch": 4}, count=4)
    for m in got[:3]:
        js.send(m.reply, b"+ACK")
    before = wait_for(lambda: (lambda i: i if i["ack_floor"]["stream_seq"] == 3 else None)(
        js.api(f"CONSUMER.INFO.{name}.d")))
    time.sleep(SETTLE)
    js.close()
    kill(srv)

    srv = start()
    js = JsClient.connect(srv)
    after = js.api(f"CONSUMER.INFO.{name}.d")
    assert ((after["delivered"]["stream_seq"], after["ack_floor"]["stream_seq"],
             after["num_ack_pending"], after["num_pending"])
            == (before["delivered"]["stream_seq"], 3, 1, 2))
    js.close()
