"""Check the Docker image's entrypoint the way the image runs it, without Docker.

Reads the Dockerfile (ENTRYPOINT, CMD, ENV, HEALTHCHECK), then in a clean environment:

1. a fresh virtualenv from the system Python, with minijs installed from this checkout and its
   runtime dependencies pinned by ``docker/constraints.txt`` (as the image's ``pip install``);
2. an unprivileged user (``nobody``, when run as root) owning a data directory that stands for
   the ``/data`` volume and the ports directory;
3. ENTRYPOINT + CMD as written, with ``/data`` and ``/tmp/minijs`` mapped to those directories
   and the fixed ports 4222/8222 mapped to free ones;
4. checks: ``Server is ready``; the HEALTHCHECK command passes; a client stores a message in a
   file stream under the data directory; SIGTERM ends it with status 0 and removes the ports file.

    python scripts/check_image_entrypoint.py        # prints each step; exit 1 on a failure
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class CheckFailed(Exception):
    pass


def dockerfile() -> dict[str, object]:
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)
    out: dict[str, object] = {"env": {}}
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("ENTRYPOINT "):
            out["entrypoint"] = json.loads(line[len("ENTRYPOINT "):])
        elif line.startswith("CMD "):
            out["cmd"] = json.loads(line[len("CMD "):])
        elif line.startswith("HEALTHCHECK "):
            out["healthcheck"] = json.loads(line.split(" CMD ", 1)[1])
        elif line.startswith("ENV "):
            for key, value in re.findall(r"(\w+)=(\S+)", line[4:]):
                out["env"][key] = value  # type: ignore[index]
    for key in ("entrypoint", "cmd", "healthcheck"):
        if key not in out:
            raise CheckFailed(f"the Dockerfile has no {key.upper()}")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def step(text: str) -> None:
    print(f"- {text}", flush=True)


def check() -> None:
    spec = dockerfile()
    base_python = shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable
    work = Path(tempfile.mkdtemp(prefix="minijs-image-"))
    os.chmod(work, 0o755)
    try:
        venv = work / "venv"
        step(f"virtualenv from {base_python}")
        subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        step("pip install -c docker/constraints.txt . (as the image)")
        subprocess.run(pip + ["install", "-c", str(ROOT / "docker" / "constraints.txt"),
                              str(ROOT)], check=True)
        data, ports_dir = work / "data", work / "ports"
        data.mkdir()
        ports_dir.mkdir()
        as_user: list[str] = []
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for d in (data, ports_dir):
                os.chown(d, nobody.pw_uid, nobody.pw_gid)
            # setpriv execs the command itself (as the image's exec-form ENTRYPOINT is PID 1),
            # so SIGTERM reaches minijs, not a wrapper.
            setpriv = shutil.which("setpriv") or shutil.which("setpriv", path="/usr/bin:/bin")
            if setpriv is None:
                raise CheckFailed("setpriv (util-linux) is needed to run as an unprivileged user")
            as_user = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                       "--clear-groups", "--"]
            step("running as the unprivileged user nobody")
        client, monitor = free_port(), free_port()

        def mapped(args: list[str]) -> list[str]:
            out = []
            for a in args:
                a = a.replace("/tmp/minijs", str(ports_dir)).replace("/data", str(data))
                out.append({"8222": str(monitor)}.get(a, a))
            return out

        argv = mapped(list(spec["entrypoint"]) + list(spec["cmd"]))  # type: ignore[arg-type]
        argv[0] = str(venv / "bin" / argv[0])
        argv += ["-p", str(client)]
        env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(data)}
        for key, value in spec["env"].items():  # type: ignore[union-attr]
            env[key] = value.replace("/tmp/minijs", str(ports_dir))
        step("entrypoint: " + " ".join(argv))
        proc = subprocess.Popen(as_user + argv, cwd=data, env=env, stdin=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            lines = []
            deadline = time.monotonic() + 30
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if "Server is ready" in line or time.monotonic() > deadline:
                    break
            if not any("Server is ready" in ln for ln in lines):
                raise CheckFailed("the server did not start:\n" + "".join(lines))
            step("Server is ready")
            hc = list(spec["healthcheck"])  # type: ignore[arg-type]
            hc[0] = str(venv / "bin" / hc[0])
            res = subprocess.run(as_user + hc, env=env, capture_output=True, text=True,
                                 timeout=10)
            if res.returncode != 0:
                raise CheckFailed(f"HEALTHCHECK failed: {res.stderr.strip()}")
            step("HEALTHCHECK passes (" + " ".join(spec["healthcheck"]) + ")")  # type: ignore
            _store_a_message(client)
            if not any(data.rglob("data.mdb")):
                raise CheckFailed(f"no file stream was written under the data volume {data}")
            step("a file stream was stored under the data volume")
            proc.send_signal(signal.SIGTERM)
            if proc.wait(15) != 0:
                raise CheckFailed(f"SIGTERM: exit status {proc.returncode}")
            if list(ports_dir.glob("*.ports")):
                raise CheckFailed("the ports file was left behind")
            step("SIGTERM: exit 0, ports file removed")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _store_a_message(port: int) -> None:
    """A JetStream file stream and one acked publish, over a raw socket (no client library)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        f = sock.makefile("rb")
        f.readline()  # INFO
        cfg = json.dumps({"name": "IMG", "subjects": ["img.>"], "storage": "file"}).encode()
        sock.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nSUB _r 1\r\n'
                     b"PUB $JS.API.STREAM.CREATE.IMG _r %d\r\n%s\r\n" % (len(cfg), cfg)
                     + b"PUB img.a _r 1\r\nx\r\nPING\r\n")
        acks = []
        while len(acks) < 2:
            line = f.readline()
            if not line:
                raise CheckFailed("the connection closed before the pub ack")
            if line.startswith(b"MSG "):
                size = int(line.split()[-1])
                acks.append(json.loads(f.read(size + 2)[:size]))
        if acks[1] != {"stream": "IMG", "seq": 1}:
            raise CheckFailed(f"unexpected replies {acks}")


def main() -> int:
    try:
        check()
    except (CheckFailed, subprocess.CalledProcessError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print("image entrypoint: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
