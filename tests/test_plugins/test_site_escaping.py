"""The hostile library's site, read as files: every frontmatter value is text wherever
MkDocs, Material and the plugin print it (page title, header, nav, meta tags, the header
card, the catalog page, the 404 page and Material's search index), llms.txt holds one
entry per doc and nothing forged, and the catalog page links only to docs.
test_site_xss.py opens the same site in a browser."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
from hostile_site import BODY_SCRIPT, DOCS, PAGES, SITE_NAME, build_site, fields, titles
from markdown_it import MarkdownIt

from handbook.bundle.catalog import Catalog
from handbook_build.checks.unsafe_html import URL_ATTRIBUTES, unsafe_scheme
from handbook_build.write import pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-site")
    build_site(root)
    return root / "site"


@pytest.fixture(scope="module")
def catalog(site: Path) -> Catalog:
    return Catalog.from_dict(json.loads((site / "bundle" / "catalog.json").read_bytes()))


def page_file(path: str) -> str:
    """The built page of the doc at `path` (directory URLs)."""
    stem = path.removesuffix(".md")
    return "index.html" if stem == "index" else f"{stem}/index.html"


class Page(HTMLParser):
    """What a browser would run in a page (script elements, event handlers, script URLs),
    the links, and the text of the elements the tests look at, as a reader sees it."""

    WATCHED = ("title", "h1", "h2", "p", "li")

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.active: list[str] = []
        self.links: list[tuple[str, str]] = []
        self.text: dict[str, list[str]] = {tag: [] for tag in (*self.WATCHED, "a")}
        self._open: list[tuple[str, str, list[str]]] = []
        self._script = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        own_button = dict(attrs).get("class") == "hb-copy"  # the card's escaped handler
        for name, value in attrs:
            handler = name.startswith("on") and not (own_button and name == "onclick")
            url = name in URL_ATTRIBUTES and unsafe_scheme(value or "") is not None
            if (handler or url) and "alert('body')" not in (value or ""):  # body: allowed
                self.active.append(f"<{tag} {name}={value!r}>")
        self._script = tag == "script"
        if tag in self.WATCHED or tag == "a":
            self._open.append((tag, dict(attrs).get("href") or "", []))

    def handle_endtag(self, tag: str) -> None:
        self._script = False
        if self._open and self._open[-1][0] == tag:
            name, href, parts = self._open.pop()
            text = " ".join("".join(parts).split())
            self.text[name].append(text)
            if name == "a":
                self.links.append((href, text))

    def handle_data(self, data: str) -> None:
        if self._script and "alert(" in data:
            self.active.append(f"<script>{data}</script>")
        for _, _, parts in self._open:
            parts.append(data)


def read(file: Path) -> Page:
    return Page(file.read_text(encoding="utf-8"))


def test_no_page_holds_script_from_frontmatter(site: Path) -> None:
    files = sorted(site.rglob("*.html"))
    assert len(files) == len(PAGES) + 2  # the pages, the catalog page and 404.html
    active = {str(f.relative_to(site)): read(f).active for f in files}
    assert {name: found for name, found in active.items() if found} == {}
    assert BODY_SCRIPT in (site / page_file("devices/attr.md")).read_text()  # kept at warn


@pytest.mark.parametrize("path", list(PAGES))
def test_titles_and_values_read_as_written(site: Path, path: str) -> None:
    page = read(site / page_file(path))
    assert page.text["title"] == [f"{titles()[path]} - {SITE_NAME}"]
    assert titles()[path] in page.text["h1"]  # Material's heading of a page without `# `
    for title in titles().values():  # the nav links every page (Material adds the subtitle)
        assert any(text.startswith(title) for text in page.text["a"]), title
    summary = fields(list(PAGES).index(path), path)["summary"]
    card = " ".join(str(summary).split()) in page.text["p"]
    assert card == (path in DOCS)  # the card's summary; other pages have no card
    assert "id: hostile.doc" not in (site / page_file(path)).read_text()  # no frontmatter


def test_404_and_catalog_pages_show_titles_as_text(site: Path) -> None:
    for name in ("404.html", "catalog/index.html"):
        shown = read(site / name).text["a"]
        listed = [title for path, title in titles().items() if name == "404.html" or path in DOCS]
        assert all(any(title in text for text in shown) for title in listed), name


def test_search_index_holds_titles_and_text_escaped(site: Path) -> None:
    """Material's search shows an entry's title and text as HTML."""
    entries = json.loads((site / "search" / "search_index.json").read_bytes())["docs"]
    shown = []
    for entry in entries:
        page = Page(f"<h1>{entry['title']}</h1><p>{entry['text']}</p>")
        assert page.active == [], entry
        shown.append((entry["location"], page.text["h1"][0]))
    for path, title in titles().items():
        location = page_file(path).removesuffix("index.html")
        assert (location, title) in shown


def test_llms_txt_has_one_entry_per_doc_and_nothing_forged(site: Path, catalog: Catalog) -> None:
    page = Page(MarkdownIt("commonmark").render((site / "llms.txt").read_text()))
    assert page.text["h1"] == [SITE_NAME]
    assert page.text["h2"] == sorted({doc.kind for doc in catalog.docs})
    assert sorted(page.links) == sorted((doc.url, doc.title) for doc in catalog.docs)
    assert len(page.text["li"]) == len(DOCS)


def test_catalog_page_links_only_to_docs(catalog: Catalog) -> None:
    text = pages.catalog_markdown(catalog.library, catalog.docs)
    page = Page(markdown.markdown(text, extensions=["tables"]))  # as MkDocs renders it
    docs = [(doc.source, doc.title) for doc in catalog.docs]
    assert sorted(page.links) == sorted([("llms.txt", "llms.txt"), *docs])
