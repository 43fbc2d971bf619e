"""A server imports only what its configuration needs, when it needs it: a JetStream server
that was only started has not imported the API, the streams, the consumers or the stores
(lmdb, msgpack, sortedcontainers); its first API request brings them in and is answered as
usual. Each case runs in a fresh interpreter, so what this test process imported does not
count. (Startup time itself is measured by scripts/bench_startup.py, never asserted.)"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

DEFERRED = ("minijs.jetstream.api.dispatch", "minijs.jetstream.api.consumers",
            "minijs.jetstream.api.streams", "minijs.jetstream.streams.stream",
            "minijs.jetstream.consumers.consumer", "minijs.jetstream.config.stream", "minijs.jetstream.errors",
            "minijs.jetstream.mirrors", "minijs.jetstream.store.memory",
            "minijs.jetstream.store.lmdbstore", "minijs.confparse", "minijs.confsyntax", "minijs.monitor",
            "minijs.control.plane", "lmdb", "msgpack", "sortedcontainers", "minijs.auth",
            "nacl", "nkeys", "minijs.core.route_transport", "minijs.core.route_conn",
            "minijs.core.routes", "minijs.protocol.routeproto", "minijs.routeconfig",
            "unicodedata", "minijs.core.msgtrace", "minijs.core.permissions",
            "minijs.virtualclock")


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_started_jetstream_server_defers_the_api_and_stores():
    out = _run(f"""
        import asyncio, json, sys, tempfile
        from minijs import Server

        async def main():
            with tempfile.TemporaryDirectory() as store:
                server = Server(port=0, jetstream=True, store_dir=store)
                await server.start()
                loaded = [m for m in {DEFERRED!r} if m in sys.modules]
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                info = await reader.readline()
                body = json.dumps({{"name": "S", "storage": "file"}}).encode()
                writer.write(b'CONNECT {{"verbose":false}}\\r\\nSUB r 1\\r\\n'
                             + b'PUB $JS.API.STREAM.CREATE.S r %d\\r\\n' % len(body)
                             + body + b'\\r\\nPING\\r\\n')
                await writer.drain()
                while True:
                    line = await reader.readline()
                    if line.startswith(b"MSG "):
                        body = json.loads(await reader.readline())
                        break
                writer.close()
                await server.stop()
                print(json.dumps({{"before": loaded, "info": info[:5].decode(),
                                  "created": body["config"]["name"],
                                  "after": [m for m in ("minijs.jetstream.api.dispatch", "lmdb")
                                            if m in sys.modules]}}))

        asyncio.run(main())
    """)
    import json

    result = json.loads(out)
    assert result["before"] == []
    assert result["info"] == "INFO "
    assert result["created"] == "S"
    assert result["after"] == ["minijs.jetstream.api.dispatch", "lmdb"]


def test_version_and_help_do_not_import_the_server():
    out = _run("""
        import contextlib, io, sys
        from minijs.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["-v"]) == 0
            assert main(["-h"]) == 0
        print(sorted(m for m in ("asyncio", "minijs.server", "minijs.core.router")
                     if m in sys.modules))
    """)
    assert out.strip() == "[]"


#: Modules the ``minijs -js -sd DIR`` command (what harnesses spawn) has no use for before it
#: is ready: the types of users and accounts (none configured), tempfile and shutil (the store
#: directory exists; nothing is deleted), pathlib (no stream to recover), ``random`` (no queue
#: group served, nothing named yet), the ``json`` package (INFO and CONNECT go through its C
#: functions directly), ``dataclasses`` (no configuration class inspected), the compressors of
#: message-trace events, the monitor, the config-file parser, and the JetStream API, streams
#: and stores.
CLI_DEFERRED = ("minijs.authconfig", "tempfile", "shutil", "pathlib", "urllib.parse", "json",
                "random", "dataclasses", "ipaddress", "gzip", "bz2", "lzma", "minijs.protocol.snappy") + DEFERRED


@pytest.mark.parametrize("monitor", [False, True], ids=["plain", "with -m"])
def test_cli_jetstream_server_is_ready_without_what_it_does_not_serve(tmp_path, monitor):
    """The command itself (``cli.main``), in an interpreter started with ``-S`` so the modules
    ``site`` imports (an editable install's import hook pulls in pathlib, for one) cannot hide
    ours; the store directory already exists, as on a harness's second start. With ``-m`` the
    monitor is there, but what only ``/accountz`` uses (account exports and imports) is not."""
    deferred = CLI_DEFERRED + ("minijs.core.imports",)
    flags = ["-js", "-a", "127.0.0.1", "-p", "-1"]
    if monitor:
        deferred = tuple(m for m in deferred
                         if m not in ("minijs.monitor", "json", "dataclasses"))
        flags += ["-m", "-1"]
    store = tmp_path / "store"
    (store / "jetstream").mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = textwrap.dedent(f"""
        import os, signal, sys
        from minijs import cli, log

        said = log.Logger.info

        def info(self, text):
            said(self, text)
            if text == "Server is ready":
                print(sorted(m for m in {deferred!r} if m in sys.modules))
                os.kill(os.getpid(), signal.SIGTERM)

        log.Logger.info = info
        sys.exit(cli.main({flags!r} + ["-sd", {str(store)!r}]))
    """)
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Server Exiting.." in proc.stderr
    assert proc.stdout.strip() == "[]"
    assert ("Starting http monitor" in proc.stderr) == monitor
    assert os.listdir(store / "jetstream") == []  # the writable probe left nothing behind


def test_users_and_accounts_types_load_on_first_use():
    out = _run("""
        import sys
        import minijs.config as config
        before = "minijs.authconfig" in sys.modules
        from minijs.config import Export, User
        from minijs import authconfig
        print(before, User is authconfig.User, config.Export is Export,
              User("u").account == config.GLOBAL_ACCOUNT, "Mapping" in dir(config),
              config.DEFAULT_RESPONSE_THRESHOLD)
    """)
    assert out.split() == ["False", "True", "True", "True", "True", "120.0"]


LISTENER_MODULES = ("minijs.core.tls", "minijs.core.websocket", "minijs.tlsconfig",
                    "minijs.wsconfig", "minijs.listenconf", "wsproto", "h11", "cryptography")


def test_plain_server_does_not_load_tls_or_websocket():
    """TLS and websocket code (and wsproto, h11, cryptography) load only for a server
    configured with them."""
    out = _run(f"""
        import asyncio, json, sys
        from minijs import Server
        from minijs.cli import build_config

        async def main():
            server = Server(build_config({{"jetstream": True, "port": -1}}))
            await server.start()
            plain = [m for m in {LISTENER_MODULES!r} if m in sys.modules]
            await server.stop()
            from minijs.wsconfig import WebsocketOptions
            ws = Server(port=0, websocket=WebsocketOptions(host="127.0.0.1", port=-1,
                                                           no_tls=True))
            await ws.start()
            loaded = [m for m in ("wsproto", "h11", "minijs.core.websocket") if m in sys.modules]
            await ws.stop()
            print(json.dumps({{"plain": plain, "websocket": loaded}}))

        asyncio.run(main())
    """)
    import json

    result = json.loads(out)
    assert result["plain"] == []
    assert result["websocket"] == ["wsproto", "h11", "minijs.core.websocket"]
