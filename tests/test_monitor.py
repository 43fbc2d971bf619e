"""The monitoring endpoint: paths, status codes, headers, /varz and /connz as nats-server."""
from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nats
import pytest

from minijs import Server
from minijs.config import RANDOM_PORT
from minijs.log import Logger
from minijs.monitor import Monitor, MonitorError, go_duration, rfc3339, uptime


async def http(port: int, path: str, method: str = "GET", host: str = "127.0.0.1"
               ) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request; the monitor closes the connection after answering."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: t\r\n\r\n".encode())
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


@pytest.fixture
async def server():
    srv = Server(port=0, http_port=RANDOM_PORT)
    await srv.start()
    yield srv
    await srv.stop()


async def test_healthz_is_exactly_nats_servers(server: Server):
    status, headers, body = await http(server.monitor.port, "/healthz")
    assert status == 200
    assert body == b'{"status":"ok"}'
    assert headers["content-type"] == "application/json"
    assert headers["access-control-allow-origin"] == "*"
    assert headers["content-length"] == "15"
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", headers["date"])
    # Query strings (nats-server's ?js-enabled-only=true etc.) do not change the answer.
    assert (await http(server.monitor.port, "/healthz?js-enabled-only=true"))[2] == body


async def test_unknown_path_is_404_like_go(server: Server):
    for path in ("/nope", "/varz/", "/routez/"):
        status, headers, body = await http(server.monitor.port, path)
        assert status == 404
        assert body == b"404 page not found\n"
        assert headers["content-type"] == "text/plain; charset=utf-8"


