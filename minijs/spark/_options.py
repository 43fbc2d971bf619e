"""Option parsing for the ``jetstream`` data source.

Spark hands options over lower-cased (and PySpark wraps them in a case-insensitive dict, but
only sometimes), so every lookup here folds case itself. Names follow Spark's Kafka source so
existing pipelines read naturally. Every check here runs in Spark's planner (on the driver),
so a bad option fails the query before any task starts.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import urlsplit

DEFAULT_SERVERS = "nats://127.0.0.1:4222"
DEFAULT_MAX_RECORDS_PER_PARTITION = 50_000
DEFAULT_MAX_PENDING_ACKS = 1024
DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds for the whole connect: every server, every attempt
DEFAULT_MAX_RECONNECT_ATTEMPTS = 2  # extra rounds over the server list after the first

#: Options for the NATS connection, on every read and write.
CONNECTION_OPTIONS = (
    "servers",
    "connectTimeout",
    "maxReconnectAttempts",
    "user",
    "password",
    "token",
    "creds",
)
READ_OPTIONS = (
    "stream",
    "subject",
    "startingOffsets",
    "endingOffsets",
    "maxOffsetsPerTrigger",
    "minPartitions",
    "maxRecordsPerPartition",
    "failOnDataLoss",
)
WRITE_OPTIONS = ("stream", "subject", "msgIdColumn", "maxPendingAcks", "ackTimeout")
#: Options Spark itself may pass through to a data source (``load(path)``, a stream sink's
#: checkpoint, ...); accepted and ignored.
SPARK_OPTIONS = ("path", "paths", "checkpointLocation", "queryName")

_READ = {o.lower(): o for o in CONNECTION_OPTIONS + READ_OPTIONS}
_WRITE = {o.lower(): o for o in CONNECTION_OPTIONS + WRITE_OPTIONS}
_ANY = {**_READ, **_WRITE}
_SPARK = {o.lower() for o in SPARK_OPTIONS}


class OptionError(ValueError):
    """A bad or missing option, reported before any task starts."""


def _fold(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}


def check_names(options: Mapping[str, str], mode: str) -> None:
    """Refuse option names the source does not know (a typo would otherwise be ignored).

    ``mode`` is ``read``, ``write`` or ``any`` (when Spark has not said yet, as in
    ``schema()``). Names Spark passes through itself are accepted.
    """
    known = {"read": _READ, "write": _WRITE, "any": _ANY}[mode]
    for key in dict(options):
        low = str(key).lower()
        if low in known or low in _SPARK or low.startswith("__"):
            continue
        if mode != "any" and low in _ANY:
            other = "writes" if mode == "read" else "reads"
            raise OptionError(f"option {_ANY[low]} only applies to {other}, not to {mode}s")
        close = difflib.get_close_matches(low, list(known), n=1, cutoff=0.75)
        hint = f"; did you mean {known[close[0]]}?" if close else ""
        kind = "" if mode == "any" else f"{mode} "
        raise OptionError(
            f"unknown option {key!r}{hint} (jetstream {kind}options: "
            f"{', '.join(sorted(set(known.values()), key=str.lower))}; names are case-insensitive)"
        )


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


def _seconds(opts: dict[str, str], key: str, default: float) -> float:
    raw = opts.get(key.lower())
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise OptionError(f"option {key}={raw!r}: expected a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise OptionError(f"option {key}={raw!r}: must be a positive number of seconds")
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


_SCHEMES = ("nats", "tls", "ws", "wss")


def split_servers(servers: str) -> list[str]:
    """``servers`` is a comma separated list, like Kafka's ``kafka.bootstrap.servers``; a URL
    without a scheme is ``nats://``. Each must name a host and may name a port."""
    urls = []
    for part in servers.split(","):
        text = part.strip()
        if not text:
            continue
        url = text if "://" in text else f"nats://{text}"
        try:
            parsed = urlsplit(url)
            port = parsed.port  # raises on a bad port
        except ValueError as exc:
            raise OptionError(f"option servers={servers!r}: {text!r} is not a URL ({exc})") from None
        if parsed.scheme not in _SCHEMES:
            raise OptionError(
                f"option servers={servers!r}: {text!r} has scheme {parsed.scheme!r}; "
                f"expected one of {', '.join(s + '://' for s in _SCHEMES)}"
            )
        if not parsed.hostname:
            raise OptionError(f"option servers={servers!r}: {text!r} names no host")
        if port == 0:
            raise OptionError(f"option servers={servers!r}: {text!r} has port 0")
        urls.append(url)
    if not urls:
        raise OptionError(
            f"option servers={servers!r}: no URL; give nats://host:port (comma-separated for "
            "several)"
        )
    if len({u.split("://", 1)[0] in ("ws", "wss") for u in urls}) > 1:
        raise OptionError(f"option servers={servers!r}: cannot mix ws:// and nats:// URLs")
    return urls


