"""Consumers across a server restart on the same store directory:
durable state — delivered, ack floor, pending acks with their delivery counts — comes back,
unacked messages are redelivered once their ack wait has passed, ephemerals of file streams come
back until their inactivity threshold removes them, ``mem_storage`` consumers do not."""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from conformance.helpers import SpawnFn, restartable
from conformance.jshelpers import JsClient, Sub, ack_fields, unique_name, wait_for
from conformance.pullconsumer import pull

S = 1_000_000_000


def without_activity(info: dict[str, Any]) -> dict[str, Any]:
    out = dict(info)
    out.pop("ts", None)
    for k in ("delivered", "ack_floor"):
        out[k] = {kk: vv for kk, vv in out[k].items() if kk != "last_active"}
    return out


def test_js_consumer_state_durable_pull_survives_restart(target: str, spawn: SpawnFn,
                                                         tmp_path: Path) -> None:
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"])
    for i in range(4):
        js.pub_ok(f"{name.lower()}.{i}", f"m{i}")
    js.create_consumer(name, {
        "durable_name": "d", "ack_policy": "explicit", "ack_wait": 2 * S}, "d")
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{name}.d", {"batch": 3}, count=3)
    js.request(got[1].reply, b"+ACK")
    before = js.api(f"CONSUMER.INFO.{name}.d")
    assert (before["num_ack_pending"], before["num_pending"]) == (2, 1)
    assert "last_active" in before["delivered"]
    js.close()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    after = js.api(f"CONSUMER.INFO.{name}.d")
    assert without_activity(after) == without_activity(before)
    assert "last_active" not in after["delivered"] and "last_active" not in after["ack_floor"]
    # The new message first, then the two unacked ones once their ack wait has passed.
    t0 = time.monotonic()
    got = pull(js, f"$JS.API.CONSUMER.MSG.NEXT.{name}.d", {"batch": 3, "expires": 6 * S},
               count=3, timeout=6)
    assert [ack_fields(m)[2:5] for m in got] == [(1, 4, 4), (2, 1, 5), (2, 3, 6)]
    assert [m.data for m in got] == [b"m3", b"m0", b"m2"]
    assert time.monotonic() - t0 < 5
    for m in got:
        js.request(m.reply, b"+ACK")
    final = js.api(f"CONSUMER.INFO.{name}.d")
    assert final["ack_floor"] == {**final["ack_floor"], "consumer_seq": 6, "stream_seq": 4}
    assert (final["num_ack_pending"], final["num_redelivered"]) == (0, 0)
    js.close()


def test_js_consumer_state_ephemerals_and_mem_storage_after_restart(
        target: str, spawn: SpawnFn, tmp_path: Path) -> None:
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"])
    js.pub_ok(f"{name.lower()}.a", "x")
    auto = js.api(f"CONSUMER.CREATE.{name}", {"stream_name": name, "config": {
        "ack_policy": "explicit", "inactive_threshold": 30 * S}})
    assert "name" not in auto["config"]
    js.create_consumer(name, {
        "name": "pe", "deliver_subject": f"dl.{name}", "inactive_threshold": 2 * S}, "pe")
    js.create_consumer(name, {"durable_name": "mem", "mem_storage": True}, "mem")
    js.create_consumer(name, {
        "durable_name": "dur", "ack_policy": "all", "description": "kept"}, "dur")
    assert js.api(f"CONSUMER.NAMES.{name}")["total"] == 4
    js.close()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    names = js.api(f"CONSUMER.NAMES.{name}")["consumers"]
    assert names == sorted([auto["name"], "dur", "pe"])
    info = js.api(f"CONSUMER.INFO.{name}.{auto['name']}")
    # The auto-named ephemeral now shows its name in the config.
    assert info["config"] == {**auto["config"], "name": auto["name"]}
    assert info["created"] == auto["created"]
    assert js.api(f"CONSUMER.INFO.{name}.dur")["config"]["description"] == "kept"
    assert js.api(f"CONSUMER.INFO.{name}.mem")["error"]["err_code"] == 10014
    # The push ephemeral has no subscriber: its inactivity threshold runs from the restart.
    wait_for(lambda: "pe" not in js.api(f"CONSUMER.NAMES.{name}")["consumers"], timeout=6)
    assert js.api(f"CONSUMER.NAMES.{name}")["consumers"] == sorted([auto["name"], "dur"])
    js.close()