async def test_index_is_html_linking_the_endpoints(server: Server):
    status, headers, body = await http(server.monitor.port, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    for path in (b"./varz", b"./jsz", b"./connz", b"./accountz", b"./subsz", b"./healthz"):
        assert path in body


async def test_head_has_headers_only(server: Server):
    status, headers, body = await http(server.monitor.port, "/healthz", method="HEAD")
    assert status == 200 and body == b"" and headers["content-length"] == "15"


async def test_bad_request_line(server: Server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.monitor.port)
    writer.write(b"garbage\r\n\r\n")
    raw = await asyncio.wait_for(reader.read(), 5)
    assert raw.startswith(b"HTTP/1.1 400 ")
    writer.close()


async def test_varz_fields_units_and_live_counters(server: Server):
    status, headers, body = await http(server.monitor.port, "/varz")
    assert status == 200 and headers["content-type"] == "application/json"
    v = json.loads(body)
    assert body.startswith(b'{\n  "server_id"')  # indented like nats-server's
    assert v["server_id"] == server.server_id and v["server_name"] == server.server_name
    assert v["version"] == "2.15.1" and v["proto"] == 1
    assert (v["host"], v["port"]) == ("127.0.0.1", server.port)
    assert (v["http_host"], v["http_port"]) == ("127.0.0.1", server.monitor.port)
    assert v["ping_interval"] == 120_000_000_000  # Go durations: nanoseconds
    assert v["write_deadline"] == 10_000_000_000
    assert v["auth_timeout"] == 2 and isinstance(v["auth_timeout"], int)  # Go prints 2, not 2.0
    assert (v["max_payload"], v["max_control_line"], v["max_pending"]) == (
        1024 * 1024, 4096, 64 * 1024 * 1024)
    assert (v["max_connections"], v["ping_max"]) == (65536, 2)
    assert (v["routes"], v["remotes"], v["leafnodes"]) == (0, 0, 0)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", v["start"])
    assert v["now"] >= v["start"] and v["uptime"].endswith("s")
    assert v["cores"] >= 1 and isinstance(v["cpu"], (int, float))
    assert "jetstream" not in v and "auth_required" not in v
    assert v["connections"] == 0 and v["in_msgs"] == 0

    nc = await nats.connect(server.client_url)
    sub = await nc.subscribe("t")
    await nc.publish("t", b"hello")
    assert (await sub.next_msg(timeout=5)).data == b"hello"
    v = json.loads((await http(server.monitor.port, "/varz"))[2])
    assert v["connections"] == 1 and v["total_connections"] >= 1
    assert v["subscriptions"] >= 1
    assert v["in_msgs"] >= 1 and v["in_bytes"] >= 5
    assert v["out_msgs"] >= 1 and v["out_bytes"] >= 5
    assert v["http_req_stats"]["/varz"] == 2
    await nc.close()


async def test_connz_lists_open_clients(server: Server):
    nc = await nats.connect(server.client_url, name="conn-a")
    nc2 = await nats.connect(server.client_url)
    await nc.subscribe("foo.>")
    await nc.subscribe("bar", queue="q")
    await nc.publish("foo.x", b"hello")
    await nc.flush()
    await asyncio.sleep(0.05)
    status, headers, body = await http(server.monitor.port, "/connz")
    assert status == 200 and headers["content-type"] == "application/json"
    assert b'"foo.\\u003e"' not in body  # no subjects without subs=1
    c = json.loads(body)
    assert c["server_id"] == server.server_id
    assert (c["num_connections"], c["total"], c["offset"], c["limit"]) == (2, 2, 0, 1024)
    first = c["connections"][0]
    assert first["cid"] < c["connections"][1]["cid"]  # sorted by cid
    assert (first["kind"], first["type"], first["ip"]) == ("Client", "nats", "127.0.0.1")
    assert first["name"] == "conn-a" and first["lang"] == "python3"
    assert first["subscriptions"] == 2
    assert first["in_msgs"] == 1 and first["in_bytes"] == 5
    assert first["out_msgs"] == 1 and first["out_bytes"] == 5
    assert re.fullmatch(r"\d+(\.\d+)?(ns|µs|ms|s)", first.get("rtt", "1ms"))
    assert first["uptime"].endswith("s") and first["idle"].endswith("s")
    assert "name" not in c["connections"][1]  # omitted when empty, as nats-server does

    c = json.loads((await http(server.monitor.port, "/connz?subs=1"))[2])
    assert c["connections"][0]["subscriptions_list"] == ["foo.>", "bar"]
    raw = (await http(server.monitor.port, "/connz?subs=detail&limit=1"))[2]
    assert b'"foo.\\u003e"' in raw  # Go's encoder escapes <, > and &
    c = json.loads(raw)
    assert (c["num_connections"], c["total"], c["limit"]) == (1, 2, 1)
    assert c["connections"][0]["subscriptions_list_detail"] == [
        {"subject": "foo.>", "sid": "1", "msgs": 1, "cid": first["cid"]},
        {"subject": "bar", "qgroup": "q", "sid": "2", "msgs": 0, "cid": first["cid"]}]
    c = json.loads((await http(server.monitor.port, "/connz?offset=1"))[2])
    assert [x["cid"] for x in c["connections"]] != [first["cid"]] and c["num_connections"] == 1
    c = json.loads((await http(server.monitor.port, f"/connz?cid={first['cid']}"))[2])
    assert [x["cid"] for x in c["connections"]] == [first["cid"]]
    c = json.loads((await http(server.monitor.port, "/connz?sort=msgs_from"))[2])
    assert c["connections"][0]["cid"] == first["cid"]
    for bad in ("/connz?sort=stop", "/connz?sort=nope", "/connz?limit=x"):
        assert (await http(server.monitor.port, bad))[0] == 400, bad
    c = json.loads((await http(server.monitor.port, "/connz?sort=subs&auth=1"))[2])
    assert c["connections"][0]["cid"] == first["cid"]
    assert all(x["name_tag"] == "$G" for x in c["connections"])
    await nc.close()
    await nc2.close()
    # Closed connections are kept, each with the reason it closed.
    for _ in range(100):
        c = json.loads((await http(server.monitor.port, "/connz?state=closed&sort=reason"))[2])
        if c["total"] == 2:
            break
        await asyncio.sleep(0.01)
    assert [x["reason"] for x in c["connections"]] == ["Client Closed", "Client Closed"]


async def test_varz_auth_and_limits_reflect_config():
    async with Server(port=0, http_port=0, user="u", password="p", auth_timeout=1.5,
                      max_subscriptions=10, ping_interval=0.25) as srv:
        v = json.loads((await http(srv.monitor.port, "/varz"))[2])
    assert v["auth_required"] is True and v["auth_timeout"] == 1.5
    assert v["max_subscriptions"] == 10
    assert v["ping_interval"] == 250_000_000


async def test_varz_jetstream_section_only_with_an_engine(server: Server):
    v = json.loads((await http(server.monitor.port, "/varz"))[2])
    assert "jetstream" not in v
    server.jetstream_group = SimpleNamespace(varz=lambda: {"config": {"max_memory": 1},
                                                           "stats": {}})
    try:
        v = json.loads((await http(server.monitor.port, "/varz"))[2])
        assert v["jetstream"] == {"config": {"max_memory": 1}, "stats": {}}
    finally:
        server.jetstream_group = None


async def test_logs_the_nats_server_line(tmp_path):
    log_path = tmp_path / "log"
    with open(log_path, "w") as stream:
        async with Server(port=0, http_port=-1, logger=Logger(stream)) as srv:
            port = srv.monitor.port
    lines = log_path.read_text().splitlines()
    monitor = [i for i, line in enumerate(lines) if "Starting http monitor on" in line]
    listening = [i for i, line in enumerate(lines) if "Listening for client connections" in line]
    assert lines[monitor[0]].endswith(f"[INF] Starting http monitor on 127.0.0.1:{port}")
    assert monitor[0] < listening[0]


async def test_stop_closes_the_port():
    srv = Server(port=0, http_port=-1)
    await srv.start()
    port = srv.monitor.port
    await srv.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_stop_drops_a_half_sent_request():
    srv = Server(port=0, http_port=-1)
    await srv.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.monitor.port)
    writer.write(b"GET /varz HTTP/1.1\r\n")  # never finishes its head
    await asyncio.sleep(0.05)
    await asyncio.wait_for(srv.stop(), 5)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()


