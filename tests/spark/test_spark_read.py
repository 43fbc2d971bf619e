"""Batch reads: ``spark.read.format("jetstream")`` against both targets."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

pytestmark = pytest.mark.spark

REGIONS = ("eu", "us", "apac")


def _fill(js: Any, stream: str, n: int, **config: Any) -> list[int]:
    """``n`` messages on ``<stream>.eu|us|apac`` (streams must not share subjects)."""
    js.create_stream(stream, [f"{stream}.>"], **config)
    return js.publish(
        [
            (f"{stream}.{REGIONS[i % 3]}", f"order-{i}".encode(), {"X-Index": str(i)} if i % 2 else None)
            for i in range(n)
        ]
    )


def _load(spark: Any, url: str, stream: str, **options: Any) -> Any:
    reader = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def test_batch_count_and_subject_filter(spark: Any, js: Any, nats_url: str, stream_name: str) -> None:
    before = time.time()
    _fill(js, stream_name, 300, allow_direct=True)

    df = _load(spark, nats_url, stream_name, minPartitions=3)
    assert df.rdd.getNumPartitions() == 3
    assert df.count() == 300
    assert _load(spark, nats_url, stream_name, subject=f"{stream_name}.eu").count() == 100
    assert _load(spark, nats_url, stream_name, SUBJECT=f"{stream_name}.*").count() == 300  # keys fold case

    rows = _load(spark, nats_url, stream_name, subject=f"{stream_name}.us", minPartitions=4).orderBy("seq").collect()
    assert [r.seq for r in rows] == list(range(2, 301, 3))
    first = rows[0]
    assert (first.stream, first.subject, first.data) == (stream_name, f"{stream_name}.us", b"order-1")
    assert first.headers == {"X-Index": "1"}  # no Nats-Stream / Nats-Sequence / Nats-Time-Stamp ...
    assert rows[1].headers == {}
    # PySpark hands back naive local datetimes; .timestamp() reads them as local time.
    assert before - 5 < first.time.timestamp() < time.time() + 5
    # Exactly the server's nanosecond stamp, floored to Spark's microseconds.
    (micros,) = df.where("seq = 2").selectExpr("unix_micros(time)").first()
    assert micros == js.stored_time_ns(stream_name, 2) // 1000


def test_batch_offsets(spark: Any, js: Any, nats_url: str, stream_name: str) -> None:
    _fill(js, stream_name, 50, allow_direct=True)
    seqs = lambda df: sorted(r.seq for r in df.select("seq").collect())  # noqa: E731
    assert seqs(_load(spark, nats_url, stream_name, startingOffsets=10, endingOffsets=20)) == list(range(10, 20))
    assert seqs(_load(spark, nats_url, stream_name, startingOffsets="latest")) == []
    assert seqs(_load(spark, nats_url, stream_name, startingOffsets=45, endingOffsets="latest")) == list(range(45, 51))


def test_batch_read_without_direct_get_uses_a_pull_consumer(
    spark: Any, js: Any, nats_url: str, stream_name: str
) -> None:
    """A stream without allow_direct is read by an ephemeral pull consumer; the rows (times
    included) match what DIRECT.GET returns once the stream allows it."""
    _fill(js, stream_name, 120, allow_direct=False)
    by_consumer = _load(spark, nats_url, stream_name, minPartitions=2).orderBy("seq").collect()
    filtered = _load(spark, nats_url, stream_name, subject=f"{stream_name}.apac").count()

    js.update_stream(stream_name, allow_direct=True)
    by_direct = _load(spark, nats_url, stream_name, minPartitions=2).orderBy("seq").collect()

    assert len(by_consumer) == 120 and filtered == 40
    assert by_consumer == by_direct


def test_missing_stream_is_a_clear_error(spark: Any, nats_url: str, stream_name: str) -> None:
    with pytest.raises(Exception, match="stream not found"):
        _load(spark, nats_url, stream_name).count()
