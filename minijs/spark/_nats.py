"""The JetStream side of the Spark data source: plain asyncio code on nats-py, no Spark imports.

Everything here runs inside one ``asyncio`` loop that the caller owns (a Spark task's
``read()``/``write()``, or the planner process), so it can be tested without Spark.
"""

from __future__ import annotations

import asyncio
import calendar
import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable, Sequence

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ._options import ConnectOptions, split_servers  # noqa: F401  (split_servers: re-exported)

#: Headers the server adds to DIRECT.GET replies (and republish); they describe the message,
#: they are not part of it, so the ``headers`` column never shows them.
SERVER_HEADERS = frozenset(
    {
        "Nats-Stream",
        "Nats-Sequence",
        "Nats-Subject",
        "Nats-Time-Stamp",
        "Nats-Num-Pending",
        "Nats-Last-Sequence",
    }
)
# nats-py turns a status line (``NATS/1.0 204 EOB``) into these two pseudo headers.
_STATUS = "Status"
_DESCRIPTION = "Description"

API_TIMEOUT = 10.0  # seconds for one JetStream API round trip


class JetStreamSourceError(RuntimeError):
    """A server reply that makes the Spark task or query fail; the text says what and where."""


class DataLossError(JetStreamSourceError):
    """Messages the query has not read yet are gone (retention, purge, re-created stream)."""


@dataclass(frozen=True)
class StreamState:
    """The parts of STREAM.INFO the data source plans with."""

    name: str
    created: str  # RFC 3339 creation time: a re-created stream gets a new one
    first_seq: int
    last_seq: int
    messages: int
    allow_direct: bool

    @property
    def first_available(self) -> int:
        """First sequence that can still be read (a new stream reports first_seq 0)."""
        return max(self.first_seq, 1)


@dataclass
class Record:
    """One stored message, already shaped like a row of the source schema."""

    subject: str
    seq: int
    time_ns: int
    headers: dict[str, str] = field(default_factory=dict)
    data: bytes = b""


# ----------------------------------------------------------------------------- connections


async def connect(conn: ConnectOptions | str, *, name: str = "minijs.spark") -> NATS:
    """One connection per task (or planner call), made within ``conn.connect_timeout``.

    Each round tries every server once; after a failed round it waits a little and tries again,
    ``conn.max_reconnect_attempts`` more times at most, all inside the one deadline. An
    established connection never reconnects: a failure fails the task and Spark retries it.
    (nats-py's own loop is not used for this: with ``max_reconnect_attempts=0`` it retries the
    first connect forever.) A refused login fails at once, naming the credential options.
    """
    if isinstance(conn, str):
        conn = ConnectOptions(servers=conn)
    urls = conn.urls
    loop = asyncio.get_running_loop()
    deadline = loop.time() + conn.connect_timeout
    rounds = conn.max_reconnect_attempts + 1
    tried = 0
    last: BaseException | None = None
    for round_no in range(rounds):
        for url in urls:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            tried += 1
            nc = NATS()
            seen: list[BaseException] = []  # nats-py reports the socket error here, then
            try:  # raises a bare NoServersError
                await asyncio.wait_for(
                    _connect_once(nc, url, conn, name, remaining, seen), remaining
                )
                return nc
            except asyncio.CancelledError:
                await _abandon(nc)
                raise
            except Exception as exc:  # nats-py raises a plain Exception subclass zoo here
                await _abandon(nc)
                if _is_auth_error(exc):
                    raise JetStreamSourceError(
                        f"NATS at {url} refused the credentials ({_describe(exc)}): check the "
                        f"options {_auth_options(conn)}"
                    ) from exc
                last = seen[-1] if seen and not _is_specific(exc) else exc
        remaining = deadline - loop.time()
        if round_no + 1 >= rounds or remaining <= 0:
            break
        await asyncio.sleep(min(0.25 * 2**round_no, 2.0, remaining))
    where = ", ".join(urls)
    attempts = f"{tried} attempt{'s' if tried != 1 else ''}"
    if deadline - loop.time() <= 0:
        what = f"within connectTimeout {conn.connect_timeout:g}s ({attempts}"
    else:
        what = f"({attempts} failed, maxReconnectAttempts {conn.max_reconnect_attempts}"
    raise JetStreamSourceError(
        f"cannot connect to NATS at {where} {what}; last error: {_describe(last)}). "
        "Check that a JetStream-enabled NATS server runs there and is reachable from the Spark "
        "driver and executors, and fix the 'servers' option (comma-separated nats://host:port); "
        "on a slow network raise the options connectTimeout or maxReconnectAttempts."
    ) from last


