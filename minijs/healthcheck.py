"""``python -m minijs.healthcheck [PORTS_DIR]``: is the server of this container healthy?

The server writes its ports file (``--ports_file_dir``) with the client URL and, when
monitoring is on, the monitoring URL. This check reads the newest ports file in ``PORTS_DIR``
(default ``$MINIJS_PORTS_DIR`` or ``/tmp/minijs``): with a monitoring URL it asks ``/healthz``
(so it follows whatever ``-m`` said), otherwise it connects to the client port and expects the
server's ``INFO``. Exit status 0 when healthy, 1 otherwise (with the reason on stderr), as
Docker's HEALTHCHECK reads it.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlparse


def check(ports_dir: str, timeout: float = 2.0) -> str | None:
    """None when healthy, else the reason."""
    files = sorted(Path(ports_dir).glob("*.ports"), key=lambda p: p.stat().st_mtime)
    if not files:
        return f"no ports file in {ports_dir} (is minijs running with --ports_file_dir?)"
    try:
        info = json.loads(files[-1].read_text())
    except (OSError, ValueError) as exc:
        return f"unreadable ports file {files[-1]}: {exc}"
    monitoring = info.get("monitoring") or []
    if monitoring:
        url = monitoring[0].rstrip("/") + "/healthz"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                return None if resp.status == 200 else f"{url} answered {resp.status}"
        except OSError as exc:
            return f"{url}: {exc}"
    nats = info.get("nats") or []
    if not nats:
        return f"ports file {files[-1]} names no client URL"
    u = urlparse(nats[0])
    try:
        with socket.create_connection((u.hostname, u.port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            if not sock.recv(4096).startswith(b"INFO "):
                return f"{nats[0]} sent no INFO"
    except OSError as exc:
        return f"{nats[0]}: {exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    ports_dir = args[0] if args else os.environ.get("MINIJS_PORTS_DIR", "/tmp/minijs")
    problem = check(ports_dir)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
