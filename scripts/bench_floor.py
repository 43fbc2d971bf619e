#!/usr/bin/env python3
"""The floor: server CPU per core message and per acked JetStream publish that any pure-Python
asyncio server has to spend.

minijs is compared with nats-server (``scripts/bench_native.py``); this script adds a third
server, the cheapest pure-Python asyncio server that still carries the native load generator's
core and JetStream async-publish workloads, to show how much of the gap is the language and its
event loop rather than minijs. It does only what the load generator needs:

* it sends an INFO line to each connection, ignores CONNECT, answers PING with PONG (the
  clients' flushes), and ignores everything else it does not route;
* ``--serve pub``: each PUB control line is split at spaces for its size and the payload is
  skipped; nothing is routed, validated or counted;
* ``--serve pubsub``: the same, and each message goes to the connections subscribed to exactly
  its subject, framed as ``MSG`` from the subscription's ``MSG <subject> <sid> `` (built once)
  and the tail of the PUB line (size, payload, CRLF) as it arrived; each connection's output is
  written once per read with one ``b"".join``;
* ``--serve js``: the least an acked JetStream publish needs. One stream at a time, in
  memory: its name, the config it was created with and its subjects, and a list of the
  ``(subject, payload)`` it stored, a message's sequence being its position in the list (the
  first is 1). A PUB whose subject the stream's subjects cover (nats wildcards: ``*`` one
  token, ``>`` one or more at the end; never a ``$JS.API.`` subject; the answer is cached per
  subject until the stream changes) is appended, and when it has a reply it is answered with
  the pub ack ``{"stream":"<name>","seq":<n>}``, delivered as ``MSG`` to the connections
  subscribed to the reply: exactly, or with a subscription whose last token is ``*`` (looked up
  as the reply up to its last dot followed by ``*``); no other wildcard subscription is
  matched, which is enough for the clients' reply inboxes (``_INBOX.<id>.*``). Requests on
  ``$JS.API.`` with a reply get the smallest JSON that both the C client and nats-py accept,
  built from the request: ``STREAM.CREATE.<name>`` replaces the stream with a new empty one and
  answers ``{"config":<the config sent>,"state":<state>}`` (invalid JSON gets nats-server's
  error 10025); ``STREAM.INFO.<name>`` answers the same with the stored count (``messages``,
  ``bytes`` of payload, ``first_seq``, ``last_seq``, ``consumer_count`` 0);
  ``STREAM.DELETE.<name>`` drops the stream and answers ``{"success":true}``; a name other than
  the stream's gets nats-server's stream-not-found error (10059), and any other API subject an
  error naming it (where nats-server would not answer). Those three are all the load
  generator's js-pub-async sends (the C client's delete, create, info for the stored count at
  the end, and delete when done). Any other PUB is dropped. The acks and API answers for a
  connection are written once per read, as in the other modes.

No protocol errors, no wildcards beyond those above, queue groups, permissions,
verbose/pedantic, headers (HPUB) or slow-consumer checks; in js mode no validation of the
config, no limits, no dedup, no consumers, no persistence: anything more a server does costs
more than this. The scenarios, the load generator and the CPU measurement
(``/proc/<pid>/task/*/schedstat``, read just before and after the measured section) are
bench_native's own, run against all three servers in turn::

    python scripts/bench_floor.py [--count 30000] [--rounds 3] [--targets minijs,nats-server]
                                  [--scenarios pub,js-pub-async] [--out scripts/output/bench_floor]

Output: a table of server CPU us per message (per acked publish for the JetStream rows) and
msgs/s on stdout, and ``floor.md`` and ``floor.json`` under ``--out`` (gitignored).
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
             "pubsub 128B 1x4", "js-pub-async 16B memory", "js-pub-async 128B memory")
FLOOR = "floor"
#: The floor's ``--serve`` mode for each load generator mode it carries.
SERVE_MODES = {"pub": "pub", "pubsub": "pubsub", "js-pub-async": "js"}
#: The API prefix the js floor answers on.
JS_API = b"$JS.API."


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
        if self.server.jetstream:
            info["jetstream"] = True
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
            self._control(buf[pos:nl], dirty, whole_frame=True)
            pos = nl + 2
        return pos

    def _control(self, line: bytes, dirty: list["FloorConnection"], whole_frame: bool) -> None:
        """A control line other than PUB: PING is answered, SUB recorded with the frame its
        deliveries start with (``MSG <subject> <sid> `` when ``whole_frame``, else
        `` <sid> `` to follow a reply subject); CONNECT, PONG, UNSUB and anything else do
        nothing."""
        op = line[:4].upper()
        if op == b"PING":
            if not self.out:
                dirty.append(self)
            self.out.append(b"PONG\r\n")
        elif op == b"SUB ":
            args = line.split()
            sid = b" " + args[-1] + b" "
            prefix = b"MSG " + args[1] + sid if whole_frame else sid
            self.server.subs.setdefault(args[1], []).append((self, prefix))
            self.sids.append((args[1], prefix))


class FloorServer:
    """What the floor's connections share: the subscriptions by subject and, in js mode, the
    stream.

    ``subs`` maps a subscription's subject to its ``(connection, frame)`` pairs, ``frame``
    being ``MSG <subject> <sid> `` in pubsub mode and `` <sid> `` in js mode (where the MSG
    subject is the reply it delivers). In js mode ``covered`` caches, per published subject,
    whether ``stream`` covers it, and is cleared whenever ``stream`` changes.
    """

    def __init__(self, routing: bool, jetstream: bool = False) -> None:
        self.routing = routing
        self.jetstream = jetstream
        self.subs: dict[bytes, list[tuple[FloorConnection, bytes]]] = {}
        self.next_cid = 0
        self.port = 0
        self.stream: FloorStream | None = None
        self.covered: dict[bytes, bool] = {}

    def set_stream(self, stream: "FloorStream | None") -> None:
        self.stream = stream
        self.covered = {}

    def covers(self, subject: bytes) -> bool:
        """Whether the stream stores ``subject`` (never an API request) and remember it; at
        most 10,000 subjects are remembered, the cache starting over past that."""
        stored = (self.stream is not None and not subject.startswith(JS_API)
                  and self.stream.covers(subject.decode()))
        if len(self.covered) >= 10_000:
            self.covered = {}
        self.covered[subject] = stored
        return stored


def subject_matches(pattern: list[str], tokens: list[str]) -> bool:
    """Whether the subject ``tokens`` match the subscription or stream subject ``pattern``
    (both split at dots): ``*`` matches one token, a final ``>`` one or more."""
    for i, want in enumerate(pattern):
        if want == ">":
            return len(tokens) > i
        if i >= len(tokens) or (want != "*" and want != tokens[i]):
            return False
    return len(tokens) == len(pattern)


class FloorStream:
    """The js floor's one stream: its name, the config it was created with, the subjects it
    covers, and what it stored, as ``(subject, payload)`` in order (a message's sequence is
    its position, the first being 1; nothing is ever removed)."""

    def __init__(self, name: str, config: dict) -> None:
        self.name = name
        self.config = config
        subjects = config.get("subjects") or [name]
        self.patterns = [subject.split(".") for subject in subjects]
        self.messages: list[tuple[bytes, bytes]] = []
        #: The pub ack up to its sequence: ``{"stream":"<name>","seq":``.
        self.ack_head = b'{"stream":' + json.dumps(name).encode() + b',"seq":'

    def covers(self, subject: str) -> bool:
        tokens = subject.split(".")
        return any(subject_matches(pattern, tokens) for pattern in self.patterns)

    def info(self) -> dict:
        """The smallest stream info both the C client and nats-py accept."""
        n = len(self.messages)
        state = {"messages": n, "bytes": sum(len(payload) for _, payload in self.messages),
                 "first_seq": 1 if n else 0, "last_seq": n, "consumer_count": 0}
        return {"config": self.config, "state": state}


def stream_not_found() -> dict:
    """nats-server's answer for a stream that does not exist (JSStreamNotFoundErr)."""
    return {"error": {"code": 404, "err_code": 10059, "description": "stream not found"}}


