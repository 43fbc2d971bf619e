"""Go formats as the JetStream API uses them: request bodies decoded into Go structs, answered
with JetStream's ``invalid JSON`` error.

The formats themselves live on the protocol floor, once: :mod:`minijs.protocol.gojson` (Go
``encoding/json`` decoding: syntax, Go types), :mod:`minijs.protocol.gomarshal` (encoding) and
:mod:`minijs.protocol.gotime` (RFC 3339 times, durations). This module adds what only the JetStream API does with them:

* :func:`decode_strict` — nats-server's ``unmarshalRequest``: the body read as a stream of
  JSON values into a struct, unknown fields refused, any error answered with 400/10025
  ``invalid JSON: <Go text>``; under ``jetstream { strict: false }``
  (:data:`LENIENT_REQUESTS`) a refused body is decoded again as ``json.Unmarshal`` would;
* :func:`decode_lenient` — ``json.Unmarshal`` rules (the lenient endpoints, e.g.
  CONSUMER.UNPIN), same error.

It re-exports the protocol floor's names the engine uses (``J.dumps``, ``J.go_time``,
``J.STRING``, …), so engine modules need one import for Go formats. Pure module: no I/O.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from minijs.jetstream import errors as _errors
from minijs.protocol.gojson import (
    BOOL, DURATION, FLOAT64, INT, INT32, INT64, STRING, TIME, UINT8, UINT16, UINT32, UINT64,
    Bool, Bytes, Custom, Float, Int, JSONError, Map, Ptr, Slice, Str, Struct, T, Time,
    decode_values, go_map, is_empty_request, is_object_or_array, parse_json, unmarshal_exact,
)
from minijs.protocol.gomarshal import dumps, encode_string
from minijs.protocol.gostrings import go_quote, go_quote_rune
from minijs.protocol.gotime import (
    ZERO_TIME, GoTime, GoTimeError, go_duration, go_time, parse_go_time, parse_go_time_ex,
)

__all__ = [
    "BOOL", "DURATION", "FLOAT64", "INT", "INT32", "INT64", "STRING", "TIME", "UINT8", "UINT16",
    "UINT32", "UINT64", "Bool", "Bytes", "Custom", "Float", "Int", "JSONError", "Map", "Ptr",
    "Slice", "Str", "Struct", "T", "Time", "decode_values", "go_map", "is_empty_request",
    "is_object_or_array", "parse_json", "unmarshal_exact", "dumps", "encode_string", "go_quote",
    "go_quote_rune", "ZERO_TIME", "GoTime", "GoTimeError", "go_duration", "go_time",
    "parse_go_time", "parse_go_time_ex", "LENIENT_REQUESTS", "decode_strict", "decode_lenient",
]

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
    try:
        return unmarshal_exact(payload, st)
    except JSONError as e:
        raise _errors.invalid_json(e.message) from None
