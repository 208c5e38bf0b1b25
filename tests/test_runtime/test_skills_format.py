"""Docs as Agent Skills: names that keep to the Skills grammar and stay unique, SKILL.md
frontmatter that every YAML reader takes back exactly, and refusals for what cannot be a
skill. The files themselves are tested through `handbook export skills`
(test_plugins/test_export_skills.py) and `handbook serve` (test_skills_serving.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from handbook.bundle.catalog import Catalog, DocEntry, LibraryInfo, Resource
from handbook.errors import SkillsError
from handbook.skills.export import MAX_NAME, is_skill_name, skill_name, skills
from handbook.skills.skill_md import quoted, skill_md


def doc(doc_id: str, **fields: Any) -> DocEntry:
    values: dict[str, Any] = {
        "id": doc_id,
        "kind": "guide",
        "title": "T",
        "summary": "S.",
        "verified": "unverified",
        "keywords": (),
        "aliases": (),
        "meta": {},
        "revision": "0" * 64,
        "content": "content/" + "0" * 64 + ".md",
        "bytes": 0,
        "chars": 0,
        "url": "",
        "source": "",
    }
    return DocEntry(**{**values, **fields})


def bundle(*docs: DocEntry, default_lang: str | None = None) -> Any:
    """What `skills` reads of a bundle: its catalog."""
    info = LibraryInfo("lib", "1.0.0", "2026-01-01T00:00:00Z", default_lang=default_lang)
    return SimpleNamespace(catalog=Catalog(info, tuple(docs)))


def names(*docs: DocEntry, default_lang: str | None = None) -> list[str]:
    return list(skills({"lib": bundle(*docs, default_lang=default_lang)}))


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("pdf-processing", True),
        ("a1-b2-c3", True),
        ("x" * MAX_NAME, True),
        ("x" * (MAX_NAME + 1), False),
        ("", False),
        ("-pdf", False),
        ("pdf-", False),
        ("pdf--processing", False),
        ("PDF-Processing", False),
        ("pdf_processing", False),
        ("pdf.processing", False),
        ("pdf processing", False),
        ("écrire", False),
    ],
)
def test_the_skills_name_grammar(name: str, valid: bool) -> None:
    assert is_skill_name(name) is valid


@pytest.mark.parametrize(
    ("doc_id", "lang", "name"),
    [
        ("device.acme.ac200", None, "device-acme-ac200"),
        ("skill.modbus-scan", None, "skill-modbus-scan"),
        ("guide.first_steps", None, "guide-first-steps"),
        ("a_-.b", None, "a-b"),  # a run of separators is one hyphen
        ("notes_", None, "notes"),  # none at the end
        ("guide.intro", "de", "guide-intro-de"),
        ("guide.intro", "pt-BR", "guide-intro-pt-br"),
    ],
)
def test_an_id_maps_to_a_valid_name(doc_id: str, lang: str | None, name: str) -> None:
    assert skill_name(doc_id, lang) == name
    assert is_skill_name(name)


def test_a_long_id_keeps_its_start_and_a_hash() -> None:
    long_id = "manual." + ".".join(["section"] * 12)
    name = skill_name(long_id)
    assert len(name) <= MAX_NAME and is_skill_name(name)
    assert name.startswith("manual-section-section-")
    assert re.fullmatch(r"[0-9a-f]{8}", name[-8:])
    assert skill_name(long_id + "-x") != name  # the same start, another hash


def test_docs_become_skills_in_name_order_languages_apart() -> None:
    docs = (
        doc("guide.b"),
        doc("guide.a", meta={"lang": "en"}),
        doc("guide.a", meta={"lang": "de"}),
    )
    chosen = skills({"lib": bundle(*docs, default_lang="en")})
    assert list(chosen) == ["guide-a", "guide-a-de", "guide-b"]
    assert [(s.doc.id, s.doc.meta.get("lang")) for s in chosen.values()] == [
        ("guide.a", "en"),
        ("guide.a", "de"),
        ("guide.b", None),
    ]


def test_several_libraries_prefix_their_names() -> None:
    chosen = skills({"plant": bundle(doc("guide.about")), "fleet": bundle(doc("guide.about"))})
    assert list(chosen) == ["fleet-guide-about", "plant-guide-about"]


def test_a_kind_filter_keeps_those_docs() -> None:
    chosen = skills({"lib": bundle(doc("a"), doc("b", kind="device"))}, kinds={"device"})
    assert list(chosen) == ["b"]


def test_collisions_are_refused_all_at_once() -> None:
    with pytest.raises(SkillsError) as refused:
        names(doc("a.b"), doc("a_b"), doc("a-b"), doc("c"))
    assert str(refused.value) == (
        "cannot be written as Agent Skills: "
        "docs 'a.b' and 'a_b' both map to the skill name 'a-b'; "
        "docs 'a.b' and 'a-b' both map to the skill name 'a-b'"
    )


def test_an_id_without_a_name_is_refused() -> None:
    with pytest.raises(SkillsError, match=r"doc id '\.\.\.' gives no valid skill name \(''\)$"):
        names(doc("..."))  # a signed catalog is not held to the id grammar


def resources(*paths: str) -> tuple[Resource, ...]:
    return tuple(Resource(path, "0" * 64, 1, "text/plain") for path in paths)


@pytest.mark.parametrize(
    ("paths", "problem"),
    [
        (["../up.txt"], "'../up.txt', which has an empty, '.' or '..' segment"),
        (["/etc/passwd"], "'/etc/passwd', which is empty or absolute"),
        (["a\\b"], "'a\\\\b', which holds a backslash, colon or control character"),
        (["Skill.MD"], "'Skill.MD', which would replace its SKILL.md"),
        (["SKILL.md/x"], "'SKILL.md/x', which is a file and a folder at once"),
        (
            ["notes.txt", "NOTES.txt"],
            "'notes.txt', which differs from another attached file only by case",
        ),
        (["data", "data/x.csv"], "'data', which is a file and a folder at once"),
    ],
)
def test_unsafe_attached_paths_are_refused(paths: Sequence[str], problem: str) -> None:
    """A verified bundle holds none of these; the export checks again before writing."""
    with pytest.raises(SkillsError) as refused:
        names(doc("folder", resources=resources(*paths)))
    assert str(refused.value).startswith(
        f"cannot be written as Agent Skills: doc 'folder' attaches {problem}"
    )


@given(st.text())
def test_quoted_text_reads_back_unchanged(text: str) -> None:
    assert yaml.safe_load(f"key: {quoted(text)}\n") == {"key": text}


@pytest.mark.parametrize(
    "text", ["a\x85b", "a\u2028b\u2029", "\ufeffx", "del\x7f", "\ud800", '\t\n\r"\\']
)
def test_quoted_escapes_what_yaml_would_not_keep(text: str) -> None:
    line = quoted(text)
    assert not set(line) & set("\x85\u2028\u2029\ufeff\x7f\ud800\n\t")
    assert yaml.safe_load(f"key: {line}\n") == {"key": text}


RICH_SKILL_MD = """\
---
name: "tool-scan"
description: "Scan: \\"quoted\\" — and #1."
license: "Apache-2.0"
compatibility: "Needs network access"
allowed-tools: ["Bash(git:*)", "Read"]
metadata:
  "Odd Key": "x"
  author: "ops"
  handbook-aliases: "[\\"Scanner\\"]"
  handbook-id: "tool.scan"
  handbook-json-fields: "[\\"aliases\\", \\"keywords\\", \\"limits\\", \\"retries\\", \\"strict\\"]"
  handbook-keywords: "[\\"scan\\", \\"ports\\"]"
  handbook-kind: "tool"
  handbook-limits: "{\\"max\\": 3}"
  handbook-retries: "3"
  handbook-strict: "true"
  handbook-title: "Ölpumpe\\nscan"
  handbook-vendor: "Acme"
  handbook-verified: "verified"
  "yes": "y"
