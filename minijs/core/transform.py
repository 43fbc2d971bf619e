"""Subject mappings: stream ``subject_transform`` and ``republish``, account ``mappings`` and
import ``to`` subjects.

Behaviour follows nats-server v2.15.1 ``server/subject_transform.go``
(``NewSubjectTransform`` + ``Match`` / ``TransformTokenizedSubject``); validation (``validate_mapping``)
lives here too: stream configs (:mod:`minijs.jetstream.config.stream`) and account ``mappings`` share it.

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

import re
from operator import itemgetter
from typing import Callable, cast

# ---- subject mapping destinations (server/subject_transform.go, sublist.go ValidateMapping) ----

_MAP_ERR = "invalid mapping destination"
_S = r"[\t\n\f\r ]*"


_FN = {
    "partition": re.compile(r"{{" + _S + r"[pP]artition" + _S + r"\((.*)\)" + _S + r"}}"),
    "wildcard": re.compile(r"{{" + _S + r"[wW]ildcard" + _S + r"\((.*)\)" + _S + r"}}"),
    "splitfromleft": re.compile(r"{{" + _S + r"[sS]plit[fF]rom[lL]eft" + _S + r"\((.*)\)" + _S + r"}}"),
    "splitfromright": re.compile(r"{{" + _S + r"[sS]plit[fF]rom[rR]ight" + _S + r"\((.*)\)" + _S + r"}}"),
    "slicefromleft": re.compile(r"{{" + _S + r"[sS]lice[fF]rom[lL]eft" + _S + r"\((.*)\)" + _S + r"}}"),
    "slicefromright": re.compile(r"{{" + _S + r"[sS]lice[fF]rom[rR]ight" + _S + r"\((.*)\)" + _S + r"}}"),
    "split": re.compile(r"{{" + _S + r"[sS]plit" + _S + r"\((.*)\)" + _S + r"}}"),
    "left": re.compile(r"{{" + _S + r"[lL]eft" + _S + r"\((.*)\)" + _S + r"}}"),
    "right": re.compile(r"{{" + _S + r"[rR]ight" + _S + r"\((.*)\)" + _S + r"}}"),
    "random": re.compile(r"{{" + _S + r"[rR]andom" + _S + r"\((.*)\)" + _S + r"}}"),
}
_COMMA = re.compile(r",[\t\n\f\r ]*")
_ATOI = re.compile(r"[+-]?[0-9]+")


class _MappingError(Exception):
    pass


def _merr(detail: str, token: str | None = None) -> _MappingError:
    text = _MAP_ERR + (": " + detail if detail else "")
    if token:
        text += " in " + token
    return _MappingError(text)


def _atoi(s: str) -> int | None:
    if not _ATOI.fullmatch(s):
        return None
    v = int(s)
    if not -(1 << 63) <= v < (1 << 63):
        return None
    return v


def _fn_args(name: str, token: str) -> list[str] | None:
    m = _FN[name].search(token)
    if m is None:
        return None
    return _COMMA.split(m.group(1))


def _index_int_args(token: str, args: list[str], kind: str) -> tuple[str, list[int]]:
    if len(args) < 2:
        raise _merr("not enough arguments passed to the function", token)
    if len(args) > 2:
        raise _merr("too many arguments passed to the function", token)
    i = _atoi(args[0].strip(" "))
    n = _atoi(args[1].strip(" "))
    if i is None or n is None or not -(1 << 31) <= n < (1 << 31):
        raise _merr("function argument is invalid or in the wrong format", token)
    return kind, [i]


def _index_placeholders(token: str) -> tuple[str, list[int]]:
    """(transform type, wildcard indexes) of one destination token (``indexPlaceHolders``)."""
    n = len(token)
    if n > 1:
        if token[0] == "$":
            tp = _atoi(token[1:])
            if tp is None:
                return "none", [-1]
            return "wildcard", [tp]
        if n > 4 and token.startswith("{{") and token.endswith("}}"):
            args = _fn_args("wildcard", token)
            if args is not None:
                if len(args) == 1 and args[0] == "":
                    raise _merr("not enough arguments passed to the function", token)
                if len(args) == 1:
                    idx = _atoi(args[0].strip(" "))
                    if idx is None:
                        raise _merr("function argument is invalid or in the wrong format", token)
                    return "wildcard", [idx]
                raise _merr("too many arguments passed to the function", token)
            args = _fn_args("partition", token)
            if args is not None:
                num = _atoi(args[0].strip(" "))
                if num is None or num > (1 << 31) - 1:
                    raise _merr("function argument is invalid or in the wrong format", token)
                idxs = []
                for a in args[1:]:
                    i = _atoi(a.strip(" "))
                    if i is None:
                        raise _merr("function argument is invalid or in the wrong format", token)
                    idxs.append(i)
                return "partition", idxs
            for kind in ("splitfromleft", "splitfromright", "slicefromleft", "slicefromright", "right", "left"):
                args = _fn_args(kind, token)
                if args is not None:
                    return _index_int_args(token, args, kind)
            args = _fn_args("split", token)
            if args is not None:
                if len(args) < 2:
                    raise _merr("not enough arguments passed to the function", token)
                if len(args) > 2:
                    raise _merr("too many arguments passed to the function", token)
                i = _atoi(args[0].strip(" "))
                if i is None or " " in args[1] or "." in args[1]:
                    raise _merr("function argument is invalid or in the wrong format", token)
                return "split", [i]
            args = _fn_args("random", token)
            if args is not None:
                if len(args) != 1:
                    raise _merr("not enough arguments passed to the function", token)
                num = _atoi(args[0].strip(" "))
                if num is None or num > (1 << 31) - 1:
                    raise _merr("function argument is invalid or in the wrong format", token)
                return "random", []
            raise _merr("unknown function", token)
    return "none", [-1]


def _subject_info(s: str) -> tuple[bool, list[str], int, bool]:
    if s == "":
        return False, [], 0, False
    npwcs, fwc = 0, False
    toks = s.split(".")
    for t in toks:
        if t == "" or fwc:
            return False, [], 0, False
        if t == ">":
            fwc = True
        elif t == "*":
            npwcs += 1
    return True, toks, npwcs, fwc


def _new_subject_transform(src: str, dest: str) -> None:
    """Validation half of ``NewSubjectTransform``; raises ``_MappingError`` (or returns)."""
    if dest == "":
        return
    if src == "":
        src = ">"
    sv, stoks, npwcs, has_fwc = _subject_info(src)
    dv, dtoks, dnpwcs, d_has_fwc = _subject_info(dest)
    if not sv or not dv or dnpwcs > 0 or has_fwc != d_has_fwc:
        raise _MappingError("invalid subject")
    if npwcs > 0 or has_fwc:
        for tok in dtoks:
            kind, idxs = _index_placeholders(tok)
            if kind in ("none", "random"):
                continue
            for wi in idxs:
                if wi > npwcs:
                    raise _merr("wildcard index out of range", "%s: [%d]" % (tok, wi))
    else:
        for tok in dtoks:
            kind, _ = _index_placeholders(tok)
            if kind not in ("none", "random", "partition"):
                raise _merr("wildcard index out of range", tok)


def validate_mapping(src: str, dest: str) -> str | None:
    """Go ``ValidateMapping``: ``None`` if ``src`` → ``dest`` is a valid subject mapping, else
    the error text (e.g. ``invalid mapping destination: wildcard index out of range in
    {{wildcard(3)}}: [3]``)."""
    if dest == "":
        return None
    fwc = False
    for t in dest.split("."):
        if t == "" or fwc:
            return _MAP_ERR + ": invalid transform in " + t if t else _MAP_ERR + ": invalid transform"
        if len(t) > 4 and t.startswith("{{") and t.endswith("}}"):
            if not any(
                _FN[k].search(t)
                for k in (
                    "partition",
                    "wildcard",
                    "splitfromleft",
                    "splitfromright",
                    "slicefromleft",
                    "slicefromright",
                    "split",
                    "random",
                )
            ):
                return _MAP_ERR + ": unknown function in " + t
            continue
        if t == ">":
            fwc = True
        elif any(c in t for c in "\t\n\f\r "):
            return _MAP_ERR + ": invalid transform"
    try:
        _new_subject_transform(src, dest)
    except _MappingError as e:
        return str(e)
    return None


def _transform_creatable(src: str, dest: str) -> bool:
    try:
        _new_subject_transform(src, dest)
    except _MappingError:
        return False
    return True


__all__ = ["SubjectTransform", "fnv1a32", "validate_mapping"]

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
    """``{{random(n)}}``: ``rand.Int31() % n`` (``"0"`` when ``n`` is 0); ``bits(31)`` is the
    draw (the server's seeded source)."""

    __slots__ = ("ceiling", "bits")

    def __init__(self, ceiling: int, bits: Callable[[int], int]) -> None:
        self.ceiling = abs(ceiling)  # Go: non-negative dividend, so the sign of n is moot
        self.bits = bits

    def __call__(self, toks: list[str], subject: str) -> str:
        if self.ceiling == 0:
            return "0"
        return str(self.bits(31) % self.ceiling)


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
    ``bits(k)`` draws the ``k`` random bits of a ``{{random(n)}}`` token (a server passes its
    seeded source's ``getrandbits``; without it, a fresh source of its own).
    """

    __slots__ = ("src", "dest", "_identity", "_literal_src", "_const", "_nstoks", "_fwc",
                 "_lit_get", "_lit_vals", "_parts", "_simple", "_tail", "_fmt", "_bits")

    def __init__(self, src: str, dest: str, bits: Callable[[int], int] | None = None) -> None:
        try:
            _new_subject_transform(src, dest)
        except _MappingError as e:
            raise ValueError(str(e)) from None
        if src == "":
            src = ">"
        self.src: str = src
        self.dest: str = dest
        self._identity = dest == "" or (src == ">" and dest == ">")
        self._bits = bits
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
            # pure wildcard mapping: a str.format template over the subject tokens (literal
            # tokens and source token indexes only: a function token clears _simple)
            simple_parts = cast("list[str | int]", self._parts)
            tpl = ".".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str)
                           else "{%d}" % p for p in simple_parts)
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
            bits = self._bits
            if bits is None:
                from minijs.randomness import RandomSource

                bits = self._bits = RandomSource().getrandbits
            random_args = _fn_args("random", tok)
            assert random_args is not None  # (tok was validated: see _index_placeholders)
            num = _atoi(random_args[0].strip(" "))
            assert num is not None
            return _Random(_int32(num), bits)
        args = _fn_args(kind, tok)
        assert args is not None  # (tok was validated: its function and numbers parse)
        if kind == "partition":
            num = _atoi(args[0].strip(" "))
            assert num is not None
            buckets = _int32(num)
            if not has_wc or not pos:
                return lambda toks, subject: _partition_of(subject, buckets)
            return lambda toks, subject: _partition_of("".join([toks[i] for i in pos]), buckets)
        p = pos[0]
        if kind == "split":
            delim = args[1]
            return lambda toks, subject: _split(toks[p], delim)
        n = _atoi(args[1].strip(" "))
        assert n is not None
        fn = _BYTE_FNS[kind]
        return lambda toks, subject: _on_bytes(fn, toks[p], n)

    # ---- application ----

    def _render(self, toks: list[str], subject: str) -> str:
        # mypy does not narrow on ``p.__class__ is``, the test this per-message path uses
        # (cheaper than isinstance); _simple parts are str or int only.
        if self._simple:
            out = [p if p.__class__ is str else toks[p]  # type: ignore[index]
                   for p in self._parts]
        else:
            out = [
                p if p.__class__ is str else toks[p] if p.__class__ is int
                else p(toks, subject)  # type: ignore[operator]
                for p in self._parts
            ]
        if self._tail >= 0:
            out.extend(toks[self._tail :])
        return ".".join(out)

    def matches(self, subject: str) -> bool:
        """True if ``apply`` would transform ``subject`` (always true for the identity)."""
        return self.apply(subject) is not None

    def apply(self, subject: str, *, literal: bool = True) -> str | None:
        """The transformed subject, or ``None`` if ``subject`` does not match ``src``.

        ``literal=False`` takes a subject with ``*`` / ``>`` tokens as plain tokens (nats-server's
        ``TransformSubject``, which service imports use: a request may be published on
        ``$JS.API.CONSUMER.CREATE.S.C.orders.>``)."""
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
        if "" in toks or (literal and ("*" in subject or ">" in subject)
                          and ("*" in toks or ">" in toks)):
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
