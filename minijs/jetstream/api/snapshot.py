"""Stream snapshots and restores (``$JS.API.STREAM.SNAPSHOT.<stream>`` / ``RESTORE``).

The transfer is nats-server's (``jetstream_api.go``), which the ``nats`` CLI's
``stream backup`` / ``restore`` and nats.go's ``jsm`` speak:

* **Snapshot**: the API reply carries the stream's config and state; then the snapshot goes to
  the request's ``deliver_subject`` in chunks (``chunk_size``, default 128 KiB, clamped to
  1 KiB–1 MiB), each with the reply subject ``$JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>``
  except a last, short one, which has none;
  at most ``window_size / chunk_size`` chunks are unacknowledged (window default 8 MiB, clamped
  to 1 KiB–32 MiB); the end is an empty message with the status header ``NATS/1.0 204`` (a
  bare empty message when not one full chunk was sent, as nats-server does). A
  receiver that acknowledges nothing for 5 s (server clock) ends it with
  ``NATS/1.0 408 No Flow Response``.
* **Restore**: the API reply names a ``deliver_subject``
  (``$JS.SNAPSHOT.RESTORE.<stream>.<id>``); the client sends the chunks there, each with a
  reply subject, and each is answered with an empty message; an empty chunk ends the transfer
  and its reply receives the outcome as a ``stream_create_response`` (the restored stream's
  info, or ``500/10062 restore failed: …``). Five seconds without a chunk abandon the restore.

The bytes are minijs's own, not nats-server's (an s2-compressed tar of its file store, which
minijs cannot produce), but like nats-server's they are a snappy stream (uncompressed chunks,
:mod:`minijs.protocol.snappy`), so backup tools that watch progress through an s2 reader work:
inside, :data:`MAGIC`, then a zlib-compressed JSON document with the config,
the creation time, the first and last sequences, every message (sequence, subject, header,
data, timestamp, TTL) and, unless ``no_consumers``, each consumer's durable state document
(:mod:`consumer_state`). A snapshot taken from minijs restores into minijs exactly; a
nats-server snapshot is refused with a clear error in the reply to its first chunk, and a
minijs snapshot is likewise refused by nats-server.

The advisories ``$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE|SNAPSHOT_COMPLETE|RESTORE_CREATE|
RESTORE_COMPLETE.<stream>`` are published as nats-server does (the restore's ``bytes`` count
what was received).
"""
from __future__ import annotations

import base64
import json
import zlib
from typing import TYPE_CHECKING, Any

from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.advisory import new_id
from minijs.jetstream.config.stream import StreamConfig, to_json_dict
from minijs.jetstream.consumers.state import STATE_PREFIX
from minijs.protocol import snappy

if TYPE_CHECKING:
    from minijs.jetstream.engine import JetStream
    from minijs.jetstream.streams.stream import Stream

#: The first bytes of a minijs snapshot.
MAGIC = b"MINIJS-SNAPSHOT/1\n"
DEFAULT_CHUNK = 128 * 1024
DEFAULT_WINDOW = 8 * 1024 * 1024
ACK_TIMEOUT = 5.0
RESTORE_STALL = 5.0
STATUS_DONE = b"NATS/1.0 204\r\n\r\n"
STATUS_NO_FLOW = b"NATS/1.0 408 No Flow Response\r\n\r\n"
NOT_MINIJS = ("minijs can restore only snapshots taken by minijs; this one is not in its format "
              "(a nats-server snapshot, an s2-compressed tar of its file store, is not supported)")
_CREATE_RESPONSE = "io.nats.jetstream.api.v1.stream_create_response"


# ------------------------------------------------------------------------------ the format


def encode(stream: "Stream", *, consumers: bool = True) -> bytes:
    """The snapshot bytes of ``stream``."""
    store = stream.store
    msgs: list[list[Any]] = []
    seq = store.first_seq
    while True:
        sm = store.load_next(seq)
        if sm is None:
            break
        msgs.append([sm.seq, sm.subject,
                     base64.b64encode(sm.hdr).decode() if sm.hdr else None,
                     base64.b64encode(sm.data).decode(), sm.ts, sm.ttl])
        seq = sm.seq + 1
    doc = {
        "config": to_json_dict(stream.config, dynamic_metadata=False),
        "created": stream.created,
        "first_seq": store.first_seq,
        "last_seq": store.last_seq,
        "last_ts": store.last_ts,
        "messages": msgs,
        "consumers": ([json.loads(c.state_document()) for c in stream.consumers.values()]
                      if consumers else []),
    }
    return snappy.frame(MAGIC + zlib.compress(json.dumps(doc, separators=(",", ":")).encode()))