class JetStreamFloorConnection(FloorConnection):
    """One client of the js floor (``--serve js``; see the module docstring)."""

    def _parse(self, buf: bytes, pos: int, dirty: list[FloorConnection]) -> int:
        end = len(buf)
        find = buf.find
        server = self.server
        covered = server.covered
        subs = server.subs
        while pos < end:
            nl = find(b"\r\n", pos)
            if nl < 0:
                break
            if buf[pos] == 80 and buf[pos + 1] == 85:  # "PU": PUB <subject> [reply] <size>
                args = buf[pos + 4:nl].split(b" ")
                start = nl + 2
                stop = start + int(args[-1])
                if stop + 2 > end:
                    break  # the payload completes in a later read
                pos = stop + 2
                subject = args[0]
                stored = covered.get(subject)
                if stored is None:
                    stored = server.covers(subject)
                    covered = server.covered
                if stored:
                    stream = server.stream
                    messages = stream.messages  # type: ignore[union-attr]
                    messages.append((subject, buf[start:stop]))
                    if len(args) == 3:
                        reply = args[1]
                        exact = subs.get(reply)
                        wild = subs.get(reply[:reply.rfind(b".") + 1] + b"*")
                        if exact or wild:
                            ack = stream.ack_head + b"%d}" % len(messages)  # type: ignore
                            for targets in (exact, wild):
                                for conn, sid in targets or ():
                                    if not conn.out:
                                        dirty.append(conn)
                                    conn.out.append(b"MSG %s%s%d\r\n%s\r\n"
                                                    % (reply, sid, len(ack), ack))
                elif len(args) == 3 and subject.startswith(JS_API):
                    self._api(subject, args[1], buf[start:stop], dirty)
                    covered = server.covered  # a new cache if the stream changed
                continue
            self._control(buf[pos:nl], dirty, whole_frame=False)
            pos = nl + 2
        return pos

    def _api(self, subject: bytes, reply: bytes, payload: bytes,
             dirty: list[FloorConnection]) -> None:
        """Answer one ``$JS.API.`` request (see the module docstring) to ``reply``."""
        server = self.server
        stream = server.stream
        api, _, name = subject[len(JS_API):].decode().rpartition(".")
        answer: dict
        if api == "STREAM.CREATE":
            try:
                config = json.loads(payload) if payload else {"name": name}
                if not isinstance(config, dict):
                    raise ValueError("a stream config is a JSON object")
            except ValueError as e:
                config = None
                answer = {"error": {"code": 400, "err_code": 10025,
                                    "description": f"invalid JSON: {e}"}}
            if config is not None:
                stream = FloorStream(name, config)
                server.set_stream(stream)
                answer = stream.info()
        elif api in ("STREAM.INFO", "STREAM.DELETE"):
            if stream is None or stream.name != name:
                answer = stream_not_found()
            elif api == "STREAM.INFO":
                answer = stream.info()
            else:
                server.set_stream(None)
                answer = {"success": True}
        else:
            answer = {"error": {"code": 400, "err_code": 10000, "description":
                                f"the floor server does not answer {subject.decode()}"}}
        body = json.dumps(answer, separators=(",", ":")).encode()
        for targets in (server.subs.get(reply),
                        server.subs.get(reply[:reply.rfind(b".") + 1] + b"*")):
            for conn, sid in targets or ():
                if not conn.out:
                    dirty.append(conn)
                conn.out.append(b"MSG %s%s%d\r\n%s\r\n" % (reply, sid, len(body), body))


