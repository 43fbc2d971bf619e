"""The in-process cluster: nodes, routes, the meta group, replicated streams, failover and the
test-control powers, on the virtual clock (what real clients see is proven by the conformance
suite's cluster cases, on minijs and on a nats-server cluster)."""
from __future__ import annotations

import asyncio
import json

import nats
import pytest
from nats.js.api import StreamConfig

from minijs import Server, ServerThread
from minijs.clustering import Cluster, ClusterError


async def _cluster(**kw) -> Cluster:
    kw.setdefault("port", 0)
    kw.setdefault("clock", "virtual")
    cluster = Server(cluster_size=3, **kw)
    assert isinstance(cluster, Cluster)
    await cluster.start()
    return cluster


async def test_nodes_have_their_own_identity_and_see_each_other():
    cluster = await _cluster()
    try:
        assert [n.name for n in cluster.nodes] == ["n1", "n2", "n3"]
        assert len({n.server_id for n in cluster.nodes}) == 3
        nc = await nats.connect(cluster.nodes[1].client_url)
        info = nc._server_info
        assert info["server_name"] == "n2" and info["cluster"] == "minijs"
        assert len(info["connect_urls"]) == 3
        await nc.close()
    finally:
        await cluster.stop()


async def test_core_messages_queue_groups_and_no_responders_span_nodes():
    cluster = await _cluster()
    try:
        a, b, c = [await nats.connect(n.client_url) for n in cluster.nodes]
        got: list[str] = []

        async def on_msg(msg):
            got.append(msg.data.decode())

        await b.subscribe("x.>", cb=on_msg)
        await b.flush()
        await asyncio.sleep(0.01)
        await a.publish("x.1", b"one")
        await a.flush()
        await asyncio.sleep(0.05)
        assert got == ["one"]

        counts = {"b": 0, "c": 0}

        async def qb(msg):
            counts["b"] += 1

        async def qc(msg):
            counts["c"] += 1

        await b.subscribe("q", queue="w", cb=qb)
        await c.subscribe("q", queue="w", cb=qc)
        await b.flush()
        await c.flush()
        await asyncio.sleep(0.01)
        for _ in range(50):
            await a.publish("q", b"")
        await a.flush()
        await asyncio.sleep(0.1)
        assert counts["b"] + counts["c"] == 50  # each message once, cluster-wide
        assert counts["b"] and counts["c"]

        with pytest.raises(nats.errors.NoRespondersError):
            await a.request("nobody.home", b"", timeout=1)
        for nc in (a, b, c):
            await nc.close()
    finally:
        await cluster.stop()


async def test_r3_stream_acks_after_commit_and_survives_its_leaders_crash():
    cluster = await _cluster(jetstream=True)
    try:
        nc = await nats.connect(cluster.nodes[0].client_url)
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name="S", subjects=["s.>"], num_replicas=3))
        assert info.cluster.name == "minijs" and len(info.cluster.replicas) == 2
        for i in range(5):
            await js.publish("s.x", f"m{i}".encode(), headers={"Nats-Msg-Id": f"id{i}"})
        leader = info.cluster.leader
        snap = cluster.cluster()
        assert snap["meta_leader"] in ("n1", "n2", "n3")
        [stream] = snap["streams"]
        assert stream["leader"] == leader and all(r["lag"] == 0 for r in stream["replicas"])
        await nc.close()

        await cluster.node(leader).crash()
        await cluster.clock.advance_async(10)  # the followers' election timeouts run out
        survivor = next(n for n in cluster.nodes if n.up)
        nc = await nats.connect(survivor.client_url)
        js = nc.jetstream()
        info = await js.stream_info("S")
        assert info.cluster.leader not in (None, leader)
        assert info.state.messages == 5
        dup = await js.publish("s.x", b"again", headers={"Nats-Msg-Id": "id4"})
        assert dup.duplicate  # the dedup window holds across the leader change
        ack = await js.publish("s.x", b"after")
        assert ack.seq == 6
        await nc.close()

        await cluster.node(leader).restart()
        await cluster.clock.advance_async(2)
        snap = cluster.cluster()
        assert all(r["lag"] == 0 for r in snap["streams"][0]["replicas"])
    finally:
        await cluster.stop()


