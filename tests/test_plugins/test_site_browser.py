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
