"""The workflow `init --adopt` writes fits the repository: at the git root's
`.github/workflows` (GitHub reads no other), running in the site's folder; never over or
beside a workflow that builds the docs already unless asked; installing Handbook from
something a runner can reach."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from adopted_site import DOCS_WORKFLOW, git, make_site, run_step
from conftest import Run, run_cli
from release_helpers import INSTALL_FROM

from handbook_build.tasks.adopt_site import name_from_title
from handbook_build.tasks.install import ASK


def adopt(folder: Path, *args: str, install_from: str = INSTALL_FROM) -> Run:
    return run_cli("init", "--adopt", str(folder), "--install-from", install_from, *args)


def workflows(repo: Path) -> dict[str, str]:
    folder = repo / ".github" / "workflows"
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*"))}


def test_a_site_in_a_subfolder_gets_its_workflow_at_the_repository_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    site = make_site(repo, "webdoc", workflow=None)
    run = adopt(site)
    assert run.exit_code == 0, run.stderr
    assert not (site / ".github").exists()
    written = yaml.safe_load(workflows(repo)["handbook.yml"])
    assert written["defaults"] == {"run": {"working-directory": "webdoc"}}
    assert f"wrote {repo / '.github' / 'workflows' / 'handbook.yml'}" in run.lines
    assert f"note: the workflow runs in webdoc/ of {repo}" in run.lines
    check = [
        s["run"] for s in written["jobs"]["check"]["steps"] if "handbook check" in s.get("run", "")
    ]
    assert check == ["handbook check --format github"]
    done = run_step(check[0], site)  # the step as the runner runs it, in webdoc/
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_repository_that_builds_its_docs_keeps_its_workflow_alone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    site = make_site(repo)
    run = adopt(site)
    assert run.exit_code == 0, run.stderr
    assert workflows(repo) == {"docs.yml": DOCS_WORKFLOW}
    assert (
        "note: the repository builds its docs in docs.yml: Handbook's workflow is not written "
        "beside it (--workflow writes it); `handbook check --format github` in a step of yours "
        "reports findings as annotations"
    ) in run.lines


def test_workflow_writes_it_beside_and_no_workflow_writes_none(tmp_path: Path) -> None:
    beside = make_site(tmp_path / "a")
    assert adopt(beside, "--workflow").exit_code == 0
    assert set(workflows(beside)) == {"docs.yml", "handbook.yml"}
    assert workflows(beside)["docs.yml"] == DOCS_WORKFLOW

    none = make_site(tmp_path / "b", workflow=None)
    run = adopt(none, "--no-workflow", install_from=".")  # not checked: nothing installs it
    assert run.exit_code == 0, run.stderr
    assert not (none / ".github").exists()
    assert "note: no workflow written (--no-workflow)" in run.lines


def test_a_workflow_that_builds_no_docs_does_not_stop_it(tmp_path: Path) -> None:
    tests = "name: tests\non: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n"
    site = make_site(tmp_path / "repo", workflow=tests)
    assert adopt(site).exit_code == 0
    assert set(workflows(site)) == {"docs.yml", "handbook.yml"}


SCRIPTED = (
    "name: tests\non: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - uses: actions/checkout@v4\n      - run: scripts/build\n"
)


def test_a_workflow_that_builds_the_docs_in_a_script_is_found(tmp_path: Path) -> None:
    """httpx's workflows run `scripts/build`, which runs `mkdocs build`: that is a docs
    workflow too, so nothing is written and no install requirement is asked for."""
    site = make_site(tmp_path / "repo", workflow=SCRIPTED)
    (site / "scripts").mkdir()
    (site / "scripts" / "build").write_text("#!/bin/sh -e\npython -m build\nmkdocs build\n")
    run = run_cli("init", "--adopt", str(site))  # no --install-from: nothing installs it
    assert run.exit_code == 0, run.stderr
    assert set(workflows(site)) == {"docs.yml"}
    assert any("builds its docs in docs.yml" in line for line in run.lines), run.lines


def test_a_script_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "build"
    outside.parent.mkdir()
    outside.write_text("mkdocs build\n")
    escaping = SCRIPTED.replace("scripts/build", "../elsewhere/build")
    site = make_site(tmp_path / "repo", workflow=escaping)
    assert adopt(site).exit_code == 0
    assert set(workflows(site)) == {"docs.yml", "handbook.yml"}


def test_an_existing_handbook_workflow_is_never_overwritten(tmp_path: Path) -> None:
    site = make_site(tmp_path / "repo", workflow=None)
    ours = site / ".github" / "workflows" / "handbook.yml"
    ours.parent.mkdir(parents=True)
    ours.write_text("name: ours\n", encoding="utf-8")
    run = adopt(site, "--workflow")
    assert run.exit_code == 0
    assert ours.read_text(encoding="utf-8") == "name: ours\n"
    assert "note: .github/workflows/handbook.yml exists; left as it is" in run.lines


@pytest.mark.parametrize(
    "spec", [".", "/opt/handbook", "git+file:///opt/handbook.git@v1", "../handbook"]
)
def test_a_local_install_is_refused_and_nothing_changes(tmp_path: Path, spec: str) -> None:
    site = make_site(tmp_path / "repo", workflow=None)
    before = (site / "mkdocs.yml").read_bytes()
    run = adopt(site, install_from=spec)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: the workflow would install Handbook from {spec!r}, a path on this machine "
        f"that no CI runner has; {ASK}\n"
    )
    assert (site / "mkdocs.yml").read_bytes() == before
    assert not (site / ".github").exists()


def test_the_repository_root_is_found_without_git(tmp_path: Path) -> None:
    """A `.git` folder above the site is the root even where git cannot answer."""
    from handbook_build.tasks.repository import repository_of

    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "webdoc").mkdir()
    found = repository_of(tmp_path / "repo" / "webdoc")
    assert (found.root, found.site) == (tmp_path / "repo", "webdoc")
    bare = tmp_path / "alone"
    bare.mkdir()
    assert repository_of(bare).site == "."
    git(tmp_path / "repo", "init", "-q")
    assert repository_of(tmp_path / "repo" / "webdoc").site == "webdoc"


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Widget Tools", "widget-tools"),
        ("Material for MkDocs", "material-for-mkdocs"),
        ("HTTPX", "httpx"),
        ("Über uns — Doku", "uber-uns-doku"),
        ("  v2.0 Docs!  ", "v2-0-docs"),
        ("文档", None),
        (None, None),
    ],
)
def test_the_library_name_comes_from_site_name(title: str | None, name: str | None) -> None:
    assert name_from_title(title) == name


def test_a_site_name_without_letters_falls_back_to_the_folder(tmp_path: Path) -> None:
    site = make_site(tmp_path / "webdoc", workflow=None)
    (site / "mkdocs.yml").write_text("site_name: 文档\nplugins:\n  - search\n", encoding="utf-8")
    assert adopt(site, "--no-workflow").exit_code == 0
    config = yaml.safe_load((site / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["plugins"][-1]["handbook"]["library"] == "webdoc"
