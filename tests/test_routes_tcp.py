"""Routes between processes (minijs.core.route_transport): the route protocol parser and
encoders, the route options, and servers joined over TCP in one event loop (each a whole
``Server`` with ``route_options``, as separate processes would be): the mesh from seed routes,
messages, queue groups and replies across it, async INFO, the handshake's refusals with
nats-server's texts, the refusal of servers that are not minijs, JetStream kept per process.
The same behaviour between real processes, beside nats-server, is the conformance suite's
``test_cluster_core.py``."""
from __future__ import annotations

import asyncio
import io
import json
import socket
import subprocess
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import nats
import pytest

from minijs import Server
from minijs.cli import UsageError, build_config, parse_args
from minijs.confparse import ConfigError, parse_config
from minijs.core import route_transport
from minijs.core.route_conn import REFUSAL
from minijs.log import Logger
from minijs.protocol import routeproto as rp
from minijs.routeconfig import RouteOptionError, RouteOptions, parse_route_url


# ---------------------------------------------------------------------- the wire


def test_parser_reads_interest_lines():
    p = rp.RouteParser()
    assert p.feed(b"RS+ $G foo.bar\r\nRS+ $G work.q grp 2\r\nRS- $G foo.bar\r\n"
                  b"RS- $G work.q grp\r\n") == [
        (rp.OP_SUB, "$G", b"foo.bar", None, 0), (rp.OP_SUB, "$G", b"work.q", b"grp", 2),
        (rp.OP_UNSUB, "$G", b"foo.bar", None), (rp.OP_UNSUB, "$G", b"work.q", b"grp")]
    pinned = rp.RouteParser(b"$SYS")
    assert pinned.feed(b"RS+ $SYS.REQ.SERVER.PING\r\n") == [
        (rp.OP_SUB, "$SYS", b"$SYS.REQ.SERVER.PING", None, 0)]


def test_parser_reads_messages_with_replies_and_queue_names():
    p = rp.RouteParser()
    data = (b"RMSG $G foo.bar 5\r\nhello\r\n"
            b"RMSG $G foo.bar reply.x 2\r\nhi\r\n"
            b"RMSG $G work.q | grp 1\r\nx\r\n"
            b"RMSG $G work.q + r.1 g1 g2 2\r\nab\r\n"
            b"HMSG $G foo.bar 12 14\r\nNATS/1.0\r\n\r\nok\r\n"
            b"HMSG $G s + r q 12 12\r\nNATS/1.0\r\n\r\n\r\n")
    assert p.feed(data) == [
        (rp.OP_MSG, "$G", b"foo.bar", None, (), None, b"hello"),
        (rp.OP_MSG, "$G", b"foo.bar", b"reply.x", (), None, b"hi"),
        (rp.OP_MSG, "$G", b"work.q", None, (b"grp",), None, b"x"),
        (rp.OP_MSG, "$G", b"work.q", b"r.1", (b"g1", b"g2"), None, b"ab"),
        (rp.OP_MSG, "$G", b"foo.bar", None, (), b"NATS/1.0\r\n\r\n", b"ok"),
        (rp.OP_MSG, "$G", b"s", b"r", (b"q",), b"NATS/1.0\r\n\r\n", b""),
    ]
    # The same bytes one at a time give the same operations.
    q = rp.RouteParser()
    ops = [op for i in range(len(data)) for op in q.feed(data[i:i + 1])]
    assert ops == rp.RouteParser().feed(data)


def test_parser_stops_after_info_so_the_account_can_be_pinned():
    p = rp.RouteParser()
    ops = p.feed(b'INFO {"route_account":"$SYS"}\r\nRS+ $SYS.X\r\n')
    assert ops == [(rp.OP_INFO, b'{"route_account":"$SYS"}')] and p.paused
    p.account = b"$SYS"
    assert p.feed(b"") == [(rp.OP_SUB, "$SYS", b"$SYS.X", None, 0)] and not p.paused


@pytest.mark.parametrize("data,err", [
    (b"LS+ $G foo\r\n", rp.ERR_UNKNOWN_OP),
    (b"SUB foo 1\r\n", rp.ERR_UNKNOWN_OP),
    (b"RMSG $G foo x\r\n", None),
    (b"RMSG $G foo 2\r\nabc\r\n", None),
    (b"RMSG $G foo ? q 1\r\nx\r\n", None),
    (b"HMSG $G foo 9 2\r\nab\r\n", None),
    (b"RS+ $G\r\n", None),
])
def test_parser_closes_on_bad_input(data, err):
    p = rp.RouteParser()
    ops = p.feed(data)
    assert ops[-1] == (rp.OP_CLOSE, err)
    assert p.feed(b"PING\r\n") == []


