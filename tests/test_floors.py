"""The floors of ``minijs/``: which module may import which.

Each module stands on a floor (the table below; the longest matching prefix decides). A module
may import modules of its own floor or of floors below; an import running back up fails, and so
does an import circle between modules, counting imports made inside functions and those made only
for type checking (``if TYPE_CHECKING:``): a lower floor that needs something of a higher one
declares what it needs (a ``Protocol``) and receives it.

The graph is read from the source with :mod:`ast`; nothing is imported.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minijs"

#: (module prefix, floor), lowest first. A prefix names a module or a package.
FLOORS: list[tuple[str, int]] = [
    # 0: the wire, time, chance, logging, credentials, the simulated network and Raft, the
    # config file's syntax
    ("minijs.protocol", 0), ("minijs.clock", 0), ("minijs.virtualclock", 0),
    ("minijs.clockerror", 0),
    ("minijs.randomness", 0), ("minijs.log", 0),
    ("minijs.eventloop", 0), ("minijs.cluster", 0), ("minijs.confsyntax", 0),
    ("minijs.configerror", 0),
    ("minijs.auth", 0), ("minijs.signals", 0), ("minijs.healthcheck", 0),
    ("minijs.spark", 0),
    # 1: what a server is configured with
    ("minijs.config", 1), ("minijs.config_methods", 1), ("minijs.authconfig", 1),
    ("minijs.tlsconfig", 1),
    ("minijs.wsconfig", 1), ("minijs.routeconfig", 1), ("minijs.loopclock", 1),
    # 2: connections, subjects, routing, accounts, TLS and WebSocket listeners, routes
    ("minijs.core", 2),
    # 3: what reads config files, operator mode (accounts from JWTs), JetStream, monitoring
    ("minijs.operatormode", 3), ("minijs.confauth", 3), ("minijs.listenconf", 3),
    ("minijs.confparse", 3),
    ("minijs.jetstream", 3), ("minijs.monitor", 3), ("minijs.monitor_page", 3),
    ("minijs.preload", 3),
    # 4: the control plane, reload, the management helpers, the cluster of in-process nodes
    ("minijs.control", 4), ("minijs.reload", 4), ("minijs.manage", 4),
    ("minijs.clustering", 4),
    # 5: the server
    ("minijs.server", 5),
    # 6: the front doors
    ("minijs.testing", 6), ("minijs", 6), ("minijs.cli", 7), ("minijs.__main__", 7),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def floor_of(module: str) -> int:
    best, floor = "", None
    for prefix, n in FLOORS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best, floor = prefix, n
    assert floor is not None, f"{module} stands on no floor: add it to FLOORS"
    return floor


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports() -> dict[str, set[str]]:
    """module -> the minijs modules it imports (anywhere in it)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target == "minijs" or target.startswith("minijs."):
                    resolved = _resolve(target)
                    if resolved and resolved != module:
                        graph[module].add(resolved)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(MODULES):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_every_module_stands_on_a_floor() -> None:
    for module in MODULES:
        floor_of(module)


def test_no_import_runs_back_up() -> None:
    upward = sorted(f"{m} (floor {floor_of(m)}) imports {t} (floor {floor_of(t)})"
                    for m, targets in imports().items() for t in targets
                    if floor_of(t) > floor_of(m))
    assert not upward, "imports running back up:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    found = circles(imports())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_can_fail() -> None:
    """The checks see a circle and an upward import when there is one."""
    graph = {"minijs.clock": {"minijs.server"}, "minijs.server": {"minijs.clock"}}
    assert circles(graph) == [["minijs.clock", "minijs.server"]]
    assert floor_of("minijs.server") > floor_of("minijs.clock")
    assert "minijs.server" in imports().get("minijs.cli", set()) or any(
        "minijs.server" in targets for targets in imports().values())
