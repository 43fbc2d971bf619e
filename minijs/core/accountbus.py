"""One account's view of the router: the message bus a JetStream engine of that account uses.

With an ``accounts`` block, each account with JetStream has its own engine (streams, consumers,
API). The engine is given an :class:`AccountBus` instead of the router: the same calls, bound
to the account's subscription index, so everything the engine subscribes (the ``$JS.API.>``
handler, streams' subjects, consumers' ack subjects) and everything it publishes (replies,
deliveries, advisories) stays inside that account, as nats-server's per-account internal
clients do.

Invariants:

* a message the engine publishes with no client origin is routed in the account's sublist only;
  with a client origin, in that client's (which is the account's, since only the account's
  clients reach its engine);
* internal subscriptions and interest watches are made in the account's sublist; a live
  response import (``_R_.…``, see :mod:`minijs.core.imports`) counts as interest;
* anything else (clock, logger, config, server identity, fault hooks, connections) is the
  router's own, read through at each use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minijs.core.sublist import InternalSubscriptions

if TYPE_CHECKING:
    from minijs.core.router import Router, WatchedSublist


class AccountBus(InternalSubscriptions):
    """The router as seen from inside ``account`` (see the module docstring)."""

    def __init__(self, router: "Router", account: str) -> None:
        self.router = router
        self.account = account
        self.sublist: WatchedSublist = router.account_sublist(account)
        # What the engine reads often, bound once (the fallback below is slow per access).
        self.clock = router.clock
        self.log = router.log
        self.server_name = router.server_name
        self.server_id = router.server_id
        self.stats = router.stats

    @property
    def config(self) -> Any:
        return self.router.config

    def __getattr__(self, name: str) -> Any:
        # Everything not bound to the account is the router's (looked up at each use, so
        # hooks set later, such as fault injection, are seen).
        return getattr(self.router, name)

    def has_interest(self, subject: bytes) -> bool:
        """Does any live subscription of the account match, or is ``subject`` a live response
        import (the reply of a request that came through a service import)?"""
        if self.sublist.has_interest(subject):
            return True
        links = self.sublist.links
        return links is not None and subject in links.responses

    def resolve_service(self, subject: bytes) -> tuple[str, bytes] | None:
        """Where a request on ``subject`` published in this account is served: (account,
        subject there) along its first matching service import; None without one."""
        links = self.sublist.links
        return links.resolve_service(subject) if links is not None else None

    def receives_stream(self, exporter: str, subject: bytes) -> bool:
        """Does a message published on ``subject`` in ``exporter`` reach this account (a
        stream import)?"""
        links = self.router.account_links.get(exporter)
        return links is not None and links.streams_to(self.account, subject)

    def publish(self, subject: bytes, reply: bytes | None, header: bytes | None,
                payload: bytes, origin: Any = None) -> int:
        return self.router.publish(subject, reply, header, payload, origin, self.sublist)

    def publish_replies(self, replies: list[bytes], payloads: list[bytes]) -> None:
        self.router.publish_replies(replies, payloads, self.sublist)

    def deliver_as(self, target: bytes, subject: bytes, reply: bytes, hdr: bytes | None,
                   data: bytes) -> int:
        return self.router.deliver_as(target, subject, reply, hdr, data, self.sublist)

    def deliver_run_as(self, target: bytes, subjects: list[bytes], replies: list[bytes],
                       hdrs: list[bytes | None], datas: list[bytes]) -> None:
        self.router.deliver_run_as(target, subjects, replies, hdrs, datas, self.sublist)
