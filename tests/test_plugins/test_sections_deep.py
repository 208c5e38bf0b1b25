"""Every heading is addressable (issue 26): what the build makes of `###` and deeper.

The catalog keeps `sections` the `##` list it always was and adds `subsections`, a doc
key of its own; the search entries follow the headings (each passage runs from one
heading to the next of any level), and still name the `##` section that holds them in
the arrays every reader knows, the subsection in new ones. Headings are markdown-it's:
a `###` in a fence is text, a setext underline makes a `##`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import KEY, MakeLibrary

from handbook.bundle.catalog import SectionEntry, passages
from handbook.bundle.local import Bundle
from handbook.search.index import SearchIndex
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.read.parse import Doc, parse, sections_of, subsections
from handbook_build.read.source import Text
from handbook_build.write.sections import MAX_SUBSECTIONS, doc_subsections

HEAD = "---\nid: guide.colors\ntitle: Colors\nkind: guide\nsummary: How colors are set.\n---\n"
BODY = """\
# Colors

Intro words.

## Configuration

Config intro (aardvark).

### Color palette toggle

Toggle words (zebra).

```md
### Not a heading, a fence
```

#### Deep detail

Deeper words (okapi).

### Example

First example (ibex).

## Usage

Use words.

### Example

Second example (gecko).

Setext section
--------------

