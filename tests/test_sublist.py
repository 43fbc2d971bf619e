"""The subscription index: wildcard rules, queue groups, cache invalidation."""
from __future__ import annotations

import random

from hypothesis import given, strategies as st

from minijs.core.subjects import (
    is_subset, is_valid_literal_subject, is_valid_subject, subject_matches, subjects_overlap,
)
from minijs.core.sublist import Sublist, Subscription


def subjects_of(result):
    return sorted(s.subject for s in result.plain)


def test_literal_star_and_gt():
    sl = Sublist()
    for s in (b"foo.bar", b"foo.*", b"foo.>", b"*.bar", b">", b"foo.bar.baz"):
        sl.insert(Subscription(s))
    assert subjects_of(sl.match(b"foo.bar")) == sorted([b"foo.bar", b"foo.*", b"foo.>", b"*.bar", b">"])
    assert subjects_of(sl.match(b"foo.bar.baz")) == sorted([b"foo.>", b">", b"foo.bar.baz"])
    assert subjects_of(sl.match(b"foo")) == [b">"]  # '>' never matches zero tokens


def test_published_wildcard_tokens_are_literals():
    sl = Sublist()
    for s in (b"a.*", b"a.b", b"a.>"):
        sl.insert(Subscription(s))
    assert subjects_of(sl.match(b"a.*")) == sorted([b"a.*", b"a.>"])


def test_token_containing_star_is_literal():
    sl = Sublist()
    sl.insert(Subscription(b"a*b"))
    assert subjects_of(sl.match(b"a*b")) == [b"a*b"]
    assert not sl.match(b"axb")


def test_queue_groups_and_removal_invalidate_cache():
    sl = Sublist()
    q1 = Subscription(b"x.*", queue=b"g")
    q2 = Subscription(b"x.y", queue=b"g")
    p = Subscription(b"x.>")
    for s in (q1, q2, p):
        sl.insert(s)
    r = sl.match(b"x.y")
    assert r.plain == [p] and sorted(id(s) for s in r.groups[b"g"]) == sorted([id(q1), id(q2)])
    assert sl.remove(q1)
    assert sl.match(b"x.y").groups[b"g"] == [q2]
    assert sl.remove(q2) and sl.remove(p)
    assert not sl.match(b"x.y")
    assert sl.count == 0
    assert not sl.remove(p)


def test_prunes_empty_branches():
    sl = Sublist()
    subs = [Subscription(b"_INBOX.%d" % i) for i in range(100)]
    for s in subs:
        sl.insert(s)
    for s in subs:
        sl.remove(s)
    assert sl._root.empty()


def test_subject_validity():
    assert is_valid_subject(b"a.b.c") and is_valid_subject(b">") and is_valid_subject(b"a.*.>")
    for bad in (b"", b"a..b", b".a", b"a.", b"a.>.b", b"a b"):
        assert not is_valid_subject(bad), bad
    assert is_valid_literal_subject(b"a.b") and not is_valid_literal_subject(b"a.*")


def test_overlap_and_subset():
    assert subjects_overlap("a.*", "a.b") and subjects_overlap("a.>", "*.b.c")
    assert not subjects_overlap("a.b", "a.c") and not subjects_overlap("a.*", "a.b.c")
    assert is_subset("a.b", "a.*") and is_subset("a.b.c", "a.>") and not is_subset("a.>", "a.*")


TOKENS = st.sampled_from([b"a", b"b", b"c", b"*", b">"])


@given(st.lists(st.lists(TOKENS, min_size=1, max_size=4), min_size=1, max_size=12),
       st.lists(st.lists(st.sampled_from([b"a", b"b", b"c"]), min_size=1, max_size=4),
                min_size=1, max_size=12))