def test_encoders_write_what_the_parser_reads():
    lines = (rp.sub("$G", b"a.b", None) + rp.sub("$G", b"q", b"grp", 3)
             + rp.unsub("$G", b"q", b"grp") + rp.msg("$G", b"s", b"r", (b"g",), None, b"xy")
             + rp.msg("$G", b"s", None, (), b"NATS/1.0\r\nA: b\r\n\r\n", b"z"))
    assert lines == (b"RS+ $G a.b\r\nRS+ $G q grp 3\r\nRS- $G q grp\r\n"
                     b"RMSG $G s + r g 2\r\nxy\r\n"
                     b"HMSG $G s 18 19\r\nNATS/1.0\r\nA: b\r\n\r\nz\r\n")
    assert rp.RouteParser().feed(lines)[3] == (rp.OP_MSG, "$G", b"s", b"r", (b"g",), None, b"xy")
    assert rp.sub("$SYS", b"x", None, pinned=True) == b"RS+ x\r\n"
    assert rp.msg("$SYS", b"x", None, (), None, b"", pinned=True) == b"RMSG x 0\r\n\r\n"


def test_routed_jetstream_delivery_carries_its_subject_after_the_ack_reply():
    reply = b"$JS.ACK.S.C.1.5.5.1700000000000000000.0"
    assert rp.ack_deliver_index(reply) == -1
    assert rp.ack_deliver_index(reply + b"@orders.new") == len(reply)
    assert rp.ack_deliver_index(b"$JS.ACK.S@x") == -1  # too few tokens before the @
    assert rp.ack_deliver_index(b"_INBOX.a.b.c.d.e.f.g.h@x") == -1


def test_pool_index_is_nats_servers():
    # $G is carried on the third connection of a pool of three (seen on nats-server's wire).
    assert route_transport.pool_index(3, "$G") == 2
    assert route_transport.pool_index(1, "$G") == 0


# ---------------------------------------------------------------------- options


def test_route_urls():
    url = parse_route_url("nats://ruser:rp%40ss@127.0.0.1:6222")
    assert (url.host, url.port, url.user, url.password) == ("127.0.0.1", 6222, "ruser", "rp@ss")
    assert "rp@ss" not in repr(url) and "rp@ss" not in url.text
    for bad in ("127.0.0.1:6222", "nats://127.0.0.1", "nats://:6222", "nats://h:port"):
        with pytest.raises(RouteOptionError, match="give nats://"):
            parse_route_url(bad)


def test_cluster_block():
    c = parse_config("""cluster {
        name: conf
        listen: 127.0.0.1:6222
        routes: ["nats://ruser:rpass@127.0.0.1:6223", "nats://127.0.0.1:6224",
                 "nats://127.0.0.1:6224"]
        authorization { user: ruser, password: rpass, timeout: 0.5 }
        no_advertise: true
        connect_retries: 3
        pool_size: -1
        accounts: [A]
        compression: off
    }""")
    options = c.route_options
    assert c.cluster_name == "conf"
    assert (options.host, options.port, options.no_advertise, options.connect_retries,
            options.pool_size, options.pinned_accounts) == ("127.0.0.1", 6222, True, 3, -1,
                                                             ("A",))
    assert [r.host_port for r in options.routes] == ["127.0.0.1:6223", "127.0.0.1:6224"]
    assert (options.user, options.password, options.auth_timeout) == ("ruser", "rpass", 0.5)
    # A block that only names the cluster has no route listener (nats-server's port 0).
    c = parse_config("cluster { name: conf }")
    assert (c.cluster_name, c.route_options) == ("conf", None)
    assert parse_config("cluster { port: -1 }").route_options.port == 0


