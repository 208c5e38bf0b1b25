"""The header card and the catalog page, from catalog records: escaping, placement, links."""

from __future__ import annotations

import string
from html.parser import HTMLParser
from typing import Any

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mkdocs.utils.meta import get_data

from handbook.bundle.catalog import DocEntry, LibraryInfo
from handbook_build.write import pages

LIBRARY = LibraryInfo(
    name="plant-floor",
    version="1.2.0",
    built_at="2026-01-01T00:00:00Z",
    vocab={"kind": ["device", "guide"]},
    list_fields=("vendor", "protocol"),
)


def doc(**changes: object) -> DocEntry:
    base = DocEntry(
        id="device.acme.ac200",
        kind="device",
        title="ACME AC200",
        summary="Register map of the AC200.",
        verified="field_tested",
        keywords=("ac200",),
        aliases=(),
        meta={"vendor": "acme", "protocol": ["modbus", "mqtt"], "version": "2.1"},
        revision="ab" * 32,
        content=f"content/{'cd' * 32}.md",
        bytes=10,
        chars=10,
        url="devices/acme-ac200/",
        source="devices/acme-ac200.md",
    )
    return base._replace(**changes)  # type: ignore[arg-type]


class Text(HTMLParser):
    """The visible text and the tags of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Text:
    parser = Text()
    parser.feed(html)
    return parser


def test_card_shows_kind_id_badge_facts_summary_and_raw_link() -> None:
    card = parsed(pages.header_card(doc(), LIBRARY, "../../bundle/content/x.md"))
    text = " ".join(t.strip() for t in card.text if t.strip())
    for expected in (
        "device",
        "device.acme.ac200",
        "field tested",
        "version",
        "2.1",
        "vendor",
        "acme",
        "protocol",
        "modbus, mqtt",
        "Register map of the AC200.",
    ):
        assert expected in text
    classes = {attrs.get("class") for _, attrs in card.tags}
    assert "hb-badge hb-badge--field_tested" in classes
    buttons = [attrs for tag, attrs in card.tags if tag == "button"]
    assert buttons and buttons[0]["data-copy"] == "device.acme.ac200"
    links = [attrs["href"] for tag, attrs in card.tags if tag == "a"]
    assert links == ["../../bundle/content/x.md"]


def test_card_leaves_out_absent_facts() -> None:
    card = pages.header_card(doc(meta={}), LIBRARY, "x.md")
    assert "hb-facts" not in card


@pytest.mark.parametrize("state", ["verified", "field_tested", "unverified"])
def test_every_state_has_its_own_badge_colour(state: str) -> None:
    assert f"hb-badge--{state}" in pages.badge(state)
    assert f".hb-badge--{state}" in pages.CSS


def test_hostile_values_never_become_markup() -> None:
    evil = '<script>alert(1)</script>" onmouseover="x'
    card = pages.header_card(doc(summary=evil, meta={"vendor": evil}, kind=evil), LIBRARY, "x.md")
    assert "<script>" not in card
    assert 'onmouseover="x' not in card
    tags = {tag for tag, _ in parsed(card).tags}
    assert "script" not in tags


def test_card_goes_right_after_the_title() -> None:
    markdown = "\n# ACME AC200\n\nIntro.\n\n## Registers\n"
    out = pages.insert_card(markdown, "<div>card</div>")
    assert out.index("# ACME AC200") < out.index("<div>card</div>") < out.index("Intro.")
    assert pages.insert_card("Intro first.\n", "<div>card</div>").startswith(
        "<div>card</div>\n\nIntro first."
    )


@pytest.mark.parametrize(
    ("page_url", "expected"),
    [
        ("devices/acme-ac200/", "../../bundle/content/" + "cd" * 32 + ".md"),
        ("devices/acme-ac200.html", "../bundle/content/" + "cd" * 32 + ".md"),
        ("", "bundle/content/" + "cd" * 32 + ".md"),
        ("index.html", "bundle/content/" + "cd" * 32 + ".md"),
    ],
)
def test_raw_url_is_relative_to_the_page(page_url: str, expected: str) -> None:
    assert pages.raw_url(doc(), page_url) == expected


def test_catalog_groups_by_kind_in_vocabulary_order() -> None:
    docs = [
        doc(),
        doc(
            id="guide.start",
            kind="guide",
            title="Start here",
            source="start.md",
            verified="verified",
        ),
        doc(id="note.x", kind="note", title="A note | with a pipe", source="x.md"),
    ]
    text = pages.catalog_markdown(LIBRARY, docs)
    assert text.index("## device") < text.index("## guide") < text.index("## note")
    assert "[ACME AC200](devices/acme-ac200.md)" in text
    assert "hb-badge--verified" in text
    assert "A note &#124; with a pipe" in text  # a pipe would break the table row
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    assert all(line.count("|") == 5 for line in rows)


HOSTILE = (
    '<script>alert(1)</script> "><img src=x onerror=alert(1)> [x](javascript:alert(1)) '
    "{: onclick=alert(1) } `code` *em* ~~del~~ ==mark== ^^ins^^ :smile: @user https://x.example "
    f"(c) --> {string.punctuation}"
)
EXTENSIONS = [
    "tables",
    "attr_list",
    "md_in_html",
    "pymdownx.betterem",
    "pymdownx.caret",
    "pymdownx.mark",
    "pymdownx.tilde",
    "pymdownx.emoji",
    "pymdownx.magiclink",
    "pymdownx.smartsymbols",
    "pymdownx.keys",
    "pymdownx.critic",
]
"""Python-Markdown extensions a Material site turns on, each with syntax of its own."""


def test_catalog_values_read_as_written_whatever_the_extensions() -> None:
    hostile = doc(title=f"T {HOSTILE}", summary=f"S {HOSTILE}\n## forged\n| a | b |", kind=HOSTILE)
    html = markdown.markdown(pages.catalog_markdown(LIBRARY, [hostile]), extensions=EXTENSIONS)
    page = parsed(html)
    assert [attrs for tag, attrs in page.tags if tag not in PAGE_TAGS] == [
        {"href": "llms.txt"},
        {"href": "devices/acme-ac200.md"},
        {"class": "hb-badge hb-badge--field_tested", "title": "verified: field_tested"},
    ]
    text = [t for t in page.text if t.strip()]
    assert f"T {HOSTILE}" in text
    assert f"S {HOSTILE} ## forged | a | b |" in text
    assert HOSTILE in text  # the kind's heading


PAGE_TAGS = {"hr", "h1", "h2", "p", "strong", "table", "thead", "tbody", "tr", "th", "td", "code"}
"""The catalog page's own structure; its frontmatter renders as `<hr>` and text here."""