def test_trie_agrees_with_reference_matcher(patterns, subjects):
    sl = Sublist()
    subs = []
    for toks in patterns:
        subject = b".".join(toks)
        if not is_valid_subject(subject):
            continue
        sub = Subscription(subject)
        sl.insert(sub)
        subs.append(sub)
    random.shuffle(subs)
    for sub in subs[: len(subs) // 2]:
        sl.match(b"a")  # populate the cache between changes
        sl.remove(sub)
    live = subs[len(subs) // 2:]
    for toks in subjects:
        subject = b".".join(toks)
        got = sorted(id(s) for s in sl.match(subject).plain)
        want = sorted(id(s) for s in live if subject_matches(s.subject, subject))
        assert got == want


# ----------------------------------------------------------------- remembered results
#
# Subjects that leave the tree where only wildcards lie below (an inbox subscription
# _INBOX.<id>.* and its replies _INBOX.<id>.<n>) share a result remembered on that node, by the
# number of tokens left. These tests fail if that result is reused where it does not apply.


def full_walk(sl, subject):
    """What ``subject`` matches by a full walk of the tree (no cache, no remembered result)."""
    from minijs.core.sublist import MatchResult

    tokens = subject.split(b".")
    result = MatchResult()
    sl._collect(sl._root, tokens, 0, len(tokens), result)
    return result


def ids(result):
    return (sorted(id(s) for s in result.plain),
            {q: sorted(id(s) for s in m) for q, m in result.groups.items()})


def test_inbox_replies_by_token_count():
    sl = Sublist()
    one, two, rest = (Subscription(b"_INBOX.x.*"), Subscription(b"_INBOX.x.*.*"),
                      Subscription(b"_INBOX.x.>"))
    for s in (one, two, rest):
        sl.insert(s)
    assert set(sl.match(b"_INBOX.x.1").plain) == {one, rest}
    assert set(sl.match(b"_INBOX.x.2").plain) == {one, rest}  # remembered for one token left
    assert set(sl.match(b"_INBOX.x.3.4").plain) == {two, rest}
    assert set(sl.match(b"_INBOX.x.5.6.7").plain) == {rest}
    assert set(sl.match(b"_INBOX.x.8").plain) == {one, rest}
    assert not sl.match(b"_INBOX.y.1")


def test_inbox_replies_with_an_empty_token_match_by_full_walk():
    sl = Sublist()
    two, rest = Subscription(b"_INBOX.x.*.*"), Subscription(b"_INBOX.x.>")
    sl.insert(two)
    sl.insert(rest)
    assert set(sl.match(b"_INBOX.x.a.b").plain) == {two, rest}
    for subject in (b"_INBOX.x.a.", b"_INBOX.x..b"):
        assert ids(sl.match(subject)) == ids(full_walk(sl, subject))
        assert two not in sl.match(subject).plain


def test_no_shared_result_where_a_literal_lies_below_the_star():
    sl = Sublist()
    star, deep = Subscription(b"_INBOX.x.*"), Subscription(b"_INBOX.x.*.y")
    sl.insert(star)
    sl.insert(deep)
    assert sl.match(b"_INBOX.x.1.y").plain == [deep]
    assert not sl.match(b"_INBOX.x.2.z")
    assert sl.match(b"_INBOX.x.3").plain == [star]


def test_shared_results_forgotten_on_insert_and_remove():
    sl = Sublist()
    first = Subscription(b"_INBOX.x.*")
    sl.insert(first)
    assert sl.match(b"_INBOX.x.1").plain == [first]
    second = Subscription(b"_INBOX.x.*", queue=b"q")
    sl.insert(second)
    r = sl.match(b"_INBOX.x.2")
    assert r.plain == [first] and r.groups == {b"q": [second]}
    literal = Subscription(b"_INBOX.x.3")
    sl.insert(literal)
    assert set(sl.match(b"_INBOX.x.3").plain) == {first, literal}
    assert sl.match(b"_INBOX.x.4").plain == [first]
    sl.remove(first)
    r = sl.match(b"_INBOX.x.5")
    assert r.plain == [] and r.groups == {b"q": [second]}
    sl.remove(second)
    assert not sl.match(b"_INBOX.x.6")


PATTERN_TOKENS = st.sampled_from([b"a", b"b", b"*", b"*", b">"])
SUBJECT_TOKENS = st.sampled_from([b"a", b"b", b"c", b"d", b""])


@given(st.lists(st.lists(PATTERN_TOKENS, min_size=1, max_size=4), min_size=1, max_size=10),
       st.lists(st.tuples(st.sampled_from(["match", "match", "match", "insert", "remove"]),
                          st.integers(0, 9),
                          st.lists(SUBJECT_TOKENS, min_size=1, max_size=5)),
                min_size=1, max_size=40))
def test_remembered_results_equal_full_walks(patterns, steps):
    sl = Sublist()
    subs = [Subscription(b".".join(toks), queue=b"q" if i % 3 == 0 else None)
            for i, toks in enumerate(patterns) if is_valid_subject(b".".join(toks))]
    live: list[Subscription] = []
    for action, k, toks in steps:
        if action == "insert" and subs:
            sub = subs[k % len(subs)]
            if sub not in live:
                sl.insert(sub)
                live.append(sub)
        elif action == "remove" and live:
            sub = live.pop(k % len(live))
            sl.remove(sub)
        else:
            subject = b".".join(toks)
            assert ids(sl.match(subject)) == ids(full_walk(sl, subject)), subject
