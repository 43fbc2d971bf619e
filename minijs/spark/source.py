"""The ``jetstream`` PySpark data source: batch and streaming reads and writes.

Planning (stream info, offsets) happens in Spark's planner process; data only ever moves in the
tasks, each of which opens its own NATS connection and event loop inside ``read()`` /
``write()``.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Sequence, TypeVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ._nats import (
    AckingPublisher,
    DataLossError,
    JetStreamSourceError,
    Record,
    StreamState,
    connect,
    ns_to_us,
    plan_ranges,
    read_consumer,
    read_direct,
    stream_state,
)
from ._options import ConnectOptions, OptionError, SinkOptions, SourceOptions, check_names

try:  # PySpark >= 4.2 has both; keep the module importable on a bare 4.x for clear errors
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover
    # (the ignores apply where PySpark is installed; without it its names are Any)
    ReadAllAvailable = ReadLimit = ReadMaxRows = None  # type: ignore[assignment,misc,unused-ignore]
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc,unused-ignore]

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - older PySpark: row-based streaming writer
    _StreamWriterBase = DataSourceStreamWriter  # type: ignore[assignment,misc,unused-ignore]

__all__ = ["JetStreamDataSource", "SCHEMA", "SeqRange", "JetStreamCommitMessage"]

#: Every read returns exactly these columns.
SCHEMA = (
    "stream string, subject string, seq long, time timestamp, "
    "headers map<string,string>, data binary"
)

#: The same schema as a StructType (DDL parsing needs a live SparkContext; tasks have none).
SCHEMA_STRUCT = StructType(
    [
        StructField("stream", StringType()),
        StructField("subject", StringType()),
        StructField("seq", LongType()),
        StructField("time", TimestampType()),
        StructField("headers", MapType(StringType(), StringType())),
        StructField("data", BinaryType()),
    ]
)

# Spark sets these local properties for micro-batch tasks; the query id survives restarts from
# the same checkpoint, so (query, batch, partition, row) names a row the same way on a replay.
_QUERY_ID_PROP = "sql.streaming.queryId"
_BATCH_ID_PROP = "streaming.sql.batchId"

T = TypeVar("T")


def _run(make: Callable[[], Awaitable[T]]) -> T:
    """Run one short control-plane coroutine (stream info) on a private loop."""
    return asyncio.run(make())  # type: ignore[arg-type]


async def _state(conn: ConnectOptions, stream: str) -> StreamState:
    nc = await connect(conn, name="minijs.spark planner")
    try:
        return await stream_state(nc, stream)
    finally:
        await nc.close()


# =============================================================================== reading


@dataclass(frozen=True)
class SeqRange(InputPartition):
    """One task's work: stream sequences ``first..last`` (inclusive) of one stream incarnation."""

    stream: str
    created: str
    first: int
    last: int
    direct: bool
    subject: str | None
    conn: ConnectOptions
    fail_on_data_loss: bool

    def __post_init__(self) -> None:  # InputPartition stores a `value`; keep repr useful
        object.__setattr__(self, "value", (self.first, self.last))


