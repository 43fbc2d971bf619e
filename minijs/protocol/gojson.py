"""Go's ``encoding/json`` as nats-server uses it: syntax, values into Go types, and the Go
structs minijs declares once, as field tables.

(Writing the JSON text is :mod:`minijs.protocol.gomarshal`.)

Syntax (:func:`parse_json`, :func:`decode_values`, :func:`unmarshal_exact`)
    nats-server 2.15.1 is built with the json/v2-backed ``encoding/json``; its texts differ from
    classic Go JSON and were captured from the real binary:

    * a request body is read as a *stream* of JSON values (``json.Decoder`` loop,
      :func:`decode_values`): an empty or all-whitespace body decodes to nothing, several values
      are merged into the same struct, and the first error ends decoding;
    * each value is syntax-checked completely before it is decoded, so a syntax error anywhere
      in a value beats a type error earlier in it;
    * syntax errors: ``invalid character 'x' looking for beginning of value at offset N``
      (N = byte offset just past the offending character, counted from the start of the body),
      ``unexpected EOF`` (no offset), ``invalid escape sequence `\\q` in string at offset N``,
      ``exceeded max depth at offset N`` (more than 10000 nested containers);
    * invalid UTF-8 inside a string becomes U+FFFD, one per bad byte, and so does a lone
      surrogate escape.

Go types (:class:`T` and its kinds, :class:`Struct`)
    * semantic errors, first one in document order wins: ``json: unknown field "x"`` (strict
      decoding only), ``json: cannot unmarshal string into Go struct field
      StreamConfigRequest.max_msgs of type int64`` (path = JSON keys as written, array indexes as
      numbers; when the innermost step is an array element the text is ``… into
      StreamConfigRequest.subjects.0 of type string`` without "Go struct field"), ``… into Go
      value of type server.StreamConfigRequest`` for the top level; ``number 1.5`` / ``number
      1e3`` when a number does not fit an integer type;
    * field names match exactly or case-insensitively (Unicode simple folding: ``ſ`` and the
      Kelvin sign fold to ``s`` and ``k``; ``_``/``-`` significant); duplicate keys: last wins,
      nested objects and maps *merge*;
    * ``null`` leaves scalars and structs untouched, sets slices/maps/pointers to ``None``, but is
      passed to custom unmarshalers (the JetStream enums answer ``can not unmarshal "null"``).

Field tables (:func:`go_struct`, :func:`go_field` + :func:`struct_of`)
    A Go struct is declared once: per field its JSON name, Go type and ``omitempty`` tag, in
    Go's order (rows of :func:`go_struct`, or a dataclass whose fields are :func:`go_field`).
    The decoder type, the complete zero value (:meth:`T.go_zero`), the filling-out of nested
    structs (:meth:`T.complete`), the marshalling with ``omitempty`` (:meth:`Struct.encode`) and
    ``reflect.DeepEqual`` (:meth:`T.equal`) all derive from that table.

:func:`unmarshal` is ``json.Unmarshal`` into a struct where only success matters (a client's
CONNECT and INFO: :data:`CLIENT_OPTS`, :data:`SERVER_INFO`; nats-server closes the connection
without a word on any error): the same rules, through Python's C decoder for speed.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import binascii
import codecs as _codecs
import operator
import re
from typing import Any, Callable, Iterable

from minijs.protocol import cjson
from minijs.protocol.gostrings import decode_rune, go_quote, go_quote_rune, is_print, runes

# --------------------------------------------------------------------------------------------
# Syntax: a json/v2-compatible scanner producing a small node tree
# --------------------------------------------------------------------------------------------
#
# Nodes are tuples ``(kind, value, start, end)`` with ``start``/``end`` byte offsets into the
# payload: kind ``"o"`` (value = list of (key, node), duplicates kept in order), ``"a"`` (list of
# nodes), ``"s"`` (decoded str), ``"n"`` (number literal text), ``"t"``/``"f"``/``"z"``
# (true/false/null, value None).

MAX_DEPTH = 10000


class JSONError(Exception):
    """A decoding error; ``str()`` is the Go text that follows ``invalid JSON: `` in a strict
    (``json.Decoder``) request, i.e. with `` at offset N`` for syntax errors. ``message`` is
    the text without the offset (what ``json.Unmarshal`` callers show)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        if self.offset is None:
            return self.message
        return "%s at offset %d" % (self.message, self.offset)


def _go_replace(err: UnicodeError) -> tuple[str, int]:
    # Go replaces every invalid byte by U+FFFD (utf8.DecodeRune width 1).
    assert isinstance(err, UnicodeDecodeError)
    return "\ufffd", err.start + 1


_codecs.register_error("minijs-goreplace", _go_replace)


def _quote_rune_at(buf: bytes, i: int) -> tuple[str, int]:
    ch, w = decode_rune(buf, i)
    if ch is None:
        return "'\\x%x'" % buf[i], 1
    return go_quote_rune(ch), w


def _bad_char(buf: bytes, i: int, where: str) -> JSONError:
    what, w = _quote_rune_at(buf, i)
    return JSONError("invalid character %s %s" % (what, where), i + w)


class _UnexpectedEOF(JSONError):
    def __init__(self) -> None:
        super().__init__("unexpected EOF")


_WS = b" \t\r\n"
# The syntax layer's patterns, compiled on first use (:func:`_compile_patterns`): a server
# whose clients send only CONNECTs (read through Python's decoder) never needs them, and
# start-up does not pay for them.
_WS_RE: Any = None  # JSON white space
_STR_SPECIAL: Any = None  # what ends a run of plain string bytes
_DIGITS: Any = None


