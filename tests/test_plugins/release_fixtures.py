"""The fixtures of the `handbook init`, `pack`, `diff` and `release` tests: a clean
environment, a signing key in it, and the example library built and packed once.

A test module loads them with ``pytest_plugins = ["release_fixtures"]`` and asks for the
clean environment with ``pytestmark = pytest.mark.usefixtures("clean_environment")`` (a
plugin's fixtures serve the whole session, so none of them is autouse). It imports
nothing from here: helpers are in `release_helpers`, which pytest does not load itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import KEY_PEM
from release_helpers import EPOCH, EXAMPLE, build_bundle

from handbook_build.tasks.pack import pack


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reproducible builds, no key or trust from the outside, and git that reads only
    the test repositories' own configuration."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    for name in (
        "CI",
        "HANDBOOK_SIGNING_KEY",
        "HANDBOOK_TRUSTED_KEYS",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def signing_env(clean_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test key in $HANDBOOK_SIGNING_KEY, set after the environment was cleaned."""
    monkeypatch.setenv("HANDBOOK_SIGNING_KEY", KEY_PEM)


@pytest.fixture(scope="session")
def v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example library, built and signed once (the published symlink)."""
    return build_bundle(EXAMPLE / "mkdocs.yml", tmp_path_factory.mktemp("v1") / "bundle")


@pytest.fixture(scope="session")
def v1_archive(v1: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("v1-archive") / "plant-floor-1.0.0.tar.gz"
    pack(v1, out)
    return out
