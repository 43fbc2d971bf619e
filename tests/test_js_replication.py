"""Mirrors and sources inside minijs: the retry schedule and stall detection on the virtual
clock, work-queue and interest origins (flow-control acks on the clock, the durable consumer
deleted under a link), a followed stream turned interest, catch-up in chunks, source positions recovered from headers, the
floors (``stream.py`` does not know replication exists) and the cost for streams without
followers. What clients see is pinned by conformance/test_js_mirror_sources.py on both
servers."""
from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import nats

from minijs.clock import VirtualClock
from minijs.jetstream import mirrors as R
from minijs.server import Server
from tests.jsapi import api

ROOT = Path(__file__).resolve().parent.parent


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def create(nc: Any, name: str, **config: Any) -> dict:
    out = await api(nc, f"STREAM.CREATE.{name}", {"name": name, **config})
    assert "error" not in out, out
    return out


async def info(nc: Any, name: str) -> dict:
    return await api(nc, f"STREAM.INFO.{name}")


async def test_missing_origin_is_retried_on_the_clock(server: Server, nc: Any,
                                                      clock: VirtualClock) -> None:
    await create(nc, "M", mirror={"name": "O"}, storage="memory")
    await turns()
    m = (await info(nc, "M"))["mirror"]
    assert m["error"] == {"code": 404, "err_code": 10059, "description": "stream not found"}
    await create(nc, "O", subjects=["o.>"], storage="memory")
    await nc.request("o.1", b"x", timeout=2)
    # first failure: 2 s throttle + 10 s backoff + 150 ms jitter
    await clock.advance_async(12.1)
    assert (await info(nc, "M"))["state"]["messages"] == 0
    await clock.advance_async(0.1)
    await turns()
    out = await info(nc, "M")
    assert out["state"]["messages"] == 1 and "error" not in out["mirror"]


async def test_backoff_grows_and_caps(server: Server, nc: Any, clock: VirtualClock) -> None:
    """Attempts at 0, then 2 s + 10 s × failures (+150 ms), at most 2 min apart."""
    await create(nc, "M", mirror={"name": "O"}, storage="memory")
    await turns()
    js = server.jetstream
    attempts = [clock.monotonic()]
    seen = js.api_errors
    while len(attempts) < 16:
        await clock.advance_async(0.05)
        if js.api_errors != seen:
            seen = js.api_errors
            attempts.append(clock.monotonic())
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    expected = [min(2 + 10 * k, 2 + 120) + 0.15 for k in range(1, 16)]
    assert all(abs(g - e) <= 0.051 for g, e in zip(gaps, expected)), gaps
    assert R.backoff(1) == 10 and R.backoff(100) == 120


async def test_deleted_origin_noticed_by_health_check(server: Server, nc: Any,
                                                      clock: VirtualClock) -> None:
    await create(nc, "O", subjects=["o.>"], storage="memory")
    await create(nc, "M", mirror={"name": "O"}, storage="memory")
    await turns()
    assert (await info(nc, "M"))["mirror"]["active"] >= 0
    assert (await api(nc, "INFO"))["consumers"] == 1
    await api(nc, "STREAM.DELETE.O")
    assert (await api(nc, "INFO"))["consumers"] == 0
    await clock.advance_async(9.5)
    assert "error" not in (await info(nc, "M"))["mirror"]
    await clock.advance_async(1)
    m = (await info(nc, "M"))["mirror"]
    assert m["error"]["err_code"] == 10059
    assert m["active"] >= 10_000_000_000


async def names(nc: Any, stream: str) -> list[str]:
    return (await api(nc, f"CONSUMER.NAMES.{stream}"))["consumers"]