def _compile_patterns() -> None:
    global _WS_RE, _STR_SPECIAL, _DIGITS
    _STR_SPECIAL = re.compile(rb'["\\\x00-\x1f]')
    _DIGITS = re.compile(rb"[0-9]*")
    _WS_RE = re.compile(rb"[ \t\r\n]*")


_SIMPLE_UNESC = {
    ord('"'): '"',
    ord("\\"): "\\",
    ord("/"): "/",
    ord("b"): "\b",
    ord("f"): "\f",
    ord("n"): "\n",
    ord("r"): "\r",
    ord("t"): "\t",
}
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _is_space_rune(ch: str) -> bool:
    if ch in "\t\n\v\f\r \x85\xa0\u2028\u2029":
        return True
    if ch < "\x80":
        return False
    import unicodedata  # (a C extension: loaded by the first non-ASCII rune asked about)

    return unicodedata.category(ch) == "Zs"


def _escape_seq_text(what: bytes) -> str:
    need = False
    for ch, _b in runes(what):
        if ch is None or ch == "`" or ch == "\ufffd" or _is_space_rune(ch) or not is_print(ch):
            need = True
            break
    if need:
        return go_quote(what)
    return "`" + what.decode("utf-8") + "`"


def _parse_string(buf: bytes, pos: int) -> tuple[str, int]:
    """``buf[pos]`` is the opening quote; returns (decoded text, offset past closing quote)."""
    n = len(buf)
    pos += 1
    parts: list[str] = []
    while True:
        m = _STR_SPECIAL.search(buf, pos)
        if m is None:
            raise _UnexpectedEOF()
        j = m.start()
        if j > pos:
            parts.append(buf[pos:j].decode("utf-8", "minijs-goreplace"))
        c = buf[j]
        if c == 0x22:  # "
            return "".join(parts), j + 1
        if c != 0x5C:  # control character
            raise _bad_char(buf, j, "in string")
        if j + 1 >= n:
            raise _UnexpectedEOF()
        e = buf[j + 1]
        simple = _SIMPLE_UNESC.get(e)
        if simple is not None:
            parts.append(simple)
            pos = j + 2
            continue
        if e != 0x75:  # not \u
            raise JSONError("invalid escape sequence %s in string" % _escape_seq_text(buf[j : j + 2]), j + 2)
        if j + 6 > n:
            raise _UnexpectedEOF()
        hexs = buf[j + 2 : j + 6]
        if not all(h in _HEX for h in hexs):
            raise JSONError("invalid escape sequence %s in string" % _escape_seq_text(buf[j : j + 6]), j + 6)
        cp = int(hexs, 16)
        pos = j + 6
        if 0xD800 <= cp < 0xDC00:
            lo_hex = buf[j + 8 : j + 12]
            if (
                buf[j + 6 : j + 8] == b"\\u"
                and len(lo_hex) == 4
                and all(h in _HEX for h in lo_hex)
                and 0xDC00 <= int(lo_hex, 16) <= 0xDFFF
            ):
                lo = int(lo_hex, 16)
                parts.append(chr(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)))
                pos = j + 12
            else:
                parts.append("\ufffd")
        elif 0xDC00 <= cp <= 0xDFFF:
            parts.append("\ufffd")
        else:
            parts.append(chr(cp))


def _parse_number(buf: bytes, pos: int) -> int:
    """Returns the offset past a number literal starting at ``pos``."""
    n = len(buf)
    if buf[pos] == 0x2D:  # -
        pos += 1
        if pos >= n:
            raise _UnexpectedEOF()
        if not 0x30 <= buf[pos] <= 0x39:
            raise _bad_char(buf, pos, "in numeric literal")
    if buf[pos] == 0x30:
        pos += 1
    else:
        pos = _DIGITS.match(buf, pos).end()
    if pos < n and buf[pos] == 0x2E:  # .
        pos += 1
        if pos >= n:
            raise _UnexpectedEOF()
        if not 0x30 <= buf[pos] <= 0x39:
            raise _bad_char(buf, pos, "in numeric literal")
        pos = _DIGITS.match(buf, pos).end()
    if pos < n and buf[pos] in (0x65, 0x45):  # e E
        pos += 1
        if pos >= n:
            raise _UnexpectedEOF()
        if buf[pos] in (0x2B, 0x2D):
            pos += 1
            if pos >= n:
                raise _UnexpectedEOF()
        if not 0x30 <= buf[pos] <= 0x39:
            raise _bad_char(buf, pos, "in numeric literal")
        pos = _DIGITS.match(buf, pos).end()
    return pos


_LITERALS = {0x74: (b"true", "t"), 0x66: (b"false", "f"), 0x6E: (b"null", "z")}


def _parse_literal(buf: bytes, pos: int) -> tuple[tuple, int]:
    word, kind = _LITERALS[buf[pos]]
    n = len(buf)
    for k in range(1, len(word)):
        i = pos + k
        if i >= n:
            raise _UnexpectedEOF()
        if buf[i] != word[k]:
            raise _bad_char(buf, i, "in literal %s (expecting %s)" % (word.decode(), go_quote_rune(chr(word[k]))))
    return (kind, None, pos, pos + len(word)), pos + len(word)


