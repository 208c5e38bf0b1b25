"""Which validator checks which fence language: the built-ins, and a library's own named
as ``module:function`` in `snippet_validators` (resolved when the configuration is
read, so a name that does not import is a configuration error, not a crash mid-build).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

Problem = str | tuple[int, str] | tuple[int, int, str]
"""A message; a line inside the snippet and a message; or a line, a column, a message."""
Validator = Callable[[str], Sequence[Problem]]

BUILTINS: Mapping[str, str] = {
    "json": "handbook_build.checks.snippets:check_json",
    "yaml": "handbook_build.checks.snippets:check_yaml",
    "yml": "handbook_build.checks.snippets:check_yaml",
    "toml": "handbook_build.checks.snippets:check_toml",
}


def load(ref: str, search_dir: Path | None = None) -> Validator:
    """Import ``module:function``; `search_dir` (the config's folder) is tried too, so a
    library can keep its validators beside its mkdocs.yml. Raises ImportError."""
    module_name, _, attr = ref.partition(":")
    added = search_dir is not None and str(search_dir) not in sys.path
    if added:
        sys.path.insert(0, str(search_dir))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ImportError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    finally:
        if added:
            sys.path.remove(str(search_dir))
    function = getattr(module, attr, None)
    if not callable(function):
        raise ImportError(f"{module_name} has no function {attr}")
    return function  # type: ignore[no-any-return]


def registry(configured: Mapping[str, str], search_dir: Path | None = None) -> dict[str, Validator]:
    """Fence language -> validator: the built-ins, overridden or switched off by config."""
    refs = {**BUILTINS, **configured}
    return {lang: load(ref, search_dir) for lang, ref in refs.items() if ref != "off"}
