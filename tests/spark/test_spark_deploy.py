"""The source as deployed: found by PySpark without ``register``, on a cluster whose executors
are separate processes from the driver, and through Spark Connect.

Each case starts Spark in a process of its own (tests/spark/deploy_job.py), since a process
holds one SparkContext, and runs the same job against every target (minijs and nats-server):
batch write, batch read, read -> transform -> write, an ``availableNow`` streaming pipeline,
and an unreachable server failing fast.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("deploy_job.py")
JOB_TIMEOUT = 900  # seconds: a bound on a hang, not an expectation


def run_job(mode: str, urls: dict[str, str], tmp_path: Path, **env: str) -> dict[str, Any]:
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", **env}
    environ.pop("PYSPARK_DRIVER_PYTHON", None)
    proc = subprocess.run(
        [sys.executable, str(JOB), mode, json.dumps(urls)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"{mode} job failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    )
    result = json.loads(lines[-1][len("RESULT ") :])
    assert sorted(j["target"] for j in result["jobs"]) == sorted(urls)
    assert all(j["rows"] == 300 for j in result["jobs"])
    assert "fix the 'servers' option" in result["unreachable"]
    return result


def _discoverable(tmp_path: Path) -> dict[str, str]:
    """PYTHONPATH for Spark's Python workers such that ``pyspark_minijs`` is a top-level module
    on a path entry of its own, as a regular install (``pip install 'minijs[spark]'``) puts it
    in site-packages: what PySpark's scan (``pkgutil.iter_modules``) lists. (The editable
    install is a path entry too, the checkout; the test does not rely on that.)"""
    import pyspark_minijs

    package = Path(pyspark_minijs.__file__).parent
    site_dirs = {Path(p).resolve() for p in site.getsitepackages() + [site.getusersitepackages()]}
    if package.parent.resolve() in site_dirs:
        return {}  # a regular install: every Python process sees it
    entry = tmp_path / "site"
    entry.mkdir()
    (entry / "pyspark_minijs").symlink_to(package, target_is_directory=True)
    path = os.pathsep.join(p for p in (str(entry), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def test_a_fresh_session_finds_the_source_without_register(
    nats_urls: dict[str, str], tmp_path: Path
) -> None:
    result = run_job("auto", nats_urls, tmp_path, **_discoverable(tmp_path))
    assert result["session"] == "pyspark.sql.session"


def test_the_module_spark_scans_defines_the_source() -> None:
    """What PySpark's lookup worker does with each ``pyspark_*`` module, checked directly."""
    import pyspark_minijs
    from pyspark.sql.datasource import DataSource

    from minijs.spark import JetStreamDataSource

    assert pyspark_minijs.DefaultSource is JetStreamDataSource
    assert issubclass(pyspark_minijs.DefaultSource, DataSource)
    assert pyspark_minijs.DefaultSource.name() == "jetstream"


def test_local_cluster_executors_in_their_own_processes(nats_urls: dict[str, str], tmp_path: Path) -> None:
    result = run_job("local-cluster", nats_urls, tmp_path)
    for job in result["jobs"]:
        assert len(job["executors"]) == 2, job
        assert job["partitions_ran_on"] and all("executor" in w for w in job["partitions_ran_on"]), job


def test_spark_connect(nats_urls: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("grpc", reason="Spark Connect needs the 'spark' extra (pyspark[connect])")
    result = run_job("connect", nats_urls, tmp_path)
    assert result["session"] == "pyspark.sql.connect.session"
