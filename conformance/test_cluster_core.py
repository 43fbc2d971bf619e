"""Core NATS across a cluster: three server processes joined by routes
(``--cluster nats://127.0.0.1:P --cluster_name conf --routes ... -n NAME``), no JetStream.

What a client sees: each node's INFO names the cluster and lists the client URLs of the live
nodes (``connect_urls``, the node's own first), and tells protocol-1 clients when a node leaves or
joins; messages, queue groups, request/reply and no-responders span the nodes; a client whose
node goes away reconnects to another one it learnt from ``connect_urls``; the route port refuses
clients; ``/varz`` and ``/routez`` describe the routes.

Interest crosses a route asynchronously: a node has sent a client its PONG before the other
nodes know of that client's SUB. A client that needs its subscription to be visible cluster-wide
sends a marker through the other node and waits for it (:func:`interest_everywhere`): routes
carry one account's SUBs and messages in order, so once the marker arrived the earlier SUBs are
known there too.
"""
from __future__ import annotations

import asyncio
import collections
import json
import socket
import time
import uuid
from typing import Any

import nats
import pytest

from conformance.cluster import Cluster, Node, ProcessCluster, read_info
from conformance.rawclient import RawClient, parse_info
from conformance.servers import Endpoint

pytestmark = [pytest.mark.conformance, pytest.mark.cluster]


def url_of(node: Node) -> str:
    """A node's entry in ``connect_urls``: ``host:port``."""
    return f"{node.host}:{node.port}"


def raw(node: Node) -> RawClient:
    client = RawClient.connect(node.host, node.port)
    client.handshake()
    return client


def interest_everywhere(sub: RawClient, *publishers: RawClient, timeout: float = 5.0) -> None:
    """Wait until every SUB ``sub`` sent so far is known on the nodes of ``publishers``: each
    publisher sends a marker to a subject ``sub`` subscribed to last, until one arrives."""
    marker = f"_conformance.marker.{uuid.uuid4().hex}"
    sub.send(f"SUB {marker} 999999\r\n".encode())
    sub.barrier()
    for pub in publishers:
        deadline = time.monotonic() + timeout
        while True:
            pub.send(f"PUB {marker} 0\r\n\r\n".encode())
            pub.barrier()
            got = sub.read_available(0.05)
            if marker.encode() in got:
                break
            assert not got, f"unexpected frames while waiting for interest: {got!r}"
            assert time.monotonic() < deadline, "subscription never became visible"
    sub.send(b"UNSUB 999999\r\n")
    late = sub.barrier()  # markers still in flight when the first one arrived
    assert all(marker.encode() in f for f in late.split(b"\r\n\r\n") if f), late


async def nats_interest_everywhere(sub: Any, *publishers: Any, timeout: float = 5.0) -> None:
    """:func:`interest_everywhere` for nats-py connections."""
    marker = f"_conformance.marker.{uuid.uuid4().hex}"
    s = await sub.subscribe(marker)
    await sub.flush()
    try:
        for pub in publishers:
            deadline = time.monotonic() + timeout
            while True:
                await pub.publish(marker, b"")
                await pub.flush()
                try:
                    await s.next_msg(timeout=0.05)
                    break
                except nats.errors.TimeoutError:
                    assert time.monotonic() < deadline, "subscription never became visible"
    finally:
        await s.unsubscribe()


# ---------------------------------------------------------------------- INFO


async def test_cluster_info_per_node(target: str, core_cluster: Cluster) -> None:
    """Each node has its own id and name, the cluster's name, and lists the client URLs of all
    nodes in ``connect_urls``, its own first."""
    infos = [read_info(n.host, n.port) for n in core_cluster.nodes]
    assert len({i["server_id"] for i in infos}) == 3
    assert len({i["server_name"] for i in infos}) == 3
    everyone = {url_of(n) for n in core_cluster.nodes}
    for node, info in zip(core_cluster.nodes, infos):
        assert info["cluster"] == "conf"
        assert info["port"] == node.port
        urls = info["connect_urls"]
        assert urls[0] == url_of(node)
        assert sorted(urls) == sorted(everyone)
        assert "cluster_dynamic" not in info