async def _connect_once(
    nc: NATS, url: str, conn: ConnectOptions, name: str, timeout: float, seen: list[BaseException]
) -> None:
    async def _quiet(exc: Exception) -> None:  # nats-py logs every error otherwise
        seen.append(exc)

    kwargs: dict[str, Any] = {}
    if conn.user is not None:
        kwargs["user"] = conn.user
        kwargs["password"] = conn.password or ""
    if conn.token is not None:
        kwargs["token"] = conn.token
    if conn.creds is not None:
        kwargs["user_credentials"] = conn.creds
    await nc.connect(
        servers=[url],
        name=name,
        allow_reconnect=False,
        # nats-py annotates int; it hands the value to asyncio.wait_for, which takes a float
        connect_timeout=max(timeout, 0.001),  # type: ignore[arg-type]
        # nats-py's connect loop ends once a server failed more than this (0 means never):
        # each call here tries its one URL twice at most, back to back.
        max_reconnect_attempts=1,
        reconnect_time_wait=0,
        dont_randomize=True,
        error_cb=_quiet,
        pending_size=8 * 1024 * 1024,
        **kwargs,
    )


async def _abandon(nc: NATS) -> None:
    """Close a half-made client without waiting on a dead socket."""
    try:
        await asyncio.wait_for(nc.close(), 1.0)
    except Exception:
        pass


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "no attempt was made"
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    text = str(exc).strip()
    if isinstance(exc, nats.errors.NoServersError):
        return "no server answered"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_specific(exc: BaseException) -> bool:
    """Whether ``exc`` says more than "it did not work" (nats-py's NoServersError does not)."""
    return not isinstance(exc, (nats.errors.NoServersError, asyncio.TimeoutError))


def _is_auth_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, nats.errors.AuthorizationError) or "authorization violation" in text or (
        "authentication" in text and "nats:" in text
    )


def _auth_options(conn: ConnectOptions) -> str:
    if conn.creds is not None:
        return f"creds ({conn.creds})"
    if conn.token is not None:
        return "token"
    if conn.user is not None:
        return f"user ({conn.user!r}) and password"
    return "user/password, token or creds (the server requires authentication)"


def _api_error(reply: dict[str, Any]) -> str | None:
    err = reply.get("error")
    if not err:
        return None
    code, err_code = err.get("code"), err.get("err_code")
    return f"{err.get('description', 'error')} (code {code}, err_code {err_code})"