def _arrow_schema() -> Any:
    """The Arrow schema Spark checks returned batches against (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(SCHEMA_STRUCT, timezone="UTC")


def _to_arrow(stream: str, records: list[Record], schema: Any) -> Any:
    import pyarrow as pa

    n = len(records)
    cols = [
        [stream] * n,
        [r.subject for r in records],
        [r.seq for r in records],
        [ns_to_us(r.time_ns) for r in records],
        [list(r.headers.items()) for r in records],
        [r.data for r in records],
    ]
    arrays = [pa.array(values, type=f.type) for values, f in zip(cols, schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _check_loss_after_read(nc: Any, part: SeqRange) -> Awaitable[None]:
    async def check() -> None:
        try:
            state = await stream_state(nc, part.stream)
        except JetStreamSourceError as exc:
            raise DataLossError(f"stream {part.stream!r} vanished while reading: {exc}") from exc
        if state.created != part.created:
            raise DataLossError(
                f"stream {part.stream!r} was re-created while reading sequences "
                f"{part.first}..{part.last}; set failOnDataLoss=false to accept the loss"
            )
        if state.first_available > part.first:
            raise DataLossError(
                f"stream {part.stream!r}: sequences {part.first}..{state.first_available - 1} "
                "were removed (retention, purge or delete) before they were read; "
                "set failOnDataLoss=false to accept the loss"
            )

    return check()


def read_partition(part: SeqRange) -> Iterator[Any]:
    """Yield Arrow record batches for one partition; the connection lives only in here."""
    schema = _arrow_schema()
    loop = asyncio.new_event_loop()
    nc = None
    chunks: AsyncIterator[list[Record]] | None = None
    try:
        nc = loop.run_until_complete(connect(part.conn, name="minijs.spark reader"))
        reader = read_direct if part.direct else read_consumer
        chunks = reader(nc, part.stream, part.first, part.last, part.subject)
        first_seen: int | None = None
        while True:
            try:
                chunk = loop.run_until_complete(chunks.__anext__())
            except StopAsyncIteration:
                break
            if first_seen is None:
                first_seen = chunk[0].seq
            yield _to_arrow(part.stream, chunk, schema)
        if part.fail_on_data_loss and first_seen != part.first:
            # Something before our first message is missing: filtered out, or deleted?
            loop.run_until_complete(_check_loss_after_read(nc, part))
    finally:
        if chunks is not None:
            loop.run_until_complete(chunks.aclose())  # type: ignore[attr-defined]
        if nc is not None:
            loop.run_until_complete(nc.close())
        loop.close()


def _split(opts: SourceOptions, state: StreamState, first: int, last: int) -> list[SeqRange]:
    span = max(0, last - first + 1)
    return [
        SeqRange(
            stream=opts.stream,
            created=state.created,
            first=lo,
            last=hi,
            direct=state.allow_direct,
            subject=opts.subject,
            conn=opts.conn,
            fail_on_data_loss=opts.fail_on_data_loss,
        )
        for lo, hi in plan_ranges(first, last, opts.partition_count(span))
    ]


def _loss_message(opts: SourceOptions, want: int, state: StreamState) -> str:
    return (
        f"stream {opts.stream!r}: sequences {want}..{state.first_available - 1} are no longer "
        f"in the stream (first sequence is now {state.first_available}); "
        "set failOnDataLoss=false to skip them"
    )


class JetStreamBatchReader(DataSourceReader):
    """Plans fixed sequence ranges once, so every task reads a known, repeatable slice."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts
        state = _run(lambda: _state(opts.conn, opts.stream))
        if opts.starting == "earliest":
            first = state.first_available
        elif opts.starting == "latest":
            first = state.last_seq + 1
        else:
            first = int(opts.starting)
            if first < state.first_available:
                if opts.fail_on_data_loss and first <= state.last_seq:
                    raise DataLossError(_loss_message(opts, first, state))
                first = state.first_available
        end = state.last_seq + 1 if opts.ending == "latest" else int(opts.ending)
        end = min(end, state.last_seq + 1)
        return _split(opts, state, first, end - 1)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, SeqRange):  # Spark's stand-in when we planned nothing
            return iter(())
        return read_partition(partition)