async def test_cluster_info_fields_are_a_single_servers_plus_cluster(
        target: str, core_cluster: Cluster, server: Endpoint) -> None:
    """A node's INFO has the fields of a single server's INFO, in the same order, with
    ``cluster`` and ``connect_urls`` after ``client_ip``."""
    single = list(read_info(server.host, server.port))
    expected = []
    for key in single:
        expected.append(key)
        if key == "client_ip":
            expected += ["cluster", "connect_urls"]
    node = core_cluster.nodes[1]
    assert list(read_info(node.host, node.port)) == expected


async def test_cluster_async_info_when_a_node_leaves_and_returns(
        target: str, core_cluster: Cluster) -> None:
    """A protocol-1 client gets an INFO (no ``connect_info``) without the URL of a node that
    shut down, and one with it again when the node is back; a protocol-0 client gets neither."""
    n1, _, n3 = core_cluster.nodes
    c1 = RawClient.connect(n1.host, n1.port)
    first = c1.handshake()
    assert first is not None
    c0 = RawClient.connect(n1.host, n1.port)
    assert c0.handshake(protocol=0) is None
    try:
        await core_cluster.kill(n3.name)
        line = c1.read_line(timeout=10)
        left = parse_info(line)
        assert line.endswith(b" \r\n")
        expected_keys = [k for k in first if k not in ("connect_info", "remote_account")]
        assert list(left) == expected_keys
        assert url_of(n3) not in left["connect_urls"]
        assert left["connect_urls"][0] == url_of(n1)
        assert len(left["connect_urls"]) == 2
        assert {k: v for k, v in left.items() if k != "connect_urls"} == {
            k: first[k] for k in expected_keys if k != "connect_urls"}

        await core_cluster.restart(n3.name)
        back = parse_info(c1.read_line(timeout=10))
        assert back["connect_urls"][0] == url_of(n1)
        assert sorted(back["connect_urls"]) == sorted(url_of(n) for n in core_cluster.nodes)
        assert c0.read_available(0.2) == b""
    finally:
        c1.close()
        c0.close()


# ---------------------------------------------------------------------- messages


async def test_cluster_messages_cross_nodes(target: str, core_cluster: Cluster) -> None:
    """A subscriber on one node gets, byte for byte, what clients on the other nodes publish:
    plain, with a reply subject, with headers, through a wildcard."""
    n1, n2, n3 = core_cluster.nodes
    sub, p2, p3 = raw(n1), raw(n2), raw(n3)
    try:
        subj = f"x.{uuid.uuid4().hex[:8]}"
        sub.send(f"SUB {subj}.a 1\r\nSUB {subj}.* 2\r\n".encode())
        interest_everywhere(sub, p2, p3)
        p2.send(f"PUB {subj}.a 5\r\nhello\r\n".encode())
        p2.barrier()
        p3.send(f"PUB {subj}.a reply.to 2\r\nhi\r\n".encode())
        p3.barrier()
        p2.send(f"HPUB {subj}.b 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nok\r\n".encode())
        p2.barrier()
        frames = [sub.read_frame(timeout=5) for _ in range(5)]
        by_sid: dict[bytes, list[bytes]] = collections.defaultdict(list)
        for f in frames:
            by_sid[f.split(b" ")[2]].append(f)
        a = f"{subj}.a".encode()
        hello, hi = b" 5\r\nhello\r\n", b" reply.to 2\r\nhi\r\n"
        hmsg = f"HMSG {subj}.b 2 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nok\r\n".encode()
        # One publisher's messages keep their order; two nodes' messages may interleave.
        assert sorted(by_sid[b"1"]) == sorted([b"MSG " + a + b" 1" + hello,
                                               b"MSG " + a + b" 1" + hi])
        assert sorted(by_sid[b"2"]) == sorted([b"MSG " + a + b" 2" + hello,
                                               b"MSG " + a + b" 2" + hi, hmsg])
        from_n2 = [f for f in by_sid[b"2"] if f.endswith(hello) or f == hmsg]
        assert from_n2 == [b"MSG " + a + b" 2" + hello, hmsg]
        assert sub.read_available(0.2) == b""
    finally:
        for c in (sub, p2, p3):
            c.close()


