"""Go ``encoding/json`` conventions as nats-server v2.15.1 shows them to clients.

Encoding (:func:`dumps`)
    Compact JSON, ``<`` ``>`` ``&`` U+2028 U+2029 escaped as ``\\u003c`` … like Go, control
    characters as ``\\n``/``\\r``/``\\t``/``\\b``/``\\f`` or ``\\u00XX``, other non-ASCII raw UTF-8.
    ``dict`` keys are emitted in insertion order (Go *struct* order); Go *maps* are emitted with
    sorted keys, so wrap map-typed values with :func:`go_map` (or sort them yourself). ``bytes``
    become standard base64 (Go ``[]byte``), ``None`` is ``null``.

Times (:func:`go_time`, :func:`parse_go_time`, :func:`parse_go_time_ex`)
    Timestamps are integer nanoseconds since the Unix epoch; ``0`` stands for Go's zero
    ``time.Time`` (``"0001-01-01T00:00:00Z"``). Rendering is RFC 3339 with up to nine
    fractional digits, trailing zeros trimmed, ``Z`` for UTC. Server-made times are UTC; a time
    a client sent is parsed with Go's (lenient) ``time.Parse`` and echoed back *with the
    client's offset* (``"…+01:00"``), so decoded times are :class:`GoTime` ints that remember it.

Strict decoding (:func:`decode_strict`)
    nats-server 2.15.1 is built with the json/v2-backed ``encoding/json``; its texts differ from
    classic Go JSON and were captured from the real binary:

    * the body is read as a *stream* of JSON values (``json.Decoder`` loop): an empty or
      all-whitespace body decodes to nothing, several values are merged into the same struct,
      and the first error ends decoding;
    * each value is syntax-checked completely before it is decoded, so a syntax error anywhere
      in a value beats a type error earlier in it;
    * syntax errors: ``invalid character 'x' looking for beginning of value at offset N``
      (N = byte offset just past the offending character, counted from the start of the body),
      ``unexpected EOF`` (no offset), ``invalid escape sequence `\\q` in string at offset N``,
      ``exceeded max depth at offset N`` (more than 10000 nested containers);
    * semantic errors, first one in document order wins: ``json: unknown field "x"``,
      ``json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type
      int64`` (path = JSON keys as written, array indexes as numbers; when the innermost step is
      an array element the text is ``… into StreamConfigRequest.subjects.0 of type string``
      without "Go struct field"), ``… into Go value of type server.StreamConfigRequest`` for the
      top level; ``number 1.5`` / ``number 1e3`` when a number does not fit an integer type;
    * field names match case-insensitively (Unicode simple folding, ``_``/``-`` significant);
      duplicate keys: last wins, nested objects and maps *merge*;
    * ``null`` leaves scalars and structs untouched, sets slices/maps/pointers to ``None``, but is
      passed to custom unmarshalers (the enums answer ``can not unmarshal "null"``).

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import base64
import codecs as _codecs
import re
import unicodedata
from contextvars import ContextVar
from typing import Any, Callable

from minijs.jetstream import errors as _errors
from minijs.protocol.gostrings import decode_rune, go_quote, go_quote_rune, is_print, runes

__all__ = [
    "GoTime",
    "GoTimeError",
    "parse_go_time_ex",
    "JSONError",
    "ZERO_TIME",
    "go_time",
    "parse_go_time",
    "go_duration",
    "go_quote",
    "go_quote_rune",
    "go_map",
    "dumps",
    "encode_string",
    "T",
    "Str",
    "Bool",
    "Int",
    "Float",
    "Time",
    "Slice",
    "Map",
    "Struct",
    "Ptr",
    "Custom",
    "STRING",
    "BOOL",
    "INT",
    "INT64",
    "INT32",
    "UINT64",
    "UINT32",
    "UINT16",
    "UINT8",
    "FLOAT64",
    "DURATION",
    "TIME",
    "decode_strict",
    "decode_lenient",
    "decode_values",
    "parse_json",
    "is_empty_request",
    "is_object_or_array",
]

ZERO_TIME = 0
"""Nanosecond value that stands for Go's zero ``time.Time``."""

_NS = 1_000_000_000
_SECS_PER_DAY = 86400


