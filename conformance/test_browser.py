"""A real browser on the websocket listener, on both servers: headless Chromium (Debian's
``chromium``, driven by Playwright, which never downloads a browser of its own here) loads a
page that uses nats.js's websocket client (the ``nats.ws`` bundle, installed with npm into
``conformance/browser/node_modules`` on first use) to publish and subscribe (headers, a 70 KB
message, a message from a Python client, request/reply) and to use a JetStream stream (add,
publish with acks, a durable pull consumer fetched and acked), and reports what it saw.

Needs ``/usr/bin/chromium`` (``apt-get install chromium``; ``.ci/run`` installs it), Node.js
with npm, and the ``playwright`` Python package (in the ``test`` extra). Missing pieces fail
the case with the command that fixes them; nothing is skipped.
"""
from __future__ import annotations

import fcntl
import functools
import http.server
import json
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import chromium
from conformance.helpers import SpawnFn
from conformance.jshelpers import JsClient
from conformance.rawclient import RawClient
from conformance.servers import ServerProcess

BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def _install_nats_ws() -> None:
    """``npm ci`` in conformance/browser when the pinned nats.ws is not installed there."""
    manifest = BROWSER_DIR / "node_modules" / "nats.ws" / "package.json"
    wanted = json.loads((BROWSER_DIR / "package.json").read_text())["dependencies"]["nats.ws"]

    def installed() -> bool:
        return manifest.exists() and json.loads(manifest.read_text())["version"] == wanted

    if installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: install Node.js with npm (apt-get install nodejs npm)")
    with open(BROWSER_DIR / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed():
            proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=BROWSER_DIR,
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                pytest.fail(f"npm ci in {BROWSER_DIR} failed ({proc.returncode}):\n"
                            f"{proc.stdout}\n{proc.stderr}")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    """The page and the nats.ws bundle, served over HTTP on loopback."""
    _install_nats_ws()
    handler = functools.partial(_QuietHandler, directory=str(BROWSER_DIR))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/page.html"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _run_page(url: str, timeout: float = 60.0) -> dict:
    """Open ``url`` in headless Chromium; return the result the page reports."""
    why = chromium.missing()
    if why:
        pytest.fail(why)
    with chromium.launched() as browser:
        page = browser.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.goto(url)
        page.wait_for_function("window.__result !== undefined", timeout=timeout * 1000)
        assert not problems, problems
        return page.evaluate("window.__result")


def _answer_ready(srv: ServerProcess, errors: list[BaseException]) -> RawClient:
    """A Python client that answers the page's ``browser.ready`` with a message on
    ``browser.inbound`` (from a thread, while the page runs)."""
    client = RawClient.connect(srv.host, srv.port)
    client.handshake()
    client.send(b"SUB browser.ready 1\r\nPING\r\n")
    client.expect(b"PONG\r\n")

    def answer() -> None:
        try:
            client.read_until(b"MSG browser.ready 1 5\r\nready\r\n", timeout=60)
            client.send(b"PUB browser.inbound 17\r\nhello from python\r\n")
        except BaseException as exc:  # reported by the case
            errors.append(exc)

    threading.Thread(target=answer, daemon=True).start()
    return client


def test_browser_pub_sub_and_jetstream(target: str, spawn: SpawnFn, page_url: str) -> None:
    srv: ServerProcess = spawn(config="websocket {\n  host: 127.0.0.1\n  port: -1\n"
                                      "  no_tls: true\n}\n", jetstream=True)
    stream = "WEB" + uuid.uuid4().hex[:8].upper()
    errors: list[BaseException] = []
    python_client = _answer_ready(srv, errors)
    try:
        result = _run_page(f"{page_url}?ws=ws://127.0.0.1:{srv.ws_port}&stream={stream}")
    finally:
        python_client.close()
    assert not errors, errors
    assert result.get("ok"), result.get("error")
    assert result["server_version"] == "2.15.1"
    assert result["core"] == [
        {"len": 22, "header": "chromium", "text": "hello from the browser"},
        {"len": 70000, "header": None, "text": None}]
    assert result["inbound"] == "hello from python"
    assert result["reply"] == "re:ping"
    assert result["acks"] == [{"stream": stream, "seq": i} for i in (1, 2, 3)]
    assert result["fetched"] == [{"subject": f"{stream}.orders", "seq": i,
                                  "data": f"order {i}"} for i in (1, 2, 3)]
    assert result["consumer"] == {"delivered": 3, "ack_floor": 3, "pending": 0,
                                  "ack_pending": 0}
    assert result["stream"] == {"messages": 3, "last_seq": 3}
    # the server's own view, from a Python client on the NATS port
    client = JsClient.connect(srv)
    try:
        info = client.request(f"$JS.API.STREAM.INFO.{stream}", {})
    finally:
        client.close()
    assert json.loads(info.data)["state"]["messages"] == 3
