"""Docs in several languages: one id per language, the default language as fallback
(said, never silent), list and search kept to a language, and per-language counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KEY, ROOT, MakeLibrary, run_cli

from handbook import Library
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "fleet-procedures" / "mkdocs.yml"


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Library:
    out = tmp_path_factory.mktemp("lang") / "bundle"
    build(load_config(EXAMPLE), out, KEY)
    return Library.open(out, allow_unsigned=True)


def test_the_default_language_is_served_without_lang(lib: Library) -> None:
    answer = lib.get("procedure.damage-report")
    assert answer["found"] and answer["lang"] == "en"
    assert answer["title"] == "Reporting damage to a vehicle"
    assert "fallback" not in answer


def test_a_language_is_served_when_asked(lib: Library) -> None:
    answer = lib.get("procedure.damage-report", lang="de")
    assert answer["lang"] == "de" and answer["title"] == "Schäden an einem Fahrzeug melden"
    assert (
        answer["metadata"]["version"] == "1.3"
        and answer["metadata"]["effective_date"] == "2026-03-01"
    )
    assert (
        "Werkstatt"
        in lib.get("procedure.damage-report", lang="de", section="3. Übergabe an die Werkstatt")[
            "content"
        ]
    )


def test_a_missing_language_falls_back_and_says_so(lib: Library) -> None:
    answer = lib.get("procedure.low-battery", lang="de")
    assert answer["found"] and answer["lang"] == "en"
    assert answer["fallback"] is True and answer["requested_lang"] == "de"
    assert "no de version" in answer["hint"]


def test_list_and_search_keep_to_a_language(lib: Library) -> None:
    german = lib.list(lang="de")
    assert [d["id"] for d in german["docs"]] == ["procedure.damage-report"]
    assert {d["id"] for d in lib.list(lang="en")["docs"]} == {
        "fleet.overview",
        "procedure.damage-report",
        "procedure.low-battery",
        "procedure.key-handover",
    }
    assert "the languages are de, en" in lib.list(lang="fr")["hint"]
    hits = lib.search("Werkstatt", lang="de")["hits"]
    assert hits and all(h["id"] == "procedure.damage-report" for h in hits)
    assert lib.search("Werkstatt", lang="en")["count"] == 0
    assert lib.search("workshop", lang="de")["count"] == 0
    assert lib.search("workshop", lang="en")["count"] > 0
    assert "the languages are de, en" in lib.search("x", lang="fr")["hint"]


def test_status_counts_per_language_apart(lib: Library) -> None:
    languages = lib.status()["languages"]
    assert languages == {
        "de": {"documents": 1, "indexed": 1, "verified": 0},
        "en": {"documents": 4, "indexed": 4, "verified": 2},
    }


def test_ids_are_unique_per_language(make_library: MakeLibrary) -> None:
    doc = "---\nid: proc.a\ntitle: A\nkind: guide\nsummary: s\n{lang}---\n# A\n\n## S\n\nText.\n"
    fine = make_library(
        {"en.md": doc.format(lang="lang: en\n"), "de.md": doc.format(lang="lang: de\n")},
        default_lang="en",
    )
    assert run_cli("check", "--config", str(fine)).exit_code == 0
    clash = make_library(
        {"a.md": doc.format(lang=""), "b.md": doc.format(lang="lang: en\n")}, default_lang="en"
    )
    run = run_cli("check", "--config", str(clash))
    assert run.exit_code == 1 and "HB304" in run.stdout and "in language en" in run.stdout


def test_a_bad_language_tag_is_reported(make_library: MakeLibrary, tmp_path: Path) -> None:
    doc = "---\nid: proc.a\ntitle: A\nkind: guide\nsummary: s\nlang: English\n---\n# A\n\n## S\n\nText.\n"
    run = run_cli("check", "--config", str(make_library({"a.md": doc})))
    assert run.exit_code == 1 and "HB302" in run.stdout and "language tag" in run.stdout
