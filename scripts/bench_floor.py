#!/usr/bin/env python3
"""The floor: server CPU per core message that any pure-Python asyncio server has to spend.

minijs is compared with nats-server (``scripts/bench_native.py``); this script adds a third
server, the cheapest pure-Python asyncio server that still carries the native load generator's
core workloads, to show how much of the gap is the language and its event loop rather than
minijs. It does only what the load generator needs:

* it sends an INFO line to each connection, ignores CONNECT, answers PING with PONG (the
  clients' flushes), and ignores everything else it does not route;
* ``--serve pub``: each PUB control line is split at spaces for its size and the payload is
  skipped; nothing is routed, validated or counted;
* ``--serve pubsub``: the same, and each message goes to the connections subscribed to exactly
  its subject, framed as ``MSG`` from the subscription's ``MSG <subject> <sid> `` (built once)
  and the tail of the PUB line (size, payload, CRLF) as it arrived; each connection's output is
  written once per read with one ``b"".join``.

No protocol errors, no wildcards, queue groups, permissions, verbose/pedantic, headers or
slow-consumer checks: anything more a server does costs more than this. The scenarios, the
load generator and the CPU measurement (``/proc/<pid>/task/*/schedstat``, read just before and
after the measured section) are bench_native's own, run against all three servers in turn::

    python scripts/bench_floor.py [--count 30000] [--rounds 3] [--targets minijs,nats-server]
                                  [--out scripts/output/bench_floor]

Output: a table of server CPU us per message (and msgs/s) on stdout, and ``floor.md`` and
``floor.json`` under ``--out`` (gitignored).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEFAULT_OUT = HERE / "output" / "bench_floor"
#: The core scenarios of bench_native this script runs (its scenario keys).
SCENARIOS = ("pub 16B", "pub 128B", "pub 1KiB", "pubsub 16B", "pubsub 128B", "pubsub 1KiB",
             "pubsub 128B 1x4")
FLOOR = "floor"


# --------------------------------------------------------------------------- the floor server


class FloorConnection(asyncio.Protocol):
    """One client of the floor server (see the module docstring for what it does)."""

    def __init__(self, server: "FloorServer") -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.rest = b""  # an incomplete line or payload carried to the next read
        self.out: list[bytes] = []
        self.sids: list[tuple[bytes, bytes]] = []  # (subject, prefix) of this client's SUBs

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.next_cid += 1
        info = {"server_id": "FLOOR", "server_name": "floor", "version": "2.12.0", "proto": 1,
                "host": "127.0.0.1", "port": self.server.port, "headers": True,
                "max_payload": 1048576, "client_id": self.server.next_cid}
        transport.write(b"INFO " + json.dumps(info, separators=(",", ":")).encode() + b"\r\n")

    def connection_lost(self, exc: Exception | None) -> None:
        subs = self.server.subs
        for subject, prefix in self.sids:
            targets = subs.get(subject, [])
            if (self, prefix) in targets:
                targets.remove((self, prefix))

    def data_received(self, data: bytes) -> None:
        dirty: list[FloorConnection] = []
        pos = 0
        if self.rest:
            # Finish the message a read boundary cut, copying only as much of this read as it
            # needs (joining the whole read to the carried bytes would copy it all again).
            rest = self.rest
            line_end = rest.find(b"\n")
            if line_end < 0:
                line_end = data.find(b"\n")
                if line_end < 0:
                    self.rest = rest + data
                    return
                line_end += len(rest)
            head = rest + data[:line_end + 1 - len(rest)] if line_end >= len(rest) else rest
            need = line_end + 1
            if head[0] == 80 and head[1] == 85:  # "PU": its payload and CRLF too
                need += int(head[:line_end - 1].rsplit(b" ", 1)[1]) + 2
            if need > len(rest) + len(data):
                self.rest = rest + data
                return
            pos = need - len(rest)
            self.rest = b""
            self._parse(rest + data[:pos], 0, dirty)
        self.rest = data[self._parse(data, pos, dirty):]
        for conn in dirty:
            out = conn.out
            conn.out = []
            if conn.transport is not None and not conn.transport.is_closing():
                conn.transport.write(b"".join(out))

    def _parse(self, buf: bytes, pos: int, dirty: list["FloorConnection"]) -> int:
        """Act on the complete messages in ``buf`` from ``pos``; return where the first
        incomplete one starts (``len(buf)`` when none is)."""
        end = len(buf)
        find = buf.find
        routing = self.server.routing
        subs = self.server.subs
        while pos < end:
            nl = find(b"\r\n", pos)
            if nl < 0:
                break
            if buf[pos] == 80 and buf[pos + 1] == 85:  # "PU": PUB <subject> [reply] <size>
                args = buf[pos + 4:nl].split(b" ")
                stop = nl + 2 + int(args[-1])
                if stop + 2 > end:
                    break  # the payload completes in a later read
                if routing:
                    targets = subs.get(args[0])
                    if targets:
                        tail = buf[nl - len(args[-1]):stop + 2]  # "<size>\r\n<payload>\r\n"
                        for conn, prefix in targets:
                            if not conn.out:
                                dirty.append(conn)
                            conn.out.append(prefix)
                            conn.out.append(tail)
                pos = stop + 2
                continue
            line = buf[pos:nl]
            pos = nl + 2
            op = line[:4].upper()
            if op == b"PING":
                if not self.out:
                    dirty.append(self)
                self.out.append(b"PONG\r\n")
            elif op == b"SUB ":
                args = line.split()
                prefix = b"MSG " + args[1] + b" " + args[-1] + b" "
                subs.setdefault(args[1], []).append((self, prefix))
                self.sids.append((args[1], prefix))
            # CONNECT, PONG, UNSUB and anything else: nothing to do.
        return pos


class FloorServer:
    def __init__(self, routing: bool) -> None:
        self.routing = routing
        self.subs: dict[bytes, list[tuple[FloorConnection, bytes]]] = {}
        self.next_cid = 0
        self.port = 0


async def serve(mode: str, host: str, port: int) -> None:
    server = FloorServer(routing=mode == "pubsub")
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: FloorConnection(server), host=host,
                                        port=max(port, 0), reuse_address=True, backlog=1024)
    server.port = listener.sockets[0].getsockname()[1]
    # The lines bench.spawn waits for.
    print(f"[floor] Listening for client connections on {host}:{server.port}", file=sys.stderr)
    print("[floor] Server is ready", file=sys.stderr, flush=True)
    async with listener:
        await listener.serve_forever()


# --------------------------------------------------------------------------- the comparison


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--serve", choices=("pub", "pubsub"),
                   help="run the floor server itself (what the comparison spawns)")
    p.add_argument("-a", "--addr", default="127.0.0.1", help=argparse.SUPPRESS)
    p.add_argument("-p", "--port", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("-js", action="store_true", help=argparse.SUPPRESS)  # passed by bench.spawn
    p.add_argument("-sd", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=30000,
                   help="operations per scenario before its share (default 30000)")
    p.add_argument("--rounds", type=int, default=3, help="runs per scenario; medians shown")
    p.add_argument("--targets", default="minijs,nats-server",
                   type=lambda s: [t.strip() for t in s.split(",") if t.strip()],
                   help="servers beside the floor (default minijs,nats-server)")
    p.add_argument("--minijs-cmd", help="command that runs minijs (default: python -m minijs)")
    p.add_argument("--nats-server-cmd", help="command that runs nats-server")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--no-install", action="store_true",
                   help="never apt-get install the load generator's packages")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    args.window = 256
    args.loops = []
    return args


def cpu_table(keys: list[str], results: dict[str, dict]) -> str:
    import bench_native as bn

    header = ["scenario", "minijs us/op", "nats us/op", "floor us/op", "minijs/nats",
              "floor/nats", "minijs/floor", "floor msg/s", "floor busy"]
    rows = []
    for key in keys:
        m, n, f = (results.get(t, {}).get(key) for t in ("minijs", "nats-server", FLOOR))

        def cpu(r: object) -> float | None:
            return None if r is None or r.error else r.server_cpu_us  # type: ignore[attr-defined]

        cm, cn, cf = cpu(m), cpu(n), cpu(f)
        rows.append([key, bn.fmt(cm, 2), bn.fmt(cn, 2), bn.fmt(cf, 2), bn.ratio(cm, cn),
                     bn.ratio(cf, cn), bn.ratio(cm, cf),
                     bn.fmt(f.msgs_per_s) if cf is not None else "-",  # type: ignore[union-attr]
                     bn.busy(f)])
    return bn.markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        try:
            asyncio.run(serve(args.serve, args.addr, args.port))
        except KeyboardInterrupt:
            pass
        return 0
    import bench_native as bn

    try:
        exe = bn.build_loadgen(allow_install=not args.no_install)
    except bn.BuildError as e:
        print(f"bench_floor: {e}", file=sys.stderr)
        return 2
    commands = bn.server_commands(args)
    scenarios = [sc for sc in bn.build_scenarios() if sc.key in SCENARIOS]
    results: dict[str, dict] = {}
    for mode in ("pub", "pubsub"):
        floor = [sys.executable, str(Path(__file__).resolve()), "--serve", mode]
        group = [sc for sc in scenarios if sc.mode == mode]
        for target, per in bn.run_scenarios(exe, group, args, {**commands, FLOOR: floor}).items():
            results.setdefault(target, {}).update(per)
    keys = [sc.key for sc in scenarios]
    note = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; count {args.count}, "
            f"medians of {args.rounds} rounds; server CPU us per message")
    text = f"# Server CPU per core message: minijs, nats-server and the floor\n\n{note}\n\n"
    text += cpu_table(keys, results) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "floor.md").write_text(text)
    doc = {"count": args.count, "rounds": args.rounds,
           "scenarios": [{"key": k, "results": {t: asdict(r[k]) for t, r in results.items()
                                                if k in r}} for k in keys]}
    (args.out / "floor.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written: {args.out / 'floor.md'}")
    failed = any(r.error for per in results.values() for r in per.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
