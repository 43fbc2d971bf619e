"""JetStream on a 3-node cluster: replicated streams and consumers as clients see them.

The ``cluster`` object of stream, consumer and list replies (``name``; for R1 only ``leader``;
for R>1 also ``raft_group``, ``leader_since``, ``system_account``, ``traffic_account`` and the
other peers in ``replicas``, sorted by name, each ``{name, current, active, [lag], peer}`` with
``peer`` the 8-character hash of the server name), placement by cluster and tags with the
errors when no peer fits, replica counts out of range, scaling by update, the leader stepdown
requests, peer and server removal, and monitoring per node.

Both targets run nodes named ``n1``..``n3`` in a cluster named ``conf``, node ``i`` tagged
``az:i`` and ``node:n<i>`` (see ``cluster.py``), so names, peers and errors compare exactly;
leaders and raft group names are checked for shape.
"""
from __future__ import annotations

import re
from typing import Any

import pytest

from conformance.cluster import SYSTEM_USER, Cluster, ClusterClients
from conformance.clusterjs import all_current, leader_of, peer_id, stored
from conformance.jshelpers import (
    TIMESTAMP,
    TYPE_PREFIX,
    api_error,
    file_bytes,
    unique_name,
)

pytestmark = [pytest.mark.conformance, pytest.mark.cluster]

GROUP_RE = re.compile(r"^[SC]-R[1-5][FM]-[A-Za-z0-9]{8}$")
PEER_KEYS = ["name", "current", "active", "peer"]


def check_cluster(ci: dict[str, Any], cluster: Cluster, replicas: int, kind: str = "S",
                  storage: str = "F", current: bool = False, created_as: int | None = None
                  ) -> str:
    """Assert the shape of a ``cluster`` object for an R``replicas`` asset; return its leader.
    With ``current`` every other peer must be current (no ``lag``). The raft group's name keeps
    the replica count the group was created with (``created_as``, default ``replicas``)."""
    if replicas == 1:
        assert list(ci) == ["name", "leader"], ci
        assert ci["name"] == "conf" and ci["leader"] in cluster.names
        return str(ci["leader"])
    assert list(ci) == ["name", "raft_group", "leader", "leader_since", "system_account",
                        "traffic_account", "replicas"], ci
    assert ci["name"] == "conf"
    size = created_as or replicas
    assert re.match(rf"^{kind}-R{size}{storage}-[A-Za-z0-9]{{8}}$", ci["raft_group"]), ci
    leader = ci["leader"]
    assert leader in cluster.names
    assert TIMESTAMP.match(ci["leader_since"])
    assert (ci["system_account"], ci["traffic_account"]) == (True, "$SYS")
    names = [r["name"] for r in ci["replicas"]]
    assert names == sorted(names) and leader not in names and len(names) == replicas - 1, ci
    assert set(names) <= set(cluster.names)
    for r in ci["replicas"]:
        keys = [k for k in r if k != "lag"]
        assert keys == PEER_KEYS, r
        assert r["peer"] == peer_id(r["name"])
        assert isinstance(r["current"], bool) and isinstance(r["active"], int)
        assert r["active"] >= 0
        if "lag" in r:
            assert list(r)[:3] == ["name", "current", "active"] and isinstance(r["lag"], int)
        if current:
            assert r["current"] is True and "lag" not in r, ci
    return str(leader)


# ---------------------------------------------------------------------- INFO and streams


async def test_cluster_js_info_per_node(target: str, cluster: Cluster) -> None:
    """Every node of a JetStream cluster says so in its INFO, with the cluster's name and the
    client URLs of all nodes."""
    for node in cluster.nodes:
        client = cluster.js(node.name)
        try:
            info = client.raw.info
            assert (info["server_name"], info["jetstream"], info["cluster"]) == (
                node.name, True, "conf")
            assert info["connect_urls"][0] == f"{node.host}:{node.port}"
            assert sorted(info["connect_urls"]) == sorted(
                f"{n.host}:{n.port}" for n in cluster.nodes)
        finally:
            client.close()


