#!/usr/bin/env python3
"""Core NATS across routes, minijs beside nats-server in one run: two server processes of each
target joined by routes (``--cluster ... --routes ...``, as the conformance suite starts them).

Figures, medians of ``--rounds`` rounds that alternate the targets:

* **mesh**: seconds from the second node's "Server is ready" until both nodes' INFO lists both
  (routes formed, pools complete, connect_urls gossiped);
* **pub→sub msgs/s**: a publisher on node 1 sends ``--count`` messages of ``--size`` bytes as
  fast as it can; a subscriber on node 2 receives them all (the rate is count / time to the
  last one);
* **CPU µs/msg**: the two server processes' CPU time (utime + stime) for those messages;
* **req/rep µs**: median round trip of ``--requests`` requests from node 1 to a responder on
  node 2, one at a time.

    python scripts/bench_routes.py [--count 100000] [--size 128] [--requests 500]
                                   [--rounds 3] [--targets minijs,nats-server]
"""
from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench import proc_cpu_seconds  # noqa: E402

from conformance.cluster import ProcessCluster, read_info  # noqa: E402


class Client:
    """A raw blocking client: CONNECT, then bytes in and out."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.line()  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\n')
        self.ping()

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self.recv()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def recv(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed")
        self.buf += data

    def ping(self) -> None:
        self.sock.sendall(b"PING\r\n")
        while True:
            line = self.line()
            if line == b"PONG":
                return
            if line.startswith(b"MSG "):
                self.take(int(line.rsplit(b" ", 1)[1]) + 2)

    def take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.recv()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def close(self) -> None:
        self.sock.close()


def until_crossed(sub: Client, pub: Client, subject: bytes) -> None:
    """Publish a marker on ``pub`` until ``sub`` (subscribed last) receives it."""
    sub.sock.sendall(b"SUB " + subject + b" 9\r\n")
    sub.ping()
    sub.sock.settimeout(0.05)
    try:
        while True:
            pub.sock.sendall(b"PUB " + subject + b" 0\r\n\r\n")
            try:
                if sub.line().startswith(b"MSG"):
                    sub.take(2)
                    break
            except socket.timeout:
                continue
    finally:
        sub.sock.settimeout(None)
    sub.sock.sendall(b"UNSUB 9\r\n")
    sub.ping()  # later markers arrive before the PONG... or are dropped by the UNSUB
    pub.ping()


def one_round(target: str, count: int, size: int, requests: int) -> dict[str, float]:
    start = time.monotonic()
    cluster = ProcessCluster(target, size=2, wait_routes=False)
    ready = time.monotonic()
    try:
        n1, n2 = cluster.nodes
        while True:
            infos = [read_info(n.host, n.port) for n in (n1, n2)]
            if all(len(i.get("connect_urls") or []) == 2 for i in infos):
                break
            time.sleep(0.002)
        mesh = time.monotonic() - ready
        pub, sub = Client(n1.port), Client(n2.port)
        sub.sock.sendall(b"SUB bench.x 1\r\n")
        until_crossed(sub, pub, b"bench.marker")
        pids = [cluster.process(n.name).proc.pid for n in (n1, n2)]
        cpu0 = sum(proc_cpu_seconds(p) for p in pids)
        payload = b"x" * size
        frame = b"PUB bench.x %d\r\n%b\r\n" % (size, payload)
        batch = frame * 100
        t0 = time.perf_counter()
        for _ in range(count // 100):
            pub.sock.sendall(batch)
        got = 0
        want = (count // 100) * 100
        per = len(b"MSG bench.x 1 %d\r\n" % size) + size + 2
        while got < want:
            sub.recv()
            n = len(sub.buf) // per
            got += n
            sub.buf = sub.buf[n * per:]
        elapsed = time.perf_counter() - t0
        cpu = sum(proc_cpu_seconds(p) for p in pids) - cpu0
        # request/reply: responder on node 2
        resp = Client(n2.port)
        resp.sock.sendall(b"SUB bench.req 1\r\n")
        until_crossed(resp, pub, b"bench.marker2")
        pub.sock.sendall(b"SUB _R.bench 1\r\n")
        until_crossed(pub, resp, b"bench.marker3")
        rtts = []
        for _ in range(requests):
            t = time.perf_counter()
            pub.sock.sendall(b"PUB bench.req _R.bench 1\r\nq\r\n")
            head = resp.line()
            reply = head.split()[3]
            resp.take(3)
            resp.sock.sendall(b"PUB " + reply + b" 1\r\na\r\n")
            pub.line()
            pub.take(3)
            rtts.append(time.perf_counter() - t)
        for c in (pub, sub, resp):
            c.close()
        return {"mesh": mesh, "rate": want / elapsed, "cpu_us": cpu / want * 1e6,
                "rtt_us": statistics.median(rtts) * 1e6, "start": ready - start}
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", default="minijs,nats-server")
    args = ap.parse_args(argv)
    targets = args.targets.split(",")
    results: dict[str, list[dict[str, float]]] = {t: [] for t in targets}
    for r in range(args.rounds):
        for t in (targets if r % 2 == 0 else list(reversed(targets))):
            results[t].append(one_round(t, args.count, args.size, args.requests))
    med = {t: {k: statistics.median(x[k] for x in rs) for k in rs[0]}
           for t, rs in results.items() if rs}
    print(f"2 nodes joined by routes, {args.count} x {args.size} B pub->sub across, "
          f"{args.requests} requests across; medians of {args.rounds} rounds\n")
    rows = [("mesh (s)", "mesh", "{:.3f}"), ("pub→sub msgs/s", "rate", "{:,.0f}"),
            ("server CPU µs/msg (both nodes)", "cpu_us", "{:.2f}"),
            ("req/rep round trip µs", "rtt_us", "{:.0f}"),
            ("2 processes started (s)", "start", "{:.2f}")]
    header = "| figure | " + " | ".join(targets) + (" | minijs/nats-server |"
                                                     if len(targets) == 2 else " |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, key, fmt in rows:
        cells = [fmt.format(med[t][key]) for t in targets]
        ratio = ""
        if len(targets) == 2 and med[targets[1]][key]:
            ratio = f" {med[targets[0]][key] / med[targets[1]][key]:.2f} |"
        print(f"| {label} | " + " | ".join(cells) + " |" + ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
