"""Option parsing for the ``jetstream`` data source.

Spark hands options over lower-cased (and PySpark wraps them in a case-insensitive dict, but
only sometimes), so every lookup here folds case itself. Names follow Spark's Kafka source so
existing pipelines read naturally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

DEFAULT_SERVERS = "nats://127.0.0.1:4222"
DEFAULT_MAX_RECORDS_PER_PARTITION = 50_000
DEFAULT_MAX_PENDING_ACKS = 1024


class OptionError(ValueError):
    """A bad or missing option, reported before any task starts."""


def _fold(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}


def _int(opts: dict[str, str], key: str, default: int | None, *, minimum: int = 0) -> int | None:
    raw = opts.get(key.lower())
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(f"option {key}={raw!r}: expected an integer") from None
    if value < minimum:
        raise OptionError(f"option {key}={raw!r}: must be >= {minimum}")
    return value


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key.lower())
    if raw is None:
        return default
    text = raw.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(f"option {key}={raw!r}: expected true or false")


def _position(opts: dict[str, str], key: str, default: str) -> str | int:
    """``earliest`` / ``latest`` / a stream sequence number."""
    raw = opts.get(key.lower(), default).strip()
    low = raw.lower()
    if low in ("earliest", "latest"):
        return low
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(
            f"option {key}={raw!r}: expected 'earliest', 'latest' or a stream sequence"
        ) from None
    if value < 1:
        raise OptionError(f"option {key}={raw!r}: stream sequences start at 1")
    return value


@dataclass(frozen=True)
class SourceOptions:
    """Everything the reader side needs; picklable, so it travels with the partitions."""

    servers: str
    stream: str
    subject: str | None
    starting: str | int
    ending: str | int
    max_offsets_per_trigger: int | None
    min_partitions: int
    max_records_per_partition: int
    fail_on_data_loss: bool

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> "SourceOptions":
        """Validate the read options; ``startingOffsets`` defaults like Kafka's (batch: earliest,
        streaming: latest)."""
        opts = _fold(options)
        stream = opts.get("stream", "").strip()
        if not stream:
            raise OptionError("option 'stream' is required: the JetStream stream to read")
        if any(c in stream for c in " .*>\t\r\n"):
            raise OptionError(f"option stream={stream!r}: not a valid stream name")
        if not streaming and "maxoffsetspertrigger" in opts:
            raise OptionError("option maxOffsetsPerTrigger only applies to readStream")
        if streaming and "endingoffsets" in opts:
            raise OptionError("option endingOffsets only applies to batch reads")
        starting = _position(opts, "startingOffsets", "latest" if streaming else "earliest")
        ending = _position(opts, "endingOffsets", "latest")
        if ending == "earliest":
            raise OptionError(
                "option endingOffsets: 'earliest' would read nothing; use 'latest' or a sequence"
            )
        subject = opts.get("subject", "").strip() or None
        return cls(
            servers=opts.get("servers", DEFAULT_SERVERS),
            stream=stream,
            subject=subject,
            starting=starting,
            ending=ending,
            max_offsets_per_trigger=_int(opts, "maxOffsetsPerTrigger", None, minimum=1),
            min_partitions=_int(opts, "minPartitions", 1, minimum=1) or 1,
            max_records_per_partition=_int(
                opts, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS_PER_PARTITION, minimum=1
            )
            or DEFAULT_MAX_RECORDS_PER_PARTITION,
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        )

    def partition_count(self, span: int) -> int:
        """At least ``minPartitions``, and no partition above ``maxRecordsPerPartition``."""
        by_size = -(-span // self.max_records_per_partition) if span > 0 else 1
        return max(self.min_partitions, by_size)


@dataclass(frozen=True)
class SinkOptions:
    """Everything the writer side needs."""

    servers: str
    stream: str | None  # if set: every pub ack must name this stream, else the task fails
    subject: str | None  # default subject for rows without a subject column / with null
    msg_id_column: str | None
    max_pending_acks: int
    ack_timeout: float

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SinkOptions":
        """Validate the write options."""
        opts = _fold(options)
        raw_timeout = opts.get("acktimeout", "30")
        try:
            ack_timeout = float(raw_timeout)
        except ValueError:
            raise OptionError(f"option ackTimeout={raw_timeout!r}: expected seconds") from None
        return cls(
            servers=opts.get("servers", DEFAULT_SERVERS),
            stream=opts.get("stream", "").strip() or None,
            subject=opts.get("subject", "").strip() or None,
            msg_id_column=opts.get("msgidcolumn", "").strip() or None,
            max_pending_acks=_int(opts, "maxPendingAcks", DEFAULT_MAX_PENDING_ACKS, minimum=1)
            or DEFAULT_MAX_PENDING_ACKS,
            ack_timeout=ack_timeout,
        )
