"""JSON decoded as Go's ``encoding/json`` decodes it into a struct: what CONNECT and a client's
INFO are held to.

nats-server unmarshals a client's CONNECT into a typed struct, so its rules are Go's, not
Python's:

* the whole text must be valid JSON first (no ``NaN``/``Infinity``, no byte-order mark, no
  trailing data, JSON white space only, at most 10000 levels of nesting);
* an object key names a field exactly or, failing that, case-insensitively (``"User"`` and
  ``"PASS"`` fill ``user`` and ``pass``; ``ſ`` and the Kelvin sign fold to ``s`` and ``k``);
  unknown keys are skipped whatever their value; a repeated key is applied again, in order;
* ``null`` leaves a bool, string or number field as it was (``CONNECT null`` changes nothing);
* a value of the wrong JSON type for its field (``"verbose":"yes"``, ``"name":5``,
  ``"protocol":1.0`` or ``"1"``, a number out of range) is an error;
* invalid UTF-8 inside a string becomes U+FFFD, one per bad byte, and so does a lone surrogate
  escape.

:func:`unmarshal` returns the updated field values, or ``None`` for any error (nats-server
then closes the connection without a word). Pure computation, no I/O.
"""
from __future__ import annotations

import binascii
import codecs
import json
import re
from typing import Any

#: Go's decoder refuses deeper nesting (encoding/json maxNestingDepth).
MAX_DEPTH = 10000

# Field kinds.
BOOL = "bool"
STRING = "string"
INT = "int"          # Go int / int64
INT32 = "int32"
UINT64 = "uint64"
UINT8 = "uint8"      # Go byte
BYTES = "bytes"      # Go []byte: base64 text, or an array of bytes
STRINGS = "strings"  # Go []string

#: Kinds that ``null`` sets to nil (Go slices and pointers); it leaves the others alone.
_NULL_RESETS = (BYTES, STRINGS)

_UNSIGNED = (UINT64, UINT8)

_INT_RANGES = {
    INT: (-(1 << 63), (1 << 63) - 1),
    INT32: (-(1 << 31), (1 << 31) - 1),
    UINT64: (0, (1 << 64) - 1),
    UINT8: (0, 255),
}


class Struct:
    """A Go struct type: JSON name -> kind (a kind string, or a :class:`Struct` for a pointer
    to a struct, which ``null`` resets)."""

    __slots__ = ("fields", "folded")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        self.folded: dict[str, str] = {}
        for name in fields:
            self.folded.setdefault(fold(name), name)


def fold(name: str) -> str:
    """Go's foldName, as far as an ASCII field name can tell: ASCII letters upper-cased, and
    ``ſ`` and the Kelvin sign, the only other runes that fold to ASCII, to ``S`` and ``K``.
    A name left with any other non-ASCII rune matches no field and is returned as is."""
    if not name.isascii():
        name = name.replace("\u017f", "s").replace("\u212a", "k")
        if not name.isascii():
            return name
    return name.upper()


SUBJECT_PERMISSION = Struct({"allow": STRINGS, "deny": STRINGS})

#: nats-server's ClientOpts (what CONNECT decodes into).
CLIENT_OPTS = Struct({
    "echo": BOOL, "verbose": BOOL, "pedantic": BOOL, "tls_required": BOOL,
    "nkey": STRING, "jwt": STRING, "sig": STRING, "auth_token": STRING, "user": STRING,
    "pass": STRING, "name": STRING, "lang": STRING, "version": STRING, "protocol": INT,
    "account": STRING, "new_account": BOOL, "headers": BOOL, "no_responders": BOOL,
    "import": SUBJECT_PERMISSION, "export": SUBJECT_PERMISSION, "remote_account": STRING,
    "proxy_sig": STRING,
})

