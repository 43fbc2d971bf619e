"""scripts/bench_floor.py: the floor server carries the load generator's core traffic, whatever
the read boundaries (no timing is asserted)."""
from __future__ import annotations

import importlib.util
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