@pytest.mark.parametrize("replicas", [1, 2, 3])
async def test_cluster_stream_cluster_object(target: str, cluster: Cluster, cjs: ClusterClients,
                                             replicas: int) -> None:
    """Create, info and list replies of an R1..R3 stream carry the ``cluster`` object: leader,
    and for R>1 the raft group and the other peers."""
    js = cjs()
    name = unique_name()
    out = js.create(name, subjects=[name.lower()], num_replicas=replicas)
    assert list(out) == ["type", "config", "created", "state", "cluster", "ts", "did_create"]
    assert out["config"]["num_replicas"] == replicas
    check_cluster(out["cluster"], cluster, replicas)
    await stored(cluster, js, name.lower(), b"x")
    info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    assert list(info) == ["type", "total", "offset", "limit", "config", "created", "state",
                          "cluster", "ts"]
    leader = check_cluster(info["cluster"], cluster, replicas, current=True)
    assert info["state"]["messages"] == 1
    listed = js.api("STREAM.LIST", {"subject": name.lower()})
    assert [s["config"]["name"] for s in listed["streams"]] == [name]
    entry = listed["streams"][0]
    assert list(entry) == ["config", "created", "state", "cluster", "ts"]
    assert check_cluster(entry["cluster"], cluster, replicas) == leader


async def test_cluster_memory_stream_raft_group(target: str, cluster: Cluster,
                                                cjs: ClusterClients) -> None:
    """A replicated memory stream's raft group is named ``S-R<n>M-...``."""
    js = cjs()
    name = unique_name()
    out = js.create(name, subjects=[name.lower()], num_replicas=3, storage="memory")
    check_cluster(out["cluster"], cluster, 3, storage="M")


@pytest.mark.parametrize("replicas,code,err_code,description", [
    (4, 400, 10005, "no suitable peers for placement"),
    (5, 400, 10005, "no suitable peers for placement"),
    (6, 500, 10052, "maximum replicas is 5"),
    (-1, 400, 10133, "replicas count cannot be negative"),
], ids=["R4", "R5", "R6", "R-1"])
async def test_cluster_stream_replicas_out_of_range(target: str, cluster: Cluster,
                                                    cjs: ClusterClients, replicas: int,
                                                    code: int, err_code: int,
                                                    description: str) -> None:
    """More replicas than nodes, more than 5, or a negative count: nats-server's errors."""
    js = cjs()
    name = unique_name()
    out = js.create(name, check=False, subjects=[name.lower()], num_replicas=replicas)
    assert out == {"type": TYPE_PREFIX + "stream_create_response",
                   "error": api_error(code, err_code, description)}
    assert js.api(f"STREAM.INFO.{name}")["error"]["err_code"] == 10059


async def test_cluster_stream_replicas_zero_is_one(target: str, cluster: Cluster,
                                                   cjs: ClusterClients) -> None:
    js = cjs()
    name = unique_name()
    out = js.create(name, subjects=[name.lower()], num_replicas=0)
    assert out["config"]["num_replicas"] == 1
    check_cluster(out["cluster"], cluster, 1)


# ---------------------------------------------------------------------- consumers


async def test_cluster_consumer_cluster_object(target: str, cluster: Cluster,
                                               cjs: ClusterClients) -> None:
    """On an R3 stream a durable consumer takes the stream's replicas (its config keeps
    ``num_replicas: 0``); ``num_replicas`` 1 or 2 sizes it; an ephemeral consumer is R1."""
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=3)
    cases = [({"durable_name": "inherit"}, 0, 3),
             ({"durable_name": "one", "num_replicas": 1}, 1, 1),
             ({"durable_name": "two", "num_replicas": 2}, 2, 2), ({}, 0, 1)]
    for config, configured, replicas in cases:
        suffix = f"CONSUMER.CREATE.{name}" + (f".{config['durable_name']}" if config else "")
        out = js.api(suffix, {"stream_name": name, "config": {**config,
                                                             "ack_policy": "explicit"}})
        assert "error" not in out, out
        assert out["config"]["num_replicas"] == configured
        assert list(out)[-2:] == ["cluster", "ts"]
        check_cluster(out["cluster"], cluster, replicas, kind="C")
        cname = out["name"]
        info = await cluster.wait_until(
            lambda: all_current(js, f"CONSUMER.INFO.{name}.{cname}"))
        check_cluster(info["cluster"], cluster, replicas, kind="C", current=True)


