#!/usr/bin/env python3
"""What a login costs, minijs beside nats-server in one run: user/password, nkey and JWT.

Each target is spawned (``-a 127.0.0.1 -p -1 -c server.conf``) once per scheme; a client then
opens ``--count`` connections one after another, each reading INFO, sending CONNECT (with the
nonce signed for nkeys and JWTs) and PING, and waiting for PONG before closing. The table shows
the median login time (connect to PONG) and the server's CPU time per login (utime + stime
from ``/proc/<pid>/stat``), medians of ``--rounds`` rounds that alternate the targets.

    python scripts/bench_auth_handshake.py [--count 300] [--rounds 3]
                                           [--targets minijs,nats-server]
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench import find_nats_server, proc_cpu_seconds, spawn  # noqa: E402

from conformance.natskeys import Keys, account_jwt, operator_jwt, user_jwt  # noqa: E402

SCHEMES = ("password", "nkey", "jwt")


def setup(scheme: str) -> tuple[str, callable]:
    """The config text of ``scheme`` and a function making CONNECT fields from a nonce."""
    if scheme == "password":
        return ("authorization { users = [ {user: u, password: p} ] }\n",
                lambda nonce: {"user": "u", "pass": "p"})
    user = Keys("user")
    if scheme == "nkey":
        return (f"authorization {{ users = [ {{nkey: {user.public}}} ] }}\n",
                lambda nonce: {"nkey": user.public, "sig": user.sign_nonce(nonce)})
    op, sys_acc, acc = Keys("operator"), Keys("account"), Keys("account")
    token = user_jwt(user, acc)
    text = (f"operator: {operator_jwt(op, system_account=sys_acc.public)}\n"
            f"system_account: {sys_acc.public}\nresolver: MEMORY\nresolver_preload: {{\n"
            f"  {sys_acc.public}: {account_jwt(sys_acc, op)}\n"
            f"  {acc.public}: {account_jwt(acc, op)}\n}}\n")
    return text, lambda nonce: {"jwt": token, "sig": user.sign_nonce(nonce)}


def login(port: int, fields_for) -> float:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        buf = b""
        while not buf.endswith(b"\r\n"):
            buf += sock.recv(4096)
        nonce = json.loads(buf[5:]).get("nonce", "")
        fields = {"verbose": False, "protocol": 1, **fields_for(nonce)}
        sock.sendall(b"CONNECT " + json.dumps(fields).encode() + b"\r\nPING\r\n")
        got = b""
        while b"PONG\r\n" not in got:
            chunk = sock.recv(4096)
            if not chunk:
                raise RuntimeError(f"closed during login: {got!r}")
            got += chunk
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--targets", default="minijs,nats-server")
    args = p.parse_args(argv)
    commands = {"minijs": [sys.executable, "-m", "minijs"]}
    nats_server = find_nats_server()
    if nats_server:
        commands["nats-server"] = [nats_server]
    targets = [t for t in args.targets.split(",") if t in commands]
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for scheme in SCHEMES:
        text, fields_for = setup(scheme)
        for _ in range(args.rounds):
            for target in targets:
                server = spawn(target, commands[target], config_text=text, jetstream=False)
                try:
                    login(server.port, fields_for)  # warm-up
                    cpu0 = proc_cpu_seconds(server.pid)
                    times = [login(server.port, fields_for) for _ in range(args.count)]
                    cpu = (proc_cpu_seconds(server.pid) - cpu0) / args.count
                finally:
                    server.stop()
                results.setdefault((scheme, target), []).append(
                    (statistics.median(times), cpu))
    print(f"| login ({args.count} sequential, median of {args.rounds}) | "
          + " | ".join(f"{t} ms | {t} CPU us" for t in targets) + " | minijs / nats-server |")
    print("|---|" + "---|" * (2 * len(targets) + 1))
    for scheme in SCHEMES:
        cells, medians = [], {}
        for target in targets:
            rows = results[(scheme, target)]
            ms = statistics.median(r[0] for r in rows) * 1e3
            cpu = statistics.median(r[1] for r in rows) * 1e6
            medians[target] = ms
            cells += [f"{ms:.3f}", f"{cpu:.0f}"]
        ratio = (f"{medians['minijs'] / medians['nats-server']:.2f}x"
                 if {"minijs", "nats-server"} <= set(medians) else "")
        print(f"| {scheme} | " + " | ".join(cells) + f" | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
