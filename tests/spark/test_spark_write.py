"""Writes (batch and streaming) and the end-to-end pipeline: stream A -> transform -> stream B."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

pytestmark = pytest.mark.spark

QUERY_TIMEOUT = 120


def _read(spark: Any, url: str, stream: str) -> list[Any]:
    df = spark.read.format("jetstream").option("servers", url).option("stream", stream).load()
    return df.orderBy("seq").collect()


def _frame(spark: Any, stream: str, n: int) -> Any:
    rows = [
        (f"id-{i}", f"{stream}.{'a' if i % 2 else 'b'}", f"payload {i}", {"X-Row": str(i)})
        for i in range(n)
    ]
    return spark.createDataFrame(rows, "id string, subject string, data string, headers map<string,string>")


def _write(df: Any, url: str, **options: Any) -> None:
    writer = df.write.format("jetstream").mode("append").option("servers", url)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def test_rewriting_the_same_rows_leaves_no_duplicates(
    spark: Any, js: Any, nats_url: str, stream_name: str
) -> None:
    js.create_stream(stream_name, [f"{stream_name}.>"], allow_direct=True)
    df = _frame(spark, stream_name, 100).repartition(2)

    _write(df, nats_url, stream=stream_name, msgIdColumn="id", maxPendingAcks=16)
    _write(df, nats_url, stream=stream_name, msgIdColumn="id")
    assert js.info(stream_name).state.messages == 100

    rows = _read(spark, nats_url, stream_name)
    assert {r.headers["Nats-Msg-Id"] for r in rows} == {f"id-{i}" for i in range(100)}
    one = next(r for r in rows if r.headers["Nats-Msg-Id"] == "id-7")
    assert (one.subject, one.data, one.headers["X-Row"]) == (f"{stream_name}.a", b"payload 7", "7")

    # Without msgIdColumn each job gets its own ids: a second job is new data, not a replay.
    _write(df.select("subject", "data"), nats_url)
    _write(df.select("subject", "data"), nats_url)
    assert js.info(stream_name).state.messages == 300


def test_write_errors_fail_with_a_clear_message(
    spark: Any, js: Any, nats_url: str, stream_name: str
) -> None:
    js.create_stream(stream_name, [f"{stream_name}.>"], max_msg_size=256)
    ok = spark.createDataFrame([(f"{stream_name}.x", b"small")], "subject string, data binary")
    nowhere = spark.createDataFrame([(f"nowhere.{stream_name}", b"x")], "subject string, data binary")
    big = spark.createDataFrame([(f"{stream_name}.x", b"x" * 1000)], "subject string, data binary")

    with pytest.raises(Exception, match="no stream captures subject"):
        _write(nowhere, nats_url)
    with pytest.raises(Exception, match="message size exceeds maximum"):
        _write(big, nats_url)
    with pytest.raises(Exception, match="stream not found"):  # checked before any task runs
        _write(ok, nats_url, stream=stream_name + "NOPE")
    with pytest.raises(Exception, match="needs a 'data' column"):
        _write(ok.select("subject"), nats_url)
    with pytest.raises(Exception, match="append-only"):
        ok.write.format("jetstream").mode("overwrite").option("servers", nats_url).save()
    _write(ok, nats_url, stream=stream_name)
    assert js.info(stream_name).state.messages == 1

    # The stream option is checked against every pub ack: a subject captured by another
    # stream fails the task (the server has stored that message by then).
    other = stream_name + "O"
    js.create_stream(other, [f"{other}.>"])
    with pytest.raises(Exception, match="not by the stream option"):
        _write(ok, nats_url, stream=other)


def _pipeline(spark: Any, url: str, source: str, target: str, checkpoint: str) -> Any:
    """The example pipeline: shout every order and route it to ``<target>.<region>``."""
    from pyspark.sql import functions as F

    orders = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    shouted = orders.select(
        F.concat(F.lit(target + "."), F.substring_index("subject", ".", -1)).alias("subject"),
        F.upper(F.col("data").cast("string")).alias("data"),
        F.map_concat("headers", F.create_map(F.lit("X-Source-Seq"), F.col("seq").cast("string"))).alias(
            "headers"
        ),
    )
    query = (
        shouted.writeStream.format("jetstream")
        .option("servers", url)
        .option("stream", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT), "pipeline did not finish"
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return query


def test_end_to_end_pipeline_exactly_once(
    spark: Any, js: Any, nats_url: str, stream_name: str, checkpoint: str, subject_tap: Any
) -> None:
    source, target = stream_name + "A", stream_name + "B"
    js.create_stream(source, [f"{source}.>"], allow_direct=True)
    js.create_stream(target, [f"{target}.>"], allow_direct=True)
    js.publish([(f"{source}.{'eu' if i % 2 else 'us'}", f"order {i}".encode(), None) for i in range(30)])

    _pipeline(spark, nats_url, source, target, checkpoint)
    out = _read(spark, nats_url, target)
    assert len(out) == 30
    assert sorted(r.data for r in out) == sorted(f"ORDER {i}".encode() for i in range(30))
    assert {r.subject for r in out} == {f"{target}.eu", f"{target}.us"}
    assert sorted(int(r.headers["X-Source-Seq"]) for r in out) == list(range(1, 31))

    # Crash after the sink wrote but before Spark committed: forget the last commit. The
    # restarted query replays that micro-batch with the same ids, and the stream drops them.
    commits = os.path.join(checkpoint, "commits")
    last = max((f for f in os.listdir(commits) if f.isdigit()), key=int)
    for name in (last, f".{last}.crc"):  # the local file system keeps a checksum beside it
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    with subject_tap(f"{target}.>") as tap:
        _pipeline(spark, nats_url, source, target, checkpoint)
    assert tap.count > 0  # the batch really was published again...
    assert js.info(target).state.messages == 30  # ...and the stream dropped every copy

    js.publish([(f"{source}.eu", f"late {i}".encode(), None) for i in range(5)])
    _pipeline(spark, nats_url, source, target, checkpoint)
    out = _read(spark, nats_url, target)
    assert len(out) == 35
    assert sorted(r.data for r in out[30:]) == sorted(f"LATE {i}".encode() for i in range(5))
