"""Spark-free checks of the data source's building blocks (fast; no JVM, no server)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from minijs.spark._nats import (  # noqa: E402
    SERVER_HEADERS,
    ns_to_us,
    parse_ack_subject,
    plan_ranges,
    rfc3339_to_ns,
)
from minijs.spark._options import OptionError, SinkOptions, SourceOptions  # noqa: E402

pytestmark = pytest.mark.spark


def test_rfc3339_keeps_nanoseconds() -> None:
    assert rfc3339_to_ns("1970-01-01T00:00:01Z") == 1_000_000_000
    assert rfc3339_to_ns("1970-01-01T00:00:00.000000001Z") == 1
    # trailing zeros are trimmed by the server: .21895138 means 218951380 ns
    assert rfc3339_to_ns("2026-11-21T05:53:53.21895138Z") % 1_000_000_000 == 218_951_380


def test_microseconds_round_down_on_every_path() -> None:
    assert ns_to_us(1_999) == 1
    assert ns_to_us(2_000) == 2
    ts = rfc3339_to_ns("2026-11-21T05:53:53.218951389Z")
    _, _, ack_ts, _ = parse_ack_subject(f"$JS.ACK.S.C.1.7.3.{ts}.0")
    assert ns_to_us(ts) == ns_to_us(ack_ts)


def test_parse_ack_subject_v1_and_v2() -> None:
    assert parse_ack_subject("$JS.ACK.S.C.1.7.3.1795240431579912371.4") == (7, 3, 1795240431579912371, 4)
    assert parse_ack_subject("$JS.ACK.dom.ACCHASH.S.C.1.7.3.1795240431579912371.4.XYZ") == (
        7,
        3,
        1795240431579912371,
        4,
    )


def test_plan_ranges_are_contiguous_and_cover() -> None:
    assert plan_ranges(1, 10, 3) == [(1, 4), (5, 7), (8, 10)]
    assert plan_ranges(5, 5, 4) == [(5, 5)]
    assert plan_ranges(6, 5, 2) == []
    ranges = plan_ranges(17, 100_016, 7)
    assert ranges[0][0] == 17 and ranges[-1][1] == 100_016
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))


def test_source_options_are_case_insensitive_with_kafka_defaults() -> None:
    batch = SourceOptions.parse({"STREAM": "S", "startingoffsets": "5", "MinPartitions": "3"}, streaming=False)
    assert (batch.stream, batch.starting, batch.ending, batch.min_partitions) == ("S", 5, "latest", 3)
    assert SourceOptions.parse({"stream": "S"}, streaming=False).starting == "earliest"
    assert SourceOptions.parse({"stream": "S"}, streaming=True).starting == "latest"
    assert SourceOptions.parse({"stream": "S", "failondataloss": "FALSE"}, streaming=True).fail_on_data_loss is False
    assert batch.partition_count(200_000) == 4
    assert batch.partition_count(10) == 3


@pytest.mark.parametrize(
    "options, streaming, text",
    [
        ({}, False, "'stream' is required"),
        ({"stream": "a.b"}, False, "not a valid stream name"),
        ({"stream": "S", "startingOffsets": "soon"}, False, "expected 'earliest', 'latest'"),
        ({"stream": "S", "startingOffsets": "0"}, False, "start at 1"),
        ({"stream": "S", "maxOffsetsPerTrigger": "10"}, False, "only applies to readStream"),
        ({"stream": "S", "endingOffsets": "10"}, True, "only applies to batch"),
        ({"stream": "S", "minPartitions": "x"}, False, "expected an integer"),
        ({"stream": "S", "failOnDataLoss": "maybe"}, True, "expected true or false"),
    ],
)
def test_bad_source_options_are_named(options: dict[str, str], streaming: bool, text: str) -> None:
    with pytest.raises(OptionError, match=text):
        SourceOptions.parse(options, streaming=streaming)


def test_sink_options() -> None:
    opts = SinkOptions.parse({"msgidcolumn": "id", "MAXPENDINGACKS": "7", "servers": "a:1,b:2"})
    assert (opts.msg_id_column, opts.max_pending_acks, opts.stream) == ("id", 7, None)
    with pytest.raises(OptionError, match="maxPendingAcks"):
        SinkOptions.parse({"maxPendingAcks": "0"})


def test_server_headers_list() -> None:
    assert {"Nats-Stream", "Nats-Sequence", "Nats-Subject", "Nats-Time-Stamp"} <= SERVER_HEADERS
    assert "Nats-Msg-Id" not in SERVER_HEADERS


def test_a_million_messages_are_planned_as_ranges_a_cluster_can_spread() -> None:
    """1M sequences -> 20 contiguous ranges of 50,000 (maxRecordsPerPartition), each a small
    picklable value that carries the connection options but shows no secret."""
    import pickle

    from minijs.spark._nats import StreamState
    from minijs.spark.source import _split

    state = StreamState("S", "2026-01-01T00:00:00Z", 1, 1_000_000, 1_000_000, True)
    opts = SourceOptions.parse({"stream": "S", "user": "u", "password": "pw"}, streaming=False)
    parts = _split(opts, state, 1, 1_000_000)
    assert len(parts) == 20
    assert [(p.first, p.last) for p in parts][:2] == [(1, 50_000), (50_001, 100_000)]
    assert parts[-1].last == 1_000_000 and all(p.last - p.first + 1 == 50_000 for p in parts)
    assert all(b.first == a.last + 1 for a, b in zip(parts, parts[1:]))
    assert pickle.loads(pickle.dumps(parts[3])) == parts[3]
    assert "pw" not in repr(parts[3]) and len(pickle.dumps(parts[3])) < 2000
    more = SourceOptions.parse({"stream": "S", "minPartitions": "64"}, streaming=False)
    assert len(_split(more, state, 1, 1_000_000)) == 64
