"""Inspection: read-only snapshots of a server's state as plain dataclasses.

Each function reads the live objects once, on the server's event loop, and copies what it
returns: a snapshot never changes afterwards and holding one changes nothing in the server.
Times are the server clock's (seconds since the epoch; for due times, ``None`` when not armed).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from minijs.core.subjects import is_valid_subject
from minijs.jetstream.config.stream import to_json_dict
from minijs.protocol.gojson import parse_json
from minijs.protocol.gomarshal import dumps


@dataclass(frozen=True)
class MessageSnapshot:
    """A stored message (``server.messages()``, ``server.message()``)."""

    seq: int
    """Its stream sequence."""
    subject: str
    """The subject it is stored under."""
    data: bytes
    """The payload."""
    headers: bytes | None
    """The header block as stored (``NATS/1.0\r\nKey: value\r\n...``), None without
    headers."""
    time: float
    """When it was stored, in seconds since the epoch on the server clock."""


@dataclass(frozen=True)
class StreamSnapshot:
    """A stream (``server.streams()``, ``server.stream(name)``)."""

    name: str
    """The stream's name."""
    config: dict
    """Its configuration as ``$JS.API.STREAM.INFO`` shows it (JSON field names, durations in
    nanoseconds, defaults filled in)."""
    messages: int
    """How many messages it holds."""
    bytes: int
    """Their size as the store counts it (what ``state.bytes`` reports to clients)."""
    first_seq: int
    """The sequence of the first message held (when empty: the next one to be stored, or 0
    before the first message)."""
    last_seq: int
    """The sequence of the last message stored (0 before the first)."""
    consumers: list[str]
    """Its consumers' names, sorted."""
    subjects: dict[str, int] = field(default_factory=dict)
    """Each subject it holds messages on, with how many."""
    account: str = "$G"
    """The account the stream belongs to (``$G`` without an ``accounts`` block)."""

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as plain dicts and lists (what the control plane sends as JSON)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PendingAck:
    """A delivered message waiting for its ack (``ConsumerSnapshot.pending``)."""

    stream_seq: int
    """The message's stream sequence."""
    consumer_seq: int
    """The consumer sequence of its last delivery."""
    deliveries: int
    """How many times it was delivered (1 on the first delivery, what ``num_delivered`` of
    its metadata says)."""
    due: float | None
    """When its ``ack_wait`` (or ``backoff`` step, or NAK delay) runs out and it is
    redelivered, in seconds since the epoch on the server clock; None while it is queued for
    redelivery."""


@dataclass(frozen=True)
class WaitingPull:
    """A pull request waiting for messages (``ConsumerSnapshot.waiting``), in the order the
    consumer serves them."""

    reply: str
    """The reply subject the messages go to (the client's inbox)."""
    batch: int
    """How many messages it still waits for."""
    max_bytes: int
    """The byte budget it asked for (0: none)."""
    no_wait: bool
    """Whether it asked not to wait (``no_wait``)."""
    expires_after: float | None
    """The ``expires`` it asked for, in seconds (None: it never expires)."""


@dataclass(frozen=True)
class ConsumerSnapshot:
    """A consumer (``server.consumer(stream, name)``): the numbers of
    ``$JS.API.CONSUMER.INFO`` and what it does not show (each pending ack, each waiting pull
    request, the redelivery queue)."""

    stream: str
    """The stream it reads."""
    name: str
    """Its name (the durable name for a durable consumer)."""
    config: dict
    """Its configuration as ``CONSUMER.INFO`` shows it (JSON field names, defaults filled in)."""
    delivered_stream_seq: int
    """The stream sequence of the last message delivered (``delivered.stream_seq``)."""
    delivered_consumer_seq: int
    """The consumer sequence of the last delivery (``delivered.consumer_seq``)."""
    ack_floor_stream_seq: int
    """The stream sequence below which every message is acked (``ack_floor.stream_seq``)."""
    ack_floor_consumer_seq: int
    """The same floor in consumer sequences (``ack_floor.consumer_seq``)."""
    num_pending: int
    """Messages matching its filter not delivered yet."""
    num_ack_pending: int
    """Deliveries waiting for an ack (``len(pending)``)."""
    num_redelivered: int
    """Messages delivered more than once and not acked yet."""
    pending: list[PendingAck]
    """Each delivered, unacked message, by stream sequence."""
    waiting: list[WaitingPull]
    """Pull requests waiting for messages (pull consumers)."""
    redelivery_queue: list[int]
    """Stream sequences queued for redelivery, in the order they go out."""
    paused: bool
    """Whether it is paused (``pause_until`` in the future)."""
    push_bound: bool
    """For a push consumer: whether someone subscribes to its deliver subject."""

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as plain dicts and lists (what the control plane sends as JSON)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SubscriptionSnapshot:
    """One subscription of a client (``ConnectionSnapshot.subscriptions``)."""

    subject: str
    """The subject, wildcards included."""
    queue: str
    """The queue group ("" for none)."""
    sid: str
    """The client's subscription id."""


