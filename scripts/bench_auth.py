#!/usr/bin/env python3
"""What permissions and accounts cost on the publish hot path, minijs and nats-server side by side.

Issue 16 asks that core and JetStream publish throughput with 100 allow/deny rules per user and
three accounts be at most 10% below the same run without them. This script runs the native load
generator of ``scripts/bench_native.py`` (``scripts/loadgen/loadgen.c`` on libnats-dev; it
authenticates with ``nats://user:password@host:port``) against each server twice per scenario:

* **plain**: no authorization, no accounts;
* **permissions**: the benchmark user with ``--rules`` publish rules and as many subscribe rules
  (half ``allow``, half ``deny``; literal subjects and ``*`` / ``>`` wildcards, the benchmark's
  own subjects among the allowed ones) in a config with three accounts
  (``accounts { A { users } B { users } C { users } }``, the user in A; for the JetStream
  scenarios A has ``jetstream: enabled``, so the streams live in account A).

Per scenario and round the two configs of one target run back to back (fresh servers each), and
the rounds alternate, so that a busy machine's drift hits both alike; medians are shown. The
drop is ``1 - permissions msgs/s / plain msgs/s`` (negative: the permissions run was faster);
the goal is a minijs drop of at most 10%.

    python scripts/bench_auth.py [--count 200000] [--js-count 50000] [--rounds 3]
                                 [--rules 100] [--scenarios pubsub,js-pub-async]
                                 [--targets minijs,nats-server] [--out scripts/output/bench_auth]

Output: a table on stdout; ``auth.md`` and ``auth.json`` under ``--out`` (gitignored).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "output" / "bench_auth"
TARGETS = ("minijs", "nats-server")
#: Issue 16: publish throughput with permissions and accounts at most this much below plain.
GOAL_DROP = 0.10
BENCH_USER = "bench"
BENCH_PASSWORD = "bench-pw"
#: Subjects the load generator uses (scripts/loadgen/loadgen.c: SUBJECT_PREFIX ".bench").
BENCH_SUBJECT = "loadgen.bench"
ACCOUNTS = ("A", "B", "C")
CONFIGS = ("plain", "permissions")

sys.path.insert(0, str(HERE))
from bench import find_nats_server, spawn  # noqa: E402
from bench_native import (BuildError, Result, Scenario, build_loadgen,  # noqa: E402
                          markdown_table, median_result, run_loadgen)


# --------------------------------------------------------------------------- configs


def filler_subjects(kind: str, n: int) -> list[str]:
    """``n`` distinct subjects for ``kind`` (``allow`` / ``deny``), a mix of literal and wildcard
    ones, none of which matches the load generator's subjects, its inboxes or ``$JS.API``."""
    out = []
    for i in range(n):
        if i % 3 == 0:
            out.append(f"{kind}.svc{i}.>")
        elif i % 3 == 1:
            out.append(f"{kind}.app{i}.*.events")
        else:
            out.append(f"{kind}.orders.{i}")
    return out


def permission_rules(rules: int, jetstream: bool) -> dict[str, dict[str, list[str]]]:
    """The benchmark user's permissions: per direction ``rules`` rules, half allow, half deny.

    The allowed ones include what the load generator needs: the benchmark subject for both, and
    with JetStream ``$JS.API.>`` to publish and ``_INBOX.>`` to subscribe (acks and API replies).
    """
    if rules < 2 or rules % 2:
        raise ValueError("--rules must be an even number of at least 2")
    half = rules // 2
    needed = {"publish": [BENCH_SUBJECT], "subscribe": [BENCH_SUBJECT]}
    if jetstream:
        needed["publish"].append("$JS.API.>")
        needed["subscribe"].append("_INBOX.>")
    if half < max(len(v) for v in needed.values()):
        raise ValueError(f"--rules {rules} leaves no room for the benchmark's own subjects")
    perms = {}
    for direction, own in needed.items():
        allow = own + filler_subjects(f"allow{direction[:3]}", half - len(own))
        deny = filler_subjects(f"deny{direction[:3]}", half)
        perms[direction] = {"allow": allow, "deny": deny}
    return perms


def _quote_list(subjects: list[str]) -> str:
    return "[" + ", ".join(json.dumps(s) for s in subjects) + "]"


