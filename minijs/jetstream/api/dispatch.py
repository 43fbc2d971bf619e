"""The ``$JS.API`` request dispatch: the one subscription every request arrives on, the route
table that picks its handler, the reply envelope, the API counters and the audit advisory.

One internal subscription on ``$JS.API.>`` receives every request. Its subject picks a route
(:mod:`~minijs.jetstream.api.routes`: exact token counts, as nats-server's per-endpoint
subscriptions have; a subject that names no endpoint gets no reply at all). Each handler
returns the reply fields or raises :class:`~minijs.jetstream.errors.ApiError`; the dispatcher
wraps them in the ``{"type": "io.nats.jetstream.api.v1.<x>_response", ...}`` envelope, counts
``api.total`` / ``api.errors`` and publishes the reply, then the ``api_audit`` advisory. (The
few errors nats-server sends as successes, not counted in ``api.errors``, are returned as an
``error`` field instead of raised.)

The endpoints live in their groups: the stream endpoints in :mod:`~minijs.jetstream.api.streams`,
the consumer endpoints in :mod:`~minijs.jetstream.api.consumers`, each made (and its module
imported) by the first request that needs it; what they share is
:mod:`~minijs.jetstream.api.endpoints`. ``DIRECT.GET`` and ``CONSUMER.MSG.NEXT`` answer with
raw messages or status headers instead of JSON; when nothing serves them the requester gets
the core 503, as from nats-server where those subjects are served by per-stream/per-consumer
subscriptions.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

from minijs.core.msgtrace import SYSTEM_ACCOUNT
from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.advisory import new_id
from minijs.jetstream.api import routes as R
from minijs.jetstream.api.endpoints import check_api_level
from minijs.jetstream.headers import REQUIRED_API_LEVEL

if TYPE_CHECKING:
    from minijs.jetstream.api.consumers import ConsumerApi
    from minijs.jetstream.api.streams import StreamApi
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.engine import JetStream

API_PREFIX = b"$JS.API."
TYPE_PREFIX = "io.nats.jetstream.api.v1."
AUDIT_SUBJECT = b"$JS.EVENT.ADVISORY.API"

#: API subjects nats-server serves in the client's account (not through the $SYS import).
_LOCAL_API = (b"$JS.API.DIRECT.GET.", b"$JS.API.CONSUMER.MSG.NEXT.")

_API_LEVEL_KEY = REQUIRED_API_LEVEL.encode()

#: The subjects under ``$JS.<domain>.API.`` a server with a domain maps (nats-server's
#: ``generateJSMappingTable``).
_DOMAIN_MAPPED = ("INFO", "STREAM.>", "CONSUMER.>", "DIRECT.>", "META.>", "SERVER.>",
                  "ACCOUNT.>", "$KV.>", "$OBJ.>")

#: The routes, indexed once for every dispatcher.
_TABLE = R.RouteTable()


class JetStreamApi:
    """Serves ``$JS.API.>`` for one engine, or, with no engine (``js`` None, given the
    account's ``bus``), for an account without JetStream: every endpoint then answers
    503/10039 "JetStream not enabled for account" (after the body checks nats-server makes
    first), the per-stream/consumer ones (``DIRECT.GET``, ``CONSUMER.MSG.NEXT``) no
    responders, as a server with JetStream in other accounts does."""

    def __init__(self, js: "JetStream | None", *, bus: "MessageBus | None" = None) -> None:
        self.js = js
        #: The message bus requests arrive on and replies leave by.
        self.bus: MessageBus = js.bus if js is not None else bus  # type: ignore[assignment]
        self._sub: Any = None
        self._domain_subs: list[Any] = []
        #: ``jetstream { strict: false }``: bodies decoded as json.Unmarshal would.
        self.lenient = not self.bus.config.js_strict
        self._domain_prefix_len = 0
        self._streams: StreamApi | None = None
        self._consumers: ConsumerApi | None = None
        #: Route handler name -> the bound handler, resolved on first use.
        self._handlers: dict[str, Callable[..., Any]] = {}
        #: Connection -> estimated RTT for audits until a PONG measured the real one.
        self._rtt_estimates: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: The requester of the request being handled.
        self._origin: Any = None

    @property
    def streams(self) -> "StreamApi":
        """The stream endpoints (made, and their module imported, on first use)."""
        if self._streams is None:
            from minijs.jetstream.api.streams import StreamApi

            self._streams = StreamApi(self.js, self)
        return self._streams

    @property
    def consumers(self) -> "ConsumerApi":
        """The consumer endpoints (made, and the consumer modules imported, on first use)."""
        if self._consumers is None:
            from minijs.jetstream.api.consumers import ConsumerApi

            self._consumers = ConsumerApi(self.js, self)
        return self._consumers

    def handler(self, name: str) -> Callable[..., Any]:
        """The handler a route names (``"<group>.<method>"``, or a method of this object)."""
        bound = self._handlers.get(name)
        if bound is None:
            group, _, method = name.rpartition(".")
            bound = getattr(getattr(self, group) if group else self, method)
            self._handlers[name] = bound
        return bound

    def start(self) -> None:
        self._sub = self.bus.subscribe_internal(b"$JS.API.>", self._on_request,
                                                on_traced=self._on_traced_request)
        domain = self.bus.config.js_domain
        if domain:
            # nats-server's generateJSMappingTable: the account maps these subjects of the
            # domain prefix onto the API (and $KV/$OBJ onto themselves); nothing else of
            # $JS.<domain>.API. is answered (no responders).
            prefix = f"$JS.{domain}.API."
            for suffix in _DOMAIN_MAPPED:
                self._domain_subs.append(self.bus.subscribe_internal(
                    (prefix + suffix).encode(), self._on_domain_request))
            self._domain_prefix_len = len(prefix)

    def stop(self) -> None:
        if self._sub is not None:
            self.bus.unsubscribe_internal(self._sub)
            self._sub = None
        for sub in self._domain_subs:
            self.bus.unsubscribe_internal(sub)
        self._domain_subs.clear()

    def _on_domain_request(self, sub: Any, subject: bytes, reply: bytes | None,
                           hdr: bytes | None, payload: bytes, origin: Any) -> None:
        rest = subject[self._domain_prefix_len:]
        if rest.startswith((b"$KV.", b"$OBJ.")):
            self.bus.publish(rest, reply, hdr, payload, origin)
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
        found = _TABLE.match(tokens)
        if found is None:
            return  # no such endpoint: silence, like nats-server
        route, args = found
        if route.whole_subject:
            args = (subject.decode("utf-8", "replace"),)
        if self.js is None:
            self._not_enabled(route, subject, reply, hdr, payload, origin)
            return
        rtype = route.response
        cluster = self.js.cluster
        if cluster is not None and cluster.intercept(self, rtype, subject, reply, hdr, payload,
                                                     origin):
            return  # in a cluster another node answers, or the meta leader has proposed it
        kind = route.kind
        handler = self.handler(route.handler)
        if kind == R.RAW:
            handler(subject, reply, hdr, payload, origin, *args)
            return
        # A request without a reply subject is still performed, counted and audited, as
        # nats-server does; only the reply is skipped (nobody learns the result).
        self._origin = origin  # for the handlers that publish advisories about the requester
        token = J.LENIENT_REQUESTS.set(True) if self.lenient else None
        try:
            if kind == R.JSON:
                if hdr and _API_LEVEL_KEY in hdr:
                    check_api_level(hdr)
                fields = handler(payload, *args)
            else:  # JSON_HDR: the handler checks the API level itself, where nats-server does
                fields = handler(payload, hdr, *args)
            body: dict[str, Any] = {"type": TYPE_PREFIX + rtype}
            body.update(fields)
        except Exception as exc:
            if isinstance(exc, E.ApiError):
                err = exc
            else:  # a bug: answer like nats-server's wrapped internal error, keep serving
                self.js.log.error(f"JetStream API {subject.decode(errors='replace')}: {exc!r}")
                err = E.ApiError(500, 10049 if "stream" in rtype else 10012, str(exc))
            if err.err_code == E.ErrCode.STREAM_REPLICAS_NOT_SUPPORTED:
                hint = getattr(getattr(self.bus, "routes", None), "replicas_hint", "")
                if hint:  # processes joined by routes: say where replicas are to be had
                    err = E.ApiError(err.code, err.err_code, f"{err.description} ({hint})")
            self.js.api_errors += 1
            body = {"type": TYPE_PREFIX + rtype, "error": err.to_json()}
            body.update(R.ERROR_FIELDS.get(rtype, {}))
        finally:
            if token is not None:
                J.LENIENT_REQUESTS.reset(token)
        data = J.dumps(body)
        if reply:
            self.bus.publish(reply, None, None, data)
        # Counted after the reply is built (INFO on a fresh server reports total 0); a
        # successful MSG.GET is answered outside nats-server's API accounting and audit.
        if route.accounted or "error" in body:
            self.js.api_total += 1
            self.audit(subject, payload, data, origin)

    @staticmethod
    def error_extras(rtype: str) -> dict:
        """The fields an error reply of ``rtype`` carries besides ``error`` (nats-server's
        response structs keep their zero values there)."""
        return dict(R.ERROR_FIELDS.get(rtype, {}))

    def _not_enabled(self, route: R.Route, subject: bytes, reply: bytes | None,
                     hdr: bytes | None, payload: bytes, origin: Any) -> None:
        """A request in an account without JetStream."""
        if route.kind == R.RAW:
            if subject.startswith(_LOCAL_API):
                self.no_responders(subject, reply, origin)
            return  # CONSUMER.RESET: served by the consumer, which cannot exist: silence
        try:
            if route.handler == R.CLUSTER_ONLY:
                raise E.cluster_required()
            if route.checked_first:
                self.handler(route.checked_first)(payload)  # a bad body is reported first
            raise E.not_enabled_for_account()
        except E.ApiError as err:
            body = {"type": TYPE_PREFIX + route.response, "error": err.to_json()}
            body.update(R.ERROR_FIELDS.get(route.response, {}))
        if reply:
            self.bus.publish(reply, None, None, J.dumps(body))

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

    # ------------------------------------------------------------------ own endpoints

    def account_info(self, payload: bytes) -> dict:
        assert self.js is not None  # (dispatched with JetStream enabled only: _on_request)
        return self.js.account_info()

    def cluster_required(self, payload: bytes, hdr: bytes | None, *tokens: str) -> dict:
        """A single server refuses the cluster's endpoints before it would look at the API
        level header."""
        raise E.cluster_required()

    # ------------------------------------------------------------------ for the endpoints

    def no_responders(self, subject: bytes, reply: bytes | None, origin: Any) -> None:
        """What a requester sees when no per-stream/consumer subscription would serve it."""
        if reply and origin is not None and getattr(origin, "no_responders", False):
            self.bus.no_responders(subject, reply, origin)

    def requester_info(self) -> dict | None:
        """nats-server's ``ClientInfo`` of the requester of the request being handled."""
        return self.client_info(self._origin)

    # ------------------------------------------------------------------ advisories

    def audit(self, subject: bytes, request: bytes, response: bytes, origin: Any) -> None:
        """The ``api_audit`` advisory nats-server publishes after answering an API request."""
        bus = self.bus
        if not bus.has_interest(AUDIT_SUBJECT):
            return
        body = {"type": "io.nats.jetstream.advisory.v1.api_audit", "id": new_id(bus),
                "timestamp": J.go_time(bus.clock.time_ns()),
                "server": bus.server_name,
                "client": self.client_info(origin),
                "subject": subject.decode("utf-8", "replace")}
        if request:
            body["request"] = request.decode("utf-8", "replace")
        body["response"] = response.decode("utf-8", "replace")
        domain = getattr(self.js, "domain", "")
        if domain:
            body["domain"] = domain
        bus.publish(AUDIT_SUBJECT, None, None, J.dumps(body))

    def client_info(self, origin: Any) -> dict | None:
        """nats-server's ``ClientInfo`` of the requester, in its field order (all omitempty):
        ``start host id acc user name lang ver rtt server kind client_type``."""
        if origin is None or not hasattr(origin, "cid"):
            return None  # an internal requester: nats-server has no client info either
        bus = self.bus
        ci: dict[str, Any] = {}
        start = getattr(origin, "start_time", 0.0)
        if start:
            ci["start"] = J.go_time(int(round(start * 1e9)))
        if origin.host:
            ci["host"] = origin.host
        if origin.cid:
            ci["id"] = origin.cid
        ci["acc"] = getattr(origin, "account", "$G")
        config = bus.config
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
                rtt = max(bus.clock.time() - start, 1e-9)
                self._rtt_estimates[origin] = rtt
        if rtt:
            ci["rtt"] = max(int(rtt * 1e9), 1)
        ci["server"] = bus.server_name
        ci["kind"] = "Client"
        ci["client_type"] = "nats"
        return ci
