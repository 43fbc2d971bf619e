"""Core clustering over routes beyond the session cluster: a mesh formed from one seed route per
node (gossip), a node in lame duck mode or crashed leaving its peers' ``connect_urls``, a
cluster name without a route port, route flags that need ``--cluster``, and the INFO a route
port sends. Server processes of either target, started by the case.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from typing import Any

import pytest

from conformance.cluster import Cluster, ProcessCluster, read_info
from conformance.rawclient import RawClient, parse_info
from conformance.servers import URL_TARGET, command_for, free_port

pytestmark = [pytest.mark.conformance, pytest.mark.cluster]


def url_of(node: Any) -> str:
    return f"{node.host}:{node.port}"


def urls_of(node: Any) -> list[str]:
    return list(read_info(node.host, node.port).get("connect_urls") or [])


async def test_cluster_seed_routes_form_a_full_mesh(target: str, make_cluster: Any) -> None:
    """Each node given only the first node's route: the others learn of each other through it
    (gossip) and every INFO lists all three; with the seed node gone the two others still
    list each other (they route directly), and the seed rejoins when it returns."""
    c = make_cluster(size=3, jetstream=False, processes=True, seed_only=True)
    await c.settle(timeout=15)
    n1, n2, n3 = c.nodes
    for node in c.nodes:
        urls = urls_of(node)
        assert urls[0] == url_of(node)
        assert sorted(urls) == sorted(url_of(n) for n in c.nodes)
    await c.kill(n1.name)
    for node in (n2, n3):
        await c.wait_until(lambda node=node: sorted(urls_of(node)) == sorted(
            [url_of(n2), url_of(n3)]), timeout=10, what=f"{node.name} without the seed")
    a, b = RawClient.connect(n2.host, n2.port), RawClient.connect(n3.host, n3.port)
    try:
        a.handshake()
        b.handshake()
        a.send(b"SUB mesh.direct 1\r\n")
        a.barrier()

        def crossed() -> bool:
            b.send(b"PUB mesh.direct 2\r\nok\r\n")
            b.barrier()
            return b"MSG mesh.direct 1 2\r\nok\r\n" in a.read_available(0.05)
        await c.wait_until(crossed, timeout=5, what="a message from n3 to n2 without n1")
    finally:
        a.close()
        b.close()
    await c.restart(n1.name)  # settles: every node lists every node again


async def test_cluster_lame_duck_node_leaves_connect_urls(target: str,
                                                          make_cluster: Any) -> None:
    """A node entering lame duck mode (SIGUSR2) is dropped from its peers' ``connect_urls`` at
    once: their protocol-1 clients get an INFO without it."""
    c = make_cluster(size=3, jetstream=False, processes=True)
    await c.settle(timeout=15)
    assert isinstance(c, ProcessCluster)
    n1, _, n3 = c.nodes
    client = RawClient.connect(n1.host, n1.port)
    try:
        client.handshake()
        c.process(n3.name).proc.send_signal(signal.SIGUSR2)
        info = parse_info(client.read_line(timeout=5))
        assert info["connect_urls"][0] == url_of(n1)
        assert sorted(info["connect_urls"]) == sorted(url_of(n) for n in c.nodes if n is not n3)
    finally:
        client.close()
        await c.crash(n3.name)


async def test_cluster_crashed_node_leaves_connect_urls(target: str,
                                                        core_cluster: Cluster) -> None:
    """A node killed with SIGKILL is dropped from its peers' ``connect_urls`` as its routes
    break: an async INFO without it."""
    n1, _, n3 = core_cluster.nodes
    client = RawClient.connect(n1.host, n1.port)
    try:
        client.handshake()
        await core_cluster.crash(n3.name)
        info = parse_info(client.read_line(timeout=10))
        assert sorted(info["connect_urls"]) == sorted(
            url_of(n) for n in core_cluster.nodes if n is not n3)
    finally:
        client.close()


def test_cluster_name_without_a_route_port(target: str, spawn: Any) -> None:
    """``--cluster_name`` alone: the INFO names the cluster and has no ``connect_urls``."""
    srv = spawn(args=["--cluster_name", "lonely"])
    info = read_info(srv.host, srv.port)
    assert info["cluster"] == "lonely"
    assert "connect_urls" not in info
    assert list(info).index("cluster") == list(info).index("client_ip") + 1


async def test_cluster_connect_urls_of_a_lone_node(target: str, spawn: Any,
                                                  make_cluster: Any) -> None:
    """A node with a route port that was never routed lists no ``connect_urls``; one whose
    only peer left lists itself (an async INFO with its own URL only)."""
    srv = spawn(args=["--cluster", f"nats://127.0.0.1:{free_port()}", "--cluster_name", "c"])
    assert "connect_urls" not in read_info(srv.host, srv.port)
    c = make_cluster(size=2, jetstream=False, processes=True)
    await c.settle(timeout=15)
    n1, n2 = c.nodes
    client = RawClient.connect(n1.host, n1.port)
    try:
        client.handshake()
        await c.kill(n2.name)
        assert parse_info(client.read_line(timeout=10))["connect_urls"] == [url_of(n1)]
        assert read_info(n1.host, n1.port)["connect_urls"] == [url_of(n1)]
    finally:
        client.close()


def test_cluster_routes_need_a_route_port(target: str, tmp_path: Any) -> None:
    """``--routes`` without ``--cluster`` (nor a cluster block): exit 1 with nats-server's
    message."""
    if target == URL_TARGET:
        pytest.skip("needs a server of its own")
    proc = subprocess.run(command_for(target) + ["-p", "-1", "--routes",
                                                 "nats://127.0.0.1:6222"],
                          capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert proc.returncode == 1
    assert "solicited routes require cluster capabilities, e.g. --cluster" in proc.stderr


#: The fields of a route port's INFO, in nats-server's order (minijs adds one of its own,
#: ``minijs``, last: its route protocol's marker).
ROUTE_INFO_KEYS = ["server_id", "server_name", "version", "proto", "go", "host", "port",
                   "headers", "max_payload", "nonce", "cluster", "connect_urls",
                   "compression", "lnoc", "lnocu", "ln", "route_pool_size"]


def test_cluster_route_info(target: str, spawn: Any) -> None:
    """The route port greets with nats-server's route INFO: protocol 3, the route listener's
    host and port, this node's client URL only, ``compression`` ``accept``, pool size 3."""
    port = free_port()
    srv = spawn(args=["--cluster", f"nats://127.0.0.1:{port}", "--cluster_name", "conf",
                      "-n", "solo"])
    deadline = time.monotonic() + 5
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            assert time.monotonic() < deadline, "route port never opened"
            time.sleep(0.05)
    try:
        data = b""
        while b"\r\n" not in data:
            data += sock.recv(65536)
    finally:
        sock.close()
    line = data.split(b"\r\n", 1)[0]
    assert line.startswith(b"INFO ") and line.endswith(b" ")
    info = json.loads(line[5:])
    keys = [k for k in info if k != "minijs"]
    assert keys == ROUTE_INFO_KEYS
    if target == "minijs":
        assert list(info)[-1] == "minijs"
    assert (info["server_name"], info["proto"], info["host"], info["port"], info["cluster"],
            info["connect_urls"], info["compression"], info["route_pool_size"]) == (
        "solo", 3, "127.0.0.1", port, "conf", [f"{srv.host}:{srv.port}"], "accept", 3)
    assert len(info["nonce"]) == 15


