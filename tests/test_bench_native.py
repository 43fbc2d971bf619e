"""scripts/bench_native.py and its C load generator: argument parsing, the scenario list, the
build, and a small run of every mode against an in-process minijs (no timing is asserted)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from minijs import ServerThread

ROOT = Path(__file__).resolve().parent.parent


def _load():
    path = ROOT / "scripts" / "bench_native.py"
    spec = importlib.util.spec_from_file_location("bench_native", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_native", module)
    spec.loader.exec_module(module)
    return module


bn = _load()

needs_libnats = pytest.mark.skipif(
    not (bn.have_headers() and bn.compiler()),
    reason="libnats-dev or a C compiler is not installed (scripts/bench_native.py installs them "
           "as root, or run: " + bn.install_command() + ")")


def test_defaults_and_options():
    args = bn.parse_args([])
    assert args.targets == ["minijs", "nats-server"]
    assert (args.count, args.rounds, args.window, args.memory) == (20000, 1, 256, False)
    assert args.out == bn.DEFAULT_OUT and "output" in args.out.parts
    args = bn.parse_args(["--targets", "minijs", "--count", "50", "--memory-only",
                          "--scenarios", "js-pull,kv", "--no-install"])
    assert args.targets == ["minijs"] and args.count == 50 and args.memory and args.no_install


@pytest.mark.parametrize("argv", [["--targets", "nats"], ["--count", "0"], ["--rounds", "-1"],
                                  ["--subs", "0"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        bn.parse_args(argv)
    assert exc.value.code == 2


def test_scenarios_cover_the_issue():
    scenarios = bn.build_scenarios()
    keys = [s.key for s in scenarios]
    assert len(set(keys)) == len(keys)
    modes = {s.mode for s in scenarios}
    assert modes == {"pub", "pubsub", "reqrep", "js-pub-sync", "js-pub-async", "js-pull",
                     "js-push", "kv-put", "kv-get"}
    assert {s.size for s in scenarios} >= {16, 128, 1024, 65536}
    for mode in ("js-pub-sync", "js-pub-async", "js-pull", "js-push"):
        assert {s.storage for s in scenarios if s.mode == mode} == {"memory", "file"}
    assert any(s.pubs > 1 for s in scenarios) and any(s.subs > 1 for s in scenarios)
    assert [s.key for s in bn.select(scenarios, "kv-")] == ["kv-put 128B memory",
                                                            "kv-get 128B memory"]
    assert bn.select(scenarios, "nothing-like-this") == []


def test_fanout_applies_where_the_mode_has_publishers_or_subscribers():
    base = [bn.Scenario("pub", 16), bn.Scenario("js-pull", 128), bn.Scenario("pubsub", 128),
            bn.Scenario("pubsub", 128, pubs=4, subs=1)]
    out = bn.with_fanout(base, 3, 5)
    assert [s.key for s in out] == ["pub 16B 3x1", "js-pull 128B memory 1x5", "pubsub 128B 3x5"]
    assert bn.with_fanout(base, None, None) == base


def test_scenario_count_and_command_line():
    big = bn.Scenario("pub", 65536, share=5.0)
    assert big.count(20000) == bn.BYTE_BUDGET // 65536
    sc = bn.Scenario("js-pull", 128, subs=4, storage="file", share=0.5, headers=True)
    assert sc.key == "js-pull 128B file 1x4 hdr" and sc.count(1000) == 500
    argv = sc.argv(Path("/x/loadgen"), "nats://h:1", 1000, 64)
    assert argv[0] == "/x/loadgen" and "-i" in argv and "-H" in argv
    pairs = dict(zip(argv[2::2], argv[3::2]))
    assert pairs["-m"] == "js-pull" and pairs["-n"] == "500" and pairs["-c"] == "4"
    assert pairs["-S"] == "file" and pairs["-w"] == "64" and pairs["-s"] == "nats://h:1"


def test_missing_packages_name_the_command(monkeypatch):
    monkeypatch.setattr(bn, "have_headers", lambda: False)
    with pytest.raises(bn.BuildError, match="apt-get install -y libnats-dev build-essential"):
        bn.ensure_packages(allow_install=False)


def test_tables_show_both_targets_and_ratios():
    sc = bn.Scenario("kv-get", 128)
    results = {"minijs": {sc.key: bn.Result(ops=10, msgs_per_s=50000.0, mb_per_s=0.1,
                                            p50_us=10.0, p99_us=20.0, server_cpu_us=16.0)},
               "nats-server": {sc.key: bn.Result(ops=10, msgs_per_s=100000.0, mb_per_s=0.2,
                                                 p50_us=5.0, p99_us=9.0, server_cpu_us=8.0)}}
    table = bn.scenario_table([sc], results, 20000)
    row = table.splitlines()[2]
    assert "kv-get 128B memory" in row and "0.50" in row and "2.00" in row and "10 / 20" in row
    assert [c.strip() for c in row.split("|")][-3:-1] == ["0.80", "0.80"]  # cores busy
    mem = {"rows": [{"size": 16, "headers": True,
                     "results": {"minijs": bn.MemoryResult(100, 1000, 41000),
                                 "nats-server": bn.MemoryResult(100, 1000, 21000)}}],
           "million": None}
    row = bn.memory_table(mem).splitlines()[2]
    assert "16B" in row and "400" in row and "200" in row and "2.00" in row


@pytest.fixture(scope="module")
def loadgen(tmp_path_factory):
    exe = tmp_path_factory.mktemp("loadgen") / "loadgen"
    proc = subprocess.run(bn.compile_command(bn.SOURCE, exe), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


@needs_libnats
def test_loadgen_refuses_bad_arguments(loadgen):
    proc = subprocess.run([str(loadgen), "-z", "8"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage" in proc.stderr


@needs_libnats
@pytest.mark.parametrize("mode", ["pub", "pubsub", "reqrep", "js-pub-sync", "js-pub-async",
                                  "js-pull", "js-push", "kv-put", "kv-get"])
def test_every_mode_runs_against_minijs(loadgen, mode):
    with ServerThread(jetstream=True) as srv:
        url = f"nats://127.0.0.1:{srv.port}"
        proc = subprocess.run([str(loadgen), "-s", url, "-m", mode, "-n", "200", "-z", "64",
                               "-p", "2", "-c", "2", "-H"],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == 0 and doc["ops"] == 200 and doc["mode"] == mode
    if mode.startswith("js-pub"):
        assert doc["stored"] == 200