async def test_port_in_use_is_a_clear_error():
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    try:
        monitor = Monitor(Server(host="127.0.0.1", http_port=port))
        with pytest.raises(MonitorError) as info:
            await monitor.start()
        assert str(info.value) == (
            f"Can't start monitoring: can't listen to the monitor port: listen tcp "
            f"127.0.0.1:{port}: bind: address already in use")
    finally:
        blocker.close()


def test_time_formats():
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1.5) == "1970-01-01T00:00:01.5Z"
    assert rfc3339(1.123456) == "1970-01-01T00:00:01.123456Z"
    assert [go_duration(s) for s in (0, 350e-9, 12.5e-6, 0.001401133, 0.5, 1.5, 120, 3723.5)] == [
        "0s", "350ns", "12.5µs", "1.401133ms", "500ms", "1.5s", "2m0s", "1h2m3.5s"]
    assert [uptime(s) for s in (0, 59.9, 61, 3601, 90061, 365 * 86400 + 1)] == [
        "0s", "59s", "1m1s", "1h0m1s", "1d1h1m1s", "1y0d0h0m1s"]


# ----------------------------------------------------------------------------- vs nats-server


def _nats_server() -> str | None:
    candidate = Path(sys.executable).parent / "nats-server"
    return str(candidate) if candidate.exists() else shutil.which("nats-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_monitor(args: list[str], path: str = "/varz") -> dict:
    """Run the real nats-server and GET ``path`` (with a client connected for /connz)."""
    import urllib.request

    binary = _nats_server()
    if binary is None:
        pytest.skip("no nats-server binary")
    port, mport = _free_port(), _free_port()
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-m", str(mport), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{mport}/varz", timeout=2) as r:
                    varz = json.loads(r.read())
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if path == "/varz":
            return varz
        return asyncio.run(_with_client(port, mport, path))
    finally:
        proc.terminate()
        proc.wait(10)


