"""What the site tests share: `mkdocs build` in a child process, a built site served on
loopback, and Debian's headless Chromium driven through Selenium.

`.ci/run` installs the browser; where it is missing the browser tests are skipped,
except in CI, where that is a failure (`require_browser`, called by each browser test
module before it imports Selenium)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import loopback_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def mkdocs_build(
    root: Path, *args: str, key_pem: str, epoch: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`mkdocs build` of the library at `root`, signed with `key_pem` (at the build time
    `epoch`, when given), outside CI; asserts success unless `check` is off."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDBOOK_SIGNING_KEY")}
    env.update(HANDBOOK_SIGNING_KEY=key_pem, NO_MKDOCS_2_WARNING="1")
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = epoch
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def served(site: Path) -> Iterator[str]:
    """The site's base URL (with a trailing slash) on loopback."""
    with loopback_server(functools.partial(QuietHandler, directory=str(site))) as url:
        yield url + "/"


def require_browser() -> None:
    if CHROMIUM and CHROMEDRIVER:
        return
    if os.environ.get("CI"):
        raise RuntimeError(
            "the browser test needs Debian's chromium and chromium-driver; .ci/run installs them"
        )
    pytest.skip(
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium session (a `selenium.webdriver.Chrome`)."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options
    )
    try:
        yield driver
    finally:
        driver.quit()
