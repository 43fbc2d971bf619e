"""Streaming reads: checkpointed offsets, availableNow, rate limits and data loss."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

pytestmark = pytest.mark.spark

QUERY_TIMEOUT = 120  # seconds; a hung query fails the test instead of the whole run


def _messages(stream: str, start: int, n: int) -> list[tuple[str, bytes, None]]:
    return [(f"{stream}.m", f"m{i}".encode(), None) for i in range(start, start + n)]


def run_available_now(
    spark: Any, url: str, stream: str, checkpoint: str, **options: Any
) -> tuple[list[Any], list[int]]:
    """One ``trigger(availableNow=True)`` run from ``checkpoint``: (rows, rows per micro-batch)."""
    rows: list[Any] = []
    sizes: list[int] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        got = batch_df.collect()
        rows.extend(got)
        sizes.append(len(got))

    reader = spark.readStream.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    query = (
        reader.load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT), "streaming query did not finish"
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return rows, sizes


def test_available_now_twice_reads_exactly_the_new_messages(
    spark: Any, js: Any, nats_url: str, stream_name: str, checkpoint: str
) -> None:
    js.create_stream(stream_name, [f"{stream_name}.>"], allow_direct=True)
    js.publish(_messages(stream_name, 0, 40))

    first, _ = run_available_now(spark, nats_url, stream_name, checkpoint, startingOffsets="earliest")
    assert sorted(r.seq for r in first) == list(range(1, 41))

    js.publish(_messages(stream_name, 40, 25))
    second, sizes = run_available_now(
        spark, nats_url, stream_name, checkpoint, startingOffsets="earliest", maxOffsetsPerTrigger=10
    )
    assert sorted(r.seq for r in second) == list(range(41, 66))
    assert sorted(r.data for r in second) == sorted(f"m{i}".encode() for i in range(40, 65))
    assert sizes == [10, 10, 5]  # maxOffsetsPerTrigger caps each micro-batch

    third, _ = run_available_now(spark, nats_url, stream_name, checkpoint)
    assert third == []  # nothing new: nothing read


def test_streaming_filter_and_latest(
    spark: Any, js: Any, nats_url: str, stream_name: str, checkpoint: str
) -> None:
    """The default start is 'latest' (as in Kafka); the subject filter applies to streams too."""
    js.create_stream(stream_name, [f"{stream_name}.>"], allow_direct=True)
    js.publish(_messages(stream_name, 0, 5))
    rows, _ = run_available_now(spark, nats_url, stream_name, checkpoint, subject=f"{stream_name}.odd")
    assert rows == []
    js.publish([(f"{stream_name}.{'odd' if i % 2 else 'even'}", b"x", None) for i in range(10)])
    rows, _ = run_available_now(spark, nats_url, stream_name, checkpoint, subject=f"{stream_name}.odd")
    assert sorted(r.seq for r in rows) == [7, 9, 11, 13, 15]


def test_data_loss_fails_the_query_unless_allowed(
    spark: Any, js: Any, nats_url: str, stream_name: str, checkpoint: str
) -> None:
    js.create_stream(stream_name, [f"{stream_name}.>"], allow_direct=True, max_msgs=10)
    js.publish(_messages(stream_name, 0, 5))
    rows, _ = run_available_now(spark, nats_url, stream_name, checkpoint, startingOffsets="earliest")
    assert len(rows) == 5

    js.publish(_messages(stream_name, 5, 20))  # max_msgs=10: sequences 6..15 are gone unread
    with pytest.raises(Exception, match="failOnDataLoss"):
        run_available_now(spark, nats_url, stream_name, checkpoint, startingOffsets="earliest")

    rows, _ = run_available_now(
        spark, nats_url, stream_name, checkpoint, startingOffsets="earliest", failOnDataLoss="false"
    )
    assert sorted(r.seq for r in rows) == list(range(16, 26))

    # A deleted and re-created stream is a new incarnation: the old offsets no longer apply.
    js.delete_stream(stream_name)
    js.create_stream(stream_name, [f"{stream_name}.>"], allow_direct=True)
    js.publish(_messages(stream_name, 0, 3))
    with pytest.raises(Exception, match="re-created"):
        run_available_now(spark, nats_url, stream_name, checkpoint)
    rows, _ = run_available_now(spark, nats_url, stream_name, checkpoint, failOnDataLoss="false")
    assert sorted(r.seq for r in rows) == [1, 2, 3]
