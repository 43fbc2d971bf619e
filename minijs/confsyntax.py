"""nats-server's configuration file syntax, read into a tree that keeps where each value came from.

The syntax follows nats-server's ``conf`` package: ``key: value``, ``key = value`` or
``key value``; ``#`` and ``//`` comments; quoted (``"..."`` with escapes, ``'...'`` raw) and
bare strings; integers with size suffixes (``1k`` = 1000, ``1kb``/``1ki``/``1kib`` = 1024, and so
on up to ``e``), floats, booleans (``true/false/yes/no/on/off``), ``{ }`` maps, ``[ ]`` arrays,
``( )`` block strings and ``$VAR`` references (an earlier key in scope, else the environment).

What a key means is the business of the modules that map the tree onto options
(:mod:`minijs.confparse` for the server's keys, the ``tls``, ``websocket``, ``cluster`` and
operator blocks in their own modules); they share :class:`ConfigError` and the value helpers
here, on the floor below the options they fill.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from minijs.configerror import ConfigError
from minijs.protocol.gotime import parse_duration as go_parse_duration

__all__ = ["ConfigError", "Entry", "MapNode", "Node", "go_type", "parse_duration", "parse_text",
           "string_or_strings", "to_python"]


# ----------------------------------------------------------------------------- syntax tree


@dataclass
class Node:
    """A parsed value with where it came from (for error messages)."""

    value: Any  # str, int, float, bool, list[Node], or dict[str, Entry] (a map)
    line: int
    col: int
    kind: str  # "string", "int", "float", "bool", "array", "map"


@dataclass
class Entry:
    """One ``key: value`` in a map; ``used`` marks a key consumed as a ``$variable``."""

    key: str
    line: int
    col: int
    node: Node
    used: bool = False


@dataclass
class MapNode:
    entries: dict[str, Entry] = field(default_factory=dict)  # insertion (file) order


_SIZE_SUFFIXES = {
    "k": 1000, "kb": 1 << 10, "ki": 1 << 10, "kib": 1 << 10,
    "m": 1000 ** 2, "mb": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
    "g": 1000 ** 3, "gb": 1 << 30, "gi": 1 << 30, "gib": 1 << 30,
    "t": 1000 ** 4, "tb": 1 << 40, "ti": 1 << 40, "tib": 1 << 40,
    "p": 1000 ** 5, "pb": 1 << 50, "pi": 1 << 50, "pib": 1 << 50,
    "e": 1000 ** 6, "eb": 1 << 60, "ei": 1 << 60, "eib": 1 << 60,
}
_INT_RE = re.compile(r"-?[0-9]+([A-Za-z]{0,3})\Z")
_FLOAT_RE = re.compile(r"-?[0-9]+\.[0-9]+\Z")
_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_BARE_END = set("\n\r;,]} \t")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", '"': '"', "\\": "\\"}


class _Parser:
    """A recursive-descent reader of nats-server's config syntax."""

    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path
        self.pos = 0
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.scopes: list[MapNode] = []

    # -- positions and errors

    def where(self, pos: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def error(self, message: str, pos: int | None = None) -> ConfigError:
        line, col = self.where(self.pos if pos is None else pos)
        return ConfigError(f"parse error: {message}", self.path, line, col)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    # -- skipping

    def skip_blanks(self) -> None:
        """Spaces and tabs only: a new line ends a value."""
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        self.pos = pos

    def skip_comment(self) -> bool:
        if self.text.startswith("#", self.pos) or self.text.startswith("//", self.pos):
            end = self.text.find("\n", self.pos)
            self.pos = len(self.text) if end < 0 else end
            return True
        return False

    def skip_all(self) -> None:
        """Whitespace, new lines and comments (between entries)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos].isspace():
                self.pos += 1
            if not self.skip_comment():
                return

    # -- structure

    def parse_document(self) -> MapNode:
        top = MapNode()
        self.scopes.append(top)
        self.skip_all()
        if self.peek() == "{":  # nats-server tolerates a brace around the whole file
            self.pos += 1
        while True:
            self.skip_all()
            ch = self.peek()
            if ch == "":
                break
            if ch == "}":
                self.pos += 1
                continue
            self.parse_entry(top)
            self.end_of_value("top-level value", "\n;,}")
        self.scopes.pop()
        return top

    def end_of_value(self, what: str, terminators: str) -> str:
        """After a value: blanks and a comment, then a terminator (or EOF); returns it."""
        self.skip_blanks()
        if self.skip_comment():
            return "\n"
        ch = self.peek()
        if ch == "":
            return ""
        if ch in "\r\n":
            self.pos += 1
            return "\n"
        if ch in terminators:
            if ch not in "}]":
                self.pos += 1
            return ch
        others = ", ".join(repr(t) for t in terminators if t != "\n")
        raise self.error(f"expected {what} to end with a new line, a comment or one of "
                         f"{others}, but got {ch!r}")

    def parse_key(self) -> tuple[str, int]:
        start = self.pos
        ch = self.peek()
        if ch in ('"', "'"):
            end = self.text.find(ch, self.pos + 1)
            if end < 0:
                raise self.error("unterminated quoted key")
            self.pos = end + 1
            return self.text[start + 1:end], start
        if ch in ":=":
            raise self.error(f"unexpected key separator {ch!r}")
        text, pos = self.text, self.pos
        while pos < len(text) and not text[pos].isspace() and text[pos] not in ":=":
            pos += 1
        self.pos = pos
        key = text[start:pos]
        if not key:
            raise self.error("expected a key")
        return key, start

    def parse_entry(self, target: MapNode) -> None:
        key, kpos = self.parse_key()
        line, col = self.where(kpos)
        if key.lower() == "include" and self.peek() in " \t":
            self.skip_blanks()
            self.include(target, line, col)
            return
        # nats-server allows any whitespace (even new lines) between a key and its separator.
        while self.peek() and self.peek().isspace():
            self.pos += 1
        if self.peek() in (":", "="):
            self.pos += 1
            self.skip_blanks()
            if self.peek() in ("\n", "\r", ""):
                raise self.error(f"expected a value for {key!r} but found a new line")
        node = self.parse_value()
        target.entries[key] = Entry(key, line, col, node)

    def include(self, target: MapNode, line: int, col: int) -> None:
        """``include ./file.conf``: the file's entries, read relative to this file, as if
        written here (nats-server's lexer does the same)."""
        node = self.parse_value()
        if node.kind != "string" or not node.value:
            raise ConfigError("include expects a file name", self.path, line, col)
        base = os.path.dirname(self.path) if self.path else "."
        inc_path = os.path.join(base, node.value)
        try:
            with open(inc_path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
            raise ConfigError(f"error parsing include file '{node.value}', open "
                              f"{os.path.normpath(inc_path)}: {reason}", self.path, line,
                              col) from None
        sub = _Parser(text, inc_path)
        sub.scopes = list(self.scopes)
        while True:
            sub.skip_all()
            ch = sub.peek()
            if ch == "":
                break
            sub.parse_entry(target)
            sub.end_of_value("value", "\n;,")

    def parse_value(self) -> Node:
        start = self.pos
        line, col = self.where(start)
        ch = self.peek()
        if ch == "{":
            self.pos += 1
            return Node(self.parse_map(), line, col, "map")
        if ch == "[":
            self.pos += 1
            return Node(self.parse_array(), line, col, "array")
        if ch == '"':
            return Node(self.parse_dq_string(), line, col, "string")
        if ch == "'":
            end = self.text.find("'", start + 1)
            if end < 0:
                raise self.error("unterminated string")
            self.pos = end + 1
            return Node(self.text[start + 1:end], line, col, "string")
        if ch == "(":
            return Node(self.parse_block(), line, col, "string")
        if ch in ("", "\n", "\r"):
            raise self.error("expected a value but found a new line")
        return self.parse_bare(line, col)

    def parse_map(self) -> MapNode:
        node = MapNode()
        self.scopes.append(node)
        while True:
            self.skip_all()
            ch = self.peek()
            if ch == "":
                raise self.error("unexpected end of file inside a map (missing '}')")
            if ch == "}":
                self.pos += 1
                break
            if ch == ",":
                raise self.error("unexpected map value terminator ','")
            self.parse_entry(node)
            if self.end_of_value("map value", "\n;,}") == "":
                raise self.error("unexpected end of file inside a map (missing '}')")
        self.scopes.pop()
        return node

    def parse_array(self) -> list[Node]:
        items: list[Node] = []
        while True:
            self.skip_all()
            ch = self.peek()
            if ch == "":
                raise self.error("unexpected end of file inside an array (missing ']')")
            if ch == "]":
                self.pos += 1
                return items
            if ch == ",":
                raise self.error("unexpected array value terminator ','")
            items.append(self.parse_value())
            if self.end_of_value("array value", "\n,]") == "":
                raise self.error("unexpected end of file inside an array (missing ']')")

    def parse_dq_string(self) -> str:
        self.pos += 1
        out: list[str] = []
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.error("unterminated string")
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\\":
                esc = text[self.pos + 1:self.pos + 2]
                if esc == "x":
                    digits = text[self.pos + 2:self.pos + 4]
                    try:
                        out.append(bytes.fromhex(digits).decode("latin-1"))
                    except ValueError:
                        raise self.error(f"expected two hexadecimal digits after '\\x', "
                                         f"but got {digits!r}") from None
                    self.pos += 4
                    continue
                if esc not in _ESCAPES:
                    raise self.error(f"invalid escape character {esc!r}; only \\xXX, \\t, "
                                     "\\n, \\r, \\\", \\\\ are allowed")
                out.append(_ESCAPES[esc])
                self.pos += 2
                continue
            out.append(ch)
            self.pos += 1

    def parse_block(self) -> str:
        """``( ... )``: raw text up to a ``)`` alone on its own line."""
        match = re.compile(r"\n\)[ \t]*(?=\n|\Z)").search(self.text, self.pos)
        if match is None:
            raise self.error("unterminated block string (needs ')' alone on a line)")
        body = self.text[self.pos + 1:match.start()]
        self.pos = match.end()
        return body

    def parse_bare(self, line: int, col: int) -> Node:
        text, start = self.text, self.pos
        pos = start
        while pos < len(text) and text[pos] not in _BARE_END:
            pos += 1
        self.pos = pos
        word = text[start:pos]
        lower = word.lower()
        if lower in _BOOLS:
            return Node(_BOOLS[lower], line, col, "bool")
        if word.startswith("$"):
            return self.lookup_variable(word[1:], line, col)
        if word[:1].isdigit() or (word[:1] == "-" and word[1:2].isdigit()):
            match = _INT_RE.match(word)
            if match:
                suffix = match.group(1).lower()
                digits = word[:len(word) - len(suffix)] if suffix else word
                if not suffix:
                    return Node(int(digits), line, col, "int")
                if suffix in _SIZE_SUFFIXES:
                    return Node(int(digits) * _SIZE_SUFFIXES[suffix], line, col, "int")
            elif _FLOAT_RE.match(word):
                return Node(float(word), line, col, "float")
        return Node(word, line, col, "string")

    def lookup_variable(self, name: str, line: int, col: int) -> Node:
        for scope in reversed(self.scopes):
            entry = scope.entries.get(name)
            if entry is not None:
                entry.used = True
                return replace(entry.node, line=line, col=col)
        if name in os.environ:
            sub = _Parser(f"pk={os.environ[name]}", self.path)
            try:
                env_node = sub.parse_document().entries["pk"].node
            except ConfigError:
                env_node = Node(os.environ[name], line, col, "string")
            return replace(env_node, line=line, col=col)
        raise ConfigError(f"variable reference for {name!r} on line {line} can not be found",
                          self.path, line, col)


def parse_text(text: str, path: str | None = None) -> MapNode:
    """Parse config text into a tree of :class:`MapNode`/:class:`Node` (keys keep their case)."""
    return _Parser(text, path).parse_document()


def to_python(node: Node | MapNode) -> Any:
    """Plain Python values (dicts, lists, scalars) from a parsed tree."""
    if isinstance(node, MapNode):
        return {k: to_python(e.node) for k, e in node.entries.items()}
    if node.kind == "map":
        return to_python(node.value)
    if node.kind == "array":
        return [to_python(n) for n in node.value]
    return node.value



def string_or_strings(node: Node, not_a_string: Callable[[Node], Exception],
                      neither: Callable[[], Exception]) -> list[str]:
    """A value that is a string or an array of strings, as nats-server's option readers take
    one (``case string:`` / ``case []any:``): its strings, or the error ``not_a_string(item)``
    makes for an array item of another type, or ``neither()`` for a value of another type
    (each reader words and places its errors its own way)."""
    if node.kind == "string":
        return [node.value]
    if node.kind != "array":
        raise neither()
    items = []
    for item in node.value:
        if item.kind != "string":
            raise not_a_string(item)
        items.append(item.value)
    return items


def go_type(node: Node) -> str:
    """The Go type name nats-server's messages give a config value (``%T``)."""
    return {"string": "string", "int": "int64", "float": "float64", "bool": "bool",
            "map": "map[string]interface {}", "array": "[]interface {}"}.get(node.kind,
                                                                           node.kind)


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` ("1h30m", "500ms", "1.5s"), in seconds, with its error texts
    (``time: invalid duration "x"``, ``time: missing unit in duration "1"``,
    ``time: unknown unit "x" in duration "1x"``) and its int64 nanosecond range."""
    return go_parse_duration(text) / 1_000_000_000
