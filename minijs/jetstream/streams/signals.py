"""The consumer-signalling index of one stream: which of its consumers hear of what, so that
the cost of a message does not grow with idle consumers.

The stream tells its consumers, after the commit, about new messages, and at once about
messages removed one by one and about purges, as nats-server's store callbacks and
``purgeLocked`` do. The index keeps what makes that cheap:

* messages stored and not yet announced (:attr:`ConsumerSignals.queued`), announced by
  :meth:`ConsumerSignals.release` after the pub ack was sent (and, for file streams, after the
  commit), the order nats-server shows; then the stream's ``followers`` (mirrors and sources
  fed from it) are woken;
* per subject, the filtered consumers whose filter takes it (``Consumer.signal``), valid for
  the ``version`` of the stream's :class:`ConsumerMap`;
* for the unfiltered consumers, which count pending lazily (``Consumer._np_sync``), the last
  sequence announced (``sig_last``), how many were announced (``sig_n``), an epoch that moves
  when sequences are ever announced out of order (``sig_epoch``) and the last sequence queued
  (``sig_queued``); only those that may deliver now (``wakeable``: a pull consumer with waiting
  requests, a push consumer with interest) are woken (``Consumer.wake_new``);
* for removals, an epoch that moves whenever messages leave the store one by one (``rm_epoch``:
  pending counts taken before are stale) and the consumers that may hold pending acks or
  delivery counts (``holders``), the only ones told (``Consumer.on_removed``); a purge is
  told to every consumer (``Consumer.on_purged``).

Invariants: ``sig_last`` only grows while sequences are announced in order; an unfiltered
consumer is told of a gap in the announced sequences (``Consumer.np_gap``) before the message
after it; nothing is announced once the stream is closed.
"""
from __future__ import annotations

from typing import Any, Protocol

from minijs.core.subjects import subject_matches

#: Subjects whose filtered consumers the index remembers at most.
_TARGET_CACHE = 4096


class ConsumerMap(dict):
    """A stream's consumers by name; ``version`` changes with every change to the set (and
    with :meth:`changed`, called when a consumer's filters change)."""

    version = 0

    def changed(self) -> None:
        self.version += 1

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1

    def pop(self, *args: Any) -> Any:
        self.version += 1
        return super().pop(*args)

    def popitem(self) -> Any:
        self.version += 1
        return super().popitem()

    def clear(self) -> None:
        super().clear()
        self.version += 1

    def setdefault(self, *args: Any) -> Any:
        self.version += 1
        return super().setdefault(*args)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.version += 1


class SignalledStream(Protocol):
    """What the index reads of its stream."""

    closed: bool
    consumers: ConsumerMap
    #: Mirrors and sources fed from the stream (objects with ``wake()`` and
    #: ``interested(subject)``).
    followers: list[Any]