Under a setext heading (lemur).
"""


def _doc(body: str = BODY) -> Doc:
    doc, findings = parse(Text("colors.md", HEAD + body))
    assert doc is not None, findings
    return doc


def test_subsections_are_the_deeper_headings_in_page_order() -> None:
    doc = _doc()
    assert [(s.title, s.level) for s in doc.sections] == [
        ("Configuration", 2),
        ("Usage", 2),
        ("Setext section", 2),  # a setext `---` underline is a `##`
    ]
    found = subsections(doc)
    assert [(s.title, s.anchor, s.level) for s in found] == [
        ("Color palette toggle", "color-palette-toggle", 3),
        ("Deep detail", "deep-detail", 4),
        ("Example", "example", 3),
        ("Example", "example_1", 3),  # the same title twice: MkDocs' anchors differ
    ]
    body = doc.body
    toggle = found[0]
    text = body[toggle.start : toggle.end]
    assert text.startswith("### Color palette toggle\n")
    assert "#### Deep detail" in text and "### Example" not in text  # its own subsections only
    assert "Not a heading" in text  # the fenced `###` is text of the section


def test_a_fenced_or_indented_heading_is_no_section() -> None:
    body = "## Real\n\n```\n### fenced\n```\n\n    ### indented code\n\n~~~\n#### tilde\n~~~\n"
    assert [s.title for s in sections_of(body)] == ["Real"]
    assert subsections(_doc(body)) == ()


def test_setext_level_one_is_neither_section_nor_subsection() -> None:
    doc = _doc("Title\n=====\n\nText.\n\nPart\n----\n\nMore.\n")
    assert [s.title for s in doc.sections] == ["Part"]
    assert subsections(doc) == ()


def _span(start: int, end: int, level: int = 3) -> SectionEntry:
    return SectionEntry("t", f"a{start}", level, start, end, end - start)


def test_passages_cut_at_every_heading_and_never_cross_a_section() -> None:
    # ## at 10 (to 100), ### at 20 (to 60), #### at 30 (to 60), ### at 60 (to 100), ## at 100
    sections = [_span(10, 100, 2), _span(100, 150, 2)]
    deeper = [_span(20, 60), _span(30, 60, 4), _span(60, 100)]
    first, parts = passages(sections, deeper, 150)
    assert first == 10
    assert [(a, b, s.start, p.start if p else None) for a, b, s, p in parts] == [
        (10, 20, 10, 10),
        (20, 30, 20, 10),
        (30, 60, 30, 10),
        (60, 100, 60, 10),
        (100, 150, 100, 100),
    ]
    # a subsection before any `##` names none; one running past its `##` (a `#` heading
    # between, or the last one kept past `MAX_SUBSECTIONS`) is cut at the section's end
    _, parts = passages([_span(50, 80, 2), _span(120, 150, 2)], [_span(0, 50), _span(60, 150)], 150)
    assert [(a, b, p.start if p else None) for a, b, _, p in parts] == [
        (0, 50, None),
        (50, 60, 50),
        (60, 80, 50),
        (120, 150, 120),
    ]
    assert passages([], [], 42) == (42, [])


def test_a_hostile_doc_of_ten_thousand_headings_stays_bounded() -> None:
    body = "## Top\n\n" + "".join(f"### h{n}\n\nword{n}\n\n" for n in range(10_000))
    doc = _doc(body)
    found = doc_subsections(doc)
    assert len(found) == MAX_SUBSECTIONS
    last = found[-1]
    assert last.title == f"h{MAX_SUBSECTIONS - 1}"
    assert last.end == len(doc.body)  # the rest stays readable
    _, parts = passages(doc.sections, found, len(doc.body))
    assert len(parts) == MAX_SUBSECTIONS + 1
    assert parts[-1][1] == len(doc.body)  # and searchable


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("deep")
    (root / "docs").mkdir()
    (root / "docs" / "colors.md").write_text(HEAD + BODY, encoding="utf-8")
    plain = "---\nid: guide.plain\ntitle: Plain\nkind: guide\nsummary: No subsections.\n---\n"
    (root / "docs" / "plain.md").write_text(plain + "# Plain\n\n## Only\n\nText.\n")
    (root / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: deep\n"
        "      version: 1.0.0\n",
        encoding="utf-8",
    )
    return build(load_config(root / "mkdocs.yml"), root / "bundle", KEY).bundle


def _entry(bundle: Bundle, doc_id: str) -> dict[str, object]:
    catalog = json.loads(bundle.read("catalog.json"))
    entry: dict[str, object] = next(d for d in catalog["docs"] if d["id"] == doc_id)
    return entry


def test_the_catalog_keeps_sections_and_adds_subsections(bundle: Bundle) -> None:
    entry = _entry(bundle, "guide.colors")
    assert [s["title"] for s in entry["sections"]] == [
        "Configuration",
        "Usage",
        "Setext section",
    ]
    assert {s["level"] for s in entry["sections"]} == {2}
    content = bundle.read(str(entry["content"]))
    for s in entry["subsections"]:
        text = content[s["start"] : s["end"]].decode("utf-8")
        assert text.startswith("#" * s["level"] + " " + s["title"]) and len(text) == s["chars"]
    assert set(entry["subsections"][0]) == set(SectionEntry._fields)
    assert "subsections" not in _entry(bundle, "guide.plain")  # written only when there are


def test_index_entries_follow_the_headings(bundle: Bundle) -> None:
    index = json.loads(gzip.decompress(bundle.read("index.json.gz")))
    refs = [name.split("/", 1)[1] for name, _ in index["fieldVectors"] if name.startswith("body/")]
    assert [r for r in refs if r.startswith("guide.colors")] == [
        "guide.colors",
        "guide.colors#configuration",
        "guide.colors#color-palette-toggle",
        "guide.colors#deep-detail",
        "guide.colors#example",
        "guide.colors#usage",
        "guide.colors#example_1",
        "guide.colors#setext-section",
    ]
    words = {t for t, _ in index["invertedIndex"]}
    assert {"zebra", "okapi", "ibex", "gecko", "lemur"} <= words


def test_search_entries_name_their_section_and_subsection(bundle: Bundle) -> None:
    """`entry_anchor` names the `##` section that holds an entry (what every reader can
    get), `entry_sub_anchor` the subsection whose text it is ("" for a section's own)."""
    index = SearchIndex(bundle.read("search.bin"))
    assert index.subsections
    outer, inner = index.strings("entry_anchor"), index.strings("entry_sub_anchor")
    colors = bundle.catalog.docs.index(
        next(d for d in bundle.catalog.docs if d.id == "guide.colors")
    )
    named = [(outer[e], inner[e]) for e in range(index.entries) if index.entry_doc[e] == colors]
    assert named == [
        ("", ""),
        ("configuration", ""),
        ("configuration", "color-palette-toggle"),
        ("configuration", "deep-detail"),
        ("configuration", "example"),
        ("usage", ""),
        ("usage", "example_1"),
        ("setext-section", ""),
    ]


def test_a_library_without_subsections_writes_no_new_arrays(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    """Bundles of docs with `##` headings only are what they were: no `subsections` key,
    no `entry_sub_` arrays."""
    config = make_library({"a.md": HEAD + "# A\n\n## One\n\nText.\n"})
    built = build(load_config(config), tmp_path / "bundle", KEY).bundle
    assert not SearchIndex(built.read("search.bin")).subsections
    assert b"subsections" not in built.read("catalog.json")
    assert b"entry_sub_" not in built.read("search.bin")[:4096]
