"""The ``$JS.API`` request dispatch: thin handlers that turn JSON into calls on the engine.

One internal subscription on ``$JS.API.>`` receives every request. The subject picks the
handler (an exact token count, as nats-server's per-endpoint subscriptions do: a subject that
names no endpoint gets no reply at all). Each handler returns the reply fields or raises
:class:`~minijs.jetstream.errors.ApiError`; the dispatcher wraps them in the
``{"type": "io.nats.jetstream.api.v1.<x>_response", ...}`` envelope, counts ``api.total`` /
``api.errors`` and publishes the reply. (The few errors nats-server sends as successes, not
counted in ``api.errors``, are returned as an ``error`` field instead of raised.)

``DIRECT.GET`` and ``CONSUMER.MSG.NEXT`` answer with raw messages or status headers instead of
JSON; when nothing serves them the requester gets the core 503, as from nats-server where
those subjects are served by per-stream/per-consumer subscriptions.
"""
from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Any, Callable

from minijs.core import subjects as _subjects
from minijs.core.msgtrace import SYSTEM_ACCOUNT
from minijs.jetstream.config import stream as C
from minijs.jetstream.advisory import new_id
from minijs.jetstream import errors as E
from minijs.core.transform import SubjectTransform
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.protocol import wire

if TYPE_CHECKING:
    from minijs.jetstream.api.consumers import ConsumerApi
    from minijs.jetstream.engine import JetStream
    from minijs.jetstream.streams.stream import Stream

API_PREFIX = b"$JS.API."
TYPE_PREFIX = "io.nats.jetstream.api.v1."
NAMES_LIMIT = 1024
LIST_LIMIT = 256
SUBJECTS_LIMIT = 100_000
API_LEVEL = 5
AUDIT_SUBJECT = b"$JS.EVENT.ADVISORY.API"

_INFO_REQUEST = {"deleted_details": J.BOOL, "subjects_filter": J.STRING, "offset": J.INT}
_PURGE_REQUEST = {"filter": J.STRING, "seq": J.UINT64, "keep": J.UINT64}
_NAMES_REQUEST = {"offset": J.INT, "subject": J.STRING}
_MSG_DELETE_REQUEST = {"seq": J.UINT64, "no_erase": J.BOOL}
_SNAPSHOT_REQUEST = {"deliver_subject": J.STRING, "no_consumers": J.BOOL, "chunk_size": J.INT,
                     "window_size": J.INT, "jsck": J.BOOL}
_RESTORE_REQUEST = J.Struct("JSApiStreamRestoreRequest",
                            {"config": C.STREAM_CONFIG_TYPE, "state": C.STREAM_STATE_TYPE})

#: API subjects nats-server serves in the client's account (not through the $SYS import).
_LOCAL_API = (b"$JS.API.DIRECT.GET.", b"$JS.API.CONSUMER.MSG.NEXT.")

#: Endpoints that exist only in a cluster: a single server answers 503/10010.
_CLUSTER_ONLY = {
    ("STREAM", "LEADER", "STEPDOWN"): "stream_leader_stepdown_response",
    ("STREAM", "PEER", "REMOVE"): "stream_remove_peer_response",
    ("STREAM", "PEER", "EVACUATE"): "stream_evacuate_peer_response",
    ("STREAM", "CANCEL_MOVE"): "stream_cancel_move_response",
}


class Reply(dict):
    """Reply fields (in emission order) of a successful request."""


_API_LEVEL_KEY = H.REQUIRED_API_LEVEL.encode()
_ATOI = re.compile(rb"[+-]?[0-9]+")


#: The subjects under ``$JS.<domain>.API.`` a server with a domain maps (nats-server's
#: ``generateJSMappingTable``).
_DOMAIN_MAPPED = ("INFO", "STREAM.>", "CONSUMER.>", "DIRECT.>", "META.>", "SERVER.>",
                  "ACCOUNT.>", "$KV.>", "$OBJ.>")


def _slice_header(hdr: bytes, key: bytes) -> bytes | None:
    """Go ``sliceHeader``: the value of the first ``\r\n<key>:`` line (exact case), leading
    spaces skipped, everything else up to the CRLF kept; None when absent."""
    i = hdr.find(b"\r\n" + key + b":")
    if i < 0:
        return None
    start = i + 2 + len(key) + 1
    while start < len(hdr) and hdr[start] == 0x20:
        start += 1
    end = hdr.find(b"\r\n", start)
    return hdr[start:end if end >= 0 else len(hdr)]


