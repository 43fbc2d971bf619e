"""Startup never fails spuriously: the `minijs` command started back to back, as client test
harnesses start servers (-js, random ports, --ports_file_dir, a shared store directory whose
previous server is still shutting down), comes up every time. `scripts/startup_soak.py` runs
the same loop with any count (1,000 by default)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "startup_soak.py"


def _soak_module():
    spec = importlib.util.spec_from_file_location("startup_soak", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_back_to_back_starts_all_come_up():
    result = _soak_module().soak(100)
    assert result.starts == 100
    assert result.failures == []
