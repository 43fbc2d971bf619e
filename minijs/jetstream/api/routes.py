"""The ``$JS.API`` route table: every endpoint's subject, handler, response type and kind,
declared once, as nats-server registers its API handlers (``setJetStreamExportSubs``: one
subscription per subject pattern, each with its handler).

A subject is written as the tokens after ``$JS.API.``: ``*`` stands for one token and ``>``
for one or more; the handler is given each of them, in order (``>`` as the tokens joined with
dots), or, with ``whole_subject``, the request's whole subject instead. The token counts are
exact: a subject that matches no route is not an endpoint, and its requester gets no reply at
all, as from nats-server, which has no subscription for it.

Kinds (how the dispatcher calls the handler):

* ``JSON``: ``handler(payload, *tokens)`` returns the reply fields or raises ``ApiError``; the
  dispatcher checks ``Nats-Required-Api-Level`` first and wraps the reply;
* ``JSON_HDR``: ``handler(payload, hdr, *tokens)``: the same, the handler checking the API level
  itself, where nats-server does (after the body, for some);
* ``RAW``: ``handler(subject, reply, hdr, payload, origin, *tokens)`` answers by itself, with
  raw messages or status headers: endpoints nats-server serves by a stream's or a consumer's
  own subscription, neither counted nor audited.

A handler is named ``"<group>.<method>"``: ``streams`` are the stream endpoints
(:class:`~minijs.jetstream.api.streams.StreamApi`), ``consumers`` the consumer endpoints
(:class:`~minijs.jetstream.api.consumers.ConsumerApi`); a name without a group is the
dispatcher's own. A group is made, and its module imported, by the first request that needs it.

The endpoints that exist only in a cluster are answered by a single server with 503/10010
(:data:`CLUSTER_ONLY`); a clustered handler replaces that name in its route.
"""
from __future__ import annotations

from dataclasses import dataclass

#: Reply fields or ``ApiError``; the dispatcher checks the API level first.
JSON = "json"
#: Reply fields or ``ApiError``; the handler checks the API level itself.
JSON_HDR = "json_hdr"
#: The handler answers by itself (raw messages, status headers).
RAW = "raw"

#: The handler of the endpoints that exist only in a cluster: 503/10010 on a single server,
#: before the API level header is looked at.
CLUSTER_ONLY = "cluster_required"


@dataclass(frozen=True, slots=True)
class Route:
    #: The tokens after ``$JS.API.``, with ``*`` and ``>`` (see the module docstring).
    subject: str
    #: ``"<group>.<method>"`` or the dispatcher's own method.
    handler: str
    #: The reply's type after ``io.nats.jetstream.api.v1.`` ("" for ``RAW``).
    response: str = ""
    kind: str = JSON
    #: Give the handler the request's whole subject instead of its wildcard tokens.
    whole_subject: bool = False
    #: What nats-server checks of the body before it looks at the account's JetStream (a
    #: ``"<group>.<method>"`` taking the payload and raising ``ApiError``), "" for nothing.
    checked_first: str = ""
    #: A successful reply counts in ``api.total`` and is audited (a MSG.GET is not).
    accounted: bool = True


