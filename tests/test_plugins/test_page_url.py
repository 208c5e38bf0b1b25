"""`pages.page_url` is MkDocs' `File.url`, without MkDocs: the same URL for every page of
the example libraries, of the project's docs and of the five real documentation trees, with
and without directory URLs, and for the awkward names MkDocs has rules for."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REAL_SITES, ROOT, shared_data
from mkdocs.structure.files import File
from mkdocs.utils import markdown_extensions

from handbook_build.write.pages import page_url

REAL_ROOTS = (
    "mkdocs/docs",
    "pymdown-extensions/docs/src/markdown",
    "mkdocstrings/docs",
    "mkdocs-macros-plugin/webdoc/docs",
    "agent-skills",
)
"""Each tree's docs root, as its README and configuration name it (agent-skills is a
folder of skills, a library as it stands)."""
OUTSIDE_REAL_ROOTS = {
    "README.md",
    "mkdocs/README.md",
    "pymdown-extensions/LICENSE.md",
    "pymdown-extensions/README.md",
    "pymdown-extensions/SECURITY.md",
    "mkdocstrings/README.md",
    "mkdocstrings/CHANGELOG.md",
    "mkdocstrings/CODE_OF_CONDUCT.md",
    "mkdocstrings/CONTRIBUTING.md",
    "mkdocs-macros-plugin/README.md",
    "mkdocs-macros-plugin/LICENSE.md",
    "mkdocs-macros-plugin/CHANGELOG.md",
}
"""Markdown in the real trees that no site renders as a page (read, if at all, by an
include): every other markdown file there is compared."""

AWKWARD = [
    "index.md",
    "README.md",
    "Readme.md",
    "readme.md",
    "guide.md",
    "a/index.md",
    "a/README.md",
    "a/b/c/deep.md",
    "a/README/index.md",
    "index/index.md",
    "a/b.c.md",
    "a/.hidden.md",
    "über/straße.md",
    "日本語/ドキュメント.md",
    "with space/a file.md",
    "a+b/c&d=e.md",
    "100%/50% off.md",
    "q?/hash#.md",
    "emoji/📘 notes.md",
    "tabs\tand;semicolons.md",
    "x.markdown",
    "README.mdown",
]


def pages(root: Path) -> list[str]:
    """Every markdown file below `root`, as a POSIX path relative to it."""
    assert root.is_dir(), f"{root} is missing"
    found = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith(markdown_extensions)
    )
    assert found, f"no markdown below {root}"
    return found


def trees() -> dict[str, Path]:
    """Each tree compared, by a stable name (the real ones resolved when a test runs, so a
    clone without `../shared` still collects)."""
    found = {f"examples/{p.parent.name}": p for p in sorted(ROOT.glob("examples/*/docs"))}
    assert found, "no example library under examples/*/docs"
    found["docs"] = ROOT / "docs"
    found.update({f"real-sites/{root}": REAL_SITES / root for root in REAL_ROOTS})
    return found


def mkdocs_url(path: str, use_directory_urls: bool) -> str:
    return File(path, "/docs", "/site", use_directory_urls).url


@pytest.mark.parametrize("use_directory_urls", [True, False], ids=["directory-urls", "html-urls"])
@pytest.mark.parametrize("tree", list(trees()))
def test_every_page_of_every_tree(tree: str, use_directory_urls: bool) -> None:
    root = trees()[tree]
    paths = pages(shared_data(root) if tree.startswith("real-sites/") else root)
    differ = [
        (path, page_url(path, use_directory_urls), mkdocs_url(path, use_directory_urls))
        for path in paths
        if page_url(path, use_directory_urls) != mkdocs_url(path, use_directory_urls)
    ]
    assert differ == [], f"{len(differ)} of {len(paths)} pages differ (path, ours, MkDocs')"


def test_the_real_trees_are_compared_whole() -> None:
    shared_data(REAL_SITES)
    every = {p.relative_to(REAL_SITES).as_posix() for p in REAL_SITES.rglob("*.md")}
    compared = {f"{root}/{path}" for root in REAL_ROOTS for path in pages(REAL_SITES / root)}
    assert every - compared == OUTSIDE_REAL_ROOTS
    assert (
        len(compared) >= 19 + 49 + 12 + 1
    )  # mkdocs', pymdown-extensions', mkdocstrings' pages, a skill


@pytest.mark.parametrize("use_directory_urls", [True, False], ids=["directory-urls", "html-urls"])
@pytest.mark.parametrize("path", AWKWARD)
def test_awkward_names(path: str, use_directory_urls: bool) -> None:
    assert page_url(path, use_directory_urls) == mkdocs_url(path, use_directory_urls)


@pytest.mark.parametrize(
    ("path", "directory_url", "html_url"),
    [
        ("index.md", "./", "index.html"),
        ("README.md", "./", "index.html"),
        ("a/README.md", "a/", "a/index.html"),
        ("a/b.md", "a/b/", "a/b.html"),
        ("über/straße.md", "%C3%BCber/stra%C3%9Fe/", "%C3%BCber/stra%C3%9Fe.html"),
        ("with space/a file.md", "with%20space/a%20file/", "with%20space/a%20file.html"),
    ],
)
def test_the_rules_by_example(path: str, directory_url: str, html_url: str) -> None:
    """What the comparison above pins, written out (it would also pass if MkDocs changed
    its rules; these would not)."""
    assert (page_url(path, True), page_url(path, False)) == (directory_url, html_url)
