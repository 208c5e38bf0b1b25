"""Pedigree on the site, read as files: one vocabulary (the runtime's states, in its order)
on the catalog, the review-queue page, its SVG charts and llms.txt; the catalog of a
library without reviews as it was; every reviewer's and author's value escaped, whatever
Python-Markdown extensions a site turns on; the hostile reviews fixture built into a
site with its payloads shown as text; the pages as of the build, reproducible with
SOURCE_DATE_EPOCH; and the new pages inside an adopted site's nav rules and the
project's own site. test_site_browser.py and test_site_xss.py open the same pages in
Chromium."""

from __future__ import annotations

import importlib.util
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml
from adopted_site import make_site, mkdocs
from conftest import FIXTURES, KEY_PEM, ROOT, run_cli
from release_helpers import INSTALL_FROM
from reviewers import DAY, T0, invalidation, public, review
from site_helpers import mkdocs_build
from test_pages import EXTENSIONS, HOSTILE, LIBRARY, PAGE_TAGS, doc, parsed

from handbook.pedigree.derived import Ledger, Policy
from handbook.tools.schemas import PEDIGREE
from handbook_build.write import charts, pages
from handbook_build.write.pedigree_view import QUEUE_STATES, STATES, as_of, queue, summary
from handbook_build.write.review_page import queue_markdown

