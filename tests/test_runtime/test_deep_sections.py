"""Every heading is addressable (issue 26): `get` reads a `###` (or deeper) section by
title or anchor, a search hit names the deepest heading its passage is under, an unknown
section gets suggestions, and a reader from before subsections still reads the bundle.

Title lookups: a `##` section of that title first, else the first heading of that title
in page order; the answer lists the anchors of the others (`same_title`), which are
read by anchor. A prefix names a section when one `##` section starts with it, else when
one heading of any level does.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, REAL_SITES, MakeLibrary, run_cli, shared_data
from lunr.index import Index

from handbook import Library
from handbook.bundle.catalog import DocEntry
from handbook.handlers.snapshot import find_section
from handbook.search.file_format import MAGIC
from handbook.search.index import SearchIndex
from handbook.search.query import parse
from handbook.search.retriever import LexicalRetriever
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parents[2]
DOC = "guide.colors"
COLORS = """\
---
id: guide.colors
title: Colors
kind: guide
summary: How the theme's colors are set.
---
# Colors

Intro words.

## Configuration

Config intro.

### Color palette toggle

Toggle words (zebra).

#### Toggle icon

The icon (okapi).

### Primary color

Primary words (ibex).

### Example

First example (gecko).

## Usage

Use words (lemur).

### Example

Second example (tapir).

### Configuration