async def test_a_majority_lost_stops_writes():
    cluster = await _cluster(jetstream=True)
    try:
        nc = await nats.connect(cluster.nodes[0].client_url)
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name="S", subjects=["s.>"], num_replicas=3))
        leader = info.cluster.leader
        others = [n for n in cluster.nodes if n.name != leader]
        await nc.close()
        for node in others:
            await node.kill()
        nc = await nats.connect(cluster.node(leader).client_url)
        js = nc.jetstream()
        with pytest.raises((nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError)):
            await js.publish("s.x", b"lost", timeout=0.5)
        await nc.close()
    finally:
        await cluster.stop()


async def test_stream_list_names_and_delete_through_the_meta_leader():
    cluster = await _cluster(jetstream=True)
    try:
        nc = await nats.connect(cluster.nodes[2].client_url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="A", subjects=["a"], num_replicas=1))
        await js.add_stream(StreamConfig(name="B", subjects=["b"], num_replicas=3))
        names = await js.streams_info()
        assert sorted(s.config.name for s in names) == ["A", "B"]
        assert await js.delete_stream("A")
        reply = await nc.request("$JS.API.STREAM.NAMES", b"", timeout=1)
        assert json.loads(reply.data)["streams"] == ["B"]
        await nc.close()
    finally:
        await cluster.stop()


async def test_reset_empties_every_node_and_keeps_a_meta_leader():
    cluster = await _cluster(jetstream=True)
    try:
        nc = await nats.connect(cluster.client_url)
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="S", subjects=["s"], num_replicas=3))
        cluster.reset()
        await asyncio.sleep(0.01)
        assert cluster.meta_leader() is not None
        assert cluster.streams() == []
        await js.add_stream(StreamConfig(name="S", subjects=["s"], num_replicas=3))
        assert [s.name for s in cluster.streams()] == ["S"]
        await nc.close()
    finally:
        await cluster.stop()


async def test_bad_input_names_the_fix_and_changes_nothing():
    with pytest.raises(ClusterError, match="from 1 to 5"):
        Server(cluster_size=6)
    with pytest.raises(ClusterError, match="from 1 to 5"):
        Server(cluster_size=0)
    cluster = await _cluster()
    try:
        with pytest.raises(ClusterError, match="unknown node 'n9'"):
            cluster.node("n9")
        with pytest.raises(ClusterError, match="more than one place"):
            cluster.partition(["n1", "n2"], ["n2", "n3"])
        with pytest.raises(ClusterError, match="unknown node"):
            cluster.partition(["n1"], ["n7"])
        assert all(cluster.network.reachable("n1", p) for p in ("n2", "n3"))
        await cluster.node("n2").kill()
        with pytest.raises(ClusterError, match="it is down"):
            await cluster.node("n2").kill()
    finally:
        await cluster.stop()


async def test_partition_and_heal_cut_and_restore_routes():
    cluster = await _cluster()
    try:
        a, b = [await nats.connect(n.client_url) for n in cluster.nodes[:2]]
        got: list[bytes] = []

        async def on_msg(msg):
            got.append(msg.data)

        await b.subscribe("p", cb=on_msg)
        await b.flush()
        await asyncio.sleep(0.01)
        cluster.partition(["n1"], ["n2", "n3"])
        await asyncio.sleep(0.01)
        await a.publish("p", b"cut")
        await a.flush()
        await asyncio.sleep(0.05)
        assert got == []
        cluster.heal()
        await asyncio.sleep(0.01)
        await a.publish("p", b"healed")
        await a.flush()
        await asyncio.sleep(0.05)
        assert got == [b"healed"]
        await a.close()
        await b.close()
    finally:
        await cluster.stop()