async def test_varz_matches_the_real_server_where_it_reports():
    """Every field minijs reports exists in nats-server's /varz, with the same type, and the
    config-derived ones carry the same value for the same settings."""
    real = await asyncio.get_running_loop().run_in_executor(
        None, _real_monitor, ["--user", "u", "--pass", "p"])
    async with Server(port=0, http_port=-1, user="u", password="p") as srv:
        ours = json.loads((await http(srv.monitor.port, "/varz"))[2])
    assert set(ours) <= set(real), set(ours) - set(real)
    for key, value in ours.items():
        assert type(value) is type(real[key]) or {type(value), type(real[key])} <= {int, float}, key
    for key in ("version", "proto", "git_commit", "go", "host", "max_connections",
                "ping_interval", "ping_max", "http_host", "http_base_path", "https_port",
                "auth_required", "auth_timeout", "max_control_line", "max_payload",
                "max_pending", "write_deadline", "routes", "remotes", "leafnodes"):
        assert ours[key] == real[key], key
    # key order follows nats-server's
    order = [k for k in real if k in ours]
    assert list(ours) == order


async def _with_client(port: int, mport: int, path: str) -> dict:
    """The real server's answer for ``path`` while a client like the one in our test is on."""
    nc = await nats.connect(f"nats://127.0.0.1:{port}", name="cmp")
    await nc.subscribe("foo.>")
    await nc.subscribe("bar", queue="q")
    await nc.publish("foo.x", b"x")
    await nc.flush()
    loop = asyncio.get_running_loop()

    def get() -> dict:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{mport}{path}", timeout=2) as r:
            return json.loads(r.read())
    try:
        # Under load nats-server's /connz can lag its client's PONG by a moment: poll.
        deadline = time.monotonic() + 5
        while True:
            report = await loop.run_in_executor(None, get)
            conns = report["connections"]
            if conns and conns[0]["subscriptions"] == 2 and conns[0]["in_msgs"] == 1:
                return report
            assert time.monotonic() < deadline, report
            await asyncio.sleep(0.05)
    finally:
        await nc.close()


async def test_connz_matches_the_real_server_shape():
    real = await asyncio.get_running_loop().run_in_executor(
        None, _real_monitor, [], "/connz?subs=detail")
    async with Server(port=0, http_port=-1) as srv:
        nc = await nats.connect(srv.client_url, name="cmp")
        await nc.subscribe("foo.>")
        await nc.subscribe("bar", queue="q")
        await nc.publish("foo.x", b"x")
        await nc.flush()
        await asyncio.sleep(0.05)
        ours = json.loads((await http(srv.monitor.port, "/connz?subs=detail"))[2])
        await nc.close()
    assert list(ours) == list(real)
    mine, theirs = ours["connections"][0], real["connections"][0]
    assert set(mine) <= set(theirs), set(mine) - set(theirs)
    assert list(mine) == [k for k in theirs if k in mine]  # same field order
    for key in mine:
        assert type(mine[key]) is type(theirs[key]), key
    for key in ("kind", "type", "ip", "in_msgs", "in_bytes", "out_msgs", "out_bytes",
                "subscriptions", "name", "lang", "version", "subscriptions_list_detail"):
        if key == "subscriptions_list_detail":
            # nats-server lists them in Go map order (random); minijs by sid
            def strip(subs: list[dict]) -> list[dict]:
                return sorted(({k: v for k, v in d.items() if k != "cid"} for d in subs),
                              key=lambda d: d["sid"])
            assert strip(mine[key]) == strip(theirs[key])
        else:
            assert mine[key] == theirs[key], key