class ConsumerSignals:
    """The consumer-signalling index of one stream (see the module docstring)."""

    def __init__(self, stream: SignalledStream) -> None:
        self.stream = stream
        #: Stored messages not yet announced, as ``(seq, subject)``.
        self.queued: list[tuple[int, str]] = []
        self.sig_last = 0
        self.sig_n = 0
        self.sig_epoch = 0
        self.sig_queued = 0
        self.wakeable: dict[Any, None] = {}
        self.rm_epoch = 0
        self.holders: dict[Any, None] = {}
        #: subject -> the filtered consumers whose filter takes it, and the unfiltered
        #: consumers (both valid for ``consumers.version`` = ``_version``)
        self._targets: dict[str, list[Any]] = {}
        self._unfiltered: list[Any] = []
        self._version = -1

    def queue(self, seq: int, subject: str) -> None:
        """``seq`` was stored on ``subject``: announce it at the next :meth:`release`. (The
        stream queues nothing while it has neither consumers nor followers to tell.)"""
        self.queued.append((seq, subject))
        self.sig_queued = seq

    def release(self) -> None:
        """Tell the consumers whose filter takes each message queued since the last call
        (as nats-server signals through its index of consumer filters): the filtered
        consumers of a subject are looked up once and kept until the consumers or their
        filters change. Unfiltered consumers take every message: they count it from
        ``sig_last``/``sig_n`` when asked, and only those that may deliver now
        (``wakeable``) are woken. Then the followers are woken."""
        signals = self.queued
        if not signals:
            return
        self.queued = []
        stream = self.stream
        consumers = stream.consumers
        if consumers:
            targets = self._targets
            if self._version != consumers.version:
                self._refresh()
            wakeable = self.wakeable
            for seq, subject in signals:
                if stream.closed:
                    return
                if seq == self.sig_last + 1:
                    self.sig_last = seq
                elif seq > self.sig_last:
                    # after a gap (sequences stored unannounced or skipped): unfiltered
                    # consumers count up to here, then this one, as signal() would
                    for consumer in self._unfiltered:
                        consumer.np_gap(seq)
                    self.sig_last = seq
                else:
                    self.sig_epoch += 1
                self.sig_n += 1
                found = targets.get(subject)
                if found is None:
                    if len(targets) >= _TARGET_CACHE:
                        targets.clear()
                    found = targets[subject] = [c for c in consumers.values()
                                                if c.filters and c.matches(subject)]
                for consumer in found:
                    consumer.signal(seq, subject)
                if wakeable:
                    for consumer in list(wakeable):
                        if not consumer.wake_new():
                            wakeable.pop(consumer, None)
        else:
            self._count(signals)
        for follower in list(stream.followers):
            follower.wake()

    def _refresh(self) -> None:
        self._targets.clear()
        consumers = self.stream.consumers
        self._unfiltered = [c for c in consumers.values() if not c.filters]
        self._version = consumers.version

    def consumers_of(self, subject: str) -> list[Any]:
        """The consumers whose filter takes ``subject``: the unfiltered ones, then the
        filtered ones (from the index :meth:`release` keeps)."""
        consumers = self.stream.consumers
        if self._version != consumers.version:
            self._refresh()
        targets = self._targets
        found = targets.get(subject)
        if found is None:
            if len(targets) >= _TARGET_CACHE:
                targets.clear()
            found = targets[subject] = [c for c in consumers.values()
                                        if c.filters and c.matches(subject)]
        if not self._unfiltered:
            return found
        return self._unfiltered + found if found else self._unfiltered

    def _count(self, signals: list[tuple[int, str]]) -> None:
        """Announced with no consumer to tell: only ``sig_last``/``sig_n`` move."""
        for seq, _ in signals:
            if seq > self.sig_last:
                self.sig_last = seq
            else:
                self.sig_epoch += 1
        self.sig_n += len(signals)

    def removed(self, seqs: list[int]) -> None:
        """Messages left the store (limits, expiry, retention, ``MSG.DELETE``): every
        consumer recounts pending on its next ask (``rm_epoch``), and those holding pending
        acks or delivery counts (``holders``) forget them; the others are not visited."""
        if seqs:
            self.rm_epoch += 1
            holders = self.holders
            if holders:
                for consumer in list(holders):
                    if consumer.closed or not (consumer.pending or consumer.rdc
                                               or consumer.feeder is not None):
                        holders.pop(consumer, None)
                        consumer._holding = False
                    else:
                        consumer.on_removed(seqs)

    def purged_one(self, seq: int, subject: str) -> None:
        """A purge took exactly ``seq`` through the subject/keep path, which nats-server's
        stores report as a single removal on ``subject``: the consumers whose filter takes it
        see the message deleted (before the purge moves them)."""
        for consumer in list(self.stream.consumers.values()):
            if any(subject_matches(f, subject) for f in (consumer.filters or (">",))):
                consumer.on_removed([seq])

    def purged(self, subject: str | None, fseq: int, first: int, last: int) -> None:
        """A purge (API, rollup, delete marker; nats-server ``purgeLocked``): every consumer
        hears where the stream now starts (``first``), where the purged subject's messages
        resume (``fseq``, 0: none left) and where it ends (``last``)."""
        for consumer in list(self.stream.consumers.values()):
            consumer.on_purged(subject, fseq, first, last)
