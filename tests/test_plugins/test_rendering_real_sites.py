"""Two real sites whose pages are made by plugins and at render time, adopted as they
stand (copies; the data is never edited): every page is a doc, and the bundle holds the
text people see. mkdocstrings (Zensical): the API reference that `::: mkdocstrings`
renders, the credits a markdown-exec script prints, the changelog a `--8<--` include
brings in. mkdocs-macros-plugin's site: the changelog `[% include-markdown %]` brings in,
and the Jinja examples of a site without the macros plugin left as written. Generated
text is compared with what the same code gives in this same environment."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REAL_SITES, run_cli, shared_data
from markdown_it import MarkdownIt

from handbook_build import load_config
from handbook_build.pipeline import BuildResult, build


def adopt(tree: str, site: str, target: Path) -> Path:
    shared_data(REAL_SITES / tree)
    shutil.copytree(REAL_SITES / tree, target / tree)
    run = run_cli("init", "--adopt", str(target / site), "--install-from", "handbook==0.1.0")
    assert run.exit_code == 0, run.stderr
    return target / site


def contents(bundle: Path) -> dict[str, str]:
    catalog = json.loads((bundle / "catalog.json").read_text(encoding="utf-8"))
    return {
        d["source"]: (bundle / d["content"]).read_text(encoding="utf-8") for d in catalog["docs"]
    }


def outside_code(markdown: str) -> str:
    lines = markdown.split("\n")
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block") and token.map:
            for n in range(*token.map):
                lines[n] = ""
    return "\n".join(lines)


def pages(docs: Path) -> set[str]:
    return {
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(docs).parts)
    }


@pytest.fixture(scope="module")
def mkdocstrings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildResult]:
    site = adopt("mkdocstrings", "mkdocstrings", tmp_path_factory.mktemp("sites"))
    return site, build(load_config(site), site / "bundle-out", None)


@pytest.fixture(scope="module")
def macros(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildResult]:
    site = adopt(
        "mkdocs-macros-plugin", "mkdocs-macros-plugin/webdoc", tmp_path_factory.mktemp("m")
    )
    return site, build(load_config(site), site / "bundle-out", None)


def test_mkdocstrings_every_page_is_a_doc(mkdocstrings: tuple[Path, BuildResult]) -> None:
    site, built = mkdocstrings
    docs = contents(built.bundle.path)
    assert set(docs) == pages(site / "docs") and len(docs) == 12
    for source, text in docs.items():
        plain = outside_code(text)
        assert not re.search(r"^(#+ *)?::: ", plain, re.M), source
        assert 'exec="yes"' not in text and not re.search(r"^-+8<-+", plain, re.M), source


def test_mkdocstrings_api_reference_holds_the_docstrings(
    mkdocstrings: tuple[Path, BuildResult],
) -> None:
    """Every public object's docstring summary, as griffe reads it from `src/`."""
    import griffe

    site, built = mkdocstrings
    api = contents(built.bundle.path)["reference/api.md"]
    package = griffe.load("mkdocstrings", search_paths=[site / "src"], resolve_aliases=True)
    summaries = {
        name: package[name].docstring.value.split("\n")[0]
        for name in package.exports or ()
        if package[name].docstring is not None
    }
    plain = {n: s for n, s in summaries.items() if not re.search(r"[_*`\[\]\\<>]", s)}
    assert len(plain) >= 10
    assert {n: s for n, s in plain.items() if s not in api} == {}
    assert "Automatic documentation from sources, for MkDocs." in api
    assert "\n## MkdocstringsPlugin\n" in api and "class MkdocstringsPlugin" not in api


def test_mkdocstrings_credits_are_the_scripts_output(
    mkdocstrings: tuple[Path, BuildResult],
) -> None:
    """The page runs `scripts/gen_credits.py`; run here in the site's folder, in this
    same environment, it names the same packages."""
    site, built = mkdocstrings
    credits = contents(built.bundle.path)["credits.md"]
    done = subprocess.run(
        [sys.executable, "scripts/gen_credits.py"],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    links = set(re.findall(r"\(https://pypi\.org/project/[^)]+\)", done.stdout))
    assert len(links) >= 10
    assert {link for link in links if link not in credits} == set()


def test_mkdocstrings_changelog_is_included(mkdocstrings: tuple[Path, BuildResult]) -> None:
    site, built = mkdocstrings
    changelog = contents(built.bundle.path)["changelog.md"]
    releases = re.findall(r"^## \[.+$", (site / "CHANGELOG.md").read_text(), re.M)
    assert len(releases) > 20
    assert [r for r in releases if r not in changelog] == []


def test_mkdocstrings_what_cannot_be_had_offline_is_reported(
    mkdocstrings: tuple[Path, BuildResult],
) -> None:
    """Zensical's own extensions are not MkDocs'; inventories are not fetched."""
    _, built = mkdocstrings
    codes = {(f.path, f.code) for f in built.findings if f.code in ("HB512", "HB513")}
    assert codes == {("zensical.toml", "HB512"), ("zensical.toml", "HB513")}
    assert not [f for f in built.findings if f.code == "HB511"]


def test_macros_site_every_page_is_a_doc(macros: tuple[Path, BuildResult]) -> None:
    site, built = macros
    assert set(contents(built.bundle.path)) == pages(site / "docs")
    assert [f for f in built.findings if f.code in ("HB511", "HB512")] == []


def test_macros_site_changelog_holds_the_changelog(macros: tuple[Path, BuildResult]) -> None:
    site, built = macros
    changelog = contents(built.bundle.path)["changelog.md"]
    assert "include-markdown" not in changelog
    written = (site.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## .+$", written, re.M)
    assert len(releases) > 20
    assert [r for r in releases if r not in changelog] == []


def test_macros_site_jinja_examples_stay_literal(macros: tuple[Path, BuildResult]) -> None:
    """This site does not run the macros plugin: every Jinja line is shown as written."""
    site, built = macros
    docs = contents(built.bundle.path)
    jinja = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")
    checked = 0
    for source, text in docs.items():
        if source == "changelog.md":
            continue
        for line in (site / "docs" / source).read_text(encoding="utf-8").split("\n"):
            if jinja.search(line):
                assert line in text, (source, line)
                checked += 1
    assert checked > 50
