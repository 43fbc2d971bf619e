#!/usr/bin/env python3
"""Run the differential fuzzers (conformance/test_protocol_fuzz.py: protocol lines;
conformance/test_js_api_fuzz.py: ``$JS.API`` request bodies) longer than CI does, each input
sent to minijs and to nats-server and the answers compared.

    python scripts/diff_fuzz.py                        # 5,000 inputs each, CI's fixed seed
    python scripts/diff_fuzz.py -n 20000 --seed 7      # other inputs: any seed
    python scripts/diff_fuzz.py --only api --log /tmp/fuzz.log

Without ``--seed`` the inputs are derandomized (CI's sequence, extended); a seed draws a
different sequence, the same every time for that seed. A mismatch prints the input and both
answers.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = {"protocol": "conformance/test_protocol_fuzz.py", "api": "conformance/test_js_api_fuzz.py"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--examples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", choices=sorted(FILES), default=None)
    parser.add_argument("--targets", default="minijs")
    parser.add_argument("--log", default=None, help="file to append every API input and answer to")
    args, rest = parser.parse_known_args()
    if args.examples < 1:
        parser.error("--examples must be at least 1")
    env = dict(os.environ, MINIJS_FUZZ_EXAMPLES=str(args.examples))
    if args.seed is not None:
        env["MINIJS_FUZZ_SEED"] = str(args.seed)
    if args.log:
        env["CONFORMANCE_FUZZ_LOG"] = args.log
    files = [FILES[args.only]] if args.only else list(FILES.values())
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files,
           "--targets", args.targets, *rest]
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
