#!/usr/bin/env python3
"""Run the stateful model test (conformance/test_js_model.py) longer than CI does.

    python scripts/model_fuzz.py                      # 50 examples of 60 steps, minijs
    python scripts/model_fuzz.py -n 200 -s 100 --log /tmp/model.log
    python scripts/model_fuzz.py --targets nats-server  # nats-server against itself

The examples are derandomized, so a given ``-n``/``-s`` always runs the same sequences; a
failure prints the steps that led to it (the servers' answers are in ``--log``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--examples", type=int, default=50)
    parser.add_argument("-s", "--steps", type=int, default=60)
    parser.add_argument("--targets", default="minijs")
    parser.add_argument("--log", default=None, help="file to append every step and answer to")
    args, rest = parser.parse_known_args()
    env = dict(os.environ, MINIJS_MODEL_EXAMPLES=str(args.examples),
               MINIJS_MODEL_STEPS=str(args.steps))
    if args.log:
        env["MINIJS_MODEL_LOG"] = args.log
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "conformance/test_js_model.py", "--targets", args.targets, *rest]
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
