"""Applying subject mappings (stream ``subject_transform`` and ``republish``).

Behaviour follows nats-server v2.15.1 ``server/subject_transform.go``
(``NewSubjectTransform`` + ``Match`` / ``TransformTokenizedSubject``); validation is the one
in :mod:`minijs.jetstream.configs`, whose parsing helpers are reused here.

Usage::

    tr = SubjectTransform("orders.*.*", "shard.{{partition(4,1)}}.$2")
    tr.apply("orders.eu.42")     # 'shard.<0..3>.42'
    tr.apply("other.subject")    # None: does not match the source

Semantics worth knowing (all as in nats-server):

* ``src`` ``""`` means ``">"``; ``dest`` ``""`` means "no transform" (every subject is
  returned unchanged), as does ``">"`` → ``">"``; that identity case skips all checks.
* ``apply`` returns ``None`` when the subject does not match ``src`` or is not a valid
  literal subject (an empty token, or a ``*`` / ``>`` token).
* ``$N`` / ``{{wildcard(N)}}`` refer to the N-th ``*`` of the source (1-based); an index that
  names no ``*`` (``0``, negative) quietly refers to the subject's *first token*.
* ``{{partition(n, i, ...)}}`` hashes with FNV-1a 32 over the selected tokens' bytes
  concatenated with *no* separator, modulo ``n``; with no indexes (or when the source has no
  wildcards at all, where indexes are ignored) the key is the whole subject. ``n`` is taken
  as a Go ``int32`` (wraps) and then as ``uint32`` for the modulo; ``n == 0`` gives ``"0"``.
* The token functions (``left``, ``right``, ``split*``, ``slice*``) work on UTF-8 *bytes*;
  non-ASCII subjects are encoded with ``surrogateescape`` and decoded back the same way, so a
  cut in the middle of a character yields lone ``\\udcXX`` surrogates, the bytes Go would emit.
* Results are not re-validated: ``{{split(1,-)}}`` of ``--a`` is ``".a"`` (as in Go); the
  republish path must check ``is_valid_publish_subject`` itself.
"""

from __future__ import annotations

import random as _random
from operator import itemgetter
from typing import Callable

from minijs.jetstream.configs import (
    _MappingError,
    _atoi,
    _fn_args,
    _index_placeholders,
    _new_subject_transform,
)

__all__ = ["SubjectTransform", "fnv1a32"]

_TokenFn = Callable[[list[str], str], str]  # (subject tokens, subject) -> output
_Part = str | int | _TokenFn  # literal token, source token index, or function


def fnv1a32(data: bytes) -> int:
    """32-bit FNV-1a hash (Go ``hash/fnv.New32a``)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _int32(v: int) -> int:
    """Go ``int32(v)`` conversion: keep the low 32 bits, signed."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _b(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _partition_of(key: str, buckets: int) -> str:
    if buckets == 0:
        return "0"
    return str(fnv1a32(_b(key)) % (buckets & 0xFFFFFFFF))


class _Random:
    """``{{random(n)}}``: ``rand.Int31() % n`` (``"0"`` when ``n`` is 0)."""

    __slots__ = ("ceiling",)

    def __init__(self, ceiling: int) -> None:
        self.ceiling = abs(ceiling)  # Go: non-negative dividend, so the sign of n is moot

    def __call__(self, toks: list[str], subject: str) -> str:
        if self.ceiling == 0:
            return "0"
        return str(_random.getrandbits(31) % self.ceiling)


# ---- per-token operations on one source token (ASCII fast path, else on UTF-8 bytes) ----


def _on_bytes(fn: Callable, tok: str, n: int) -> str:
    if tok.isascii():
        return fn(tok, n, ".")
    return _s(fn(_b(tok), n, b"."))


def _split_from_left(t, p, sep):
    return t[:p] + sep + t[p:] if 0 < p < len(t) else t


def _split_from_right(t, p, sep):
    k = len(t) - p
    return t[:k] + sep + t[k:] if 0 < p < len(t) else t


def _slice_from_left(t, size, sep):
    if not 0 < size < len(t):
        return t
    return sep.join([t[i : i + size] for i in range(0, len(t), size)])


def _slice_from_right(t, size, sep):
    n = len(t)
    if not 0 < size < n:
        return t
    r = n % size
    parts = [t[:r]] if r else []
    parts.extend(t[i : i + size] for i in range(r, n, size))
    return sep.join(parts)


def _left(t, n, sep):
    return t[:n] if 0 < n < len(t) else t


def _right(t, n, sep):
    return t[len(t) - n :] if 0 < n < len(t) else t


_BYTE_FNS = {
    "splitfromleft": _split_from_left,
    "splitfromright": _split_from_right,
    "slicefromleft": _slice_from_left,
    "slicefromright": _slice_from_right,
    "left": _left,
    "right": _right,
}


def _split(tok: str, delim: str) -> str:
    """Go's ``split`` mapping function: split on ``delim``, drop empty pieces, join with ``.``
    — except that a run of delimiters after a leading empty piece keeps one ``.`` (Go quirk)."""
    # Splitting the decoded text equals splitting UTF-8 bytes (also for surrogateescape'd
    # bytes); delim "" explodes into characters / single invalid bytes, like Go.
    pieces = tok.split(delim) if delim else list(tok)
    out: list[str] = []
    last = len(pieces) - 1
    for j, p in enumerate(pieces):
        if p:
            out.append(p)
        if j < last and pieces[j + 1] and not (j == 0 and not p):
            out.append(".")
    return "".join(out)


