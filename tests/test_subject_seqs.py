"""The per-subject sequence index (``minijs.jetstream.store.subjectseqs``) against a plain
model: random appends, runs, removals (first, last, middle) and every query, across the
boundaries between its three forms."""
from __future__ import annotations

import bisect
import random

import pytest

from minijs.jetstream.store.subjectseqs import SMALL, SubjectSeqs


@pytest.mark.parametrize("seed", range(6))
def test_subject_seqs_answers_as_a_model(seed: int) -> None:
    rng = random.Random(seed)
    index = SubjectSeqs()
    model: dict[str, list[int]] = {}
    subjects = [f"s.{i}" for i in range(rng.choice([1, 3, 20]))]
    seq = 0
    for step in range(4000):
        op = rng.random()
        subject = rng.choice(subjects)
        if op < 0.4:
            seq += rng.randint(1, 3)
            index.add_last(subject, seq)
            model.setdefault(subject, []).append(seq)
        elif op < 0.5:
            run = list(range(seq + 1, seq + 1 + rng.randint(1, 3 * SMALL)))
            seq = run[-1]
            index.extend_last(subject, run)
            model.setdefault(subject, []).extend(run)
        elif op < 0.9 and model.get(subject):
            seqs = model[subject]
            q = rng.choice([seqs[0], seqs[-1], rng.choice(seqs)])
            index.remove(subject, q)
            seqs.remove(q)
            if not seqs:
                del model[subject]
        start = rng.randint(0, seq + 2)
        last = rng.randint(start, seq + 3)
        for s in subjects:
            seqs = model.get(s, [])
            i = bisect.bisect_left(seqs, start)
            assert index.next(s, start) == (seqs[i] if i < len(seqs) else 0), step
            j = bisect.bisect_right(seqs, last)
            assert index.last(s, last) == (seqs[j - 1] if j else 0), step
            assert index.count_from(s, start) == len(seqs) - i, step
            assert list(index.between(s, start, last)) == seqs[i:j], step
        if step % 97 == 0:
            index.check()
            assert len(index) == len(model)
            assert index.pairs() == sorted((s, q) for s, qs in model.items() for q in qs)
    with pytest.raises(KeyError):
        index.remove("nowhere", 1)
    again = SubjectSeqs.from_pairs(sorted(((s, q) for s, qs in model.items() for q in qs),
                                          key=lambda p: p[1]))
    again.check()
    assert again.pairs() == index.pairs()
