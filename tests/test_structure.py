"""The shape of the house: folders are ranks, and every import points to a lower rank.

Every import is read from the source, those inside functions and under `TYPE_CHECKING`
included (a lazy import is still a dependency of design). The ranks are the table in
docs/guide/contributing.md; a module with no place in it fails here."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGES = {
    "handbook": ROOT / "runtime" / "handbook",
    "handbook_build": ROOT / "plugins" / "handbook_build",
}
FACADE = 99
"""The package's own `__init__` (its public surface) and the documented compatibility
paths: they may import anything, and nothing inside the package may import them."""

MKDOCS_DRIVERS = {"handbook_build.mkdocs_plugin", "handbook_build.read.rendering"}
"""The only modules that import MkDocs: the plugin, and the driver of a site's own
plugins (docs/guide/contributing.md names both)."""

RANKS = {
    "handbook": {
        "errors": 0, "answers": 0, "bounds": 0, "_version": 0, "terminal_text": 0, "durations": 0,
        "access": 1, "bundle": 1,
        "search": 2, "pedigree": 2, "skills": 2, "tools": 2,
        "handlers": 3, "inbox": 3,
        "libraries": 4,
        "serve": 5,
        "cli": 6,
        "provider": FACADE, "rpc": FACADE, "inbox_records": FACADE, "retriever": FACADE,
        "query": FACADE,
    },
    "handbook_build": {
        "errors": 0, "findings": 0, "rules": 0, "safe_paths": 0, "workers": 0,
        "read": 1,
        "config": 2,
        "checks": 3,
        "write": 4,
        "pipeline": 5,
        "tasks": 6,
        "commands": 7, "mkdocs_plugin": 7,
        "options": FACADE, "snippets": FACADE,
    },
}  # fmt: skip
"""Each top-level module or folder of a package and its rank."""


def modules() -> Iterator[tuple[str, Path]]:
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def _is_module(name: str) -> bool:
    package, *rest = name.split(".")
    folder = PACKAGES[package].joinpath(*rest)
    return folder.with_suffix(".py").exists() or (folder / "__init__.py").exists()


def imports(module: str, path: Path) -> set[str]:
    """The modules of our packages that `path` imports, anywhere in its source."""
    package_of = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] in PACKAGES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package_of.split(".")[: len(package_of.split(".")) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if _is_module(sub) else base)
    return out - {module}


def rank(module: str) -> int:
    package, *rest = module.split(".")
    if not rest:
        return FACADE
    return RANKS[package][rest[0]]


def unit(module: str) -> str:
    """The folder that `module` belongs to; a package's top-level modules of one rank (its
    base: errors, answers, bounds …) are one unit too."""
    package, *rest = module.split(".")
    folder = PACKAGES[package] / rest[0] if rest else PACKAGES[package]
    return f"{package}.{rest[0]}" if folder.is_dir() else f"{package} rank {rank(module)}"


def graph() -> dict[str, set[str]]:
    return {module: imports(module, path) for module, path in modules()}


def test_every_module_has_a_rank() -> None:
    homeless = {
        m for m, _ in modules() if m.count(".") and m.split(".")[1] not in RANKS[m.split(".")[0]]
    }
    assert homeless == set(), "give each a folder of the table (and the contributing guide)"


def test_every_import_points_to_a_lower_rank() -> None:
    """Within a folder, modules import each other freely (no cycles, below); across
    folders only downwards. Nothing imports a facade, and no module imports the
    `__init__` of a package it belongs to (that is the package's public surface, which
    imports nearly everything)."""
    wrong = []
    for module, targets in graph().items():
        for target in targets:
            if rank(module) == FACADE and target.split(".")[0] == module.split(".")[0]:
                continue
            same_package = target.split(".")[0] == module.split(".")[0]
            if same_package and (rank(target) == FACADE or module.startswith(f"{target}.")):
                wrong.append(f"{module} -> {target} (a facade or its own package)")
            elif not same_package:
                continue  # the build side uses the runtime, public surface included
            elif unit(target) != unit(module) and rank(target) >= rank(module):
                wrong.append(f"{module} (rank {rank(module)}) -> {target} (rank {rank(target)})")
    assert wrong == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
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
    found = graph()
    assert len(found) > 100
    assert _cycle(found) is None, " -> ".join(_cycle(found) or [])


def test_the_runtime_never_imports_the_build_side() -> None:
    for module, targets in graph().items():
        if module.split(".")[0] == "handbook":
            assert not {t for t in targets if t.startswith("handbook_build")}, module


def _imports_mkdocs(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        if any(name.split(".")[0] in ("mkdocs", "material", "properdocs") for name in names):
            return True
    return False


def test_only_the_named_modules_import_mkdocs() -> None:
    found = {module for module, path in modules() if _imports_mkdocs(path)}
    assert found == MKDOCS_DRIVERS


def test_a_cycle_is_found() -> None:
    """The detector itself: a two-module loop is reported."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("handbook.serve.http", {"handbook.bundle.layout", "handbook.tools.dispatch"}),
    ],
)
def test_relative_imports_resolve_to_modules(module: str, expected: set[str]) -> None:
    """The reader itself: `from ..bundle import layout` names the module, not the folder."""
    path = dict(modules())[module]
    assert expected <= imports(module, path)


