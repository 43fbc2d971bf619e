"""The ``minijs`` command: nats-server's flags, config files, logs, signals, and the Docker image's
entrypoint and health check run as-is."""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nats
import pytest

from minijs.cli import USAGE, UsageError, build_config, main, parse_args, version_line
from minijs.config import NATS_SERVER_VERSION, RANDOM_PORT, ServerConfig

ROOT = Path(__file__).resolve().parent.parent
READY = "[INF] Server is ready"


# ----------------------------------------------------------------------------- flag parsing


@pytest.mark.parametrize("argv,expected", [
    (["-a", "127.0.0.1"], {"host": "127.0.0.1"}),
    (["--addr", "127.0.0.1"], {"host": "127.0.0.1"}),
    (["-addr=127.0.0.1"], {"host": "127.0.0.1"}),
    (["--net=10.0.0.1"], {"host": "10.0.0.1"}),
    (["-p", "4333"], {"port": 4333}),
    (["--port=4333"], {"port": 4333}),
    (["-p", "-1"], {"port": -1}),
    (["-p=-1"], {"port": -1}),
    (["-p", "0x10"], {"port": 16}),  # Go's flag reads ints with base prefixes too
    (["-n", "a"], {"server_name": "a"}),
    (["--name", "a"], {"server_name": "a"}),
    (["--server_name=a"], {"server_name": "a"}),
    (["-js"], {"jetstream": True}),
    (["--jetstream"], {"jetstream": True}),
    (["-js=false"], {"jetstream": False}),
    (["--jetstream=0"], {"jetstream": False}),
    (["-sd", "/d"], {"store_dir": "/d"}),
    (["-sd=/d"], {"store_dir": "/d"}),
    (["--store_dir", "/d"], {"store_dir": "/d"}),
    (["-m", "8222"], {"http_port": 8222}),
    (["--http_port=-1"], {"http_port": -1}),
    (["-c", "x.conf"], {"config": "x.conf"}),
    (["--config=x.conf"], {"config": "x.conf"}),
    (["-P", "x.pid"], {"pid_file": "x.pid"}),
    (["--pid", "x.pid"], {"pid_file": "x.pid"}),
    (["--user", "u", "--pass", "p"], {"user": "u", "password": "p"}),
    (["-user=u", "-pass=p"], {"user": "u", "password": "p"}),
    (["--auth", "tok"], {"token": "tok"}),
    (["-D"], {"debug": True}),
    (["--debug"], {"debug": True}),
    (["-V"], {"trace": True}),
    (["--trace"], {"trace": True}),
    (["-VV"], {"trace": True}),
    (["-DV"], {"debug": True, "trace": True}),
    (["-DVV"], {"debug": True, "trace": True}),
    (["-DV=false"], {"debug": False, "trace": False}),
    (["-T"], {"logtime": True}),
    (["--logtime=false"], {"logtime": False}),
    (["-l", "x.log"], {"log_file": "x.log"}),
    (["--log=x.log"], {"log_file": "x.log"}),
    (["-v"], {"version": True}),
    (["--version"], {"version": True}),
    (["version"], {"version": True}),  # nats-server's "version" command
    (["-h"], {"help": True}),
    (["--help"], {"help": True}),
    (["-t"], {"check_config": True}),
    (["--max_payload", "2MB"], {"max_payload": 2 * 1024 * 1024}),
    (["--max_payload=1024"], {"max_payload": 1024}),
    (["--", "-p", "1"], {}),  # nothing after "--" is a flag... and nothing else may follow
    ([], {}),
])
def test_every_flag_form(argv, expected):
    if argv[:1] == ["--"]:
        with pytest.raises(UsageError, match='unrecognized command: "-p"'):
            parse_args(argv)
        return
    assert parse_args(argv) == expected


def test_flags_combine_and_the_last_wins():
    got = parse_args(["-a", "127.0.0.1", "-p", "1", "-js", "-sd=/x", "-m", "2", "-DV", "-p", "3"])
    assert got == {"host": "127.0.0.1", "port": 3, "jetstream": True, "store_dir": "/x",
                   "http_port": 2, "debug": True, "trace": True}


