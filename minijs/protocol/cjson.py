"""Python's C JSON scanner and encoder, used without the ``json`` package around them.

A started server needs JSON for two things before anything else: writing INFO and reading
each client's CONNECT. The ``json`` package would do both through the same C functions
(``_json.make_scanner``, ``_json.make_encoder``), but importing it also compiles the regular
expressions of its pure-Python fallbacks, which those C functions never use: about a tenth of
what a spawned ``minijs -js`` spends importing beyond asyncio. This module calls the C
functions directly and loads ``json`` only where it must: on a Python without them, and for
the first text the scanner refuses (CPython 3.11's scanner raises its error through
``json.decoder``, and reports a bare ``SystemError`` when that module is not loaded yet).

Invariants:

* :func:`decoder` returns a function that behaves as ``json.JSONDecoder(...).decode`` with the
  same hooks: the same values for every text it accepts, a ``ValueError`` for every text it
  refuses (whitespace is JSON's four characters; anything but whitespace after the value is
  refused);
* :func:`dumps_compact` returns what ``json.dumps(value, separators=(",", ":"))`` returns.
"""
from __future__ import annotations

from typing import Any, Callable


def _c_functions() -> Any:
    """CPython's ``_json`` module, or None (elsewhere the json package is used instead)."""
    try:
        import _json
    except ImportError:
        return None
    return _json


_C = _c_functions()

_JSON_WHITESPACE = " \t\n\r"


class _ScannerContext:
    """What the C scanner reads its settings from (the attributes of a ``JSONDecoder``)."""

    def __init__(self, object_pairs_hook: Callable[[list], Any], parse_int: Callable[[str], Any],
                 parse_float: Callable[[str], Any], parse_constant: Callable[[str], Any]
                 ) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_int = parse_int
        self.parse_float = parse_float
        self.parse_constant = parse_constant


def decoder(*, object_pairs_hook: Callable[[list], Any], parse_int: Callable[[str], Any],
            parse_float: Callable[[str], Any], parse_constant: Callable[[str], Any]
            ) -> Callable[[str], Any]:
    """``json.JSONDecoder(object_pairs_hook=..., parse_int=..., parse_float=...,
    parse_constant=...).decode``, made from the C scanner where there is one."""
    if _C is None:
        import json

        return json.JSONDecoder(object_pairs_hook=object_pairs_hook, parse_int=parse_int,
                                parse_float=parse_float, parse_constant=parse_constant).decode
    scan = _C.make_scanner(_ScannerContext(object_pairs_hook, parse_int, parse_float,
                                         parse_constant))
    ws = _JSON_WHITESPACE

    def scan_one(text: str) -> Any:
        start = len(text) - len(text.lstrip(ws))
        try:
            value, end = scan(text, start)
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text) and text[end:].strip(ws):
            raise ValueError(f"Extra data: char {end}")
        return value

    def decode(text: str) -> Any:
        try:
            return scan_one(text)
        except SystemError:
            # The scanner refused the text but could not say why: the module holding its error
            # type is not loaded yet. Load it and scan again, which raises that error.
            import json.decoder  # noqa: F401

            return scan_one(text)

    return decode


def _not_serializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps_compact(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))``."""
    if _C is None:
        import json

        return json.dumps(value, separators=(",", ":"))
    return "".join(_C.make_encoder({}, _not_serializable, _C.encode_basestring_ascii, None, ":",
                                   ",", False, False, True)(value, 0))
