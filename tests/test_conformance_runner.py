"""The conformance runner's options and report files, in process (tests/test_installed.py runs
it from a real install)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance import __main__ as runner
from conformance.report import ConformanceReport, url_report_stem


def test_options_become_pytest_arguments(tmp_path: Path) -> None:
    argv = ["--url", "nats://h:1", "--junit", "out.xml", "--report", str(tmp_path), "-k", "kv",
            "-x", "-v", "--", "--maxfail=2", "-rs"]
    opts = runner.parse(runner.build_parser("minijs conformance"), argv)
    args = runner.pytest_arguments(opts)
    assert args[0] == str(runner.HERE)
    assert ["-c", str(runner.HERE / "runner.ini")] == args[1:3]
    assert "no:minijs" in args
    assert ["--url", "nats://h:1"] == args[args.index("--url"):args.index("--url") + 2]
    assert f"--junitxml={Path('out.xml').resolve()}" in args
    assert args[args.index("--report-dir") + 1] == str(tmp_path.resolve())
    assert args[-2:] == ["--maxfail=2", "-rs"]
    assert "-x" in args and "-v" in args


def test_unknown_option_is_refused_with_the_short_usage(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        runner.main(["--junitxml", "x.xml"], prog="minijs conformance")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: minijs conformance")
    assert "pytest's own options go after --" in err


def test_missing_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    real = runner.importlib.util.find_spec
    monkeypatch.setattr(runner.importlib.util, "find_spec",
                        lambda name: None if name == "hypothesis" else real(name))
    assert runner.main(["--url", "nats://127.0.0.1:1"], prog="minijs conformance") == 2
    err = capsys.readouterr().err
    assert "needs hypothesis" in err and "minijs[conformance]" in err


def test_url_report_never_replaces_another(tmp_path: Path) -> None:
    started = 1_800_000_000.0
    stem = url_report_stem("nats://127.0.0.1:4222", started)
    assert stem == "report-127.0.0.1-4222-20270115T080000Z"
    assert url_report_stem("tls://[::1]:7", started) == "report-__1-7-20270115T080000Z"
    (tmp_path / f"{stem}.md").write_text("first")
    (tmp_path / f"{stem}-2.json").write_text("someone else's json")
    report = ConformanceReport(config=None, targets=["url"],  # type: ignore[arg-type]
                               url="nats://127.0.0.1:4222", started=started,
                               report_dir=tmp_path)
    path = report._save("# second", "{}")
    assert path.name == f"{stem}-3.md"
    assert (tmp_path / f"{stem}-3.json").read_text() == "{}"
    assert (tmp_path / f"{stem}.md").read_text() == "first"
    assert (tmp_path / f"{stem}-2.json").read_text() == "someone else's json"
    assert not (tmp_path / f"{stem}-2.md").exists()


def test_local_run_keeps_the_report_md_name(tmp_path: Path) -> None:
    report = ConformanceReport(config=None, targets=["minijs"],  # type: ignore[arg-type]
                               report_dir=tmp_path)
    assert report._save("# one", "{}") == tmp_path / "report.md"
    assert report._save("# two", "{}") == tmp_path / "report.md"
    assert (tmp_path / "report.md").read_text() == "# two"


def test_minijs_conformance_list(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "minijs", "conformance", "--list", "-k",
                           "test_info_reflects_config", "--targets", "minijs"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "test_info.py::test_info_reflects_config[minijs]" in proc.stdout
    assert not (tmp_path / "conformance-report").exists()  # a listing writes no report
