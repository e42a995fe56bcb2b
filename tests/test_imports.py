"""The import graph of ``referee/``, ``sdk/`` and ``arena/`` has no cycle and no private name crosses a
module boundary (docs/architecture.md): every ``import``/``from … import`` statement counts, at module
level, inside functions and under ``if TYPE_CHECKING:`` alike, read with :mod:`ast` (nothing imported)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("referee", "sdk", "arena")
GENERATED = ("_pb2.py", "_pb2_grpc.py")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (both dotted module names) at ``line`` of the source's file."""

    source: str
    target: str
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every hand-written module of the three packages: dotted name -> file."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not path.name.endswith(GENERATED) and "node_modules" not in path.parts:
                found[_module_name(path)] = path
    return found


def _absolute(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".") if is_package else source.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(source: str, path: Path, known: dict[str, Path]) -> tuple[list[Edge], list[str]]:
    """The edges from ``source`` to other known modules, and its ``from X import _name`` lines."""
    edges: list[Edge] = []
    private: list[str] = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            edges += [Edge(source, a.name, node.lineno) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(source, path.name == "__init__.py", node)
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                if target in known and target != source:
                    edges.append(Edge(source, target, node.lineno))
                if alias.name.startswith("_") and not alias.name.startswith("__") and base in known:
                    private.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {base} import {alias.name}")
    return edges, private


def _graph() -> tuple[dict[str, list[Edge]], list[str]]:
    known = modules()
    graph: dict[str, list[Edge]] = {}
    private: list[str] = []
    for name, path in known.items():
        edges, bad = imports_of(name, path, known)
        graph[name] = edges
        private += bad
    return graph, private


def cycles(graph: dict[str, list[Edge]]) -> list[list[Edge]]:
    """One cycle (as its edges) per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for e in graph[v]:
            if e.target not in index:
                visit(e.target)
                low[v] = min(low[v], low[e.target])
            elif e.target in on_stack:
                low[v] = min(low[v], index[e.target])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return [_one_cycle(graph, set(c)) for c in components]


def _one_cycle(graph: dict[str, list[Edge]], component: set[str]) -> list[Edge]:
    start = min(component)
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for e in graph[v]:
                if e.target == start:
                    return [*paths[v], e]
                if e.target in component and e.target not in paths:
                    paths[e.target] = [*paths[v], e]
                    nxt.append(e.target)
        frontier = nxt
    return []


def _show(cycle: list[Edge]) -> str:
    return " -> ".join(f"{e.source} (line {e.line})" for e in cycle) + f" -> {cycle[-1].target}"


def test_the_graph_sees_function_level_and_type_checking_imports() -> None:
    graph, _ = _graph()
    targets = {e.target for e in graph["arena.cli.commands"]}
    assert "arena.hosting.bots_build" in targets  # imported inside bots_build_command only
    assert {"referee", "sdk", "arena"} <= set(graph)


def test_no_import_cycles() -> None:
    graph, _ = _graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_show(c) for c in found)


def test_no_private_names_across_modules() -> None:
    _, private = _graph()
    assert not private, "private names imported from another module:\n" + "\n".join(private)


def test_the_cycle_finder_reports_a_cycle() -> None:
    graph = {"a": [Edge("a", "b", 1)], "b": [Edge("b", "c", 2)], "c": [Edge("c", "a", 3)], "d": []}
    assert [_show(c) for c in cycles(graph)] == ["a (line 1) -> b (line 2) -> c (line 3) -> a"]


def rooms_tree(doc: str) -> str:
    """The ``arena/`` tree of docs/architecture.md ("The arena's rooms"): the code block that starts
    with ``arena/``."""
    start = doc.index("```\narena/\n")
    return doc[start : doc.index("```", start + 4)]


def unmapped(root: Path = ROOT) -> list[str]:
    """The arena's modules and rooms the tree of docs/architecture.md does not name (``__init__`` and
    ``__main__`` aside): a file by its name, a room (a folder) as ``name/``."""
    tree = rooms_tree((root / "docs" / "architecture.md").read_text())
    missing = []
    for path in sorted((root / "arena").rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py") and path.name not in tree:
            missing.append(path.relative_to(root).as_posix())
        if path.name == "__init__.py" and path.parent != root / "arena" and f"{path.parent.name}/" not in tree:
            missing.append(path.parent.relative_to(root).as_posix() + "/")
    return missing


def test_the_rooms_map_names_every_arena_module() -> None:
    missing = unmapped()
    assert not missing, "docs/architecture.md's tree of the arena's rooms lacks:\n" + "\n".join(missing)