def _permissions_text(perms: dict[str, dict[str, list[str]]], indent: str) -> str:
    lines = [f"{indent}permissions {{"]
    for direction, rule in perms.items():
        lines.append(f"{indent}  {direction} {{")
        for kind in ("allow", "deny"):
            lines.append(f"{indent}    {kind}: {_quote_list(rule[kind])}")
        lines.append(f"{indent}  }}")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def render_config(config: str, rules: int, jetstream: bool) -> str:
    """The config file text for ``config`` (``plain`` / ``permissions``).

    ``permissions``: three accounts, the benchmark user (with the rules) and a second user in
    A, one user each in B and C; with JetStream, A has JetStream enabled.
    """
    if config == "plain":
        return "# plain: no authorization, no accounts\n"
    if config != "permissions":
        raise ValueError(f"unknown config {config!r}")
    perms = _permissions_text(permission_rules(rules, jetstream), "      ")
    bench_user = (f'    {{\n      user: {BENCH_USER}\n      password: {BENCH_PASSWORD}\n'
                  f'{perms}\n    }}')
    parts = ["# permissions and three accounts\naccounts {"]
    for acc in ACCOUNTS:
        users = [f"    {{user: {acc.lower()}user, password: {acc.lower()}pw}}"]
        if acc == "A":
            users.insert(0, bench_user)
        js = "   jetstream: enabled\n" if jetstream and acc == "A" else ""
        parts.append(f"  {acc}: {{\n{js}   users: [\n" + "\n".join(users) + "\n   ]\n  }")
    parts.append("}")
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class AuthScenario:
    """A load generator scenario (JetStream ones with JetStream in account A)."""

    key: str
    scenario: Scenario

    @property
    def jetstream(self) -> bool:
        return self.scenario.mode.startswith("js-")


def build_scenarios() -> list[AuthScenario]:
    return [
        AuthScenario("pub 128B", Scenario("pub", 128)),
        AuthScenario("pubsub 128B", Scenario("pubsub", 128)),
        AuthScenario("js-pub-async 128B memory", Scenario("js-pub-async", 128)),
        AuthScenario("js-pub-sync 128B memory", Scenario("js-pub-sync", 128, share=0.25)),
    ]


def select(scenarios: list[AuthScenario], words: str | None) -> list[AuthScenario]:
    if not words:
        return scenarios
    wanted = [w.strip() for w in words.split(",") if w.strip()]
    return [s for s in scenarios if any(w in s.key for w in wanted)]


def client_url(url: str, config: str) -> str:
    """The server URL with the benchmark user's credentials for a ``permissions`` config."""
    if config == "plain":
        return url
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{BENCH_USER}:{BENCH_PASSWORD}@{rest}"


# --------------------------------------------------------------------------- servers


def server_commands(args: argparse.Namespace) -> dict[str, list[str]]:
    commands = {"minijs": [sys.executable, "-m", "minijs"]}
    if (exe := find_nats_server()):
        commands["nats-server"] = [exe]
    return {t: commands[t] for t in args.targets if t in commands}


def run_one(exe: Path, cmd: list[str], target: str, sc: AuthScenario, config: str,
            args: argparse.Namespace) -> Result:
    text = render_config(config, args.rules, sc.jetstream)
    try:
        server = spawn(target, cmd, config_text=text, jetstream=sc.jetstream)
    except RuntimeError as e:
        return Result(error=str(e)[-200:])
    try:
        total = args.js_count if sc.jetstream else args.count
        argv = sc.scenario.argv(exe, client_url(server.url, config), total, args.window)
        return run_loadgen(argv, server)
    finally:
        server.stop()


def run_all(exe: Path, scenarios: list[AuthScenario], args: argparse.Namespace,
            commands: dict[str, list[str]]) -> dict[str, dict[str, dict[str, Result]]]:
    """results[target][scenario key][config]: the median over ``--rounds``."""
    results: dict[str, dict[str, dict[str, Result]]] = {t: {} for t in commands}
    for sc in scenarios:
        rounds = {t: {c: [] for c in CONFIGS} for t in commands}
        for i in range(args.rounds):
            order = CONFIGS if i % 2 == 0 else CONFIGS[::-1]
            for t, cmd in commands.items():
                for c in order:
                    rounds[t][c].append(run_one(exe, cmd, t, sc, c, args))
        for t in commands:
            results[t][sc.key] = {c: median_result(rounds[t][c]) for c in CONFIGS}
            if args.verbose:
                print(sc.key, t, {c: asdict(r) for c, r in results[t][sc.key].items()},
                      file=sys.stderr)
    return results


# --------------------------------------------------------------------------- output


def drop(plain: Result | None, perms: Result | None) -> float | None:
    """``1 - perms / plain`` msgs/s, or None when either failed."""
    if (plain is None or perms is None or plain.error or perms.error
            or not plain.msgs_per_s or perms.msgs_per_s is None):
        return None
    return 1.0 - perms.msgs_per_s / plain.msgs_per_s


def _rate(r: Result | None) -> str:
    if r is None:
        return "skipped"
    if r.error:
        return "error: " + r.error.replace("|", "/").replace("\n", " ")[:40]
    return f"{r.msgs_per_s:,.0f}"


def _cpu(r: Result | None) -> str:
    if r is None or r.error or r.server_cpu_us is None:
        return "-"
    return f"{r.server_cpu_us:.1f}"


def cpu_cell(plain: Result | None, perms: Result | None) -> str:
    """``plain / perms`` server CPU us per message, with the change in percent."""
    text = f"{_cpu(plain)} / {_cpu(perms)}"
    if (plain is not None and perms is not None and plain.server_cpu_us
            and perms.server_cpu_us is not None and not plain.error and not perms.error):
        text += f" ({(perms.server_cpu_us / plain.server_cpu_us - 1) * 100:+.0f}%)"
    return text