def _parse_value(buf: bytes, pos: int) -> tuple[tuple | None, int]:
    """Parse one JSON value at ``pos`` (after optional whitespace). Returns ``(None, pos)`` when
    only whitespace remains (Go's io.EOF)."""
    if _WS_RE is None:
        _compile_patterns()
    n = len(buf)
    pos = _WS_RE.match(buf, pos).end()
    if pos >= n:
        return None, pos
    # frame: [kind, items, start, pending key]
    stack: list[list] = []
    while True:
        # ---- read a value at pos ----
        pos = _WS_RE.match(buf, pos).end()
        if pos >= n:
            raise _UnexpectedEOF()
        c = buf[pos]
        node: tuple | None = None
        if c == 0x7B or c == 0x5B:  # { [
            if len(stack) >= MAX_DEPTH:
                raise JSONError("exceeded max depth", pos + 1)
            start = pos
            pos = _WS_RE.match(buf, pos + 1).end()
            if pos >= n:
                raise _UnexpectedEOF()
            if c == 0x7B:
                if buf[pos] == 0x7D:
                    node = ("o", [], start, pos + 1)
                    pos += 1
                elif buf[pos] == 0x22:
                    key, pos = _parse_string(buf, pos)
                    pos = _WS_RE.match(buf, pos).end()
                    if pos >= n:
                        raise _UnexpectedEOF()
                    if buf[pos] != 0x3A:
                        raise _bad_char(buf, pos, "after object key")
                    pos += 1
                    stack.append(["o", [], start, key])
                    continue
                else:
                    raise _bad_char(buf, pos, "looking for beginning of object key string")
            else:
                if buf[pos] == 0x5D:
                    node = ("a", [], start, pos + 1)
                    pos += 1
                else:
                    stack.append(["a", [], start, None])
                    continue
        elif c == 0x22:
            start = pos
            s, pos = _parse_string(buf, pos)
            node = ("s", s, start, pos)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            start = pos
            pos = _parse_number(buf, pos)
            node = ("n", buf[start:pos].decode("ascii"), start, pos)
        elif c in _LITERALS:
            node, pos = _parse_literal(buf, pos)
        else:
            raise _bad_char(buf, pos, "looking for beginning of value")
        # ---- deliver node to the enclosing containers ----
        while True:
            if not stack:
                return node, pos
            top = stack[-1]
            pos = _WS_RE.match(buf, pos).end()
            if pos >= n:
                raise _UnexpectedEOF()
            c = buf[pos]
            if top[0] == "o":
                top[1].append((top[3], node))
                if c == 0x2C:  # ,
                    pos = _WS_RE.match(buf, pos + 1).end()
                    if pos >= n:
                        raise _UnexpectedEOF()
                    if buf[pos] != 0x22:
                        raise _bad_char(buf, pos, "looking for beginning of object key string")
                    key, pos = _parse_string(buf, pos)
                    pos = _WS_RE.match(buf, pos).end()
                    if pos >= n:
                        raise _UnexpectedEOF()
                    if buf[pos] != 0x3A:
                        raise _bad_char(buf, pos, "after object key")
                    pos += 1
                    top[3] = key
                    break  # read next value
                if c == 0x7D:  # }
                    stack.pop()
                    pos += 1
                    node = ("o", top[1], top[2], pos)
                    continue
                raise _bad_char(buf, pos, "after object key:value pair")
            else:
                top[1].append(node)
                if c == 0x2C:
                    pos += 1
                    break
                if c == 0x5D:  # ]
                    stack.pop()
                    pos += 1
                    node = ("a", top[1], top[2], pos)
                    continue
                raise _bad_char(buf, pos, "after array element")


def _node_to_py(node: tuple) -> Any:
    kind, val = node[0], node[1]
    if kind == "o":
        return {k: _node_to_py(v) for k, v in val}
    if kind == "a":
        return [_node_to_py(v) for v in val]
    if kind == "s":
        return val
    if kind == "n":
        return int(val) if re.fullmatch(r"-?\d+", val) else float(val)
    return {"t": True, "f": False, "z": None}[kind]


def parse_json(payload: bytes) -> Any:
    """Parse exactly one JSON value (Go ``json.Unmarshal`` rules) into plain Python values.

    Objects become dicts (duplicate keys: last wins), integral numbers ``int``, others
    ``float``. Raises :class:`JSONError` (use its ``message`` for Unmarshal-style text).
    """
    try:
        node = _parse_single(bytes(payload))
    except _UnexpectedEOF:
        raise JSONError("unexpected end of JSON input") from None
    return _node_to_py(node)




def is_empty_request(payload: bytes) -> bool:
    """nats-server's ``isEmptyRequest``: no bytes at all, or exactly one JSON value that is an
    object without members (``{}``, ``{ }``, `` {}\n``). A whitespace-only body is *not* empty
    (``json.Unmarshal`` fails on it), nor are ``null``, ``[]`` and ``{}{}``."""
    if not payload:
        return True
    body = payload.strip(_WS)
    return len(body) >= 2 and body[0] == 0x7B and body[-1] == 0x7D and not body[1:-1].strip(_WS)


def is_object_or_array(payload: bytes) -> bool:
    """nats-server's ``isJSONObjectOrArray``: the first byte after JSON whitespace (space, tab,
    CR, LF — not FF/VT) is ``{`` or ``[``. Optional request bodies are decoded only then;
    anything else (empty, whitespace, ``null``, ``"x"``, ``garbage``) is ignored."""
    if _WS_RE is None:
        _compile_patterns()
    m = _WS_RE.match(payload)
    return m.end() < len(payload) and payload[m.end()] in b"{["