async def test_cluster_every_node_delivers_once(target: str, core_cluster: Cluster) -> None:
    """One message reaches every matching subscription on every node exactly once, the
    publisher's own node included."""
    clients = [raw(n) for n in core_cluster.nodes]
    try:
        subj = f"all.{uuid.uuid4().hex[:8]}"
        for c in clients:
            c.send(f"SUB {subj} 1\r\nSUB all.> 2\r\n".encode())
        for c in clients:
            interest_everywhere(c, *[o for o in clients if o is not c])
        clients[1].send(f"PUB {subj} 3\r\nabc\r\n".encode())
        for c in clients:
            got = [c.read_frame(timeout=5) for _ in range(2)]
            assert sorted(got) == sorted([f"MSG {subj} 1 3\r\nabc\r\n".encode(),
                                          f"MSG {subj} 2 3\r\nabc\r\n".encode()])
            assert c.read_available(0.1) == b""
    finally:
        for c in clients:
            c.close()


async def test_cluster_queue_group_spans_nodes(target: str, core_cluster: Cluster) -> None:
    """A queue group with members on several nodes gets each message exactly once, whichever
    node it was published on and whether or not that node has a member; a plain subscriber
    beside it gets every message."""
    n1, n2, n3 = core_cluster.nodes
    ncs = [await nats.connect(n.url, allow_reconnect=False) for n in (n1, n2, n3)]
    try:
        subj = f"q.{uuid.uuid4().hex[:8]}"
        got: collections.Counter[str] = collections.Counter()
        seen: list[bytes] = []
        plain: list[bytes] = []
        for i, nc in enumerate(ncs[1:], start=2):  # members on n2 and n3 only
            async def member(msg: Any, i: int = i) -> None:
                got[f"n{i}"] += 1
                seen.append(msg.data)
            await nc.subscribe(subj, queue="workers", cb=member)

        async def watcher(msg: Any) -> None:
            plain.append(msg.data)
        await ncs[1].subscribe(subj, cb=watcher)
        for nc in ncs[1:]:
            await nats_interest_everywhere(nc, ncs[0])
        for k in range(60):
            await ncs[k % 3].publish(subj, b"%d" % k)
        for nc in ncs:
            await nc.flush()

        async def all_in() -> bool:
            return len(seen) >= 60 and len(plain) >= 60
        await core_cluster.wait_until(all_in, timeout=10)
        await asyncio.sleep(0.2)
        assert sorted(seen) == sorted(b"%d" % k for k in range(60))  # once each
        assert sorted(plain) == sorted(seen)
        assert set(got) == {"n2", "n3"}  # both members take part
    finally:
        for nc in ncs:
            await nc.close()


def no_responders(reply: str, subject: str) -> bytes:
    """The 503 status a request to ``subject`` with no responder gets (sid 1)."""
    header = f"NATS/1.0 503\r\nNats-Subject: {subject}\r\n\r\n".encode()
    return f"HMSG {reply} 1 {len(header)} {len(header)}\r\n".encode() + header + b"\r\n"