#: nats-server's Info (what a client's INFO decodes into; the values are then ignored).
SERVER_INFO = Struct({
    "server_id": STRING, "server_name": STRING, "version": STRING, "proto": INT,
    "git_commit": STRING, "go": STRING, "host": STRING, "port": INT, "headers": BOOL,
    "auth_required": BOOL, "tls_required": BOOL, "tls_verify": BOOL, "tls_available": BOOL,
    "max_payload": INT32, "jetstream": BOOL, "ip": STRING, "client_id": UINT64,
    "client_ip": STRING, "nonce": STRING, "cluster": STRING, "cluster_dynamic": BOOL,
    "domain": STRING, "connect_urls": STRINGS, "ws_connect_urls": STRINGS, "ldm": BOOL,
    "compression": STRING, "connect_info": BOOL, "remote_account": STRING,
    "acc_is_sys": BOOL, "api_lvl": INT, "import": SUBJECT_PERMISSION,
    "export": SUBJECT_PERMISSION, "lnoc": BOOL, "lnocu": BOOL, "info_on_connect": BOOL,
    "route_pool_size": INT, "route_pool_idx": INT, "route_account": STRING,
    "route_acc_add_reqid": STRING, "gossip_mode": UINT8, "gateway": STRING,
    "gateway_urls": STRINGS, "gateway_url": STRING, "gateway_cmd": UINT8,
    "gateway_cmd_payload": BYTES, "gateway_nrp": BOOL, "gateway_iom": BOOL,
    "leafnode_urls": STRINGS, "xkey": STRING,
})


class _Obj(list):
    """A decoded JSON object: its (key, value) pairs in order."""


class _Num(str):
    """A decoded JSON number: its literal text."""


class _Error(Exception):
    pass


def _go_replace(err: UnicodeDecodeError) -> tuple[str, int]:
    # Go's utf8.DecodeRune gives up one byte at a time: one U+FFFD per bad byte.
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("minijs-go-replace", _go_replace)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _object(pairs: list) -> _Obj:
    return _Obj(pairs)


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_Num, parse_float=_Num,
                            parse_constant=_reject_constant)


def decode(data: bytes) -> Any:
    """Parse JSON text with Go's syntax rules; raise ValueError when Go would refuse it.

    Objects come back as :class:`_Obj` pair lists, numbers as :class:`_Num` literals.
    """
    text = data.decode("utf-8", "minijs-go-replace")
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise ValueError("exceeded max depth")
    try:
        return _DECODER.decode(text)
    except RecursionError:
        return _decode_iterative(text)


_WS = " \t\r\n"
_STRING_RE = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _depth(text: str) -> int:
    """Deepest nesting of arrays and objects outside strings (text need not be valid)."""
    depth = deepest = 0
    pos = 0
    end = len(text)
    while pos < end:
        c = text[pos]
        if c == '"':
            m = _STRING_RE.match(text, pos)
            if m is None:
                return deepest
            pos = m.end()
            continue
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
        pos += 1
    return deepest


def _skip(text: str, pos: int) -> int:
    end = len(text)
    while pos < end and text[pos] in _WS:
        pos += 1
    return pos


def _key(text: str, pos: int) -> tuple[str, int]:
    """An object key at ``pos`` (white space before it already skipped) and the ``:`` after
    it; returns the key and the position of its value."""
    m = _STRING_RE.match(text, pos)
    if m is None:
        raise ValueError("object key expected")
    pos = _skip(text, m.end())
    if pos >= len(text) or text[pos] != ":":
        raise ValueError("':' expected")
    return json.loads(m.group()), _skip(text, pos + 1)