class JetStreamStreamReader(
    DataSourceStreamReader, SupportsTriggerAvailableNow
):
    """Offsets are ``{stream, created, next}``: ``next`` is the first sequence not yet read and
    ``created`` pins the stream incarnation, so a deleted and re-created stream is noticed."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._target: dict[str, Any] | None = None  # availableNow: do not read past this

    def _offset(self, state: StreamState, next_seq: int) -> dict[str, Any]:
        return {"stream": self.opts.stream, "created": state.created, "next": int(next_seq)}

    def _state(self) -> StreamState:
        opts = self.opts
        return _run(lambda: _state(opts.conn, opts.stream))

    def initialOffset(self) -> dict:
        state = self._state()
        start = self.opts.starting
        if start == "earliest":
            nxt = state.first_available
        elif start == "latest":
            nxt = state.last_seq + 1
        else:
            nxt = int(start)
        return self._offset(state, nxt)

    def getDefaultReadLimit(self) -> Any:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        state = self._state()
        self._target = self._offset(state, state.last_seq + 1)

    def latestOffset(self, start: dict, limit: Any) -> dict:
        opts = self.opts
        state = self._state()
        if start.get("created") != state.created:
            if opts.fail_on_data_loss:
                raise DataLossError(
                    f"stream {opts.stream!r} was deleted and re-created (created "
                    f"{start.get('created')} -> {state.created}); unread messages of the old "
                    "stream are lost; set failOnDataLoss=false to continue with the new stream"
                )
            base = 1  # the new incarnation is read from its beginning
        else:
            base = int(start["next"])
            if opts.fail_on_data_loss and state.first_available > base and base <= state.last_seq:
                raise DataLossError(_loss_message(opts, base, state))
        end = state.last_seq + 1
        if self._target is not None and self._target.get("created") == state.created:
            end = min(end, int(self._target["next"]))
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            end = min(end, base + int(limit.max_rows))
        if start.get("created") == state.created and end <= base:
            return start  # nothing new: Spark skips the batch
        return self._offset(state, max(end, base))

    def reportLatestOffset(self) -> dict | None:
        try:
            state = self._state()
        except JetStreamSourceError:
            return None
        return self._offset(state, state.last_seq + 1)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        opts = self.opts
        last = int(end["next"]) - 1
        first = int(start["next"]) if start.get("created") == end.get("created") else 1
        if last < first:
            return []
        state = self._state()
        if state.created != end.get("created"):
            if opts.fail_on_data_loss:
                raise DataLossError(
                    f"stream {opts.stream!r} was re-created before sequences {first}..{last} "
                    "were read; set failOnDataLoss=false to skip them"
                )
            return []
        if opts.fail_on_data_loss and state.first_available > first:
            raise DataLossError(_loss_message(opts, first, state))
        return _split(opts, state, first, last)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, SeqRange):  # Spark's stand-in when we planned nothing
            return iter(())
        return read_partition(partition)

    def commit(self, end: dict) -> None:
        """Nothing to release: the stream keeps the messages, the checkpoint keeps the offset."""


# =============================================================================== writing


@dataclass
class JetStreamCommitMessage(WriterCommitMessage):
    """Per-task result: how many rows were stored and how many the stream dropped as replays."""

    partition: int
    published: int
    duplicates: int


def _check_write_schema(schema: StructType, opts: SinkOptions) -> None:
    names = {f.name.lower(): f for f in schema.fields}
    subject = names.get("subject")
    if subject is None and opts.subject is None:
        raise OptionError(
            "writing to JetStream needs a 'subject' column (string) or the option 'subject'"
        )
    if subject is not None and not isinstance(subject.dataType, StringType):
        raise OptionError(
            f"column 'subject' must be a string, not {subject.dataType.simpleString()}"
        )
    data = names.get("data")
    if data is None:
        raise OptionError("writing to JetStream needs a 'data' column (binary or string)")
    if not isinstance(data.dataType, (BinaryType, StringType)):
        raise OptionError(
            f"column 'data' must be binary or string, not {data.dataType.simpleString()}"
        )
    headers = names.get("headers")
    if headers is not None and not (
        isinstance(headers.dataType, MapType)
        and isinstance(headers.dataType.keyType, StringType)
        and isinstance(headers.dataType.valueType, StringType)
    ):
        raise OptionError(
            f"column 'headers' must be map<string,string>, not {headers.dataType.simpleString()}"
        )
    if opts.msg_id_column is not None and opts.msg_id_column.lower() not in names:
        raise OptionError(
            f"option msgIdColumn={opts.msg_id_column!r}: no such column "
            f"(columns: {', '.join(f.name for f in schema.fields)})"
        )


def _check_target(opts: SinkOptions) -> None:
    """Fail before any task if the server cannot be reached (or refuses the credentials), or,
    with the ``stream`` option, if that stream does not exist."""

    async def check() -> None:
        nc = await connect(opts.conn, name="minijs.spark planner")
        try:
            if opts.stream is not None:
                await stream_state(nc, opts.stream)
        finally:
            await nc.close()

    _run(check)


def _column(batch: Any, name: str | None) -> list[Any] | None:
    if name is None:
        return None
    lowered = {n.lower(): i for i, n in enumerate(batch.schema.names)}
    idx = lowered.get(name.lower())
    return None if idx is None else batch.column(idx).to_pylist()


def publish_batches(
    opts: SinkOptions, batches: Iterator[Any], id_prefix: str, partition: int
) -> JetStreamCommitMessage:
    """Publish every row of ``batches`` (Arrow record batches) from one task, acks awaited.

    Each message gets ``Nats-Msg-Id``: the ``msgIdColumn`` value, a ``Nats-Msg-Id`` the row's
    headers already carry, or ``<id_prefix>:<partition>:<row index>``, so a retried task or a
    replayed micro-batch is dropped by the stream's duplicate window instead of stored twice.
    """
    loop = asyncio.new_event_loop()

    async def run() -> JetStreamCommitMessage:
        nc = await connect(opts.conn, name="minijs.spark writer")
        try:
            pub = await AckingPublisher(
                nc, opts.max_pending_acks, opts.ack_timeout, expected_stream=opts.stream
            ).start()
            row = 0
            for batch in batches:
                subjects = _column(batch, "subject")
                datas = _column(batch, "data")
                hdrs = _column(batch, "headers")
                ids = _column(batch, opts.msg_id_column)
                for i in range(batch.num_rows):
                    subject = (subjects[i] if subjects is not None else None) or opts.subject
                    if not subject:
                        raise JetStreamSourceError(
                            f"row {row} of partition {partition} has no subject "
                            "(null 'subject' column and no 'subject' option)"
                        )
                    payload = datas[i] if datas is not None else None
                    if payload is None:
                        payload = b""
                    elif isinstance(payload, str):
                        payload = payload.encode()
                    headers = (
                        {k: v for k, v in hdrs[i] if v is not None}
                        if hdrs is not None and hdrs[i]
                        else {}
                    )
                    if ids is not None and ids[i] is not None:
                        headers["Nats-Msg-Id"] = str(ids[i])
                    elif "Nats-Msg-Id" not in headers:
                        headers["Nats-Msg-Id"] = f"{id_prefix}:{partition}:{row}"
                    await pub.publish(subject, payload, headers)
                    row += 1
            stats = await pub.finish()
            return JetStreamCommitMessage(partition, stats.published, stats.duplicates)
        finally:
            await nc.close()

    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def _task_partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


class JetStreamBatchWriter(DataSourceArrowWriter):
    """Batch ``df.write``: message ids are prefixed with a job id made once on the driver, so
    Spark's task retries are deduplicated (use ``msgIdColumn`` to dedupe across jobs)."""

    def __init__(self, opts: SinkOptions, job_id: str) -> None:
        self.opts = opts
        self.job_id = job_id

    def write(self, iterator: Iterator[Any]) -> JetStreamCommitMessage:
        return publish_batches(self.opts, iterator, self.job_id, _task_partition())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every ack was awaited in the tasks; nothing is left to make durable."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Published messages cannot be taken back; the ids make a re-run harmless."""


