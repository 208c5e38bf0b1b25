"""What the tests of `handbook init`, `pack`, `diff` and `release` share: the test key,
reproducible builds of a library, library files and git repositories. The fixtures that
go with them are in `release_fixtures`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import site_helpers
from conftest import KEY, KEY_PEM, ROOT, Run, run_cli

from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor"
EPOCH = "1767225600"  # 2026-01-01T00:00:00Z
INSTALL_FROM = "git+https://git.example.invalid/handbook@5f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6"
"""What the workflows of these tests install Handbook with (the checkout they run from
may have no remote, so init could not name one itself)."""


def init(folder: Path, *args: str, install_from: str | None = INSTALL_FROM) -> Run:
    """`handbook init FOLDER ARGS… --install-from INSTALL_FROM` (without the option when
    `install_from` is None)."""
    extra = ("--install-from", install_from) if install_from is not None else ()
    return run_cli("init", str(folder), *args, *extra)


def mkdocs_build(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mkdocs build` in `folder` as a release job runs it: signed with the test key, at
    the fixed build time."""
    return site_helpers.mkdocs_build(folder, *args, key_pem=KEY_PEM, epoch=EPOCH, check=False)


def build_bundle(config: Path, out: Path) -> Path:
    """A signed, reproducible build of the library at `config`; the published path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.delenv("HANDBOOK_TRUSTED_KEYS", raising=False)
        build(load_config(config), out, KEY)
    return out


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def substitute(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def new_repository(root: Path, message: str) -> Path:
    """`root` as a git repository on `main` with everything in it committed."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test Releaser")
    git(root, "config", "user.email", "releaser@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "tag.gpgsign", "false")
    commit_all(root, message)
    return root
