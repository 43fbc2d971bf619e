#!/usr/bin/env python3
"""TLS and websocket against plain TCP, minijs and nats-server side by side: publish throughput,
server CPU per message, and connection set-up time.

    python scripts/bench_tls.py [--count 200000] [--payload 128] [--handshakes 50]
                                [--rounds 3] [--targets minijs,nats-server] [--json PATH]

Each target is spawned once with a config holding a ``tls { }`` (``allow_non_tls``, so one
client port takes both plain and TLS clients) and a ``websocket { no_tls }`` listener;
certificates are made with ``trustme``. Per round and target (targets alternate):

* **publish**: one client pipelines ``--count`` ``PUB`` of ``--payload`` bytes (nobody
  subscribed) in 64 KiB writes, then ``PING`` and waits for the ``PONG``: messages per second
  and the server's CPU (``/proc``) per message, over plain TCP, TLS (1.3), and websocket
  (binary frames, one per write);
* **set-up**: ``--handshakes`` fresh connections, each timed from ``connect()`` until the
  ``PONG`` of ``CONNECT``+``PING`` (TLS: after the INFO and the handshake; websocket: the
  upgrade, the INFO frame, then the same); the median.

The table shows medians over the rounds, each target's TLS and websocket CPU per message as a
multiple of its own plain figure, and minijs / nats-server ratios. The client is Python, so
the throughput figures are partly client-bound; the CPU figures are the server's alone.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import socket
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench import find_nats_server, proc_cpu_seconds, spawn  # noqa: E402

TARGETS = ("minijs", "nats-server")
KINDS = ("plain", "tls", "websocket")
CHUNK = 65536
_WS_LISTEN = re.compile(r"Listening for websocket clients on ws://\S+:(\d+)")


class Pki:
    """A CA and a server certificate for 127.0.0.1, in a temporary directory."""

    def __init__(self) -> None:
        import trustme

        self.dir = tempfile.TemporaryDirectory(prefix="bench-tls-")
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        d = Path(self.dir.name)
        cert.cert_chain_pems[0].write_to_path(str(d / "cert.pem"))
        cert.private_key_pem.write_to_path(str(d / "key.pem"))
        ca.cert_pem.write_to_path(str(d / "ca.pem"))
        self.cert, self.key, self.ca = (str(d / n) for n in ("cert.pem", "key.pem", "ca.pem"))

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca)

    def config(self) -> str:
        return (f'tls {{ cert_file: "{self.cert}", key_file: "{self.key}" }}\n'
                "allow_non_tls: true\n"
                "websocket { host: 127.0.0.1, port: -1, no_tls: true }\n")


def _read_line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    return data


class WsStream:
    """A websocket connection's NATS byte stream (wsproto client framing)."""

    def __init__(self, sock: socket.socket, port: int) -> None:
        from wsproto.connection import Connection, ConnectionType

        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        head, _, rest = head.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.decode(errors="replace"))
        self.sock = sock
        self.ws = Connection(ConnectionType.CLIENT)
        self.buffer = b""
        if rest:
            self._feed(rest)

    def _feed(self, data: bytes) -> None:
        from wsproto.events import BytesMessage

        self.ws.receive_data(data)
        for event in self.ws.events():
            if isinstance(event, BytesMessage):
                self.buffer += bytes(event.data)

    def sendall(self, data: bytes) -> None:
        from wsproto.events import BytesMessage

        self.sock.sendall(self.ws.send(BytesMessage(data=data)))

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self._feed(data)
        out, self.buffer = self.buffer, b""
        return out


class PlainStream:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.buffer += data
        out, self.buffer = self.buffer, b""
        return out