async def test_workqueue_origin_acks_on_the_heartbeat(server: Server, nc: Any,
                                                       clock: VirtualClock) -> None:
    """A mirror of a work queue created before its origin: once the origin appears the link
    sets up its durable consumer there; what it copies leaves the origin at the next
    flow-control tick (1 s), not before."""
    await create(nc, "M", mirror={"name": "W"}, storage="memory")
    await turns()
    await create(nc, "W", subjects=["w.>"], retention="workqueue", storage="memory")
    await clock.advance_async(12.2)
    await turns()
    name = "JS_MIRROR_" + R.get_hash("M $G")
    assert await names(nc, "W") == [name]
    for i in range(3):
        await nc.request("w.job", b"%d" % i, timeout=2)
    await turns()
    assert (await info(nc, "M"))["state"]["messages"] == 3
    assert (await info(nc, "W"))["state"]["messages"] == 3
    c = await api(nc, f"CONSUMER.INFO.W.{name}")
    assert (c["delivered"]["stream_seq"], c["ack_floor"]["stream_seq"], c["num_ack_pending"]) == (3, 0, 3)
    await clock.advance_async(1.0)
    await turns()
    assert (await info(nc, "W"))["state"]["messages"] == 0
    c = await api(nc, f"CONSUMER.INFO.W.{name}")
    assert (c["ack_floor"]["consumer_seq"], c["ack_floor"]["stream_seq"]) == (3, 3)
    assert (await api(nc, "INFO"))["consumers"] == 1


async def test_max_ack_pending_acks_at_once(server: Server, nc: Any, clock: VirtualClock) -> None:
    """1000 messages awaiting the flow-control ack (the consumer's max_ack_pending) are acked
    without waiting for the tick."""
    await create(nc, "W", subjects=["w.>"], retention="workqueue", storage="memory")
    await create(nc, "S", sources=[{"name": "W"}], storage="memory")
    await turns()
    for i in range(1000):
        await nc.publish("w.job", b"x")
    await nc.flush()
    for _ in range(50):
        await turns()
        if (await info(nc, "S"))["state"]["messages"] == 1000:
            break
    await turns()
    assert (await info(nc, "W"))["state"]["messages"] == 0


async def test_deleted_durable_consumer_is_set_up_again(server: Server, nc: Any,
                                                        clock: VirtualClock) -> None:
    """The durable consumer deleted under a mirror: nothing more is copied (the origin keeps
    it), and the health check sets up a new one that catches up."""
    await create(nc, "I", subjects=["i.>"], retention="interest", storage="memory")
    await create(nc, "M", mirror={"name": "I"}, storage="memory")
    await turns()
    name = "JS_MIRROR_" + R.get_hash("M $G")
    out = await api(nc, f"CONSUMER.DELETE.I.{name}")
    assert out["success"] is True
    out = await api(nc, "CONSUMER.CREATE.I.app", {"stream_name": "I", "config": {
        "durable_name": "app", "ack_policy": "explicit"}})
    assert "error" not in out, out
    await nc.request("i.x", b"1", timeout=2)
    await turns()
    assert (await info(nc, "M"))["state"]["messages"] == 0
    assert await names(nc, "I") == ["app"]
    await clock.advance_async(10.5)
    await turns()
    assert sorted(await names(nc, "I")) == sorted([name, "app"])
    # the new consumer starts after the mirror's last sequence (none): it takes message 1
    assert (await info(nc, "M"))["state"]["messages"] == 1


async def test_given_consumer_waited_for_and_left_alone(server: Server, nc: Any,
                                                        clock: VirtualClock) -> None:
    """A source naming a consumer that does not exist yet polls for it every 2 s (no error, no
    API request); deleting the source leaves the application's consumer."""
    await create(nc, "O", subjects=["o.>"], storage="memory")
    await nc.request("o.a", b"1", timeout=2)
    await create(nc, "S", sources=[{"name": "O", "consumer": {"name": "UC", "deliver_subject": "d.uc"}}],
                 storage="memory")
    await turns()
    total = server.jetstream.api_total
    out = await api(nc, "CONSUMER.CREATE.O.UC", {"stream_name": "O", "config": {
        "durable_name": "UC", "ack_policy": "flow_control", "deliver_subject": "d.uc",
        "max_ack_pending": 10}})
    assert "error" not in out, out
    await clock.advance_async(2.2)
    await turns()
    assert (await info(nc, "S"))["state"]["messages"] == 1
    assert server.jetstream.api_total == total + 2  # the create and the info
    await api(nc, "STREAM.DELETE.S")
    assert await names(nc, "O") == ["UC"]


