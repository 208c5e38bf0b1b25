"""The shape of the house: dependencies point one way, with no cycles between modules.

Module-level imports are read from the source (imports inside functions are lazy on
purpose), those under `TYPE_CHECKING` included, for the runtime (`handbook`) and the
build side (`handbook_build`)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = {
    "handbook": ROOT / "runtime" / "handbook",
    "handbook_build": ROOT / "plugins" / "handbook_build",
}


def _module_imports(package: str, path: Path) -> set[str]:
    """The modules of our packages that `path` depends on: imported when it is imported,
    or for its type checking (a cycle through `TYPE_CHECKING` is still a cycle of design)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    statements = [
        n
        for top in tree.body
        for n in (ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top])
    ]
    out: set[str] = set()
    for node in statements:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] in PACKAGES)
        elif isinstance(node, ast.ImportFrom):
            base = (
                f"{package}.{node.module}"
                if node.level and node.module
                else package
                if node.level
                else node.module or ""
            )
            top = base.split(".")[0]
            if top not in PACKAGES:
                continue
            if base in PACKAGES:  # `from . import x` or `from handbook import x`: x may be a module
                out.update(
                    f"{base}.{a.name}" if (PACKAGES[base] / f"{a.name}.py").exists() else base
                    for a in node.names
                )
            else:
                out.add(base)
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            graph[name] = {m for m in _module_imports(package, path) if m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == node.rpartition(".")[0]:
                continue  # a submodule importing its package's __init__ is Python's own order
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    graph = _graph()
    assert len(graph) > 40
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_runtime_never_imports_the_build_side() -> None:
    graph = _graph()
    for module, imports in graph.items():
        if module.startswith("handbook") and not module.startswith("handbook_build"):
            assert not {m for m in imports if m.startswith("handbook_build")}, module


def test_a_cycle_is_found() -> None:
    """The detector itself: a two-module loop is reported."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