def test_server_thread_runs_a_cluster_with_its_powers():
    with ServerThread(cluster_size=3, jetstream=True, clock="virtual") as srv:
        assert [n.name for n in srv.nodes] == ["n1", "n2", "n3"]
        assert len(srv.client_urls) == 3
        srv.node("n3").kill()
        assert not srv.node("n3").up
        snap = srv.cluster()
        assert [n["up"] for n in snap["nodes"]] == [True, True, False]
        srv.node("n3").restart()
        assert srv.node("n3").up


async def test_control_plane_drives_the_cluster_from_any_node():
    cluster = await _cluster(jetstream=True, control=True)
    try:
        nc = await nats.connect(cluster.nodes[0].client_url)

        async def ask(subject: str, body: dict | None = None) -> dict:
            msg = await nc.request(subject, json.dumps(body or {}).encode(), timeout=2)
            return json.loads(msg.data)

        info = await ask("$MINIJS.CLUSTER.INFO")
        assert [n["name"] for n in info["nodes"]] == ["n1", "n2", "n3"]
        assert (await ask("$MINIJS.CLUSTER.KILL", {"node": "n9"}))["error"]["code"] == 404
        assert (await ask("$MINIJS.CLUSTER.PARTITION",
                          {"groups": [["n1"], ["n1", "n2"]]}))["error"]["code"] == 400
        assert (await ask("$MINIJS.CLUSTER.KILL", {"node": "n2"}))["kill"] is True
        assert not cluster.node("n2").up
        assert (await ask("$MINIJS.CLUSTER.RESTART", {"node": "n2"}))["restart"] is True
        assert cluster.node("n2").up
        assert (await ask("$MINIJS.CLUSTER.PARTITION", {"groups": [["n3"]]}))["partitioned"]
        assert not cluster.network.reachable("n1", "n3")
        assert (await ask("$MINIJS.CLUSTER.HEAL"))["healed"] is True
        assert cluster.network.reachable("n1", "n3")
        await nc.close()
    finally:
        await cluster.stop()


async def test_preload_creates_replicated_streams_once_the_cluster_is_ready():
    cluster = await _cluster(jetstream=True, preload={
        "streams": [{"name": "P", "subjects": ["p.>"], "num_replicas": 3}],
        "messages": [{"subject": "p.1", "data": "hello"}]})
    try:
        [stream] = cluster.cluster()["streams"]
        assert stream["name"] == "P" and len(stream["replicas"]) == 3
        assert [m.data for m in cluster.messages("P")] == [b"hello"]
    finally:
        await cluster.stop()


async def test_live_page_shows_the_nodes_and_the_leaders():
    import urllib.request

    cluster = await _cluster(jetstream=True, http_port=0)
    try:
        nc = await nats.connect(cluster.client_url)
        await nc.jetstream().add_stream(StreamConfig(name="LIVE", subjects=["live"],
                                                     num_replicas=3))
        port = cluster.nodes[1].server.monitor.port
        page = await asyncio.to_thread(lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{port}/minijs?part=state", timeout=5).read().decode())
        assert 'id="cluster-nodes"' in page and 'id="cluster-streams"' in page
        assert "LIVE" in page and cluster.meta_leader() in page
        await nc.close()
    finally:
        await cluster.stop()


async def test_the_same_seed_places_and_elects_the_same_way():
    async def run(seed: int) -> tuple:
        cluster = await _cluster(jetstream=True, seed=seed)
        try:
            nc = await nats.connect(cluster.client_url)
            js = nc.jetstream()
            for i in range(4):
                await js.add_stream(StreamConfig(name=f"S{i}", subjects=[f"s{i}"],
                                                 num_replicas=1 + i % 3))
            await js.add_consumer("S2", durable_name="c")
            await nc.close()
            snap = cluster.cluster()
            return (snap["meta_leader"],
                    [(s["name"], s["leader"], [r["name"] for r in s["replicas"]])
                     for s in snap["streams"]],
                    [(c["name"], c["leader"]) for c in snap["consumers"]])
        finally:
            await cluster.stop()

    first = await run(7)
    assert await run(7) == first
    assert first[2] == [("c", first[1][2][1])]  # the consumer runs where its stream leads