@pytest.mark.parametrize("text,message", [
    ("cluster { listen: 6222, tls { cert_file: x } }",
     'field "tls" in cluster is a nats-server setting that minijs does not support'),
    ("cluster { listen: 6222, bogus: 1 }", 'unknown field "bogus" in cluster'),
    ("cluster { name: 'a b', listen: 6222 }", "cluster name cannot contain spaces"),
    ("cluster { listen: 6222, authorization { users: [] } }",
     "Cluster authorization does not allow multiple users"),
    ("cluster { listen: 6222, authorization { token: t } }",
     "Cluster authorization does not support tokens"),
    ("cluster { routes: [nats://127.0.0.1:6223] }", "solicited routes require cluster"),
    ("cluster { listen: 6222, routes: [127.0.0.1:6223] }", "error parsing route url"),
    ("cluster { listen: 6222, compression: s2_fast }", "does not support"),
])
def test_cluster_block_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_route_flags():
    config = build_config(parse_args(
        ["--cluster", "nats://ruser:rpass@127.0.0.1:6222", "--cluster_name", "conf",
         "--routes", "nats://127.0.0.1:6223, nats://127.0.0.1:6224", "--no_advertise",
         "--connect_retries", "2", "--cluster_advertise", "10.0.0.1:7222", "-n", "n1"]))
    options = config.route_options
    assert (options.host, options.port, options.user, options.password) == (
        "127.0.0.1", 6222, "ruser", "rpass")
    assert [r.host_port for r in options.routes] == ["127.0.0.1:6223", "127.0.0.1:6224"]
    assert (options.no_advertise, options.connect_retries, options.advertise) == (
        True, 2, "10.0.0.1:7222")
    assert build_config(parse_args(["-cluster_listen", "nats://0.0.0.0:-1"])).route_options.port == 0


