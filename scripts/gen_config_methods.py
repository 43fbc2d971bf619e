#!/usr/bin/env python3
"""Generate minijs/config_methods.py, the methods ``@dataclass`` writes for minijs.config.

``@dataclass`` compiles an ``__init__``, ``__repr__`` and ``__eq__`` (and, frozen, a
``__hash__``, ``__setattr__`` and ``__delattr__``) from source text every time its module is
imported, and nothing caches that: for ``ServerConfig``'s 66 fields it was about a fifth of
what a spawned ``minijs -js`` spends importing its own code. The classes of ``minijs.config``
are declared with ``config._dataclass`` instead, which takes the methods from the generated
module, written once, here, as plain Python whose bytecode is cached like any other module's
(and leaves the rest of what makes a dataclass to ``@dataclass`` itself, when first asked for).

What the generated code depends on is each class's field names in order, which of them have a
default, a ``default_factory`` or neither, and whether the class is frozen; default values are
not in it (they become the ``__init__``'s ``__defaults__`` when the class is made). So a new
field, a renamed or reordered one, a default turned into a factory, or ``frozen`` changed needs
this script run again; ``install`` refuses (an ImportError naming this script) a class whose
fields are not the ones its methods were generated for, and tests/test_config_methods.py runs
``--check``.

Usage: ``python scripts/gen_config_methods.py`` rewrites the module; ``--check`` exits 1 (and
says so) when the module on disk is not what the classes generate.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import textwrap
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "minijs" / "config_methods.py"

HEADER = '''\
"""The methods ``@dataclass`` would compile for the classes of :mod:`minijs.config`, written out.