def _parse_single(buf: bytes) -> tuple:
    node, pos = _parse_value(buf, 0)
    if node is None:
        raise JSONError("unexpected end of JSON input")
    pos = _WS_RE.match(buf, pos).end()
    if pos < len(buf):
        raise _bad_char(buf, pos, "after top-level value")
    return node


# --------------------------------------------------------------------------------------------
# Typed decoding (Go struct semantics)
# --------------------------------------------------------------------------------------------


class _Unchanged:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()
_KIND_NAMES = {"o": "object", "a": "array", "s": "string", "n": "number", "t": "bool", "f": "bool", "z": "null"}


class _Ctx:
    __slots__ = ("buf", "root", "strict")

    def __init__(self, buf: bytes, root: str, strict: bool) -> None:
        self.buf = buf
        self.root = root
        self.strict = strict


def _type_error(value_desc: str, t: "T", path: list, ctx: _Ctx) -> JSONError:
    if not path:
        return JSONError("json: cannot unmarshal %s into Go value of type %s" % (value_desc, t.go_name))
    p = ctx.root + "." + ".".join(str(x) for x in path)
    if isinstance(path[-1], int):
        return JSONError("json: cannot unmarshal %s into %s of type %s" % (value_desc, p, t.go_name))
    return JSONError("json: cannot unmarshal %s into Go struct field %s of type %s" % (value_desc, p, t.go_name))


class go_map(dict):  # noqa: N801 - reads like a conversion function
    """A Go map value: a ``dict`` whose keys :func:`~minijs.protocol.gomarshal.dumps` writes
    sorted (byte order), as Go marshals a map."""


class T:
    """Base of the Go type descriptors. A type knows how a JSON value decodes into it
    (:meth:`decode`, on the node tree of the syntax layer; :meth:`zero` is where decoding starts),
    and, for the structs minijs keeps as field tables, its complete Go zero value
    (:meth:`go_zero`), how a value of it is filled out (:meth:`complete`), marshalled
    (:meth:`encode`, :meth:`is_empty` for ``omitempty``) and compared like ``reflect.DeepEqual``
    (:meth:`equal`). Scalars are their Python values."""

    go_name = "?"
    #: Python's ``==`` on values of this type is ``reflect.DeepEqual`` (false for times).
    plain_equal = True

    def zero(self) -> Any:
        return None

    def go_zero(self) -> Any:
        """The Go zero value as minijs holds it (a struct: a dict with every field)."""
        return self.zero()

    def complete(self, value: Any) -> Any:
        """``value`` with every nested struct filled out to all its fields (absent ones at
        their zero value, unknown keys dropped); lists and maps are copied. A value may also be
        given in its marshalled form (a time as RFC 3339 text): ``complete(encode(v))`` is
        ``complete(v)``."""
        return value

    def encode(self, value: Any) -> Any:
        """The value as :func:`~minijs.protocol.gomarshal.dumps` must see it to write what Go's
        ``json.Marshal`` writes (times as RFC 3339 text, maps sorted, omitempty applied)."""
        return value

    def is_empty(self, value: Any) -> bool:
        """Go's ``omitempty`` test: false, 0, an empty string, a nil or empty slice or map."""
        return not value

    def equal(self, a: Any, b: Any) -> bool:
        """``reflect.DeepEqual`` of two values of this type."""
        return a == b

    def decode(self, node: tuple, cur: Any, path: list, ctx: _Ctx) -> Any:  # pragma: no cover
        raise NotImplementedError


class Str(T):
    go_name = "string"

    def zero(self) -> Any:
        return ""

    def decode(self, node, cur, path, ctx):
        if node[0] == "s":
            return node[1]
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)


class Bool(T):
    go_name = "bool"

    def zero(self) -> Any:
        return False

    def decode(self, node, cur, path, ctx):
        if node[0] == "t":
            return True
        if node[0] == "f":
            return False
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)




class Int(T):
    """An integer kind: ``Int(64)`` = int64, ``Int(64, signed=False)`` = uint64, ``Int(64,
    go_name="time.Duration")`` = a duration in ns, ``Int(64, go_name="int")`` = Go ``int``."""

    def __init__(self, bits: int = 64, signed: bool = True, go_name: str | None = None) -> None:
        self.bits = bits
        self.signed = signed
        if signed:
            self.lo, self.hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            self.lo, self.hi = 0, (1 << bits) - 1
        self.go_name = go_name or ("int%d" % bits if signed else "uint%d" % bits)

    def zero(self) -> Any:
        return 0

    def decode(self, node, cur, path, ctx):
        if node[0] == "n":
            raw = node[1]
            # strconv.ParseUint takes no sign at all: "-0" is an error for unsigned kinds.
            digits = raw[1:] if raw[0] == "-" else raw
            if digits.isdigit() and digits.isascii() and (self.signed or raw[0] != "-"):
                v = int(raw)
                if self.lo <= v <= self.hi:
                    return v
            raise _type_error("number " + raw, self, path, ctx)
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)


class Float(T):
    go_name = "float64"

    def zero(self) -> Any:
        return 0.0

    def decode(self, node, cur, path, ctx):
        if node[0] == "n":
            v = float(node[1])
            if v in (float("inf"), float("-inf")):
                raise _type_error("number " + node[1], self, path, ctx)
            return v
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)


_gotime: Any = None  # minijs.protocol.gotime, once a time is decoded or encoded


def _load_gotime() -> Any:
    global _gotime
    from minijs.protocol import gotime

    _gotime = gotime
    return gotime


class Time(T):
    """Go ``time.Time``: RFC 3339 string → ns since the epoch, a
    :class:`~minijs.protocol.gotime.GoTime` that remembers the zone; ``0`` is Go's zero time.
    (:mod:`~minijs.protocol.gotime` is imported on first use: a client's CONNECT, decoded at
    start-up, has no times.)"""

    go_name = "time.Time"
    plain_equal = False

    def zero(self) -> Any:
        return 0  # gotime.ZERO_TIME

    def complete(self, value: Any) -> Any:
        # A time in its marshalled form (what encode wrote) is read back: a struct completed
        # from its own JSON form keeps its times, zone included.
        if isinstance(value, str):
            return (_gotime or _load_gotime()).parse_go_time_ex(value)
        return value

    def encode(self, value: Any) -> Any:
        return (_gotime or _load_gotime()).go_time(value)

    def is_empty(self, value: Any) -> bool:
        return False  # a struct in Go: omitempty never omits it

    def equal(self, a: Any, b: Any) -> bool:
        # A parsed time keeps its zone, and DeepEqual sees it: the same instant written with
        # another offset is another value.
        return int(a) == int(b) and getattr(a, "offset", 0) == getattr(b, "offset", 0)

    def decode(self, node, cur, path, ctx):
        if node[0] == "s":
            gotime = _gotime or _load_gotime()
            try:
                return gotime.parse_go_time_ex(node[1])
            except gotime.GoTimeError as e:
                raise JSONError(str(e)) from None
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)


class Slice(T):
    """``[]<elem>``: a list, ``None`` for Go's nil slice (which is not an empty one)."""

    def __init__(self, elem: T) -> None:
        self.elem = elem
        self.go_name = "[]" + elem.go_name
        self.plain_equal = elem.plain_equal

    def complete(self, value: Any) -> Any:
        return None if value is None else [self.elem.complete(v) for v in value]

    def encode(self, value: Any) -> Any:
        if value is None:
            return None
        if type(self.elem) in _AS_IS:
            return list(value)
        return [self.elem.encode(v) for v in value]

    def equal(self, a: Any, b: Any) -> bool:
        if a is None or b is None:
            return a is b
        eq = self.elem.equal
        return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))

    def decode(self, node, cur, path, ctx):
        if node[0] == "z":
            return None
        if node[0] != "a":
            raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)
        out = []
        for i, sub in enumerate(node[1]):
            v = self.elem.decode(sub, UNCHANGED, path + [i], ctx)
            out.append(self.elem.zero() if v is UNCHANGED else v)
        return out


class Map(T):
    """``map[string]<elem>`` (decoded into a dict, merged into an existing one)."""

    def __init__(self, elem: T) -> None:
        self.elem = elem
        self.go_name = "map[string]" + elem.go_name
        self.plain_equal = elem.plain_equal

    def complete(self, value: Any) -> Any:
        return None if value is None else {k: self.elem.complete(v) for k, v in value.items()}

    def encode(self, value: Any) -> Any:
        if value is None:
            return None
        if type(self.elem) in _AS_IS:
            return go_map(value)
        return go_map({k: self.elem.encode(v) for k, v in value.items()})

    def equal(self, a: Any, b: Any) -> bool:
        if a is None or b is None:
            return a is b
        eq = self.elem.equal
        return a.keys() == b.keys() and all(eq(v, b[k]) for k, v in a.items())

    def decode(self, node, cur, path, ctx):
        if node[0] == "z":
            return None
        if node[0] != "o":
            raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)
        out = dict(cur) if isinstance(cur, dict) else {}
        for key, sub in node[1]:
            v = self.elem.decode(sub, UNCHANGED, path + [key], ctx)
            out[key] = self.elem.zero() if v is UNCHANGED else v
        return out


def _fold_eq(key: str, name: str) -> bool:
    """Go's case-insensitive field match (simple folding; ``name`` is ASCII lower case)."""
    if len(key) != len(name):
        return False
    for a, b in zip(key, name):
        if a == b or a.lower() == b:
            continue
        if a == "\u017f" and b == "s":  # LATIN SMALL LETTER LONG S folds to s
            continue
        return False
    return True


class Struct(T):
    """A Go struct: ``fields`` maps JSON names to types, in Go's field order; ``omitempty``
    names the fields whose tag has ``omitempty``. Decodes to a dict holding only the fields
    present in the input (absent = Go zero value); :meth:`complete` fills in the rest,
    :meth:`encode` marshals a dict (or a dataclass's ``__dict__``) in field order."""

    def __init__(self, name: str, fields: dict[str, Any], pkg: str = "server",
                 omitempty: Iterable[str] = ()) -> None:
        self.name = name
        self.fields = {k: _as_type(v) for k, v in fields.items()}
        self.go_name = "%s.%s" % (pkg, name) if pkg else name
        self._lower = {k.lower(): k for k in self.fields}
        self.omitempty = frozenset(omitempty)
        if not self.omitempty <= self.fields.keys():
            raise ValueError("omitempty names no field of %s: %s"
                             % (name, sorted(self.omitempty - self.fields.keys())))
        self._encoder: Callable[[Any], dict[str, Any]] | None = None  # built on first use
        # DeepEqual: the fields where Python's == says the same, compared in one go; the
        # others (times, which carry a zone, and what holds them) one by one.
        plain = [n for n, t in self.fields.items() if t.plain_equal]
        self._plain_names = plain
        self._plain_values = operator.itemgetter(*plain) if len(plain) > 1 else None
        self._deep = [(n, t) for n, t in self.fields.items() if not t.plain_equal]
        self.plain_equal = not self._deep

    def zero(self) -> Any:
        return {}

    def go_zero(self) -> Any:
        return {n: t.go_zero() for n, t in self.fields.items()}

    def complete(self, value: Any) -> Any:
        value = value or {}
        return {n: t.complete(value[n]) if n in value else t.go_zero()
                for n, t in self.fields.items()}

    def encode(self, value: Any, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """``json.Marshal`` of the struct held in ``value`` (a dict by JSON name; absent fields
        marshal as ``null``), with ``overrides`` replacing field values first."""
        if overrides:
            value = {**value, **overrides}
        encoder = self._encoder or self._build_encoder()
        try:
            return encoder(value)
        except KeyError:  # a dict without every field: the absent ones are nil
            return encoder({n: value.get(n) for n in self.fields})

    def _build_encoder(self) -> Callable[[Any], dict[str, Any]]:
        """The marshaller of this struct as one straight-line function compiled from the field
        table (a loop over the table costs twice as much per reply): per field, in order, its
        omitempty test (Python truth where that is Go's, else the type's) and its encoding
        (skipped for values that marshal as themselves)."""
        lines = ["def encode(value):", "    out = {}"]
        names: dict[str, Any] = {}
        for i, (name, t) in enumerate(self.fields.items()):
            key, var = repr(name), "t%d" % i
            inner = t.elem if isinstance(t, Ptr) else t  # nil is checked here
            names[var] = t
            names["e%d" % i] = inner
            kind = type(t)
            expr = "v" if kind in _AS_IS else "v if v is None else e%d.encode(v)" % i
            if name not in self.omitempty or kind in (Time, Struct):  # a struct is never empty
                test = ""
            elif kind in _FALSY_EMPTY:
                test = "v"
            elif kind is Ptr:
                test = "v is not None"
            elif kind is Custom:
                test = "v and v != %r" % (t.zero(),)
            else:
                test = "not %s.is_empty(v)" % var
            lines.append("    v = value[%s]" % key)
            if test:
                lines.append("    if %s:\n        out[%s] = %s" % (test, key, expr))
            else:
                lines.append("    out[%s] = %s" % (key, expr))
        lines.append("    return out")
        exec("\n".join(lines), names)  # noqa: S102 - code generated from the field table
        self._encoder = names["encode"]
        return self._encoder

    def is_empty(self, value: Any) -> bool:
        return False  # omitempty never omits a struct value

    def equal(self, a: Any, b: Any) -> bool:
        a, b = a or {}, b or {}
        values = self._plain_values
        try:
            if values is not None and values(a) != values(b):
                return False
        except KeyError:  # a dict without every field: absent is nil
            if any(a.get(n) != b.get(n) for n in self._plain_names):
                return False
        else:
            if values is None and any(a.get(n) != b.get(n) for n in self._plain_names):
                return False
        return all(t.equal(a.get(n), b.get(n)) for n, t in self._deep)

    def lookup(self, key: str) -> str | None:
        if key in self.fields:
            return key
        cand = self._lower.get(key.lower())
        if cand is not None and _fold_eq(key, cand):
            return cand
        for name in self.fields:
            if _fold_eq(key, name):
                return name
        return None

    def decode(self, node, cur, path, ctx):
        if node[0] == "z":
            return UNCHANGED
        if node[0] != "o":
            raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)
        out = dict(cur) if isinstance(cur, dict) else {}
        for key, sub in node[1]:
            name = self.lookup(key)
            if name is None:
                if ctx.strict:
                    raise JSONError("json: unknown field " + go_quote(key))
                continue
            v = self.fields[name].decode(sub, out.get(name, UNCHANGED), path + [key], ctx)
            if v is not UNCHANGED:
                out[name] = v
        return out


class Ptr(T):
    """``*T``: ``null`` → ``None``; otherwise decoded like ``T`` (structs merge)."""

    def __init__(self, elem: T) -> None:
        self.elem = _as_type(elem)
        self.go_name = self.elem.go_name
        self.plain_equal = self.elem.plain_equal

    def complete(self, value: Any) -> Any:
        return None if value is None else self.elem.complete(value)

    def encode(self, value: Any) -> Any:
        return None if value is None else self.elem.encode(value)

    def is_empty(self, value: Any) -> bool:
        return value is None

    def equal(self, a: Any, b: Any) -> bool:
        if a is None or b is None:
            return a is b
        return self.elem.equal(a, b)

    def decode(self, node, cur, path, ctx):
        if node[0] == "z":
            return None
        base = cur if cur is not None and cur is not UNCHANGED else self.elem.zero()
        v = self.elem.decode(node, base, path, ctx)
        return base if v is UNCHANGED else v


class Custom(T):
    """A type with its own ``UnmarshalJSON``: ``func(raw: bytes, node) -> value`` receives the
    raw bytes of the value (also for ``null``) and raises :class:`JSONError` with the exact
    text to report (not prefixed with ``json:``)."""

    def __init__(self, go_name: str, func: Callable[[bytes, tuple], Any], zero: Any = None) -> None:
        self.go_name = go_name
        self.func = func
        self._zero = zero

    def zero(self) -> Any:
        return self._zero

    def is_empty(self, value: Any) -> bool:
        return not value or value == self._zero  # the enums are ints in Go: zero is empty

    def decode(self, node, cur, path, ctx):
        return self.func(ctx.buf[node[2] : node[3]], node)


class Bytes(T):
    """Go ``[]byte``: standard base64 text (CR and LF ignored, as Go's decoder does), or an
    array of bytes; ``null`` → ``None``."""

    go_name = "[]uint8"

    def decode(self, node, cur, path, ctx):
        kind = node[0]
        if kind == "z":
            return None
        if kind == "s":
            raw = node[1].replace("\r", "").replace("\n", "")
            try:
                return binascii.a2b_base64(raw.encode("ascii"), strict_mode=True)
            except (binascii.Error, ValueError):
                raise JSONError("illegal base64 data") from None
        if kind == "a":
            out = bytearray()
            for i, sub in enumerate(node[1]):
                v = UINT8.decode(sub, UNCHANGED, path + [i], ctx)
                out.append(0 if v is UNCHANGED else v)
            return bytes(out)
        raise _type_error(_KIND_NAMES[kind], self, path, ctx)


class Raw(T):
    """Go's ``json.RawMessage``: a value marshalled elsewhere, passed through as it is."""

    go_name = "json.RawMessage"

    def decode(self, node, cur, path, ctx):
        return _node_to_py(node)


STRING = Str()
BOOL = Bool()
INT = Int(64, go_name="int")
INT64 = Int(64)
INT32 = Int(32)
UINT64 = Int(64, signed=False)
UINT32 = Int(32, signed=False)
UINT16 = Int(16, signed=False)
UINT8 = Int(8, signed=False)
FLOAT64 = Float()
DURATION = Int(64, go_name="time.Duration")
TIME = Time()
RAW = Raw()


#: Types whose values marshal as themselves (the encoder skips the call).
_AS_IS = frozenset((Str, Bool, Int, Float, Custom, Bytes, Raw))
#: Types whose omitempty test is Python's truth (false, 0, "", None, empty list or dict).
_FALSY_EMPTY = frozenset((Str, Bool, Int, Float, Slice, Map, Bytes))

#: The third element of a :func:`go_struct` row: the field's tag has ``omitempty``.
OMITEMPTY = "omitempty"


def go_struct(name: str, *rows: tuple[Any, ...], pkg: str = "server") -> Struct:
    """A Go struct as a field table, one row per field in Go's order: ``(json name, type)`` or
    ``(json name, type, OMITEMPTY)``. The zero value of each field is its type's."""
    for row in rows:
        if len(row) not in (2, 3) or (len(row) == 3 and row[2] != OMITEMPTY):
            raise ValueError("bad field row %r of %s" % (row, name))
    return Struct(name, {row[0]: row[1] for row in rows}, pkg,
                  omitempty=[row[0] for row in rows if len(row) == 3])


def go_field(t: T, tag: str | None = None) -> Any:
    """A dataclass field declared by its Go type (``tag`` :data:`OMITEMPTY` for an
    ``omitempty`` field): its default is the type's Go zero value, and :func:`struct_of` reads
    the type and the tag back. The dataclass's field order is the Go struct's."""
    if tag not in (None, OMITEMPTY):
        raise ValueError("bad field tag %r" % (tag,))
    import dataclasses  # (only the JetStream configuration types are dataclasses)

    zero = t.go_zero()
    meta = {"go": t, "omitempty": tag == OMITEMPTY}
    if isinstance(zero, (dict, list)):
        return dataclasses.field(default_factory=lambda: t.go_zero(), metadata=meta)
    return dataclasses.field(default=zero, metadata=meta)


def struct_of(cls: type, name: str, pkg: str = "server") -> Struct:
    """The :class:`Struct` a dataclass declared with :func:`go_field` describes (decoding,
    zero values, :meth:`Struct.encode` of ``obj.__dict__``, :meth:`Struct.equal`)."""
    import dataclasses

    fields = dataclasses.fields(cls)
    return Struct(name, {f.name: f.metadata["go"] for f in fields}, pkg,
                  omitempty=[f.name for f in fields if f.metadata["omitempty"]])


def _as_type(spec: Any) -> T:
    if isinstance(spec, T):
        return spec
    if spec is str:
        return STRING
    if spec is bool:
        return BOOL
    if spec is int:
        return INT64
    if spec is float:
        return FLOAT64
    raise TypeError("not a type spec: %r" % (spec,))


def decode_values(payload: bytes, t: T, *, strict: bool = True, root: str | None = None) -> Any:
    """Go ``json.Decoder`` loop (what nats-server's ``unmarshalRequest`` does): decode every JSON
    value in ``payload`` into the same ``t`` value, stopping at the first error.

    Returns the decoded value (for a :class:`Struct`, a dict of the fields present; ``{}`` for
    an empty/whitespace body). Raises :class:`JSONError`.
    """
    buf = bytes(payload)
    type_name: str = getattr(t, "name", t.go_name)  # a Struct's name, else its Go type's
    ctx = _Ctx(buf, root or type_name, strict)
    cur: Any = t.zero()
    pos = 0
    while True:
        node, pos = _parse_value(buf, pos)
        if node is None:
            return cur
        v = t.decode(node, cur, [], ctx)
        if v is not UNCHANGED:
            cur = v