def test_route_flags_override_the_cluster_block(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text('cluster { name: conf, listen: 127.0.0.1:6222, routes: ["nats://h:1"] }\n')
    config = build_config(parse_args(["-c", str(conf), "--routes", "nats://h:2"]))
    assert ([r.port for r in config.route_options.routes], config.route_options.port) == ([2], 6222)
    config = build_config(parse_args(["-c", str(conf), "--cluster", "nats://127.0.0.1:7000"]))
    assert (config.route_options.port, config.cluster_name) == (7000, "conf")


@pytest.mark.parametrize("argv,message", [
    (["--routes", "nats://127.0.0.1:6222"],
     "solicited routes require cluster capabilities, e.g. --cluster"),
    (["--cluster", "nats://ruser@127.0.0.1:6222"], "expected cluster password to be set"),
    (["--cluster", "127.0.0.1"], "give nats://host:port"),
    (["--cluster", "nats://127.0.0.1:6222", "--routes", "localhost"], "error parsing route url"),
    (["--cluster_size", "3", "--cluster", "nats://127.0.0.1:6222"],
     "use one or the other (drop --cluster_size to join processes by routes"),
    (["--cluster_name", "a b"], "cluster name cannot contain spaces"),
])
def test_route_flag_errors(argv, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        build_config(parse_args(argv))


def test_cluster_size_with_route_options_is_refused():
    from minijs.clustering import ClusterError

    with pytest.raises(ClusterError, match="use one or the other"):
        Server(cluster_size=3, route_options=RouteOptions(port=0))


# ---------------------------------------------------------------------- servers joined


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Node:
    def __init__(self, name: str, cluster_port: int, routes: list[int], **kw: Any) -> None:
        self.log = io.StringIO()
        options = kw.pop("options", {})
        self.route_options = RouteOptions(
            host="127.0.0.1", port=cluster_port,
            routes=tuple(parse_route_url(f"nats://{kw.pop('creds', '')}127.0.0.1:{p}")
                         for p in routes), **options)
        kw.setdefault("cluster_name", "conf")
        self.server = Server(port=0, server_name=name, route_options=self.route_options,
                             logger=Logger(self.log, debug=True), **kw)
        self.name = name
        self.cluster_port = cluster_port

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    @property
    def transport(self) -> Any:
        return self.server.route_transport

    def lines(self, level: str = "") -> list[str]:
        return [line for line in self.log.getvalue().splitlines() if f"[{level}]" in line]


async def until(check: Any, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} not met within {timeout}s"
        await asyncio.sleep(0.01)


def meshed(nodes: list[Node]) -> bool:
    up = [n for n in nodes if n.server.running]
    return all(
        n.transport is not None and sum(1 for link in n.transport.links.values()
                                        if link.complete) == len(up) - 1
        for n in up)


@asynccontextmanager
async def cluster(size: int = 3, seed_only: bool = True, **kw: Any) -> AsyncIterator[list[Node]]:
    """``size`` servers; with ``seed_only`` every node but the first routes only to the first."""
    ports = [_free_port() for _ in range(size)]
    nodes = []
    for i in range(size):
        routes = ([ports[0]] if i else []) if seed_only else [p for p in ports if p != ports[i]]
        nodes.append(Node(f"n{i + 1}", ports[i], routes, **kw))
    try:
        for n in nodes:
            await n.server.start()
        await until(lambda: meshed(nodes), what="full mesh")
        yield nodes
    finally:
        for n in nodes:
            if n.server.running:
                await n.server.stop()


class Raw:
    """A raw client: the INFO it was sent, lines in, bytes out."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 info: dict[str, Any]) -> None:
        self.reader, self.writer, self.info = reader, writer, info

    @classmethod
    async def connect(cls, port: int, connect: bytes | None = (
            b'{"verbose":false,"protocol":1,"headers":true,"no_responders":true}')) -> "Raw":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        info = json.loads((await reader.readline())[5:])
        raw = cls(reader, writer, info)
        if connect is not None:
            await raw.send(b"CONNECT " + connect + b"\r\nPING\r\n")
            assert await raw.line() == b"PONG"
            if json.loads(connect).get("protocol") == 1:  # the INFO after the first PONG
                assert json.loads((await raw.line())[5:])["connect_info"] is True
        return raw

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def line(self, timeout: float = 5.0) -> bytes:
        return (await asyncio.wait_for(self.reader.readline(), timeout)).rstrip(b"\r\n")

    async def frame(self, timeout: float = 5.0) -> bytes:
        """A MSG/HMSG with its payload, or any other line (the server's PINGs answered)."""
        head = await self.line(timeout)
        while head == b"PING":
            await self.send(b"PONG\r\n")
            head = await self.line(timeout)
        if head.startswith((b"MSG ", b"HMSG ")):
            size = int(head.split()[-1])
            body = await asyncio.wait_for(self.reader.readexactly(size + 2), timeout)
            return head + b"\r\n" + body[:-2]
        return head

    async def quiet(self, seconds: float = 0.2) -> bool:
        try:
            await asyncio.wait_for(self.reader.readline(), seconds)
        except asyncio.TimeoutError:
            return True
        return False

    async def close(self) -> None:
        self.writer.close()


async def interest_everywhere(sub: Raw, *pubs: Raw) -> None:
    """Every SUB ``sub`` sent is known on the publishers' nodes: a marker crosses back."""
    await sub.send(b"SUB marker.x 99\r\nPING\r\n")
    assert await sub.frame() == b"PONG"
    for pub in pubs:
        for _ in range(200):
            await pub.send(b"PUB marker.x 0\r\n\r\nPING\r\n")
            assert await pub.frame() == b"PONG"
            try:
                frame = await sub.frame(timeout=0.05)
            except asyncio.TimeoutError:
                continue
            assert frame == b"MSG marker.x 99 0\r\n"
            break
        else:
            raise AssertionError("interest never crossed")
    await sub.send(b"UNSUB 99\r\nPING\r\n")
    while await sub.frame() != b"PONG":
        pass


async def test_seed_routes_form_a_full_mesh_with_pools():
    async with cluster(3) as nodes:
        everyone = sorted(n.url for n in nodes)
        for n in nodes:
            raw = await Raw.connect(n.server.port, connect=None)
            assert raw.info["cluster"] == "conf"
            assert raw.info["connect_urls"][0] == n.url
            assert sorted(raw.info["connect_urls"]) == everyone
            await raw.close()
            # 3 pooled connections and one for the system account, to each of the two others
            assert (n.transport.num_routes, n.transport.num_remotes) == (8, 2)
            accounts = sorted(c.account or "" for link in n.transport.links.values()
                              for c in link.connections())
            assert accounts == ["", "", "", "", "", "", "$SYS", "$SYS"]
            varz = n.server.monitor.varz() if n.server.monitor else None
            assert varz is None
        # n2 and n3 were told of each other by n1: they route directly (implicitly).
        n2 = nodes[1].transport
        link = n2.links[nodes[2].server.server_id]
        assert link.remote_name == "n3"


async def test_routez_and_varz():
    async with cluster(2, http_port=0) as (n1, n2):
        monitor = n1.server.monitor
        varz = monitor.varz()
        assert varz["cluster"] == {"name": "conf", "addr": "127.0.0.1",
                                   "cluster_port": n1.cluster_port, "auth_timeout": 2.0,
                                   "tls_timeout": 2.0, "pool_size": 3}
        assert (varz["routes"], varz["remotes"]) == (4, 1)
        assert sorted(varz["connect_urls"]) == sorted([n1.url, n2.url])
        assert list(varz)[8] == "connect_urls"  # right after port, as nats-server
        monitor2 = n2.server.monitor
        assert monitor2.varz()["cluster"]["urls"] == [f"127.0.0.1:{n1.cluster_port}"]
        routez = monitor.routez({})
        assert list(routez) == ["server_id", "server_name", "now", "num_routes", "routes"]
        assert routez["num_routes"] == 4
        for r in routez["routes"]:
            assert (r["remote_id"], r["remote_name"]) == (n2.server.server_id, "n2")
            assert r["did_solicit"] is False and r["is_configured"] is False  # n2 dialled n1
            assert r["compression"] == "off"
        routez2 = monitor2.routez({"subs": "1"})
        assert all(r["did_solicit"] and r["is_configured"] for r in routez2["routes"])
        assert [r.get("account") for r in routez2["routes"]].count("$SYS") == 1
        sub = await Raw.connect(n1.server.port)
        await sub.send(b"SUB watched.one 1\r\n")
        await interest_everywhere(sub, await Raw.connect(n2.server.port))
        lists = [r.get("subscriptions_list") for r in monitor2.routez({"subs": "1"})["routes"]]
        assert any(subs and "watched.one" in subs for subs in lists)
        await sub.close()


async def test_messages_queue_groups_and_replies_cross_the_routes():
    async with cluster(3) as (n1, n2, n3):
        a, b, c = [await Raw.connect(n.server.port) for n in (n1, n2, n3)]
        await a.send(b"SUB x.* 1\r\nSUB work grp 2\r\n")
        await c.send(b"SUB work grp 3\r\n")
        await interest_everywhere(a, b, c)
        await interest_everywhere(c, b)
        await b.send(b"PUB x.1 r.1 5\r\nhello\r\nHPUB x.2 12 14\r\nNATS/1.0\r\n\r\nok\r\n")
        assert await a.frame() == b"MSG x.1 1 r.1 5\r\nhello"
        assert await a.frame() == b"HMSG x.2 1 12 14\r\nNATS/1.0\r\n\r\nok"
        # A queue group with members on n1 and n3, published on n2 (no member): once each.
        for k in range(40):
            await b.send(b"PUB work 1\r\n%d\r\n" % (k % 10))
        got = []
        for client in (a, c):
            while True:
                try:
                    got.append(await client.frame(timeout=0.5))
                except asyncio.TimeoutError:
                    break
        assert len(got) == 40
        assert {f.split(b" ")[2] for f in got} == {b"2", b"3"}  # both members served
        # Request on n3 answered on n1; no responder anywhere: 503 at once.
        await c.send(b"SUB _R.> 7\r\nPUB x.req _R.1 1\r\nq\r\n")
        assert await a.frame() == b"MSG x.req 1 _R.1 1\r\nq"
        await a.send(b"PUB _R.1 1\r\nA\r\n")
        assert await c.frame() == b"MSG _R.1 7 1\r\nA"
        await c.send(b"HPUB nobody.here _R.2 12 12\r\nNATS/1.0\r\n\r\n\r\n")
        header = b"NATS/1.0 503\r\nNats-Subject: nobody.here\r\n\r\n"
        assert await c.frame() == b"HMSG _R.2 7 %d %d\r\n" % (len(header), len(header)) + header
        for client in (a, b, c):
            await client.close()


async def test_async_info_when_a_node_leaves_and_returns():
    async with cluster(3) as nodes:
        n1, n2, n3 = nodes
        p1 = await Raw.connect(n1.server.port)
        p0 = await Raw.connect(n1.server.port, connect=b'{"verbose":false,"protocol":0}')
        await n3.server.stop()
        left = json.loads((await p1.frame())[5:])
        assert left["connect_urls"] == [n1.url, n2.url]
        assert "connect_info" not in left
        assert await p1.quiet(0.3)  # one INFO for one change
        await n3.server.start()
        await until(lambda: meshed(nodes), what="n3 back")
        back = json.loads((await p1.frame())[5:])
        assert back["connect_urls"][0] == n1.url
        assert sorted(back["connect_urls"]) == sorted(n.url for n in nodes)
        assert await p0.quiet(0.2)
        await p1.close()
        await p0.close()


async def test_both_sides_soliciting_form_one_pool():
    async with cluster(3, seed_only=False) as nodes:
        await asyncio.sleep(1.5)  # redials settle: nothing churns
        for n in nodes:
            assert n.transport.num_routes == 8
            for link in n.transport.links.values():
                conns = link.connections()
                assert len(conns) == 4 and len({c.did_solicit for c in conns}) == 1
                remote = next(m for m in nodes if m.server.server_id == link.remote_id)
                theirs = remote.transport.links[n.server.server_id]
                assert theirs.owner_self != link.owner_self  # one side solicited them all
        assert not any("Route Removed" in line for n in nodes for line in n.lines("INF"))


async def test_jetstream_stays_per_process(tmp_path):
    async with cluster(2, jetstream=True) as (n1, n2):
        c1 = await nats.connect(f"nats://{n1.url}")
        c2 = await nats.connect(f"nats://{n2.url}")
        try:
            js1, js2 = c1.jetstream(), c2.jetstream()
            with pytest.raises(nats.js.errors.APIError) as info:
                await js1.add_stream(name="R3", subjects=["r3.>"], num_replicas=3)
            assert (info.value.code, info.value.err_code) == (500, 10074)
            assert info.value.description.startswith(
                "replicas > 1 not supported in non-clustered mode (")
            assert "--cluster_size" in info.value.description
            await js1.add_stream(name="S", subjects=["s.>"])
            # The API of n2 answers for n2's own JetStream only...
            with pytest.raises(nats.js.errors.NotFoundError):
                await js2.stream_info("S")
            # ... but the stream's subjects and its consumers' deliveries cross the routes.
            sub = await c2.subscribe("dlv.push")
            await c2.flush()
            for _ in range(100):
                try:
                    ack = await js2.publish("s.x", b"from n2", timeout=0.2)
                    break
                except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                    await asyncio.sleep(0.02)
            assert (ack.stream, ack.seq) == ("S", 1)
            await asyncio.sleep(0.1)
            await js1.add_consumer("S", durable_name="push", deliver_subject="dlv.push",
                                   ack_policy="explicit")
            msg = await sub.next_msg(timeout=5)
            assert (msg.subject, msg.data) == ("s.x", b"from n2")
            assert msg.reply.startswith("$JS.ACK.S.push.1.1.1.")
            await msg.ack()
            for _ in range(100):
                info2 = await js1.consumer_info("S", "push")
                if info2.ack_floor.stream_seq == 1:
                    break
                await asyncio.sleep(0.02)
            assert info2.ack_floor.stream_seq == 1
        finally:
            await c1.close()
            await c2.close()


# ---------------------------------------------------------------------- refusals


async def route_exchange(port: int, send: bytes, wait: float = 2.0) -> tuple[dict, bytes]:
    """Connect to a route port, send ``send`` after its INFO: (INFO, what came until EOF)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    info = json.loads((await reader.readline())[5:])
    writer.write(send)
    out = await asyncio.wait_for(reader.read(), wait)
    writer.close()
    return info, out


async def test_route_port_refusals():
    async with cluster(1) as (n1,):
        port = n1.cluster_port
        info, out = await route_exchange(
            port, b'CONNECT {"verbose":false,"lang":"python3","protocol":1}\r\nPING\r\n')
        assert (info["server_name"], info["cluster"], info["port"], info["connect_urls"]) == (
            "n1", "conf", port, [n1.url])
        assert info["route_pool_size"] == 3 and info["minijs"]["version"] == 1
        assert out == b"-ERR 'attempted to connect to route port'\r\n"
        _, out = await route_exchange(port, b"PING\r\n")
        assert out == b"-ERR 'Authorization Violation'\r\n"
        _, out = await route_exchange(port, b'CONNECT {"name":"NX","cluster":"other"}\r\n')
        assert out == (b"-ERR 'Rejecting connection, cluster name \"other\" does not match "
                       b"\"conf\"'\r\n")
        _, out = await route_exchange(port, b'CONNECT {"name":"NX","gateway":"G"}\r\n')
        assert out == b"-ERR 'Rejecting connection from gateway \"G\" on the Route port'\r\n"
        # A real server's CONNECT (no minijs marker): refused, logged once.
        connect = (b'CONNECT {"echo":true,"verbose":false,"pedantic":false,"tls_required":false,'
                   b'"headers":true,"name":"NREAL","cluster":"conf","lnoc":true,"ln":true}\r\n')
        for _ in range(3):
            _, out = await route_exchange(port, connect)
            assert out == b"-ERR '" + REFUSAL.encode() + b"'\r\n"
        errors = [line for line in n1.lines("ERR") if "not minijs" in line]
        assert len(errors) == 1 and "Refusing route from server NREAL" in errors[0]
        assert len([line for line in n1.lines("INF") if "Route connection created" in line]) == 5


async def test_route_authorization():
    ports = [_free_port(), _free_port()]
    options = {"user": "ruser", "password": "rpass"}
    good = Node("n1", ports[0], [], options=options)
    joined = Node("n2", ports[1], [ports[0]], options=options, creds="ruser:rpass@")
    async with _running(good, joined):
        await until(lambda: meshed([good, joined]), what="authorized route")
    ports = [_free_port(), _free_port()]
    good = Node("n1", ports[0], [], options=options)
    wrong = Node("n2", ports[1], [ports[0]], options=options, creds="ruser:nope@")
    async with _running(good, wrong):
        await asyncio.sleep(0.5)
        assert not good.transport.links and not wrong.transport.links
        assert any("authentication error" in line for line in good.lines("ERR"))


@asynccontextmanager
async def _running(*nodes: Node) -> AsyncIterator[None]:
    try:
        for n in nodes:
            await n.server.start()
        yield
    finally:
        for n in nodes:
            if n.server.running:
                await n.server.stop()


async def test_minijs_refuses_to_join_a_server_that_is_not_minijs(monkeypatch):
    monkeypatch.setattr(route_transport, "ROUTE_RECONNECT", 0.05)
    seen: list[bytes] = []

    async def fake_nats_server(reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"NREAL","server_name":"real","version":"2.15.1",'
                     b'"proto":3,"go":"go1.27.2","host":"127.0.0.1","port":1,"headers":true,'
                     b'"max_payload":1048576,"cluster":"conf","route_pool_size":3} \r\n')
        seen.append(await reader.read())
        writer.close()

    fake = await asyncio.start_server(fake_nats_server, "127.0.0.1", 0)
    fake_port = fake.sockets[0].getsockname()[1]
    node = Node("n1", _free_port(), [fake_port])
    async with _running(node):
        await until(lambda: len(seen) >= 3, what="three attempts")
    fake.close()
    assert seen[0].startswith(b"CONNECT {")
    assert json.loads(seen[0].split(b"\r\n")[0][8:])["minijs"]["version"] == 1
    assert seen[0].endswith(b"-ERR '" + REFUSAL.encode() + b"'\r\n")
    errors = [line for line in node.lines("ERR") if "not minijs" in line]
    assert len(errors) == 1 and f"Refusing route to nats://127.0.0.1:{fake_port}" in errors[0]


async def test_other_cluster_names_duplicate_names_and_routes_to_self_stay_apart():
    ports = [_free_port() for _ in range(3)]
    n1 = Node("n1", ports[0], [ports[0]])  # a route to itself: ignored
    stray = Node("stray", ports[1], [ports[0]], cluster_name="other")
    twin = Node("n1", ports[2], [ports[0]])  # same server name
    async with _running(n1, stray, twin):
        await asyncio.sleep(0.8)
        assert not n1.transport.links and not stray.transport.links and not twin.transport.links
        assert any('cluster name "other" does not match "conf"' in line
                   for line in n1.lines("ERR"))
        assert any('Remote server has a duplicate name: "n1"' in line for line in n1.lines("ERR"))
        assert not any("127.0.0.1:%d - rid" % ports[0] in line for line in n1.lines("INF")
                       if "Route connection created" in line)


async def test_a_dynamic_cluster_name_gives_way_to_a_configured_one():
    ports = [_free_port(), _free_port()]
    named = Node("n1", ports[0], [])
    anonymous = Node("n2", ports[1], [ports[0]], cluster_name=None)
    async with _running(named, anonymous):
        made_up = anonymous.transport.cluster_name
        assert len(made_up) == 22
        await until(lambda: meshed([named, anonymous]), what="adoption")
        assert anonymous.transport.cluster_name == "conf"
        raw = await Raw.connect(anonymous.server.port, connect=None)
        assert raw.info["cluster"] == "conf"
        await raw.close()
    assert any("Cluster name was dynamically generated" in line for line in anonymous.lines("WRN"))
    assert any("Cluster name updated to conf" in line for line in anonymous.lines("INF"))


async def test_a_taken_route_port_is_a_startup_error():
    from minijs.server import StartupError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = Node("n1", port, [])
        with pytest.raises(StartupError, match=f"Error listening on router port: {port} - "
                                               f"listen tcp 127.0.0.1:{port}: bind: address "
                                               "already in use"):
            await node.server.start()
        assert not node.server.running


async def test_an_implicit_route_is_tried_once_then_found_again_through_gossip():
    async with cluster(3) as nodes:
        n1, n2, n3 = nodes
        await n3.server.stop()
        await until(lambda: meshed(nodes), what="n1-n2 only")
        await until(lambda: any("Error trying to connect to route (attempt 1)" in line
                                for line in n2.lines("ERR")), what="one implicit retry")
        await asyncio.sleep(1.2)
        assert not any("attempt 2" in line for line in n2.lines())
        await n3.server.start()
        await until(lambda: meshed(nodes), what="n3 back through n1's gossip")


async def test_pool_sizes_one_connection_or_the_larger_pool():
    ports = [_free_port() for _ in range(3)]
    n1 = Node("n1", ports[0], [], options={"pool_size": -1})
    n2 = Node("n2", ports[1], [ports[0]])
    async with _running(n1, n2):
        await until(lambda: meshed([n1, n2]), what="a link without pooling")
        assert n1.transport.num_routes == n2.transport.num_routes == 1
    ports = [_free_port() for _ in range(2)]
    n1 = Node("n1", ports[0], [], options={"pool_size": 5})
    n2 = Node("n2", ports[1], [ports[0]])
    async with _running(n1, n2):
        await until(lambda: meshed([n1, n2]), what="a pool of the larger size")
        assert n1.transport.num_routes == n2.transport.num_routes == 6  # 5 + the system's
        a, b = await Raw.connect(n1.server.port), await Raw.connect(n2.server.port)
        await a.send(b"SUB big 1\r\n")
        await interest_everywhere(a, b)
        payload = bytes(range(256)) * 4096  # 1 MiB: crosses in many reads
        await b.send(b"PUB big %d\r\n" % len(payload) + payload + b"\r\n")
        assert await a.frame() == b"MSG big 1 %d\r\n" % len(payload) + payload
        await a.close()
        await b.close()


async def test_a_restarted_server_rejoins():
    async with cluster(2) as nodes:
        n1, n2 = nodes
        await n2.server.restart()
        await until(lambda: meshed(nodes), what="rejoined after restart")
        raw = await Raw.connect(n1.server.port, connect=None)
        assert sorted(raw.info["connect_urls"]) == sorted(n.url for n in nodes)
        await raw.close()


# ---------------------------------------------------------------------- beside a real nats-server


def _nats_server(*args: str) -> subprocess.Popen:
    from conformance.servers import command_for

    return subprocess.Popen(command_for("nats-server") + list(args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


async def test_a_real_nats_server_is_refused_both_ways_without_disturbing_its_cluster():
    """nats-server dialling a minijs route port, and minijs dialling nats-server's: refused
    with the -ERR naming the cause and the fix (nats-server logs it), logged once by minijs;
    nats-server never registers the route, so its clients' connect_urls never change."""
    node = Node("mini", _free_port(), [])
    async with _running(node):
        real_port, real_cluster = _free_port(), _free_port()
        real = _nats_server("-a", "127.0.0.1", "-p", str(real_port), "-n", "real",
                            "--cluster", f"nats://127.0.0.1:{real_cluster}",
                            "--cluster_name", "conf",
                            "--routes", f"nats://127.0.0.1:{node.cluster_port}")
        try:
            await until(lambda: _port_open(real_port), what="nats-server up")
            client = await Raw.connect(real_port)
            assert "connect_urls" not in client.info  # (a node never routed lists none)
            minijs_dials = Node("mini2", _free_port(), [real_cluster])
            async with _running(minijs_dials):
                await asyncio.sleep(3.5)  # nats-server dials again every second
                try:
                    extra = await client.frame(timeout=0.1)
                except asyncio.TimeoutError:
                    extra = b""
                assert extra == b"", extra  # no async INFO: nothing was ever added
            await client.close()
        finally:
            real.terminate()
            _, err = await asyncio.to_thread(real.communicate, timeout=30)
    assert f"Route Error '{REFUSAL}'" in err
    assert not minijs_dials.transport and not node.transport  # (stopped)
    for n in (node, minijs_dials):
        errors = [line for line in n.lines("ERR") if "not minijs" in line]
        assert len(errors) == 1, n.lines("ERR")
    assert node.lines("ERR")[0].count("Refusing route from server") == 1
    assert "Refusing route to nats://127.0.0.1:%d" % real_cluster in minijs_dials.lines("ERR")[0]


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


async def test_a_bad_pool_index_is_refused_and_leaves_nothing_behind():
    async with cluster(1) as (n1,):
        marker = {"version": 1, "pinned": ["$SYS"]}
        connect = json.dumps({"name": "NPEER", "cluster": "conf", "minijs": marker}).encode()
        info = json.dumps({"server_id": "NPEER", "server_name": "peer", "port": 1,
                           "cluster": "conf", "route_pool_size": 3, "route_pool_idx": 7,
                           "minijs": marker}).encode()
        _, out = await route_exchange(n1.cluster_port,
                                      b"CONNECT " + connect + b"\r\nINFO " + info + b"\r\n")
        assert out == b"-ERR 'Invalid route pool index: 7 - pool size is 3'\r\n"
        assert not n1.transport.links