async def test_cluster_request_reply_and_no_responders(target: str,
                                                       core_cluster: Cluster) -> None:
    """A request on one node is answered by a responder on another; with no responder in the
    whole cluster the requester gets the 503 status at once; after the responder unsubscribes,
    503 again."""
    n1, n2, n3 = core_cluster.nodes
    req, resp = raw(n2), raw(n3)
    try:
        subj = f"svc.{uuid.uuid4().hex[:8]}"
        req.send(b"SUB _R.> 1\r\n")
        req.send(f"HPUB {subj} _R.1 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode())
        assert req.read_frame(timeout=5) == no_responders("_R.1", subj)

        resp.send(f"SUB {subj} 7\r\n".encode())
        interest_everywhere(resp, req)
        req.send(f"PUB {subj} _R.2 4\r\nping\r\n".encode())
        assert resp.read_frame(timeout=5) == f"MSG {subj} 7 _R.2 4\r\nping\r\n".encode()
        resp.send(b"PUB _R.2 4\r\npong\r\n")
        assert req.read_frame(timeout=5) == b"MSG _R.2 1 4\r\npong\r\n"

        resp.send(b"UNSUB 7\r\n")
        resp.barrier()

        def answered_503() -> bool:
            # Until the UNSUB has crossed the route the request is forwarded to node 3, which
            # drops it: no reply at all (a timeout here), not a 503.
            req.send(f"HPUB {subj} _R.3 12 12\r\nNATS/1.0\r\n\r\n\r\n".encode())
            frame = req.read_frame(timeout=0.3)
            return frame == no_responders("_R.3", subj)
        await core_cluster.wait_until(answered_503, timeout=5)
    finally:
        req.close()
        resp.close()


async def test_cluster_interest_is_known_after_a_marker_round_trip(
        target: str, core_cluster: Cluster) -> None:
    """Once a marker published on node B reached a client on node A, every SUB that client sent
    before the marker's is known on B: a message published on B right away is delivered."""
    n1, n2, _ = core_cluster.nodes
    a, b = raw(n1), raw(n2)
    try:
        for k in range(10):
            subj = f"fresh.{uuid.uuid4().hex[:8]}"
            a.send(f"SUB {subj} {k + 1}\r\n".encode())
            interest_everywhere(a, b)
            b.send(f"PUB {subj} 1\r\n{k}\r\n".encode())
            assert a.read_frame(timeout=5) == f"MSG {subj} {k + 1} 1\r\n{k}\r\n".encode()
    finally:
        a.close()
        b.close()


async def test_cluster_client_reconnects_to_another_node(target: str,
                                                         core_cluster: Cluster) -> None:
    """A nats-py client given only node 1 learns the others from ``connect_urls``; when node 1
    shuts down it reconnects to one of them, its subscription is restored, and messages
    published on the third node reach it."""
    n1, n2, n3 = core_cluster.nodes
    reconnected = asyncio.Event()

    async def on_reconnect() -> None:
        reconnected.set()

    nc = await nats.connect(n1.url, reconnect_time_wait=0.1, max_reconnect_attempts=50,
                            reconnected_cb=on_reconnect, connect_timeout=2)
    other = await nats.connect(n3.url, allow_reconnect=False)
    try:
        assert sorted(f"{u.hostname}:{u.port}" for u in nc.discovered_servers) == sorted(
            [url_of(n2), url_of(n3)])
        sub = await nc.subscribe("failover.x")
        await core_cluster.kill(n1.name)
        await asyncio.wait_for(reconnected.wait(), 10)
        assert nc.connected_url is not None
        assert f"{nc.connected_url.hostname}:{nc.connected_url.port}" in (url_of(n2),
                                                                          url_of(n3))
        await nats_interest_everywhere(nc, other)
        await other.publish("failover.x", b"after")
        msg = await sub.next_msg(timeout=5)
        assert msg.data == b"after"
    finally:
        await nc.close()
        await other.close()


# ---------------------------------------------------------------------- route port


def route_port_exchange(port: int, send: bytes, wait: float = 2.0) -> bytes:
    """Connect to a route port, send ``send`` after its INFO, return all bytes until EOF (or
    ``wait`` seconds)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    data = b""
    try:
        deadline = time.monotonic() + wait
        while b"\r\n" not in data:
            data += s.recv(65536)
        s.sendall(send)
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                return data + b"<EOF>"
            data += chunk
    finally:
        s.close()
    return data


async def test_cluster_route_port_refuses_clients(target: str, core_cluster: Cluster) -> None:
    """The route port greets with an INFO naming the node and cluster; a client's CONNECT (it
    carries ``lang``) gets ``-ERR 'attempted to connect to route port'`` and the connection
    closed; a PING before any CONNECT is an authorization violation."""
    assert isinstance(core_cluster, ProcessCluster)
    node = core_cluster.nodes[0]
    port = int(core_cluster.route_url(node.name).rsplit(":", 1)[1])
    out = route_port_exchange(port, b'CONNECT {"verbose":false,"lang":"python3","protocol":1}'
                                    b"\r\nPING\r\n")
    line, _, rest = out.partition(b"\r\n")
    info = json.loads(line[len(b"INFO "):])
    assert (info["server_id"], info["server_name"], info["cluster"]) == (
        node.server_id, node.name, "conf")
    assert info["port"] == port
    assert info["connect_urls"] == [url_of(node)]
    assert rest == b"-ERR 'attempted to connect to route port'\r\n<EOF>"
    out = route_port_exchange(port, b"PING\r\n")
    assert out.split(b"\r\n", 1)[1] == b"-ERR 'Authorization Violation'\r\n<EOF>"


async def test_cluster_route_refuses_another_cluster_name(target: str,
                                                          core_cluster: Cluster) -> None:
    """A route CONNECT naming another cluster is refused with nats-server's error."""
    assert isinstance(core_cluster, ProcessCluster)
    port = int(core_cluster.route_url(core_cluster.nodes[0].name).rsplit(":", 1)[1])
    out = route_port_exchange(port, b'CONNECT {"echo":false,"verbose":false,"pedantic":false,'
                                    b'"tls_required":false,"name":"NOTHER","cluster":"other",'
                                    b'"dynamic":false,"lnoc":true}\r\nPING\r\n')
    assert out.split(b"\r\n", 1)[1] == (
        b"-ERR 'Rejecting connection, cluster name \"other\" does not match \"conf\"'\r\n<EOF>")


