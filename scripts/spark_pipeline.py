"""Example: a Spark pipeline from one JetStream stream to another, exactly once.

ORDERS (``orders.<region>``, JSON payloads) is read as a stream, every order is priced in
cents and routed to ``billing.<region>`` in BILLING; the checkpoint makes each run pick up
where the last one stopped, and the deterministic message ids make a replayed micro-batch
harmless. Without ``--servers`` it starts an in-process minijs server, so it runs anywhere
PySpark does (a host whose name does not resolve runs Spark on 127.0.0.1):

    pip install '.[spark]'
    python scripts/spark_pipeline.py                           # embedded minijs
    python scripts/spark_pipeline.py --servers nats://127.0.0.1:4222   # any JetStream server
    python scripts/spark_pipeline.py --orders 1000000          # a long run, with progress
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from typing import Any

import nats

PROGRESS_EVERY = 5.0  # seconds between progress lines on long runs


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def spark_network() -> dict[str, str]:
    """Spark binds its driver to the address the host name resolves to. Where that fails (a
    container or CI host whose name is not in DNS or /etc/hosts) it cannot start, so use the
    loopback address instead; ``SPARK_LOCAL_IP``, if set, is kept."""
    ip = os.environ.get("SPARK_LOCAL_IP")
    if ip is None:
        host = socket.gethostname()
        try:
            addr = socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
            with socket.socket() as s:  # the name may resolve to an address that is not ours
                s.bind((addr, 0))
        except OSError:
            ip = "127.0.0.1"
            os.environ["SPARK_LOCAL_IP"] = ip
            log(f"host name {host!r} does not resolve to a local address: Spark runs on {ip}")
    if ip is None:
        return {}
    return {"spark.driver.host": ip, "spark.driver.bindAddress": ip}


def seed(url: str, orders: int, first: int) -> None:
    """Create the two streams (if missing) and publish ``orders`` orders, acks awaited in
    windows, with a progress line every few seconds on a long run."""

    async def main() -> None:
        nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=3)
        js = nc.jetstream()
        for name, subjects in (("ORDERS", ["orders.>"]), ("BILLING", ["billing.>"])):
            try:
                await js.stream_info(name)
            except nats.js.errors.NotFoundError:
                await js.add_stream(name=name, subjects=subjects, allow_direct=True)
        start = last_log = time.monotonic()
        acks: list[Any] = []
        for n, i in enumerate(range(first, first + orders), 1):
            region = ("eu", "us", "apac")[i % 3]
            body = json.dumps({"order": i, "euros": round(9.5 + i, 2)}).encode()
            acks.append(await js.publish_async(f"orders.{region}", body, headers={"Nats-Msg-Id": f"order-{i}"}))
            if len(acks) >= 4096:
                await asyncio.gather(*acks)
                acks.clear()
                now = time.monotonic()
                if now - last_log >= PROGRESS_EVERY:
                    last_log = now
                    log(f"seeding ORDERS: {n:,}/{orders:,} orders ({n / (now - start):,.0f} msgs/s)")
        await asyncio.gather(*acks)
        took = time.monotonic() - start
        log(f"seeded {orders:,} orders into ORDERS in {took:.1f}s ({orders / max(took, 1e-9):,.0f} msgs/s)")
        await nc.close()

    asyncio.run(main())


def run_pipeline(spark: Any, url: str, checkpoint: str, per_batch: int) -> None:
    """ORDERS -> price in cents -> BILLING, one availableNow run from ``checkpoint``."""
    from pyspark.sql import functions as F

    orders = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", "ORDERS")
        .option("startingOffsets", "earliest")  # first run only; later runs use the checkpoint
        .option("maxOffsetsPerTrigger", per_batch)
        .load()
    )
    order = F.from_json(F.col("data").cast("string"), "order long, euros double")
    billing = orders.select(
        F.concat(F.lit("billing."), F.substring_index("subject", ".", -1)).alias("subject"),
        F.to_json(
            F.struct(
                order["order"].alias("order"),
                F.round(order["euros"] * 100).cast("long").alias("cents"),
                F.col("time").cast("string").alias("ordered_at"),
            )
        ).alias("data"),
        F.create_map(F.lit("Order-Seq"), F.col("seq").cast("string")).alias("headers"),
    )
    query = (
        billing.writeStream.format("jetstream")
        .option("servers", url)
        .option("stream", "BILLING")  # every pub ack must come from BILLING
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    start = time.monotonic()
    rows = 0
    seen_batch = -1
    while not query.awaitTermination(PROGRESS_EVERY):
        rows, seen_batch = _log_progress(query, rows, seen_batch, start)
    rows, _ = _log_progress(query, rows, seen_batch, start)
    if query.exception() is not None:
        raise SystemExit(f"pipeline failed: {query.exception()}")
    took = time.monotonic() - start
    log(f"pipeline run done: {rows:,} rows ORDERS -> BILLING in {took:.1f}s ({rows / max(took, 1e-9):,.0f} rows/s)")


def _log_progress(query: Any, rows: int, seen_batch: int, start: float) -> tuple[int, int]:
    """Add up the micro-batches finished since the last call and print one line about them."""
    new = [p for p in query.recentProgress if p.batchId > seen_batch and p.numInputRows]
    if not new:
        return rows, seen_batch
    rows += sum(p.numInputRows for p in new)
    last = new[-1]
    log(
        f"BILLING: {rows:,} rows written (batch {last.batchId}: {last.numInputRows:,} rows, "
        f"{last.processedRowsPerSecond or 0:,.0f} rows/s; "
        f"overall {rows / max(time.monotonic() - start, 1e-9):,.0f} rows/s)"
    )
    return rows, max(p.batchId for p in new)


def show(spark: Any, url: str) -> None:
    """A batch read of the output stream: counts per region, then the last few bills with the
    JSON payload parsed into columns (the raw rows are too wide for a terminal)."""
    from pyspark.sql import functions as F

    billing = spark.read.format("jetstream").option("servers", url).option("stream", "BILLING").load()
    print(f"BILLING holds {billing.count():,} messages; by region:")
    billing.groupBy("subject").count().orderBy("subject").show(truncate=False)
    bill = F.from_json(F.col("data").cast("string"), "order long, cents long, ordered_at string")
    print("the last 5 bills:")
    billing.orderBy(F.col("seq").desc()).limit(5).select(
        "seq",
        "subject",
        bill["order"].alias("order"),
        bill["cents"].alias("cents"),
        bill["ordered_at"].alias("ordered_at"),
        F.col("headers")["Order-Seq"].alias("order_seq"),
    ).orderBy("seq").show(truncate=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", help="NATS URL(s); default: start an embedded minijs")
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--per-batch", type=int, default=50_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--checkpoint", help="checkpoint directory (default: a temp dir)")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    network = spark_network()
    from pyspark.sql import SparkSession

    from minijs.spark import register

    server = None
    url = args.servers
    if url is None:
        from minijs.server import ServerThread

        server = ServerThread(jetstream=True).start()
        url = server.client_url
        log(f"embedded minijs at {url}")
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="spark-pipeline-")

    builder = SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false")
    for key, value in network.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)  # not needed where PySpark found the source by itself; harmless there
    try:
        seed(url, args.orders, 0)
        run_pipeline(spark, url, checkpoint, args.per_batch)
        show(spark, url)
        # A second run from the same checkpoint reads only what arrived since.
        seed(url, 10, args.orders)
        run_pipeline(spark, url, checkpoint, args.per_batch)
        show(spark, url)
    finally:
        spark.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