---
# Body
"""


def test_a_skill_md_promotes_what_fits_and_keeps_the_rest_in_metadata() -> None:
    rich = doc(
        "tool.scan",
        kind="tool",
        title="Ölpumpe\nscan",
        summary='Scan: "quoted" — and #1.',
        verified="verified",
        keywords=("scan", "ports"),
        aliases=("Scanner",),
        meta={
            "license": "Apache-2.0",
            "compatibility": "Needs network access",
            "allowed_tools": ["Bash(git:*)", "Read"],
            "metadata": {"author": "ops", "Odd Key": "x", "yes": "y"},
            "vendor": "Acme",
            "retries": 3,
            "strict": True,
            "limits": {"max": 3},
        },
    )
    text = skill_md(rich, "tool-scan", b"# Body\n").decode("utf-8")
    assert text == RICH_SKILL_MD
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["metadata"]["handbook-title"] == "Ölpumpe\nscan"
    assert set(front["metadata"]) >= {"Odd Key", "yes"}  # keys, not booleans


def test_fields_that_do_not_fit_stay_in_metadata() -> None:
    odd = doc(
        "x",
        meta={
            "compatibility": "c" * 501,
            "license": "",
            "allowed_tools": [1, 2],
            "metadata": {"handbook-id": "forged"},
        },
    )
    front = yaml.safe_load(skill_md(odd, "x", b"").decode().split("---\n")[1])
    assert set(front) == {"name", "description", "metadata"}
    meta = front["metadata"]
    assert meta["handbook-id"] == "x"
    assert meta["handbook-compatibility"] == "c" * 501
    assert meta["handbook-license"] == ""
    assert meta["handbook-allowed_tools"] == "[1, 2]"
    assert meta["handbook-metadata"] == '{"handbook-id": "forged"}'


@pytest.mark.parametrize("summary", ["", "s" * 1025])
def test_a_summary_that_cannot_be_a_description_is_refused(summary: str) -> None:
    with pytest.raises(SkillsError) as refused:
        names(doc("x", summary=summary))
    assert str(refused.value) == (
        f"cannot be written as Agent Skills: doc 'x' has a summary of {len(summary):,} "
        "characters; a skill's description holds 1 to 1,024"
    )
