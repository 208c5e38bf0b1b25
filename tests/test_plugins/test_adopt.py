"""Adopting a site that was not written for Handbook: missing fields derived by
documented rules, each a notice (listed by --explain, never failing a check), content
never refused as it stands, derived ids kept unique."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

from handbook import Library
from handbook_build import load_config
from handbook_build.checks.adopt import first_sentence, id_from_path, shorten
from handbook_build.pipeline import build

ADOPTED = FIXTURES / "adopted"
REGENERATE = "handbook check --explain --config tests/fixtures/adopted/mkdocs.yml > tests/fixtures/adopted/expected.txt"


def test_the_adopted_fixture_gives_exactly_the_expected_notices() -> None:
    run = run_cli("check", "--explain", "--config", str(ADOPTED / "mkdocs.yml"))
    assert run.exit_code == 0
    assert run.stdout == (ADOPTED / "expected.txt").read_text(), f"regenerate with: {REGENERATE}"


def test_notices_are_counted_not_listed_without_explain() -> None:
    run = run_cli("check", "--config", str(ADOPTED / "mkdocs.yml"))
    assert run.exit_code == 0
    assert "HB60" not in run.stdout.replace("HB605", "")
    assert (
        run.lines[-1]
        == "6 files checked (6 docs): 0 errors, 1 warning, 24 notices (--explain lists them)"
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("index.md", "index"),
        ("README.md", "index"),
        ("user-guide/installation.md", "user-guide.installation"),
        ("user-guide/index.md", "user-guide"),
        ("user-guide/README.md", "user-guide"),
        ("skills/scan/SKILL.md", "skills.scan"),
        ("About/Release Notes.md", "about.release-notes"),
        ("a/__init__ notes!.md", "a.init__-notes"),
        ("x/.hidden.md", "x.hidden"),
        ("日本語.md", "page"),
    ],
)
def test_ids_from_paths(path: str, expected: str) -> None:
    assert id_from_path(path) == expected


def test_summaries_are_cut_at_a_sentence_or_a_word() -> None:
    first = "A first sentence long enough to stand for the page, more than a third of the limit."
    assert shorten(first + " " + "word " * 80, 250) == first
    assert shorten("word " * 80, 30).endswith("…") and len(shorten("word " * 80, 30)) <= 30
    assert shorten("fits", 250) == "fits"
    assert first_sentence("Does a thing. Use it when x.") == "Does a thing."


def test_an_adopted_site_builds_with_every_page_a_doc(tmp_path: Path) -> None:
    bundle = build(load_config(ADOPTED / "mkdocs.yml"), tmp_path / "bundle", None).bundle
    lib = Library.open(bundle.path, allow_unsigned=True)
    ids = [d["id"] for d in lib.list(limit=100)["docs"]]
    assert ids == [
        "guides.empty-page",
        "guides.no-heading",
        "guides.no-heading-2",
        "index",
        "reference.api",
        "scan-registers",
    ]
    skill = lib.get("scan-registers")
    assert skill["metadata"]["kind"] == "skill" and skill["metadata"]["license"] == "Apache-2.0"
    assert skill["metadata"]["summary"] == "Scans a Modbus device for readable registers."
    assert skill["metadata"]["description"].endswith("answers on port 502.")
    assert lib.get("guides.no-heading-2")["title"] == "Without a heading"


def test_content_is_never_refused_as_it_stands(make_library: object, tmp_path: Path) -> None:
    docs = tmp_path / "site" / "docs"
    docs.mkdir(parents=True)
    (docs / "huge.md").write_text("# Huge\n\n" + "Many words here. " * 2000)
    (docs / "bad.md").write_text("# Bad\n\n```json\n{not json}\n```\n")
    (docs / "fm.md").write_text("---\ntitle: 1.5\n---\n# Float title\n\nSome text here.\n")
    config = tmp_path / "site" / "mkdocs.yml"
    config.write_text(
        "site_name: s\nplugins:\n  - handbook:\n      library: s\n      version: 0.1.0\n      adopt: {}\n"
    )
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 0, run.stdout
    assert (
        "HB402 (warning)" in run.stdout
        and "HB501 (warning)" in run.stdout
        and "HB209 (warning)" in run.stdout
    )
    strict = run_cli("check", "--strict", "--config", str(config))
    assert strict.exit_code == 1  # --strict keeps its meaning: warnings fail