ROUTES: tuple[Route, ...] = (
    Route("INFO", "account_info", "account_info_response"),
    # streams
    Route("STREAM.CREATE.*", "streams.create", "stream_create_response"),
    Route("STREAM.UPDATE.*", "streams.update", "stream_update_response"),
    Route("STREAM.INFO.*", "streams.info", "stream_info_response"),
    Route("STREAM.DELETE.*", "streams.delete", "stream_delete_response"),
    Route("STREAM.PURGE.*", "streams.purge", "stream_purge_response"),
    Route("STREAM.SNAPSHOT.*", "streams.snapshot", "stream_snapshot_response"),
    Route("STREAM.RESTORE.*", "streams.restore", "stream_restore_response"),
    Route("STREAM.NAMES", "streams.names", "stream_names_response"),
    Route("STREAM.LIST", "streams.list", "stream_list_response"),
    Route("STREAM.MSG.GET.*", "streams.msg_get", "stream_msg_get_response", accounted=False),
    Route("STREAM.MSG.DELETE.*", "streams.msg_delete", "stream_msg_delete_response"),
    Route("DIRECT.GET.*", "streams.direct_get", kind=RAW),
    Route("DIRECT.GET.*.>", "streams.direct_get", kind=RAW),
    # consumers
    Route("CONSUMER.CREATE.>", "consumers.create", "consumer_create_response", JSON_HDR,
          whole_subject=True, checked_first="consumers.create_request"),
    Route("CONSUMER.DURABLE.CREATE.>", "consumers.create", "consumer_create_response",
          JSON_HDR, whole_subject=True, checked_first="consumers.create_request"),
    Route("CONSUMER.NAMES.*", "consumers.names", "consumer_names_response"),
    Route("CONSUMER.LIST.*", "consumers.list", "consumer_list_response"),
    Route("CONSUMER.INFO.*.*", "consumers.info", "consumer_info_response", JSON_HDR),
    Route("CONSUMER.DELETE.*.*", "consumers.delete", "consumer_delete_response"),
    Route("CONSUMER.PAUSE.*.*", "consumers.pause", "consumer_pause_response", JSON_HDR),
    Route("CONSUMER.UNPIN.*.*", "consumers.unpin", "consumer_unpin_response",
          checked_first="consumers.unpin_group"),
    Route("CONSUMER.RESET.*.*", "consumers.reset", kind=RAW),
    Route("CONSUMER.MSG.NEXT.*.*", "consumers.msg_next", kind=RAW),
    # cluster only
    Route("STREAM.LEADER.STEPDOWN.*", CLUSTER_ONLY, "stream_leader_stepdown_response", JSON_HDR),
    Route("STREAM.PEER.REMOVE.*", CLUSTER_ONLY, "stream_remove_peer_response", JSON_HDR),
    Route("STREAM.PEER.EVACUATE.*", CLUSTER_ONLY, "stream_evacuate_peer_response", JSON_HDR),
    Route("STREAM.CANCEL_MOVE.*", CLUSTER_ONLY, "stream_cancel_move_response", JSON_HDR),
    Route("CONSUMER.LEADER.STEPDOWN.*.*", CLUSTER_ONLY, "consumer_leader_stepdown_response",
          JSON_HDR),
)

#: Fields nats-server still emits next to ``error`` (not omitempty), by response type.
ERROR_FIELDS: dict[str, dict] = {
    "stream_info_response": {"total": 0, "offset": 0, "limit": 0},
    "stream_purge_response": {"purged": 0},
    "stream_names_response": {"total": 0, "offset": 0, "limit": 0, "streams": None},
    "stream_list_response": {"total": 0, "offset": 0, "limit": 0, "streams": []},
    "consumer_names_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
    "consumer_list_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
    "consumer_pause_response": {"paused": False, "pause_until": "0001-01-01T00:00:00Z"},
    "stream_restore_response": {"deliver_subject": ""},
}


class RouteTable:
    """The routes indexed for lookup: by their first two tokens, then by token count (exact
    routes) or minimum count (``>`` routes)."""

    def __init__(self, routes: tuple[Route, ...] = ROUTES) -> None:
        self._by_head: dict[tuple[str, str], list[tuple[Route, tuple[str, ...], int, bool]]] = {}
        for route in routes:
            tokens = tuple(route.subject.split("."))
            rest = tokens[-1] == ">"
            head = (tokens[0], tokens[1] if len(tokens) > 1 else "")
            self._by_head.setdefault(head, []).append((route, tokens, len(tokens), rest))

    def match(self, tokens: list[str]) -> tuple[Route, tuple[str, ...]] | None:
        """The route of a request (the tokens after ``$JS.API.``) and the tokens its
        wildcards took; None when no route matches."""
        n = len(tokens)
        candidates = self._by_head.get((tokens[0], tokens[1] if n > 1 else ""))
        if candidates is None:
            return None
        for route, pattern, size, rest in candidates:
            if n != size and not (rest and n >= size):
                continue
            args: list[str] = []
            for i, tok in enumerate(pattern):
                if tok == "*":
                    args.append(tokens[i])
                elif tok == ">":
                    args.append(".".join(tokens[i:]))
                elif tok != tokens[i]:
                    break
            else:
                return route, tuple(args)
        return None
