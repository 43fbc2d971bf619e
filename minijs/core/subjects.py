"""Subject rules, as nats-server applies them.

A subject is tokens separated by ``.``; no token is empty and none contains white space. In a
subscription a token that is exactly ``*`` matches one token and a last token that is exactly
``>`` matches one or more. A token that merely contains ``*`` or ``>`` is a literal. Published
subjects are not validated (unless the client is pedantic): a published ``*`` token is routed as
a literal against subscriptions.

Functions take ``bytes`` (the wire form) or ``str``.

A byte is looked for as an integer (``62 in subject``) and a longer run with ``partition``
(``subject.partition(b"..")[1]``): CPython's ``bytes in bytes`` first tries the needle as an
integer and pays for the failure (~100 ns), and ``find`` parses its arguments (~50 ns); partition
takes one argument directly (~25 ns).
"""
from __future__ import annotations

_BAD_BYTES = frozenset(b" \t\r\n\x0c")


def _tokens(subject: bytes | str) -> list:
    if isinstance(subject, str):
        subject = subject.encode()
    return subject.split(b".")


def is_valid_subject(subject: bytes | str) -> bool:
    """Valid for a subscription: non-empty tokens, no white space, ``>`` only last."""
    if not subject:
        return False
    tokens = _tokens(subject)
    last = len(tokens) - 1
    for i, tok in enumerate(tokens):
        if not tok or _BAD_BYTES.intersection(tok):
            return False
        if tok == b">" and i != last:
            return False
    return True


def is_valid_literal_subject(subject: bytes | str) -> bool:
    """Valid and without wildcard tokens: what a pedantic publisher must use."""
    if not subject:
        return False
    bad = _BAD_BYTES.intersection
    for tok in _tokens(subject):
        if not tok or tok == b"*" or tok == b">" or bad(tok):
            return False
    return True


def has_wildcard(subject: bytes | str) -> bool:
    return any(tok in (b"*", b">") for tok in _tokens(subject))


def subject_matches(pattern: bytes | str, subject: bytes | str) -> bool:
    """Does ``subject`` (tokens taken literally) fall under subscription ``pattern``?"""
    ptoks = _tokens(pattern)
    stoks = _tokens(subject)
    n = len(ptoks)
    for i, ptok in enumerate(ptoks):
        if ptok == b">" and i == n - 1:
            return len(stoks) > i
        if i >= len(stoks):
            return False
        if ptok != b"*" and ptok != stoks[i]:
            return False
    return len(stoks) == n


def subjects_overlap(a: bytes | str, b: bytes | str) -> bool:
    """Could some literal subject match both patterns?"""
    atoks = _tokens(a)
    btoks = _tokens(b)
    i = 0
    while True:
        a_end = i >= len(atoks)
        b_end = i >= len(btoks)
        if a_end or b_end:
            return a_end and b_end
        x, y = atoks[i], btoks[i]
        if (x == b">" and i == len(atoks) - 1) or (y == b">" and i == len(btoks) - 1):
            return True
        if x != b"*" and y != b"*" and x != y:
            return False
        i += 1


def is_subset(sub: bytes | str, sup: bytes | str) -> bool:
    """Is every subject matched by ``sub`` also matched by ``sup``?"""
    stoks = _tokens(sub)
    ptoks = _tokens(sup)
    for i, ptok in enumerate(ptoks):
        if ptok == b">" and i == len(ptoks) - 1:
            return len(stoks) > i
        if i >= len(stoks):
            return False
        stok = stoks[i]
        if ptok == b"*":
            if stok == b">":
                return False
            continue
        if stok != ptok:
            return False
    return len(stoks) == len(ptoks)


# ----------------------------------------------------------------- the client protocol's rules
#
# nats-server's client path is more lenient than the subject grammar above: it never looks for
# white space in a subject (the protocol parser has already split on it), and its sublist simply
# matches nothing for a subject with an empty token.


def has_empty_token(subject: bytes) -> bool:
    """Empty, or an empty token (``a..b``, ``.a``, ``a.``): nats-server's sublist matches
    nothing for such a subject, so a publish to it reaches no one."""
    return not subject or subject[0] == 46 or subject[-1] == 46 or bool(subject.partition(b"..")[1])


def is_subscribable(subject: bytes) -> bool:
    """What a client may SUB to (nats-server's Sublist.Insert): no empty token, ``>`` only as
    the last token; any other byte is fine."""
    if has_empty_token(subject):
        return False
    if 62 not in subject:  # ">"
        return True
    return b">" not in subject.split(b".")[:-1]
