"""Example: a Spark pipeline from one JetStream stream to another, exactly once.

ORDERS (``orders.<region>``, JSON payloads) is read as a stream, every order is priced in
cents and routed to ``billing.<region>`` in BILLING; the checkpoint makes each run pick up
where the last one stopped, and the deterministic message ids make a replayed micro-batch
harmless. Without ``--servers`` it starts an in-process minijs server, so it runs anywhere
PySpark does:

    pip install '.[spark]'
    python scripts/spark_pipeline.py                           # embedded minijs
    python scripts/spark_pipeline.py --servers nats://127.0.0.1:4222   # any JetStream server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile

import nats


def seed(url: str, orders: int, first: int) -> None:
    """Create the two streams (if missing) and publish some orders."""

    async def main() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        for name, subjects in (("ORDERS", ["orders.>"]), ("BILLING", ["billing.>"])):
            try:
                await js.stream_info(name)
            except nats.js.errors.NotFoundError:
                await js.add_stream(name=name, subjects=subjects, allow_direct=True)
        acks = []
        for i in range(first, first + orders):
            region = ("eu", "us", "apac")[i % 3]
            body = json.dumps({"order": i, "euros": round(9.5 + i, 2)}).encode()
            acks.append(await js.publish_async(f"orders.{region}", body, headers={"Nats-Msg-Id": f"order-{i}"}))
        for ack in acks:
            await ack
        await nc.close()

    asyncio.run(main())


def run_pipeline(spark, url: str, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    """ORDERS -> price in cents -> BILLING, one availableNow run from ``checkpoint``."""
    from pyspark.sql import functions as F

    orders = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", "ORDERS")
        .option("startingOffsets", "earliest")  # first run only; later runs use the checkpoint
        .option("maxOffsetsPerTrigger", 500)
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
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"pipeline failed: {query.exception()}")


def show(spark, url: str) -> None:  # type: ignore[no-untyped-def]
    """A batch read of the output stream."""
    billing = spark.read.format("jetstream").option("servers", url).option("stream", "BILLING").load()
    print(f"BILLING holds {billing.count()} messages; by region:")
    billing.groupBy("subject").count().orderBy("subject").show()
    billing.orderBy("seq").selectExpr("seq", "subject", "cast(data AS string) AS data", "headers").show(
        5, truncate=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", help="NATS URL(s); default: start an embedded minijs")
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--checkpoint", help="checkpoint directory (default: a temp dir)")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from minijs.spark import register

    server = None
    url = args.servers
    if url is None:
        from minijs.server import ServerThread

        server = ServerThread(jetstream=True).start()
        url = server.client_url
        print(f"embedded minijs at {url}")
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="spark-pipeline-")

    spark = SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        seed(url, args.orders, 0)
        run_pipeline(spark, url, checkpoint)
        show(spark, url)
        # A second run from the same checkpoint reads only what arrived since.
        seed(url, 10, args.orders)
        run_pipeline(spark, url, checkpoint)
        show(spark, url)
    finally:
        spark.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