A subsection titled like a section (quokka).
"""


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("deep-lib")
    (root / "docs").mkdir()
    (root / "docs" / "colors.md").write_text(COLORS, encoding="utf-8")
    (root / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: deep\n"
        "      version: 1.0.0\n",
        encoding="utf-8",
    )
    out = root / "bundle"
    build(load_config(root / "mkdocs.yml"), out, KEY)
    return out


@pytest.fixture(scope="module")
def lib(bundle_path: Path) -> Library:
    return Library.open(bundle_path, [PUBLIC])


@pytest.mark.parametrize(
    "wanted",
    [
        "Color palette toggle",
        "color-palette-toggle",
        "### Color palette toggle",
        "COLOR PALETTE TOGGLE",
    ],
)
def test_a_subsection_is_read_by_title_or_anchor(lib: Library, wanted: str) -> None:
    got = lib.get(DOC, section=wanted)
    assert got["found"] is True, got
    assert got["section"] == {
        "title": "Color palette toggle",
        "anchor": "color-palette-toggle",
        "level": 3,
    }
    assert got["content"].startswith("### Color palette toggle\n\nToggle words (zebra).")
    assert "#### Toggle icon" in got["content"]  # its own subsections come with it
    assert "### Primary color" not in got["content"]


def test_a_section_read_by_title_still_holds_its_subsections(lib: Library) -> None:
    got = lib.get(DOC, section="Configuration")
    assert got["section"]["anchor"] == "configuration" and got["section"]["level"] == 2
    assert got["content"].startswith("## Configuration\n")
    assert "### Color palette toggle" in got["content"] and "### Example" in got["content"]
    assert "## Usage" not in got["content"]
    assert got["section"]["same_title"] == ["configuration_1"]  # the `###` under Usage


def test_duplicate_titles_pick_the_first_and_name_the_others(lib: Library) -> None:
    first = lib.get(DOC, section="Example")
    assert first["section"]["anchor"] == "example" and "(gecko)" in first["content"]
    assert first["section"]["same_title"] == ["example_1"]
    second = lib.get(DOC, section="example_1")
    assert "(tapir)" in second["content"] and "same_title" not in second["section"]
    deep = lib.get(DOC, section="configuration_1")
    assert deep["section"]["level"] == 3 and "(quokka)" in deep["content"]


def test_a_prefix_prefers_the_one_section_then_the_one_heading(lib: Library) -> None:
    assert lib.get(DOC, section="Usa")["section"]["anchor"] == "usage"
    assert lib.get(DOC, section="Prim")["section"]["anchor"] == "primary-color"
    # "Conf" starts one `##` section (and one `###`): the section
    assert lib.get(DOC, section="Conf")["section"]["anchor"] == "configuration"
    # "Exam" starts two `###` headings and no `##` one: ambiguous, refused with both
    miss = lib.get(DOC, section="Exam")
    assert miss["found"] is False and miss["error"]["code"] == "unknown_section"
    assert miss["suggestions"][0] == "Example"


def test_an_unknown_section_gets_close_titles_and_anchors(lib: Library) -> None:
    miss = lib.get(DOC, section="Colour palete toggle")
    assert miss["found"] is False and miss["error"]["code"] == "unknown_section"
    assert miss["suggestions"][0] == "Color palette toggle"
    assert len(miss["suggestions"]) <= 5
    assert [s["anchor"] for s in miss["sections"]] == ["configuration", "usage"]  # `##` only
    nothing = lib.get(DOC, section="zzzz qqqq")
    assert nothing["found"] is False and nothing["suggestions"] == []


def test_the_doc_lists_its_subsections_with_their_section(lib: Library) -> None:
    got = lib.get(DOC)
    assert [s["anchor"] for s in got["sections"]] == ["configuration", "usage"]
    assert [(s["anchor"], s["level"], s["within"]) for s in got["subsections"]] == [
        ("color-palette-toggle", 3, "configuration"),
        ("toggle-icon", 4, "configuration"),
        ("primary-color", 3, "configuration"),
        ("example", 3, "configuration"),
        ("example_1", 3, "usage"),
        ("configuration_1", 3, "usage"),
    ]
    listed = lib.list()["docs"][0]
    assert [s["anchor"] for s in listed["sections"]] == ["configuration", "usage"]


@pytest.mark.parametrize(
    ("query", "title", "anchor"),
    [
        ("zebra", "Color palette toggle", "color-palette-toggle"),
        ("okapi", "Toggle icon", "toggle-icon"),
        ("lemur", "Usage", "usage"),
        ("tapir", "Example", "example_1"),
    ],
)
def test_a_hit_names_the_deepest_heading_and_get_reads_it(
    lib: Library, query: str, title: str, anchor: str
) -> None:
    hit = lib.search(query)["hits"][0]
    assert (hit["section"], hit["anchor"]) == (title, anchor)
    got = lib.get(hit["id"], section=hit["anchor"])
    assert got["found"] is True and f"({query})" in got["content"]


def test_a_long_section_is_several_passages(lib: Library) -> None:
    """Words of two subsections of one `##` section are two hits, not one."""
    hits = lib.search("zebra ibex")["hits"]
    assert {h["anchor"] for h in hits} == {"color-palette-toggle", "primary-color"}


def test_ask_grounds_in_the_subsection(lib: Library) -> None:
    answer = lib.ask("okapi")
    assert answer["evidence_state"] == "grounded"
    assert answer["sources"][0]["anchor"] == "toggle-icon"


def test_collect_takes_a_matched_subsection_once(lib: Library) -> None:
    """When only parts fit, a matched `##` section and a matched subsection inside it
    are one piece."""
    whole = len(lib.get(DOC)["content"].encode())
    got = lib.collect(query="zebra lemur config", max_bytes=whole - 1)
    item = got["items"][0]
    assert item["whole"] is False
    assert item["content"].count("Toggle words (zebra)") == 1


def test_scores_are_lunr_scores_over_index_json(lib: Library) -> None:
    """The finer entries are still a lunr index: the runtime ranks them as lunr.py does."""
    data = json.loads(gzip.decompress(lib.bundle.read("index.json.gz")))
    data["invertedIndex"].sort(key=lambda item: item[0])  # lunr.py loads code-point order
    reference = Index.load(data)
    retriever = lib.snapshot.retriever
    for query in ["zebra", "example", "words", "color*", "configuration", "toggle icon"]:
        expected = [(r["ref"], round(r["score"], 6)) for r in reference.search(query)]
        _, hits = retriever.rank(parse(query))
        ours = []
        for hit in hits:
            p = retriever.passage(hit.entry)
            ours.append((p.doc_id + (f"#{p.anchor}" * bool(p.anchor)), round(hit.score, 6)))
        assert ours == expected, query


# -- a reader from before subsections -------------------------------------------------------


def _without_sub_arrays(data: bytes) -> bytes:
    """search.bin as a reader sees it that knows no `entry_sub_` arrays."""
    length = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + length])
    header["arrays"] = {k: v for k, v in header["arrays"].items() if "entry_sub_" not in k}
    # (the docs' `entry_sub_` arrays and the attached files' `resource_entry_sub_` ones)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-(len(MAGIC) + 8 + len(text)) % 8)
    return data[:12] + len(text).to_bytes(4, "little") + text + data[16 + length :]


def test_an_older_reader_gets_the_section_that_holds_each_hit(lib: Library) -> None:
    """What a reader that knows neither `subsections` nor the `entry_sub_` arrays sees:
    every entry names a `##` section it can find in `sections` (or the text before the
    first), and that section's bytes hold the entry's."""
    older = LexicalRetriever(SearchIndex(_without_sub_arrays(lib.bundle.read("search.bin"))))
    docs: list[DocEntry] = [d._replace(subsections=()) for d in lib.bundle.catalog.docs]
    for entry in range(older.index.entries):
        passage = older.passage(entry)
        doc = docs[passage.doc]
        if not passage.anchor:
            first = doc.sections[0].start if doc.sections else doc.bytes
            assert passage.end <= first
            continue
        section = find_section(doc.sections, passage.anchor)
        assert section is not None, passage
        assert section.start <= passage.start <= passage.end <= section.end


def test_the_fields_an_older_reader_needs_are_unchanged(bundle_path: Path) -> None:
    """`sections` holds exactly the `##` headings, with the same keys as ever."""
    catalog = json.loads((bundle_path / "catalog.json").read_bytes())
    entry = catalog["docs"][0]
    assert [(s["title"], s["level"]) for s in entry["sections"]] == [
        ("Configuration", 2),
        ("Usage", 2),
    ]
    assert all(
        set(s) == {"title", "anchor", "level", "start", "end", "chars"} for s in entry["sections"]
    )


BEFORE_SUBSECTIONS = "fa8ce23"
"""The last commit whose runtime knew only `##` sections: a handbook/v1 reader."""
OLD_READER = """
import json, sys
from pathlib import Path
import handbook
from handbook import FormatError, Library
try:
    Library.open(Path(sys.argv[1]), [sys.argv[2]])
    refused = None