@pytest.mark.parametrize("stream_replicas,config,err", [
    (3, {"durable_name": "c", "num_replicas": 5},
     (400, 10126, "consumer config replica count exceeds parent stream")),
    (1, {"durable_name": "c", "num_replicas": 3},
     (400, 10126, "consumer config replica count exceeds parent stream")),
    (3, {"durable_name": "c", "num_replicas": -1},
     (400, 10133, "replicas count cannot be negative")),
], ids=["R5-on-R3", "R3-on-R1", "negative"])
async def test_cluster_consumer_replicas_refused(target: str, cluster: Cluster,
                                                 cjs: ClusterClients, stream_replicas: int,
                                                 config: dict[str, Any],
                                                 err: tuple[int, int, str]) -> None:
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=stream_replicas)
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": config})
    assert out == {"type": TYPE_PREFIX + "consumer_create_response", "error": api_error(*err)}


async def test_cluster_consumer_scales_by_update(target: str, cluster: Cluster,
                                                 cjs: ClusterClients) -> None:
    """Creating a durable again with another ``num_replicas`` resizes it."""
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=3)
    for replicas in (1, 3, 2):
        out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
            "durable_name": "c", "ack_policy": "explicit", "num_replicas": replicas}})
        assert "error" not in out, out
        assert out["config"]["num_replicas"] == replicas
        if replicas == 3:  # growing from R1: the reply shows the peers it is moving to
            desired = out["cluster"]["desired"]
            assert list(desired) == ["created", "name", "replicas"], desired
            assert sorted(r["name"] for r in desired["replicas"]) == sorted(cluster.names)
            assert all(list(r) == ["name", "peer"] and r["peer"] == peer_id(r["name"])
                       for r in desired["replicas"])

        async def sized(replicas: int = replicas) -> dict[str, Any] | None:
            info = all_current(js, f"CONSUMER.INFO.{name}.c")
            if info and len(info["cluster"].get("replicas", [])) == replicas - 1:
                return info
            return None
        info = await cluster.wait_until(sized)
        check_cluster(info["cluster"], cluster, replicas, kind="C", current=True, created_as=3)


# ---------------------------------------------------------------------- account


async def test_cluster_account_info_counts_every_replica(target: str, cluster: Cluster,
                                                         cjs: ClusterClients) -> None:
    """``$JS.API.INFO`` counts a replicated stream's bytes once per replica."""
    js = cjs()
    before = js.account_info()
    names = [unique_name() for _ in range(2)]
    js.create(names[0], subjects=[names[0].lower()], num_replicas=1)
    js.create(names[1], subjects=[names[1].lower()], num_replicas=3)
    header = b"NATS/1.0\r\nNats-Msg-Id: one\r\n\r\n"
    for n in names:
        await stored(cluster, js, n.lower(), b"0123456789", header)
    size = file_bytes(names[0].lower(), b"0123456789", header)  # one message, file store

    async def counted() -> dict[str, Any] | None:
        info = js.account_info()
        return info if info["storage"] - before["storage"] == size * 4 else None
    after = await cluster.wait_until(counted)
    assert after["streams"] - before["streams"] == 2
    assert list(after) == list(before)


# ---------------------------------------------------------------------- placement


def node_name(cluster: Cluster, index: int) -> str:
    return cluster.nodes[index - 1].name


PLACEMENTS: list[tuple[str, dict[str, Any], int, Any]] = [
    ("cluster", {"cluster": "conf"}, 3, None),
    ("unknown-cluster", {"cluster": "nope"}, 1,
     (400, 10005, "no suitable peers for placement")),
    ("tag", {"tags": ["az:2"]}, 1, 2),
    ("two-tags", {"tags": ["az:1", "node:n1"]}, 1, 1),
    ("tag-case", {"tags": ["AZ:3"]}, 1, 3),
    ("cluster-and-tag", {"cluster": "conf", "tags": ["az:3"]}, 1, 3),
    ("tag-too-few-peers", {"tags": ["az:2"]}, 2,
     (400, 10005, "no suitable peers for placement, tags not matched ['az:2']")),
    ("unknown-tag", {"tags": ["nope"]}, 1,
     (400, 10005, "no suitable peers for placement, tags not matched ['nope']")),
    # The unmatched tags are listed in no fixed order (nats-server walks a set).
    ("tags-on-no-one-node", {"tags": ["az:1", "node:n2"]}, 1,
     (400, 10005, {"no suitable peers for placement, tags not matched ['az:1', 'node:n2']",
                   "no suitable peers for placement, tags not matched ['node:n2', 'az:1']"})),
    ("preferred", {"preferred": "n2"}, 1,
     (500, 10052, "preferred server not permitted in placement")),
]


