"""`import handbook` must stay light: agents embed it in small processes."""

from __future__ import annotations

import inspect
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
    # the network stack comes with the first URL or RemoteLibrary, not with every agent
    assert not loaded & {
        "urllib.request",
        "http.client",
        "handbook.bundle.remote",
        "handbook.bundle.web",
    }


def test_public_surface_is_declared() -> None:
    """`__all__` is exactly what the package exposes: every public name it holds or
    imports when first asked for (not its submodules) is listed, every listed name
    exists, and each comes from the runtime."""
    assert "Library" in handbook.__all__ and "BundleError" in handbook.__all__
    public = {
        name
        for name in dir(handbook)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(handbook, name))
        and name != "annotations"
    }
    assert public == set(handbook.__all__) - {"__version__"}
    for name in handbook.__all__:
        value = getattr(handbook, name)
        if not isinstance(value, str):
            assert value.__module__.startswith("handbook."), name