# --------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of the proleptic Gregorian date (works for year 0 and earlier)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_in(m: int, y: int) -> int:
    if m == 2:
        return 29 if _is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


class GoTime(int):
    """Nanoseconds since the Unix epoch (UTC) that remember the UTC ``offset`` (seconds) they were
    written with: Go keeps a parsed time's zone and re-emits it (``"…+01:00"``), so a
    client-supplied time is echoed with its offset. Compares and hashes as the plain int."""

    offset: int

    def __new__(cls, ns: int, offset: int = 0) -> "GoTime":
        obj = super().__new__(cls, ns)
        obj.offset = int(offset)
        return obj

    def __repr__(self) -> str:
        return "GoTime(%d, offset=%d)" % (int(self), self.offset)

    def __reduce__(self):  # keep the offset through copy/pickle
        return (GoTime, (int(self), self.offset))


def go_time(ns: int, offset: int | None = None) -> str:
    """Go's ``time.Time`` JSON form of ``ns`` (nanoseconds since the Unix epoch).

    RFC 3339 with up to 9 fractional digits, trailing zeros trimmed (no ``.`` when the
    fraction is zero). The zone is ``Z`` unless ``offset`` (seconds east of UTC; default: the
    ``offset`` of a :class:`GoTime`, else 0) is non-zero, then ``±hh:mm``. ``0``
    (:data:`ZERO_TIME`) renders Go's zero time ``"0001-01-01T00:00:00Z"``.
    """
    if offset is None:
        offset = getattr(ns, "offset", 0)
    if ns == ZERO_TIME and not offset:
        return "0001-01-01T00:00:00Z"
    secs, frac = divmod(int(ns), _NS)
    secs += offset
    days, sod = divmod(secs, _SECS_PER_DAY)
    y, m, d = _civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    ystr = "%04d" % y if y >= 0 else "-%04d" % -y
    out = "%s-%02d-%02dT%02d:%02d:%02d" % (ystr, m, d, hh, mm, ss)
    if frac:
        out += "." + ("%09d" % frac).rstrip("0")
    if not offset:
        return out + "Z"
    sign = "+" if offset > 0 else "-"
    oh, om = divmod(abs(offset) // 60, 60)
    return out + "%s%02d:%02d" % (sign, oh, om)


class GoTimeError(ValueError):
    """A time string Go's ``time.Parse(time.RFC3339, …)`` rejects; ``str()`` is Go's text."""


_RFC3339 = "2006-01-02T15:04:05Z07:00"


def _time_quote(s: str) -> str:
    """``time.quote``: like strconv.Quote for ASCII; non-ASCII and controls as ``\\x`` bytes."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if o >= 0x80 or o < 0x20:
            out.extend("\\x%02x" % b for b in ch.encode("utf-8", "surrogatepass"))
        else:
            if ch in '"\\':
                out.append("\\")
            out.append(ch)
    out.append('"')
    return "".join(out)


def _parse_error(value: str, layout_elem: str, value_elem: str, message: str = "") -> GoTimeError:
    if message:
        return GoTimeError("parsing time " + _time_quote(value) + message)
    return GoTimeError(
        "parsing time %s as %s: cannot parse %s as %s"
        % (_time_quote(value), _time_quote(_RFC3339), _time_quote(value_elem), _time_quote(layout_elem))
    )


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not s or not "0" <= s[0] <= "9":
        return None
    if len(s) < 2 or not "0" <= s[1] <= "9":
        if fixed:
            return None
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def parse_go_time_ex(s: str) -> GoTime:
    """Parse like Go's ``time.Parse(time.RFC3339, s)`` (what nats-server 2.15.1 does for a JSON
    time) and return a :class:`GoTime` that remembers the offset.

    Go's parser is more lenient than RFC 3339: a one-digit hour (``T1:00:00Z``), ``,`` as the
    fraction separator and any number of fraction digits (truncated to ns) are accepted;
    offsets up to ``±24:60``. Go's zero time returns :data:`ZERO_TIME`. Raises
    :class:`GoTimeError` with Go's text, e.g. ``parsing time "x" as
    "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`` or ``parsing time "…": month out of
    range`` (all verified on the real server).
    """
    value = s
    # stdLongYear
    if len(value) < 4 or not all("0" <= c <= "9" for c in value[:4]):
        raise _parse_error(s, "2006", value)
    year, value = int(value[:4]), value[4:]
    nums: list[int] = []
    for lit, elem, fixed, lo, hi, name in (
        ("-", "01", True, 1, 12, "month"),
        ("-", "02", True, 0, 99, "day"),  # validated after parsing
        ("T", "15", False, 0, 23, "hour"),
        (":", "04", True, 0, 59, "minute"),
        (":", "05", True, 0, 59, "second"),
    ):
        if not value.startswith(lit):
            raise _parse_error(s, lit, value)
        value = value[1:]
        hold = value
        got = _getnum(value, fixed)
        if got is None:
            raise _parse_error(s, elem, hold)
        num, value = got
        if not lo <= num <= hi:
            raise _parse_error(s, elem, value, ": %s out of range" % name)
        nums.append(num)
    month, day, hour, minute, sec = nums
    nsec = 0
    if len(value) >= 2 and value[0] in ".," and "0" <= value[1] <= "9":
        n = 2
        while n < len(value) and "0" <= value[n] <= "9":
            n += 1
        nsec = int((value[1:n] + "000000000")[:9])
        value = value[n:]
    # stdISO8601ColonTZ
    hold = value
    offset = 0
    if value.startswith("Z"):
        value = value[1:]
    else:
        if len(value) < 6 or value[3] != ":":
            raise _parse_error(s, "Z07:00", hold)
        sign, hh, mm, value = value[0], value[1:3], value[4:6], value[6:]
        h = _getnum(hh, True)
        m = _getnum(mm, True) if h is not None else None
        if h is None or m is None:
            raise _parse_error(s, "Z07:00", hold)
        if h[0] > 24:
            raise _parse_error(s, "Z07:00", value, ": time zone offset hour out of range")
        if m[0] > 60:
            raise _parse_error(s, "Z07:00", value, ": time zone offset minute out of range")
        if sign not in "+-":
            raise _parse_error(s, "Z07:00", hold)
        offset = (h[0] * 60 + m[0]) * 60 * (1 if sign == "+" else -1)
    if value:
        raise _parse_error(s, "", value, ": extra text: " + _time_quote(value))
    if day < 1 or day > _days_in(month, year):
        raise _parse_error(s, "", value, ": day out of range")
    secs = _days_from_civil(year, month, day) * _SECS_PER_DAY + hour * 3600 + minute * 60 + sec - offset
    ns = secs * _NS + nsec
    if ns == _GO_ZERO_NS and offset == 0:
        return GoTime(ZERO_TIME)
    return GoTime(ns, offset)


_GO_ZERO_NS = _days_from_civil(1, 1, 1) * _SECS_PER_DAY * _NS


def parse_go_time(s: str) -> int:
    """Parse an RFC 3339 time like Go (see :func:`parse_go_time_ex`) and return nanoseconds since
    the Unix epoch normalised to UTC (a plain ``int``; Go's zero time → :data:`ZERO_TIME`)."""
    return int(parse_go_time_ex(s))


def go_duration(ns: int) -> str:
    """Go's ``time.Duration.String()`` (``"5s"``, ``"1m0s"``, ``"1.5s"``, ``"100ms"``, ``"0s"``)."""
    ns = int(ns)
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < _NS:
        if u < 1000:
            out = "%dns" % u
        elif u < 1_000_000:
            out = _frac_str(u, 3) + "µs"
        else:
            out = _frac_str(u, 6) + "ms"
    else:
        secs, frac = divmod(u, _NS)
        s_part = str(secs % 60) + (("." + ("%09d" % frac).rstrip("0")) if frac else "") + "s"
        mins = secs // 60
        if mins == 0:
            out = s_part
        else:
            hours, mins = divmod(mins, 60)
            out = ("%dh" % hours if hours else "") + "%dm" % mins + s_part
    return "-" + out if neg else out


def _frac_str(v: int, prec: int) -> str:
    whole, frac = divmod(v, 10**prec)
    if frac == 0:
        return str(whole)
    return str(whole) + "." + ("%0*d" % (prec, frac)).rstrip("0")


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


class go_map(dict):  # noqa: N801 - reads like a conversion function
    """A ``dict`` that :func:`dumps` encodes like a Go map: keys sorted (byte order)."""


_ESC_RE = re.compile('[\\x00-\\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')
_ESC_MAP = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _esc(m: re.Match[str]) -> str:
    ch = m.group(0)
    r = _ESC_MAP.get(ch)
    if r is not None:
        return r
    if "\ud800" <= ch <= "\udfff":  # lone surrogate: Go would have invalid UTF-8 → U+FFFD
        return "\ufffd"
    return "\\u%04x" % ord(ch)


def encode_string(s: str) -> str:
    """A Go-encoded JSON string literal (with quotes)."""
    return '"' + _ESC_RE.sub(_esc, s) + '"'


def _encode_float(f: float) -> str:
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError("json: unsupported value: %r" % f)
    if f == 0:
        return "-0" if str(f).startswith("-") else "0"
    a = abs(f)
    r = repr(f)
    if 1e-6 <= a < 1e21:
        # plain decimal, shortest round-trip digits
        if "e" in r or "E" in r:
            from decimal import Decimal

            r = format(Decimal(r), "f")
        if r.endswith(".0"):
            r = r[:-2]
        return r
    # exponent form like Go: 1e+21, 1.5e-07
    mant, _, exp = ("%r" % f).partition("e")
    if not exp:
        mant, _, exp = ("%.17e" % f).partition("e")
    if mant.endswith(".0"):
        mant = mant[:-2]
    e = int(exp)
    return "%se%s%02d" % (mant, "-" if e < 0 else "+", abs(e))


def _encode(obj: Any, out: list[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(encode_string(obj))
    elif isinstance(obj, int):
        out.append(str(int(obj)))
    elif isinstance(obj, float):
        out.append(_encode_float(obj))
    elif isinstance(obj, dict):
        items = sorted(obj.items()) if isinstance(obj, go_map) else obj.items()
        out.append("{")
        first = True
        for k, v in items:
            if not first:
                out.append(",")
            first = False
            out.append(encode_string(str(k)))
            out.append(":")
            _encode(v, out)
        out.append("}")
    elif isinstance(obj, (list, tuple)):
        out.append("[")
        for i, v in enumerate(obj):
            if i:
                out.append(",")
            _encode(v, out)
        out.append("]")
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        out.append('"' + base64.b64encode(bytes(obj)).decode("ascii") + '"')
    elif hasattr(obj, "to_json"):
        _encode(obj.to_json(), out)
    else:
        raise TypeError("dumps: cannot encode %s" % type(obj).__name__)


def dumps(obj: Any) -> bytes:
    """Compact Go-style JSON encoding of ``obj`` as UTF-8 bytes."""
    out: list[str] = []
    _encode(obj, out)
    return "".join(out).encode("utf-8")


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
_WS_RE = re.compile(rb"[ \t\r\n]*")
_STR_SPECIAL = re.compile(rb'["\\\x00-\x1f]')
_DIGITS = re.compile(rb"[0-9]*")
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
    return ch in "\t\n\v\f\r \x85\xa0" or unicodedata.category(ch) == "Zs" or ch in "\u2028\u2029"


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


_EMPTY_OBJECT_RE = re.compile(rb"[ \t\r\n]*\{[ \t\r\n]*\}[ \t\r\n]*")


def is_empty_request(payload: bytes) -> bool:
    """nats-server's ``isEmptyRequest``: no bytes at all, or exactly one JSON value that is an
    object without members (``{}``, ``{ }``, `` {}\n``). A whitespace-only body is *not* empty
    (``json.Unmarshal`` fails on it), nor are ``null``, ``[]`` and ``{}{}``."""
    return not payload or _EMPTY_OBJECT_RE.fullmatch(payload) is not None


def is_object_or_array(payload: bytes) -> bool:
    """nats-server's ``isJSONObjectOrArray``: the first byte after JSON whitespace (space, tab,
    CR, LF — not FF/VT) is ``{`` or ``[``. Optional request bodies are decoded only then;
    anything else (empty, whitespace, ``null``, ``"x"``, ``garbage``) is ignored."""
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


class T:
    """Base of the Go type descriptors used by :func:`decode_strict`."""

    go_name = "?"

    def zero(self) -> Any:
        return None

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


_INT_RE = re.compile(r"-?[0-9]+")


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
            if _INT_RE.fullmatch(raw) and (self.signed or raw[0] != "-"):
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


class Time(T):
    """Go ``time.Time``: RFC 3339 string → ns since the epoch (see :func:`parse_go_time`)."""

    go_name = "time.Time"

    def zero(self) -> Any:
        return ZERO_TIME

    def decode(self, node, cur, path, ctx):
        if node[0] == "s":
            try:
                return parse_go_time_ex(node[1])
            except GoTimeError as e:
                raise JSONError(str(e)) from None
        if node[0] == "z":
            return UNCHANGED
        raise _type_error(_KIND_NAMES[node[0]], self, path, ctx)


class Slice(T):
    def __init__(self, elem: T) -> None:
        self.elem = elem
        self.go_name = "[]" + elem.go_name

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
    """A Go struct: ``fields`` maps JSON names to types. Decodes to a dict holding only the
    fields present in the input (absent = Go zero value)."""

    def __init__(self, name: str, fields: dict[str, Any], pkg: str = "server") -> None:
        self.name = name
        self.fields = {k: _as_type(v) for k, v in fields.items()}
        self.go_name = "%s.%s" % (pkg, name) if pkg else name
        self._lower = {k.lower(): k for k in self.fields}

    def zero(self) -> Any:
        return {}

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

    def decode(self, node, cur, path, ctx):
        return self.func(ctx.buf[node[2] : node[3]], node)


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
    ctx = _Ctx(buf, root or getattr(t, "name", t.go_name), strict)
    cur: Any = t.zero()
    pos = 0
    while True:
        node, pos = _parse_value(buf, pos)
        if node is None:
            return cur
        v = t.decode(node, cur, [], ctx)
        if v is not UNCHANGED:
            cur = v


#: True while the API of a server with ``jetstream { strict: false }`` handles a request: a body
#: the strict decoder refuses is then decoded again as Go's ``json.Unmarshal`` would
#: (nats-server's ``unmarshalRequest``). Set by the API dispatcher, per request.
LENIENT_REQUESTS: ContextVar[bool] = ContextVar("minijs_lenient_requests", default=False)


def decode_strict(payload: bytes, fields: dict[str, Any] | Struct, struct_name: str = "") -> dict:
    """Strictly decode an API request body into a struct described by ``fields``.

    ``fields`` maps JSON names to type specs (:data:`STRING`, :data:`INT64`, :class:`Slice`,
    :class:`Struct`, …; plain ``str``/``bool``/``int`` are accepted as shorthands) or is a
    :class:`Struct`. ``struct_name`` is the Go type name used in error texts (e.g.
    ``"StreamConfigRequest"``). Returns a dict with the fields that were present.

    Raises :class:`~minijs.jetstream.errors.ApiError` 400/10025 ``invalid JSON: <Go text>``.
    """
    st = fields if isinstance(fields, Struct) else Struct(struct_name, fields)
    try:
        return decode_values(payload, st, strict=True)
    except JSONError as e:
        if LENIENT_REQUESTS.get():
            return decode_lenient(payload, st)
        raise _errors.invalid_json(str(e)) from None


def decode_lenient(payload: bytes, fields: dict[str, Any] | Struct, struct_name: str = "") -> dict:
    """Like :func:`decode_strict` but with Go ``json.Unmarshal`` rules (the lenient endpoints,
    e.g. CONSUMER.UNPIN): unknown fields are ignored, exactly one value is allowed, syntax errors
    carry no offset (``invalid character 'x' after top-level value``), an empty or truncated body
    is ``unexpected end of JSON input`` (observed on v2.15.1). Raises ``ApiError`` 10025."""
    st = fields if isinstance(fields, Struct) else Struct(struct_name, fields)
    buf = bytes(payload)
    try:
        node = _parse_single(buf)
        v = st.decode(node, {}, [], _Ctx(buf, st.name, False))
    except _UnexpectedEOF:
        raise _errors.invalid_json("unexpected end of JSON input") from None
    except JSONError as e:
        raise _errors.invalid_json(e.message) from None
    return {} if v is UNCHANGED else v
