"""The two real MkDocs-style trees that use `pymdownx.snippets`, built from copies: every
include the site's configuration can expand is expanded in the bundle, and the ones it
cannot (files left out of the copy) are findings at their lines, not crashes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import REAL_SITES, shared_data
from markdown_it import MarkdownIt

from handbook_build import load_config
from handbook_build.pipeline import build

MARKER = re.compile(r"^[ \t]*;*-+8<-+")
"""A line that pymdownx.snippets would take for an include (or escaped include)."""
HANDBOOK = """\
  - handbook:
      library: {library}
      version: 1.0.0
      vocab:
        kind: [guide]
      rules: {{HB209: warn, HB401: warn, HB402: warn, HB501: warn, HB511: warn}}
"""
"""The trees' docs are long and not written for Handbook; only includes are looked at."""


def adopted(tree: str, config: str, docs_dir: str, target: Path) -> Path:
    """A copy of a real tree with frontmatter on every page and a `handbook` entry in a
    mkdocs.yml holding the tree's configuration (`config`)."""
    root = target / tree
    shutil.copytree(shared_data(REAL_SITES / tree), root)
    for page in sorted((root / docs_dir).rglob("*.md")):
        rel = page.relative_to(root / docs_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue  # a snippets folder, not pages
        doc_id = re.sub(
            r"[^a-z0-9.]+", "-", rel.with_suffix("").as_posix().lower().replace("/", ".")
        )
        title = json.dumps(rel.stem)
        front = f"---\nid: {doc_id}\ntitle: {title}\nkind: guide\nsummary: {title}\n---\n"
        page.write_text(front + page.read_text(encoding="utf-8"), encoding="utf-8")
    text = (REAL_SITES / tree / config).read_text(encoding="utf-8")
    entry = HANDBOOK.format(library=tree)
    text = (
        text.replace("\nplugins:\n", f"\nplugins:\n{entry}")
        if "\nplugins:\n" in text
        else f"{text}\nplugins:\n{entry}"
    )
    (root / "mkdocs.yml").write_text(text, encoding="utf-8")
    return root / "mkdocs.yml"


def contents(bundle: Path) -> dict[str, str]:
    """Each doc's content file, by its source path."""
    catalog = json.loads((bundle / "catalog.json").read_text(encoding="utf-8"))
    return {
        d["source"]: (bundle / d["content"]).read_text(encoding="utf-8") for d in catalog["docs"]
    }


def includes_outside_fences(markdown: str) -> list[str]:
    fenced: set[int] = set()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "fence" and token.map:
            fenced.update(range(*token.map))
    return [
        line
        for n, line in enumerate(markdown.split("\n"))
        if n not in fenced and MARKER.match(line)
    ]


def test_mkdocs_site(tmp_path: Path) -> None:
    """Snippets with the default base path (the config's folder): the plugin events
    diagram is included; CONTRIBUTING.md is not in the copy, which is a finding."""
    config = adopted("mkdocs", "mkdocs.yml", "docs", tmp_path)
    built = build(load_config(config), tmp_path / "bundle", None)
    assert [str(f) for f in built.findings if f.code == "HB511"] == [
        'about/contributing.md:7:1: HB511 (warning) `--8<-- "CONTRIBUTING.md"` is not '
        "expanded: Snippet at path 'CONTRIBUTING.md' could not be found; fix the include, "
        "or add the file or section it names"
    ]
    docs = contents(tmp_path / "bundle")
    svg = (REAL_SITES / "mkdocs" / "docs" / "img" / "plugin-events.svg").read_text(encoding="utf-8")
    page = docs["dev-guide/plugins.md"]
    drawn = [line for line in svg.strip().splitlines() if not line.lstrip().startswith("<!--")]
    at = page.index(drawn[0])  # the diagram, line by line in order; its comments left out
    for line in drawn:
        at = page.index(line, at)
    assert "<!--" not in page
    assert {s: found for s, text in docs.items() if (found := includes_outside_fences(text))} == {}


def test_pymdown_extensions_site(tmp_path: Path) -> None:
    """Configured by zensical.yml (its markdown_extensions taken whole, `!!python` tags
    and all): base paths that are files, `auto_append` on every page, pages that include
    LICENSE.md and SECURITY.md, and a page that documents the syntax in fences."""
    config = adopted("pymdown-extensions", "zensical.yml", "docs/src/markdown", tmp_path)
    built = build(load_config(config), tmp_path / "bundle", None)
    assert [f for f in built.findings if f.code == "HB511"] == []
    docs = contents(tmp_path / "bundle")
    assert len(docs) == 49
    license_text = (REAL_SITES / "pymdown-extensions" / "LICENSE.md").read_text(encoding="utf-8")
    assert license_text.splitlines()[2] in docs["about/license.md"]
    refs = "[_b64]: https://github.com/facelessuser/pymdown-extensions/blob/master/pymdownx/b64.py"
    assert all(refs in text for text in docs.values())  # auto_append: refs.md and its includes
    assert {s: found for s, text in docs.items() if (found := includes_outside_fences(text))} == {}
    assert '```\n--8<-- "filename.ext"\n```' in docs["extensions/snippets.md"]  # escaped, in fences
