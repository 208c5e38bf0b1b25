"""Three real documentation trees, adopted as they stand: each gets only the
configuration `handbook init --adopt` writes, then checks without errors, builds a signed
bundle with every page (or skill) a doc, and holds no unexpanded include outside code.
A skills folder also makes the round trip: bundle, export, bundle again, same docs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, REAL_SITES, run_cli, shared_data
from markdown_it import MarkdownIt

from handbook import Library
from handbook_build import load_config
from handbook_build.pipeline import build

INCLUDE_LINE = re.compile(r"^[ \t]*-{1,}8<-{1,}[ \t]*(?:\"|'|$)", re.MULTILINE)
"""A snippets include as the extension reads it: a line of its own (a mention of the
syntax inside a sentence or a code span is prose, not an include)."""

TREES = {"mkdocs": 19, "pymdown-extensions": 49, "agent-skills": 13}
"""Each tree and its docs: every page (pymdown's `.snippets/` are included, not pages);
the 12 skills and the template."""


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A copy of each tree with what `handbook init --adopt` writes, and nothing else."""
    shared_data(REAL_SITES)
    root = tmp_path_factory.mktemp("real-sites")
    copies = {}
    for name in TREES:
        copy = root / name
        shutil.copytree(REAL_SITES / name, copy)
        run = run_cli("init", "--adopt", str(copy), "--install-from", "handbook==0.1.0")
        assert run.exit_code == 0, run.stderr
        copies[name] = copy
    return copies


@pytest.fixture(scope="module")
def bundles(adopted: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bundles")
    return {
        name: build(load_config(site), root / name, KEY).bundle.path
        for name, site in adopted.items()
    }


@pytest.mark.parametrize("name", TREES)
def test_init_adopt_writes_only_configuration(adopted: dict[str, Path], name: str) -> None:
    original = {
        p.relative_to(REAL_SITES / name) for p in (REAL_SITES / name).rglob("*") if p.is_file()
    }
    now = {p.relative_to(adopted[name]) for p in adopted[name].rglob("*") if p.is_file()}
    added = {str(p) for p in now - original}
    assert added <= {"handbook.yml", ".github/workflows/handbook.yml"}
    for rel in original:
        if str(rel) != "mkdocs.yml":
            assert (adopted[name] / rel).read_bytes() == (REAL_SITES / name / rel).read_bytes()


@pytest.mark.parametrize("name", TREES)
def test_the_adopted_tree_checks_without_errors(adopted: dict[str, Path], name: str) -> None:
    run = run_cli("check", "--config", str(adopted[name]))
    assert run.exit_code == 0, run.stdout
    assert f"({TREES[name]} docs): 0 errors" in run.lines[-1]


@pytest.mark.parametrize("name", TREES)
def test_the_bundle_is_signed_with_every_page_a_doc(bundles: dict[str, Path], name: str) -> None:
    library = Library.open(bundles[name], trusted_keys=[PUBLIC])
    assert library.list(limit=100)["count"] == TREES[name]


def _outside_code(markdown: str) -> str:
    """The text of `markdown` that is not in a fence or an indented code block."""
    lines = markdown.splitlines()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block") and token.map:
            for n in range(*token.map):
                lines[n] = ""
    return "\n".join(lines)


@pytest.mark.parametrize("name", TREES)
def test_no_include_is_left_unexpanded(bundles: dict[str, Path], name: str) -> None:
    contents = sorted((bundles[name] / "content").iterdir())
    assert contents
    for path in contents:
        text = _outside_code(path.read_text(encoding="utf-8"))
        assert not INCLUDE_LINE.search(text), f"{path}: {INCLUDE_LINE.search(text)}"


def test_pymdown_pages_carry_what_the_site_appends(bundles: dict[str, Path]) -> None:
    library = Library.open(bundles["pymdown-extensions"], trusted_keys=[PUBLIC])
    licence = library.get("about.license")
    assert "Permission is hereby granted" in licence["content"]  # LICENSE.md, included


def test_skills_round_trip_through_export(
    adopted: dict[str, Path], bundles: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "agent-skills"
    run = run_cli(
        "export", "skills", str(out), "--bundle", str(bundles["agent-skills"]), "--key", PUBLIC
    )
    assert run.exit_code == 0, run.stderr
    again = build(load_config(out), tmp_path / "again", KEY).bundle.path
    before = _docs(bundles["agent-skills"])
    after = _docs(again)
    assert sorted(before) == sorted(after)
    for doc_id, doc in before.items():
        assert after[doc_id] == doc, doc_id


def _docs(bundle: Path) -> dict[str, dict[str, object]]:
    """Each doc's id -> what a round trip keeps: fields, body and attached files (by
    hash); not where its file was, nor its revision (a hash of the file as written)."""
    docs = json.loads((bundle / "catalog.json").read_text(encoding="utf-8"))["docs"]
    return {
        d["id"]: {k: v for k, v in d.items() if k not in ("source", "url", "revision")}
        for d in docs
    }