def open_stream(kind: str, port: int, ws_port: int, pki: Pki) -> PlainStream | WsStream:
    """A connected client past CONNECT and its PONG."""
    if kind == "websocket":
        sock = socket.create_connection(("127.0.0.1", ws_port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream: PlainStream | WsStream = WsStream(sock, ws_port)
        stream.read_until(b"\r\n")  # INFO
    else:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _read_line(sock)  # INFO, in clear text
        if kind == "tls":
            sock = pki.client_context().wrap_socket(sock, server_hostname="127.0.0.1")
        stream = PlainStream(sock)
    stream.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
    stream.read_until(b"PONG\r\n")
    return stream


def publish(kind: str, server: object, ws_port: int, pki: Pki, count: int,
            payload: int) -> tuple[float, float]:
    """msgs/s and server CPU microseconds per message for one publisher."""
    one = b"PUB bench.tls %d\r\n" % payload + b"x" * payload + b"\r\n"
    per_chunk = max(CHUNK // len(one), 1)
    chunk = one * per_chunk
    chunks, rest = divmod(count, per_chunk)
    stream = open_stream(kind, server.port, ws_port, pki)  # type: ignore[attr-defined]
    pid = server.pid  # type: ignore[attr-defined]
    cpu0 = proc_cpu_seconds(pid)
    t0 = time.perf_counter()
    for _ in range(chunks):
        stream.sendall(chunk)
    stream.sendall(one * rest + b"PING\r\n")
    stream.read_until(b"PONG\r\n")
    elapsed = time.perf_counter() - t0
    cpu = proc_cpu_seconds(pid) - cpu0
    stream.sock.close()
    return count / elapsed, cpu / count * 1e6


def setup_time(kind: str, server: object, ws_port: int, pki: Pki, n: int) -> float:
    """Median milliseconds from connect() to the first PONG."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        stream = open_stream(kind, server.port, ws_port, pki)  # type: ignore[attr-defined]
        times.append((time.perf_counter() - t0) * 1000)
        stream.sock.close()
    return statistics.median(times)


def run(args: argparse.Namespace) -> dict:
    pki = Pki()
    commands = {"minijs": [sys.executable, "-m", "minijs"]}
    ns = find_nats_server()
    if ns:
        commands["nats-server"] = [ns]
    targets = [t for t in args.targets.split(",") if t in commands]
    servers = {}
    try:
        for t in targets:
            srv = spawn(t, commands[t], config_text=pki.config(), jetstream=False)
            ws = [int(m.group(1)) for line in srv.log if (m := _WS_LISTEN.search(line))]
            servers[t] = (srv, ws[0])
        results: dict = {t: {k: {"rate": [], "cpu": [], "setup": []} for k in KINDS}
                         for t in targets}
        for _ in range(args.rounds):
            for t in targets:
                srv, ws_port = servers[t]
                for kind in KINDS:
                    rate, cpu = publish(kind, srv, ws_port, pki, args.count, args.payload)
                    r = results[t][kind]
                    r["rate"].append(rate)
                    r["cpu"].append(cpu)
                    r["setup"].append(setup_time(kind, srv, ws_port, pki, args.handshakes))
    finally:
        for srv, _ in servers.values():
            srv.stop()
        pki.dir.cleanup()
    return {t: {k: {name: statistics.median(v) for name, v in figs.items()}
                for k, figs in kinds.items()} for t, kinds in results.items()}


def table(res: dict, args: argparse.Namespace) -> str:
    targets = list(res)
    lines = [f"publish {args.count} x {args.payload} B, one publisher, no subscriber; "
             f"set-up: median of {args.handshakes} connections; medians of {args.rounds} "
             "round(s)", ""]
    head = f"{'':<22}" + "".join(f"{t:>16}" for t in targets)
    if len(targets) == 2:
        head += f"{'minijs/nats':>14}"
    lines.append(head)

    def row(label: str, values: list[float], fmt: str, ratio: bool = True) -> None:
        line = f"{label:<22}" + "".join(f"{format(v, fmt):>16}" for v in values)
        if ratio and len(values) == 2 and values[1]:
            line += f"{values[0] / values[1]:>13.2f}x"
        lines.append(line)

    for kind in KINDS:
        row(f"{kind} msgs/s", [res[t][kind]["rate"] for t in targets], ",.0f")
    for kind in KINDS:
        row(f"{kind} CPU us/msg", [res[t][kind]["cpu"] for t in targets], ".2f")
    for kind in ("tls", "websocket"):
        row(f"{kind} CPU vs plain", [res[t][kind]["cpu"] / res[t]["plain"]["cpu"]
                                     for t in targets], ".2f", ratio=False)
    for kind in KINDS:
        row(f"{kind} set-up ms", [res[t][kind]["setup"] for t in targets], ".2f")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--payload", type=int, default=128)
    p.add_argument("--handshakes", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--json", metavar="PATH")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    res = run(args)
    print(table(res, args))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