async def test_given_consumer_kept_while_followed(server: Server, nc: Any,
                                                  clock: VirtualClock) -> None:
    """A given consumer with an inactivity threshold is bound while the link follows it (it
    stays however long), and goes that long after the follower is deleted."""
    await create(nc, "O", subjects=["o.>"], storage="memory")
    out = await api(nc, "CONSUMER.CREATE.O.UC", {"stream_name": "O", "config": {
        "durable_name": "UC", "ack_policy": "flow_control", "deliver_subject": "d.uc",
        "max_ack_pending": 10, "inactive_threshold": 2_000_000_000}})
    assert "error" not in out, out
    await create(nc, "S", sources=[{"name": "O", "consumer": {"name": "UC", "deliver_subject": "d.uc"}}],
                 storage="memory")
    await turns()
    await clock.advance_async(10)
    assert await names(nc, "O") == ["UC"]
    assert (await api(nc, "CONSUMER.INFO.O.UC"))["push_bound"] is True
    await api(nc, "STREAM.DELETE.S")
    await clock.advance_async(1.9)
    assert await names(nc, "O") == ["UC"]
    await clock.advance_async(0.2)
    assert await names(nc, "O") == []


async def test_fed_consumer_hears_of_removed_messages(server: Server, nc: Any,
                                                      clock: VirtualClock) -> None:
    """A consumer a link feeds from (here a given one) holds what the link read until the
    flow-control ack: a message removed from the origin meanwhile is acked as a +TERM
    (``Unacknowledged message was deleted``) like any pending message."""
    await create(nc, "O", subjects=["o.>"], storage="memory")
    out = await api(nc, "CONSUMER.CREATE.O.UC", {"stream_name": "O", "config": {
        "durable_name": "UC", "ack_policy": "flow_control", "deliver_subject": "d.uc",
        "max_ack_pending": 10}})
    assert "error" not in out, out
    await create(nc, "S", sources=[{"name": "O", "consumer": {"name": "UC", "deliver_subject": "d.uc"}}],
                 storage="memory")
    await turns()
    consumer = server.jetstream.streams["O"].consumers["UC"]  # type: ignore[union-attr]
    assert consumer.feeder is not None
    events = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.O.UC")
    await nc.request("o.a", b"1", timeout=2)
    await turns()
    assert (await info(nc, "S"))["state"]["messages"] == 1
    assert (await api(nc, "CONSUMER.INFO.O.UC"))["num_ack_pending"] == 1
    out = await api(nc, "STREAM.MSG.DELETE.O", {"seq": 1})
    assert out.get("success") is True, out
    ev = (await events.next_msg(timeout=2)).data
    assert b'"reason":"Unacknowledged message was deleted"' in ev
    assert (await api(nc, "CONSUMER.INFO.O.UC"))["num_ack_pending"] == 0


async def test_followed_stream_becomes_interest(server: Server, nc: Any) -> None:
    """A followed limits stream updated to interest retention: the link (no consumer of the
    origin's own) counts as interest for what its filter selects, and removes nothing."""
    await create(nc, "L", subjects=["l.>"], storage="memory")
    await create(nc, "S2", sources=[{"name": "L", "filter_subject": "l.a"}], storage="memory")
    await turns()
    out = await api(nc, "STREAM.UPDATE.L", {"name": "L", "subjects": ["l.>"],
                                            "retention": "interest", "storage": "memory"})
    assert "error" not in out, out
    await nc.request("l.a", b"1", timeout=2)
    await nc.request("l.b", b"2", timeout=2)  # nobody is interested: not kept
    await turns()
    st = (await info(nc, "L"))["state"]
    assert (st["messages"], st["last_seq"]) == (1, 2)
    assert (await info(nc, "S2"))["state"]["messages"] == 1
    assert await names(nc, "L") == []