@pytest.mark.parametrize("placement,replicas,expected",
                         [p[1:] for p in PLACEMENTS], ids=[p[0] for p in PLACEMENTS])
async def test_cluster_stream_placement(target: str, cluster: Cluster, cjs: ClusterClients,
                                        placement: dict[str, Any], replicas: int,
                                        expected: Any) -> None:
    """``placement.cluster`` and ``placement.tags`` (matched without case) choose the peers;
    when no peer fits, nats-server's 10005 error names the tags."""
    js = cjs()
    name = unique_name()
    out = js.create(name, check=False, subjects=[name.lower()], num_replicas=replicas,
                    placement=placement)
    if isinstance(expected, tuple):
        code, err_code, description = expected
        if isinstance(description, set):
            assert out.get("error", {}).get("description") in description, out
            description = out["error"]["description"]
        assert out == {"type": TYPE_PREFIX + "stream_create_response",
                       "error": api_error(code, err_code, description)}
        return
    assert "error" not in out, out
    assert out["config"]["placement"] == placement
    leader = check_cluster(out["cluster"], cluster, replicas)
    if isinstance(expected, int):
        assert leader == node_name(cluster, expected)


# ---------------------------------------------------------------------- scaling


async def test_cluster_stream_scale_up_and_down(target: str, cluster: Cluster,
                                                cjs: ClusterClients) -> None:
    """An update of ``num_replicas`` grows the stream to R3 (the new peers catch up on the
    messages) and shrinks it back to R1; R5 on three nodes is refused and changes nothing."""
    js = cjs()
    name = unique_name()
    subj = name.lower()
    js.create(name, subjects=[subj], num_replicas=1)
    for i in range(5):
        await stored(cluster, js, subj, b"m%d" % i)
    for before, replicas in ((1, 3), (3, 1)):
        out = js.update(name, subjects=[subj], num_replicas=replicas)
        assert "error" not in out, out
        assert out["config"]["num_replicas"] == replicas
        # The reply shows the change under way: what is wanted and what it started from.
        desired = out["cluster"]["desired"]
        assert list(desired)[:2] == ["created", "name"] and desired["name"] == "conf"
        assert TIMESTAMP.match(desired["created"])
        assert desired["origin"] == {"replicas": before}
        if replicas == 3:
            assert sorted(r["name"] for r in desired["replicas"]) == sorted(cluster.names)

        async def sized(replicas: int = replicas) -> dict[str, Any] | None:
            info = all_current(js, f"STREAM.INFO.{name}")
            if info and len(info["cluster"].get("replicas", [])) == replicas - 1:
                return info
            return None
        info = await cluster.wait_until(sized)
        check_cluster(info["cluster"], cluster, replicas, current=True, created_as=3)
        assert (info["state"]["messages"], info["state"]["last_seq"]) == (5, 5)
    out = js.update(name, subjects=[subj], num_replicas=5)
    assert out == {"type": TYPE_PREFIX + "stream_update_response",
                   "error": api_error(400, 10005, "no suitable peers for placement")}
    info = js.info(name)
    assert info["config"]["num_replicas"] == 1
    check_cluster(info["cluster"], cluster, 1)


async def test_cluster_stream_moves_by_placement_update(target: str, cluster: Cluster,
                                                        cjs: ClusterClients) -> None:
    """Updating an R1 stream's placement tags moves it to the node that has them, messages
    and all."""
    js = cjs()
    name = unique_name()
    subj = name.lower()
    js.create(name, subjects=[subj], placement={"tags": ["az:2"]})
    for i in range(3):
        await stored(cluster, js, subj, b"m%d" % i)
    out = js.update(name, subjects=[subj], placement={"tags": ["az:3"]})
    assert "error" not in out, out
    target_node = node_name(cluster, 3)
    desired = out["cluster"]["desired"]
    assert desired["origin"] == {"replicas": 1, "placement": {"tags": ["az:2"]}}
    assert [r["name"] for r in desired["replicas"]] == [target_node]

    async def moved() -> dict[str, Any] | None:
        info = js.info(name)
        ci = info.get("cluster", {})
        return info if ci.get("leader") == target_node and "desired" not in ci else None
    info = await cluster.wait_until(moved)
    check_cluster(info["cluster"], cluster, 1)
    assert info["state"]["messages"] == 3

    assert await stored(cluster, js, subj, b"after") == 4  # 503 until the move is known


