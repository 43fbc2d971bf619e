"""What JetStream needs from the server it runs in: the message bus.

The engine, its streams and consumers are given one object with this shape (the server's
router) and use nothing else of the server. It is deliberately narrow: publishing, routing a
delivery under the stored subject, internal subscriptions, interest tests and watches, plus the
clock, the logger and the few settings JetStream reads. Anything that offers these can host an
engine (a per-account view of the router, a test double).
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from minijs.clock import Clock
from minijs.config import ServerConfig
from minijs.log import Logger
from minijs.randomness import RandomSource

#: ``handler(sub, subject, reply, header, payload, origin)`` of an internal subscription.
Handler = Callable[[Any, bytes, "bytes | None", "bytes | None", bytes, Any], None]


class MessageBus(Protocol):
    clock: Clock
    #: Every random choice is drawn from here (:mod:`minijs.randomness`).
    randomness: RandomSource
    log: Logger
    server_name: str

    @property
    def config(self) -> ServerConfig:
        """The server's configuration (read only: a reload replaces it on the server)."""

    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: Any = None) -> int:
        """Route one message to every matching subscriber; return how many received it."""

    def publish_replies(self, replies: list[bytes], payloads: list[bytes]) -> None:
        """Answers without headers to several subjects, in order, each routed as
        :meth:`publish` routes the server's own message (a run of pub acks)."""

    def deliver_as(self, target: bytes, subject: bytes, reply: bytes, hdr: bytes | None,
                   data: bytes) -> int:
        """Route to the subscribers of ``target`` with ``subject`` on the MSG line."""

    def deliver_run_as(self, target: bytes, subjects: list[bytes], replies: list[bytes],
                       hdrs: list[bytes | None], datas: list[bytes]) -> None:
        """:meth:`deliver_as` of several messages to ``target``, in order."""

    def no_responders(self, subject: bytes, reply: bytes, origin: Any) -> None:
        """Answer ``origin``'s request on ``reply`` with the 503 no-responders status."""

    def has_interest(self, subject: bytes) -> bool:
        """Does any live subscription match ``subject``?"""

    def has_exact_interest(self, subject: bytes, queue: bytes | None = None) -> bool:
        """Is there a live subscription on exactly ``subject`` (or a member of ``queue``)?"""

    def subscribe_internal(self, subject: str | bytes, handler: Handler,
                           queue: bytes | None = None, *,
                           on_traced: Callable[..., bool | None] | None = None,
                           run_receiver: Any = None) -> Any:
        """Register a server-side handler; returns the subscription. ``on_traced`` takes a
        traced message instead (message tracing: it records its own events);
        ``run_receiver`` takes a run of a client's messages the handler alone receives
        (``minijs.core.sublist.RunReceiver``)."""

    def unsubscribe_internal(self, sub: Any) -> None: ...

    def watch_interest(self, subject: bytes, callback: Callable[[], None]) -> Any:
        """Call ``callback()`` soon whenever a subscription on exactly ``subject`` comes or goes."""

    def unwatch_interest(self, handle: Any) -> None: ...


class AccountMessageBus(MessageBus, Protocol):
    """An account's view of the bus (:class:`~minijs.core.accountbus.AccountBus`): what
    reaches across accounts (external mirrors and sources)."""

    def resolve_service(self, subject: bytes) -> tuple[str, bytes] | None:
        """The account and subject a request on ``subject`` reaches through a service
        import, or None."""

    def receives_stream(self, exporter: str, subject: bytes) -> bool:
        """Does a message published on ``subject`` in ``exporter`` reach this account?"""
