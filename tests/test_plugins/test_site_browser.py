"""The built site in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven through Selenium) opens the example library's site served on
loopback, finds the header card and its badge, and finds a doc through Material's
search by one of its keywords. Screenshots go to build/browser/ for people to look at.

`.ci/run` installs the browser; where it is missing the test is skipped, except in CI,
where that is a failure."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEY_PEM, ROOT
from site_helpers import chromium, mkdocs_build, require_browser, served

require_browser()
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

SCREENSHOTS = ROOT / "build" / "browser"
WAIT_S = 30  # a generous bound on page work, never a speed assertion


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example library built with `mkdocs build --strict`."""
    root = tmp_path_factory.mktemp("site") / "lib"
    shutil.copytree(
        ROOT / "examples" / "plant-floor", root, ignore=shutil.ignore_patterns("build", "site")
    )
    mkdocs_build(root, "--strict", key_pem=KEY_PEM)
    return root / "build" / "site"


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    with served(site) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        yield driver


def test_doc_page_shows_its_header_card(browser: webdriver.Chrome, base_url: str) -> None:
    browser.get(base_url + "devices/acme-ac200/")
    card = WebDriverWait(browser, WAIT_S).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, ".hb-card"))
    )
    assert card.get_attribute("data-doc-id") == "device.acme.ac200"
    assert card.find_element(By.CSS_SELECTOR, ".hb-id").text == "device.acme.ac200"
    badge = card.find_element(By.CSS_SELECTOR, ".hb-badge")
    assert badge.text == "unverified"
    assert badge.value_of_css_property("background-color") not in (
        "rgba(0, 0, 0, 0)",
        "transparent",
    )  # the CSS applied
    assert "Register map" in card.find_element(By.CSS_SELECTOR, ".hb-summary").text
    assert (
        "---" not in browser.find_element(By.CSS_SELECTOR, "article").text.split("\n")[0]
    )  # no raw frontmatter
    raw = card.find_element(By.LINK_TEXT, "raw markdown").get_attribute("href")
    assert raw is not None and "/bundle/content/" in raw
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "doc-page.png"))


def test_material_search_finds_a_doc_by_keyword(browser: webdriver.Chrome, base_url: str) -> None:
    browser.get(base_url)
    field = WebDriverWait(browser, WAIT_S).until(
        ec.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input"))
    )
    field.click()
    field.send_keys("ac200")  # a keyword from the frontmatter; the text says "AC-200"
    # Material re-renders the result list as the query settles, so the hrefs are read in
    # one script call: element handles kept across renders would go stale.
    WebDriverWait(browser, WAIT_S).until(
        lambda driver: any(
            "acme-ac200" in href
            for href in driver.execute_script(
                "return Array.from(document.querySelectorAll('.md-search-result__link'),"
                " (a) => a.href || '');"
            )
        )
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "search.png"))


def test_catalog_page_lists_docs_with_their_state(browser: webdriver.Chrome, base_url: str) -> None:
    browser.get(base_url + "catalog/")
    WebDriverWait(browser, WAIT_S).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "article table"))
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "article table tbody tr")
    assert len(rows) == 6
    assert any("device.acme.ac200" in row.text and "unverified" in row.text for row in rows)
    browser.save_screenshot(str(SCREENSHOTS / "catalog.png"))


def test_a_library_without_reviews_has_no_queue_page(site: Path) -> None:
    assert not (site / "reviews").exists()
    assert "hb-state" not in (site / "catalog" / "index.html").read_text(encoding="utf-8")


PACKAGING_EPOCH = "1796083200"
"""2026-12-01T00:00:00Z, the time docs/guide/pedigree.md describes the example at: pinned,
so the states do not drift with the calendar."""