# ---------------------------------------------------------------------- configuration


async def test_cluster_config_block(target: str, make_cluster: Any) -> None:
    """The ``cluster { name, listen, routes }`` block forms the same cluster as the flags."""
    c = make_cluster(size=3, jetstream=False, processes=True, route_flags=False)
    await c.settle(timeout=15)
    for node in c.nodes:
        info = read_info(node.host, node.port)
        assert info["cluster"] == "conf"
        assert sorted(info["connect_urls"]) == sorted(url_of(n) for n in c.nodes)


async def test_cluster_no_advertise(target: str, make_cluster: Any) -> None:
    """With ``no_advertise: true`` nodes do not gossip their client URLs: each node's INFO lists
    only its own; messages still cross the routes."""
    c = make_cluster(size=3, jetstream=False, processes=True, route_flags=False,
                     cluster_block="  no_advertise: true\n", wait_routes=False)
    n1, n2, _ = c.nodes
    a, b = raw(n1), raw(n2)
    try:
        a.send(b"SUB na.x 1\r\n")
        interest_everywhere(a, b, timeout=10)
        for node in c.nodes:
            info = read_info(node.host, node.port)
            assert info["cluster"] == "conf"
            assert info.get("connect_urls") == [url_of(node)] or "connect_urls" not in info, info
        b.send(b"PUB na.x 2\r\nok\r\n")
        assert a.read_frame(timeout=5) == b"MSG na.x 1 2\r\nok\r\n"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("creds,joins", [("ruser:rpass", True), ("ruser:wrong", False)],
                         ids=["right-credentials", "wrong-credentials"])
async def test_cluster_route_authorization(target: str, make_cluster: Any, creds: str,
                                           joins: bool) -> None:
    """``cluster { authorization { user, password } }``: routes that present the credentials
    in their URL join; with wrong ones the nodes stay apart (each INFO lists only itself)."""
    c = make_cluster(size=2, jetstream=False, processes=True, route_flags=False,
                     cluster_block="  authorization { user: ruser, password: rpass }\n",
                     route_auth=creds, wait_routes=joins)
    if joins:
        await c.settle(timeout=15)
        for node in c.nodes:
            assert sorted(read_info(node.host, node.port)["connect_urls"]) == sorted(
                url_of(n) for n in c.nodes)
    else:
        await asyncio.sleep(1.0)
        for node in c.nodes:
            info = read_info(node.host, node.port)
            assert info.get("connect_urls", [url_of(node)]) == [url_of(node)], info


