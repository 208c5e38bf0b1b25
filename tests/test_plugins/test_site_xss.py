"""The hostile library's site in a real browser: no script from frontmatter runs on any
page (every doc page, the catalog page, the 404 page, Material's search results), and
every title reads as written in `<title>`, the header, the nav and the card.

Before a page's own scripts run, a trap replaces `alert` (every payload calls it with
the field and doc it was put in) and records each call; a page that ran a payload names
it. Links and handlers that only run when used are looked for in the DOM: no element
has an event handler or a script URL but the card's copy button and the body's own,
which the library allows (`HB403: warn`). test_site_escaping.py reads the same site as
files.

The reviews-site-hostile fixture library does the same through pedigree: signed
reviews whose bases, an `about` URI and a retirement reason carry script, shown on the
doc cards, the catalog and the review-queue page (test_review_pages.py reads it as
files)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from conftest import FIXTURES, KEY_PEM
from hostile_site import DOCS, PAGES, PAYLOADS, SITE_NAME, build_site, fields, titles
from site_helpers import chromium, mkdocs_build, require_browser, served

require_browser()
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 30  # a generous bound on page work, never a speed assertion
TRAP = """
window.__ran = [];
window.alert = window.confirm = window.prompt = (m) => { window.__ran.push(String(m)); };
"""
ACTIVE = """
const found = [];
for (const el of document.querySelectorAll('*')) {
  for (const a of el.attributes) {
    const n = a.name.toLowerCase(), v = a.value;
    if (v.includes("alert('body')") || (n === 'onclick' && el.classList.contains('hb-copy'))) continue;
    const url = /^\\s*(javascript|vbscript):/i.test(v.replace(/[\\t\\n\\r]/g, ''));
    if (n.startsWith('on') || (url && ['href', 'src', 'action', 'formaction'].includes(n)))
      found.push(`<${el.tagName.toLowerCase()} ${n}="${v}">`);
  }
}
return found;
"""


def url_of(path: str) -> str:
    """The site-relative URL of the page at `path` (directory URLs)."""
    stem = path.removesuffix(".md")
    return "" if stem == "index" else f"{stem}/"


URLS = [*map(url_of, PAGES), "catalog/", "404.html"]
"""Every page of the site."""


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("hostile-site")
    build_site(root)
    with served(root / "site") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TRAP})
        yield driver


def load(browser: webdriver.Chrome, url: str) -> None:
    """Open `url` and wait until it and its images have loaded or failed (an `onerror`
    payload runs by then)."""
    browser.get(url)
    WebDriverWait(browser, WAIT_S).until(
        lambda driver: driver.execute_script("return document.readyState") == "complete"
    )


def ran(browser: webdriver.Chrome) -> list[str]:
    return list(browser.execute_script("return window.__ran"))


def text_of(browser: webdriver.Chrome, selector: str) -> list[str]:
    """The text of each element `selector` finds, shown or not (the nav folds).

    Read in one script call: Material re-renders search results as a query settles, and
    element handles kept across a render go stale.
    """
    found = browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), (e) => e.textContent);",
        selector,
    )
    return [" ".join(str(text).split()) for text in found]


def test_the_trap_catches_a_script_that_runs(browser: webdriver.Chrome, base_url: str) -> None:
    load(browser, base_url + "catalog/")
    browser.execute_script("alert('the trap works')")
    assert ran(browser) == ["the trap works"]


@pytest.mark.parametrize("page", URLS)
def test_no_frontmatter_script_runs_or_waits_on_a_page(
    browser: webdriver.Chrome, base_url: str, page: str
) -> None:
    load(browser, base_url + page)
    assert ran(browser) == []
    assert browser.execute_script(ACTIVE) == []
    text = browser.execute_script("return document.body.textContent")
    assert all(title in text for title in titles().values())  # the nav, the catalog


@pytest.mark.parametrize("path", list(PAGES))
def test_titles_read_as_written(browser: webdriver.Chrome, base_url: str, path: str) -> None:
    load(browser, base_url + url_of(path))
    title = titles()[path]
    assert browser.title == f"{title} - {SITE_NAME}"
    assert text_of(browser, ".md-header__topic:last-child") == [title]  # shown on scroll
    assert text_of(browser, "article h1") == [title]
    nav = text_of(browser, ".md-nav--primary .md-nav__link")
    assert all(any(text.startswith(t) for text in nav) for t in titles().values())
    summary = " ".join(str(fields(list(PAGES).index(path), path)["summary"]).split())
    assert text_of(browser, ".hb-card .hb-summary") == ([summary] if path in DOCS else [])


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_search_shows_titles_as_text(browser: webdriver.Chrome, base_url: str, kind: str) -> None:
    path = next(path for path, payload in DOCS.items() if payload == kind)
    load(browser, base_url)
    field = WebDriverWait(browser, WAIT_S).until(
        ec.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input"))
    )
    field.click()
    field.send_keys(f"Hostile {list(PAGES).index(path)}")
    WebDriverWait(browser, WAIT_S).until(
        lambda driver: titles()[path] in text_of(driver, ".md-search-result__article h1")
    )
    assert ran(browser) == []
    assert browser.execute_script(ACTIVE) == []


REVIEWS_HOSTILE = FIXTURES / "reviews-site-hostile"
REVIEWS_PAGES = [
    "",
    "guides/suspect/",
    "guides/stale/",
    "guides/retired/",
    "guides/unreviewed/",
    "guides/reviewed/",
    "devices/under/",
    "catalog/",
    "reviews/",
]


@pytest.fixture(scope="module")
def reviews_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reviews-site-hostile library built with `--strict` at the time its records
    are made for (2026-04-30T09:00:00Z), when its docs are in every state."""
    root = tmp_path_factory.mktemp("reviews-site-hostile") / "lib"
    shutil.copytree(REVIEWS_HOSTILE, root, ignore=shutil.ignore_patterns("site", "build"))
    mkdocs_build(root, "--strict", key_pem=KEY_PEM, epoch="1777539600")
    with served(root / "site") as url:
        yield url


@pytest.mark.parametrize("page", REVIEWS_PAGES)
def test_no_script_runs_from_a_review_or_a_title(
    browser: webdriver.Chrome, reviews_url: str, page: str
) -> None:
    load(browser, reviews_url + page)
    assert ran(browser) == []
    assert browser.execute_script(ACTIVE) == []
    assert (
        browser.execute_script("return document.querySelectorAll('base, meta[http-equiv]').length")
        == 0
    )


def test_reviewers_bases_and_titles_read_as_written(
    browser: webdriver.Chrome, reviews_url: str
) -> None:
    load(browser, reviews_url + "reviews/")
    why = text_of(browser, "article table tbody td:nth-child(4)")
    assert why[0] == (
        "1 open contradiction(s): <script>alert('basis@contested')</script>"
        "<img src=x onerror=alert('basis2@contested')>"
    )
    assert why[1] == (
        "urn:api:<svg/onload=alert('about@suspect')> changed (2026-04-15) after the doc's "
        "last review"
    )
    docs = text_of(browser, "article table tbody td:nth-child(2) a")
    assert "Contested <script>alert('title@contested')</script>" in docs
    assert text_of(browser, "figure.hb-chart svg title") == [
        "Docs per state",
        "Days since each doc was last confirmed",
    ]
    load(browser, reviews_url + "catalog/")
    assert text_of(browser, ".hb-disagree") == [
        "declared verified, but contested",
        "declared field tested, but suspect",
    ]
    assert ran(browser) == []
