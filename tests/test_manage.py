"""``minijs stream|consumer|pub|sub|req|kv``: the management CLI, run the same way against an
in-process minijs and the real nats-server, with the same assertions on both."""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import minijs
from conformance.servers import spawn_server
from minijs.cli import main

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("minijs", "nats-server")
_seq = itertools.count(1)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """One JetStream server per target for the module: name -> client URL."""
    thread = minijs.ServerThread(jetstream=True).start()
    real = spawn_server("nats-server", jetstream=True)
    try:
        yield {"minijs": thread.client_url, "nats-server": real.url}
    finally:
        real.stop()
        thread.stop()


@pytest.fixture(params=TARGETS)
def url(request: pytest.FixtureRequest, servers: dict[str, str]) -> str:
    return servers[request.param]


@pytest.fixture
def name() -> str:
    """A stream name no other test uses (the servers are shared by the module)."""
    return f"S{next(_seq)}"


def run(url: str, *argv: str) -> tuple[int, str, str]:
    """``minijs ARGV -s URL`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "-s", url])
    return code, out.getvalue(), err.getvalue()


def ok(url: str, *argv: str) -> str:
    code, out, err = run(url, *argv)
    assert code == 0, (argv, out, err)
    return out


def ok_json(url: str, *argv: str) -> Any:
    return json.loads(ok(url, *argv, "--json"))


def fails(url: str, *argv: str) -> str:
    code, out, err = run(url, *argv)
    assert code == 1, (argv, out, err)
    return err


# ----------------------------------------------------------------------------- the examples


def test_the_seed_workflow(url: str, name: str) -> None:
    subj = name.lower()
    out = ok(url, "stream", "add", name, "--subjects", f"{subj}.>", "--storage", "memory",
             "--defaults")
    assert f"Stream {name} was created" in out
    assert f"Subjects: {subj}.>" in out and "Storage: memory" in out
    out = ok(url, "consumer", "add", name, "W", "--pull", "--defaults")
    assert "Pull Mode: true" in out and "Ack Policy: explicit" in out

    code, out, err = run(url, "pub", f"{subj}.new", "hello", "--count", "3")
    assert code == 0, err
    assert f'Published 3 messages to "{subj}.new"' in out
    assert "Published 3/3 messages (100%)" in err  # the progress indication

    out = ok(url, "consumer", "next", name, "W")
    assert f"subject: {subj}.new" in out and "hello" in out.splitlines()
    assert "Acknowledged message" in out

    info = ok_json(url, "stream", "info", name)
    assert info["config"]["name"] == name
    assert info["config"]["subjects"] == [f"{subj}.>"]
    assert info["config"]["storage"] == "memory"
    assert info["state"]["messages"] == 3
    assert info["state"]["first_seq"] == 1 and info["state"]["last_seq"] == 3

    ci = ok_json(url, "consumer", "info", name, "W")
    assert ci["ack_floor"]["stream_seq"] == 1
    assert ci["num_pending"] == 2 and ci["num_ack_pending"] == 0

    out = ok(url, "stream", "get", name, "1")
    assert f"Item: {name}#1" in out and f"on Subject {subj}.new" in out
    assert out.splitlines()[-1] == "hello"
    msg = ok_json(url, "stream", "get", name, "2")
    assert msg == {"subject": f"{subj}.new", "data": "hello", "seq": 2, "stream": name}


def test_kv_put_get_ls_watch(url: str, name: str) -> None:
    bucket = f"cfg{name}"
    err = fails(url, "kv", "put", bucket, "mode", "fast")
    assert f"kv add {bucket}" in err  # the fix is named
    ok(url, "kv", "add", bucket)
    assert ok(url, "kv", "put", bucket, "mode", "fast").strip() == "fast"
    out = ok(url, "kv", "get", bucket, "mode")
    assert out.splitlines()[0] == f"{bucket} > mode revision: 1"
    assert out.splitlines()[-1] == "fast"
    assert ok(url, "kv", "get", bucket, "mode", "--raw") == "fast\n"
    ok(url, "kv", "put", bucket, "size", "L")
    assert ok_json(url, "kv", "get", bucket, "size") == {
        "bucket": bucket, "key": "size", "value": "L", "revision": 2}
    assert ok_json(url, "kv", "ls", bucket) == ["mode", "size"]
    buckets = {b["bucket"]: b for b in ok_json(url, "kv", "ls")}
    assert buckets[bucket]["values"] == 2
    assert bucket in ok(url, "kv", "ls")
    seen = ok_json(url, "kv", "watch", bucket, "--count", "2")
    assert [(e["key"], e["value"], e["operation"]) for e in seen] == [
        ("mode", "fast", "PUT"), ("size", "L", "PUT")]
    ok(url, "kv", "del", bucket, "mode")
    assert "not found" in fails(url, "kv", "get", bucket, "mode")
    # a watch with no --count ends after --timeout without updates
    t0 = time.monotonic()
    seen = ok_json(url, "kv", "watch", bucket, "--timeout", "300ms")
    assert [(e["key"], e["operation"]) for e in seen] == [("size", "PUT"), ("mode", "DEL")]
    assert time.monotonic() - t0 < 3
    ok(url, "kv", "rm", bucket, "-f")


def test_listing_editing_purging_and_removing(url: str, name: str) -> None:
    subj = name.lower()
    ok(url, "stream", "add", name, "--subjects", f"{subj}.*", "--max-msgs", "100",
       "--max-age", "1h", "--retention", "limits", "--storage", "file")
    ok(url, "consumer", "add", name, "P", "--pull", "--filter", f"{subj}.a",
       "--deliver", "last", "--ack", "all")
    ok(url, "consumer", "add", name, "Q", "--target", f"deliver.{subj}", "--deliver", "new")
    names = ok_json(url, "stream", "ls", "--names")
    assert name in names
    table = ok(url, "stream", "ls")
    row = next(line for line in table.splitlines() if f"| {name} " in line)
    assert f"{subj}.*" in row and "file" in row
    listed = {s["config"]["name"]: s for s in ok_json(url, "stream", "ls")}
    assert listed[name]["config"]["max_msgs"] == 100
    assert listed[name]["config"]["max_age"] == 3600 * 10**9  # nanoseconds, as on the wire

    assert ok_json(url, "consumer", "ls", name, "--names") == ["P", "Q"]
    table = ok(url, "consumer", "ls", name)
    assert any("| P " in line and "pull" in line and f"{subj}.a" in line
               for line in table.splitlines())
    assert any("| Q " in line and "push" in line for line in table.splitlines())
    p = ok_json(url, "consumer", "info", name, "P")
    assert p["config"]["ack_policy"] == "all" and p["config"]["deliver_policy"] == "last"
    assert p["config"]["filter_subject"] == f"{subj}.a"

    edited = ok_json(url, "stream", "edit", name, "--max-msgs", "5", "--subjects",
                     f"{subj}.*,{subj}x.*")
    assert edited["config"]["max_msgs"] == 5
    assert edited["config"]["subjects"] == [f"{subj}.*", f"{subj}x.*"]
    assert edited["config"]["max_age"] == 3600 * 10**9  # untouched settings stay

    ok(url, "pub", f"{subj}.a", "m{{Count}}", "--count", "4", "--jetstream", "--quiet")
    assert ok_json(url, "stream", "get", name, "4")["data"] == "m4"
    assert "refusing" in fails(url, "stream", "purge", name)
    assert ok_json(url, "stream", "purge", name, "-f", "--keep", "1")["state"]["messages"] == 1
    assert "Deleted consumer" in ok(url, "consumer", "rm", name, "Q", "-f")
    assert ok_json(url, "consumer", "ls", name, "--names") == ["P"]
    assert "-f/--force" in fails(url, "stream", "rm", name)
    assert f"Deleted stream {name}" in ok(url, "stream", "rm", name, "-f")
    assert name not in ok_json(url, "stream", "ls", "--names")


def test_pub_sub_and_req(url: str, name: str) -> None:
    from minijs.manage import main as manage_main

    subj = f"chat.{name}"
    out, err = io.StringIO(), io.StringIO()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(manage_main(
        ["sub", subj, "--count", "2", "--json", "-s", url], out=out, err=err)))
    t.start()
    deadline = time.monotonic() + 5
    while "Subscribing on" not in err.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    ok(url, "pub", subj, "hi {{Count}}", "--count", "2", "-H", "X-Test:yes")
    t.join(10)
    assert result == [0], err.getvalue()
    got = json.loads(out.getvalue())
    assert [m["data"] for m in got] == ["hi 1", "hi 2"]
    assert got[0]["headers"] == {"X-Test": "yes"}
    # a sub that sees too few messages ends after --timeout with exit 1
    assert "received 0 of 1" in fails(url, "sub", f"quiet.{name}", "--count", "1",
                                      "--timeout", "200ms")
    # req: the JetStream API answers on both servers
    reply = ok_json(url, "req", "$JS.API.INFO")
    assert reply["subject"].startswith("_INBOX.")
    assert json.loads(reply["data"])["type"] == "io.nats.jetstream.api.v1.account_info_response"
    assert "no responders" in fails(url, "req", f"nobody.{name}")


# ----------------------------------------------------------------------------- errors


def test_api_errors_print_description_and_code(url: str, name: str) -> None:
    err = fails(url, "stream", "info", name)
    assert err.strip() == "minijs: JetStream API error: stream not found (code 404, err_code 10059)"
    ok(url, "stream", "add", name, "--defaults")
    err = fails(url, "consumer", "info", name, "NOPE")
    assert "consumer not found (code 404, err_code 10014)" in err
    err = fails(url, "stream", "add", f"{name}B", "--subjects", name)
    assert "subjects overlap with an existing stream" in err and "err_code 10065" in err


def test_missing_values_name_their_flag_and_never_prompt(url: str, name: str) -> None:
    err = fails(url, "stream", "add", name)
    assert "missing --subjects" in err and "--defaults" in err
    ok(url, "stream", "add", name, "--defaults")
    assert ok_json(url, "stream", "info", name)["config"]["subjects"] == [name]
    err = fails(url, "consumer", "add", name, "C")
    assert "missing --pull" in err and "--defaults" in err
    ci = ok_json(url, "consumer", "add", name, "C", "--defaults")
    assert "deliver_subject" not in ci["config"]  # --defaults: a pull consumer
    assert "no message" in fails(url, "consumer", "next", name, "C", "--timeout", "200ms")
    assert "--max-age" in fails(url, "stream", "add", name, "--defaults", "--max-age", "soon")
    assert "--storage" in fails(url, "stream", "add", name, "--defaults", "--storage", "disk")
    assert "--bogus" in fails(url, "stream", "ls", "--bogus")
    assert "STREAM" in fails(url, "stream", "info")


def test_unreachable_server_fails_fast_naming_the_url() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = f"nats://127.0.0.1:{port}"
    t0 = time.monotonic()
    err = fails(target, "stream", "ls")
    # not a hang: one connect attempt, no reconnect loop (nats-py's default would try for
    # minutes); the bound leaves room for a loaded machine's interpreter start
    assert time.monotonic() - t0 < 15
    assert f"cannot connect to {target}" in err and "-s/--server" in err


def test_user_and_password() -> None:
    real = spawn_server("nats-server", args=["--user", "u", "--pass", "p"])
    try:
        with minijs.ServerThread(user="u", password="p") as srv:
            for target in (srv.client_url, real.url):
                err = fails(target, "pub", "x", "y")
                assert f"cannot connect to {target}: authorization violation" in err
                assert "--user/--password" in err
                ok(target, "pub", "x", "y", "--user", "u", "--password", "p")
    finally:
        real.stop()


def test_a_server_without_jetstream_is_named() -> None:
    plain = spawn_server("nats-server")
    try:
        with minijs.ServerThread() as srv:
            for target in (srv.client_url, plain.url):
                err = fails(target, "stream", "ls")
                assert f"JetStream is not enabled on {target}" in err and "-js" in err
    finally:
        plain.stop()


def test_help_mentions_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"]) == 0
    out = capsys.readouterr().out
    for word in ("stream add|ls|info|edit|purge|rm|get", "consumer add|ls|info|next|rm",
                 "pub SUBJECT", "kv "):
        assert word in out
    for argv, flags in ((["stream", "add", "-h"], ("--subjects", "--storage", "--retention",
                                                   "--max-msgs", "--max-age", "--defaults",
                                                   "--server", "--json")),
                        (["consumer", "add", "-h"], ("--pull", "--ack", "--filter", "--deliver")),
                        (["pub", "-h"], ("--count",)),
                        (["kv", "-h"], ("watch",)),
                        (["stream", "-h"], ("purge", "get"))):
        assert main(argv) == 0
        out = capsys.readouterr().out
        for flag in flags:
            assert flag in out, (argv, flag)


def test_the_server_command_is_untouched(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extra"]) == 1
    assert 'unrecognized command: "extra"' in capsys.readouterr().err
    code = subprocess.run([sys.executable, "-c", "import sys, minijs.cli, minijs.manage; "
                           "sys.exit('nats' in sys.modules)"], cwd=ROOT).returncode
    assert code == 0  # nats-py is imported only when a management command runs


# ----------------------------------------------------------------------------- JSON shapes


_VOLATILE = {"created", "ts", "first_ts", "last_ts", "cluster", "last_active"}


def _shape(value: Any) -> Any:
    """Keys and values, without timestamps and server ids."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def test_json_outputs_match_between_minijs_and_nats_server(servers: dict[str, str]) -> None:
    outputs: dict[str, list[Any]] = {}
    for target, url in servers.items():
        got = outputs[target] = []
        ok(url, "stream", "add", "SHAPE", "--subjects", "shape.>", "--storage", "memory",
           "--defaults")
        ok(url, "consumer", "add", "SHAPE", "W", "--pull", "--defaults")
        got.append(ok_json(url, "pub", "shape.x", "v{{Count}}", "--count", "3", "--jetstream"))
        got.append(ok_json(url, "consumer", "next", "SHAPE", "W"))
        got.append(ok_json(url, "stream", "info", "SHAPE"))
        got.append(ok_json(url, "consumer", "info", "SHAPE", "W"))
        got.append(ok_json(url, "stream", "get", "SHAPE", "3"))
        ok(url, "stream", "rm", "SHAPE", "-f")
    assert _shape(outputs["minijs"]) == _shape(outputs["nats-server"])