MODULE_LINES = 400
FUNCTION_LINES = 60
TABLES = {"handbook_build.rules", "handbook_build.config.options"}
"""Modules that are mostly one table of data (every rule code and its messages; every
option with its reference text), which may be longer."""


def _oversized() -> set[str]:
    found = set()
    for module, path in modules():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES and module not in TABLES:
            found.add(module)
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and (node.end_lineno or node.lineno) - node.lineno + 1 > FUNCTION_LINES
            ):
                found.add(f"{module}:{node.name}")
    return found


def test_modules_and_functions_stay_small() -> None:
    """Modules at most 400 lines (a table of data aside), functions at most 60."""
    assert _oversized() == set(), "split these (or, for a table of data, say so in TABLES)"


def test_the_contributing_guide_names_every_folder_and_module() -> None:
    """A module with no home in the guide fails: each folder's row names its modules."""
    guide = (ROOT / "docs" / "guide" / "contributing.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`[^`\n]*`", guide))

    def mentioned(name: str) -> bool:
        return any(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", code) for code in named)

    missing = []
    for module, path in modules():
        parts = module.split(".")
        if len(parts) == 1 or (path.name == "__init__.py" and len(parts) > 2):
            continue
        name = parts[-1]
        if not mentioned(name):
            missing.append(module)
    for package, ranks in RANKS.items():
        missing += [f"{package}.{unit}" for unit in ranks if not mentioned(unit)]
    assert missing == []


@pytest.mark.parametrize(
    ("path", "name", "home"),
    [
        ("handbook.provider", "HandbookProvider", "handbook.libraries.provider"),
        ("handbook.rpc", "register_tools", "handbook.serve.rpc"),
        ("handbook.inbox_records", "record_id", "handbook.inbox.records"),
        ("handbook.retriever", "Retriever", "handbook.search.retriever"),
        ("handbook.query", "parse", "handbook.search.query"),
        ("handbook.tools", "TOOLS", "handbook.tools.table"),
        ("handbook_build.options", "OPTIONS", "handbook_build.config.options"),
        ("handbook_build.snippets", "check_json", "handbook_build.checks.snippets"),
    ],
)
def test_the_documented_paths_keep_working(path: str, name: str, home: str) -> None:
    """The paths the docs name still import, and give the very objects of their homes."""
    assert getattr(importlib.import_module(path), name) is getattr(
        importlib.import_module(home), name
    )


def test_a_validator_named_by_its_documented_path_loads() -> None:
    from handbook_build.checks.snippets import check_json
    from handbook_build.config.validators import load

    assert load("handbook_build.snippets:check_json") is check_json
