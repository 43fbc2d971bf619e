"""scripts/bench_auth.py: the configs it writes (both servers accept them and let the benchmark
user do what the load generator does), the drop arithmetic and argument parsing. No timing is
asserted."""
from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import nats
import pytest

from minijs import ServerThread
from minijs.confparse import parse_config

ROOT = Path(__file__).resolve().parent.parent


def _load():
    sys.path.insert(0, str(ROOT / "scripts"))
    path = ROOT / "scripts" / "bench_auth.py"
    spec = importlib.util.spec_from_file_location("bench_auth", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_auth", module)
    spec.loader.exec_module(module)
    return module


ba = _load()


@pytest.mark.parametrize("jetstream", [False, True])
def test_rules_count_and_contents(jetstream):
    perms = ba.permission_rules(100, jetstream)
    for direction in ("publish", "subscribe"):
        allow, deny = perms[direction]["allow"], perms[direction]["deny"]
        assert len(allow) == len(deny) == 50
        assert len(set(allow + deny)) == 100
        assert ba.BENCH_SUBJECT in allow
        assert any(s.endswith(">") for s in deny) and any("*" in s for s in deny)
    assert ("$JS.API.>" in perms["publish"]["allow"]) is jetstream
    assert ("_INBOX.>" in perms["subscribe"]["allow"]) is jetstream


def test_rules_must_leave_room():
    with pytest.raises(ValueError):
        ba.permission_rules(3, False)
    with pytest.raises(ValueError):
        ba.permission_rules(2, True)


def test_configs_parse():
    assert ba.render_config("plain", 100, False).strip().startswith("#")
    core = ba.render_config("permissions", 100, False)
    js = ba.render_config("permissions", 100, True)
    assert "accounts {" in core and "accounts {" in js
    assert "jetstream" not in core
    assert [a for a, _ in parse_config(js).account_jetstream] == ["A"]
    for text in (core, js):
        parse_config(text)
    with pytest.raises(ValueError):
        ba.render_config("other", 100, False)


def test_client_url():
    assert ba.client_url("nats://127.0.0.1:4222", "plain") == "nats://127.0.0.1:4222"
    assert (ba.client_url("nats://127.0.0.1:4222", "permissions")
            == f"nats://{ba.BENCH_USER}:{ba.BENCH_PASSWORD}@127.0.0.1:4222")


def test_drop_and_verdict():
    plain = ba.Result(msgs_per_s=1000.0, server_cpu_us=2.0)
    perms = ba.Result(msgs_per_s=920.0, server_cpu_us=2.2)
    assert ba.drop(plain, perms) == pytest.approx(0.08)
    assert ba.verdict(0.08) == "yes" and ba.verdict(0.11) == "NO" and ba.verdict(None) == "-"
    assert ba.drop(plain, ba.Result(error="boom")) is None
    assert "(+10%)" in ba.cpu_cell(plain, perms)
    sc = ba.build_scenarios()[0]
    table = ba.report_table([sc], {"minijs": {sc.key: {"plain": plain, "permissions": perms}}})
    assert "+8.0%" in table and "skipped" in table


def test_parse_args():
    args = ba.parse_args(["--count", "10", "--rounds", "1", "--rules", "20",
                          "--targets", "minijs", "--scenarios", "pubsub"])
    assert (args.count, args.rounds, args.rules, args.targets) == (10, 1, 20, ["minijs"])
    assert [s.key for s in ba.select(ba.build_scenarios(), args.scenarios)] == ["pubsub 128B"]
    for bad in (["--rules", "7"], ["--rules", "2"], ["--count", "0"], ["--targets", "x"]):
        with pytest.raises(SystemExit):
            ba.parse_args(bad)


def test_print_config(capsys):
    assert ba.main(["--print-config", "jetstream", "--rules", "10"]) == 0
    assert "jetstream: enabled" in capsys.readouterr().out


@pytest.mark.parametrize("jetstream", [False, True])
def test_benchmark_user_can_do_its_job(tmp_path, jetstream):
    """The benchmark user publishes and subscribes on the benchmark subject (and, with
    JetStream, uses the API); a denied subject is refused."""
    overrides = {"port": 0}
    if jetstream:
        overrides.update(jetstream=True, store_dir=str(tmp_path / "js"))
    config = parse_config(ba.render_config("permissions", 100, jetstream)).with_overrides(
        **overrides)

    async def run(url: str) -> None:
        errors = []

        async def on_error(e: Exception) -> None:
            errors.append(str(e))

        nc = await nats.connect(ba.client_url(url, "permissions"), error_cb=on_error,
                                allow_reconnect=False)
        sub = await nc.subscribe(ba.BENCH_SUBJECT)
        await nc.publish(ba.BENCH_SUBJECT, b"x")
        msg = await sub.next_msg(timeout=2)
        assert msg.data == b"x"
        await nc.publish("denypub.orders.2", b"x")
        await nc.flush()
        if jetstream:
            js = nc.jetstream()
            await js.add_stream(name="LOADGEN", subjects=["loadgen.>"])
            ack = await js.publish(ba.BENCH_SUBJECT, b"y")
            assert ack.stream == "LOADGEN"
        await asyncio.sleep(0.05)
        await nc.close()
        assert any("denypub.orders.2" in e for e in errors), errors

    with ServerThread(config) as server:
        asyncio.run(run(server.client_url))