async def api_request(nc: NATS, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON API call; a missing JetStream or an error reply becomes a readable exception."""
    payload = json.dumps(body).encode() if body else b""
    try:
        msg = await nc.request(subject, payload, timeout=API_TIMEOUT)
    except nats.errors.NoRespondersError as exc:
        raise JetStreamSourceError(
            f"{subject}: no responders; is JetStream enabled on the server?"
        ) from exc
    except nats.errors.TimeoutError as exc:
        raise JetStreamSourceError(f"{subject}: no reply within {API_TIMEOUT:g}s") from exc
    return json.loads(msg.data)


async def stream_state(nc: NATS, stream: str) -> StreamState:
    """STREAM.INFO, reduced to what planning needs; a missing stream is a clear error."""
    reply = await api_request(nc, f"$JS.API.STREAM.INFO.{stream}")
    err = _api_error(reply)
    if err:
        raise JetStreamSourceError(f"stream {stream!r}: {err}")
    state = reply.get("state", {})
    config = reply.get("config", {})
    return StreamState(
        name=stream,
        created=reply.get("created", ""),
        first_seq=int(state.get("first_seq", 0)),
        last_seq=int(state.get("last_seq", 0)),
        messages=int(state.get("messages", 0)),
        allow_direct=bool(config.get("allow_direct", False)),
    )


# ----------------------------------------------------------------------------- time stamps


_second_cache: dict[str, int] = {}


def rfc3339_to_ns(text: str) -> int:
    """Nats-Time-Stamp (``2026-11-21T05:53:53.21895138Z``) to integer ns since the epoch.

    Hand-parsed because ``datetime`` stops at microseconds and we must round exactly as the
    consumer path does (it gets integer ns from the ack subject).
    """
    if not text.endswith("Z"):
        raise ValueError(f"not a UTC RFC 3339 time: {text!r}")
    head, _, frac = text[:-1].partition(".")
    base = _second_cache.get(head)
    if base is None:
        date, _, clock = head.partition("T")
        year, month, day = (int(x) for x in date.split("-"))
        hour, minute, second = (int(x) for x in clock.split(":"))
        base = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) * 1_000_000_000
        if len(_second_cache) > 4096:
            _second_cache.clear()
        _second_cache[head] = base
    return base + (int(frac.ljust(9, "0")[:9]) if frac else 0)


def ns_to_us(ns: int) -> int:
    """Spark keeps microseconds: truncate toward the past (floor), on every read path."""
    return ns // 1000


# ----------------------------------------------------------------------------- reading


def _user_headers(headers: dict[str, str] | None) -> dict[str, str]:
    if not headers:
        return {}
    return {
        k: v
        for k, v in headers.items()
        if k not in SERVER_HEADERS and k != _STATUS and k != _DESCRIPTION
    }


async def read_direct(
    nc: NATS,
    stream: str,
    first: int,
    last: int,
    subject: str | None,
    *,
    batch: int = 1000,
    max_bytes: int = 4 * 1024 * 1024,
    timeout: float = API_TIMEOUT,
) -> AsyncIterator[list[Record]]:
    """Messages with ``first <= seq <= last`` (matching ``subject``), chunk by chunk.

    Uses batched DIRECT.GET: one request returns up to ``batch`` messages and then a
    ``204 EOB`` status; the next request starts after the last sequence seen. A ``404`` means
    nothing at or after the requested sequence.
    """
    api = f"$JS.API.DIRECT.GET.{stream}"
    inbox = nc.new_inbox()
    replies: list[Msg] = []
    batch_over = asyncio.Event()

    async def on_reply(msg: Msg) -> None:
        # A callback that only appends: far cheaper per message than next_msg().
        replies.append(msg)
        if msg.headers is None or "Nats-Sequence" not in msg.headers:
            batch_over.set()  # EOB or an error status: the batch is complete

    sub = await nc.subscribe(
        inbox, cb=on_reply, pending_msgs_limit=batch * 4, pending_bytes_limit=max_bytes * 4
    )
    try:
        seq = first
        while seq <= last:
            want = batch if subject else min(batch, last - seq + 1)
            req: dict[str, Any] = {"seq": seq, "batch": want, "max_bytes": max_bytes}
            if subject:
                req["next_by_subj"] = subject
            replies.clear()
            batch_over.clear()
            await nc.publish(api, json.dumps(req).encode(), reply=inbox)
            try:
                await asyncio.wait_for(batch_over.wait(), timeout)
            except asyncio.TimeoutError as exc:
                raise JetStreamSourceError(
                    f"DIRECT.GET on stream {stream!r} from seq {seq}: no reply within {timeout:g}s"
                ) from exc
            chunk: list[Record] = []
            done = False
            for msg in replies:
                hdrs = msg.headers or {}
                if "Nats-Sequence" not in hdrs:
                    status = hdrs.get(_STATUS, "")
                    if status == "204":  # end of this batch
                        if hdrs.get("Nats-Num-Pending") == "0":
                            done = True
                        break
                    if status == "404":  # nothing at or after seq
                        done = True
                        break
                    if status == "503":
                        raise JetStreamSourceError(
                            f"stream {stream!r} does not answer DIRECT.GET (no responders): "
                            "it is missing or allow_direct is off"
                        )
                    raise JetStreamSourceError(
                        f"DIRECT.GET on stream {stream!r} from seq {seq}: "
                        f"status {status} {hdrs.get(_DESCRIPTION, '')}".rstrip()
                    )
                mseq = int(hdrs["Nats-Sequence"])
                if mseq > last:
                    done = True
                    break
                chunk.append(
                    Record(
                        subject=hdrs.get("Nats-Subject", msg.subject),
                        seq=mseq,
                        time_ns=rfc3339_to_ns(hdrs["Nats-Time-Stamp"]),
                        headers=_user_headers(hdrs),
                        data=msg.data,
                    )
                )
            if chunk:
                seq = chunk[-1].seq + 1
                yield chunk
            elif not done:
                # An EOB with no message but pending > 0 cannot make progress; refuse to spin.
                raise JetStreamSourceError(
                    f"DIRECT.GET on stream {stream!r} returned an empty batch at seq {seq}"
                )
            if done:
                break
    finally:
        await sub.unsubscribe()


def parse_ack_subject(reply: str) -> tuple[int, int, int, int]:
    """``$JS.ACK`` reply subject -> (stream seq, consumer seq, timestamp ns, pending).

    Parsed here rather than through ``msg.metadata`` because nats-py turns the ns timestamp into
    a ``datetime`` and loses the nanoseconds we need to round like the DIRECT.GET path.
    """
    tokens = reply.split(".")
    if len(tokens) == 9:  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        base = 5
    elif len(tokens) >= 11:  # $JS.ACK.<domain>.<hash>.<stream>.<consumer>.<delivered>.<sseq>...
        base = 7
    else:
        raise JetStreamSourceError(f"unexpected JetStream ack subject {reply!r}")
    return int(tokens[base]), int(tokens[base + 1]), int(tokens[base + 2]), int(tokens[base + 3])


async def read_consumer(
    nc: NATS,
    stream: str,
    first: int,
    last: int,
    subject: str | None,
    *,
    batch: int = 1000,
    timeout: float = API_TIMEOUT,
) -> AsyncIterator[list[Record]]:
    """The same range as :func:`read_direct`, for streams without ``allow_direct``.

    A short-lived ephemeral pull consumer (ack none, memory state) that behaves like an ordered
    consumer: if a consumer sequence is skipped, it is deleted and re-created after the last
    stream sequence received, so no message is lost or repeated.
    """
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    js = nc.jetstream(timeout=API_TIMEOUT)
    start = first
    while start <= last:
        config = ConsumerConfig(
            name=nc._nuid.next().decode(),  # nats-py's own id generator
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=AckPolicy.NONE,
            filter_subject=subject or None,
            max_deliver=1,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=30.0,
        )
        try:
            info = await js.add_consumer(stream, config=config)
        except nats.js.errors.Error as exc:
            raise JetStreamSourceError(
                f"stream {stream!r}: cannot create a pull consumer: {exc}"
            ) from exc
        psub = await js.pull_subscribe_bind(consumer=info.name, stream=stream)
        restart_at: int | None = None
        try:
            pending = info.num_pending or 0  # (nats-py types it Optional; servers always send it)
            expected_cseq = 1
            while pending > 0:
                try:
                    msgs = await psub.fetch(batch, timeout=timeout)
                except nats.errors.TimeoutError as exc:
                    raise JetStreamSourceError(
                        f"pull consumer on stream {stream!r}: no messages within {timeout:g}s "
                        f"although {pending} are pending"
                    ) from exc
                chunk: list[Record] = []
                for msg in msgs:
                    sseq, cseq, ts, pending = parse_ack_subject(msg.reply)
                    if cseq != expected_cseq:  # a gap: start over after what we have
                        restart_at = (chunk[-1].seq + 1) if chunk else start
                        break
                    expected_cseq += 1
                    if sseq > last:
                        pending = 0
                        break
                    chunk.append(
                        Record(
                            subject=msg.subject,
                            seq=sseq,
                            time_ns=ts,
                            headers=_user_headers(msg.headers),
                            data=msg.data,
                        )
                    )
                if chunk:
                    start = chunk[-1].seq + 1
                    yield chunk
                if restart_at is not None:
                    break
        finally:
            try:
                await psub.unsubscribe()
                await js.delete_consumer(stream, info.name)
            except Exception:  # the consumer also expires on its own (inactive_threshold)
                pass
        if restart_at is None:
            break
        start = restart_at


# ----------------------------------------------------------------------------- writing


@dataclass
class PublishStats:
    """What one task's publishing did; returned to the driver in the commit message."""

    published: int = 0
    duplicates: int = 0


class AckingPublisher:
    """Publishes with JetStream acks, keeping at most ``max_pending`` acks in flight.

    All acks come back on one wildcard inbox subscription, so throughput is bounded by the
    window, not by a round trip per message. The first error reply fails the whole task.
    """

    def __init__(
        self,
        nc: NATS,
        max_pending: int = 1024,
        ack_timeout: float = 30.0,
        expected_stream: str | None = None,
    ) -> None:
        self._nc = nc
        self._expected_stream = expected_stream
        self._max_pending = max(1, max_pending)
        self._room = asyncio.Event()  # set while fewer than max_pending acks are outstanding
        self._room.set()
        self._ack_timeout = ack_timeout
        self._pending: dict[str, str] = {}  # reply token -> subject, for error messages
        self._prefix = nc.new_inbox()
        self._next = 0
        self._error: JetStreamSourceError | None = None
        self._drained = asyncio.Event()
        self._drained.set()
        self.stats = PublishStats()
        self._sub: Subscription | None = None

    async def start(self) -> "AckingPublisher":
        self._sub = await self._nc.subscribe(
            self._prefix + ".*",
            cb=self._on_ack,
            pending_msgs_limit=self._max_pending * 2 + 16,
        )
        return self

    async def _on_ack(self, msg: Msg) -> None:
        token = msg.subject.rsplit(".", 1)[-1]
        subject = self._pending.pop(token, None)
        if subject is None:
            return  # a late duplicate ack
        if len(self._pending) < self._max_pending:
            self._room.set()
        if not self._pending:
            self._drained.set()
        status = (msg.headers or {}).get(_STATUS)
        if status == "503":
            self._fail(f"no stream captures subject {subject!r} (503 no responders)")
            return
        try:
            ack = json.loads(msg.data)
        except ValueError:
            self._fail(f"publish to {subject!r}: unreadable ack {msg.data[:200]!r}")
            return
        err = _api_error(ack)
        if err:
            self._fail(f"publish to {subject!r} rejected by stream: {err}")
        elif self._expected_stream and ack.get("stream") != self._expected_stream:
            self._fail(
                f"subject {subject!r} is captured by stream {ack.get('stream')!r}, "
                f"not by the stream option {self._expected_stream!r}"
            )
        elif ack.get("duplicate"):
            self.stats.duplicates += 1
        else:
            self.stats.published += 1

    def _fail(self, text: str) -> None:
        if self._error is None:
            self._error = JetStreamSourceError(text)

    async def publish(self, subject: str, data: bytes, headers: dict[str, str] | None) -> None:
        """Send one message once a window slot is free; raises the first error seen so far."""
        if self._error is not None:
            raise self._error
        if len(self._pending) >= self._max_pending:
            # Only wait (and so let nats-py flush) when the window is full: publishing without
            # yielding lets many messages leave in one socket write.
            self._room.clear()
            try:
                await asyncio.wait_for(self._room.wait(), self._ack_timeout)
            except asyncio.TimeoutError as exc:
                raise JetStreamSourceError(
                    f"no JetStream ack within {self._ack_timeout:g}s "
                    f"for {len(self._pending)} messages"
                ) from exc
            if self._error is not None:
                raise self._error
        token = str(self._next)
        self._next += 1
        self._pending[token] = subject
        self._drained.clear()
        await self._nc.publish(subject, data, reply=f"{self._prefix}.{token}", headers=headers)

    async def finish(self) -> PublishStats:
        """Wait for every outstanding ack, then report (or raise the first error)."""
        # nats-py annotates int; it hands the value to asyncio.wait_for, which takes a float
        await self._nc.flush(timeout=self._ack_timeout)  # type: ignore[arg-type]
        try:
            await asyncio.wait_for(self._drained.wait(), self._ack_timeout)
        except asyncio.TimeoutError as exc:
            raise JetStreamSourceError(
                f"no JetStream ack within {self._ack_timeout:g}s for {len(self._pending)} messages"
            ) from exc
        if self._sub is not None:
            await self._sub.unsubscribe()
        if self._error is not None:
            raise self._error
        return self.stats


def plan_ranges(first: int, last: int, parts: int) -> list[tuple[int, int]]:
    """Split ``[first, last]`` into at most ``parts`` contiguous, nearly equal ranges."""
    if last < first:
        return []
    span = last - first + 1
    parts = max(1, min(parts, span))
    size, extra = divmod(span, parts)
    out: list[tuple[int, int]] = []
    lo = first
    for i in range(parts):
        hi = lo + size - 1 + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi + 1
    return out


def chunks(seq: Sequence[Any] | Iterable[Any], n: int) -> Iterable[list[Any]]:
    """Group an iterable into lists of ``n`` (the last may be shorter)."""
    buf: list[Any] = []
    for item in seq:
        buf.append(item)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf
