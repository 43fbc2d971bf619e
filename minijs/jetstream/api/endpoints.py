"""What the ``$JS.API`` endpoint groups share: the lookups and checks nats-server makes in every
handler, and the dispatcher they serve under (declared here, as :class:`Dispatcher`, so that
neither reaches into the other).

The stream endpoints (:mod:`~minijs.jetstream.api.streams`) and the consumer endpoints
(:mod:`~minijs.jetstream.api.consumers`) are both :class:`Endpoints`; the dispatcher
(:mod:`~minijs.jetstream.api.dispatch`) makes one of each on first use and calls them through
the route table (:mod:`~minijs.jetstream.api.routes`). They keep no state of their own beyond
the request in flight, which the dispatcher holds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream.bus import MessageBus
from minijs.protocol import wire

if TYPE_CHECKING:
    from minijs.jetstream.engine import JetStream
    from minijs.jetstream.streams.stream import Stream

#: Page sizes of the NAMES and LIST endpoints (nats-server's ``JSApiNamesLimit`` /
#: ``JSApiListLimit``).
NAMES_LIMIT = 1024
LIST_LIMIT = 256

_API_LEVEL_KEY = H.REQUIRED_API_LEVEL.encode()


def check_api_level(hdr: bytes | None) -> None:
    """nats-server's ``errorOnRequiredApiLevel``: the raw ``Nats-Required-Api-Level`` value
    (leading spaces skipped, trailing ones kept) must be empty or an integer not above our
    level; 412/10185 otherwise."""
    value = H.slice_header(hdr, _API_LEVEL_KEY) if hdr else None
    if value and H.api_level_too_high(value.decode("latin-1")):
        raise E.required_api_level()


class Dispatcher(Protocol):
    """What the endpoint groups use of the dispatcher that serves them."""

    bus: MessageBus

    def no_responders(self, subject: bytes, reply: bytes | None, origin: Any) -> None:
        """What a requester sees when no per-stream/consumer subscription would serve it."""

    def requester_info(self) -> dict | None:
        """nats-server's ``ClientInfo`` of the requester of the request being handled."""


class Endpoints:
    """One group of endpoints of one engine (``js``; None in an account without JetStream,
    where only the checks nats-server makes before it looks at the account are called)."""

    def __init__(self, js: "JetStream | None", api: Dispatcher) -> None:
        self.js: JetStream = js  # type: ignore[assignment]  # None only as said above
        self.bus = api.bus
        #: The ``$JS.API`` dispatcher this group serves under.
        self.api = api

    def _stream(self, name: str) -> "Stream":
        """The stream called ``name``, or 404/10059 "stream not found"."""
        stream = self.js.lookup(name)
        if stream is None:
            raise E.stream_not_found()
        return stream

    def _consumer(self, stream: "Stream", name: str) -> Any:
        """``stream``'s consumer called ``name``, or 404/10014 "consumer not found"."""
        consumer = stream.consumers.get(name)
        if consumer is None:
            raise E.consumer_not_found()
        return consumer

    def _refuse_api_level(self, reply: bytes, hdr: bytes | None) -> bool:
        """For the endpoints that answer with raw messages (``DIRECT.GET``,
        ``CONSUMER.MSG.NEXT``): a ``Nats-Required-Api-Level`` above ours is answered with a
        ``412 Required Api Level`` status. True when it was."""
        if hdr and _API_LEVEL_KEY in hdr:
            try:
                check_api_level(hdr)
            except E.ApiError:
                self.bus.publish(reply, None, wire.status_header(412, "Required Api Level"), b"")
                return True
        return False
