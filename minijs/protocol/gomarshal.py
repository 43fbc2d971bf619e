"""Go's ``json.Marshal`` as nats-server's replies show it: :func:`dumps`.

Compact JSON, ``<`` ``>`` ``&`` U+2028 U+2029 escaped as ``\\u003c`` … like Go, control characters
as ``\\n``/``\\r``/``\\t``/``\\b``/``\\f`` or ``\\u00XX``, other non-ASCII raw UTF-8. ``dict`` keys
are emitted in insertion order (Go *struct* order); Go *maps* are emitted with sorted keys, so
wrap map-typed values with :class:`~minijs.protocol.gojson.go_map` (or sort them yourself).
``bytes`` become standard base64 (Go ``[]byte``), ``None`` is ``null``; a float as Go prints a
float64 (plain decimal from 1e-6 to 1e21, exponent form outside); an object with ``to_json()``
is encoded as what it returns.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from minijs.protocol.gojson import go_map

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