# ---------------------------------------------------------------------- stepdown


def stepdown_ok(kind: str) -> dict[str, Any]:
    return {"type": TYPE_PREFIX + f"{kind}_leader_stepdown_response", "success": True}


def stepdown_error(kind: str, code: int, err_code: int, description: str) -> dict[str, Any]:
    return {"type": TYPE_PREFIX + f"{kind}_leader_stepdown_response",
            "error": api_error(code, err_code, description)}


async def test_cluster_stream_leader_stepdown(target: str, cluster: Cluster,
                                              cjs: ClusterClients) -> None:
    """``STREAM.LEADER.STEPDOWN``: success, and another peer leads; with
    ``{"placement": {"preferred": N}}`` node N leads; with ``placement.tags`` a node with the
    tags leads; messages and sequences carry over."""
    js = cjs()
    name = unique_name()
    subj = name.lower()
    js.create(name, subjects=[subj], num_replicas=3)
    await stored(cluster, js, subj, b"one")
    info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    old = info["cluster"]["leader"]
    assert js.api(f"STREAM.LEADER.STEPDOWN.{name}") == stepdown_ok("stream")
    await cluster.wait_until(lambda: leader_of(js, f"STREAM.INFO.{name}") not in (None, old))

    await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    want = next(n for n in cluster.names if n != leader_of(js, f"STREAM.INFO.{name}"))
    out = js.api(f"STREAM.LEADER.STEPDOWN.{name}", {"placement": {"preferred": want}})
    assert out == stepdown_ok("stream")
    await cluster.wait_until(lambda: leader_of(js, f"STREAM.INFO.{name}") == want)

    await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    tagged = next(i for i in (1, 2, 3) if node_name(cluster, i) != want)
    out = js.api(f"STREAM.LEADER.STEPDOWN.{name}", {"placement": {"tags": [f"az:{tagged}"]}})
    assert out == stepdown_ok("stream")
    await cluster.wait_until(
        lambda: leader_of(js, f"STREAM.INFO.{name}") == node_name(cluster, tagged))
    assert await stored(cluster, js, subj, b"two") == 2


async def test_cluster_stepdown_right_after_writes_keeps_them(target: str, cluster: Cluster,
                                                             cjs: ClusterClients) -> None:
    """A stepdown asked for right after a consumer create and a publish were answered: the
    next leader serves both (they were committed before the answers, even where the new
    leader had not applied them yet), round after round."""
    js = cjs()
    name = unique_name()
    subj = name.lower()
    js.create(name, subjects=[subj], num_replicas=3)
    for i in range(4):
        info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
        old = info["cluster"]["leader"]
        out = js.api(f"CONSUMER.CREATE.{name}.d{i}", {"stream_name": name, "config": {
            "durable_name": f"d{i}", "ack_policy": "explicit"}})
        assert "error" not in out, out
        assert await stored(cluster, js, subj, b"%d" % i) == i + 1
        assert js.api(f"STREAM.LEADER.STEPDOWN.{name}") == stepdown_ok("stream")
        await cluster.wait_until(lambda: leader_of(js, f"STREAM.INFO.{name}") not in (None, old))
        info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
        assert (info["state"]["messages"], info["state"]["last_seq"]) == (i + 1, i + 1)
        for k in range(i + 1):
            ci = await cluster.wait_until(
                lambda: all_current(js, f"CONSUMER.INFO.{name}.d{k}"),
                what=f"consumer d{k} served after stepdown {i + 1}")
            assert ci["name"] == f"d{k}"