async def test_catch_up_runs_in_chunks(server: Server, nc: Any, monkeypatch: Any) -> None:
    await create(nc, "O", subjects=["o.>"], storage="memory")
    stream = server.jetstream.lookup("O")
    now = server.clock.time_ns()
    n = R.CHUNK * 2 + 7
    for i in range(n):
        stream.store.store_msg("o.x", None, b"%d" % i, now)
    later: list = []
    monkeypatch.setattr(server.jetstream, "soon", later.append)
    await create(nc, "M", mirror={"name": "O"}, storage="memory")
    mirror = server.jetstream.lookup("M")
    link = server.jetstream.replicator.links["M"][0]
    later.pop(0)()  # the first setup attempt
    assert mirror.store.msgs == R.CHUNK and link.lag == n - R.CHUNK
    later.pop(0)()
    assert mirror.store.msgs == 2 * R.CHUNK
    later.pop(0)()
    assert mirror.store.msgs == n and link.lag == 0 and not later


async def test_source_position_from_headers_without_metadata(tmp_path: Path) -> None:
    clock = VirtualClock()
    sd = str(tmp_path / "js")
    srv = Server(port=0, jetstream=True, clock=clock, store_dir=sd)
    await srv.start()
    nc = await nats.connect(srv.client_url)
    await create(nc, "O", subjects=["o.>"])
    for i in range(3):
        await nc.request("o.x", b"%d" % i, timeout=2)
    await create(nc, "S", sources=[{"name": "O"}])
    await turns(10)
    s = srv.jetstream.lookup("S")
    assert s.store.msgs == 3
    link = srv.jetstream.replicator.links["S"][0]
    s.store.delete_meta("src:" + link.iname)
    srv.jetstream.flush_now(s)
    await nc.close()
    await srv.restart()
    nc = await nats.connect(srv.client_url)
    await nc.request("o.x", b"3", timeout=2)
    await turns(10)
    s = srv.jetstream.lookup("S")
    assert s.store.msgs == 4
    out = await info(nc, "S")
    assert out["sources"][0]["seq"] == 4
    await nc.close()
    await srv.stop()


async def test_source_start_time_survives_a_restart(tmp_path: Path) -> None:
    """A file stream keeps its config as its reply shows it (times as RFC 3339 text); recovered,
    a source's ``opt_start_time`` is a time again, with its zone: the stream answers INFO with
    the same config and keeps sourcing."""
    srv = Server(port=0, jetstream=True, clock=VirtualClock(), store_dir=str(tmp_path / "js"))
    await srv.start()
    nc = await nats.connect(srv.client_url)
    await create(nc, "O", subjects=["o.>"])
    await nc.request("o.x", b"0", timeout=2)
    start = "2024-01-01T01:00:00+01:00"
    created = await create(nc, "S", sources=[{"name": "O", "opt_start_time": start}])
    await turns(10)
    await nc.close()
    await srv.restart()
    nc = await nats.connect(srv.client_url)
    out = await info(nc, "S")
    assert "error" not in out, out
    assert out["config"] == created["config"]
    assert out["config"]["sources"][0]["opt_start_time"] == start
    await nc.request("o.x", b"1", timeout=2)
    await turns(10)
    assert srv.jetstream.lookup("S").store.msgs == 2
    await nc.close()
    await srv.stop()


async def test_streams_without_followers_queue_nothing(server: Server, nc: Any) -> None:
    await create(nc, "P", subjects=["p.>"], storage="memory")
    stream = server.jetstream.lookup("P")
    await nc.request("p.x", b"", timeout=2)
    assert stream.followers == [] and stream.signals.queued == [] and stream.links_info is None


def test_stream_does_not_import_replication() -> None:
    tree = ast.parse((ROOT / "minijs/jetstream/streams/stream.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    assert not any("replication" in n for n in names), names


def test_hash_and_index_name() -> None:
    # values observed on nats-server 2.15.1 (stable consumer names it creates)
    assert R.get_hash("MW $G") == "wlikDEbF"
    assert R.get_hash(R.get_hash("SW $G")) == "tn68Iz9N"
    assert R.index_name({"name": "A", "filter_subject": "", "subject_transforms": None}) == "A > >"
    assert R.index_name({"name": "A", "filter_subject": "a.*"}) == "A a.* >"
    assert R.index_name({"name": "A", "subject_transforms": [
        {"src": "a.>", "dest": "b.>"}, {"src": "", "dest": ""}]}) == "A a.>\f> b.>\f>"
