"""`import handbook` must stay light: agents embed it in small processes."""

from __future__ import annotations

import json
import subprocess
import sys

import handbook

BUILD_SIDE = ["mkdocs", "markdown_it", "markdown", "yaml", "click", "handbook_build", "jinja2"]


def test_runtime_imports_without_build_side_libraries() -> None:
    code = "import sys, json, handbook; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    loaded = set(json.loads(out))
    assert not {m for m in loaded if m.split(".")[0] in BUILD_SIDE}


def test_public_surface_is_declared() -> None:
    assert "Library" in handbook.__all__ and "BundleError" in handbook.__all__
    for name in handbook.__all__:
        assert hasattr(handbook, name)