def test_js_consumer_state_deleted_consumer_stays_deleted(target: str, spawn: SpawnFn,
                                                          tmp_path: Path) -> None:
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"])
    js.create_consumer(name, {"durable_name": "a"}, "a")
    js.create_consumer(name, {"durable_name": "b", "deliver_policy": "new"}, "b")
    js.create_consumer(name, {"durable_name": "b", "deliver_policy": "new", "max_deliver": 5}, "b")
    assert js.api(f"CONSUMER.DELETE.{name}.a")["success"] is True
    js.pub_ok(f"{name.lower()}.x", "after create")
    js.close()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    assert js.api(f"CONSUMER.NAMES.{name}")["consumers"] == ["b"]
    info = js.api(f"CONSUMER.INFO.{name}.b")
    assert info["config"]["max_deliver"] == 5
    # A deliver-new consumer keeps its starting position: the message published after it
    # was created is still pending.
    assert info["num_pending"] == 1 and info["delivered"] == {"consumer_seq": 0, "stream_seq": 0}
    js.close()


def test_js_consumer_state_last_per_subject_after_restart(target: str, spawn: SpawnFn,
                                                          tmp_path: Path) -> None:
    """A ``last_per_subject`` consumer keeps only its position across a restart: nats-server
    does not keep the list of per-subject start messages, so after the restart it counts
    pending as the subjects whose last message is still ahead and delivers every message from
    its position on."""
    start = restartable(spawn, tmp_path)
    srv = start()
    js = JsClient.connect(srv)
    name = unique_name()
    p = name.lower()
    for i, subj in enumerate(["a", "b", "a", "c", "c"]):
        if i == 0:
            js.create(name, subjects=[f"{p}.>"])
        js.pub_ok(f"{p}.{subj}", f"m{i + 1}")
    js.create_consumer(name, {
        "durable_name": "d", "ack_policy": "explicit", "deliver_policy": "last_per_subject",
        "filter_subject": f"{p}.>"}, "d")
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{name}.d"
    assert js.api(f"CONSUMER.INFO.{name}.d")["num_pending"] == 3
    [m] = pull(js, nxt, {"batch": 1}, count=1)
    assert (m.subject, m.data) == (f"{p}.b", b"m2")
    js.request(m.reply, b"+ACK")
    assert js.api(f"CONSUMER.INFO.{name}.d")["num_pending"] == 2
    js.close()
    srv.stop()

    srv = start()
    js = JsClient.connect(srv)
    after = js.api(f"CONSUMER.INFO.{name}.d")
    assert (after["num_pending"], after["delivered"]["stream_seq"]) == (2, 2)
    got = pull(js, nxt, {"batch": 5, "no_wait": True})
    assert [(m.subject, m.data) for m in got[:-1]] == [
        (f"{p}.a", b"m3"), (f"{p}.c", b"m4"), (f"{p}.c", b"m5")]
    assert got[-1].status == "404 No Messages"
    assert js.api(f"CONSUMER.INFO.{name}.d")["num_pending"] == 0
    js.close()
    srv.stop()


def test_js_consumer_shutdown_ends_waiting_pulls(target: str, spawn: SpawnFn,
                                                 tmp_path: Path) -> None:
    """A graceful shutdown tells every waiting pull request ``409 Server Shutdown`` with what
    it still wanted, before the connection closes."""
    srv = restartable(spawn, tmp_path)()
    js = JsClient.connect(srv)
    name = unique_name()
    js.create(name, subjects=[f"{name.lower()}.>"], storage="memory")
    js.create_consumer(name, {"durable_name": "d", "ack_policy": "explicit"}, "d")
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{name}.d"
    inboxes = [Sub(js), Sub(js)]
    js.send(nxt, {"batch": 3, "expires": 60 * S}, reply=inboxes[0].subject)
    js.send(nxt, {"batch": 2, "max_bytes": 500, "expires": 60 * S}, reply=inboxes[1].subject)
    wait_for(lambda: js.api(f"CONSUMER.INFO.{name}.d")["num_waiting"] == 2)
    srv.proc.send_signal(signal.SIGTERM)  # the client stays connected to read what comes
    frames = [inbox.next(5.0) for inbox in inboxes]
    assert [m.header for m in frames] == [
        b"NATS/1.0 409 Server Shutdown\r\nNats-Pending-Messages: 3\r\n"
        b"Nats-Pending-Bytes: 0\r\n\r\n",
        b"NATS/1.0 409 Server Shutdown\r\nNats-Pending-Messages: 2\r\n"
        b"Nats-Pending-Bytes: 500\r\n\r\n"]
    js.close()
    srv.stop()
