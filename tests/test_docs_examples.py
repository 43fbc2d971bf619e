"""Every code example of the README and of the documentation site (docs/) runs, or says why
not.

* ``python`` blocks run as they are: scripts with the interpreter, blocks that define
  ``test_*`` functions under pytest (with the minijs plugin);
* ``json`` blocks parse, and a preload document is applied to a server;
* ``conf`` blocks parse with minijs's config parser; ``toml`` blocks with tomllib;
* a shell block (``bash``, ``sh``, ``console``) is preceded by ``<!-- test: NAME -->``, run by
  the test of that name below, or by ``<!-- not run: REASON -->`` naming why and what tests
  the same thing instead (installs, long benchmarks, servers that run until stopped);
* ``text`` and untagged blocks are output and diagrams, not code.

The config page's key tables are checked against the parser, and the README stays short.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from docexamples import run_python_example

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: Pages whose examples their own test runs (not run twice).
RUN_ELSEWHERE = {"nkeys-jwt.md": "tests/test_docs_auth_reload.py",
                 "reload.md": "tests/test_docs_auth_reload.py",
                 "time.md": "tests/test_docs_time.py",
                 "clusters.md": "tests/test_docs_clusters.py",
                 "tls.md": "tests/test_docs_listeners.py",
                 "websocket.md": "tests/test_docs_listeners.py"}
PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md")
                                      if p.relative_to(DOCS).as_posix() not in RUN_ELSEWHERE)
SHELL = ("bash", "sh", "shell", "console")
KNOWN = ("python", "json", "conf", "toml", "text", "") + SHELL
_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*(test|not run):\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: tuple[str, str] | None  # ("test", name) or ("not run", reason)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    out: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        prev = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()),
                    "")
        mm = _MARKER.match(prev)
        out.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                         (mm.group(1), mm.group(2)) if mm else None))
        i = j + 1
    return out


ALL = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL if b.lang == "python"]


def by(lang: str) -> list[Block]:
    return [b for b in ALL if b.lang == lang]


def shell_block(name: str) -> Block:
    [block] = [b for b in ALL if b.marker == ("test", name)]
    return block


def test_every_block_runs_or_says_why() -> None:
    assert len(PYTHON) >= 25
    problems = []
    for b in ALL:
        if b.lang not in KNOWN:
            problems.append(f"{b.id}: unknown language {b.lang!r} (nothing would run it)")
        elif b.lang in SHELL:
            if b.marker is None:
                problems.append(f"{b.id}: a shell block needs <!-- test: NAME --> or "
                                "<!-- not run: REASON --> on the line before it")
            elif b.marker[0] == "test" and b.marker[1] not in SHELL_TESTS:
                problems.append(f"{b.id}: no test named {b.marker[1]!r}")
            elif b.marker[0] == "not run" and len(b.marker[1]) < 20:
                problems.append(f"{b.id}: say why it is not run, and what tests it instead")
        elif b.marker is not None and b.marker[0] == "not run":
            problems.append(f"{b.id}: {b.lang or 'untagged'} blocks are always checked")
    assert not problems, "\n".join(problems)


def _id(b: Block) -> str:
    return b.id


@pytest.mark.parametrize("block", PYTHON, ids=_id)
def test_python_example(block: Block, tmp_path: Path) -> None:
    code = block.code
    if "pyspark" in code:
        pytest.importorskip("pyspark", reason="the Spark example needs the 'spark' extra")
    run_python_example(code, tmp_path)


@pytest.mark.parametrize("block", by("json"), ids=_id)
def test_json_example(block: Block) -> None:
    doc = json.loads(block.code)
    from minijs.preload import SECTIONS

    if isinstance(doc, dict) and doc and set(doc) <= set(SECTIONS):
        from minijs import Server

        async def apply() -> None:  # a preload document: it must preload
            async with Server(port=0, jetstream=True, preload=doc) as server:
                assert server.streams()

        asyncio.run(apply())


@pytest.mark.parametrize("block", by("conf"), ids=_id)
def test_conf_example(block: Block) -> None:
    from minijs.confparse import parse_config

    parse_config(block.code)


@pytest.mark.parametrize("block", by("toml"), ids=_id)
def test_toml_example(block: Block) -> None:
    tomllib.loads(block.code)


# ---------------------------------------------------------------------- shell blocks


def _start_minijs(*args: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-m", "minijs", *args, "-p", "-1", "-a",
                             "127.0.0.1"], stderr=subprocess.PIPE, text=True)
    port = None
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"Listening for client connections on \S+:(\d+)", line)
        port = int(m.group(1)) if m else port
        if "Server is ready" in line:
            break
    assert port is not None
    return proc, port


def test_control_plane_shell_lines() -> None:
    """The `minijs -js --control --clock virtual` line starts a server that answers the
    `nats req` lines (sent here from nats-py: the nats CLI is not packaged for CI)."""
    lines = [ln for ln in shell_block("control-plane-shell").code.splitlines() if ln.strip()]
    start = lines[0].rstrip(" &").split()
    assert start[:4] == ["minijs", "-js", "--control", "--clock"]
    requests = [re.match(r"nats req '([^']+)' '(.*)'$", ln).groups() for ln in lines[1:]]
    proc, port = _start_minijs(*start[1:])
    try:
        async def run() -> list[dict]:
            import nats

            nc = await nats.connect(f"nats://127.0.0.1:{port}")
            js = nc.jetstream()
            await js.add_stream(name="ORDERS", subjects=["orders.>"])
            await js.add_consumer("ORDERS", durable_name="worker")
            out = []
            for subject, body in requests:
                out.append(json.loads((await nc.request(subject, body.encode())).data))
            await nc.close()
            return out

        advance, fault = asyncio.run(run())
        assert advance["virtual"] is True and "fired" in advance
        assert fault["rule"]["status"] == 408
    finally:
        proc.terminate()
        proc.wait(10)


def test_manage_shell_lines(tmp_path: Path) -> None:
    """The management commands, run by bash as written, against a minijs on a free port (the
    block's first line starts one on 4222; here the URL line names the free port instead)."""
    lines = shell_block("manage-shell").code.splitlines()
    assert lines[0].startswith("minijs -js &")
    assert lines[1].startswith("URL=nats://127.0.0.1:4222")
    proc, port = _start_minijs("-js")
    try:
        script = "set -eu\n" + f"URL=nats://127.0.0.1:{port}\n" + "\n".join(lines[2:]) + "\n"
        bindir = str(Path(sys.executable).parent)
        env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}")
        run = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "hello" in run.stdout and "fast" in run.stdout
    finally:
        proc.terminate()
        proc.wait(10)


