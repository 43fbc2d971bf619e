"""The per-subject sequence index of a store: for each live subject, its live sequences in
ascending order.

A publish appends to its subject's sequences (a new sequence is always its subject's highest)
and a removal takes one out, so the cost of either does not grow with the number of subjects,
as it did with one sorted list of ``(subject, seq)`` pairs. The sequences of a subject are
kept in the smallest form that serves them:

* one sequence: the ``int`` itself (a KV key with one revision, a subject at
  ``max_msgs_per_subject: 1``);
* up to :data:`SMALL` sequences: a plain ascending ``list`` (bisected; removing its first is a
  short move);
* more: a ``SortedList`` (a subject with many messages under a limit loses its first with
  every publish);

and a subject with no live sequence has no entry.

Invariants: every value holds at least one sequence, ascending, without repeats; a ``list``
holds 2 to ``SMALL`` of them; a ``SortedList`` is not turned back into a list until it holds
``SMALL // 2`` or fewer (so a subject at the boundary does not convert on every publish).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Iterator

from sortedcontainers import SortedList

#: The most sequences a subject keeps in a plain list.
SMALL = 64

#: One subject's sequences: an ``int``, a ``list`` or a ``SortedList`` (see above).
Seqs = Any


class SubjectSeqs:
    """subject -> its live sequences (see the module docstring)."""

    __slots__ = ("_by",)

    def __init__(self) -> None:
        self._by: dict[str, Seqs] = {}

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, int]]) -> "SubjectSeqs":
        """An index of ``(subject, seq)`` pairs in ascending sequence order."""
        grouped: dict[str, list[int]] = {}
        for subject, seq in pairs:
            seqs = grouped.get(subject)
            if seqs is None:
                grouped[subject] = [seq]
            else:
                seqs.append(seq)
        out = cls()
        by = out._by
        for subject, seqs in grouped.items():
            by[subject] = _packed(seqs)
        return out

    def __len__(self) -> int:
        return len(self._by)

    def pairs(self) -> list[tuple[str, int]]:
        """Every ``(subject, seq)``, sorted."""
        out: list[tuple[str, int]] = []
        for subject in sorted(self._by):
            cur = self._by[subject]
            out.extend((subject, q) for q in ((cur,) if type(cur) is int else cur))
        return out

    def check(self) -> None:
        """Assert the invariants of the module docstring."""
        for subject, cur in self._by.items():
            if type(cur) is int:
                continue
            seqs = list(cur)
            assert seqs == sorted(set(seqs)), subject
            if type(cur) is list:
                assert 2 <= len(cur) <= SMALL, (subject, len(cur))
            else:
                assert type(cur) is SortedList and len(cur) > SMALL // 2, (subject, len(cur))
                cur._check()

    def add_last(self, subject: str, seq: int) -> None:
        """Add ``seq``, higher than every sequence of ``subject``."""
        by = self._by
        cur = by.get(subject)
        if cur is None:
            by[subject] = seq
        elif type(cur) is int:
            by[subject] = [cur, seq]
        elif type(cur) is list:
            cur.append(seq)
            if len(cur) > SMALL:
                by[subject] = SortedList(cur)
        else:
            cur.add(seq)

    def extend_last(self, subject: str, seqs: list[int]) -> None:
        """Add ascending ``seqs``, each higher than every sequence of ``subject``."""
        if not seqs:
            return
        by = self._by
        cur = by.get(subject)
        if cur is None:
            by[subject] = _packed(list(seqs))
        elif type(cur) is int:
            by[subject] = _packed([cur, *seqs])
        elif type(cur) is list:
            cur.extend(seqs)
            if len(cur) > SMALL:
                by[subject] = SortedList(cur)
        else:
            cur.update(seqs)

    def remove(self, subject: str, seq: int) -> None:
        """Take out ``seq`` of ``subject`` (it must be there)."""
        by = self._by
        cur = by[subject]
        if type(cur) is int:
            if cur != seq:
                raise KeyError((subject, seq))
            del by[subject]
        elif type(cur) is list:
            if cur[0] == seq:
                del cur[0]
            else:
                cur.remove(seq)
            if len(cur) == 1:
                by[subject] = cur[0]
        else:
            cur.remove(seq)
            if len(cur) <= SMALL // 2:
                by[subject] = list(cur)

    def next(self, subject: str, start: int) -> int:
        """The first sequence of ``subject`` at or above ``start`` (0 if none)."""
        cur = self._by.get(subject)
        if cur is None:
            return 0
        if type(cur) is int:
            return cur if cur >= start else 0
        i = cur.bisect_left(start) if type(cur) is SortedList else bisect_left(cur, start)
        return cur[i] if i < len(cur) else 0

    def last(self, subject: str, up_to: int) -> int:
        """The last sequence of ``subject`` at or below ``up_to`` (0 if none)."""
        cur = self._by.get(subject)
        if cur is None:
            return 0
        if type(cur) is int:
            return cur if cur <= up_to else 0
        i = cur.bisect_right(up_to) if type(cur) is SortedList else bisect_right(cur, up_to)
        return cur[i - 1] if i > 0 else 0

    def count_from(self, subject: str, start: int) -> int:
        """How many sequences of ``subject`` are at or above ``start``."""
        cur = self._by.get(subject)
        if cur is None:
            return 0
        if type(cur) is int:
            return 1 if cur >= start else 0
        i = cur.bisect_left(start) if type(cur) is SortedList else bisect_left(cur, start)
        return len(cur) - i

    def between(self, subject: str, start: int, last: int) -> Iterator[int]:
        """The sequences of ``subject`` in ``[start, last]``, ascending."""
        cur = self._by.get(subject)
        if cur is None:
            return iter(())
        if type(cur) is int:
            return iter((cur,) if start <= cur <= last else ())
        if type(cur) is SortedList:
            return iter(cur.irange(start, last))
        return iter(cur[bisect_left(cur, start):bisect_right(cur, last)])


def _packed(seqs: list[int]) -> Seqs:
    """The form that holds ascending ``seqs`` (at least one)."""
    if len(seqs) == 1:
        return seqs[0]
    if len(seqs) <= SMALL:
        return seqs
    return SortedList(seqs)