def looks_foreign(head: bytes) -> bool:
    """Can the start of a transfer already be told not to be a minijs snapshot?"""
    want = snappy.STREAM_ID + b"\x01"
    if not (want.startswith(head[:len(want)]) or head[:len(want)].startswith(want)):
        return True
    off = snappy.first_payload_offset()
    got = head[off:off + len(MAGIC)]
    return not MAGIC.startswith(got)


def decode(data: bytes) -> dict[str, Any]:
    """The document of a minijs snapshot; raises ``ValueError`` with the reason otherwise."""
    try:
        inner = snappy.unframe(data)
    except ValueError:
        raise ValueError(NOT_MINIJS) from None
    if not inner.startswith(MAGIC):
        raise ValueError(NOT_MINIJS)
    try:
        return json.loads(zlib.decompress(inner[len(MAGIC):]))
    except Exception as exc:
        raise ValueError(f"snapshot is damaged: {exc}") from None


def restore_into(js: "JetStream", cfg: StreamConfig, doc: dict[str, Any]) -> "Stream":
    """Create the stream ``cfg`` and fill it from a snapshot document."""
    from minijs.jetstream.consumers.consumer import Consumer
    stream = js.create_stream(cfg)
    store = stream.store
    first, last = int(doc["first_seq"]), int(doc["last_seq"])
    if first > 1 and store.last_seq < first - 1:
        store.compact(first)
    for seq, subject, hdr, data, ts, ttl in doc["messages"]:
        store.store_msg(subject, base64.b64decode(hdr) if hdr else None, base64.b64decode(data),
                        int(ts), int(ttl), seq=int(seq))
    if store.last_seq < last:
        store.skip_msgs(last - store.last_seq, int(doc.get("last_ts", 0)))
    stream.after_restore(int(doc["created"]))
    for cdoc in doc.get("consumers", ()):
        consumer = Consumer.restore(stream, cdoc)
        stream.consumers[consumer.name] = consumer
        if consumer.durable.persist:
            store.put_meta(STATE_PREFIX + consumer.name,
                           json.dumps(cdoc, separators=(",", ":")).encode())
        consumer.start()
    js.flush_now(stream)
    return stream


# ------------------------------------------------------------------------------ snapshot


class SnapshotSender:
    """Streams one snapshot to a deliver subject with nats-server's flow control."""

    def __init__(self, js: "JetStream", stream: "Stream", data: bytes, deliver: str,
                 chunk_size: int, window_size: int, client: dict | None = None) -> None:
        chunk = chunk_size or DEFAULT_CHUNK
        window = window_size or DEFAULT_WINDOW
        chunk = min(max(1024, chunk), 1024 * 1024)
        window = max(min(max(1024, window), 32 * 1024 * 1024), chunk)
        self.js = js
        self.bus = js.bus
        self.data = data
        self.deliver = deliver.encode()
        self.chunk = chunk
        self.slots = window // chunk
        self.offset = 0
        self.index = 1
        self.ack_subject = f"$JS.SNAPSHOT.ACK.{stream.name}.{new_id(self.bus)}"
        self._ack_sub: Any = None
        self._timer: Any = None
        self.done = False
        self.stream = stream
        self.client = client
        self.started = js.bus.clock.time_ns()

    def start(self) -> None:
        self.js.advisories.advise(
            f"$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE.{self.stream.name}",
            "advisory.v1.snapshot_create",
            {"stream": self.stream.name, "state": self.stream.state_json(),
             "client": self.client})
        self._ack_sub = self.bus.subscribe_internal(self.ack_subject + ".>", self._on_ack)
        self._send()

    def _on_ack(self, *_: Any) -> None:
        if self.done:
            return
        self.slots += 1
        self._send()

    def _send(self) -> None:
        bus = self.bus
        while self.slots > 0 and not self.done:
            piece = self.data[self.offset:self.offset + self.chunk]
            if not piece:
                self._finish(STATUS_DONE)
                return
            self.slots -= 1
            self.offset += len(piece)
            if len(piece) < self.chunk:
                # nats-server's last, short chunk: no ack asked, the end follows at once.
                bus.publish(self.deliver, None, None, piece)
                self._finish(STATUS_DONE)
                return
            reply = f"{self.ack_subject}.{len(piece)}.{self.index}".encode()
            self.index += 1
            bus.publish(self.deliver, reply, None, piece)
        if not self.done:
            self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.bus.clock.call_later(ACK_TIMEOUT, self._no_flow)

    def _no_flow(self) -> None:
        self._timer = None
        if not self.done:
            self._finish(STATUS_NO_FLOW)

    def _finish(self, status: bytes | None) -> None:
        if status == STATUS_DONE and self.index == 1:
            status = None  # nats-server: no full chunk went out, the end is a bare empty message
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._ack_sub is not None:
            self.bus.unsubscribe_internal(self._ack_sub)
            self._ack_sub = None
        self.bus.publish(self.deliver, None, status, b"")
        fields = {"stream": self.stream.name, "start": J.go_time(self.started),
                  "end": J.go_time(self.bus.clock.time_ns()), "client": self.client}
        if status == STATUS_NO_FLOW:
            fields["error"] = "no flow response"
        self.js.advisories.advise(
            f"$JS.EVENT.ADVISORY.STREAM.SNAPSHOT_COMPLETE.{self.stream.name}",
            "advisory.v1.snapshot_complete", fields)


