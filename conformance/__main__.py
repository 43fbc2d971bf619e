"""``python -m conformance [options] [pytest args]``: run the conformance suite with pytest.

Options of the runner (everything else goes to pytest):

* ``--url nats://HOST:PORT``: check that server only (cases that need a differently configured
  server are skipped, each with its reason);
* ``--targets minijs,nats-server``: the local targets to spawn (default: both);
* ``--junit-xml PATH``: a JUnit XML report for CI systems;
* ``--list``: list the cases and exit.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--list" in args:
        args.remove("--list")
        extra += ["--collect-only", "-q"]
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--junit-xml" and i + 1 < len(args):
            out.append(f"--junitxml={args[i + 1]}")
            i += 2
            continue
        if arg.startswith("--junit-xml="):
            out.append("--junitxml=" + arg.split("=", 1)[1])
        else:
            out.append(arg)
        i += 1
    here = Path(__file__).resolve().parent
    return int(
        pytest.main(
            [
                str(here),
                "-o", "asyncio_mode=auto",
                "-o", "asyncio_default_fixture_loop_scope=function",
                "-p", "no:cacheprovider",
                # Independence: the suite must not depend on the minijs package's own plugin.
                "-p", "no:minijs",
                *extra,
                *out,
            ]
        )
    )


if __name__ == "__main__":
    sys.exit(main())
