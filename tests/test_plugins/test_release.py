"""`handbook release` versions, builds, signs, packs, commits and tags in a real git
repository, or changes nothing at all."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY_FILE, PUBLIC, VALID_DOC, run_cli
from release_helpers import commit_all, git, init, new_repository

from handbook.bundle.local import open_bundle
from handbook_build import load_config
from handbook_build.tasks.pack import pack

pytest_plugins = ["release_fixtures"]
pytestmark = pytest.mark.usefixtures("clean_environment")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A new library, committed on `main` in a fresh git repository."""
    root = tmp_path / "floor"
    assert init(root).exit_code == 0
    return new_repository(root, "Start the library")


def state(repo: Path) -> tuple[str, bytes, str, str, str]:
    """Everything a refused release must leave alone."""
    return (
        git(repo, "rev-parse", "HEAD"),
        (repo / "mkdocs.yml").read_bytes(),
        git(repo, "tag", "--list"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "stash", "list"),
    )


def release(repo: Path, *args: str) -> Any:
    return run_cli("release", *args, "--config", str(repo / "mkdocs.yml"))


@pytest.mark.usefixtures("signing_env")
def test_release_bumps_builds_commits_and_tags(repo: Path, tmp_path: Path) -> None:
    before_lines = (repo / "mkdocs.yml").read_text().splitlines()
    start = git(repo, "rev-parse", "HEAD")
    run = release(repo, "--minor")
    assert run.exit_code == 0, run.stderr

    assert load_config(repo / "mkdocs.yml").version == "0.2.0"
    after_lines = (repo / "mkdocs.yml").read_text().splitlines()
    assert len(after_lines) == len(before_lines)
    changed = [(old, new) for old, new in zip(before_lines, after_lines, strict=True) if old != new]
    assert len(changed) == 1
    old, new = changed[0]
    assert old == "      version: 0.1.0"
    assert new in ('      version: "0.2.0"', "      version: '0.2.0'", "      version: 0.2.0")

    head = git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD~1") == start
    assert git(repo, "log", "-1", "--format=%s") == "Release floor 0.2.0"
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "mkdocs.yml"
    assert git(repo, "cat-file", "-t", "v0.2.0") == "tag"  # annotated
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == head
    assert git(repo, "tag", "--list") == "v0.2.0"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"

    archive = repo / "build" / "release" / "floor-0.2.0.tar.gz"
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert run.lines[0].startswith(f"released v0.2.0 (commit {head[:12]}); archive ")
    assert run.lines[0].endswith(f"sha256 {digest}")
    assert run.lines[1] == "not pushed: git push origin main v0.2.0"
    verified = run_cli("verify", str(archive), "--key", PUBLIC)
    assert verified.exit_code == 0, verified.stderr
    # the archive is the packed bundle of the released version, signed by the key
    bundle = open_bundle(repo / "build" / "bundle", [PUBLIC])
    assert bundle.signature_state == "verified"
    assert (
        bundle.manifest.signed.library,
        bundle.manifest.signed.version,
        bundle.manifest.signed.docs,
    ) == ("floor", "0.2.0", 2)
    repacked = tmp_path / "repacked.tar.gz"
    pack(repo / "build" / "bundle", repacked)
    assert repacked.read_bytes() == archive.read_bytes()


@pytest.mark.usefixtures("signing_env")
def test_release_refuses_versions_that_do_not_increase(repo: Path) -> None:
    assert release(repo, "--minor").exit_code == 0
    for version in ("0.2.0", "0.1.5", "0.2.0-rc.1"):
        before = state(repo)
        run = release(repo, version)
        assert run.exit_code == 1, version
        assert "does not come after the current version 0.2.0" in run.stderr
        assert state(repo) == before
    assert not (repo / "build" / "release" / "floor-0.1.5.tar.gz").exists()
    # a pre-release, then its release, then a patch: each comes after the last
    for version, expected in (
        ("1.0.0-rc.1", "1.0.0-rc.1"),
        ("1.0.0", "1.0.0"),
        ("--patch", "1.0.1"),
    ):
        run = release(repo, version)
        assert run.exit_code == 0, run.stderr
        assert load_config(repo / "mkdocs.yml").version == expected
    assert git(repo, "tag", "--list").split() == ["v0.2.0", "v1.0.0", "v1.0.0-rc.1", "v1.0.1"]


