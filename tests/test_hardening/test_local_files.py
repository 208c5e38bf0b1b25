"""Keys and files on the author's machine: a signing key is never published with the
site, a key others may read draws a warning, and no command writes through a symbolic
link planted in the project (git keeps symlinks, so a clone can carry them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEY_FILE, ROOT, run_cli

from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example library; mkdocs.yml's site_dir is `site`."""
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY", raising=False)
    monkeypatch.delenv("CI", raising=False)
    root = tmp_path / "lib"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "site"))
    config = root / "mkdocs.yml"
    config.write_text(config.read_text().replace("site_dir: build/site", "site_dir: site"))
    return root


def place_key(where: Path, mode: int = 0o600) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(KEY_FILE, where)
    where.chmod(mode)
    return where


@pytest.mark.parametrize("inside", ["docs/keys/handbook.key", "site/handbook.key"])
def test_a_key_inside_a_published_folder_is_refused(project: Path, inside: str) -> None:
    key = place_key(project / inside)
    run = run_cli("build", "--config", str(project / "mkdocs.yml"), "--key", str(key))
    assert run.exit_code == 2
    assert "is inside" in run.stderr and "published with the site" in run.stderr
    assert not (project / "build" / "bundle").exists()


def test_mkdocs_never_publishes_a_configured_key_from_the_docs(project: Path) -> None:
    place_key(project / "docs" / "signing.key")
    config = project / "mkdocs.yml"
    config.write_text(
        config.read_text().replace(
            "      library: plant-floor",
            "      library: plant-floor\n      signing_key: docs/signing.key",
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "is inside docs_dir" in done.stderr
    assert not (project / "site" / "signing.key").exists()


def test_a_key_others_may_read_draws_a_warning(project: Path) -> None:
    loose = place_key(project / "handbook.key", 0o644)
    run = run_cli("build", "--config", str(project / "mkdocs.yml"), "--key", str(loose))
    assert run.exit_code == 0 and "may be read by group or others (mode 644)" in run.stderr
    loose.chmod(0o600)
    run = run_cli("build", "--config", str(project / "mkdocs.yml"), "--key", str(loose))
    assert run.exit_code == 0 and "may be read" not in run.stderr


@pytest.mark.parametrize("planted", ["build", "build/bundle.versions", "build/bundle"])
def test_build_refuses_to_write_through_a_planted_link(
    project: Path, tmp_path: Path, planted: str
) -> None:
    outside = tmp_path / "victim"
    outside.mkdir()
    link = project / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    with pytest.raises(Exception, match="is a symbolic link") as refused:
        build(load_config(project / "mkdocs.yml"), project / "build" / "bundle", None)
    assert type(refused.value).__name__ == "PublishError"
    assert list(outside.iterdir()) == []
    run = run_cli("build", "--config", str(project / "mkdocs.yml"))
    assert run.exit_code == 1 and "is a symbolic link" in run.stderr


@pytest.mark.parametrize("planted", ["docs", ".github", ".github/workflows", "docs/guides"])
def test_init_refuses_planted_links(tmp_path: Path, planted: str) -> None:
    folder, outside = tmp_path / "new", tmp_path / "victim"
    outside.mkdir()
    (folder / planted).parent.mkdir(parents=True, exist_ok=True)
    (folder / planted).symlink_to(outside)
    run = run_cli(
        "init", str(folder), "--install-from", "git+https://git.example.invalid/h@" + "a" * 40
    )
    assert run.exit_code == 2 and "is a symbolic link" in run.stderr
    assert list(outside.iterdir()) == []
    assert not (folder / "mkdocs.yml").exists()  # nothing written when anything is refused