async def test_cluster_other_cluster_name_does_not_join(target: str, make_cluster: Any) -> None:
    """A server configured with another cluster name that routes to the cluster is refused: the
    cluster's nodes do not list it and it lists only itself."""
    c = make_cluster(size=2, jetstream=False, processes=True)
    assert isinstance(c, ProcessCluster)
    stray = make_cluster(size=1, jetstream=False, processes=True, cluster_name="other",
                         extra_routes=[c.route_url(c.nodes[0].name)], wait_routes=False,
                         name_prefix="stray")
    await asyncio.sleep(1.0)
    s = stray.nodes[0]
    assert read_info(s.host, s.port).get("connect_urls", [url_of(s)]) == [url_of(s)]
    for node in c.nodes:
        assert sorted(read_info(node.host, node.port)["connect_urls"]) == sorted(
            url_of(n) for n in c.nodes)


# ---------------------------------------------------------------------- monitoring


async def test_cluster_varz_and_routez(target: str, core_cluster: Cluster) -> None:
    """``/varz`` has a ``cluster`` section (name, route listener, the configured route URLs,
    pool size) and ``connect_urls``; ``/routez`` lists routes to both other nodes by name."""
    assert isinstance(core_cluster, ProcessCluster)
    n1 = core_cluster.nodes[0]
    status, varz = core_cluster.monitor(n1.name, "/varz")
    assert status == 200
    port = int(core_cluster.route_url(n1.name).rsplit(":", 1)[1])
    others = [n for n in core_cluster.nodes if n is not n1]
    cl = varz["cluster"]
    assert list(cl) == ["name", "addr", "cluster_port", "auth_timeout", "urls", "tls_timeout",
                        "pool_size"]
    assert (cl["name"], cl["addr"], cl["cluster_port"], cl["pool_size"]) == (
        "conf", "127.0.0.1", port, 3)
    assert sorted(cl["urls"]) == sorted(core_cluster.route_url(n.name)[len("nats://"):]
                                        for n in others)
    assert sorted(varz["connect_urls"]) == sorted(url_of(n) for n in core_cluster.nodes)
    # pool_size 3 routes to each other node, plus one route pinned to the system account
    assert varz["routes"] == 8

    status, routez = core_cluster.monitor(n1.name, "/routez")
    assert status == 200
    assert list(routez) == ["server_id", "server_name", "now", "num_routes", "routes"]
    assert (routez["server_id"], routez["server_name"]) == (n1.server_id, n1.name)
    assert routez["num_routes"] == len(routez["routes"]) == 8
    per_remote = collections.Counter((r["remote_name"], r.get("account"))
                                     for r in routez["routes"])
    assert per_remote == {**{(n.name, None): 3 for n in others},
                          **{(n.name, "$SYS"): 1 for n in others}}
    ids = {n.name: n.server_id for n in others}
    for r in routez["routes"]:
        assert list(r) == ROUTE_KEYS[:-1] + (["account"] if "account" in r else []) + [
            "compression"]
        assert r["remote_id"] == ids[r["remote_name"]]
        assert r["ip"] == "127.0.0.1"
        assert isinstance(r["did_solicit"], bool) and isinstance(r["is_configured"], bool)
        assert r["compression"] == "off"


#: The fields of a ``/routez`` route, in order (``account`` before ``compression`` on a route
#: pinned to an account).
ROUTE_KEYS = ["rid", "remote_id", "remote_name", "did_solicit", "is_configured", "ip", "port",
              "start", "last_activity", "rtt", "uptime", "idle", "pending_size", "in_msgs",
              "out_msgs", "in_bytes", "out_bytes", "subscriptions", "compression"]
