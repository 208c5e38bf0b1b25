"""The hostile library's site in a real browser: no script from frontmatter runs on any
page (every doc page, the catalog page, the 404 page, Material's search results), and
every title reads as written in `<title>`, the header, the nav and the card.

Before a page's own scripts run, a trap replaces `alert` (every payload calls it with
the field and doc it was put in) and records each call; a page that ran a payload names
it. Links and handlers that only run when used are looked for in the DOM: no element
has an event handler or a script URL but the card's copy button and the body's own,
which the library allows (`HB403: warn`). test_site_escaping.py reads the same site as
files."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostile_site import DOCS, PAGES, PAYLOADS, SITE_NAME, build_site, fields, titles
from site_helpers import chromium, require_browser, served

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
