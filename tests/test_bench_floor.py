"""scripts/bench_floor.py: the floor server carries the load generator's core traffic, whatever
the read boundaries, and its js mode stores, acks and answers the JetStream API for the C client
and nats-py (no timing is asserted)."""
from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    path = ROOT / "scripts" / "bench_floor.py"
    spec = importlib.util.spec_from_file_location("bench_floor", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_floor", module)
    spec.loader.exec_module(module)
    return module


bf = _load()
import bench_native as bn  # noqa: E402  (bench_floor put scripts/ on the path)

needs_libnats = pytest.mark.skipif(
    not (bn.have_headers() and bn.compiler()),
    reason="libnats-dev or a C compiler is not installed (scripts/bench_native.py installs them "
           "as root, or run: " + bn.install_command() + ")")


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return False

    @property
    def data(self) -> bytes:
        return b"".join(self.written)


def connect(server):
    conn = bf.FloorConnection(server)
    transport = Transport()
    conn.connection_made(transport)
    assert transport.data.startswith(b"INFO {") and transport.data.endswith(b"}\r\n")
    transport.written.clear()
    return conn, transport


PUBLISHER = (b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n'
             b"PUB loadgen.bench 5\r\nhello\r\n"
             b"PUB other 3\r\nabc\r\n"
             b"PUB loadgen.bench 0\r\n\r\n"
             b"PUB loadgen.bench 11\r\nPUB x 1\r\nyz\r\n"
             b"PING\r\n")
DELIVERED = (b"MSG loadgen.bench 7 5\r\nhello\r\n"
             b"MSG loadgen.bench 7 0\r\n\r\n"
             b"MSG loadgen.bench 7 11\r\nPUB x 1\r\nyz\r\n")


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_pubsub_floor_delivers_whatever_the_reads(step):
    server = bf.FloorServer(routing=True)
    sub, sub_out = connect(server)
    sub.data_received(b"CONNECT {}\r\nSUB loadgen.bench 7\r\n")
    pub, pub_out = connect(server)
    for i in range(0, len(PUBLISHER), step):
        pub.data_received(PUBLISHER[i:i + step])
    assert sub_out.data == DELIVERED
    assert pub_out.data == b"PONG\r\nPONG\r\n"
    sub.connection_lost(None)
    pub.data_received(b"PUB loadgen.bench 1\r\nz\r\n")
    assert sub_out.data == DELIVERED


def test_pub_floor_routes_nothing():
    server = bf.FloorServer(routing=False)
    sub, sub_out = connect(server)
    sub.data_received(b"SUB loadgen.bench 7\r\n")
    pub, pub_out = connect(server)
    for i in range(len(PUBLISHER)):
        pub.data_received(PUBLISHER[i:i + 1])
    assert sub_out.data == b""
    assert pub_out.data == b"PONG\r\nPONG\r\n"


def test_arguments():
    args = bf.parse_args([])
    assert (args.count, args.rounds, args.serve) == (30000, 3, None)
    assert args.targets == ["minijs", "nats-server"]
    # what bench.spawn passes to a server
    args = bf.parse_args(["--serve", "pub", "-js", "-sd", "/tmp/x", "-a", "127.0.0.1", "-p", "-1"])
    assert (args.serve, args.addr, args.port) == ("pub", "127.0.0.1", -1)
    assert bf.parse_args(["--serve", "js"]).serve == "js"
    assert bf.parse_args(["--scenarios", "js-pub-async"]).scenarios == "js-pub-async"


def test_scenarios_are_bench_natives_and_each_has_a_floor_mode():
    keys = {sc.key: sc for sc in bn.build_scenarios()}
    assert set(bf.SCENARIOS) <= set(keys)
    assert {keys[k].mode for k in bf.SCENARIOS} == set(bf.SERVE_MODES)
    assert {"js-pub-async 128B memory", "js-pub-async 16B memory"} <= set(bf.SCENARIOS)


def test_unknown_scenario_is_refused(capsys):
    assert bf.main(["--scenarios", "nothing-like-this"]) == 2
    assert "none of pub 16B" in capsys.readouterr().err


# --------------------------------------------------------------------------- the js floor


def frames(data: bytes) -> list[tuple[bytes, bytes, object]]:
    """The MSG frames in ``data`` as (subject, sid, decoded JSON payload); PONGs as ("PONG",)."""
    out: list = []
    pos = 0
    while pos < len(data):
        nl = data.index(b"\r\n", pos)
        line = data[pos:nl]
        if line == b"PONG":
            out.append(("PONG",))
            pos = nl + 2
            continue
        op, subject, sid, size = line.split(b" ")
        assert op == b"MSG"
        payload = data[nl + 2:nl + 2 + int(size)]
        assert data[nl + 2 + int(size):nl + 4 + int(size)] == b"\r\n"
        out.append((subject, sid, json.loads(payload)))
        pos = nl + 4 + int(size)
    return out


def pub(subject: str, payload: bytes, reply: str = "") -> bytes:
    head = f"PUB {subject} {reply} {len(payload)}" if reply else f"PUB {subject} {len(payload)}"
    return head.encode() + b"\r\n" + payload + b"\r\n"


CONFIG = {"name": "S", "subjects": ["s.*", "deep.>"], "storage": "memory"}
JS_CLIENT = b"".join([
    b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB _INBOX.abc.* 1\r\n',
    pub("$JS.API.STREAM.DELETE.S", b"", "_INBOX.abc.0"),
    pub("$JS.API.STREAM.CREATE.S", json.dumps(CONFIG).encode(), "_INBOX.abc.1"),
    pub("s.one", b"hello", "_INBOX.abc.x1"),          # stored: seq 1, acked
    pub("other", b"abc", "_INBOX.abc.x2"),            # no stream covers it
    pub("s.one.two", b"z", "_INBOX.abc.x3"),          # * is one token
    pub("deep.a.b", b"", "acks.exact"),               # stored: seq 2, acked to the other client
    pub("deep", b"xyz", "_INBOX.abc.x4"),             # > needs a token
    pub("s.two", b"PUB x 1\r\nyz", ""),               # stored: seq 3, no reply, no ack
    pub("$JS.API.STREAM.INFO.S", b"", "_INBOX.abc.2"),
    pub("$JS.API.STREAM.INFO.T", b"", "_INBOX.abc.3"),
    pub("$JS.API.ACCOUNT.INFO", b"", "_INBOX.abc.4"),
    b"PING\r\n",
    pub("$JS.API.STREAM.DELETE.S", b"", "_INBOX.abc.5"),
    pub("s.one", b"gone", "_INBOX.abc.x5"),           # the stream is gone
    pub("$JS.API.STREAM.CREATE.S2", b'{"name":"S2","subjects":["t.>"]}', "_INBOX.abc.6"),
    pub("s.one", b"old", "_INBOX.abc.x6"),            # S2 does not cover it
    pub("t.x", b"new", "_INBOX.abc.x7"),              # stored in S2: seq 1
    pub("$JS.API.STREAM.CREATE.S3", b"{nope", "_INBOX.abc.7"),
    b"PING\r\n",
])
NOT_FOUND = {"error": {"code": 404, "err_code": 10059, "description": "stream not found"}}


def empty_state(messages: int = 0, size: int = 0) -> dict:
    return {"messages": messages, "bytes": size, "first_seq": 1 if messages else 0,
            "last_seq": messages, "consumer_count": 0}


@pytest.mark.parametrize("step", [1, 2, 3, 7, len(JS_CLIENT)])
def test_js_floor_stores_acks_and_answers_the_api_whatever_the_reads(step):
    server = bf.FloorServer(routing=False, jetstream=True)
    client, client_out = js_connect(server)
    other, other_out = js_connect(server)
    other.data_received(b"SUB acks.exact 9\r\n")
    reads = 0
    for i in range(0, len(JS_CLIENT), step):
        client.data_received(JS_CLIENT[i:i + step])
        reads += 1
    got = frames(client_out.data)
    assert got[:6] == [
        (b"_INBOX.abc.0", b"1", NOT_FOUND),
        (b"_INBOX.abc.1", b"1", {"config": CONFIG, "state": empty_state()}),
        (b"_INBOX.abc.x1", b"1", {"stream": "S", "seq": 1}),
        (b"_INBOX.abc.2", b"1", {"config": CONFIG, "state": empty_state(3, 5 + 11)}),
        (b"_INBOX.abc.3", b"1", NOT_FOUND),
        (b"_INBOX.abc.4", b"1", {"error": {
            "code": 400, "err_code": 10000,
            "description": "the floor server does not answer $JS.API.ACCOUNT.INFO"}}),
    ]
    assert got[6:10] == [
        ("PONG",),
        (b"_INBOX.abc.5", b"1", {"success": True}),
        (b"_INBOX.abc.6", b"1", {"config": {"name": "S2", "subjects": ["t.>"]},
                                 "state": empty_state()}),
        (b"_INBOX.abc.x7", b"1", {"stream": "S2", "seq": 1}),
    ]
    assert got[10][:2] == (b"_INBOX.abc.7", b"1")
    assert got[10][2]["error"]["err_code"] == 10025  # invalid JSON, as nats-server says
    assert got[10][2]["error"]["description"].startswith("invalid JSON: ")
    assert got[11:] == [("PONG",)]
    assert frames(other_out.data) == [(b"acks.exact", b"9", {"stream": "S", "seq": 2})]
    assert server.stream.name == "S2" and server.stream.messages == [(b"t.x", b"new")]
    # one write per connection per read at most
    assert len(client_out.written) <= reads
    if step == len(JS_CLIENT):
        assert len(client_out.written) == 1
    # a closed connection's subscriptions are gone
    other.connection_lost(None)
    client.data_received(pub("t.y", b"", "acks.exact"))
    assert frames(other_out.data) == [(b"acks.exact", b"9", {"stream": "S", "seq": 2})]
    assert len(server.stream.messages) == 2


def js_connect(server):
    conn = bf.JetStreamFloorConnection(server)
    transport = Transport()
    conn.connection_made(transport)
    info = json.loads(transport.data[5:])
    assert info["jetstream"] is True and info["headers"] is True
    transport.written.clear()
    return conn, transport


def test_ack_goes_to_exact_and_last_token_wildcard_subscribers_alike():
    server = bf.FloorServer(routing=False, jetstream=True)
    client, out = js_connect(server)
    client.data_received(b"SUB r.* 1\r\nSUB r.x 2\r\nSUB * 3\r\nSUB r.> 4\r\nSUB q.x 5\r\n"
                         + pub("$JS.API.STREAM.CREATE.A", b'{"subjects":[">"]}', "r.c")
                         + pub("a", b"1", "r.x") + pub("b", b"2", "top")
                         + pub("c", b"3", "r.x.y")  # r.> is no last-token *: no ack
                         + pub("$JS.API.STREAM.INFO.A", b"", "r.i"))
    assert frames(out.data) == [
        (b"r.c", b"1", {"config": {"subjects": [">"]}, "state": empty_state()}),
        (b"r.x", b"2", {"stream": "A", "seq": 1}),  # exact first, then r.*
        (b"r.x", b"1", {"stream": "A", "seq": 1}),
        (b"top", b"3", {"stream": "A", "seq": 2}),  # * covers a one-token reply
        (b"r.i", b"1", {"config": {"subjects": [">"]}, "state": empty_state(3, 3)}),
    ]
    # ">" covers every subject but the API's: the info request was answered, not stored
    assert [subject for subject, _ in server.stream.messages] == [b"a", b"b", b"c"]


@pytest.mark.parametrize("pattern, subject, matches", [
    ("loadgen.>", "loadgen.bench", True), ("loadgen.>", "loadgen", False),
    ("loadgen.>", "loadgen.a.b", True), ("a.*", "a.b", True), ("a.*", "a.b.c", False),
    ("a.*.c", "a.b.c", True), ("a.*.c", "a.b.d", False), ("*", "a", True), ("*", "a.b", False),
    (">", "a", True), ("a.b", "a.b", True), ("a.b", "a.bb", False), ("a", "a.b", False),
])
def test_stream_subjects_match_like_nats(pattern, subject, matches):
    assert bf.subject_matches(pattern.split("."), subject.split(".")) is matches


@pytest.fixture
def js_floor():
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "bench_floor.py"), "--serve",
                             "js", "-a", "127.0.0.1", "-p", "-1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "Listening for client connections on 127.0.0.1:" in line, line
        yield f"nats://127.0.0.1:{line.rsplit(':', 1)[1].strip()}"
    finally:
        proc.kill()
        proc.wait(10)


