"""The ``$JS.API.STREAM.>`` and ``$JS.API.DIRECT.GET.>`` endpoints: create, update, info,
delete, purge, names, list, message get and delete, snapshot, restore and direct get.

Each handler decodes its request, checks it in nats-server's order (the order of refusals is
what a client sees), calls the engine and returns the reply fields or raises
:class:`~minijs.jetstream.errors.ApiError`; the dispatcher (:mod:`~minijs.jetstream.api.dispatch`)
wraps, counts and sends the reply. ``DIRECT.GET`` answers by itself, with raw messages.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minijs.core import subjects as _subjects
from minijs.core.transform import SubjectTransform
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.api.endpoints import LIST_LIMIT, NAMES_LIMIT, Endpoints
from minijs.jetstream.config import stream as C

if TYPE_CHECKING:
    from minijs.jetstream.streams.stream import Stream

#: Subjects a STREAM.INFO with ``subjects_filter`` lists at most per page.
SUBJECTS_LIMIT = 100_000

_INFO_REQUEST = {"deleted_details": J.BOOL, "subjects_filter": J.STRING, "offset": J.INT}
_PURGE_REQUEST = {"filter": J.STRING, "seq": J.UINT64, "keep": J.UINT64}
_NAMES_REQUEST = {"offset": J.INT, "subject": J.STRING}
_MSG_DELETE_REQUEST = {"seq": J.UINT64, "no_erase": J.BOOL}
_SNAPSHOT_REQUEST = {"deliver_subject": J.STRING, "no_consumers": J.BOOL, "chunk_size": J.INT,
                     "window_size": J.INT, "jsck": J.BOOL}
_RESTORE_REQUEST = J.Struct("JSApiStreamRestoreRequest",
                            {"config": C.STREAM_CONFIG_TYPE, "state": C.STREAM_STATE_TYPE})


def _uncounted(err: E.ApiError) -> dict:
    """Reply fields for an error nats-server sends through its success path
    (``sendAPIResponse`` with ``resp.Error`` set): the requester sees the error, but it counts
    as a request only, not in ``api.errors``."""
    return {"error": err.to_json()}


class StreamApi(Endpoints):
    """Serves the stream endpoints of one engine."""

    def _check_overlap(self, cfg: C.StreamConfig) -> None:
        for other in self.js.streams.values():
            if other.name == cfg.name:
                continue
            for a in cfg.subjects or ():
                for b in other.config.subjects or ():
                    if _subjects.subjects_overlap(a, b):
                        raise E.stream_subject_overlap()

    def create(self, payload: bytes, name: str) -> dict:
        cfg, pedantic = C.parse_stream_config(payload)
        if cfg.name != name:
            raise E.stream_mismatch()
        # Options minijs does not implement are refused last, where nats-server would
        # succeed; the server's resource limits come after the existing-name check.
        cfg = C.validate_and_default(cfg, create=True, pedantic=pedantic,
                                     lookup=self.js.lookup_config, unsupported=False,
                                     max_duplicate_window=self.js.js_limits.duplicate_window)
        self.js.check_stream_count(name)
        self.js.check_max_bytes_limits(cfg)
        existing = self.js.lookup(name)
        if existing is not None:
            if not C.same_config(cfg, existing.config):
                raise E.stream_name_exist()
            stream = existing
        else:
            self.js.check_stream_resources(cfg)
            self._check_overlap(cfg)
            C.check_unsupported(cfg, self.js.lookup_config)
            self.js.check_external(cfg)
            stream = self.js.create_stream(cfg)
            self.js.advisories.stream_action(stream.name, "create")
        info = stream.info_json(cluster=False)
        info["did_create"] = True
        return info

    def update(self, payload: bytes, name: str) -> dict:
        cfg, pedantic = C.parse_stream_config(payload)
        cfg = C.validate_and_default(cfg, create=False, pedantic=pedantic,
                                     lookup=self.js.lookup_config, unsupported=False,
                                     max_duplicate_window=self.js.js_limits.duplicate_window)
        self.js.check_max_bytes_limits(cfg)
        if cfg.name != name:
            raise E.stream_mismatch()
        stream = self._stream(name)
        cfg = C.check_update(stream.config, cfg, pedantic=pedantic, lookup=self.js.lookup_config,
                             unsupported=False)
        self.js.check_stream_resources(cfg, old=stream.config)
        C.check_consumer_limits(stream.config, cfg, [
            (c.name, c.inactive_threshold, c.max_ack_pending) for c in stream.consumers.values()])
        self._check_overlap(cfg)
        C.check_unsupported(cfg, self.js.lookup_config)
        self.js.check_external(cfg)
        if cfg.republish:
            # nats-server builds the republish transform only as it applies an update (a
            # create without a destination builds none): a bad one fails the update there.
            src = cfg.republish.get("src") or ">"
            dest = cfg.republish.get("dest") or ">"
            try:
                SubjectTransform(src, dest)
            except ValueError as exc:
                raise E.stream_update(f"stream configuration for republish from '{src}' to "
                                      f"'{dest}': {exc}") from None
        self.js.update_stream(stream, cfg)
        self.js.advisories.stream_action(stream.name, "modify")
        return stream.info_json(cluster=False, domain=self.js.domain)

    def info(self, payload: bytes, name: str) -> dict:
        req: dict = {}
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, _INFO_REQUEST, "JSApiStreamInfoRequest")
        stream = self._stream(name)
        total = offset = limit = 0
        filt = req.get("subjects_filter") or None
        window = None
        if filt:
            subjects = stream.store.subject_state(filt)
            if subjects:  # paging fields (the offset too) only when some subject matched
                offset = max(0, req.get("offset", 0))
                total = len(subjects)
                limit = SUBJECTS_LIMIT
                window = (offset, limit)
        info = stream.info_json(deleted_details=bool(req.get("deleted_details")),
                                subjects_filter=filt, subjects_window=window,
                                domain=self.js.domain)
        out = {"total": total, "offset": offset, "limit": limit}
        out.update(info)
        return out

    def delete(self, payload: bytes, name: str) -> dict:
        if not J.is_empty_request(payload):
            raise E.not_empty_request()
        stream = self._stream(name)
        self.js.delete_stream(stream)
        self.js.advisories.stream_action(name, "delete")
        return {"success": True}

    def purge(self, payload: bytes, name: str) -> dict:
        req: dict = {}
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, _PURGE_REQUEST, "JSApiStreamPurgeRequest")
        seq, keep = req.get("seq", 0), req.get("keep", 0)
        if seq > 0 and keep > 0:  # refused before the stream lookup
            raise E.bad_request()
        stream = self._stream(name)
        if stream.config.sealed:
            raise E.stream_sealed()
        if stream.config.deny_purge:
            raise E.purge_not_permitted()
        purged = stream.purge(req.get("filter") or None, seq, keep)
        return {"success": True, "purged": purged}

    def _matching_streams(self, payload: bytes, struct_name: str) -> tuple[list["Stream"], int]:
        """The sorted streams a NAMES/LIST body selects and the page offset: a body is decoded
        only when it is a JSON object or array; a negative offset counts as 0 and one past the
        end is clamped to the total (nats-server echoes the clamped value)."""
        req: dict = {}
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, _NAMES_REQUEST, struct_name)
        filt = req.get("subject") or ""
        streams = sorted(self.js.streams.values(), key=lambda s: s.name)
        if filt:
            streams = [s for s in streams if s.subjects_overlap(filt)]
        return streams, min(max(0, req.get("offset", 0)), len(streams))

    def names(self, payload: bytes) -> dict:
        streams, offset = self._matching_streams(payload, "JSApiStreamNamesRequest")
        page = [s.name for s in streams[offset:offset + NAMES_LIMIT]]
        return {"total": len(streams), "offset": offset, "limit": NAMES_LIMIT,
                "streams": page or None}

    def list(self, payload: bytes) -> dict:
        streams, offset = self._matching_streams(payload, "JSApiStreamListRequest")
        page = [s.info_json(dynamic_metadata=False, cluster=False, domain=self.js.domain)
                for s in streams[offset:offset + LIST_LIMIT]]
        return {"total": len(streams), "offset": offset, "limit": LIST_LIMIT, "streams": page}

    def msg_get(self, payload: bytes, name: str) -> dict:
        from minijs.jetstream.api import msgget
        req = msgget.parse_msg_get(payload)  # the body is checked before the stream lookup
        stream = self._stream(name)
        return msgget.msg_get(stream.store, req)

    def msg_delete(self, payload: bytes, name: str) -> dict:
        # The body is checked before the stream lookup: ``{}`` is 10003, a whitespace-only
        # body decodes to nothing (seq 0).
        if J.is_empty_request(payload):
            raise E.bad_request()
        req = J.decode_strict(payload, _MSG_DELETE_REQUEST, "JSApiMsgDeleteRequest")
        stream = self._stream(name)
        if stream.config.sealed:
            raise E.stream_sealed()
        if stream.config.deny_delete:
            raise E.message_delete_not_permitted()
        seq = req.get("seq", 0)
        # The store's own refusals travel nats-server's success path: an error reply that
        # api.errors does not count.
        if stream.config.storage == "file":
            # The file store reports these itself, wrapped as 500/10057 (observed on 2.15.1).
            # Below the first message no block holds the sequence: "not found", not "EOF".
            if seq == 0 or (seq < stream.store.first_seq and seq <= stream.store.last_seq):
                return _uncounted(E.stream_msg_delete_failed("no message found"))
            if seq > stream.store.last_seq:
                return _uncounted(E.stream_msg_delete_failed("stream store EOF"))
        if not stream.remove_msg(seq, not req.get("no_erase", False)):
            return _uncounted(E.sequence_not_found(seq))
        return {"success": True}

    def snapshot(self, payload: bytes, name: str) -> dict:
        """nats-server's checks, in its order: empty body, stream, body, deliver subject; then
        the snapshot is sent in minijs's format (:mod:`snapshot`)."""
        if J.is_empty_request(payload):
            raise E.bad_request()
        self._stream(name)
        req = J.decode_strict(payload, _SNAPSHOT_REQUEST, "JSApiStreamSnapshotRequest")
        if not C.is_valid_publish_subject(req.get("deliver_subject", "")):
            raise E.snapshot_deliver_subject_invalid()
        from minijs.jetstream.api import snapshot
        return snapshot.snapshot(self.js, self._stream(name), req,
                                 self.api.requester_info())

    def restore(self, payload: bytes, name: str) -> dict:
        """nats-server's checks, in its order: empty body, body, name (an omitted one is the
        subject's), path separators, the config, an existing stream; then the chunks are
        received (:mod:`snapshot`)."""
        if J.is_empty_request(payload):
            raise E.bad_request()
        req = J.decode_strict(payload, _RESTORE_REQUEST)
        cfg = C.stream_config_from_dict(req.get("config") or {})
        if not cfg.name:
            cfg.name = name
        if cfg.name != name:
            raise E.stream_mismatch()
        if "/" in name or "\\" in name:
            raise E.stream_name_contains_path_separators()
        cfg = C.check_restore_config(cfg)
        self.js.check_stream_resources(cfg)
        if self.js.lookup(name) is not None:
            raise E.stream_name_exist_restore_failed()
        from minijs.jetstream.api import snapshot
        return snapshot.restore(self.js, cfg, self.api.requester_info())

    # ------------------------------------------------------------------ DIRECT.GET

    def direct_get(self, subject: bytes, reply: bytes | None, hdr: bytes | None, payload: bytes,
                   origin: Any, name: str, suffix: str | None = None) -> None:
        from minijs.jetstream.api import msgget
        stream = self.js.lookup(name)
        if stream is None or not stream.config.allow_direct:
            # a caught-up mirror with mirror_direct answers for its origin too
            stream = self.js.replicator.direct_mirror(name)
        if stream is None:
            self.api.no_responders(subject, reply, origin)
            return
        if not reply or self._refuse_api_level(reply, hdr):
            return
        replies = msgget.direct_get(stream.store, stream.name, payload, suffix,
                                    self.bus.config.max_pending)
        publish = self.bus.publish
        for rhdr, body in replies:
            publish(reply, None, rhdr, body)
