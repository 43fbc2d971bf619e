"""docs/architecture.md matches the tree: every module of ``minijs/`` is on its floor table, and
every ``Class.attribute`` its text names exists (a rename that leaves the page behind fails)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "minijs"


#: Classes of other libraries the page names.
EXTERNAL = {"SortedList"}


def _classes() -> dict[str, set[str]]:
    """Every class defined in minijs, with the names its body defines or its methods assign
    on ``self`` (several classes may share a name: their names are pooled)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            names = found.setdefault(node.name, set())
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                    names.add(item.attr)
                elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                    names.add(item.id)
    return found


def test_every_module_is_on_the_floor_table() -> None:
    text = PAGE.read_text()
    table = text.split("## Floors", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("|")]
    listed = {name for row in rows if len(row) > 3
              for name in re.findall(r"`([a-z_/]+\.py)`", row[2])}
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    # a package is named by its modules (its __init__.py need not be listed)
    required = {m for m in modules if not m.endswith("/__init__.py")}
    assert required - listed == set(), "modules missing from docs/architecture.md's floors"
    assert listed - modules == set(), "docs/architecture.md names modules that do not exist"


def test_named_methods_exist() -> None:
    classes = _classes()
    text = PAGE.read_text()
    named = set(re.findall(r"`([A-Z][A-Za-z]+)\.([a-z_][a-z_0-9]*)`", text))
    assert len(named) > 30  # the walks name the functions they go through
    missing = sorted(f"{cls}.{attr}" for cls, attr in named
                     if cls in classes and attr not in classes[cls])
    unknown = sorted(cls for cls, _ in named if cls not in classes and cls not in EXTERNAL)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
    assert not unknown, f"docs/architecture.md names classes that do not exist: {unknown}"


def test_the_walks_cover_a_pull_request_and_retention_on_ack() -> None:
    text = PAGE.read_text()
    assert "## Walk 3: a pull request arriving" in text
    assert "Retention on ack" in text
