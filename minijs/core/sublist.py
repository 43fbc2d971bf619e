"""The subscription index: a token trie with a result cache, like nats-server's sublist.

Lookup walks one branch per token (literal child, ``*`` child, ``>`` child), so its cost does not
grow with the number of subscriptions that do not match. Results are cached per subject; a
change to the index drops only the cached subjects the changed subscription matches.

Subjects seen once (acks, inbox replies) are matched without a full walk where the result
cannot depend on their last tokens: it is remembered on the node where their literal walk
leaves the tree (``_Node.tail``, or ``_Node.tails`` by the number of tokens left when only
wildcards lie below; see :meth:`Sublist.match`). Every insert and remove forgets all of these.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from minijs.core.subjects import subject_matches

_STAR = b"*"
_GT = b">"
CACHE_MAX = 1024


class RunReceiver(Protocol):
    """An internal subscription's owner that takes a *run*: several messages of one client,
    without headers, that this subscription alone receives, on one subject
    (``Router.publish_run``) or on subjects one prefix decides the match of
    (``Router.publish_shared_run``). First :meth:`take_run` or :meth:`take_shared_run` may
    take the whole run in one step; when it does not, the handler is called for each message
    between :meth:`begin_run` and :meth:`end_run`. Either way each message has exactly the
    effects it has alone."""

    def take_run(self, subject: bytes, replies: list[bytes | None],
                 payloads: list[bytes]) -> bool:
        """Take the whole run now (True), or leave it to the handler (False, nothing done)."""

    def take_shared_run(self, subjects: list[bytes], replies: list[bytes | None],
                        payloads: list[bytes]) -> bool:
        """The same for a run on subjects of one shared match (``Router.publish_shared_run``:
        a consumer's acks)."""

    def begin_run(self) -> None: ...

    def end_run(self) -> None: ...


class Subscription:
    """One interest: a client's SUB, or an internal handler (stream, API, consumer)."""

    __slots__ = ("subject", "queue", "sid", "conn", "callback", "max", "delivered", "closed",
                 "on_traced", "frame_subject", "frame_prefix", "local_only", "account",
                 "run_receiver")

    def __init__(self, subject: bytes, sid: bytes = b"", queue: bytes | None = None,
                 conn: Any = None, callback: Callable[..., None] | None = None) -> None:
        self.subject = subject
        self.queue = queue
        self.sid = sid
        self.conn = conn  # the client connection that owns it, or None for internal
        # internal: callback(sub, subject, reply, header, payload, origin). None only for a
        # client's subscription (conn set), whose callback nobody calls: the readers test
        # ``conn is None`` first, on the hot path, so the attribute is typed as always set
        # (an annotation, not a cast: no call per subscription).
        self.callback: Callable[..., None] = callback  # type: ignore[assignment]
        self.max = 0  # auto-unsubscribe after this many deliveries (0 = never)
        self.delivered = 0
        self.closed = False
        #: Internal only, for message tracing (``minijs.core.msgtrace``): the handler a traced
        #: message goes to instead of ``callback``: ``on_traced(sub, trace, subject, reply,
        #: header, payload, origin)`` records its own events (a stream's ``js``, the JetStream
        #: API's ``si``) and returns False when the message went no further.
        self.on_traced: Callable[..., bool | None] | None = None
        #: A client subscription's ``MSG <subject> <sid> `` for the subject it was last
        #: delivered (``frame_subject``): a connection frames a message from it without
        #: formatting the line again (see :meth:`minijs.core.connection.Connection.deliver`).
        self.frame_subject: bytes | None = None
        self.frame_prefix = b""
        #: Internal only: interest of this node alone, never told to a cluster's other nodes
        #: (a per-node service; see :mod:`minijs.core.routes`).
        self.local_only = False
        #: A route subscription's account (the peer's interest is kept per account).
        self.account = ""
        #: Internal only: what takes a run of a client's messages that this subscription
        #: alone receives (``Router.publish_run``), as a whole or around the handler's calls
        #: (a stream); None for most.
        self.run_receiver: RunReceiver | None = None

    def __repr__(self) -> str:
        q = f" queue={self.queue!r}" if self.queue else ""
        return f"<Subscription {self.subject!r} sid={self.sid!r}{q}>"

    @classmethod
    def internal(cls, subject: str | bytes, handler: Callable[..., None],
                 queue: bytes | None = None,
                 on_traced: Callable[..., bool | None] | None = None) -> "Subscription":
        """A server-side handler's subscription (no connection)."""
        if isinstance(subject, str):
            subject = subject.encode()
        sub = cls(subject, b"", queue, conn=None, callback=handler)
        sub.on_traced = on_traced
        return sub


class InternalSubscriptions:
    """The internal-subscription half of a message bus over one sublist (``self.sublist``, a
    sublist that also keeps watchers): the router (the global account) and an account's view
    of it (:class:`~minijs.core.accountbus.AccountBus`) share it."""

    sublist: Any

    def subscribe_internal(self, subject: str | bytes, handler: Callable[..., None],
                           queue: bytes | None = None, *,
                           on_traced: Callable[..., bool | None] | None = None,
                           local_only: bool = False,
                           run_receiver: "RunReceiver | None" = None) -> Subscription:
        """Register a server-side handler: ``handler(sub, subject, reply, header, payload, origin)``.

        For message tracing, ``on_traced(sub, trace, subject, reply, header, payload, origin)``
        takes a traced message instead of ``handler``, records its own events and returns
        False when the message went no further (not a receiver, so a request may get a 503).
        ``local_only``: interest of this node only, never told to the other nodes of a
        cluster (a per-node service). ``run_receiver``: see :class:`RunReceiver`."""
        sub = Subscription.internal(subject, handler, queue, on_traced)
        sub.local_only = local_only
        sub.run_receiver = run_receiver
        self.sublist.insert(sub)
        return sub

    def unsubscribe_internal(self, sub: Subscription) -> None:
        sub.closed = True
        self.sublist.remove(sub)

    def watch_interest(self, subject: bytes, callback: Callable[[], None]) -> Any:
        """Call ``callback()`` (soon, from the event loop) whenever a subscription whose subject
        is exactly ``subject`` comes or goes, like nats-server's sublist notifications that
        push consumers register on their deliver subject. Returns a handle for
        :meth:`unwatch_interest`."""
        return self.sublist.watch(subject, callback)

    def unwatch_interest(self, handle: Any) -> None:
        self.sublist.unwatch(handle)

    def has_exact_interest(self, subject: bytes, queue: bytes | None = None) -> bool:
        """Is there a live subscription on exactly ``subject`` (a plain one, or with ``queue`` a
        member of that queue group)? Wildcard subscriptions that merely match do not count."""
        return self.sublist.has_exact(subject, queue)

    def num_subscriptions(self) -> int:
        return self.sublist.count


class MatchResult:
    """Plain subscriptions and queue groups (name -> members) matching one subject."""

    __slots__ = ("plain", "groups")

    def __init__(self) -> None:
        self.plain: list[Subscription] = []
        self.groups: dict[bytes, list[Subscription]] = {}

    def __bool__(self) -> bool:
        return bool(self.plain or self.groups)


class _Node:
    __slots__ = ("children", "star", "gt", "plain", "groups", "tail", "tails")

    def __init__(self) -> None:
        self.children: dict[bytes, _Node] = {}
        self.star: _Node | None = None
        self.gt: _Node | None = None
        self.plain: list[Subscription] = []
        self.groups: dict[bytes, list[Subscription]] = {}
        #: What every subject whose walk leaves the tree here matches (see :meth:`Sublist.match`);
        #: None until computed, and again after any insert or remove.
        self.tail: MatchResult | None = None
        #: The same where this node has a ``*`` child with no literal child anywhere below it:
        #: by the number of tokens from the one that leaves the tree (see :meth:`Sublist.match`).
        self.tails: dict[int, MatchResult] | None = None

    def empty(self) -> bool:
        return not (self.children or self.star or self.gt or self.plain or self.groups)


EMPTY_RESULT = MatchResult()

#: :meth:`Sublist.shared_match`'s answer: the prefix's length, its node, what it matches.
SharedMatch = tuple[int, _Node, MatchResult]


class Sublist:
    """Insert, remove and match subscriptions by subject."""

    def __init__(self) -> None:
        self._root = _Node()
        #: subject -> its MatchResult. The router reads it directly on its hot path (a hit
        #: there counts in ``cache_hits`` as one here does); only the sublist writes it.
        self.cache: dict[bytes, MatchResult] = {}
        self.count = 0
        #: Counters /subsz reports (nats-server's SublistStats): each costs one integer add on
        #: a path that already does far more work (insert, remove, a cache lookup).
        self.inserts = 0
        self.removes = 0
        self.cache_hits = 0
        self.cache_misses = 0
        #: Nodes holding a ``tail`` or ``tails`` memo; every insert and remove clears them.
        self._memos: list[_Node] = []

    def insert(self, sub: Subscription) -> None:
        node = self._root
        for tok in sub.subject.split(b"."):
            if tok == _STAR:
                if node.star is None:
                    node.star = _Node()
                node = node.star
            elif tok == _GT:
                if node.gt is None:
                    node.gt = _Node()
                node = node.gt
            else:
                child = node.children.get(tok)
                if child is None:
                    child = node.children[tok] = _Node()
                node = child
        if sub.queue is None:
            node.plain.append(sub)
        else:
            node.groups.setdefault(sub.queue, []).append(sub)
        self.count += 1
        self.inserts += 1
        if self._memos:
            self._drop_memos()
        self._invalidate(sub.subject)

    def remove(self, sub: Subscription) -> bool:
        path: list[tuple[_Node, bytes]] = []
        node = self._root
        for tok in sub.subject.split(b"."):
            if tok == _STAR:
                nxt = node.star
            elif tok == _GT:
                nxt = node.gt
            else:
                nxt = node.children.get(tok)
            if nxt is None:
                return False
            path.append((node, tok))
            node = nxt
        if sub.queue is None:
            try:
                node.plain.remove(sub)
            except ValueError:
                return False
        else:
            members = node.groups.get(sub.queue)
            if not members or sub not in members:
                return False
            members.remove(sub)
            if not members:
                del node.groups[sub.queue]
        self.count -= 1
        self.removes += 1
        if self._memos:
            self._drop_memos()
        # Prune empty branches so the trie does not grow with churned inbox subjects.
        while path and node.empty():
            parent, tok = path.pop()
            if tok == _STAR:
                parent.star = None
            elif tok == _GT:
                parent.gt = None
            else:
                del parent.children[tok]
            node = parent
        self._invalidate(sub.subject)
        return True

    def _drop_memos(self) -> None:
        for node in self._memos:
            node.tail = None
            node.tails = None
        self._memos = []

    def _invalidate(self, pattern: bytes) -> None:
        cache = self.cache
        if not cache:
            return
        if 42 not in pattern and 62 not in pattern:  # no "*" or ">" (integers: cheaper)
            cache.pop(pattern, None)
            return
        stale = [s for s in cache if subject_matches(pattern, s)]
        for s in stale:
            del cache[s]

    def match(self, subject: bytes) -> MatchResult:
        """Every subscription whose subject matches ``subject`` (its tokens taken literally)."""
        cached = self.cache.get(subject)
        if cached is not None:
            self.cache_hits += 1
            return cached
        result = self._find(subject)
        if len(self.cache) >= CACHE_MAX:
            # Drop an arbitrary old half rather than scanning for the least used.
            for key in list(self.cache)[: CACHE_MAX // 2]:
                del self.cache[key]
        self.cache[subject] = result
        return result

    def match_once(self, subject: bytes) -> MatchResult:
        """:meth:`match` for a subject that will not come again (one request's reply
        subject): found the same way, counted the same way, but not kept in the cache, where
        it would only push out the subjects that do come again."""
        cached = self.cache.get(subject)
        if cached is not None:
            self.cache_hits += 1
            return cached
        return self._find(subject)

    def _find(self, subject: bytes) -> MatchResult:
        """:meth:`match` past the cache (a miss)."""
        self.cache_misses += 1
        tokens = subject.split(b".")
        n = len(tokens)
        # A subject whose literal walk, along a path with no '*' branch, reaches a node without
        # a child for its next token leaves the tree there. What it matches is remembered on
        # that node, so one-off subjects cost a short literal walk rather than a full match:
        # * without a '*' child, exactly the '>' subscriptions along the path, whatever the
        #   remaining tokens (every ack subject $JS.ACK.<stream>.<consumer>.<n>... of one
        #   consumer): ``tail``;
        # * with a '*' child that has no literal child anywhere below it (an inbox
        #   subscription _INBOX.<id>.* and every reply _INBOX.<id>.<n>), what the wildcards
        #   below match depends only on how many tokens remain, none of them empty (an empty
        #   token matches nothing): ``tails``, by that count.
        node = self._root
        i = 0
        result = None
        while i < n:
            tok = tokens[i]
            if not tok:
                break
            child = node.children.get(tok)
            star = node.star
            if child is None:
                if star is None:
                    result = node.tail
                    if result is None:
                        result = node.tail = MatchResult()
                        self._collect(self._root, tokens, 0, n, result)
                        self._memos.append(node)
                elif b"" not in tokens:
                    tails = node.tails
                    if tails is None:
                        if _has_literal(star):
                            break
                        tails = node.tails = {}
                        self._memos.append(node)
                    result = tails.get(n - i)
                    if result is None:
                        result = tails[n - i] = MatchResult()
                        self._collect(self._root, tokens, 0, n, result)
                break
            if star is not None:
                break
            node = child
            i += 1
        if result is None:
            result = MatchResult()
            self._collect(self._root, tokens, 0, n, result)
        return result

    def shared_match(self, subject: bytes) -> SharedMatch | None:
        """What every subject that begins with a prefix of ``subject`` matches, when its
        literal walk there leaves the tree whatever follows: the walk meets no ``*`` branch,
        and the node it reaches has no literal or ``*`` child, only ``>`` subscriptions below
        (every ack subject ``$JS.ACK.<stream>.<consumer>.…`` of one consumer; every key of
        a KV bucket a stream alone listens on). Returns the prefix's length in bytes (it ends
        with ``.``), the node (its ``tail`` is the result as long as the index does not change:
        every insert and remove clears it) and the result, which holds for any subject that
        begins with that prefix and has no empty token; None when no such prefix of at least
        one token exists. Nothing is counted: the caller counts each subject it routes."""
        node = self._root
        size = 0
        for tok in subject.split(b"."):
            if node.star is not None or not tok:
                return None
            if not node.children:
                if node is self._root:
                    return None
                result = node.tail
                if result is None:
                    result = node.tail = MatchResult()
                    self._collect(self._root, subject.split(b"."), 0,
                                  subject.count(b".") + 1, result)
                    self._memos.append(node)
                return size, node, result
            child = node.children.get(tok)
            if child is None:
                return None
            node = child
            size += len(tok) + 1
        return None

    def _collect(self, node: _Node, tokens: list[bytes], i: int, n: int,
                 result: MatchResult) -> None:
        while True:
            gt = node.gt
            if gt is not None and i < n:
                _add(gt, result)
            if i == n:
                _add(node, result)
                return
            tok = tokens[i]
            if not tok:
                return  # an empty token matches nothing
            star = node.star
            if star is not None:
                self._collect(star, tokens, i + 1, n, result)
            node = node.children.get(tok)  # type: ignore[assignment]
            if node is None:
                return
            i += 1

    def stats(self) -> dict[str, int | float]:
        """nats-server's ``SublistStats``: counts, cache use and fan-out over cached results
        (a queue group counts as one, as ``len(psubs) + len(qsubs)`` does in Go)."""
        matches = self.cache_hits + self.cache_misses
        cache = self.cache
        total = max_fanout = 0
        for result in cache.values():
            fanout = len(result.plain) + len(result.groups)
            total += fanout
            if fanout > max_fanout:
                max_fanout = fanout
        return {
            "num_subscriptions": self.count,
            "num_cache": len(cache),
            "num_inserts": self.inserts,
            "num_removes": self.removes,
            "num_matches": matches,
            "cache_hit_rate": self.cache_hits / matches if matches else 0,
            "max_fanout": max_fanout,
            "avg_fanout": total / len(cache) if cache else 0,
        }

    def has_interest(self, subject: bytes) -> bool:
        result = self.cache.get(subject)
        if result is None:
            result = self.match(subject)
        return bool(result.plain or result.groups)

    def all_subscriptions(self) -> list[Subscription]:
        out: list[Subscription] = []
        stack = [self._root]
        while stack:
            node = stack.pop()
            out.extend(node.plain)
            for members in node.groups.values():
                out.extend(members)
            stack.extend(node.children.values())
            if node.star:
                stack.append(node.star)
            if node.gt:
                stack.append(node.gt)
        return out


def _has_literal(node: _Node) -> bool:
    """Has ``node`` a literal child anywhere below it (through ``*`` and ``>`` as well)?"""
    if node.children:
        return True
    if node.star is not None and _has_literal(node.star):
        return True
    return node.gt is not None and _has_literal(node.gt)


def _add(node: _Node, result: MatchResult) -> None:
    if node.plain:
        result.plain.extend(node.plain)
    if node.groups:
        groups = result.groups
        for name, members in node.groups.items():
            existing = groups.get(name)
            if existing is None:
                groups[name] = list(members)
            else:
                existing.extend(members)