async def test_js_floor_serves_nats_py(js_floor):
    import nats
    from nats.js.errors import NotFoundError

    nc = await nats.connect(js_floor)
    try:
        js = nc.jetstream()
        info = await js.add_stream(name="FLOOR", subjects=["floor.*"])
        assert info.config.subjects == ["floor.*"] and info.state.messages == 0
        acks = await asyncio.gather(*(js.publish(f"floor.{i}", b"x" * i) for i in range(20)))
        assert sorted(a.seq for a in acks) == list(range(1, 21))
        assert {a.stream for a in acks} == {"FLOOR"}
        await nc.publish("elsewhere", b"not stored")
        state = (await js.stream_info("FLOOR")).state
        assert (state.messages, state.bytes, state.first_seq, state.last_seq) == (
            20, sum(range(20)), 1, 20)
        assert await js.delete_stream("FLOOR") is True
        with pytest.raises(NotFoundError):
            await js.stream_info("FLOOR")
    finally:
        await nc.close()


@needs_libnats
def test_bench_floor_runs_the_js_rows(tmp_path, capsys):
    rc = bf.main(["--count", "400", "--rounds", "1", "--targets", "nats-server", "--scenarios",
                  "js-pub-async", "--no-install", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr()
    doc = json.loads((tmp_path / "floor.json").read_text())
    keys = [row["key"] for row in doc["scenarios"]]
    assert keys == ["js-pub-async 128B memory", "js-pub-async 16B memory"]
    for row in doc["scenarios"]:
        floor = row["results"]["floor"]
        assert floor["error"] is None and floor["ops"] == 400 and floor["server_cpu_us"] > 0
        if bn.find_nats_server():
            assert row["results"]["nats-server"]["error"] is None
    table = (tmp_path / "floor.md").read_text()
    assert "| js-pub-async 16B memory " in table and "floor msg/s" in table


@needs_libnats
def test_c_client_publishes_from_several_connections_into_the_js_floor(js_floor):
    exe = bn.build_loadgen(allow_install=False)
    proc = subprocess.run([str(exe), "-s", js_floor, "-m", "js-pub-async", "-n", "600", "-z", "16",
                           "-p", "3", "-w", "64"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["errors"], doc["ops"], doc["stored"], doc["latencies"]) == (0, 600, 600, 600)