async def test_cluster_stream_leader_stepdown_refused(target: str, cluster: Cluster,
                                                      cjs: ClusterClients) -> None:
    """Stepdown requests that cannot be served: unknown or current preferred leader, tags or a
    cluster no other peer has, bad JSON, an unknown stream; an R1 stream answers success."""
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=3)
    info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    leader = info["cluster"]["leader"]
    sd = f"STREAM.LEADER.STEPDOWN.{name}"
    assert js.api(sd, {"placement": {"preferred": "zz"}}) == stepdown_error(
        "stream", 400, 10005, 'preferred server "zz" not known')
    assert js.api(sd, {"placement": {"preferred": leader}}) == stepdown_error(
        "stream", 400, 10005, f'preferred server "{leader}" is already leader')
    for placement in ({"tags": ["nope"]}, {"cluster": "nope"}):
        assert js.api(sd, {"placement": placement}) == stepdown_error(
            "stream", 400, 10005, "no replacement peer connected")
    assert js.api(sd, b"{bad") == stepdown_error(
        "stream", 400, 10025,
        "invalid JSON: invalid character 'b' looking for beginning of object key string at "
        "offset 2")
    assert js.api("STREAM.LEADER.STEPDOWN.NOPE" + name) == stepdown_error(
        "stream", 404, 10059, "stream not found")
    assert leader_of(js, f"STREAM.INFO.{name}") == leader  # nothing moved
    one = unique_name()
    js.create(one, subjects=[one.lower()], num_replicas=1)
    assert js.api(f"STREAM.LEADER.STEPDOWN.{one}") == stepdown_ok("stream")


async def test_cluster_consumer_leader_stepdown(target: str, cluster: Cluster,
                                                cjs: ClusterClients) -> None:
    """``CONSUMER.LEADER.STEPDOWN``: success and another peer leads the consumer (preferred
    placement works as for streams); unknown consumer, stream or preferred peer: errors."""
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=3)
    out = js.api(f"CONSUMER.CREATE.{name}.c", {"stream_name": name, "config": {
        "durable_name": "c", "ack_policy": "explicit"}})
    assert "error" not in out, out
    info = await cluster.wait_until(lambda: all_current(js, f"CONSUMER.INFO.{name}.c"))
    old = info["cluster"]["leader"]
    sd = f"CONSUMER.LEADER.STEPDOWN.{name}.c"
    assert js.api(sd) == stepdown_ok("consumer")
    await cluster.wait_until(
        lambda: leader_of(js, f"CONSUMER.INFO.{name}.c") not in (None, old))
    await cluster.wait_until(lambda: all_current(js, f"CONSUMER.INFO.{name}.c"))
    want = next(n for n in cluster.names if n != leader_of(js, f"CONSUMER.INFO.{name}.c"))
    assert js.api(sd, {"placement": {"preferred": want}}) == stepdown_ok("consumer")
    await cluster.wait_until(lambda: leader_of(js, f"CONSUMER.INFO.{name}.c") == want)
    assert js.api(sd, {"placement": {"preferred": "zz"}}) == stepdown_error(
        "consumer", 400, 10005, 'preferred server "zz" not known')
    assert js.api(f"CONSUMER.LEADER.STEPDOWN.{name}.nope") == stepdown_error(
        "consumer", 404, 10014, "consumer not found")
    assert js.api(f"CONSUMER.LEADER.STEPDOWN.NOPE{name}.c") == stepdown_error(
        "consumer", 404, 10059, "stream not found")


async def test_cluster_meta_leader_stepdown(target: str, sys_cluster: Cluster) -> None:
    """``META.LEADER.STEPDOWN`` is a system account request (silence from any other account);
    it moves the meta leader (to the preferred or tagged peer when asked) and refuses unknown
    peers, peers that are already leader, tags no peer has and bad JSON."""
    cluster = sys_cluster
    app = cluster.js(cluster.nodes[0].name)
    sys = cluster.js(cluster.nodes[1].name, **SYSTEM_USER)
    try:
        app.no_reply("$JS.API.META.LEADER.STEPDOWN", wait=0.5)
        meta = cluster.meta_leader()
        assert meta is not None
        kind = "meta"
        assert sys.api("META.LEADER.STEPDOWN") == stepdown_ok(kind)
        await cluster.wait_until(lambda: cluster.meta_leader() not in (None, meta))
        await cluster.settle()
        meta = cluster.meta_leader()
        assert sys.api("META.LEADER.STEPDOWN", {"placement": {"preferred": meta}}) == (
            stepdown_error(kind, 400, 10005, f'preferred server "{meta}" is already leader'))
        assert sys.api("META.LEADER.STEPDOWN", {"placement": {"preferred": "zz"}}) == (
            stepdown_error(kind, 400, 10005, 'preferred server "zz" not known'))
        assert sys.api("META.LEADER.STEPDOWN", {"placement": {"tags": ["nope"]}}) == (
            stepdown_error(kind, 400, 10005, "no replacement peer connected"))
        assert sys.api("META.LEADER.STEPDOWN", b"{bad")["error"]["err_code"] == 10025
        want = next(n for n in cluster.names if n != meta)
        assert sys.api("META.LEADER.STEPDOWN", {"placement": {"preferred": want}}) == (
            stepdown_ok(kind))
        await cluster.wait_until(lambda: cluster.meta_leader() == want)
        await cluster.settle()  # (the new leader answers once every node knows it)
        # The system account has no JetStream of its own.
        assert sys.api("INFO")["error"] == api_error(503, 10039,
                                                     "JetStream not enabled for account")
    finally:
        app.close()
        sys.close()