HOSTILE_REVIEWS = FIXTURES / "reviews-site-hostile"
PACKAGING_LINE = ROOT / "examples" / "packaging-line"
PACKAGING_EPOCH = "1796083200"  # 2026-12-01T00:00:00Z, the time docs/guide/pedigree.md uses


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("site_hostile", HOSTILE_REVIEWS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE_EPOCH = str(generator().BUILT_AT)


def built(source: Path, target: Path, epoch: str, *args: str) -> Path:
    """The library at `source` copied to `target` and built with `mkdocs build --strict`
    at `epoch`; returns the site folder."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("build", "site"))
    mkdocs_build(target, "--strict", *args, key_pem=KEY_PEM, epoch=epoch)
    config = yaml.safe_load((target / "mkdocs.yml").read_text(encoding="utf-8"))
    return target / config.get("site_dir", "site")


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built(HOSTILE_REVIEWS, tmp_path_factory.mktemp("rsh") / "lib", HOSTILE_EPOCH)


# -- one vocabulary ------------------------------------------------------------------------


def test_the_states_are_the_runtimes_in_the_order_it_derives_them() -> None:
    """Take away, one at a time, the condition of the state a doc is in: it falls to the
    next state of STATES, so the order is the runtime's precedence."""
    assert set(STATES) == set(PEDIGREE["properties"]["state"]["enum"])
    entry = doc(kind="device", meta={"about": "urn:x", "retired": True})
    records = [
        review("alice", entry.id, entry.revision, "corroborate", at=T0),
        review("bob", entry.id, entry.revision, "contradict", at=T0),
    ]
    changed = [invalidation("carol", "urn:x", changed_at=T0 + DAY)]
    names = {r.reviewer: n for r, n in zip(records, ("alice", "bob"), strict=True)}
    policy = Policy(2, ("device",), (), 10 * DAY)

    def state(**change: Any) -> str:
        ledger = Ledger(
            names,
            change.get("reviews", records),
            change.get("invalidations", changed),
            change.get("policy", policy),
        )
        return str(ledger.pedigree(change.get("doc", entry), T0 + 30 * DAY)["state"])

    current = entry._replace(meta={"about": "urn:x"})
    seen = [
        state(),
        state(doc=current),
        state(doc=current, reviews=records[:1]),
        state(doc=current, reviews=records[:1], invalidations=[]),
        state(doc=current, reviews=records[:1], invalidations=[], policy=policy._replace(
            required_approvals=0)),
        state(doc=current, reviews=[], invalidations=[], policy=Policy()),
        state(doc=current, reviews=records[:1], invalidations=[], policy=Policy()),
    ]  # fmt: skip
    assert seen == list(STATES)
    assert QUEUE_STATES == ("contested", "suspect", "under_approved", "stale", "unreviewed")


def test_the_queue_is_worst_first_and_names_states_with_spaces() -> None:
    items = [
        ("b", "b.md", {"state": "unreviewed"}),
        ("a", "a.md", {"state": "under_approved", "verify_first": "0 of the 1 approvals"}),
        ("c", "c.md", {"state": "reviewed"}),
        ("d", "d.md", {"state": "retired"}),
        ("e", "e.md", {"state": "contested"}),
    ]
    made = queue(items)
    assert [item["id"] for item in made] == ["e", "a", "b"]
    assert summary(made, 5) == "5 docs: 1 contested, 1 under approved, 1 unreviewed"
    assert summary([], 2) == "2 docs: nothing to review"
    assert as_of("2026-12-01T00:00:00Z") == "as of the build, 2026-12-01 00:00 UTC"


# -- the catalog ---------------------------------------------------------------------------


def test_a_library_without_reviews_keeps_todays_catalog() -> None:
    docs = [doc(), doc(id="guide.x", kind="guide", title="X", source="x.md")]
    text = pages.catalog_markdown(LIBRARY, docs)
    assert text == pages.catalog_markdown(LIBRARY, docs, {}, "reviews.md")
    assert "| doc | id | summary | state |" in text
    for absent in ("pedigree", "as of the build", "Declared", "review queue", "hb-state"):
        assert absent not in text


CONTESTED = {
    "state": "contested",
    "confidence": 0.4,
    "last_reviewed": {"at": "2026-11-25T09:00:00Z", "by": "carol", "verdict": "contradict"},
}


def test_catalog_rows_show_the_pedigree_and_mark_a_declared_state_it_contradicts() -> None:
    docs = [
        doc(verified="verified", source="v.md", id="v", title="V"),
        doc(verified="field_tested", source="f.md", id="f", title="F"),
        doc(verified="unverified", source="u.md", id="u", title="U"),
        doc(verified="verified", source="r.md", id="r", title="R"),
    ]
    pedigrees = {
        "v.md": CONTESTED,
        "f.md": {"state": "suspect", "confidence": 0.5},
        "u.md": CONTESTED,
        "r.md": {"state": "under_approved", "confidence": 0.67},
    }
    text = pages.catalog_markdown(LIBRARY, docs, pedigrees, "reviews.md")
    html = markdown.markdown(text, extensions=["tables"])
    rows = {row[0]: row for row in table_rows(html)}
    assert rows["V"][4:] == [
        "contested declared verified, but contested",
        "0.4",
        "2026-11-25 by carol (contradict)",
    ]
    assert rows["F"][4] == "suspect declared field tested, but suspect"
    assert rows["U"][4] == "contested"  # declared unverified: no disagreement
    assert rows["R"][4:] == ["under approved", "0.67", "never"]
    assert "As of the build, 2026-01-01 00:00 UTC." in text_of(html)
    assert "**Declared** is the `verified` field" in text
    assert "**Pedigree** is the state derived from the library's signed reviews" in text
    assert "[review queue](reviews.md)" in text
    assert "States: 2 contested · 1 suspect · 1 under approved." in text_of(html)


def test_catalog_pedigree_values_read_as_written_whatever_the_extensions() -> None:
    hostile = {
        "state": f"contested {HOSTILE}",
        "confidence": HOSTILE,
        "last_reviewed": {"at": HOSTILE, "by": HOSTILE, "verdict": HOSTILE},
    }
    text = pages.catalog_markdown(LIBRARY, [doc(verified="verified")], {doc().source: hostile})
    page = parsed(markdown.markdown(text, extensions=EXTENSIONS))
    assert {tag for tag, _ in page.tags} <= {*PAGE_TAGS, "span", "a"}
    marked = [attrs for _, attrs in page.tags if attrs]
    assert marked == [
        {"href": "llms.txt"},
        {"class": "hb-as-of"},
        {"href": "devices/acme-ac200.md"},
        {"class": "hb-badge hb-badge--verified", "title": "verified: verified"},
        {"class": "hb-state hb-state--unreviewed"},  # an unknown state gets a known class
    ]
    assert f"contested {HOSTILE}".replace("_", " ") in page.text  # a state is shown with spaces
    assert HOSTILE in page.text  # the confidence
    assert f"{HOSTILE[:10]} by {HOSTILE} ({HOSTILE})" in page.text


# -- the review-queue page and its charts --------------------------------------------------


def queue_page(docs: list[Any], pedigrees: dict[str, Any], horizon: int | None = 90) -> str:
    return markdown.markdown(
        queue_markdown(LIBRARY, docs, pedigrees, horizon), extensions=EXTENSIONS
    )


def test_queue_page_lists_worst_first_with_owners_and_reasons() -> None:
    docs = [
        doc(id="a", title="A", source="a.md", meta={"owners": ["alice", "bob"]}),
        doc(id="b", title="B", source="b.md", meta={}),
        doc(id="c", title="C", source="c.md", meta={}),
    ]
    pedigrees = {
        "a.md": {"state": "unreviewed", "confidence": 0.5},
        "b.md": {**CONTESTED, "verify_first": "1 open contradiction(s): it stops"},
        "c.md": {"state": "reviewed", "confidence": 0.75, "staleness_days": 3},
    }
    html = queue_page(docs, pedigrees)
    assert table_rows(html) == [
        ["contested", "B b", "none named", "1 open contradiction(s): it stops",
         "2026-11-25 by carol (contradict)"],
        ["unreviewed", "A a", "alice, bob", "no review of its current revision", "never"],
    ]  # fmt: skip
    text = text_of(html)
    assert "As of the build, 2026-01-01 00:00 UTC." in text
    assert "3 docs: 1 contested, 1 unreviewed." in text
    assert "stale once that is more than 90 days ago" in text
    assert "no doc goes stale" in text_of(queue_page(docs, pedigrees, None))


def test_queue_page_values_and_charts_are_escaped_whatever_the_extensions() -> None:
    evil = doc(title=f"T {HOSTILE}", meta={"owners": [HOSTILE]})
    pedigree = {
        "state": "suspect",
        "verify_first": HOSTILE,
        "last_reviewed": {"at": "x", "by": HOSTILE, "verdict": HOSTILE},
    }
    page = parsed(queue_page([evil], {evil.source: pedigree}))
    allowed = {"p", "code", "table", "thead", "tbody", "tr", "th", "td", "span", "a", "h1", "h2"}
    allowed |= {"hr", "figure", "figcaption", "svg", "title", "desc", "g", "text", "rect", "line"}
    assert {tag for tag, _ in page.tags} <= allowed
    assert not any(k.startswith("on") for _, attrs in page.tags for k in attrs)
    assert [a["href"] for tag, a in page.tags if tag == "a"] == [
        "catalog.md",
        "devices/acme-ac200.md",
    ]
    assert f"T {HOSTILE}" in page.text and HOSTILE in page.text


def test_states_chart_draws_every_state_with_its_text_alternative() -> None:
    svg = charts.states_chart({"contested": 1, "suspect": 2, "reviewed": 5})
    shown = parsed(svg)
    assert [t for t in shown.text if t][:2] == [
        "Docs per state",
        "8 docs: 0 retired, 1 contested, 2 suspect, 0 under approved, 0 stale, 0 unreviewed, "
        "5 reviewed",
    ]
    assert shown.tags[0][1]["role"] == "img"
    assert shown.tags[0][1]["aria-labelledby"] == "hb-chart-states-title hb-chart-states-desc"
    bars = [a["class"] for tag, a in shown.tags if tag == "rect"]
    assert bars == ["hb-bar hb-bar--contested", "hb-bar hb-bar--suspect", "hb-bar hb-bar--reviewed"]
    labels = [t for t in shown.text if t in {charts.state_name(s) for s in STATES}]
    assert labels == [charts.state_name(s) for s in STATES]


def test_staleness_chart_shows_the_longest_unconfirmed_against_the_horizon() -> None:
    days = [(f"doc.{n:03}", n) for n in range(100)] + [("doc.never", None), ("<b>x</b>", 5)]
    svg = charts.staleness_chart(days, horizon=30)
    shown = parsed(svg)
    desc = shown.text[1]
    assert desc.startswith(
        "Days since the 40 longest of 102 docs was last confirmed, against the 30-day horizon: "
        "doc.never not confirmed in its current revision; doc.099 99 days (past the horizon); "
    )
    assert "<b>x</b>" not in svg and "doc.060" not in svg
    assert len([tag for tag, _ in shown.tags if tag == "g"]) == charts.MAX_STALENESS_ROWS
    assert [a["class"] for tag, a in shown.tags if tag == "line"] == ["hb-horizon"]
    assert "horizon 30 d" in shown.text
    plain = parsed(charts.staleness_chart([("a", 3), ("<b>x</b>", None)], horizon=None))
    assert "line" not in {tag for tag, _ in plain.tags}
    assert plain.text[1] == (
        "Days since each doc was last confirmed, (no horizon set): "
        "<b>x</b> not confirmed in its current revision; a 3 days."
    )


# -- built sites ---------------------------------------------------------------------------


def test_the_committed_hostile_records_are_what_the_script_makes(tmp_path: Path) -> None:
    shutil.copytree(HOSTILE_REVIEWS, tmp_path / "copy")
    generator().generate(tmp_path / "copy")
    made = {p.name: p.read_bytes() for p in (tmp_path / "copy" / "reviews").iterdir()}
    kept = {p.name: p.read_bytes() for p in (HOSTILE_REVIEWS / "reviews").iterdir()}
    assert made == kept, "regenerate: python tests/fixtures/reviews-site-hostile/generate.py"


PAYLOAD_MARKUP = re.compile(
    r"<script>alert|<img src=x|<svg/onload|<base href='http|<meta http-equiv='refresh'"
    r"|<set attributeName|href=\"javascript:"
)
"""What any payload of the fixture would be, had it become markup (as text, its `<` is
escaped)."""


def test_hostile_reviews_reach_the_site_as_text(hostile_site: Path) -> None:
    for page in hostile_site.rglob("*.html"):
        found = PAYLOAD_MARKUP.findall(page.read_text(encoding="utf-8"))
        assert found == [], f"{page.relative_to(hostile_site)} has markup from a payload: {found}"
    reviews = text_of((hostile_site / "reviews" / "index.html").read_text(encoding="utf-8"))
    for basis in ("<script>alert('basis@contested')</script>", "urn:api:<svg/onload=alert("):
        assert basis in reviews  # shown, as text
    assert "As of the build, 2026-04-30 09:00 UTC." in reviews
    catalog = (hostile_site / "catalog" / "index.html").read_text(encoding="utf-8")
    assert 'class="hb-disagree">declared verified, but contested<' in catalog
    assert 'class="hb-disagree">declared field tested, but suspect<' in catalog
    assert catalog.count("hb-disagree") == 2  # the reviewed doc declared verified agrees
    card = (hostile_site / "index.html").read_text(encoding="utf-8")
    assert "(as of the build, 2026-04-30 09:00 UTC)" in card


def test_llms_txt_names_the_states_as_of_the_build(hostile_site: Path) -> None:
    llms = (hostile_site / "llms.txt").read_text(encoding="utf-8")
    assert "its pedigree as of the build, 2026-04-30 09:00 UTC" in llms
    assert "retired, contested, suspect, under approved, stale, unreviewed, reviewed" in llms
    assert "(field\\_tested; pedigree: suspect)" in llms
    assert "(unverified; pedigree: under approved)" in llms
    assert "(pedigree: contested)" in llms
    assert llms == (hostile_site / "bundle" / "llms.txt").read_text(encoding="utf-8")


def test_the_pages_are_the_same_when_built_again_at_the_same_epoch(
    hostile_site: Path, tmp_path: Path
) -> None:
    again = built(HOSTILE_REVIEWS, tmp_path / "again", HOSTILE_EPOCH)
    for page in ("reviews/index.html", "catalog/index.html", "index.html", "llms.txt"):
        assert (again / page).read_bytes() == (hostile_site / page).read_bytes(), page


def test_an_adopted_site_with_reviews_stays_green_under_strict(tmp_path: Path) -> None:
    """An explicit nav that warns of pages left out of it: the queue and catalog pages
    are built, outside the nav, and `--strict` stays green."""
    site = make_site(tmp_path / "repo")
    run = run_cli("init", "--adopt", str(site), "--install-from", INSTALL_FROM)
    assert run.exit_code == 0, run.stderr
    text = (site / "mkdocs.yml").read_text(encoding="utf-8")
    entry = "      library: "
    assert text.count(entry) == 1
    declared = f"      reviews:\n        reviewers:\n          alice: {public('alice')}\n{entry}"
    (site / "mkdocs.yml").write_text(text.replace(entry, declared), encoding="utf-8")
    done = mkdocs(site, "--strict")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    queue_html = (site / "site" / "reviews" / "index.html").read_text(encoding="utf-8")
    assert "hb-chart-states-title" in queue_html
    assert "Review queue" not in (site / "site" / "index.html").read_text(encoding="utf-8")


def test_the_projects_site_gains_the_pages_when_its_config_has_reviews(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    text = (tmp_path / "mkdocs.yml").read_text(encoding="utf-8")
    assert "reviews:" not in text  # the project declares no reviewers yet
    entry = "      library: handbook\n"
    declared = f"{entry}      reviews:\n        reviewers:\n          alice: {public('alice')}\n"
    (tmp_path / "mkdocs.yml").write_text(text.replace(entry, declared), encoding="utf-8")
    mkdocs_build(tmp_path, "--strict", key_pem=KEY_PEM, epoch=PACKAGING_EPOCH)
    site = tmp_path / "build" / "site"
    assert "Review queue" in (site / "reviews" / "index.html").read_text(encoding="utf-8")
    assert "hb-state--unreviewed" in (site / "catalog" / "index.html").read_text(encoding="utf-8")


# -- helpers -------------------------------------------------------------------------------


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = []
        elif self.cell is not None:  # a line break or an element: a space between words
            self.cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    """The text of each body row's cells, of every table in `html`."""
    parser = _Rows()
    parser.feed(html)
    return [row for row in parser.rows if row]


def text_of(html: str) -> str:
    return " ".join("".join(parsed(html).text).split())
