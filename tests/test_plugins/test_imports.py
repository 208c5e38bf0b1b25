"""Only `mkdocs_plugin` needs MkDocs to import (DESIGN §2: the build does not depend on
the site generator; `read.rendering`, which drives an adopted site's own plugins, imports
it inside its functions), and importing the package or one of its modules pulls in no
more than that module needs. Checked in a fresh interpreter where MkDocs cannot be imported at all."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import handbook_build

BLOCKED = ("mkdocs", "material", "properdocs")
MODULES = {
    ".".join(p.relative_to(d).with_suffix("").parts).removesuffix(".__init__")
    for d in handbook_build.__path__
    for p in Path(d).rglob("*.py")
} - {"__init__"}
"""Every module and folder of the build side, dotted below `handbook_build`."""

PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, Blocked())

    def ours():
        return sorted(m for m in sys.modules if m.startswith("handbook_build."))

    import handbook_build
    after_package = ours()
    import handbook_build.write.pages, handbook_build.config.settings
    after_leaves = ours()
    from handbook_build import check, load_config
    loaded, refused = [], {}
    for info in pkgutil.walk_packages(handbook_build.__path__, "handbook_build."):
        name = info.name.removeprefix("handbook_build.")
        try:
            importlib.import_module(info.name)
            loaded.append(name)
        except ImportError as exc:
            refused[name] = str(exc)
    print(json.dumps({
        "after_package": after_package,
        "after_leaves": after_leaves,
        "exports": [check.__module__, load_config.__module__],
        "loaded": loaded,
        "refused": refused,
        "blocked_in_modules": sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED),
    }))
    """
)


@pytest.fixture(scope="module")
def probe() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", f"BLOCKED = {BLOCKED!r}\n{PROBE}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_build_module_but_the_plugin_imports_without_mkdocs(probe: dict[str, Any]) -> None:
    assert set(probe["loaded"]) == MODULES - {"mkdocs_plugin"}
    assert list(probe["refused"]) == ["mkdocs_plugin"]
    assert probe["refused"]["mkdocs_plugin"].startswith("blocked: mkdocs")
    assert probe["blocked_in_modules"] == []


def test_the_package_and_its_leaves_load_only_what_they_need(probe: dict[str, Any]) -> None:
    result = probe
    assert result["after_package"] == []
    assert "handbook_build.pipeline" not in result["after_leaves"]
    assert "handbook_build.write.emit" not in result["after_leaves"]
    assert {"handbook_build.write.pages", "handbook_build.config.settings"} <= set(
        result["after_leaves"]
    )
    assert result["exports"] == ["handbook_build.pipeline", "handbook_build.config.settings"]
