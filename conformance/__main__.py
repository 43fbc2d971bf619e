"""``python -m conformance [pytest args]``: run the conformance suite with pytest."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
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
                *args,
            ]
        )
    )


if __name__ == "__main__":
    sys.exit(main())