@dataclass(frozen=True)
class ConnectionSnapshot:
    """An open client connection (``server.connections_info()``)."""

    cid: int
    """The client id (``cid`` in ``/connz``; ``faults.disconnect()`` takes it)."""
    name: str
    """The connection name the client gave in CONNECT ("" for none)."""
    lang: str
    """The client library's language (``python``, ``javascript``, ``go``, ...)."""
    version: str
    """The client library's version."""
    host: str
    """The client's address."""
    port: int
    """The client's port."""
    subscriptions: list[SubscriptionSnapshot]
    """Its subscriptions."""
    pending_bytes: int
    """Bytes queued for it, not yet written to its socket."""
    server: str = ""  # in a cluster: the node the client is connected to

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as plain dicts and lists (what the control plane sends as JSON)."""
        return dataclasses.asdict(self)


def find_stream(server: Any, name: str, account: str | None = None) -> Any:
    """The live stream ``name`` of ``account``; without ``account``, the one stream of that
    name in any account (``LookupError`` when none, or when several accounts have one)."""
    group = server.jetstream_group
    if group is None:
        raise LookupError("JetStream is not enabled on this server (start it with jetstream=True"
                          " or -js)")
    if account is not None:
        engine = group.engines.get(account)
        if engine is None:
            raise LookupError(f"account {account!r} has no JetStream")
        found = [engine.lookup(name)]
    else:
        found = [e.lookup(name) for _, e in sorted(group.engines.items())]
    found = [s for s in found if s is not None]
    if not found:
        raise LookupError(f"no stream {name!r}")
    if len(found) > 1:
        where = ", ".join(s.engine.account_name for s in found)
        raise LookupError(f"stream {name!r} exists in accounts {where}: pass account=")
    return found[0]


def streams(server: Any) -> list[StreamSnapshot]:
    """Every stream, by account and name."""
    group = server.jetstream_group
    if group is None:
        return []
    return [_stream(s) for _, e in sorted(group.engines.items())
            for _, s in sorted(e.streams.items())]


def stream(server: Any, name: str, account: str | None = None) -> StreamSnapshot:
    return _stream(find_stream(server, name, account))


def _stream(s: Any) -> StreamSnapshot:
    st = s.store.state()
    store = s.store
    subjects = dict(store.subject_state(None))
    return StreamSnapshot(
        name=s.name, config=to_json_dict(s.config, dynamic_metadata=False), messages=st.msgs,
        bytes=st.bytes, first_seq=st.first_seq, last_seq=st.last_seq,
        consumers=sorted(s.consumers), subjects=subjects, account=s.engine.account_name)


def messages(server: Any, name: str, *, subject: str | None = None, start_seq: int = 1,
             limit: int = 1000, account: str | None = None) -> list[MessageSnapshot]:
    """Stored messages of a stream from ``start_seq`` (matching ``subject``, wildcards allowed;
    an invalid filter is a ``ValueError``), at most ``limit``."""
    s = find_stream(server, name, account)
    if subject == "":
        subject = None
    if subject is not None and not is_valid_subject(subject.encode()):
        raise ValueError(f"invalid subject filter {subject!r}")
    out: list[MessageSnapshot] = []
    seq = max(start_seq, 1)
    while len(out) < limit:
        sm = s.store.load_next(seq, subject)
        if sm is None:
            break
        out.append(_message(sm))
        seq = sm.seq + 1
    return out


def message(server: Any, name: str, seq: int, account: str | None = None
            ) -> MessageSnapshot | None:
    s = find_stream(server, name, account)
    sm = s.store.load(seq)
    return None if sm is None else _message(sm)


def _message(sm: Any) -> MessageSnapshot:
    return MessageSnapshot(seq=sm.seq, subject=sm.subject, data=bytes(sm.data),
                           headers=bytes(sm.hdr) if sm.hdr else None, time=sm.ts / 1e9)


def consumer(server: Any, stream_name: str, name: str, account: str | None = None
             ) -> ConsumerSnapshot:
    s = find_stream(server, stream_name, account)
    c = s.consumers.get(name)
    if c is None:
        raise LookupError(f"stream {stream_name!r} has no consumer {name!r}")
    info = c.info()
    acks = c.acks
    pending = [PendingAck(stream_seq=seq, consumer_seq=p[0], deliveries=acks.rdc.get(seq, 1),
                          due=(p[1] / 1e9) if p[1] > 0 else None)
               for seq, p in sorted(acks.pending.items())]
    waiting = [WaitingPull(reply=wr.reply.decode(), batch=wr.n, max_bytes=wr.b,
                           no_wait=wr.no_wait,
                           expires_after=(wr.expires / 1e9) if wr.expires else None)
               for wr in c.pull.waiting]
    delivered, floor = info["delivered"], info["ack_floor"]
    return ConsumerSnapshot(
        stream=stream_name, name=name, config=parse_json(dumps(info["config"])),
        delivered_stream_seq=delivered["stream_seq"],
        delivered_consumer_seq=delivered["consumer_seq"],
        ack_floor_stream_seq=floor["stream_seq"], ack_floor_consumer_seq=floor["consumer_seq"],
        num_pending=info["num_pending"], num_ack_pending=info["num_ack_pending"],
        num_redelivered=info["num_redelivered"], pending=pending, waiting=waiting,
        redelivery_queue=list(acks.rdq), paused=bool(info.get("paused")),
        push_bound=bool(info.get("push_bound")))


def connections(server: Any) -> list[ConnectionSnapshot]:
    """Every open client connection, by id."""
    out = []
    for cid, conn in sorted(server.connections.items()):
        if conn.closed:
            continue
        subs = [SubscriptionSnapshot(subject=sub.subject.decode("utf-8", "replace"),
                                     queue=(sub.queue or b"").decode("utf-8", "replace"),
                                     sid=sub.sid.decode("utf-8", "replace"))
                for sub in conn.subs.values()]
        out.append(ConnectionSnapshot(
            cid=cid, name=conn.name, lang=conn.lang, version=conn.version, host=conn.host,
            port=conn.port, subscriptions=subs, pending_bytes=conn.pending_bytes))
    return out