class SubjectTransform:
    """A compiled ``src`` → ``dest`` subject mapping; see the module docstring.

    Raises ``ValueError`` (with nats-server's error text) if the mapping is invalid.
    """

    __slots__ = ("src", "dest", "_identity", "_literal_src", "_const", "_nstoks", "_fwc",
                 "_lit_get", "_lit_vals", "_parts", "_simple", "_tail", "_fmt")

    def __init__(self, src: str, dest: str) -> None:
        try:
            _new_subject_transform(src, dest)
        except _MappingError as e:
            raise ValueError(str(e)) from None
        if src == "":
            src = ">"
        self.src: str = src
        self.dest: str = dest
        self._identity = dest == "" or (src == ">" and dest == ">")
        self._literal_src: str | None = None
        self._const: str | None = None
        self._parts: list[_Part] = []
        self._simple = True
        self._tail = -1
        stoks = src.split(".")
        self._nstoks = len(stoks)
        self._fwc = stoks[-1] == ">"
        lits = [(i, t) for i, t in enumerate(stoks) if t not in ("*", ">")]
        # itemgetter over the literal source positions: one C call to check them all
        self._lit_get: Callable | None = itemgetter(*[i for i, _ in lits]) if lits else None
        self._lit_vals: object = (
            lits[0][1] if len(lits) == 1 else tuple(t for _, t in lits)) if lits else None
        self._fmt: Callable | None = None
        if self._identity:
            return
        # wildcard number (1-based) -> source token position; unknown numbers -> 0 (Go map zero)
        sti: dict[int, int] = {}
        for i, t in enumerate(stoks):
            if t == "*":
                sti[len(sti) + 1] = i
        has_wc = bool(sti) or self._fwc
        if not has_wc:
            self._literal_src = src
        dtoks = dest.split(".")
        if dtoks[-1] == ">":
            self._tail = self._nstoks - 1
            dtoks = dtoks[:-1]
        for tok in dtoks:
            self._parts.append(self._compile_token(tok, sti, has_wc))
        if self._literal_src is not None and not any(isinstance(p, _Random) for p in self._parts):
            # only literal tokens and partitions of the (fixed) subject: precompute the result
            self._const = self._render(stoks, src)
        elif self._simple:
            # pure wildcard mapping: a str.format template over the subject tokens
            tpl = ".".join(p.replace("{", "{{").replace("}", "}}") if p.__class__ is str
                           else "{%d}" % p for p in self._parts)
            if self._tail >= 0 and self._parts:
                tpl += "."
            self._fmt = tpl.format

    # ---- construction ----

    def _compile_token(self, tok: str, sti: dict[int, int], has_wc: bool) -> _Part:
        """Compile one destination token (``tok`` was validated by the constructor)."""
        kind, idxs = _index_placeholders(tok)
        if kind == "none":
            return tok
        pos = [sti.get(i, 0) for i in idxs]
        if kind == "wildcard":
            return pos[0]
        self._simple = False
        if kind == "random":
            return _Random(_int32(_atoi(_fn_args("random", tok)[0].strip(" "))))
        args = _fn_args(kind, tok)
        if kind == "partition":
            buckets = _int32(_atoi(args[0].strip(" ")))
            if not has_wc or not pos:
                return lambda toks, subject: _partition_of(subject, buckets)
            return lambda toks, subject: _partition_of("".join([toks[i] for i in pos]), buckets)
        p = pos[0]
        if kind == "split":
            delim = args[1]
            return lambda toks, subject: _split(toks[p], delim)
        n = _atoi(args[1].strip(" "))
        fn = _BYTE_FNS[kind]
        return lambda toks, subject: _on_bytes(fn, toks[p], n)

    # ---- application ----

    def _render(self, toks: list[str], subject: str) -> str:
        if self._simple:
            out = [p if p.__class__ is str else toks[p] for p in self._parts]
        else:
            out = [
                p if p.__class__ is str else toks[p] if p.__class__ is int else p(toks, subject)
                for p in self._parts
            ]
        if self._tail >= 0:
            out.extend(toks[self._tail :])
        return ".".join(out)

    def matches(self, subject: str) -> bool:
        """True if ``apply`` would transform ``subject`` (always true for the identity)."""
        return self.apply(subject) is not None

    def apply(self, subject: str) -> str | None:
        """The transformed subject, or ``None`` if ``subject`` does not match ``src``."""
        if self._identity:
            return subject
        lit = self._literal_src
        if lit is not None:
            if subject != lit:
                return None
            if self._const is not None:
                return self._const
            return self._render(subject.split("."), subject)
        toks = subject.split(".")
        n = len(toks)
        if n != self._nstoks and (n < self._nstoks or not self._fwc):
            return None
        # not a valid literal subject: an empty token, or a "*" / ">" token
        if "" in toks or (("*" in subject or ">" in subject) and ("*" in toks or ">" in toks)):
            return None
        if self._lit_get is not None and self._lit_get(toks) != self._lit_vals:
            return None
        fmt = self._fmt
        if fmt is not None:
            if self._tail < 0:
                return fmt(*toks)
            return fmt(*toks) + ".".join(toks[self._tail :])
        return self._render(toks, subject)

    def __repr__(self) -> str:
        return "SubjectTransform(%r, %r)" % (self.src, self.dest)
