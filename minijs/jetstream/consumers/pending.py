"""Pending counts: how many messages matching a consumer's filters it has still to deliver
(consumer info's ``num_pending``, the ``<pending>`` token of every ack subject), as
nats-server's ``calculateNumPending`` and its running ``npc`` keep it.

The count is a running one while valid: a delivery of a new message takes one off, a stored
message the consumer takes adds one. Anything that can make it wrong without a delivery or a
store invalidates it, and the next ask counts again from the store.

Invariants of :class:`PendingCount` (its state is written only by its own methods):

* ``n`` is exact while ``valid`` is true and the stream's ``rm_epoch`` is the one recorded at
  the last count (``rm_epoch``); a removal (limit, expiry, ``MSG.DELETE``, retention), a purge,
  a config change, a reset or a position jump (the end of a ``last_per_subject`` start list)
  invalidates it. A message stored before the last count (at or below ``upto``) is not counted
  twice when its signal comes.
* While the consumer works through a ``last_per_subject`` start list the count is that list's
  length plus what matches after the list's resume point (no running count).
* A filtered consumer counts each message as the stream signals it (:meth:`signal`). An
  unfiltered one (``lazy``) takes every message, so the stream does not signal it one by one:
  it adds what the stream announced since it last looked (``sig_n``/``sig_last``) when asked or
  before its position moves (:meth:`sync`), with the same result. ``_ann`` is a sequence every
  later announced one lies above; ``_ann_n`` and ``_ann_epoch`` the stream's ``sig_n`` and
  ``sig_epoch`` when ``_ann`` was taken. Announcements with gaps reach it through :meth:`gap`,
  so :meth:`sync` only ever sees consecutive sequences; anything else invalidates the count.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from minijs.jetstream.store.base import Store
    from minijs.jetstream.streams.stream import Stream


@runtime_checkable
class CountHost(Protocol):
    """What the count reads of its consumer: the stream (its store and announcement
    counters), the delivery position and the filters."""

    stream: "Stream"
    sseq: int
    lps: deque[int]
    lps_resume: int
    filters: list[str]

    def matches(self, subject: str) -> bool: ...


class PendingCount:
    """``num_pending`` of one consumer, kept running between deliveries and stores."""

    __slots__ = ("host", "n", "valid", "upto", "rm_epoch", "lazy", "_ann", "_ann_n",
                 "_ann_epoch")

    def __init__(self, host: CountHost) -> None:
        self.host = host
        #: the running count (exact while ``valid`` and ``rm_epoch`` is the stream's)
        self.n = 0
        self.valid = False
        #: the stream's last sequence when ``n`` was counted
        self.upto = 0
        #: the stream's ``rm_epoch`` when ``n`` was counted
        self.rm_epoch = 0
        #: unfiltered: counts the stream's announcements instead of per-message signals
        self.lazy = False
        self._ann = 0
        self._ann_n = 0
        self._ann_epoch = 0

    def invalidate(self) -> None:
        """Count again from the store on the next ask."""
        self.valid = False

    def set_lazy(self, lazy: bool) -> None:
        """The filters changed: an unfiltered consumer counts lazily."""
        if self.lazy != lazy:
            self.lazy = lazy
            self.valid = False

    def num_pending(self) -> int:
        """Matching messages at or after the delivery position not yet delivered."""
        host = self.host
        if host.lps:
            return len(host.lps) + self._count_from(host.lps_resume, host.stream.store)
        if not self.valid or self.rm_epoch != host.stream.signals.rm_epoch:
            store = host.stream.store
            self.n = self._count_from(host.sseq, store)
            self._base(store.last_seq)
        elif self.lazy:
            self.sync()
        return self.n

    def set_counted(self, n: int, last: int) -> None:
        """``n`` was just counted by the consumer itself with the stream's last sequence at
        ``last`` (a restored ``last_per_subject`` consumer)."""
        self.n = n
        self._base(last)

    def _base(self, last: int) -> None:
        """``n`` was just counted with the stream's last sequence at ``last``."""
        self.upto = last
        self.valid = True
        st = self.host.stream.signals
        self.rm_epoch = st.rm_epoch
        # Every message announced from now on is above the last one stored, unless some
        # stored ones still wait to be announced: then above the last one announced.
        self._ann = last if st.sig_queued <= st.sig_last else st.sig_last
        self._ann_n = st.sig_n
        self._ann_epoch = st.sig_epoch

    def _count_from(self, seq: int, store: "Store") -> int:
        filters = self.host.filters
        if not filters:
            return store.num_pending(seq)
        return sum(store.num_pending(seq, f) for f in filters)

    def signal(self, seq: int, subject: str) -> None:
        """A message was stored and the stream signals it (a filtered consumer; an unfiltered
        one only syncs)."""
        if self.lazy:
            if self.valid:
                self.sync()
            return
        host = self.host
        if (self.valid and seq > self.upto and seq >= host.sseq and not host.lps
                and host.matches(subject)):
            self.n += 1

    def took(self) -> None:
        """The consumer delivers a new message (not from a start list) and its position is
        about to move past it: count what was announced before the move, then one less."""
        if self.lazy and self.host.stream.signals.sig_n > self._ann_n:  # (sync's own first test)
            self.sync()
        if self.n > 0:
            self.n -= 1

    def sync(self) -> None:
        """Count the messages the stream announced since the last sync as :meth:`signal`
        would have one by one: those above ``upto`` and at or after the position. The
        announced ones lie above ``_ann``; when the bound is higher, they are counted by
        sequence: they have no gaps (the stream calls :meth:`gap` at each gap), else the
        count is invalidated."""
        st = self.host.stream.signals
        n = st.sig_n - self._ann_n
        if n <= 0:
            return
        if st.sig_epoch != self._ann_epoch:
            self.valid = False
            return
        lo = self.upto
        pos = self.host.sseq - 1
        if pos > lo:
            lo = pos
        last = st.sig_last
        if lo <= self._ann:
            self.n += n
        elif lo < last:
            if last - self._ann != n:
                self.valid = False
                return
            self.n += last - lo
        self._ann = last
        self._ann_n = st.sig_n

    def gap(self, seq: int) -> None:
        """The stream announces ``seq`` after a gap in the announced sequences (an unfiltered
        consumer): count what was announced up to the gap (consecutive since the last gap),
        then ``seq`` as :meth:`signal` would."""
        if not self.valid:
            return
        self.sync()
        if not self.valid:
            return
        host = self.host
        if seq > self.upto and seq >= host.sseq and not host.lps:
            self.n += 1
        self._ann = seq
        self._ann_n = host.stream.signals.sig_n + 1  # the stream counts this one right after