def snapshot(js: "JetStream", stream: "Stream", req: dict[str, Any],
             client: dict | None = None) -> dict[str, Any]:
    """Answer a snapshot request (already checked) and start sending on the next turn."""
    data = encode(stream, consumers=not req.get("no_consumers", False))
    fields = {"config": to_json_dict(stream.config, dynamic_metadata=False),
              "state": stream.state_json()}
    sender = SnapshotSender(js, stream, data, req["deliver_subject"],
                            int(req.get("chunk_size") or 0), int(req.get("window_size") or 0),
                            client)
    js.soon(sender.start)
    return fields


# ------------------------------------------------------------------------------ restore


class RestoreReceiver:
    """Collects the chunks of one restore and creates the stream at the end."""

    def __init__(self, js: "JetStream", cfg: StreamConfig, client: dict | None = None) -> None:
        self.js = js
        self.client = client
        self.started = js.bus.clock.time_ns()
        js.advisories.advise(f"$JS.EVENT.ADVISORY.STREAM.RESTORE_CREATE.{cfg.name}",
                             "advisory.v1.restore_create", {"stream": cfg.name, "client": client})
        self.bus = js.bus
        self.cfg = cfg
        self.subject = f"$JS.SNAPSHOT.RESTORE.{cfg.name}.{new_id(self.bus)}"
        self.parts: list[bytes] = []
        self._sub = self.bus.subscribe_internal(self.subject, self._on_chunk)
        self._timer: Any = None
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.bus.clock.call_later(RESTORE_STALL, self._stalled)

    def _stalled(self) -> None:
        self._timer = None
        self.js.log.warn(f"restore for stream '{self.js.account_name} > {self.cfg.name}' is stalled")
        self._close()

    def _close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sub is not None:
            self.bus.unsubscribe_internal(self._sub)
            self._sub = None

    def _on_chunk(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                  payload: bytes, origin: Any) -> None:
        if self._sub is None:
            return
        if not reply:
            self.js.log.warn(f"restore for stream '{self.js.account_name} > {self.cfg.name}' requires reply "
                             f"subject for each chunk")
            self._close()
            return
        if payload:
            self.parts.append(bytes(payload))
            head = b"".join(self.parts[:2])[:snappy.first_payload_offset() + len(MAGIC)]
            if looks_foreign(head):
                # Not minijs's format: refuse now rather than after the whole upload, the way
                # nats-server answers a chunk it cannot take (and ends the restore).
                self._close()
                err = E.stream_restore(NOT_MINIJS)
                self.bus.publish(reply, None, None, J.dumps(
                    {"type": _CREATE_RESPONSE, "error": err.to_json()}))
                return
            self._arm()
            self.bus.publish(reply, None, None, b"")
            return
        self._close()
        result = self._finish()
        self.js.advisories.advise(
            f"$JS.EVENT.ADVISORY.STREAM.RESTORE_COMPLETE.{self.cfg.name}",
            "advisory.v1.restore_complete",
            {"stream": self.cfg.name, "start": J.go_time(self.started),
             "end": J.go_time(self.bus.clock.time_ns()),
             "bytes": sum(len(p) for p in self.parts), "client": self.client})
        self.bus.publish(reply, None, None, J.dumps(result))

    def _finish(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": _CREATE_RESPONSE}
        try:
            data = b"".join(self.parts)
            if not data:
                raise ValueError("EOF")  # nats-server's reader finds nothing either
            doc = decode(data)
            if self.js.lookup(self.cfg.name) is not None:
                raise ValueError("stream name already in use")
            stream = restore_into(self.js, self.cfg, doc)
        except (ValueError, KeyError, TypeError, E.ApiError) as exc:
            err = E.stream_restore(exc.description if isinstance(exc, E.ApiError) else exc)
            body["error"] = err.to_json()
            return body
        body.update(stream.info_json(cluster=False))
        return body


def restore(js: "JetStream", cfg: StreamConfig, client: dict | None = None) -> dict[str, Any]:
    """Answer a restore request (already checked): where to send the chunks."""
    return {"deliver_subject": RestoreReceiver(js, cfg, client).subject}