def unmarshal_exact(payload: bytes, t: T) -> Any:
    """Go ``json.Unmarshal(payload, &v)`` for a fresh ``v`` of type ``t``, with Go's error texts:
    exactly one value (``invalid character 'x' after top-level value``), unknown fields ignored,
    an empty or truncated body is ``unexpected end of JSON input``. Returns the value (``{}``
    for a struct when the body is ``null``); raises :class:`JSONError` whose ``message`` is the
    text ``json.Unmarshal`` returns (syntax errors carry no offset there)."""
    buf = bytes(payload)
    try:
        node = _parse_single(buf)
    except _UnexpectedEOF:
        raise JSONError("unexpected end of JSON input") from None
    start = t.zero()
    v = t.decode(node, start, [], _Ctx(buf, t.name if isinstance(t, Struct) else t.go_name, False))
    return start if v is UNCHANGED else v


# --------------------------------------------------------------------------------------------
# json.Unmarshal where only success matters: a client's CONNECT and INFO
# --------------------------------------------------------------------------------------------


class _Obj(list):
    """An object from Python's decoder: its (key, value) pairs in order."""


class _Num(str):
    """A number from Python's decoder: its literal text."""


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


_decode_fast = cjson.decoder(object_pairs_hook=_Obj, parse_int=_Num, parse_float=_Num,
                             parse_constant=_reject_constant)
_TRUE, _FALSE, _NULL = ("t", None, 0, 0), ("f", None, 0, 0), ("z", None, 0, 0)


def _fix_string(value: str) -> str:
    """Go turns a lone surrogate escape into U+FFFD (Python's decoder keeps it)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _node_of(value: Any) -> tuple:
    """The syntax layer's node for a value from Python's decoder (no byte offsets)."""
    kind = type(value)
    if kind is str:
        return ("s", _fix_string(value), 0, 0)
    if kind is _Num:
        return ("n", str(value), 0, 0)
    if kind is _Obj:
        return ("o", [(_fix_string(k), _node_of(v)) for k, v in value], 0, 0)
    if kind is list:
        return ("a", [_node_of(v) for v in value], 0, 0)
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return _NULL


def _parse_fast(data: bytes) -> tuple:
    """One JSON value, checked by Go's syntax rules, as a node tree without byte offsets (so
    not for :class:`Custom` types). Python's C decoder does the work; nesting too deep for it
    goes through the syntax layer's own parser, which has no recursion and Go's depth limit.
    Raises ValueError (or :class:`JSONError`) where Go would refuse the text."""
    text = data.decode("utf-8", "minijs-goreplace")
    try:
        return _node_of(_decode_fast(text))
    except RecursionError:
        return _parse_single(bytes(data))


def unmarshal(data: bytes, struct: "Struct", current: dict[str, Any]) -> dict[str, Any] | None:
    """``json.Unmarshal(data, &v)`` for ``v`` of type ``struct`` holding ``current``: the new
    field values (a new dict), or None when Go returns an error (the text is not needed, so
    Python's C decoder reads the syntax). ``struct`` must not contain :class:`Custom` types."""
    try:
        node = _parse_fast(data)
        value = struct.decode(node, current, [], _Ctx(b"", struct.name, False))
    except ValueError:
        return None
    except JSONError:
        return None
    return dict(current) if value is UNCHANGED else value


SUBJECT_PERMISSION = Ptr(Struct("SubjectPermission", {"allow": Slice(STRING), "deny": Slice(STRING)}))

#: nats-server's ClientOpts (what CONNECT decodes into).
CLIENT_OPTS = Struct("ClientOpts", {
    "echo": BOOL, "verbose": BOOL, "pedantic": BOOL, "tls_required": BOOL,
    "nkey": STRING, "jwt": STRING, "sig": STRING, "auth_token": STRING, "user": STRING,
    "pass": STRING, "name": STRING, "lang": STRING, "version": STRING, "protocol": INT,
    "account": STRING, "new_account": BOOL, "headers": BOOL, "no_responders": BOOL,
    "import": SUBJECT_PERMISSION, "export": SUBJECT_PERMISSION, "remote_account": STRING,
    "proxy_sig": STRING,
})

#: nats-server's Info (what a client's INFO decodes into; the values are then ignored).
SERVER_INFO = Struct("Info", {
    "server_id": STRING, "server_name": STRING, "version": STRING, "proto": INT,
    "git_commit": STRING, "go": STRING, "host": STRING, "port": INT, "headers": BOOL,
    "auth_required": BOOL, "tls_required": BOOL, "tls_verify": BOOL, "tls_available": BOOL,
    "max_payload": INT32, "jetstream": BOOL, "ip": STRING, "client_id": UINT64,
    "client_ip": STRING, "nonce": STRING, "cluster": STRING, "cluster_dynamic": BOOL,
    "domain": STRING, "connect_urls": Slice(STRING), "ws_connect_urls": Slice(STRING),
    "ldm": BOOL, "compression": STRING, "connect_info": BOOL, "remote_account": STRING,
    "acc_is_sys": BOOL, "api_lvl": INT, "import": SUBJECT_PERMISSION,
    "export": SUBJECT_PERMISSION, "lnoc": BOOL, "lnocu": BOOL, "info_on_connect": BOOL,
    "route_pool_size": INT, "route_pool_idx": INT, "route_account": STRING,
    "route_acc_add_reqid": STRING, "gossip_mode": UINT8, "gateway": STRING,
    "gateway_urls": Slice(STRING), "gateway_url": STRING, "gateway_cmd": UINT8,
    "gateway_cmd_payload": Bytes(), "gateway_nrp": BOOL, "gateway_iom": BOOL,
    "leafnode_urls": Slice(STRING), "xkey": STRING,
})
