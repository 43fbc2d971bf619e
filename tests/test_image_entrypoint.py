"""The Docker image's entrypoint, checked the way the image runs it (fresh virtualenv with the
pinned constraints, an unprivileged user, the data volume, the HEALTHCHECK command), by
scripts/check_image_entrypoint.py; and the healthcheck's own answers."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from minijs import ServerThread
from minijs.healthcheck import check

ROOT = Path(__file__).resolve().parent.parent


def test_image_entrypoint_runs_as_the_image_does():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_image_entrypoint.py")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "HEALTHCHECK passes" in proc.stdout and "SIGTERM: exit 0" in proc.stdout


def test_healthcheck_follows_the_ports_file(tmp_path):
    assert "no ports file" in check(str(tmp_path))
    with ServerThread(ports_file_dir=str(tmp_path)) as srv:     # no monitoring: client port
        assert check(str(tmp_path)) is None
    assert "no ports file" in check(str(tmp_path))               # removed at shutdown
    with ServerThread(ports_file_dir=str(tmp_path), http_port=-1):  # monitoring: /healthz
        (ports,) = tmp_path.glob("*.ports")
        assert "monitoring" in json.loads(ports.read_text())
        assert check(str(tmp_path)) is None
    (tmp_path / "stale.ports").write_text('{"nats":["nats://127.0.0.1:1"]}')
    assert "nats://127.0.0.1:1" in check(str(tmp_path))
