"""`mkdocs build` of a library with includes: the bundle holds the expanded text, and each
page is rendered from the body as written, so the site's own snippets extension expands
it once (the bundle's text again would append `auto_append` twice and expand the
includes a page shows escaped)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import yaml
from conftest import KEY_PEM
from site_helpers import mkdocs_build

GUIDE = """\
---
id: guide
title: Guide
kind: guide
summary: A page with includes.
---
# Guide

--8<-- "intro.md"

Write an include like this:

```text
;--8<-- "intro.md"
```
"""


def test_pages_and_bundle_each_expand_includes_once(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(GUIDE)
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "intro.md").write_text("The intro paragraph.\n")
    (tmp_path / "parts" / "footer.md").write_text("The footer paragraph.\n")
    config = {
        "site_name": "Includes",
        "markdown_extensions": [
            {"pymdownx.snippets": {"base_path": ["parts"], "auto_append": ["footer.md"]}}
        ],
        "plugins": [{"handbook": {"library": "inc", "version": "1.0.0"}}],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    mkdocs_build(tmp_path, key_pem=KEY_PEM)
    page = (tmp_path / "site" / "guide" / "index.html").read_text()
    assert page.count("The intro paragraph.") == 1
    assert page.count("The footer paragraph.") == 1
    assert html.escape('--8<-- "intro.md"') in page
    bundle = tmp_path / "build" / "bundle"
    (entry,) = json.loads((bundle / "catalog.json").read_text())["docs"]
    content = (bundle / entry["content"]).read_text()
    assert content == (
        "# Guide\n\nThe intro paragraph.\n\n\nWrite an include like this:\n\n"
        '```text\n--8<-- "intro.md"\n```\n\n\n\nThe footer paragraph.\n\n'
    )