@pytest.mark.parametrize("argv,message", [
    (["--bogus"], "flag provided but not defined: -bogus"),
    (["-bogus=1"], "flag provided but not defined: -bogus"),
    (["-p"], "flag needs an argument: -p"),
    (["-p", "abc"], 'invalid value "abc" for flag -p: parse error'),
    (["-m", "1.5"], 'invalid value "1.5" for flag -m: parse error'),
    (["-D=maybe"], 'invalid boolean value "maybe" for -D: parse error'),
    (["--max_payload", "big"], 'invalid value "big" for flag -max_payload: parse error'),
    (["---p"], "bad flag syntax: ---p"),
    (["-=x"], "bad flag syntax: -=x"),
    (["extra"], 'unrecognized command: "extra"'),
    (["-p", "1", "extra"], 'unrecognized command: "extra"'),
    (["--help_tls"], "flag -help_tls is a nats-server option that minijs does not support"),
    (["--gateway", "nats://x:7222"], "flag provided but not defined: -gateway"),
    (["-ms", "8443"], "flag -ms is a nats-server option that minijs does not support"),
])
def test_bad_command_lines(argv, message):
    with pytest.raises(UsageError) as info:
        parse_args(argv)
    assert str(info.value) == message


def test_unknown_flag_exits_1_with_a_message(capsys):
    assert main(["--bogus"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == "minijs: flag provided but not defined: -bogus"


def test_version(capsys):
    assert main(["-v"]) == 0
    out, err = capsys.readouterr()
    assert out == version_line() + "\n" and err == ""
    assert re.fullmatch(rf"minijs: v\d+\.\d+\.\d+\S* \(nats-server v{NATS_SERVER_VERSION} "
                        r"compatible\)", version_line())


def test_help_lists_every_supported_flag(capsys):
    assert main(["-h"]) == 0
    out, _ = capsys.readouterr()
    assert out == USAGE and "Usage: minijs [options]" in out
    for flag in ("-a, --addr, --net", "-p, --port", "-n, --name", "--server_name", "-js",
                 "--jetstream", "-sd, --store_dir", "-m, --http_port", "-c, --config",
                 "-P, --pid", "--user", "--pass", "--auth", "-D, --debug", "-V, --trace",
                 "-DV", "-VV", "-DVV", "-T, --logtime", "-l, --log", "-v, --version",
                 "-h, --help"):
        assert flag in out, flag


# ----------------------------------------------------------------------------- configuration


def test_defaults_are_nats_servers():
    cfg = build_config({})
    assert (cfg.host, cfg.port, cfg.http_port, cfg.jetstream) == ("0.0.0.0", 4222, None, False)


def test_flags_map_to_config():
    cfg = build_config(parse_args([
        "-a", "127.0.0.1", "-p", "-1", "-n", "srv", "-js", "-sd", "/d", "-m", "-1",
        "--user", "u", "--pass", "p", "-DV", "-l", "/l", "-P", "/p", "--max_payload", "1KB"]))
    assert cfg == ServerConfig(host="127.0.0.1", port=RANDOM_PORT, server_name="srv",
                               jetstream=True, store_dir="/d", http_port=RANDOM_PORT, user="u",
                               password="p", debug=True, trace=True, log_file="/l",
                               pid_file="/p", max_payload=1024)
    assert build_config(parse_args(["--auth", "t"])).token == "t"


def test_zero_ports_mean_not_given():
    """As in nats-server: -p 0 keeps the default (or the config file's) and -m 0 adds no
    monitoring."""
    cfg = build_config(parse_args(["-p", "0", "-m", "0"]))
    assert (cfg.port, cfg.http_port) == (4222, None)


def test_config_file_then_flags_override(tmp_path):
    path = tmp_path / "s.conf"
    path.write_text("port: 5000\nserver_name: from_file\nhttp_port: 8000\ndebug: true\n"
                    "jetstream { store_dir: /file }\n")
    cfg = build_config(parse_args(["-c", str(path), "-p", "6000", "-sd", "/flag"]))
    assert (cfg.port, cfg.server_name, cfg.http_port, cfg.debug) == (6000, "from_file", 8000, True)
    assert (cfg.jetstream, cfg.store_dir) == (True, "/flag")
    cfg = build_config(parse_args(["-c", str(path), "-p", "0", "-D=false"]))
    assert (cfg.port, cfg.debug) == (5000, False)


def test_config_errors_exit_1(tmp_path, capsys):
    path = tmp_path / "bad.conf"
    path.write_text("port: 1\nbogus_key: 2\n")
    assert main(["-c", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f'minijs: {path}:2:1: unknown field "bogus_key"\n'
    assert main(["-c", str(tmp_path / "missing.conf")]) == 1
    assert "error opening config file" in capsys.readouterr().err


def test_check_config(tmp_path, capsys):
    path = tmp_path / "ok.conf"
    path.write_text("port: 4333\n")
    assert main(["-t", "-c", str(path)]) == 0
    assert re.fullmatch(rf"minijs: configuration file {re.escape(str(path))} is valid "
                        r"\(sha256:[0-9a-f]{64}\)\n", capsys.readouterr().err)
    assert main(["-t"]) == 1
    assert "must specify [-c, --config]" in capsys.readouterr().err


def test_port_out_of_range_is_refused(capsys):
    assert main(["-p", "70000"]) == 1
    assert 'invalid value "70000" for flag -p: port out of range' in capsys.readouterr().err
    assert main(["-m", "65536"]) == 1
    assert "for flag -m: port out of range" in capsys.readouterr().err


def test_server_name_with_spaces_is_refused(capsys):
    assert main(["-n", "a b"]) == 1
    assert "server name cannot contain spaces" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the process


def minijs_command() -> list[str]:
    """The installed console script when there is one (what users run), else ``-m minijs``."""
    script = Path(sys.executable).parent / "minijs"
    return [str(script)] if script.exists() else [sys.executable, "-m", "minijs"]


class Spawned:
    """A minijs process, with its stderr log read until ``Server is ready``."""

    def __init__(self, argv: list[str], cwd: str | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=cwd)
        self.lines: list[str] = []

    def wait_ready(self, timeout: float = 20.0) -> "Spawned":
        deadline = time.monotonic() + timeout
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if READY in line:
                return self
            if time.monotonic() > deadline:
                break
        self.proc.kill()
        raise AssertionError("minijs did not become ready:\n" + "\n".join(self.lines))

    def logged_port(self, text: str) -> int:
        for line in self.lines:
            match = re.search(re.escape(text) + r" \S+:(\d+)$", line)
            if match:
                return int(match.group(1))
        raise AssertionError(f"no {text!r} line in:\n" + "\n".join(self.lines))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[int, list[str]]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        _, rest = self.proc.communicate(timeout=timeout)
        self.lines.extend(rest.splitlines())
        return self.proc.returncode, self.lines

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def http_get(port: int, path: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.status, r.headers["Content-Type"], r.read()


async def test_spawned_server_serves_monitors_and_exits_cleanly_on_sigterm(tmp_path):
    pid_file = tmp_path / "minijs.pid"
    srv = Spawned([*minijs_command(), "-a", "127.0.0.1", "-p", "-1", "-m", "-1",
                   "-P", str(pid_file)])
    try:
        await asyncio.get_running_loop().run_in_executor(None, srv.wait_ready)
        port = srv.logged_port("Listening for client connections on")
        mport = srv.logged_port("Starting http monitor on")
        assert pid_file.read_text() == str(srv.proc.pid)

        loop = asyncio.get_running_loop()
        status, ctype, body = await loop.run_in_executor(None, http_get, mport, "/healthz")
        assert (status, ctype, body) == (200, "application/json", b'{"status":"ok"}')
        status, _, body = await loop.run_in_executor(None, http_get, mport, "/varz")
        varz = json.loads(body)
        assert status == 200 and varz["port"] == port and varz["http_port"] == mport

        nc = await nats.connect(f"nats://127.0.0.1:{port}")
        sub = await nc.subscribe("greet.*")
        await nc.publish("greet.joe", b"hi")
        msg = await sub.next_msg(timeout=5)
        assert (msg.subject, msg.data) == ("greet.joe", b"hi")
        await nc.subscribe("svc", cb=_echo_upper)
        assert (await nc.request("svc", b"ping", timeout=5)).data == b"PING"
        await nc.close()

        code, lines = await loop.run_in_executor(None, srv.stop)
    finally:
        srv.kill()
    assert code == 0
    tail = [line.split("] ", 2)[-1] for line in lines[-3:]]
    assert tail == ['Trapped "terminated" signal', "Initiating Shutdown...", "Server Exiting.."]


async def _echo_upper(msg) -> None:
    await msg.respond(msg.data.upper())


def test_sigint_and_python_dash_m():
    srv = Spawned([sys.executable, "-m", "minijs", "-a", "127.0.0.1", "-p", "-1"]).wait_ready()
    try:
        code, lines = srv.stop(signal.SIGINT)
    finally:
        srv.kill()
    assert code == 0
    assert any(line.endswith('[INF] Trapped "interrupt" signal') for line in lines)
    assert lines[-1].endswith("[INF] Server Exiting..")


def test_log_lines_are_nats_server_format():
    srv = Spawned([*minijs_command(), "-a", "127.0.0.1", "-p", "-1"]).wait_ready()
    srv.stop()
    pattern = re.compile(
        r"\[(\d+)\] \d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{6} \[(INF|WRN|DBG|TRC)\] .*")
    for line in srv.lines:
        match = pattern.fullmatch(line)
        assert match and int(match.group(1)) == srv.proc.pid, line
    texts = [line.split("] ", 2)[-1] for line in srv.lines]
    assert texts[0] == "Starting nats-server"
    assert texts.index("Server is ready") == texts.index(
        next(t for t in texts if t.startswith("Listening for client connections on "))) + 1


def test_log_file_flag(tmp_path):
    log = tmp_path / "minijs.log"
    proc = subprocess.Popen([*minijs_command(), "-a", "127.0.0.1", "-p", "-1", "-l", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while READY not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == "" and out == ""
    assert log.read_text().splitlines()[-1].endswith("Server Exiting..")


def test_config_file_process(tmp_path):
    conf = tmp_path / "s.conf"
    conf.write_text('listen: 127.0.0.1:-1\nserver_name: "from-conf"\nhttp: 127.0.0.1:-1\n')
    srv = Spawned([*minijs_command(), "-c", str(conf)]).wait_ready()
    try:
        mport = srv.logged_port("Starting http monitor on")
        varz = json.loads(http_get(mport, "/varz")[2])
        assert varz["server_name"] == "from-conf" and varz["host"] == "127.0.0.1"
    finally:
        code, _ = srv.stop()
        srv.kill()
    assert code == 0


def test_port_in_use_is_fatal_with_exit_1():
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        proc = subprocess.run([*minijs_command(), "-a", "127.0.0.1", "-p", str(port)],
                              capture_output=True, text=True, timeout=20)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].endswith(
        f'[FTL] Error listening on port: 127.0.0.1:{port}, "listen tcp 127.0.0.1:{port}: '
        f'bind: address already in use"')


def test_unknown_flag_process_exit_code():
    proc = subprocess.run([*minijs_command(), "--bogus"], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("minijs: flag provided but not defined: -bogus\n")


def test_cli_module_imports_stay_light():
    """``-h``/``-v`` and flag parsing must not pay for the server: cli.py imports only stdlib
    basics at module level and everything else where it is used."""
    import ast

    tree = ast.parse((ROOT / "minijs" / "cli.py").read_text())
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            top.add(node.module or "")
    assert top <= {"__future__", "os", "sys", "typing"}, top


# ----------------------------------------------------------------------------- Docker image


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    out: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        keyword, _, args = current.strip().partition(" ")
        out.append((keyword.upper(), args.strip()))
        current = ""
    return out


def exec_form(args: str) -> list[str]:
    args = args.strip()
    return json.loads(args) if args.startswith("[") else ["/bin/sh", "-c", args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dockerfile_shape():
    instructions = dockerfile_instructions()
    keywords = [k for k, _ in instructions]
    args = dict(instructions)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", args["FROM"])
    assert any(k == "RUN" and "pip install" in a for k, a in instructions)
    assert args["USER"] not in ("root", "0")
    assert args["VOLUME"] == "/data"
    assert args["EXPOSE"].split() == ["4222", "8222"]
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")
    command = exec_form(args["ENTRYPOINT"]) + exec_form(args["CMD"])
    assert command == ["minijs", "--ports_file_dir", "/tmp/minijs",
                       "-js", "-a", "0.0.0.0", "-sd", "/data", "-m", "8222"]
    assert any(k == "COPY" and "docker/constraints.txt" in a for k, a in instructions)
    assert any(k == "RUN" and "pip install -c" in a and "constraints.txt" in a
               for k, a in instructions)
    dockerignore = (ROOT / ".dockerignore").read_text().split()
    assert ".git" in dockerignore and "minijs" not in dockerignore


def test_docker_entrypoint_and_healthcheck_run_as_written(tmp_path):
    """No Docker engine here: run the image's exact command (ports rewritten to free ones, the
    /data volume to a temp dir) and its exact HEALTHCHECK command against it."""
    instructions = dockerfile_instructions()
    args = dict(instructions)
    command = exec_form(args["ENTRYPOINT"]) + exec_form(args["CMD"])
    health = args["HEALTHCHECK"]
    options, _, health_cmd = health.partition("CMD ")
    assert re.search(r"--interval=\d+s", options) and re.search(r"--timeout=\d+s", options)
    health_argv = exec_form(health_cmd)

    port, mport = free_port(), free_port()
    data = tmp_path / "data"
    data.mkdir()
    assert command[0] == "minijs"
    argv = minijs_command() + command[1:]  # the console script pip installs in the image
    argv[argv.index("-m") + 1] = str(mport)
    argv[argv.index("-sd") + 1] = str(data)
    ports_dir = tmp_path / "ports"
    ports_dir.mkdir()
    argv[argv.index("--ports_file_dir") + 1] = str(ports_dir)
    argv += ["-p", str(port)]  # the image uses the default 4222; here a free port

    assert health_argv[0] == "python"
    health_argv[0] = sys.executable  # the image's "python" is the one minijs runs on
    health_env = dict(os.environ, MINIJS_PORTS_DIR=str(ports_dir))  # the image's ENV

    srv = Spawned(argv, cwd=str(data)).wait_ready()
    try:
        assert srv.logged_port("Listening for client connections on") == port
        assert any(line.endswith(f"Listening for client connections on 0.0.0.0:{port}")
                   for line in srv.lines)
        check = subprocess.run(health_argv, capture_output=True, text=True, timeout=10,
                               env=health_env)
        assert check.returncode == 0, check.stderr
        code, lines = srv.stop()  # what `docker stop` sends
    finally:
        srv.kill()
    assert code == 0 and lines[-1].endswith("Server Exiting..")
    # and the health check fails once the server is gone
    check = subprocess.run(health_argv, capture_output=True, text=True, timeout=10,
                           env=health_env)
    assert check.returncode != 0


_GC_PROBE = r"""
import gc, json, os, signal, sys, threading, time
from minijs import cli
from minijs.log import Logger

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
seen = {}
info = Logger.info

def spy(self, msg, *args, **kwargs):
    if msg == "Server is ready":
        seen["collections_before_ready"] = len(collections)
        seen["enabled_at_ready"] = gc.isenabled()
        threading.Thread(target=stop_once_collecting, daemon=True).start()
    return info(self, msg, *args, **kwargs)

def stop_once_collecting():
    deadline = time.monotonic() + 10
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.005)
    seen["enabled_after_ready"] = gc.isenabled()
    seen["frozen_after_ready"] = gc.get_freeze_count()
    seen["tracked_after_ready"] = sum(gc.get_count())
    os.kill(os.getpid(), signal.SIGTERM)

Logger.info = spy
if sys.argv[1] == "off":
    gc.disable()
code = cli.main(sys.argv[2:])
seen["code"] = code
seen["enabled_at_exit"] = gc.isenabled()
print(json.dumps(seen))
"""


@pytest.mark.parametrize("before", ["on", "off"])
def test_garbage_collector_is_off_during_the_start_only(tmp_path, before):
    """A start allocates only what lives on, so ``minijs`` runs it without the cyclic garbage
    collector: no collection before ``Server is ready``, collecting again right after it (as
    the process was before; a process that had it off keeps it off), over none of what the
    start made: that is frozen, so the first collection does not walk it."""
    proc = subprocess.run([sys.executable, "-c", _GC_PROBE, before, "-a", "127.0.0.1", "-p",
                           "-1", "-js", "-sd", str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["code"] == 0
    assert seen["collections_before_ready"] == 0
    assert seen["enabled_at_ready"] is False
    assert seen["enabled_after_ready"] is (before == "on")
    assert seen["enabled_at_exit"] is (before == "on")
    if before == "on":  # the start's objects (tens of thousands) are out of the collector's way
        assert seen["frozen_after_ready"] > 20000, seen
        assert seen["tracked_after_ready"] < 5000, seen
    else:
        assert seen["frozen_after_ready"] == 0, seen


def test_garbage_collector_runs_again_after_a_failed_start():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        probe = ("import gc, sys; from minijs import cli; code = cli.main(sys.argv[1:]); "
                 "print(code, gc.isenabled())")
        proc = subprocess.run([sys.executable, "-c", probe, "-a", "127.0.0.1", "-p", str(port)],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.stdout.split() == ["1", "True"], proc.stderr


def test_signal_traps_call_on_the_loop_then_put_the_previous_handling_back():
    """``cli._trap_signals``: a trapped signal runs its handler as a callback of the loop (not
    inside the signal handler), and untrapping restores what was there before."""
    import os
    import signal
    import threading

    from minijs.cli import _trap_signals

    before = signal.getsignal(signal.SIGUSR1)

    async def main() -> list:
        loop = asyncio.get_running_loop()
        got = asyncio.Event()
        calls: list = []

        def handler(word: str) -> None:
            caller = sys._getframe(1).f_code  # the loop's callback runner, not a handler
            calls.append((word, threading.current_thread() is threading.main_thread(),
                          caller.co_name == "_run" and "asyncio" in caller.co_filename))
            got.set()

        untrap = _trap_signals(loop, ((signal.SIGUSR1, handler, ("reopen",)),))
        assert signal.getsignal(signal.SIGUSR1) is not before
        wakeup = signal.set_wakeup_fd(-1)  # (read, then put back)
        signal.set_wakeup_fd(wakeup)
        assert wakeup != -1  # a signal landing just before select() still wakes the loop
        os.kill(os.getpid(), signal.SIGUSR1)
        await asyncio.wait_for(got.wait(), 10)
        untrap()
        return calls

    assert asyncio.run(main()) == [("reopen", True, True)]
    assert signal.getsignal(signal.SIGUSR1) == before
    assert signal.set_wakeup_fd(-1) == -1


def test_sigterm_right_at_ready_stops_the_server_every_time(tmp_path):
    """SIGTERM sent the moment ``Server is ready`` is logged (what a harness that spawns a
    server per test does at teardown) stops it, however the signal and the loop's wait meet."""
    argv = [sys.executable, "-m", "minijs", "-a", "127.0.0.1", "-p", "-1", "-js", "-sd",
            str(tmp_path / "store")]
    for _ in range(15):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT)
        assert proc.stderr is not None
        for line in proc.stderr:
            if "Server is ready" in line:
                break
        proc.terminate()
        try:
            rest = proc.communicate(timeout=10)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("the server did not stop on SIGTERM") from None
        assert proc.returncode == 0 and "Server Exiting.." in rest, rest


def test_signal_traps_off_the_main_thread_trap_nothing():
    """Only the main thread can set signal handlers: ``cli.main`` run on another thread serves
    without them, as it did with ``add_signal_handler`` (which refuses there)."""
    import signal
    import threading

    from minijs.cli import _trap_signals

    before = signal.getsignal(signal.SIGUSR1)
    outcome: list = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        try:
            untrap = _trap_signals(loop, ((signal.SIGUSR1, print, ()),))
            outcome.append(signal.getsignal(signal.SIGUSR1) is before)
            untrap()
        finally:
            loop.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert outcome == [True]
