"""scripts/bench_scale.py: argument parsing, the list of scale points, growth verdicts, and a
small run of the load generator's scale options against an in-process minijs (nothing timed is
asserted)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from minijs import ServerThread

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return sys.modules[name]


bn = _load("bench_native")
bs = _load("bench_scale")

needs_libnats = pytest.mark.skipif(
    not (bn.have_headers() and bn.compiler()),
    reason="libnats-dev or a C compiler is not installed (scripts/bench_native.py installs them "
           "as root, or run: " + bn.install_command() + ")")


def test_defaults_and_options():
    args = bs.parse_args([])
    assert args.ranges == list(bs.RANGES)
    assert args.targets == ["minijs", "nats-server"]
    assert (args.count, args.rounds, args.window, args.tolerance) == (10000, 1, 256, 1.25)
    assert args.out == bs.DEFAULT_OUT and "output" in args.out.parts
    args = bs.parse_args(["--ranges", "kv,stored", "--stored-top", "200000", "--targets",
                          "minijs", "--no-install"])
    assert args.ranges == ["kv", "stored"] and args.stored_top == 200000
    assert args.targets == ["minijs"] and args.no_install


@pytest.mark.parametrize("argv", [["--ranges", "streams"], ["--targets", "nats"],
                                  ["--count", "0"], ["--rounds", "0"], ["--kv-top", "-1"], ["--tolerance", "0.5"],
                                  ["--ranges", ","]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        bs.parse_args(argv)
    assert exc.value.code == 2


def test_points_cover_the_issue():
    points = bs.build_points(bs.parse_args([]))
    keys = [p.key for p in points]
    assert len(set(keys)) == len(keys)
    by_range = {r: [p for p in points if p.range == r] for r in bs.RANGES}
    stored = by_range["stored"]
    assert {p.x for p in stored} == {1_000, 100_000, 1_000_000}
    assert {(p.mode, p.storage) for p in stored} == {
        (m, s) for m in ("js-pub-async", "js-pull") for s in ("memory", "file")}
    subjects = by_range["subjects"]
    assert {p.x for p in subjects} == {1, 100, 10_000}
    assert all("-L" in p.flags for p in subjects)
    consumers = by_range["consumers"]
    assert {p.x for p in consumers} == {1, 10, 100, 1_000}
    assert {p.mode for p in consumers} == {"js-pub-async", "js-pull", "js-push"}
    assert any("-F" in p.flags for p in consumers) and any("-F" not in p.flags
                                                           for p in consumers)
    assert {p.x for p in by_range["connections"]} == {1, 10, 100, 1_000}
    assert {p.mode for p in by_range["kv"]} == {"kv-put", "kv-get", "kv-watch", "kv-keys"}
    assert max(p.x for p in by_range["kv"]) == 100_000
    # every series runs from its smallest point to its largest
    for _rng, _series, ps in bs.series_of(points):
        assert [p.x for p in ps] == sorted(p.x for p in ps) and len(ps) >= 2


def test_tops_cap_the_ranges_and_ranges_select():
    args = bs.parse_args(["--ranges", "stored,consumers", "--stored-top", "200000",
                          "--consumers-top", "100"])
    points = bs.build_points(args)
    assert {p.range for p in points} == {"stored", "consumers"}
    assert sorted({p.x for p in points if p.range == "stored"}) == [1_000, 100_000, 200_000]
    assert max(p.x for p in points if p.range == "consumers") == 100
    assert bs.capped((1, 10, 100), 5) == [1, 5] and bs.capped((1, 10), None) == [1, 10]


def test_command_line_of_a_point():
    p = bs.Point("consumers", "consume 1 of N push filtered", 100, "js-push", 500, "memory",
                 ("-C", "99", "-P", "push", "-F"))
    argv = p.argv(Path("/x/loadgen"), "nats://h:1", 64)
    assert argv[0] == "/x/loadgen" and "-i" in argv and argv[-1] == "-F"
    pairs = dict(zip(argv[2:-1:2], argv[3:-1:2]))
    assert pairs["-m"] == "js-push" and pairs["-n"] == "500" and pairs["-C"] == "99"
    assert pairs["-P"] == "push" and pairs["-w"] == "64" and pairs["-s"] == "nats://h:1"


def test_growth_and_verdicts():
    r = bn.Result
    assert bs.growth(r(server_cpu_us=10.0), r(server_cpu_us=25.0)) == 2.5
    assert bs.growth(r(server_cpu_us=10.0), r(error="x")) is None
    assert bs.verdict(1.5, 1.4, 1.25) == "met"
    assert bs.verdict(2.5, 3.0, 1.25) == "NOT met (> 2x)"
    assert bs.verdict(1.8, 1.0, 1.25) == "NOT met (grows more than nats)"
    assert bs.verdict(1.2, 0.7, 1.25) == "met"  # nats-server's growth counts as at least 1.0
    assert bs.verdict(None, 1.0, 1.25) == "-"
    lo = bs.Point("kv", "get", 1000, "kv-get", 10)
    hi = bs.Point("kv", "get", 100000, "kv-get", 10)
    results = {"minijs": {lo.key: r(ops=10, msgs_per_s=1e4, server_cpu_us=10.0),
                          hi.key: r(ops=10, msgs_per_s=5e3, server_cpu_us=30.0)},
               "nats-server": {lo.key: r(ops=10, msgs_per_s=2e4, server_cpu_us=5.0),
                               hi.key: r(ops=10, msgs_per_s=2e4, server_cpu_us=5.0)}}
    rows = bs.growth_rows([lo, hi], results, 1.25)
    assert rows[0]["minijs"] == 3.0 and rows[0]["nats-server"] == 1.0
    line = bs.growth_table(rows).splitlines()[2]
    assert "kv: get" in line and "3.00x" in line and "NOT met" in line
    line = bs.points_table([hi], results).splitlines()[2]
    assert "100,000" in line and "30.0" in line and "6.00" in line


@pytest.fixture(scope="module")
def loadgen(tmp_path_factory):
    exe = tmp_path_factory.mktemp("loadgen") / "loadgen"
    proc = subprocess.run(bn.compile_command(bn.SOURCE, exe), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


@needs_libnats
@pytest.mark.parametrize("flags", [
    ["-m", "js-pub-async", "-B", "300"],
    ["-m", "js-pull", "-B", "300"],
    ["-m", "js-pub-async", "-J", "50", "-L", "1", "-B", "50"],
    ["-m", "js-pub-async", "-C", "5", "-P", "pull", "-F"],
    ["-m", "js-pull", "-C", "4", "-P", "pull"],
    ["-m", "js-push", "-C", "4", "-P", "push", "-F"],
    ["-m", "pubsub", "-X", "5"],
    ["-m", "kv-put", "-N", "300"],
    ["-m", "kv-get", "-N", "300"],
    ["-m", "kv-watch", "-N", "300"],
    ["-m", "kv-keys", "-N", "300"],
], ids=lambda f: " ".join(f))
def test_scale_options_run_against_minijs(loadgen, flags):
    with ServerThread(jetstream=True) as srv:
        url = f"nats://127.0.0.1:{srv.port}"
        proc = subprocess.run([str(loadgen), "-s", url, "-n", "200", "-z", "64", *flags],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == 0
    mode = flags[1]
    assert doc["ops"] == (300 if mode in ("kv-watch", "kv-keys") else 200)
    if "-J" in flags:
        assert doc["stored"] == 50  # one message per subject under max_msgs_per_subject: 1
    elif mode == "js-pub-async" and "-B" in flags:
        assert doc["stored"] == 500


def test_parsed_args_give_server_commands():
    """bench_native.server_commands reads ``loops`` (bench.py's --loop): bench_scale has no
    such option and runs minijs on its default loop."""
    args = bs.parse_args(["--targets", "minijs"])
    commands = bn.server_commands(args)
    assert list(commands) == ["minijs"] and "--loop" not in commands["minijs"]