except FormatError as exc:
    refused = str(exc)
print(json.dumps({"file": handbook.__file__, "refused": refused}))
"""


def test_the_runtime_from_before_subsections_refuses_the_new_major_version(
    bundle_path: Path, tmp_path: Path
) -> None:
    """The real previous reader (from git history), in its own process. Subsections were
    additive in handbook/v1, and that reader read such bundles (this test showed it until
    handbook/v2); a handbook/v2 bundle (issue 29: content no longer listed in the
    manifest) it must refuse, naming both versions, rather than misread."""
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{BEFORE_SUBSECTIONS}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if known.returncode != 0:
        pytest.skip(
            f"needs commit {BEFORE_SUBSECTIONS} in the clone's history (a shallow clone lacks it)"
        )
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", BEFORE_SUBSECTIONS, "runtime"],
        capture_output=True,
        check=True,
    ).stdout
    (tmp_path / "old.tar").write_bytes(archive)
    subprocess.run(["tar", "-xf", str(tmp_path / "old.tar"), "-C", str(tmp_path)], check=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "runtime")}
    run = subprocess.run(
        [sys.executable, "-c", OLD_READER, str(bundle_path), PUBLIC],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out: dict[str, Any] = json.loads(run.stdout)
    assert out["file"].startswith(str(tmp_path))  # the old runtime, not this one
    assert out["refused"] is not None
    assert "'handbook/v2'" in out["refused"] and "'handbook/v1'" in out["refused"]


# -- bounds -------------------------------------------------------------------------------------


def test_many_subsections_leave_room_for_content(make_library: MakeLibrary, tmp_path: Path) -> None:
    """A doc of 3,000 `###` headings: at most 1,000 are listed in the catalog, and a
    bounded answer drops subsections from its list before any `##` section."""
    body = "## Top\n\n" + "".join(f"### h{n}\n\nword{n}\n\n" for n in range(3000)) + "## End\n\nx\n"
    head = "---\nid: big.one\ntitle: Big\nkind: guide\nsummary: Many headings.\n---\n"
    limits = {"body_warn_chars": 1_000_000, "body_max_chars": 1_000_000}
    config = make_library({"big.md": head + body}, limits=limits)
    build(load_config(config), tmp_path / "bundle", KEY)
    lib = Library.open(tmp_path / "bundle", [PUBLIC], max_response_chars=4000)
    doc = lib.bundle.catalog.docs[0]
    assert len(doc.subsections) == 1000
    got = lib.get("big.one")
    assert got["found"] is True and len(json.dumps(got, ensure_ascii=False)) <= 4000
    assert [s["anchor"] for s in got["sections"]] == ["top", "end"]
    assert got["subsections_omitted"] > 0 and "sections_omitted" not in got
    assert lib.get("big.one", section="h998")["content"].startswith("### h998\n")
    last = lib.get("big.one", section="h999")  # the last one listed runs to the end
    assert last["found"] is True and last["truncated"] is True
    assert lib.search("word2500")["hits"][0]["anchor"] == "h999"
    assert lib.get("big.one", section="h1500")["found"] is False


# -- a real page ----------------------------------------------------------------------------


def test_a_subsection_of_a_real_page_is_read_by_title(tmp_path: Path) -> None:
    """mkdocs' own configuration page, adopted as it stands: `### edit_uri_template`
    (inside "Project information") is read by its title."""
    site = shared_data(REAL_SITES / "mkdocs")
    copy = tmp_path / "mkdocs"
    shutil.copytree(site, copy)
    run = run_cli("init", "--adopt", str(copy), "--install-from", "handbook==0.1.0")
    assert run.exit_code == 0, run.stderr
    build(load_config(copy), tmp_path / "bundle", KEY)
    lib = Library.open(tmp_path / "bundle", [PUBLIC])
    doc = next(d for d in lib.bundle.catalog.docs if d.source == "user-guide/configuration.md")
    got = lib.get(doc.id, section="edit_uri_template")
    assert got["found"] is True, got.get("suggestions")
    assert got["section"]["level"] == 3
    assert got["content"].startswith("### edit_uri_template\n")
    assert "### site_description" not in got["content"]
    assert lib.get(doc.id, section="edit_uri")["section"]["anchor"] == "edit_uri"


# -- a markdown file attached to a folder doc ---------------------------------------------

SKILL = """\
---
id: skill.kit
title: Kit
kind: skill
summary: A kit with a reference.
---
# Kit