# ----------------------------------------------------------------------------- a real process


def _minijs_cmd() -> list[str]:
    return [sys.executable, "-m", "minijs"]


def test_as_a_real_subprocess(servers: dict[str, str]) -> None:
    for url in servers.values():
        env = {**os.environ, "NATS_URL": url}  # NATS_URL stands in for -s
        run_ = lambda *a: subprocess.run(  # noqa: E731
            [*_minijs_cmd(), *a], env=env, capture_output=True, text=True, timeout=30, cwd=ROOT)
        p = run_("stream", "add", "PROC", "--subjects", "proc.>", "--defaults", "--json")
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["config"]["name"] == "PROC"
        p = run_("pub", "proc.a", "x", "--count", "2")
        assert p.returncode == 0 and "Published 2 messages" in p.stdout, p.stderr
        p = run_("stream", "info", "PROC")
        assert p.returncode == 0 and "Messages: 2" in p.stdout, p.stderr
        p = run_("stream", "rm", "PROC", "-f")
        assert p.returncode == 0, p.stderr
    p = subprocess.run([*_minijs_cmd(), "stream", "ls", "-s", "nats://127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert p.returncode == 1
    assert "cannot connect to nats://127.0.0.1:1" in p.stderr
    assert "Traceback" not in p.stderr