# ----------------------------------------------------------------------------- subsz, jsz


def test_sublist_counters_are_the_sublists_own():
    from minijs.core.sublist import Sublist, Subscription

    sl = Sublist()
    a, b = Subscription(b"a.*", b"1"), Subscription(b"a.b", b"2")
    q = Subscription(b"a.b", b"3", b"g")
    for sub in (a, b, q):
        sl.insert(sub)
    assert sl.stats()["num_matches"] == 0 and sl.stats()["cache_hit_rate"] == 0
    sl.match(b"a.b")  # miss, cached: a.*, a.b plain + one queue group = fan-out 3
    sl.match(b"a.b")  # hit
    sl.match(b"a.c")  # miss: fan-out 1
    sl.remove(b)
    stats = sl.stats()
    assert stats == {"num_subscriptions": 2, "num_cache": 1, "num_inserts": 3, "num_removes": 1,
                     "num_matches": 3, "cache_hit_rate": 1 / 3, "max_fanout": 1,
                     "avg_fanout": 1.0}


async def test_subsz_and_accountz(server: Server):
    nc = await nats.connect(server.client_url)
    await nc.subscribe("foo.*", queue="q")
    await nc.subscribe("bar")
    await nc.publish("foo.x", b"x")
    await nc.flush()
    s = json.loads((await http(server.monitor.port, "/subsz"))[2])
    assert s["num_subscriptions"] == server.sublist.count >= 2
    assert s["num_inserts"] >= 2 and s["num_matches"] >= 1
    assert isinstance(s["avg_fanout"], (int, float)) and "subscriptions_list" not in s
    raw = (await http(server.monitor.port, "/subsz?subs=1&test=foo.x"))[2]
    s = json.loads(raw)
    assert s["total"] == 1 and s["subscriptions_list"][0]["qgroup"] == "q"
    assert s["subscriptions_list"][0]["msgs"] == 1
    status, headers, body = await http(server.monitor.port, "/subsz?test=foo.>")
    assert (status, body) == (400, b"invalid test subject, must be valid publish subject: foo.>")
    a = json.loads((await http(server.monitor.port, "/accountz"))[2])
    assert a["accounts"] == ["$SYS", "$G"]
    a = json.loads((await http(server.monitor.port, "/accountz?acc=%24G"))[2])
    detail = a["account_detail"]
    assert detail["client_connections"] == 1 and "imports" not in detail  # no JetStream
    assert (await http(server.monitor.port, "/accountz?acc=X"))[0] == 400
    await nc.close()


async def test_jsz_with_and_without_jetstream(tmp_path):
    async with Server(port=0, http_port=RANDOM_PORT) as plain:
        j = json.loads((await http(plain.monitor.port, "/jsz"))[2])
        assert j["disabled"] is True and j["total"] == 0
    async with Server(port=0, http_port=RANDOM_PORT, jetstream=True,
                      store_dir=str(tmp_path)) as srv:
        nc = await nats.connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="B", subjects=["b"])
        await js.add_stream(name="A", subjects=["a"], storage="memory")
        await js.publish("a", b"12345")
        await js.add_consumer("A", durable_name="D")
        j = json.loads((await http(srv.monitor.port, "/jsz?consumers=1"))[2])
        assert (j["streams"], j["consumers"], j["messages"]) == (2, 1, 1)
        assert j["memory"] > 0 and j["storage"] == 0
        a, b = j["account_details"][0]["stream_detail"]
        assert (a["name"], b["name"]) == ("A", "B") and "config" not in a
        assert a["consumer_detail"][0]["name"] == "D" and "config" not in a["consumer_detail"][0]
        status, _, body = await http(srv.monitor.port, "/jsz?limit=x")
        assert status == 400 and body.startswith(b"Error decoding int for 'limit'")
        await nc.close()
