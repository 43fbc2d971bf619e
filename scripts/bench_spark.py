"""Spark data source throughput: minijs beside nats-server in one run.

For each server (both spawned as subprocesses with ``-js``, minijs through its CLI, so neither
shares a process with Spark), on one ``local[2]`` SparkSession:

- write: ``df.write.format("jetstream")`` of COUNT rows (SIZE-byte payloads) from PARTITIONS
  tasks, acks awaited;
- read: ``spark.read.format("jetstream")`` of those COUNT messages (batched DIRECT.GET),
  forced to materialise every row; the planner splits it into ranges of at most
  ``maxRecordsPerPartition`` (50,000) sequences, so 1M messages are 20 tasks.

A small warm-up read and write run first, so Python worker start-up is not measured. The
default, 1M messages each way, takes a few minutes per server on two cores.

    python scripts/bench_spark.py [--count 1000000] [--size 100] [--partitions 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nats

READY = re.compile(r"Listening for client connections on [^:]+:(\d+)")


def spawn(cmd: list[str], store: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        cmd + ["-js", "-a", "127.0.0.1", "-p", "-1", "-sd", store],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    port = 0
    deadline = time.time() + 30
    for line in proc.stderr:
        found = READY.search(line)
        if found:
            port = int(found.group(1))
        if "Server is ready" in line or time.time() > deadline:
            break
    if not port:
        proc.kill()
        raise SystemExit(f"{cmd[0]} did not start")
    # keep draining the log so the server never blocks on a full pipe
    import threading

    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    return proc, f"nats://127.0.0.1:{port}"


def executable(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    exe = shutil.which(name) or (str(beside) if beside.exists() else None)
    if exe is None:
        raise SystemExit(f"{name} not found on PATH nor beside {sys.executable}")
    return exe


def create_stream(url: str, name: str) -> None:
    async def main() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name=name, subjects=[f"{name.lower()}.>"], allow_direct=True)
        await nc.close()

    asyncio.run(main())


def stream_messages(url: str, name: str) -> int:
    async def main() -> int:
        nc = await nats.connect(url)
        info = await nc.jetstream().stream_info(name)
        await nc.close()
        return info.state.messages

    return asyncio.run(main())


def write_rows(spark: Any, url: str, stream: str, count: int, size: int, parts: int) -> float:
    from pyspark.sql import functions as F

    df = spark.range(0, count, 1, parts).select(
        F.concat(F.lit(stream.lower() + ".k"), (F.col("id") % 16).cast("string")).alias("subject"),
        F.expr(f"unhex(repeat('ab', {size}))").alias("data"),
    )
    start = time.perf_counter()
    df.write.format("jetstream").mode("append").option("servers", url).option("stream", stream).save()
    return time.perf_counter() - start


def read_rows(spark: Any, url: str, stream: str, parts: int) -> tuple[float, int, int]:
    """Seconds, rows read, and read tasks (partitions) planned."""
    df = (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", stream)
        .option("minPartitions", parts)
        .load()
    )
    start = time.perf_counter()
    row = df.selectExpr("count(*) AS n", "sum(length(data)) AS b", "max(time) AS t").collect()[0]
    secs = time.perf_counter() - start
    return secs, int(row.n), df.rdd.getNumPartitions()


def bench(spark: Any, target: str, cmd: list[str], args: argparse.Namespace) -> dict[str, float]:
    store = tempfile.mkdtemp(prefix=f"bench-spark-{target}-")
    proc, url = spawn(cmd, store)
    try:
        create_stream(url, "WARM")
        write_rows(spark, url, "WARM", 2000, args.size, args.partitions)
        read_rows(spark, url, "WARM", args.partitions)

        create_stream(url, "BENCH")
        wsecs = write_rows(spark, url, "BENCH", args.count, args.size, args.partitions)
        stored = stream_messages(url, "BENCH")
        if stored != args.count:
            raise SystemExit(f"{target}: stream holds {stored} messages, expected {args.count}")
        print(f"{target}: wrote {args.count:,} rows in {wsecs:.1f}s", flush=True)
        rsecs, n, tasks = read_rows(spark, url, "BENCH", args.partitions)
        if n != args.count:
            raise SystemExit(f"{target}: read {n} rows, expected {args.count}")
        print(f"{target}: read {n:,} rows in {rsecs:.1f}s ({tasks} read tasks)", flush=True)
        return {"write": args.count / wsecs, "read": args.count / rsecs, "tasks": tasks}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1_000_000, help="rows written, then read")
    parser.add_argument("--size", type=int, default=100, help="payload bytes per row")
    parser.add_argument("--partitions", type=int, default=2, help="Spark partitions (tasks)")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from minijs.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    results = {
        "minijs": bench(spark, "minijs", [sys.executable, "-m", "minijs"], args),
        "nats-server": bench(spark, "nats-server", [executable("nats-server")], args),
    }
    spark.stop()

    print(f"\nSpark jetstream data source, {args.count:,} rows of {args.size} B, "
          f"{args.partitions} write tasks, {results['minijs']['tasks']} read tasks, local[2], "
          f"{os.cpu_count()} CPUs")
    print(f"{'':14}{'minijs':>14}{'nats-server':>14}{'ratio':>8}")
    for what in ("write", "read"):
        m, n = results["minijs"][what], results["nats-server"][what]
        print(f"{what + ' rows/s':14}{m:>14,.0f}{n:>14,.0f}{m / n:>8.2f}")


if __name__ == "__main__":
    main()
