"""A client's publish and subscribe permissions, checked as nats-server checks them.

Built once per authenticated connection from a :class:`~minijs.authconfig.Permissions`; a
connection without permissions has none of this (``conn.perms is None``), so the publish path
pays one attribute test. Allow and deny lists are subscription indexes of their own, so a
wildcard rule matches exactly as a subscription would; publish results are cached per subject.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from minijs.core.subjects import has_wildcard, subject_matches, subjects_overlap
from minijs.core.sublist import Sublist, Subscription

if TYPE_CHECKING:
    from minijs.authconfig import Permissions

#: Cached publish decisions per connection before the cache is dropped (nats-server: 128).
PUB_CACHE_MAX = 1024
#: Tracked reply subjects (allow_responses) before expired/used ones are pruned.
REPLY_PRUNE_AT = 4096


def _index(entries: tuple[str, ...], queues: bool) -> Sublist:
    sl = Sublist()
    for entry in entries:
        subject, _, queue = entry.strip().partition(" ") if queues else (entry, "", "")
        queue = queue.strip()
        sl.insert(Subscription(subject.encode(), b"", queue.encode() if queue else None))
    return sl


class ClientPermissions:
    """The checks of one connection (``canSubscribe``/``pubAllowed`` in nats-server)."""

    __slots__ = ("pub_allow", "pub_deny", "sub_allow", "sub_deny", "responses", "replies",
                 "deliver_filter", "_deny_subjects", "_pcache", "_now", "checks_publish",
                 "pub_cache")

    def __init__(self, perms: Permissions, now: Callable[[], float]) -> None:
        self.pub_allow = _index(perms.pub_allow, False) if perms.pub_allow is not None else None
        self.pub_deny = _index(perms.pub_deny, False) if perms.pub_deny else None
        self.sub_allow = _index(perms.sub_allow, True) if perms.sub_allow else None
        self.sub_deny = _index(perms.sub_deny, True) if perms.sub_deny else None
        self._deny_subjects = [d.split()[0].encode() for d in perms.sub_deny or ()]
        #: Deliveries are checked against the deny list once a wildcard (or queue)
        #: subscription that can overlap it exists, as nats-server loads its filter then.
        self.deliver_filter = False
        self.responses = perms.responses
        #: reply subject -> [time first seen, publishes so far] (allow_responses)
        self.replies: dict[bytes, list] | None = {} if perms.responses is not None else None
        self._pcache: dict[bytes, bool] = {}
        #: The static verdicts by subject, read directly on the publish path (a subject
        #: allowed once is one dictionary lookup after).
        self.pub_cache = self._pcache
        self._now = now
        #: Whether publishes are checked at all (a plain attribute: read per publish).
        self.checks_publish = self.pub_allow is not None or self.pub_deny is not None

    def _pub_static(self, subject: bytes) -> bool:
        cached = self._pcache.get(subject)
        if cached is not None:
            return cached
        allowed = True
        if self.pub_allow is not None:
            allowed = bool(self.pub_allow.match(subject).plain)
        if allowed and self.pub_deny is not None:
            allowed = not self.pub_deny.match(subject).plain
        if len(self._pcache) >= PUB_CACHE_MAX:
            self._pcache.clear()
        self._pcache[subject] = allowed
        return allowed

    def can_publish(self, subject: bytes) -> bool:
        """Static allow/deny, then (if allowed responses) a reply subject received."""
        if self._pub_static(subject):
            return True
        replies = self.replies
        if replies is None:
            return False
        entry = replies.get(subject)
        if entry is None:
            return False
        entry[1] += 1
        resp = self.responses
        assert resp is not None
        if resp.max_msgs > 0 and entry[1] > resp.max_msgs:
            del replies[subject]
            return False
        if resp.expires > 0 and self._now() - entry[0] > resp.expires:
            del replies[subject]
            return False
        return True

    def track_reply(self, reply: bytes) -> None:
        """A message with ``reply`` was delivered: allow responses to it (if not allowed
        anyway)."""
        replies = self.replies
        if replies is None or self._pub_static(reply):
            return
        replies[reply] = [self._now(), 0]
        if len(replies) > REPLY_PRUNE_AT:
            self._prune()

    def _prune(self) -> None:
        resp = self.responses
        assert resp is not None and self.replies is not None
        now = self._now()
        for key, (t, n) in list(self.replies.items()):
            if (resp.max_msgs > 0 and n >= resp.max_msgs) or (
                    resp.expires > 0 and now - t > resp.expires):
                del self.replies[key]

    def can_subscribe(self, subject: bytes, queue: bytes | None) -> bool:
        allowed = True
        if self.sub_allow is not None:
            r = self.sub_allow.match(subject)
            allowed = bool(r.plain)
            if queue and r.groups:
                allowed = _queue_matches(queue, r.groups)
        if allowed and self.sub_deny is not None:
            r = self.sub_deny.match(subject)
            allowed = not r.plain
            if allowed and queue and r.groups:
                allowed = not _queue_matches(queue, r.groups)
        return allowed

    def subscribed(self, subject: bytes, queue: bytes | None) -> None:
        """A subscription was accepted: start filtering deliveries if it can overlap a deny."""
        if self.deliver_filter or not self._deny_subjects:
            return
        if queue or has_wildcard(subject):
            if any(subjects_overlap(d, subject) for d in self._deny_subjects):
                self.deliver_filter = True

    def denies_delivery(self, subject: bytes, queue: bytes | None) -> bool:
        """A message on ``subject`` reaching a (wildcard) subscription that a deny rule covers
        is not delivered (nats-server's delivery-time deny filter, checkDenySub)."""
        if self.sub_deny is None:
            return False
        r = self.sub_deny.match(subject)
        if r.plain:
            return True
        return bool(queue and r.groups and _queue_matches(queue, r.groups))


def _queue_matches(queue: bytes, groups: dict[bytes, list]) -> bool:
    """nats-server's queueMatches: the queue by name, or by a wildcard queue entry."""
    if queue in groups:
        return True
    return any((b"*" in name or b">" in name) and subject_matches(name, queue)
               for name in groups)
