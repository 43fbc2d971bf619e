"""The ``$JS.API.CONSUMER.>`` endpoints: create, info, names, list, delete, pause, unpin, reset
and ``MSG.NEXT``, reached through the route table (:mod:`~minijs.jetstream.api.routes`).

Validation is entirely :mod:`minijs.jetstream.config.consumer` (already byte-exact with
nats-server), sequenced the way ``jsConsumerCreateRequest`` does by
:func:`~minijs.jetstream.consumers.create.plan_create`; this module turns the plan into a live
:class:`~minijs.jetstream.consumers.consumer.Consumer`.
"""
from __future__ import annotations

from typing import Any

from minijs.jetstream.api.endpoints import LIST_LIMIT, NAMES_LIMIT, Endpoints, check_api_level
from minijs.jetstream.config import consumer as C
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.consumers.consumer import Consumer
from minijs.jetstream.consumers.create import CreateLimits, plan_create

_CONSUMERS_REQUEST = {"offset": J.INT}
_PAUSE_REQUEST = {"pause_until": J.TIME}
_UNPIN_REQUEST = J.Struct("JSApiConsumerUnpinRequest", {"group": J.STRING})
_RESET_REQUEST = J.Struct("JSApiConsumerResetRequest", {"seq": J.UINT64})


class ConsumerApi(Endpoints):
    """Serves the consumer endpoints of one engine."""

    # ------------------------------------------------------------------ create

    def create(self, payload: bytes, hdr: bytes | None, subject: str) -> dict:
        """``jsConsumerCreateRequest`` + ``addConsumerWithAssignment``: the checks in server
        order are :func:`~minijs.jetstream.consumers.create.plan_create`'s (the body is
        decoded before the API level header is checked); the plan is applied here."""
        lim, acc = self.js.js_limits, self.js.account_limits
        stream, plan = plan_create(
            subject, payload, lookup=self.js.lookup,
            check_api_level=lambda: check_api_level(hdr),
            clustered=self.js.cluster is not None, randomness=self.bus.randomness,
            limits=CreateLimits(server_max_ack_pending=lim.max_ack_pending,
                                server_max_request_batch=lim.max_request_batch,
                                account_max_ack_pending=max(acc.max_ack_pending, 0),
                                account_max_consumers=max(acc.max_consumers, 0)))
        if plan.update:
            old = stream.consumers[plan.name]
            old.update_config(plan.config)
            return old.info()
        consumer = Consumer(stream, plan.name, plan.config)
        stream.consumers[plan.name] = consumer
        self._advise(stream.name, plan.name, "create")
        if consumer.is_paused():
            consumer.advise_pause()
        consumer.start()
        return consumer.info()

    @staticmethod
    def create_request(payload: bytes) -> Any:
        """A create request's body, decoded and checked (nats-server reports a bad one before
        it looks at the account's JetStream)."""
        return C.parse_create_request(payload)

    # ------------------------------------------------------------------ info / delete / lists

    def info(self, payload: bytes, hdr: bytes | None, stream_name: str, name: str) -> dict:
        """The empty-body check comes before the API level check."""
        if not J.is_empty_request(payload):
            raise E.not_empty_request()
        check_api_level(hdr)
        stream = self._stream(stream_name)
        return self._consumer(stream, name).info()

    def delete(self, payload: bytes, stream_name: str, name: str) -> dict:
        if not J.is_empty_request(payload):
            raise E.not_empty_request()
        stream = self._stream(stream_name)
        consumer = self._consumer(stream, name)
        stream.remove_consumer(consumer)
        return {"success": True}

    def _offset(self, payload: bytes) -> int:
        """The requested offset (negative counts as 0); the body is decoded before the stream
        is looked up, and only when it is a JSON object or array."""
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, _CONSUMERS_REQUEST, "JSApiConsumersRequest")
            return max(0, req.get("offset", 0))
        return 0

    def names(self, payload: bytes, stream_name: str) -> dict:
        offset = self._offset(payload)
        stream = self._stream(stream_name)
        names = sorted(stream.consumers)
        offset = min(offset, len(names))  # past the end: clamped to the total, and echoed so
        return {"total": len(names), "offset": offset, "limit": NAMES_LIMIT,
                "consumers": names[offset:offset + NAMES_LIMIT]}

    def list(self, payload: bytes, stream_name: str) -> dict:
        offset = self._offset(payload)
        stream = self._stream(stream_name)
        names = sorted(stream.consumers)
        offset = min(offset, len(names))
        page = [stream.consumers[n].info(dynamic_metadata=False)
                for n in names[offset:offset + LIST_LIMIT]]
        return {"total": len(names), "offset": offset, "limit": LIST_LIMIT, "consumers": page}

    def pause(self, payload: bytes, hdr: bytes | None, stream_name: str, name: str) -> dict:
        """``CONSUMER.PAUSE``: a JSON body may carry ``pause_until``; anything else (no body,
        ``{}``, a non-JSON text) resumes. Past times are stored but do not pause. The body is
        decoded before the API level header is checked."""
        until = 0
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, _PAUSE_REQUEST, "JSApiConsumerPauseRequest")
            until = int(req.get("pause_until") or 0)
        check_api_level(hdr)
        stream = self._stream(stream_name)
        consumer = self._consumer(stream, name)
        consumer.set_pause(until or None)
        out: dict[str, Any] = {"paused": consumer.is_paused(), "pause_until": J.go_time(until)}
        if out["paused"]:
            out["pause_remaining"] = until - self.js.clock.time_ns()
        return out

    def unpin(self, payload: bytes, stream_name: str, name: str) -> dict:
        """``CONSUMER.UNPIN``: the (lenient) body is checked first, then the group name, the
        stream, the consumer and whether the group is configured. Success is an empty reply
        plus the UNPINNED advisory (reason ``admin``), pinned or not."""
        group = self.unpin_group(payload)
        stream = self._stream(stream_name)
        consumer = self._consumer(stream, name)
        if group not in (consumer.config.priority_groups or ()):
            raise E.consumer_invalid_priority_group()
        consumer.unpin(group)
        return {}

    @staticmethod
    def unpin_group(payload: bytes) -> str:
        """The group an ``UNPIN`` body names, checked (what nats-server checks before it
        looks at the account's JetStream)."""
        req = J.decode_lenient(payload, _UNPIN_REQUEST)
        group = req.get("group") or ""
        if not group:
            raise E.invalid_json("consumer group not specified")
        if not C._GROUP_NAME_RE.fullmatch(group):
            raise E.consumer_invalid_group_name()
        return group

    def reset(self, subject: bytes, reply: bytes | None, hdr: bytes | None, payload: bytes,
              origin: Any, stream_name: str, name: str) -> None:
        """``CONSUMER.RESET`` (2.14+): served by the consumer itself, so a missing stream or
        consumer gets no reply at all. Body optional ``{"seq":N}`` (lenient); the reply is the
        consumer info plus ``reset_seq`` (errors carry ``"reset_seq":0``)."""
        stream = self.js.lookup(stream_name)
        consumer = stream.consumers.get(name) if stream is not None else None
        if consumer is None:
            return
        rtype = "io.nats.jetstream.api.v1.consumer_reset_response"
        try:
            if hdr and H.REQUIRED_API_LEVEL.encode() in hdr:
                check_api_level(hdr)
            seq = 0
            if payload:  # any byte, whitespace too, goes to json.Unmarshal
                seq = int(J.decode_lenient(payload, _RESET_REQUEST).get("seq") or 0)
            seq = consumer.reset(seq)
            body: dict[str, Any] = {"type": rtype}
            body.update(consumer.info())
            body["reset_seq"] = seq
        except E.ApiError as err:
            body = {"type": rtype, "error": err.to_json(), "reset_seq": 0}
        if reply:
            self.bus.publish(reply, None, None, J.dumps(body))

    # ------------------------------------------------------------------ MSG.NEXT

    def msg_next(self, subject: bytes, reply: bytes | None, hdr: bytes | None, payload: bytes,
                 origin: Any, stream_name: str, name: str) -> None:
        """Served by the consumer itself; without one the requester gets the core 503, as
        from nats-server where each consumer has its own subscription."""
        stream = self.js.lookup(stream_name)
        consumer = stream.consumers.get(name) if stream is not None else None
        if consumer is None:
            self.api.no_responders(subject, reply, origin)
            return
        if not reply or self._refuse_api_level(reply, hdr):
            return
        consumer.next_request(reply, payload)

    # ------------------------------------------------------------------ advisories

    def _advise(self, stream: str, consumer: str, action: str) -> None:
        self.js.advisories.consumer_action(stream, consumer, action)