def _other_branch(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "switch", "-q", "-c", "feature")


def _edited(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = repo / "docs" / "index.md"
    path.write_text(path.read_text() + "\nMore.\n")


def _untracked(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "docs" / "guides" / "draft.md").write_text(VALID_DOC.format(id="floor.draft"))


def _staged(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _untracked(repo, monkeypatch)
    git(repo, "add", "docs/guides/draft.md")


def _tagged(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "tag", "-a", "v0.3.0", "-m", "made by hand")


def _no_key(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY")


def _broken_doc(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "docs" / "guides" / "broken.md").write_text(
        "---\nid: floor.broken\ntitle: [unclosed\n---\n# Broken\n"
    )
    commit_all(repo, "Add a broken doc")


REFUSALS: dict[str, tuple[Callable[[Path, pytest.MonkeyPatch], None], list[str], str]] = {
    "another branch": (
        _other_branch,
        ["--minor"],
        "on branch 'feature'; releases are made from 'main'",
    ),
    "uncommitted edit": (_edited, ["--minor"], "uncommitted changes"),
    "untracked file": (_untracked, ["--minor"], "uncommitted changes"),
    "staged file": (_staged, ["--minor"], "uncommitted changes"),
    "same version": (
        lambda repo, mp: None,
        ["0.1.0"],
        "does not come after the current version 0.1.0",
    ),
    "lower version": (
        lambda repo, mp: None,
        ["0.0.9"],
        "does not come after the current version 0.1.0",
    ),
    "not a version": (lambda repo, mp: None, ["1.2"], "is not a semantic version"),
    "existing tag": (_tagged, ["0.3.0"], "tag v0.3.0 already exists"),
    "no signing key": (_no_key, ["--patch"], "no signing key"),
    "malformed signing key": (
        lambda repo, mp: mp.setenv("HANDBOOK_SIGNING_KEY", "not a key"),
        ["--patch"],
        "$HANDBOOK_SIGNING_KEY holds neither a key's PEM text",
    ),
    "strict build fails": (
        _broken_doc,
        ["--minor"],
        "the strict build failed; nothing was committed",
    ),
}


@pytest.mark.usefixtures("signing_env")
@pytest.mark.parametrize("case", list(REFUSALS))
def test_release_refuses_and_changes_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    prepare, args, message = REFUSALS[case]
    prepare(repo, monkeypatch)
    before = state(repo)
    run = release(repo, *args)
    assert run.exit_code == 1, run.stdout
    assert run.stderr.startswith("refused: ")
    assert message in run.stderr
    assert state(repo) == before
    assert not (repo / "build" / "release").exists()


@pytest.mark.usefixtures("signing_env")
def test_release_strict_build_failure_names_the_finding(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _broken_doc(repo, monkeypatch)
    original = (repo / "mkdocs.yml").read_bytes()
    run = release(repo, "--minor")
    assert run.exit_code == 1
    assert "broken.md" in run.stderr
    assert (repo / "mkdocs.yml").read_bytes() == original
    assert not (repo / "build" / "bundle").exists()


@pytest.mark.parametrize("args", [["0.2.0", "--minor"], []])
def test_release_wants_exactly_one_version_choice(repo: Path, args: list[str]) -> None:
    before = state(repo)
    run = release(repo, *args)
    assert run.exit_code == 2
    assert "give a VERSION or one of --major, --minor, --patch" in run.stderr
    assert state(repo) == before


def test_release_signs_with_a_key_file(repo: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "release.key"
    shutil.copy(KEY_FILE, key_file)
    run = release(repo, "1.0.0", "--key", str(key_file))
    assert run.exit_code == 0, run.stderr
    archive = repo / "build" / "release" / "floor-1.0.0.tar.gz"
    assert run_cli("verify", str(archive), "--key", PUBLIC).exit_code == 0
    assert git(repo, "tag", "--list") == "v1.0.0"


@pytest.mark.usefixtures("signing_env")
def test_release_push_sends_the_branch_and_the_tag(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, capture_output=True)
    git(repo, "remote", "add", "origin", str(remote))
    run = release(repo, "--major", "--push")
    assert run.exit_code == 0, run.stderr
    assert run.lines[-1] == "pushed"
    head = git(repo, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "refs/heads/main") == head
    assert git(remote, "cat-file", "-t", "refs/tags/v1.0.0") == "tag"
    assert git(remote, "rev-parse", "refs/tags/v1.0.0^{commit}") == head
    assert git(remote, "rev-parse", "refs/tags/v1.0.0") == git(
        repo, "rev-parse", "refs/tags/v1.0.0"
    )


@pytest.mark.usefixtures("signing_env")
def test_release_of_a_library_in_a_subfolder(tmp_path: Path) -> None:
    root = tmp_path / "monorepo"
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text("print('hi')\n")
    assert init(root / "handbook", "--name", "floor").exit_code == 0
    new_repository(root, "Start")
    run = run_cli("release", "--patch", "--config", str(root / "handbook" / "mkdocs.yml"))
    assert run.exit_code == 0, run.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "handbook/mkdocs.yml"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert (root / "handbook" / "build" / "release" / "floor-0.1.1.tar.gz").is_file()


@pytest.mark.usefixtures("signing_env")
def test_release_changes_nothing_when_the_commit_fails(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'rejected by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(repo)
    run = release(repo, "--minor")
    assert run.exit_code == 1
    assert "rejected by policy" in run.stderr
    assert state(repo) == before


@pytest.mark.usefixtures("signing_env")
def test_release_of_a_flow_style_plugin_entry(repo: Path) -> None:
    config = repo / "mkdocs.yml"
    text = config.read_text()
    block = text[text.index("  - handbook:\n") :]
    config.write_text(
        text.replace(
            block,
            "  - handbook: {library: floor, version: 0.1.0, vocab: {kind: [guide, reference, procedure]}}\n",
        )
    )
    assert load_config(config).version == "0.1.0"
    commit_all(repo, "Flow style")
    before = config.read_text().splitlines()
    run = release(repo, "--minor")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert load_config(config).version == "0.2.0"
    after = config.read_text().splitlines()
    assert [line for line in after if line not in before] == [
        '  - handbook: {library: floor, version: "0.2.0", vocab: {kind: [guide, reference, procedure]}}'
    ]


@pytest.mark.usefixtures("signing_env")
def test_release_push_to_a_missing_remote_changes_nothing(repo: Path) -> None:
    before = state(repo)
    run = release(repo, "--minor", "--push")
    assert run.exit_code == 1
    assert "origin" in run.stderr
    assert state(repo) == before


@pytest.mark.usefixtures("signing_env")
def test_a_planted_build_link_is_refused_and_nothing_changes(repo: Path, tmp_path: Path) -> None:
    """A clone whose `build` is a symlink (git keeps them) must not make release write
    the bundle and the archive where the link points."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (repo / "build").symlink_to(outside)
    git(repo, "add", "build")
    git(repo, "commit", "-m", "a link", "--quiet")
    before = state(repo)
    run = release(repo, "--patch")
    assert (
        run.exit_code == 1
        and "is a symbolic link" in run.stderr
        and "refusing to write" in run.stderr
    )
    assert state(repo) == before and list(outside.iterdir()) == []
