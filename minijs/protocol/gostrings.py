"""Go string quoting as nats-server's texts show it: ``strconv.Quote`` (what ``%q`` prints)
and ``strconv.QuoteRune``, with invalid UTF-8 rendered byte by byte as ``\\xff``.

Pure module: stdlib only. The error table and the JSON layer both quote with it.
"""
from __future__ import annotations

from typing import Iterable


def is_print(ch: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols, ASCII space."""
    if ch == " ":
        return True
    if ch < " " or ch == "\x7f":
        return False
    if ch < "\x7f":
        return True
    import unicodedata  # (a C extension: loaded by the first non-ASCII character, not at start)

    return unicodedata.category(ch)[0] in "LMNPS"


_SIMPLE_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _escape_rune(ch: str, quote: str) -> str:
    if ch == quote or ch == "\\":
        return "\\" + ch
    if is_print(ch):
        return ch
    if ch in _SIMPLE_ESC:
        return _SIMPLE_ESC[ch]
    o = ord(ch)
    if o < 0x20 or o == 0x7F:
        return "\\x%02x" % o
    if 0xD800 <= o <= 0xDFFF:  # not a valid rune: Go would have seen invalid UTF-8
        return "\\ufffd"
    if o < 0x10000:
        return "\\u%04x" % o
    return "\\U%08x" % o


def decode_rune(buf: bytes, i: int) -> tuple[str | None, int]:
    """Go ``utf8.DecodeRune``: ``(char, width)`` or ``(None, 1)`` for an invalid byte."""
    b = buf[i]
    if b < 0x80:
        return chr(b), 1
    w = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
    if w:
        try:
            return buf[i : i + w].decode("utf-8"), w
        except UnicodeDecodeError:
            pass
    return None, 1


def runes(data: str | bytes) -> Iterable[tuple[str | None, int]]:
    """Yield ``(rune, byte)`` pairs: a decoded character, or ``(None, b)`` for an invalid byte."""
    ch: str | None
    if isinstance(data, str):
        for ch in data:
            yield ch, 0
        return
    i, n = 0, len(data)
    while i < n:
        ch, width = decode_rune(data, i)
        if ch is None:
            yield None, data[i]
            i += 1
        else:
            yield ch, 0
            i += width


def go_quote(s: str | bytes) -> str:
    """Go ``strconv.Quote`` (what ``%q`` prints for a string). Accepts ``bytes`` so invalid UTF-8
    renders as ``\\xff`` like in Go."""
    out = ['"']
    for ch, b in runes(s):
        out.append("\\x%02x" % b if ch is None else _escape_rune(ch, '"'))
    out.append('"')
    return "".join(out)


def go_quote_rune(ch: str) -> str:
    """Go ``strconv.QuoteRune`` (``'x'``, ``'\\x01'``, ``'\\''``, ``'\\u00a0'``)."""
    return "'" + _escape_rune(ch, "'") + "'"