def _pct(d: float | None) -> str:
    return "-" if d is None else f"{d * 100:+.1f}%"


def verdict(d: float | None) -> str:
    if d is None:
        return "-"
    return "yes" if d <= GOAL_DROP else "NO"


def report_table(scenarios: list[AuthScenario],
                 results: dict[str, dict[str, dict[str, Result]]]) -> str:
    header = ["scenario", "permissions config"]
    for t in TARGETS:
        short = "nats" if t == "nats-server" else t
        header += [f"{short} plain msg/s", f"{short} perms msg/s", f"{short} drop",
                   f"{short} cpu us/op plain/perms"]
    header.append("minijs drop <= 10%")
    rows = []
    for sc in scenarios:
        row = [sc.key, "3 accounts + rules"]
        minijs_drop = None
        for t in TARGETS:
            per = results.get(t, {}).get(sc.key)
            plain = per["plain"] if per else None
            perms = per["permissions"] if per else None
            d = drop(plain, perms)
            if t == "minijs":
                minijs_drop = d
            row += [_rate(plain), _rate(perms), _pct(d), cpu_cell(plain, perms)]
        row.append(verdict(minijs_drop))
        rows.append(row)
    return markdown_table(header, rows)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=200000,
                   help="messages per core scenario (default 200000)")
    p.add_argument("--js-count", type=int, default=50000,
                   help="messages per JetStream scenario before its share (default 50000)")
    p.add_argument("--rounds", type=int, default=3,
                   help="runs per scenario and config; medians shown (default 3)")
    p.add_argument("--window", type=int, default=256,
                   help="async JetStream publishes in flight (default 256)")
    p.add_argument("--rules", type=int, default=100,
                   help="publish rules and as many subscribe rules, half allow, half deny "
                        "(default 100)")
    p.add_argument("--scenarios", help="comma-separated words; scenarios whose key has one")
    p.add_argument("--targets", default="minijs,nats-server",
                   type=lambda s: [t.strip() for t in s.split(",") if t.strip()])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--no-install", action="store_true",
                   help="never apt-get install; fail with the command to run instead")
    p.add_argument("--print-config", choices=("core", "jetstream"),
                   help="print the permissions config for core or JetStream runs and exit")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    for t in args.targets:
        if t not in TARGETS:
            p.error(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if min(args.count, args.js_count, args.rounds, args.window) < 1:
        p.error("--count, --js-count, --rounds and --window must be positive")
    if args.rules < 4 or args.rules % 2:
        p.error("--rules must be an even number of at least 4")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.print_config:
        print(render_config("permissions", args.rules, args.print_config == "jetstream"), end="")
        return 0
    scenarios = select(build_scenarios(), args.scenarios)
    if not scenarios:
        print(f"--scenarios {args.scenarios!r}: no scenario matches", file=sys.stderr)
        return 2
    try:
        exe = build_loadgen(allow_install=not args.no_install)
    except BuildError as e:
        print(f"bench_auth: {e}", file=sys.stderr)
        return 2
    commands = server_commands(args)
    if "nats-server" in args.targets and "nats-server" not in commands:
        print("nats-server not found on PATH; running minijs alone", file=sys.stderr)
    loadavg = os.getloadavg()[0]
    results = run_all(exe, scenarios, args, commands)
    table = report_table(scenarios, results)
    text = (
        "# Permissions and accounts on the publish path: minijs vs nats-server\n\n"
        f"{os.cpu_count()} CPUs, load average {loadavg:.1f} at start; {args.rounds} round(s), "
        f"medians; {args.count:,} core / {args.js_count:,} JetStream messages.\n\n"
        f"plain: no authorization, no accounts. perms: the benchmark user with {args.rules} "
        f"publish and {args.rules} subscribe rules (half allow, half deny, literal and "
        "wildcard) in three accounts, the user in A (with JetStream enabled in A for the "
        "JetStream scenarios). drop = 1 - perms msg/s / plain msg/s (negative: faster); goal: "
        f"minijs drop at most {GOAL_DROP:.0%}.\n\n{table}\n")
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "auth.md").write_text(text)
    doc = {"count": args.count, "js_count": args.js_count, "rounds": args.rounds,
           "rules": args.rules, "cpus": os.cpu_count(), "loadavg": loadavg,
           "scenarios": [{"key": sc.key, "jetstream": sc.jetstream,
                          "results": {t: {c: asdict(r) for c, r in
                                          results[t][sc.key].items()} for t in results},
                          "drop": {t: drop(results[t][sc.key]["plain"],
                                           results[t][sc.key]["permissions"])
                                   for t in results}}
                         for sc in scenarios]}
    (args.out / "auth.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written: {args.out / 'auth.md'}")
    failed = any(r.error for per in results.values() for rs in per.values()
                 for r in rs.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