@pytest.fixture(scope="module")
def packaging_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The packaging-line example (signed reviews) built with `--strict` at the page's time."""
    root = tmp_path_factory.mktemp("packaging") / "lib"
    shutil.copytree(
        ROOT / "examples" / "packaging-line", root, ignore=shutil.ignore_patterns("build", "site")
    )
    mkdocs_build(root, "--strict", key_pem=KEY_PEM, epoch=PACKAGING_EPOCH)
    with served(root / "build" / "site") as url:
        yield url


def cells(browser: webdriver.Chrome) -> dict[str, list[str]]:
    """Each table row's cells as shown, by the doc id in the row's `code` element."""
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('article table tbody tr'), (tr) =>"
        " [tr.querySelector('code').textContent,"
        "  ...Array.from(tr.cells, (td) => td.innerText.replace(/\\s+/g, ' ').trim())]);"
    )
    return {row[0]: row[1:] for row in rows}


def test_catalog_marks_the_contested_and_suspect_docs(
    browser: webdriver.Chrome, packaging_url: str
) -> None:
    browser.get(packaging_url + "catalog/")
    WebDriverWait(browser, WAIT_S).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "article table"))
    )
    rows = cells(browser)
    assert len(rows) == 8
    assert rows["procedure.reject-bin"][3:] == [
        "unverified",
        "contested",
        "0.4",
        "2026-11-25 by carol (contradict)",
    ]
    assert rows["procedure.changeover"][4] == "suspect"
    assert rows["guide.line-controller-api"][4] == "suspect"
    assert rows["device.kestrel.cw5"][4] == "under approved"
    marked = browser.find_elements(By.CSS_SELECTOR, ".hb-state--contested, .hb-state--suspect")
    assert sorted(m.text for m in marked) == ["contested", "suspect", "suspect"]
    assert marked[0].value_of_css_property("color") == "rgba(198, 40, 40, 1)"  # the CSS applied
    article = browser.find_element(By.CSS_SELECTOR, "article").text
    assert "As of the build, 2026-12-01 00:00 UTC." in article
    assert "Declared is the verified field" in article
    browser.save_screenshot(str(SCREENSHOTS / "catalog-pedigree.png"))


def test_queue_page_lists_worst_first_and_draws_its_charts(
    browser: webdriver.Chrome, packaging_url: str
) -> None:
    browser.get(packaging_url + "reviews/")
    WebDriverWait(browser, WAIT_S).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "figure.hb-chart svg"))
    )
    assert [row[0] for row in cells(browser).values()] == [
        "contested",
        "suspect",
        "suspect",
        "under approved",
        "stale",
        "unreviewed",
    ]
    assert (
        "As of the build, 2026-12-01 00:00 UTC."
        in browser.find_element(By.TAG_NAME, "article").text
    )
    charts = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure.hb-chart svg'), (svg) => ({"
        " label: svg.getAttribute('aria-labelledby').split(' ').map("
        "   (id) => document.getElementById(id).textContent).join(' | '),"
        " bars: Array.from(svg.querySelectorAll('rect'), (r) => r.getBBox().width),"
        " shown: svg.getBoundingClientRect().height,"
        " text: Array.from(svg.querySelectorAll('text'), (t) => t.textContent)}));"
    )
    states, staleness = charts
    assert states["label"] == (
        "Docs per state | 8 docs: 1 retired, 1 contested, 2 suspect, 1 under approved, "
        "1 stale, 1 unreviewed, 1 reviewed"
    )
    assert len(states["bars"]) == 7 and all(width > 0 for width in states["bars"])
    assert states["bars"][2] == max(states["bars"])  # suspect, two docs, the longest bar
    assert staleness["label"].startswith(
        "Days since each doc was last confirmed | Days since each doc was last confirmed, "
        "against the 90-day horizon: "
    )
    assert "procedure.labeller-threading 152 days (past the horizon)" in staleness["label"]
    assert "horizon 90 d" in staleness["text"] and "152 d" in staleness["text"]
    assert states["shown"] > 0 and staleness["shown"] > 0  # drawn, without script of ours
    browser.save_screenshot(str(SCREENSHOTS / "review-queue.png"))