# ---------------------------------------------------------------------- peer removal


def remove_peer_reply(**body: Any) -> dict[str, Any]:
    return {"type": TYPE_PREFIX + "stream_remove_peer_response", **body}


async def test_cluster_stream_peer_remove(target: str, cluster: Cluster,
                                          cjs: ClusterClients) -> None:
    """``STREAM.PEER.REMOVE``: with no spare node an R3 stream's peer cannot be replaced
    (503 10075), nor an R1 stream's that its placement tags pin to one node; an R2 stream's
    peer is replaced by the third node, which catches up; unknown peers, empty requests and
    unknown streams are refused."""
    js = cjs()
    name = unique_name()
    js.create(name, subjects=[name.lower()], num_replicas=3)
    info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{name}"))
    member = info["cluster"]["replicas"][0]["name"]
    rm = f"STREAM.PEER.REMOVE.{name}"
    assert js.api(rm, {"peer": member}) == remove_peer_reply(
        error=api_error(503, 10075, "peer remap failed"))
    assert js.api(rm, {"peer": "zz"}) == remove_peer_reply(
        error=api_error(400, 10040, "peer not a member"))
    assert js.api(rm, {}) == remove_peer_reply(error=api_error(400, 10003, "bad request"))
    assert js.api(f"STREAM.PEER.REMOVE.NOPE{name}", {"peer": member}) == remove_peer_reply(
        error=api_error(404, 10059, "stream not found"))

    # An R1 stream placed by tags has nowhere else to go.
    pinned = unique_name()
    js.create(pinned, subjects=[pinned.lower()], placement={"tags": ["az:1"]})
    assert js.api(f"STREAM.PEER.REMOVE.{pinned}", {"peer": node_name(cluster, 1)}) == (
        remove_peer_reply(error=api_error(503, 10075, "peer remap failed")))

    # An R2 stream has a spare node: the removed peer is replaced and the new one catches up.
    two = unique_name()
    js.create(two, subjects=[two.lower()], num_replicas=2)
    for i in range(3):
        await stored(cluster, js, two.lower(), b"m%d" % i)
    info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{two}"))
    leader = info["cluster"]["leader"]
    follower = info["cluster"]["replicas"][0]["name"]
    spare = next(n for n in cluster.names if n not in (leader, follower))
    assert js.api(f"STREAM.PEER.REMOVE.{two}", {"peer": follower}) == remove_peer_reply(
        success=True)

    async def replaced() -> dict[str, Any] | None:
        out = all_current(js, f"STREAM.INFO.{two}")
        if out is None:
            return None
        peers = {out["cluster"]["leader"], *(r["name"] for r in out["cluster"]["replicas"])}
        return out if peers == {leader, spare} else None
    out = await cluster.wait_until(replaced)
    check_cluster(out["cluster"], cluster, 2, current=True)
    assert out["state"]["messages"] == 3


# ---------------------------------------------------------------------- monitoring