SHELL_TESTS = {"control-plane-shell": test_control_plane_shell_lines,
               "manage-shell": test_manage_shell_lines}


# ---------------------------------------------------------------------- pages


def _keys(section: str) -> set[str]:
    text = (DOCS / "config.md").read_text()
    part = text.split(section, 1)[1].split("\n#", 1)[0]
    found = set()
    for row in part.splitlines():
        if row.startswith("| `"):
            first = row.split("|")[1]
            found |= set(re.findall(r"`([a-z_]+)`", first))
    return found


def test_config_page_tables_match_the_parser() -> None:
    from minijs.confparse import _UNSUPPORTED, ConfigError, parse_config

    supported, refused = _keys("### Supported"), _keys("### Refused by name")
    assert supported and refused and not supported & refused
    page = (DOCS / "config.md").read_text()
    also = set(re.findall(r"`([a-z_]+)`", page.split("minijs also refuses by name", 1)[1]
                          .split("\n\n", 1)[0]))
    assert refused | also == _UNSUPPORTED[""], ("docs/config.md's refused keys differ from "
                                                "the parser's: update the page")
    for key in supported:
        try:
            parse_config(f"{key}: 1\n")
        except ConfigError as exc:  # a refused value is fine; a refused or unknown key is not
            assert "unknown field" not in str(exc), f"{key}: {exc}"
            assert f'"{key}" is a nats-server setting' not in str(exc), f"{key}: {exc}"


def test_readme_is_short_and_links_the_site() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 250
    for page in re.findall(r"\(docs/([\w/-]+\.md)(?:#[\w-]+)?\)", text):
        assert (DOCS / page).exists(), page