def _decode_iterative(text: str) -> Any:
    """The same parse without recursion, for nesting Python's own decoder cannot take."""
    end = len(text)
    stack: list[list] = []  # open containers: [values, pending key, is_object]
    pos = _skip(text, 0)
    while True:
        # A value starts at pos.
        if pos >= end:
            raise ValueError("unexpected end of JSON input")
        c = text[pos]
        value: Any
        if c == "[":
            pos = _skip(text, pos + 1)
            if pos < end and text[pos] == "]":
                value, pos = [], pos + 1
            else:
                stack.append([[], None, False])
                continue
        elif c == "{":
            pos = _skip(text, pos + 1)
            if pos < end and text[pos] == "}":
                value, pos = _Obj(), pos + 1
            else:
                key, pos = _key(text, pos)
                stack.append([_Obj(), key, True])
                continue
        elif c == '"':
            m = _STRING_RE.match(text, pos)
            if m is None:
                raise ValueError("invalid string")
            value, pos = json.loads(m.group()), m.end()
        elif text.startswith("true", pos):
            value, pos = True, pos + 4
        elif text.startswith("false", pos):
            value, pos = False, pos + 5
        elif text.startswith("null", pos):
            value, pos = None, pos + 4
        else:
            m = _NUMBER_RE.match(text, pos)
            if m is None:
                raise ValueError("invalid character")
            value, pos = _Num(m.group()), m.end()
        # Attach the value to its container; close every container it completes.
        while True:
            if not stack:
                if _skip(text, pos) != end:
                    raise ValueError("invalid character after top-level value")
                return value
            top = stack[-1]
            top[0].append((top[1], value) if top[2] else value)
            pos = _skip(text, pos)
            if pos >= end:
                raise ValueError("unexpected end of JSON input")
            c = text[pos]
            if c == ",":
                if top[2]:
                    top[1], pos = _key(text, _skip(text, pos + 1))
                else:
                    pos = _skip(text, pos + 1)
                break
            if c == ("}" if top[2] else "]"):
                value = stack.pop()[0]
                pos += 1
                continue
            raise ValueError("invalid character")


def _fix_string(value: str) -> str:
    """Go turns a lone surrogate escape into U+FFFD."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _convert(kind: Any, value: Any, old: Any) -> Any:
    """``value`` decoded into a field of ``kind`` that holds ``old``; _Error on a type error."""
    if isinstance(kind, Struct):
        if value is None:
            return None
        if type(value) is not _Obj:
            raise _Error
        return _fill(kind, value, dict(old) if isinstance(old, dict) else {})
    if kind == BOOL:
        if value is True or value is False:
            return value
        if value is None:
            return old
        raise _Error
    if kind == STRING:
        if type(value) is str:
            return _fix_string(value)
        if value is None:
            return old
        raise _Error
    if kind == STRINGS:
        if value is None:
            return None
        if type(value) is not list:
            raise _Error
        out = []
        for item in value:
            if type(item) is str:
                out.append(_fix_string(item))
            elif item is None:
                out.append("")
            else:
                raise _Error
        return out
    if kind == BYTES:
        if value is None:
            return None
        if type(value) is str:
            raw = value.replace("\r", "").replace("\n", "")
            try:
                return binascii.a2b_base64(raw.encode("ascii"), strict_mode=True)
            except (binascii.Error, ValueError):
                raise _Error from None
        if type(value) is list:
            return bytes(_convert(UINT8, item, 0) for item in value)
        raise _Error
    # Integer kinds.
    if value is None:
        return old
    if type(value) is not _Num:
        raise _Error
    text = str(value)
    if "." in text or "e" in text or "E" in text:
        raise _Error
    if text[0] == "-" and kind in _UNSIGNED:
        raise _Error  # Go's ParseUint refuses any sign, even "-0"
    number = int(text)
    low, high = _INT_RANGES[kind]
    if not low <= number <= high:
        raise _Error
    return number


def _fill(struct: Struct, pairs: _Obj, into: dict[str, Any]) -> dict[str, Any]:
    fields = struct.fields
    for key, value in pairs:
        name = key if key in fields else struct.folded.get(fold(key))
        if name is None:
            continue
        kind = fields[name]
        if value is None and kind not in _NULL_RESETS and not isinstance(kind, Struct):
            continue  # null leaves a bool, string or number as it is
        into[name] = _convert(kind, value, into.get(name))
    return into


def unmarshal(data: bytes, struct: Struct, current: dict[str, Any]) -> dict[str, Any] | None:
    """``json.Unmarshal(data, &v)`` for ``v`` of type ``struct`` holding ``current``: the new
    field values (a new dict), or None when Go returns an error."""
    try:
        value = decode(data)
    except ValueError:
        return None
    if value is None:
        return dict(current)
    if type(value) is not _Obj:
        return None
    try:
        return _fill(struct, value, dict(current))
    except _Error:
        return None