def test_catalog_links_to_sources_percent_encoded() -> None:
    text = pages.catalog_markdown(LIBRARY, [doc(source="a) b/[x](y).md")])
    assert "](a%29%20b/%5Bx%5D%28y%29.md)" in text


def test_a_doc_page_is_made_from_its_catalog_fields() -> None:
    entry = doc(aliases=("AC-200",), meta={"vendor": "acme", "version": "2.1"})
    assert pages.frontmatter(entry) == {
        "id": "device.acme.ac200",
        "title": "ACME AC200",
        "kind": "device",
        "summary": "Register map of the AC200.",
        "verified": "field_tested",
        "keywords": ["ac200"],
        "aliases": ["AC-200"],
        "vendor": "acme",
        "version": "2.1",
    }
    assert "aliases" not in pages.frontmatter(doc())


def test_frontmatter_values_are_escaped_for_html_everywhere_in_them() -> None:
    meta = {"title": '<b a="1">&', "n": 3, "tags": ["<i>", {"<k>": "'"}], "flag": True, "x": None}
    assert pages.escaped(meta) == {
        "title": "&lt;b a=&quot;1&quot;&gt;&amp;",
        "n": 3,
        "tags": ["&lt;i&gt;", {"&lt;k&gt;": "&#x27;"}],
        "flag": True,
        "x": None,
    }


SCALARS = st.one_of(
    st.text(),
    st.integers(-(2**53), 2**53),
    st.booleans(),
    st.none(),
    st.sampled_from(
        ["---", "...", "--- x", "a\n---\nb", "a\n...\n", "'\"", "- x", "? k", "!tag", "&a *a"]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), st.text())
def test_mkdocs_reads_a_page_source_back_as_it_was_made(meta: dict[str, Any], body: str) -> None:
    """MkDocs' own frontmatter reader ends the block where `page_source` ends it and
    reads every value back, so no field is lost to the body and no body line is taken
    for a field."""
    body = body.replace("\r", "")  # MkDocs reads files with universal newlines
    assert get_data(pages.page_source(meta, body)) == (body.lstrip("\n"), meta)


def test_card_shows_the_pedigree_as_of_the_build_escaped() -> None:
    pedigree = {
        "state": "contested",
        "confidence": 0.4,
        "approvals": 1,
        "approvals_required": 2,
        "last_reviewed": {"at": "2027-01-01T00:00:00Z", "by": "bob", "verdict": "contradict"},
        "verify_first": '1 open contradiction(s): <img src=x onerror="alert(1)">',
    }
    card = pages.header_card(doc(), LIBRARY, "x.md", pedigree)
    shown = parsed(card)
    assert ("p", {"class": "hb-pedigree hb-pedigree--contested", "data-search-exclude": None}) in (
        shown.tags
    )
    assert [tag for tag, _ in shown.tags].count("img") == 0
    assert (
        "contested · confidence 0.4 · 1 of 2 approvals · last reviewed 2027-01-01 by bob · "
        'verify first: 1 open contradiction(s): <img src=x onerror="alert(1)"> '
    ) in "".join(shown.text)
    assert ".hb-pedigree--contested" in pages.CSS
    assert "hb-pedigree" not in pages.header_card(doc(), LIBRARY, "x.md")