async def serve(mode: str, host: str, port: int) -> None:
    server = FloorServer(routing=mode == "pubsub", jetstream=mode == "js")
    connection = JetStreamFloorConnection if mode == "js" else FloorConnection
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: connection(server), host=host,
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
    p.add_argument("--serve", choices=("pub", "pubsub", "js"),
                   help="run the floor server itself (what the comparison spawns)")
    p.add_argument("-a", "--addr", default="127.0.0.1", help=argparse.SUPPRESS)
    p.add_argument("-p", "--port", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("-js", action="store_true", help=argparse.SUPPRESS)  # passed by bench.spawn
    p.add_argument("-sd", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=30000,
                   help="operations per scenario before its share (default 30000)")
    p.add_argument("--rounds", type=int, default=3, help="runs per scenario; medians shown")
    p.add_argument("--scenarios",
                   help="comma-separated words; only the scenarios whose key has one")
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
    """Server CPU us per operation of the three servers, their ratios, and each one's msgs/s."""
    import bench_native as bn

    header = ["scenario", "minijs us/op", "nats us/op", "floor us/op", "minijs/nats",
              "floor/nats", "minijs/floor", "minijs msg/s", "nats msg/s", "floor msg/s",
              "floor busy"]
    rows = []
    for key in keys:
        m, n, f = (results.get(t, {}).get(key) for t in ("minijs", "nats-server", FLOOR))

        def ok(r: object) -> bool:
            return r is not None and not r.error  # type: ignore[attr-defined]

        def cpu(r: object) -> float | None:
            return r.server_cpu_us if ok(r) else None  # type: ignore[attr-defined]

        def rate(r: object) -> str:
            return bn.fmt(r.msgs_per_s) if ok(r) else "-"  # type: ignore[attr-defined]

        cm, cn, cf = cpu(m), cpu(n), cpu(f)
        rows.append([key, bn.fmt(cm, 2), bn.fmt(cn, 2), bn.fmt(cf, 2), bn.ratio(cm, cn),
                     bn.ratio(cf, cn), bn.ratio(cm, cf), rate(m), rate(n), rate(f),
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

    scenarios = bn.select([sc for sc in bn.build_scenarios() if sc.key in SCENARIOS],
                          args.scenarios)
    if not scenarios:
        print(f"bench_floor: --scenarios {args.scenarios!r}: none of {', '.join(SCENARIOS)} "
              "matches", file=sys.stderr)
        return 2
    try:
        exe = bn.build_loadgen(allow_install=not args.no_install)
    except bn.BuildError as e:
        print(f"bench_floor: {e}", file=sys.stderr)
        return 2
    commands = bn.server_commands(args)
    results: dict[str, dict] = {}
    for mode in dict.fromkeys(sc.mode for sc in scenarios):
        floor = [sys.executable, str(Path(__file__).resolve()), "--serve", SERVE_MODES[mode]]
        group = [sc for sc in scenarios if sc.mode == mode]
        for target, per in bn.run_scenarios(exe, group, args, {**commands, FLOOR: floor}).items():
            results.setdefault(target, {}).update(per)
    keys = [sc.key for sc in scenarios]
    note = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; count {args.count}, "
            f"medians of {args.rounds} rounds; server CPU us per message (per acked publish "
            f"for js-pub-async)")
    text = f"# Server CPU per message: minijs, nats-server and the floor\n\n{note}\n\n"
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