def test_cluster_dynamic_name(target: str, spawn: Any) -> None:
    """``--cluster`` without a name: a made-up 22-character name, in the INFO and the log
    (with nats-server's warning)."""
    port = free_port()
    srv = spawn(args=["--cluster", f"nats://127.0.0.1:{port}"])
    info = read_info(srv.host, srv.port)
    name = info["cluster"]
    assert len(name) == 22 and name.isalnum()
    deadline = time.monotonic() + 5
    while "Cluster name was dynamically generated" not in srv.log:
        assert time.monotonic() < deadline, srv.log
        time.sleep(0.05)
    assert f"Cluster name is {name}" in srv.log


async def test_cluster_no_advertise_flag(target: str, make_cluster: Any) -> None:
    """``--no_advertise``: a node's INFO lists only itself, messages still cross."""
    c = make_cluster(size=2, jetstream=False, processes=True, wait_routes=False,
                     extra_args=["--no_advertise"])
    n1, n2 = c.nodes
    a, b = RawClient.connect(n1.host, n1.port), RawClient.connect(n2.host, n2.port)
    try:
        a.handshake()
        b.handshake()
        a.send(b"SUB na.flag 1\r\n")
        a.barrier()

        def crossed() -> bool:
            b.send(b"PUB na.flag 2\r\nok\r\n")
            b.barrier()
            return b"MSG na.flag 1 2\r\nok\r\n" in a.read_available(0.05)
        await c.wait_until(crossed, timeout=10, what="routes up")
        for node in c.nodes:
            assert read_info(node.host, node.port).get("connect_urls", [url_of(node)]) == [
                url_of(node)]
    finally:
        a.close()
        b.close()


def test_cluster_port_in_the_ports_file(target: str, spawn: Any, tmp_path: Any) -> None:
    """With ``--cluster ...:-1`` and ``--ports_file_dir``, the ports file lists the route port
    that was bound (``cluster``, after ``nats`` and ``monitoring``): how a harness learns the
    seed route for the next node."""
    srv = spawn(args=["-m", "-1", "--cluster", "nats://127.0.0.1:-1", "--ports_file_dir",
                      str(tmp_path)])
    deadline = time.monotonic() + 5
    while not list(tmp_path.glob("*.ports")):
        assert time.monotonic() < deadline, "no ports file"
        time.sleep(0.05)
    ports = json.loads(next(tmp_path.glob("*.ports")).read_text())
    assert list(ports) == ["nats", "monitoring", "cluster"]
    assert ports["nats"] == [f"nats://{srv.host}:{srv.port}"]
    (route,) = ports["cluster"]
    host, port = route[len("nats://"):].rsplit(":", 1)
    assert host == "127.0.0.1"
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.settimeout(5)
        assert sock.recv(5) == b"INFO "  # a route port