@dataclass(frozen=True)
class ConnectOptions:
    """How every task and the planner reach NATS; picklable, travels with the partitions.

    Secrets are kept out of ``repr`` (Spark logs partitions and plans)."""

    servers: str = DEFAULT_SERVERS
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    max_reconnect_attempts: int = DEFAULT_MAX_RECONNECT_ATTEMPTS
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    creds: str | None = None

    @property
    def urls(self) -> list[str]:
        return split_servers(self.servers)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ConnectOptions":
        """Validate the connection options (shared by reads and writes)."""
        opts = _fold(options)
        servers = opts.get("servers", DEFAULT_SERVERS)
        split_servers(servers)  # fail now, naming the option, not in a task
        user = opts.get("user") or None
        password = opts.get("password") or None
        token = opts.get("token") or None
        creds = (opts.get("creds") or "").strip() or None
        if password is not None and user is None:
            raise OptionError("option password is set without option user")
        if token is not None and user is not None:
            raise OptionError("options token and user/password are exclusive: give one of them")
        if creds is not None:
            if token is not None or user is not None:
                raise OptionError(
                    "option creds (a NATS credentials file) cannot be combined with "
                    "user/password or token"
                )
            if not os.path.isfile(creds):
                raise OptionError(
                    f"option creds={creds!r}: no such file (the path must be readable on the "
                    "driver and on every executor)"
                )
            if not os.access(creds, os.R_OK):
                raise OptionError(f"option creds={creds!r}: file is not readable")
        return cls(
            servers=servers,
            connect_timeout=_seconds(opts, "connectTimeout", DEFAULT_CONNECT_TIMEOUT),
            max_reconnect_attempts=_int(
                opts, "maxReconnectAttempts", DEFAULT_MAX_RECONNECT_ATTEMPTS, minimum=0
            )
            or 0,
            user=user,
            password=password,
            token=token,
            creds=creds,
        )


@dataclass(frozen=True)
class SourceOptions:
    """Everything the reader side needs; picklable, so it travels with the partitions."""

    conn: ConnectOptions
    stream: str
    subject: str | None
    starting: str | int
    ending: str | int
    max_offsets_per_trigger: int | None
    min_partitions: int
    max_records_per_partition: int
    fail_on_data_loss: bool

    @property
    def servers(self) -> str:
        return self.conn.servers

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> "SourceOptions":
        """Validate the read options; ``startingOffsets`` defaults like Kafka's (batch: earliest,
        streaming: latest)."""
        check_names(options, "read")
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
        conn = ConnectOptions.parse(options)
        starting = _position(opts, "startingOffsets", "latest" if streaming else "earliest")
        ending = _position(opts, "endingOffsets", "latest")
        if ending == "earliest":
            raise OptionError(
                "option endingOffsets: 'earliest' would read nothing; use 'latest' or a sequence"
            )
        subject = opts.get("subject", "").strip() or None
        return cls(
            conn=conn,
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

    conn: ConnectOptions
    stream: str | None  # if set: every pub ack must name this stream, else the task fails
    subject: str | None  # default subject for rows without a subject column / with null
    msg_id_column: str | None
    max_pending_acks: int
    ack_timeout: float

    @property
    def servers(self) -> str:
        return self.conn.servers

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SinkOptions":
        """Validate the write options."""
        check_names(options, "write")
        opts = _fold(options)
        return cls(
            conn=ConnectOptions.parse(options),
            stream=opts.get("stream", "").strip() or None,
            subject=opts.get("subject", "").strip() or None,
            msg_id_column=opts.get("msgidcolumn", "").strip() or None,
            max_pending_acks=_int(opts, "maxPendingAcks", DEFAULT_MAX_PENDING_ACKS, minimum=1)
            or DEFAULT_MAX_PENDING_ACKS,
            ack_timeout=_seconds(opts, "ackTimeout", 30.0),
        )