async def test_cluster_monitoring_per_node(target: str, cluster: Cluster) -> None:
    """Each node serves ``/healthz`` ok, ``/jsz`` with a ``meta_cluster`` naming the cluster,
    the meta leader, its size and quorum, ``/varz`` with the ``cluster`` section, and
    ``/routez`` with routes to the other nodes."""
    meta = cluster.meta_leader()
    for node in cluster.nodes:
        assert cluster.monitor(node.name, "/healthz") == (200, {"status": "ok"})
        status, jsz = cluster.monitor(node.name, "/jsz")
        assert status == 200
        mc = jsz["meta_cluster"]
        assert list(mc)[:4] == ["name", "leader", "peer", "replicas"]
        assert (mc["name"], mc["leader"], mc["peer"]) == ("conf", meta, peer_id(meta or ""))
        assert (mc["cluster_size"], mc["quorum_needed"]) == (3, 2)
        others = [r["name"] for r in mc["replicas"]]
        assert others == sorted(others) and node.name not in others
        assert set(others) <= set(cluster.names)
        for r in mc["replicas"]:
            assert r["peer"] == peer_id(r["name"])
        status, varz = cluster.monitor(node.name, "/varz")
        assert (varz["server_name"], varz["cluster"]["name"]) == (node.name, "conf")
        assert sorted(varz["connect_urls"]) == sorted(f"{n.host}:{n.port}"
                                                      for n in cluster.nodes)
        status, routez = cluster.monitor(node.name, "/routez")
        assert status == 200
        assert list(routez) == ["server_id", "server_name", "now", "num_routes", "routes"]
        assert routez["server_name"] == node.name
        assert routez["num_routes"] == len(routez["routes"]) > 0
        # (nats-server pools its routes: several per node; each names a node of the cluster)
        remotes = {r["remote_name"] for r in routez["routes"]}
        assert remotes == set(cluster.names) - {node.name}
        for r in routez["routes"]:
            assert list(r)[:5] == ["rid", "remote_id", "remote_name", "did_solicit",
                                   "is_configured"]
            assert r["remote_id"] != routez["server_id"] and r["ip"] == "127.0.0.1"
            assert isinstance(r["in_msgs"], int) and isinstance(r["subscriptions"], int)


async def test_cluster_server_remove(target: str, make_cluster: Any) -> None:
    """``SERVER.REMOVE`` (system account): an unknown server and an empty request are refused;
    a node that is down is removed from the meta group (the cluster then counts two peers)."""
    from conformance.cluster import SYSTEM_ACCOUNT_CONFIG

    cluster = make_cluster(size=3, jetstream=True, config=SYSTEM_ACCOUNT_CONFIG)
    await cluster.settle()
    meta = cluster.meta_leader()
    victim = next(n for n in cluster.names if n != meta)
    other = next(n for n in cluster.names if n not in (meta, victim))
    sys = cluster.js(other, **SYSTEM_USER)
    app = cluster.js(other)
    reply = TYPE_PREFIX + "meta_server_remove_response"
    try:
        app.no_reply("$JS.API.SERVER.REMOVE", {"peer": victim}, wait=0.5)
        assert sys.api("SERVER.REMOVE", {"peer": "zz"}) == {
            "type": reply, "error": api_error(400, 10044,
                                              "server is not a member of the cluster")}
        assert sys.api("SERVER.REMOVE", {}) == {
            "type": reply, "error": api_error(400, 10003, "bad request")}
        await cluster.kill(victim)
        assert sys.api("SERVER.REMOVE", {"peer": victim}) == {"type": reply, "success": True}

        def shrunk() -> bool:
            status, jsz = cluster.monitor(other, "/jsz")
            return status == 200 and jsz["meta_cluster"]["cluster_size"] == 2
        await cluster.wait_until(shrunk)
        assert sys.api("SERVER.REMOVE", {"peer": victim}) == {
            "type": reply, "error": api_error(400, 10044,
                                              "server is not a member of the cluster")}
    finally:
        sys.close()
        app.close()


async def test_cluster_five_nodes(target: str, make_cluster: Any) -> None:
    """On five nodes an R5 stream has four other peers; the meta group counts five with a
    quorum of three; R3 streams are placed on three of the five."""
    cluster = make_cluster(size=5, jetstream=True)
    await cluster.settle()
    js = cluster.js(cluster.nodes[0].name)
    try:
        five, three = unique_name(), unique_name()
        js.create(five, subjects=[five.lower()], num_replicas=5)
        js.create(three, subjects=[three.lower()], num_replicas=3)
        await stored(cluster, js, five.lower(), b"x")
        info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{five}"))
        check_cluster(info["cluster"], cluster, 5, current=True)
        info = await cluster.wait_until(lambda: all_current(js, f"STREAM.INFO.{three}"))
        check_cluster(info["cluster"], cluster, 3, current=True)
        out = js.create(unique_name(), check=False, subjects=["six"], num_replicas=6)
        assert out["error"] == api_error(500, 10052, "maximum replicas is 5")
        status, jsz = cluster.monitor(cluster.nodes[0].name, "/jsz")
        assert (jsz["meta_cluster"]["cluster_size"], jsz["meta_cluster"]["quorum_needed"]) == (
            5, 3)
    finally:
        js.close()