class JetStreamStreamWriter(_StreamWriterBase):
    """``writeStream``: ids are ``<query id>:<batch id>:<partition>:<row>``; the query id comes
    from the checkpoint, so a micro-batch replayed after a crash publishes the same ids."""

    def __init__(self, opts: SinkOptions, fallback_id: str) -> None:
        self.opts = opts
        self.fallback_id = fallback_id

    def write(self, iterator: Iterator[Any]) -> JetStreamCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        query = ctx.getLocalProperty(_QUERY_ID_PROP) if ctx is not None else None
        batch = ctx.getLocalProperty(_BATCH_ID_PROP) if ctx is not None else None
        prefix = f"{query or self.fallback_id}:{batch if batch is not None else 'na'}"
        if _StreamWriterBase is DataSourceStreamWriter:  # pragma: no cover - rows, not Arrow
            iterator = _rows_to_batches(iterator)
        return publish_batches(self.opts, iterator, prefix, _task_partition())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Acks were awaited in the tasks."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The replay of this batch will carry the same ids and be deduplicated."""


def _rows_to_batches(rows: Iterator[Any]) -> Iterator[Any]:  # pragma: no cover
    import pyarrow as pa

    buf: list[dict[str, Any]] = []
    for row in rows:
        buf.append(row.asDict())
        if len(buf) >= 1000:
            yield pa.RecordBatch.from_pylist(buf)
            buf = []
    if buf:
        yield pa.RecordBatch.from_pylist(buf)


# =============================================================================== the source


class JetStreamDataSource(DataSource):
    """``spark.read.format("jetstream")``: a NATS JetStream stream as a table and a stream.

    PySpark finds it by itself in a regular install (the ``pyspark_minijs`` module); otherwise
    register it once per session with ``minijs.spark.register(spark)``.
    """

    @classmethod
    def name(cls) -> str:
        return "jetstream"

    def schema(self) -> StructType:
        # Spark asks for the schema at load(): check what can be checked without knowing yet
        # whether this is a batch or a streaming read, so a typo fails there and then.
        check_names(self.options, "any")  # reader() checks read-only names
        ConnectOptions.parse(self.options)
        return SCHEMA_STRUCT

    def reader(self, schema: StructType) -> DataSourceReader:
        return JetStreamBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return JetStreamStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> JetStreamBatchWriter:
        if overwrite:
            raise OptionError(
                "JetStream streams are append-only: use mode('append'), not 'overwrite'"
            )
        opts = SinkOptions.parse(self.options)
        _check_write_schema(schema, opts)
        _check_target(opts)
        return JetStreamBatchWriter(opts, uuid.uuid4().hex)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = SinkOptions.parse(self.options)
        _check_write_schema(schema, opts)
        _check_target(opts)
        return JetStreamStreamWriter(opts, uuid.uuid4().hex)
