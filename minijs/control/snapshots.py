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
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.config.stream import to_json_dict


@dataclass(frozen=True)
class MessageSnapshot:
    seq: int
    subject: str
    data: bytes
    headers: bytes | None
    time: float  # seconds since the epoch


@dataclass(frozen=True)
class StreamSnapshot:
    name: str
    config: dict
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: list[str]
    subjects: dict[str, int] = field(default_factory=dict)
    account: str = "$G"  # the account the stream belongs to

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PendingAck:
    """A delivered message waiting for its ack."""

    stream_seq: int
    consumer_seq: int
    deliveries: int
    due: float | None  # when ack_wait runs out (server clock), None while queued for redelivery


@dataclass(frozen=True)
class WaitingPull:
    """A pull request waiting for messages."""

    reply: str
    batch: int
    max_bytes: int
    no_wait: bool
    expires_after: float | None  # the ``expires`` it asked for, in seconds (None: never)


@dataclass(frozen=True)
class ConsumerSnapshot:
    stream: str
    name: str
    config: dict
    delivered_stream_seq: int
    delivered_consumer_seq: int
    ack_floor_stream_seq: int
    ack_floor_consumer_seq: int
    num_pending: int
    num_ack_pending: int
    num_redelivered: int
    pending: list[PendingAck]
    waiting: list[WaitingPull]
    redelivery_queue: list[int]
    paused: bool
    push_bound: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SubscriptionSnapshot:
    subject: str
    queue: str
    sid: str


@dataclass(frozen=True)
class ConnectionSnapshot:
    cid: int
    name: str
    lang: str
    version: str
    host: str
    port: int
    subscriptions: list[SubscriptionSnapshot]
    pending_bytes: int
    server: str = ""  # in a cluster: the node the client is connected to

    def to_dict(self) -> dict[str, Any]:
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
    pending = [PendingAck(stream_seq=seq, consumer_seq=p[0], deliveries=c.rdc.get(seq, 1),
                          due=(p[1] / 1e9) if p[1] > 0 else None)
               for seq, p in sorted(c.pending.items())]
    waiting = [WaitingPull(reply=wr.reply.decode(), batch=wr.n, max_bytes=wr.b,
                           no_wait=wr.no_wait,
                           expires_after=(wr.expires / 1e9) if wr.expires else None)
               for wr in c.waiting]
    delivered, floor = info["delivered"], info["ack_floor"]
    return ConsumerSnapshot(
        stream=stream_name, name=name, config=J.parse_json(J.dumps(info["config"])),
        delivered_stream_seq=delivered["stream_seq"],
        delivered_consumer_seq=delivered["consumer_seq"],
        ack_floor_stream_seq=floor["stream_seq"], ack_floor_consumer_seq=floor["consumer_seq"],
        num_pending=info["num_pending"], num_ack_pending=info["num_ack_pending"],
        num_redelivered=info["num_redelivered"], pending=pending, waiting=waiting,
        redelivery_queue=list(c.rdq), paused=bool(info.get("paused")),
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