def _uncounted(err: E.ApiError) -> dict:
    """Reply fields for an error nats-server sends through its success path
    (``sendAPIResponse`` with ``resp.Error`` set): the requester sees the error, but it counts
    as a request only, not in ``api.errors``."""
    return {"error": err.to_json()}


class JetStreamApi:
    """Serves ``$JS.API.>`` for one engine, or, with no engine (``js`` None, given the
    account's ``bus``), for an account without JetStream: every endpoint then answers
    503/10039 "JetStream not enabled for account" (after the body checks nats-server makes
    first), the per-stream/consumer ones (``DIRECT.GET``, ``CONSUMER.MSG.NEXT``) no
    responders, as a server with JetStream in other accounts does."""

    def __init__(self, js: "JetStream | None", *, bus: Any = None) -> None:
        self.js = js
        self.server = js.bus if js is not None else bus
        self._sub: Any = None
        self._domain_subs: list[Any] = []
        #: ``jetstream { strict: false }``: bodies decoded as json.Unmarshal would.
        self.lenient = not getattr(self.server.config, "js_strict", True)
        self._domain_prefix_len = 0
        self._consumers: ConsumerApi | None = None
        #: Connection -> estimated RTT for audits until a PONG measured the real one.
        self._rtt_estimates: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: The requester of the request being handled.
        self._origin: Any = None

    @property
    def consumers(self) -> "ConsumerApi":
        """The CONSUMER.* endpoints (made, and the consumer modules imported, on first use)."""
        if self._consumers is None:
            from minijs.jetstream.api.consumers import ConsumerApi

            self._consumers = ConsumerApi(self.js, self)
        return self._consumers

    def start(self) -> None:
        self._sub = self.server.subscribe_internal(b"$JS.API.>", self._on_request,
                                                   on_traced=self._on_traced_request)
        domain = getattr(self.server.config, "js_domain", "") or ""
        if domain:
            # nats-server's generateJSMappingTable: the account maps these subjects of the
            # domain prefix onto the API (and $KV/$OBJ onto themselves); nothing else of
            # $JS.<domain>.API. is answered (no responders).
            prefix = f"$JS.{domain}.API."
            for suffix in _DOMAIN_MAPPED:
                self._domain_subs.append(self.server.subscribe_internal(
                    (prefix + suffix).encode(), self._on_domain_request))
            self._domain_prefix_len = len(prefix)

    def stop(self) -> None:
        if self._sub is not None:
            self.server.unsubscribe_internal(self._sub)
            self._sub = None
        for sub in self._domain_subs:
            self.server.unsubscribe_internal(sub)
        self._domain_subs.clear()

    def _on_domain_request(self, sub: Any, subject: bytes, reply: bytes | None,
                           hdr: bytes | None, payload: bytes, origin: Any) -> None:
        rest = subject[self._domain_prefix_len:]
        if rest.startswith((b"$KV.", b"$OBJ.")):
            self.server.publish(rest, reply, hdr, payload, origin)
            return
        self._on_request(sub, API_PREFIX + rest, reply, hdr, payload, origin)

    # ------------------------------------------------------------------ dispatch

    #: In a cluster, the system account's API: its meta-level requests go to the cluster.
    system_cluster: Any = None

    def _on_request(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                    payload: bytes, origin: Any) -> None:
        if self.system_cluster is not None and subject.startswith((b"$JS.API.META.",
                                                                   b"$JS.API.SERVER.")):
            self.system_cluster.system_request(self, subject, reply, payload)
            return
        tokens = subject[len(API_PREFIX):].decode("utf-8", "replace").split(".")
        route = self._route(tokens)
        if route is None:
            return  # no such endpoint: silence, like nats-server
        kind, rtype, handler, args = route
        if self.js is None:
            self._not_enabled(kind, rtype, handler, subject, reply, hdr, payload, origin)
            return
        cluster = self.js.cluster
        if cluster is not None and cluster.intercept(self, rtype, subject, reply, hdr, payload,
                                                     origin):
            return  # in a cluster another node answers, or the meta leader has proposed it
        if kind == "raw":
            handler(subject, reply, hdr, payload, origin, *args)
            return
        # A request without a reply subject is still performed, counted and audited, as
        # nats-server does; only the reply is skipped (nobody learns the result).
        self._origin = origin  # for the handlers that publish advisories about the requester
        token = J.LENIENT_REQUESTS.set(True) if self.lenient else None
        try:
            if kind == "json":
                if hdr and _API_LEVEL_KEY in hdr:
                    self._check_api_level(hdr)
                fields = handler(payload, *args)
            else:  # "json_hdr": the handler checks the API level itself, where nats-server does
                fields = handler(payload, hdr, *args)
            body = {"type": TYPE_PREFIX + rtype}
            body.update(fields)
        except Exception as exc:
            if isinstance(exc, E.ApiError):
                err = exc
            else:  # a bug: answer like nats-server's wrapped internal error, keep serving
                self.js.log.error(f"JetStream API {subject.decode(errors='replace')}: {exc!r}")
                err = E.ApiError(500, 10049 if "stream" in rtype else 10012, str(exc))
            if err.err_code == E.ErrCode.STREAM_REPLICAS_NOT_SUPPORTED:
                hint = getattr(getattr(self.server, "routes", None), "replicas_hint", "")
                if hint:  # processes joined by routes: say where replicas are to be had
                    err = E.ApiError(err.code, err.err_code, f"{err.description} ({hint})")
            self.js.api_errors += 1
            body = {"type": TYPE_PREFIX + rtype, "error": err.to_json()}
            body.update(_ERROR_EXTRAS.get(rtype, {}))
        finally:
            if token is not None:
                J.LENIENT_REQUESTS.reset(token)
        data = J.dumps(body)
        if reply:
            self.server.publish(reply, None, None, data)
        # Counted after the reply is built (INFO on a fresh server reports total 0); a
        # successful MSG.GET is answered outside nats-server's API accounting and audit.
        if rtype != "stream_msg_get_response" or "error" in body:
            self.js.api_total += 1
            self.audit(subject, payload, data, origin)

    @staticmethod
    def error_extras(rtype: str) -> dict:
        """The fields an error reply of ``rtype`` carries besides ``error`` (nats-server's
        response structs keep their zero values there)."""
        return dict(_ERROR_EXTRAS.get(rtype, {}))

    def _not_enabled(self, kind: str, rtype: str, handler: Callable[..., Any], subject: bytes,
                     reply: bytes | None, hdr: bytes | None, payload: bytes, origin: Any) -> None:
        """A request in an account without JetStream."""
        if kind == "raw":
            if subject.startswith(_LOCAL_API):
                self.no_responders(subject, reply, origin)
            return  # CONSUMER.RESET: served by the consumer, which cannot exist: silence
        try:
            if handler == self.cluster_only:
                raise E.cluster_required()
            if rtype == "consumer_create_response":
                from minijs.jetstream.config.consumer import parse_create_request

                parse_create_request(payload)  # a bad body is reported first
            elif rtype == "consumer_unpin_response":
                self.consumers.unpin_group(payload)
            raise E.not_enabled_for_account()
        except E.ApiError as err:
            body = {"type": TYPE_PREFIX + rtype, "error": err.to_json()}
            body.update(_ERROR_EXTRAS.get(rtype, {}))
        if reply:
            self.server.publish(reply, None, None, J.dumps(body))

    def _on_traced_request(self, sub: Any, trace: Any, subject: bytes, reply: bytes | None,
                           hdr: bytes | None, payload: bytes, origin: Any) -> bool:
        """A traced request (``Nats-Trace-Dest``). nats-server serves the API in the system
        account, imported into the client's: the trace records that service import, and a
        trace-only request stops there (it is not performed; a requester gets a 503). DIRECT.GET
        and CONSUMER.MSG.NEXT are served by the stream's and consumer's own subscriptions in the
        client's account: nothing is recorded and they are answered, trace-only too."""
        if not subject.startswith(_LOCAL_API):
            text = subject.decode("utf-8", "replace")
            trace.service_import(SYSTEM_ACCOUNT, text, text)
            if trace.only:
                return False
        self._on_request(sub, subject, reply, hdr, payload, origin)
        return True

    @staticmethod
    def _check_api_level(hdr: bytes | None) -> None:
        """nats-server's ``errorOnRequiredApiLevel``: the raw header value (leading spaces
        skipped, trailing ones kept) must be empty or a Go ``strconv.Atoi`` integer (ASCII
        digits, optional sign, int64 range) not above our level."""
        value = _slice_header(hdr, _API_LEVEL_KEY) if hdr else None
        if not value:
            return
        if not _ATOI.fullmatch(value):
            raise E.required_api_level()
        level = int(value)
        if not -(1 << 63) <= level < (1 << 63) or level > API_LEVEL:
            raise E.required_api_level()

    def _route(self, t: list[str]) -> tuple[str, str, Callable[..., Any], tuple] | None:
        n = len(t)
        head = t[0]
        if head == "INFO" and n == 1:
            return "json", "account_info_response", self.account_info, ()
        if head == "STREAM" and n >= 2:
            op = t[1]
            if n == 3:
                name = t[2]
                if op == "CREATE":
                    return "json", "stream_create_response", self.stream_create, (name,)
                if op == "UPDATE":
                    return "json", "stream_update_response", self.stream_update, (name,)
                if op == "INFO":
                    return "json", "stream_info_response", self.stream_info, (name,)
                if op == "DELETE":
                    return "json", "stream_delete_response", self.stream_delete, (name,)
                if op == "PURGE":
                    return "json", "stream_purge_response", self.stream_purge, (name,)
                if op == "SNAPSHOT":
                    return "json", "stream_snapshot_response", self.stream_snapshot, (name,)
                if op == "RESTORE":
                    return "json", "stream_restore_response", self.stream_restore, (name,)
                if op == "CANCEL_MOVE":
                    rtype = _CLUSTER_ONLY[("STREAM", "CANCEL_MOVE")]
                    return "json_hdr", rtype, self.cluster_only, ()
            if n == 2 and op == "NAMES":
                return "json", "stream_names_response", self.stream_names, ()
            if n == 2 and op == "LIST":
                return "json", "stream_list_response", self.stream_list, ()
            if n == 4 and op == "MSG":
                if t[2] == "GET":
                    return "json", "stream_msg_get_response", self.msg_get, (t[3],)
                if t[2] == "DELETE":
                    return "json", "stream_msg_delete_response", self.msg_delete, (t[3],)
            if n == 4:
                rtype = _CLUSTER_ONLY.get(("STREAM", op, t[2]))
                if rtype:
                    return "json_hdr", rtype, self.cluster_only, ()
            return None
        if head == "DIRECT" and n >= 3 and t[1] == "GET":
            suffix = ".".join(t[3:]) if n > 3 else None
            return "raw", "", self.direct_get, (t[2], suffix)
        if head == "CONSUMER":
            return self.js_consumer_route(t)
        return None

    def js_consumer_route(self, t: list[str]) -> tuple[str, str, Callable[..., Any], tuple] | None:
        """Consumer endpoints: served by :class:`~minijs.jetstream.api.consumers.ConsumerApi`."""
        return self.consumers.route(t)

    # ------------------------------------------------------------------ account

    def account_info(self, payload: bytes) -> dict:
        return self.js.account_info()

    def cluster_only(self, payload: bytes, hdr: bytes | None) -> dict:
        """A single server refuses these before it would look at the API level header."""
        raise E.cluster_required()

    # ------------------------------------------------------------------ streams

    def _stream(self, name: str) -> "Stream":
        stream = self.js.lookup(name)
        if stream is None:
            raise E.stream_not_found()
        return stream

    def _check_overlap(self, cfg: C.StreamConfig) -> None:
        for other in self.js.streams.values():
            if other.name == cfg.name:
                continue
            for a in cfg.subjects or ():
                for b in other.config.subjects or ():
                    if _subjects.subjects_overlap(a, b):
                        raise E.stream_subject_overlap()

    def stream_create(self, payload: bytes, name: str) -> dict:
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

    def stream_update(self, payload: bytes, name: str) -> dict:
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

    def stream_info(self, payload: bytes, name: str) -> dict:
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

    def stream_delete(self, payload: bytes, name: str) -> dict:
        if not J.is_empty_request(payload):
            raise E.not_empty_request()
        stream = self._stream(name)
        self.js.delete_stream(stream)
        self.js.advisories.stream_action(name, "delete")
        return {"success": True}

    def stream_purge(self, payload: bytes, name: str) -> dict:
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

    def stream_names(self, payload: bytes) -> dict:
        streams, offset = self._matching_streams(payload, "JSApiStreamNamesRequest")
        page = [s.name for s in streams[offset:offset + NAMES_LIMIT]]
        return {"total": len(streams), "offset": offset, "limit": NAMES_LIMIT,
                "streams": page or None}

    def stream_list(self, payload: bytes) -> dict:
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

    def stream_snapshot(self, payload: bytes, name: str) -> dict:
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
                                 self._client_info(self._origin))

    def stream_restore(self, payload: bytes, name: str) -> dict:
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
        return snapshot.restore(self.js, cfg, self._client_info(self._origin))

    # ------------------------------------------------------------------ direct get

    def direct_get(self, subject: bytes, reply: bytes | None, hdr: bytes | None, payload: bytes,
                   origin: Any, name: str, suffix: str | None) -> None:
        from minijs.jetstream.api import msgget
        stream = self.js.lookup(name)
        if stream is None or not stream.config.allow_direct:
            # a caught-up mirror with mirror_direct answers for its origin too
            stream = self.js.replicator.direct_mirror(name)
        if stream is None:
            self.no_responders(subject, reply, origin)
            return
        if not reply:
            return
        if hdr and H.REQUIRED_API_LEVEL.encode() in hdr:
            try:
                self._check_api_level(hdr)
            except E.ApiError:
                self.server.publish(reply, None, wire.status_header(412, "Required Api Level"), b"")
                return
        replies = msgget.direct_get(stream.store, stream.name, payload, suffix,
                                    self.server.config.max_pending)
        publish = self.server.publish
        for rhdr, body in replies:
            publish(reply, None, rhdr, body)

    def no_responders(self, subject: bytes, reply: bytes | None, origin: Any) -> None:
        """What a requester sees when no per-stream/consumer subscription would serve it."""
        if reply and origin is not None and getattr(origin, "no_responders", False):
            self.server.no_responders(subject, reply, origin)

    # ------------------------------------------------------------------ advisories

    def audit(self, subject: bytes, request: bytes, response: bytes, origin: Any) -> None:
        """The ``api_audit`` advisory nats-server publishes after answering an API request."""
        if not self.server.has_interest(AUDIT_SUBJECT):
            return
        server = self.server
        body = {"type": "io.nats.jetstream.advisory.v1.api_audit", "id": new_id(server),
                "timestamp": J.go_time(server.clock.time_ns()),
                "server": server.server_name,
                "client": self._client_info(origin),
                "subject": subject.decode("utf-8", "replace")}
        if request:
            body["request"] = request.decode("utf-8", "replace")
        body["response"] = response.decode("utf-8", "replace")
        domain = getattr(self.js, "domain", "")
        if domain:
            body["domain"] = domain
        server.publish(AUDIT_SUBJECT, None, None, J.dumps(body))

    def _client_info(self, origin: Any) -> dict | None:
        """nats-server's ``ClientInfo`` of the requester, in its field order (all omitempty):
        ``start host id acc user name lang ver rtt server kind client_type``."""
        if origin is None or not hasattr(origin, "cid"):
            return None  # an internal requester: nats-server has no client info either
        server = self.server
        ci: dict[str, Any] = {}
        start = getattr(origin, "start_time", 0.0)
        if start:
            ci["start"] = J.go_time(int(round(start * 1e9)))
        if origin.host:
            ci["host"] = origin.host
        if origin.cid:
            ci["id"] = origin.cid
        ci["acc"] = getattr(origin, "account", "$G")
        config = server.config
        if getattr(origin, "connected", False):
            if config.token:
                ci["user"] = "[REDACTED]"
            elif getattr(origin, "user", None):
                ci["user"] = origin.user
        for key, attr in (("name", "name"), ("lang", "lang"), ("ver", "version")):
            value = getattr(origin, attr, "")
            if value:
                ci[key] = value
        rtt = getattr(origin, "rtt", 0.0)
        if not rtt and start:
            # nats-server estimates the RTT as the time from accept to CONNECT until a PONG
            # measures it; the connection keeps no CONNECT time, so the time from accept to
            # its first audited request (bounded by the first keep-alive PING, ~2 s) stands
            # in for it, kept so that it stays the same until measured.
            rtt = self._rtt_estimates.get(origin, 0.0)
            if not rtt:
                rtt = max(server.clock.time() - start, 1e-9)
                self._rtt_estimates[origin] = rtt
        if rtt:
            ci["rtt"] = max(int(rtt * 1e9), 1)
        ci["server"] = server.server_name
        ci["kind"] = "Client"
        ci["client_type"] = "nats"
        return ci


#: Non-omitempty fields that nats-server still emits next to ``error``.
_ERROR_EXTRAS: dict[str, dict] = {
    "stream_info_response": {"total": 0, "offset": 0, "limit": 0},
    "stream_purge_response": {"purged": 0},
    "stream_names_response": {"total": 0, "offset": 0, "limit": 0, "streams": None},
    "stream_list_response": {"total": 0, "offset": 0, "limit": 0, "streams": []},
    "consumer_names_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
    "consumer_list_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
    "consumer_pause_response": {"paused": False, "pause_until": "0001-01-01T00:00:00Z"},
    "stream_restore_response": {"deliver_subject": ""},
}
