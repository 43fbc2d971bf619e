"""One Spark job through the ``jetstream`` source, run by tests/spark/test_spark_deploy.py in a
process of its own (a SparkContext, or a Spark Connect server, per process).

    python deploy_job.py MODE '{"minijs": "nats://...", "nats-server": "nats://..."}'

MODE is how Spark runs:

- ``auto``: ``local[1]``, and ``register`` is never called: PySpark must find the source itself.
- ``local-cluster``: ``local-cluster[2,1,1024]``, a standalone master and two workers whose
  executors are JVMs of their own, each with its own Python workers; the driver runs no task.
- ``connect``: ``SparkSession.builder.remote("local")``, a Spark Connect server started for the
  job; this process is only a gRPC client.

For every server URL it writes, reads back and runs an ``availableNow`` streaming pipeline,
checks the results itself and prints ``RESULT <json>``; any failure exits non-zero.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from typing import Any

N = 300  # rows per stream


def admin(url: str, fn: Any) -> Any:
    import nats

    async def main() -> Any:
        nc = await nats.connect(url, connect_timeout=5, allow_reconnect=False)
        try:
            return await fn(nc.jetstream(timeout=10))
        finally:
            await nc.close()

    return asyncio.run(main())


def create(url: str, *names: str) -> None:
    async def fn(js: Any) -> None:
        for name in names:
            await js.add_stream(name=name, subjects=[f"{name}.>"], allow_direct=True)

    admin(url, fn)


def messages(url: str, name: str) -> list[tuple[str, bytes]]:
    """Every message of a stream, straight from the server (no Spark)."""

    async def fn(js: Any) -> list[tuple[str, bytes]]:
        info = await js.stream_info(name)
        out = []
        for seq in range(1, info.state.last_seq + 1):
            msg = await js.get_msg(name, seq)
            out.append((msg.subject, msg.data))
        return out

    return admin(url, fn)


def where() -> list[str]:
    """For each partition: the executor that ran it, found by walking up the process tree to
    its JVM (``CoarseGrainedExecutorBackend --executor-id N``); ``driver`` if none."""
    pid = os.getpid()
    for _ in range(6):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return ["unknown"]
        if any("CoarseGrainedExecutorBackend" in a for a in args):
            return [f"executor {args[args.index('--executor-id') + 1]} (pid {pid})"]
        if any("SparkSubmit" in a or "PythonGatewayServer" in a for a in args):
            return [f"driver (pid {pid})"]
        pid = ppid
    return ["driver"]


def job(spark: Any, url: str, target: str, mode: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    tag = uuid.uuid4().hex[:8].upper()
    src, dst, piped = f"SRC{tag}", f"DST{tag}", f"PIPED{tag}"
    create(url, src, dst, piped)
    rows = spark.range(0, N, 1, 3).select(
        F.concat(F.lit(src + "."), F.when(F.col("id") % 2 == 0, "even").otherwise("odd")).alias("subject"),
        F.concat(F.lit("row-"), F.col("id").cast("string")).alias("data"),
        F.concat(F.lit("id-"), F.col("id").cast("string")).alias("id"),
    )
    # write (tasks publish), then read it back (tasks fetch with DIRECT.GET)
    rows.write.format("jetstream").mode("append").option("servers", url).option("stream", src).option(
        "msgIdColumn", "id"
    ).save()
    stored = messages(url, src)
    assert sorted(d for _, d in stored) == sorted(f"row-{i}".encode() for i in range(N)), "write lost rows"

    read = (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", src)
        .option("minPartitions", 4)
        .load()
    )
    got = read.select("seq", "subject", F.col("data").cast("string").alias("data")).collect()
    assert sorted(r.seq for r in got) == list(range(1, N + 1)), "read lost or repeated rows"
    assert sorted(r.data for r in got) == sorted(f"row-{i}" for i in range(N))
    by_subject = {r.subject: r["count"] for r in read.groupBy("subject").count().collect()}
    assert by_subject == {f"{src}.even": N // 2, f"{src}.odd": N // 2}, by_subject

    # batch read -> transform -> batch write
    read.select(
        F.concat(F.lit(dst + "."), F.substring_index("subject", ".", -1)).alias("subject"),
        F.upper(F.col("data").cast("string")).alias("data"),
    ).write.format("jetstream").mode("append").option("servers", url).option("stream", dst).save()
    assert sorted(d for _, d in messages(url, dst)) == sorted(f"ROW-{i}".encode() for i in range(N))

    # Structured Streaming, availableNow, checkpointed
    checkpoint = tempfile.mkdtemp(prefix=f"deploy-{mode}-")
    query = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", src)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 100)
        .load()
        .select(
            F.concat(F.lit(piped + ".x")).alias("subject"),
            F.col("data"),
            F.create_map(F.lit("Src-Seq"), F.col("seq").cast("string")).alias("headers"),
        )
        .writeStream.format("jetstream")
        .option("servers", url)
        .option("stream", piped)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "streaming query did not finish"
    assert query.exception() is None, query.exception()
    assert sorted(d for _, d in messages(url, piped)) == sorted(f"row-{i}".encode() for i in range(N))

    result: dict[str, Any] = {"target": target, "rows": len(got)}
    if mode == "local-cluster":
        ran_on = read.rdd.mapPartitions(lambda _rows: where()).collect()
        assert ran_on and all(w.startswith("executor") for w in ran_on), ran_on
        result["partitions_ran_on"] = sorted(set(ran_on))
        ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")  # type: ignore[union-attr]
        result["executors"] = sorted(i for i in str(ids).split(",") if i)
    return result


def fail_fast(spark: Any) -> str:
    """An unreachable server must end the read with the source's error, here too."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        spark.read.format("jetstream").option("servers", f"nats://127.0.0.1:{port}").option(
            "stream", "S"
        ).option("connectTimeout", 1).load().count()
    except Exception as exc:  # noqa: BLE001
        text = str(exc)
        assert f"cannot connect to NATS at nats://127.0.0.1:{port}" in text, text[:2000]
        return text.split("cannot connect", 1)[1].split("\n", 1)[0]
    raise AssertionError("a read of an unreachable server did not fail")


def main() -> None:
    mode, urls = sys.argv[1], json.loads(sys.argv[2])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    if mode == "connect":
        spark = SparkSession.builder.remote("local").getOrCreate()
    else:
        master = {"auto": "local[1]", "local-cluster": "local-cluster[2,1,1024]"}[mode]
        spark = (
            SparkSession.builder.master(master)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    try:
        if mode != "auto":  # "auto" proves the source is found without this
            from minijs.spark import register

            register(spark)
        out: dict[str, Any] = {
            "mode": mode,
            "session": type(spark).__module__,
            "jobs": [job(spark, url, target, mode) for target, url in sorted(urls.items())],
            "unreachable": fail_fast(spark),
        }
    finally:
        spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