GENERATED from the fields of those classes: do not edit. ``minijs.config`` declares the
classes with its own ``@dataclass``, which :func:`install` gives these methods, after checking
the class's fields are the ones they were generated for. Each behaves as its ``@dataclass``
counterpart of Python 3.11: the same ``__init__`` signature (defaults and annotations included,
a ``default_factory`` shown as ``<factory>``), ``repr``, equality (a tuple of the fields, only
between instances of the same class), and for frozen classes the hash of that tuple and a
``FrozenInstanceError`` on assignment or deletion.
"""

# Written by scripts/gen_config_methods.py in the minijs repository, which a test runs to check
# this file is what the classes generate now; after changing a class's fields, run it again.
from __future__ import annotations

import reprlib
from typing import Any, Callable

_object_setattr = object.__setattr__


def _frozen_error(text: str) -> Exception:
    from dataclasses import FrozenInstanceError

    return FrozenInstanceError(text)


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY: Any = _Factory()
'''

FOOTER = '''

def install(cls: type, frozen: bool, declared: list[tuple[str, Any, str, Any]]) -> None:
    """Set the generated methods on ``cls``, whose fields are ``declared``: ``(name,
    annotation, kind, value)`` in order, the kind ``"required"``, ``"default"`` (the value is
    the default) or ``"factory"`` (the value is the factory). ImportError if they are not the
    fields the methods were generated for."""
    entry = _CLASSES.get(cls.__qualname__)
    shape = tuple((name, kind) for name, _, kind, _ in declared)
    if entry is None or entry[0] != frozen or entry[1] != shape:
        raise ImportError(
            f"minijs.config_methods was not generated for the fields of {cls.__qualname__}: "
            "run python scripts/gen_config_methods.py")
    methods = entry[2](cls, {name: value for name, _, kind, value in declared
                             if kind == "factory"})
    init = methods["__init__"]
    init.__defaults__ = tuple(_HAS_DEFAULT_FACTORY if kind == "factory" else value
                              for _, _, kind, value in declared if kind != "required") or None
    init.__annotations__ = {**{name: t for name, t, _, _ in declared}, "return": None}
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, name, method)
'''


def wrap(head: str, body: str) -> str:
    """``head + body`` broken at spaces into lines of at most 99 characters, continued under
    the first character after ``head``."""
    return textwrap.fill(body, width=99, initial_indent=head, subsequent_indent=" " * len(head),
                         break_long_words=False, break_on_hyphens=False)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


Declared = list  # [(name, annotation, kind, value)], as config._dataclass hands install


def shape(cls: type, declared: Declared) -> tuple[tuple[str, str], ...]:
    if hasattr(cls, "__post_init__"):
        raise SystemExit(f"{cls.__qualname__}: __post_init__ is not supported by this generator")
    return tuple((name, kind) for name, _, kind, _ in declared)


def class_source(cls: type, frozen: bool, declared: Declared) -> str:
    fields = shape(cls, declared)
    names = [name for name, _ in fields]
    maker = f"_{snake(cls.__qualname__)}_methods"
    lines = [wrap(f"def {maker}(",
                  "cls: Any, factories: dict[str, Callable[[], Any]]) -> dict[str, Any]:")]
    for name, kind in fields:
        if kind == "factory":
            lines.append(f"    factory_{name} = factories[{name!r}]")
    if lines[-1].startswith("    factory_"):
        lines.append("")
    lines.append(wrap("    def __init__(", ", ".join(["self"] + names) + "):"))
    for name, kind in fields:
        value = (f"(factory_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name})"
                 if kind == "factory" else name)
        if frozen:
            lines.append(wrap("        _object_setattr(", f"self, {name!r}, {value})"))
        else:
            lines.append(wrap(f"        self.{name} = ", value))
    lines.append("")
    lines.append("    @reprlib.recursive_repr()")
    lines.append("    def __repr__(self: Any) -> str:")
    lines.append("        return (f\"{self.__class__.__qualname__}(\"")
    for i, name in enumerate(names):
        sep = ", " if i < len(names) - 1 else ")"
        lines.append(f"                f\"{name}={{self.{name}!r}}{sep}\"")
    lines.append("                )")
    own = "".join(f"self.{name}, " for name in names)
    other = "".join(f"other.{name}, " for name in names)
    lines.append("")
    lines.append("    def __eq__(self: Any, other: Any) -> Any:")
    lines.append("        if other.__class__ is self.__class__:")
    lines.append("            return (")
    lines.append(wrap("                (", own.strip() + ") =="))
    lines.append(wrap("                (", other.strip() + "))"))
    lines.append("        return NotImplemented")
    if frozen:
        lines.append("")
        quoted = " ".join(f"{n!r}," for n in names)
        lines.append(wrap("    field_names = frozenset((", quoted + "))"))
        lines.append("")
        lines.append("    def __hash__(self: Any) -> int:")
        lines.append(wrap("        return hash(", f"({own.strip()}))"))
        lines.append("")
        lines.append("    def __setattr__(self: Any, name: str, value: Any) -> None:")
        lines.append("        if type(self) is cls or name in field_names:")
        lines.append("            raise _frozen_error(f\"cannot assign to field {name!r}\")")
        lines.append("        super(cls, self).__setattr__(name, value)")
        lines.append("")
        lines.append("    def __delattr__(self: Any, name: str) -> None:")
        lines.append("        if type(self) is cls or name in field_names:")
        lines.append("            raise _frozen_error(f\"cannot delete field {name!r}\")")
        lines.append("        super(cls, self).__delattr__(name)")
        lines.append("")
        lines.append('    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__,')
        lines.append('            "__hash__": __hash__, "__setattr__": __setattr__,')
        lines.append('            "__delattr__": __delattr__}')
    else:
        lines.append("")
        lines.append("    # eq without frozen: unhashable, as @dataclass makes it")
        lines.append('    return {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__,')
        lines.append('            "__hash__": None}')
    return "\n".join(lines) + "\n"


def load() -> list[tuple[type, bool, Declared]]:
    """Import minijs.config with a stand-in for the generated module that records each class
    it is asked to install methods on (so a stale or missing module does not stop this)."""
    sys.path.insert(0, str(ROOT))
    import minijs  # the package itself, once, as everywhere else

    names = ("minijs.config", "minijs.config_methods")
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    recorded: list[tuple[type, bool, Declared]] = []
    stand_in = types.ModuleType("minijs.config_methods")
    stand_in.install = (  # type: ignore[attr-defined]
        lambda cls, frozen, declared: recorded.append((cls, frozen, declared)))
    sys.modules["minijs.config_methods"] = stand_in
    minijs.config_methods = stand_in  # (what `from minijs import config_methods` reads)
    try:
        importlib.import_module("minijs.config")
    finally:  # a process that had them keeps its own (a test runs --check in-process)
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        for name in names:
            attr = name.rpartition(".")[2]
            if name in saved:
                setattr(minijs, attr, saved[name])
            elif hasattr(minijs, attr):
                delattr(minijs, attr)
    if not recorded:
        raise SystemExit("minijs.config declared no classes through config_methods.install")
    return recorded


def generate(classes: list[tuple[type, bool, Declared]]) -> str:
    parts = [HEADER]
    table = []
    for cls, frozen, declared in classes:
        parts.append("\n\n" + class_source(cls, frozen, declared))
        maker = f"_{snake(cls.__qualname__)}_methods"
        table.append(f"    {cls.__qualname__!r}: ({frozen!r}, (\n"
                     + "".join(f"        {entry!r},\n" for entry in shape(cls, declared))
                     + f"    ), {maker}),")
    parts.append("\n\n#: class name -> (frozen, ((field, default kind), ...), method maker)\n")
    parts.append("_CLASSES: dict[str, tuple[bool, tuple[tuple[str, str], ...], Any]] = {\n")
    parts.append("\n".join(table) + "\n}\n")
    parts.append(FOOTER)
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="exit 1 when the generated module on disk is out of date")
    args = p.parse_args(argv)
    text = generate(load())
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    if args.check:
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run "
                  "python scripts/gen_config_methods.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
