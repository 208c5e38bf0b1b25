"""The README's promises, kept: its Python snippet runs as printed after its first
command (which builds the project's own docs into build/bundle)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT

from handbook_build import load_config
from handbook_build.pipeline import build

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_python_snippet_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snippet = re.search(r"```python\n(.*?)```", README, re.DOTALL)
    assert snippet is not None, "the README shows the Python API"
    # what `mkdocs build` of the project publishes (the same bundle, byte for byte)
    build(load_config(ROOT / "mkdocs.yml"), tmp_path / "build" / "bundle", None)
    monkeypatch.chdir(tmp_path)
    module = ast.parse(snippet.group(1))
    namespace: dict[str, object] = {}
    results = []
    for statement in module.body:
        if isinstance(statement, ast.Expr):  # each shown expression gives something
            value = eval(compile(ast.Expression(statement.value), "README", "eval"), namespace)
            assert value, ast.unparse(statement)
            results.append(value)
        else:
            exec(compile(ast.Module([statement], []), "README", "exec"), namespace)
    assert results, "the snippet shows what the calls answer"