## Use

Read the reference.
"""
REFERENCE = """\
# Reference

## Exception codes

Codes (zanzibar).

### Illegal address

Answer single registers (numbat).

### Illegal address

Twice the same title (wombat).
"""


def test_a_subsection_of_an_attached_file_is_read_and_found(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    files = {"kit/SKILL.md": SKILL, "kit/references/codes.md": REFERENCE}
    config = make_library(files, vocab={"kind": ["skill"]})
    build(load_config(config), tmp_path / "bundle", KEY)
    lib = Library.open(tmp_path / "bundle", [PUBLIC])
    path = "references/codes.md"
    got = lib.resource("skill.kit", path, section="Illegal address")
    assert (
        got["found"] is True and "(numbat)" in got["content"] and "(wombat)" not in got["content"]
    )
    assert got["section"]["same_title"] == ["illegal-address_1"]
    assert [s["within"] for s in got["subsections"]] == ["exception-codes"] * 2
    hit = lib.search("wombat")["hits"][0]
    assert (hit["resource"], hit["anchor"]) == (path, "illegal-address_1")
    assert "(wombat)" in lib.resource("skill.kit", path, section=hit["anchor"])["content"]
    whole = lib.resource("skill.kit", path, section="Exception codes")["content"]
    assert "(numbat)" in whole and "(wombat)" in whole  # the section holds its subsections
    older = LexicalRetriever(SearchIndex(_without_sub_arrays(lib.bundle.read("search.bin"))))
    named = {older.passage(e).anchor for e in range(older.index.entries)}
    assert "illegal-address_1" not in named and "exception-codes" in named


def test_the_cli_lists_subsections_and_reads_one(bundle_path: Path) -> None:
    key = ["--bundle", str(bundle_path), "--key", PUBLIC]
    whole = run_cli("get", DOC, *key)
    assert whole.exit_code == 0
    assert "subsections: Color palette toggle, Toggle icon, Primary color" in whole.stdout
    part = run_cli("get", DOC, "--section", "Toggle icon", *key)
    assert part.exit_code == 0 and "okapi" in part.stdout and "zebra" not in part.stdout
    miss = run_cli("get", DOC, "--section", "Toggle ikon", *key)
    assert miss.exit_code != 0 and "suggestions: Toggle icon" in miss.stderr
