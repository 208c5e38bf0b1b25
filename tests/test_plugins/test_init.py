"""`handbook init`: a library that passes its own check at once, whose GitHub workflow
is valid for GitHub and whose release steps work."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import PUBLIC, run_cli
from release_helpers import INSTALL_FROM, files_of, init, mkdocs_build

from handbook_build import load_config

pytest_plugins = ["release_fixtures"]
pytestmark = pytest.mark.usefixtures("clean_environment")

INIT_FILES = [
    "mkdocs.yml",
    "docs/index.md",
    "docs/guides/writing-docs.md",
    ".gitignore",
    ".github/workflows/handbook.yml",
]


def workflow_of(folder: Path) -> dict[str, Any]:
    """The workflow as GitHub reads it. PyYAML follows YAML 1.1, where the key `on` is
    the boolean true; GitHub (and check-jsonschema's YAML 1.2 loader) read a string."""
    loaded = yaml.safe_load(
        (folder / ".github" / "workflows" / "handbook.yml").read_text(encoding="utf-8")
    )
    assert isinstance(loaded, dict)
    if True in loaded:
        loaded["on"] = loaded.pop(True)
    return loaded


def github_workflow_schema() -> dict[str, Any]:
    """The GitHub workflow schema vendored by the `check-jsonschema` package."""
    spec = importlib.util.find_spec("check_jsonschema")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "check-jsonschema is not installed (pip install check-jsonschema): "
            "the workflow cannot be validated against GitHub's schema"
        )
    found = sorted(
        p
        for location in spec.submodule_search_locations
        for p in Path(location).rglob("github-workflows.json")
    )
    assert found, "check-jsonschema no longer vendors github-workflows.json"
    schema: dict[str, Any] = json.loads(found[0].read_text(encoding="utf-8"))
    return schema


def test_init_writes_a_library_that_passes_its_own_strict_check(tmp_path: Path) -> None:
    folder = tmp_path / "plant"
    run = init(folder)
    assert run.exit_code == 0, run.stderr
    assert sorted(files_of(folder)) == sorted(INIT_FILES)
    for rel in INIT_FILES:
        assert f"wrote {folder / rel}" in run.stdout
    check = run_cli("check", "--strict", "--config", str(folder / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout + check.stderr
    assert "2 files checked (2 docs): 0 errors, 0 warnings" in check.stdout + check.stderr
    config = load_config(folder / "mkdocs.yml")
    assert config.library == "plant"
    assert config.version == "0.1.0"
    ignored = (folder / ".gitignore").read_text().splitlines()
    assert {"build/", "*.key", "*.pem"} <= set(ignored)


def test_init_takes_name_and_title_and_derives_a_name_from_the_folder(tmp_path: Path) -> None:
    named = init(tmp_path / "a", "--name", "line-2.docs", "--title", "Line two")
    assert named.exit_code == 0, named.stderr
    assert load_config(tmp_path / "a" / "mkdocs.yml").library == "line-2.docs"
    assert yaml.safe_load((tmp_path / "a" / "mkdocs.yml").read_text())["site_name"] == "Line two"
    assert "id: line-2.docs.overview" in (tmp_path / "a" / "docs" / "index.md").read_text()

    derived = init(tmp_path / "My Plant Docs")
    assert derived.exit_code == 0, derived.stderr
    assert load_config(tmp_path / "My Plant Docs" / "mkdocs.yml").library == "my-plant-docs"
    check = run_cli("check", "--strict", "--config", str(tmp_path / "My Plant Docs" / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout


@pytest.mark.parametrize("title", ["Plant floor: line 2", "#1 plant docs", "[draft] plant docs"])
def test_init_keeps_any_title_intact(tmp_path: Path, title: str) -> None:
    folder = tmp_path / "lib"
    assert init(folder, "--title", title).exit_code == 0
    check = run_cli("check", "--strict", "--config", str(folder / "mkdocs.yml"))
    assert check.exit_code == 0, check.stdout + check.stderr
    assert yaml.safe_load((folder / "mkdocs.yml").read_text())["site_name"] == title
    assert (
        yaml.safe_load((folder / "docs" / "index.md").read_text().split("---")[1])["title"] == title
    )


def test_second_init_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    assert init(folder).exit_code == 0
    (folder / "docs" / "index.md").write_text("edited by the author\n")
    before = files_of(folder)
    again = init(folder)
    assert again.exit_code == 2
    assert "already exist" in again.stderr
    assert files_of(folder) == before


def test_init_overwrites_no_single_file_and_writes_nothing_then(tmp_path: Path) -> None:
    folder = tmp_path / "existing"
    folder.mkdir()
    (folder / ".gitignore").write_text("mine\n")
    run = init(folder)
    assert run.exit_code == 2
    assert ".gitignore" in run.stderr
    assert files_of(folder) == {".gitignore": b"mine\n"}


@pytest.mark.parametrize("name", ["Bad Name", "a..b", "UPPER", "x/y"])
def test_init_refuses_a_bad_name(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "lib"
    run = init(folder, "--name", name)
    assert run.exit_code == 2
    assert "is not a library name" in run.stderr
    assert not folder.exists()


def test_init_workflow_is_valid_for_github(tmp_path: Path) -> None:
    assert init(tmp_path / "lib").exit_code == 0
    schema = github_workflow_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    assert schema.get("$schema", "").startswith("http://json-schema.org/draft-07")
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    workflow = workflow_of(tmp_path / "lib")
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(workflow)
    ]
    assert errors == []
    # the schema does catch a broken workflow
    broken = {**workflow, "jobs": {"check": {"steps": [{"run": "x"}]}}}
    assert list(validator.iter_errors(broken))


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _step_running(job: dict[str, Any], command: str) -> tuple[int, dict[str, Any]]:
    found = [(n, s) for n, s in enumerate(_steps(job)) if command in s.get("run", "")]
    assert len(found) == 1, f"expected one step running {command!r}, found {len(found)}"
    return found[0]


def _step_using(job: dict[str, Any], action: str) -> tuple[int, dict[str, Any]]:
    found = [(n, s) for n, s in enumerate(_steps(job)) if s.get("uses", "").split("@")[0] == action]
    assert len(found) == 1, f"expected one step using {action}, found {len(found)}"
    return found[0]


def test_init_workflow_checks_every_push_and_releases_tags(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    assert init(folder).exit_code == 0
    workflow = workflow_of(folder)
    triggers = workflow["on"]
    assert "push" in triggers and "pull_request" in triggers
    assert not (triggers.get("push") or {}).get("branches"), "tags must trigger the workflow too"
    assert workflow["env"] == {"HANDBOOK": INSTALL_FROM}
    installs = [
        s["run"]
        for job in workflow["jobs"].values()
        for s in _steps(job)
        if "pip" in s.get("run", "")
    ]
    assert installs == ['pip install "$HANDBOOK"'] * len(workflow["jobs"])

    jobs = workflow["jobs"]
    checking = [
        name
        for name, job in jobs.items()
        if any("handbook check --format github" in s.get("run", "") for s in _steps(job))
    ]
    assert len(checking) == 1
    assert "if" not in jobs[checking[0]], "the check must run on every push and pull request"

    releasing = [name for name, job in jobs.items() if "refs/tags/v" in str(job.get("if", ""))]
    assert len(releasing) == 1
    job = jobs[releasing[0]]
    needs = job.get("needs", [])
    assert checking[0] in ([needs] if isinstance(needs, str) else needs)
    permissions = job["permissions"]
    assert (
        permissions["contents"] == "write"
        and permissions["pages"] == "write"
        and permissions["id-token"] == "write"
    )

    build_at, build_step = _step_running(job, "mkdocs build --strict")
    assert (
        build_step["env"]["HANDBOOK_SIGNING_KEY"].replace(" ", "")
        == "${{secrets.HANDBOOK_SIGNING_KEY}}"
    )
    pack_at, pack_step = _step_running(job, "handbook pack")
    packed = re.search(r"handbook pack (\S+) -o (\S+)", pack_step["run"])
    assert packed, pack_step["run"]
    config = yaml.safe_load((folder / "mkdocs.yml").read_text())
    assert packed.group(1) == "build/bundle"  # where `mkdocs build` publishes the bundle by default
    upload_at, upload_step = _step_running(job, "gh release create")
    assert packed.group(2) in upload_step["run"], "the release must carry the packed archive"
    assert "GH_TOKEN" in upload_step.get("env", {})
    pages_at, pages_step = _step_using(job, "actions/upload-pages-artifact")
    assert pages_step["with"]["path"] == config["site_dir"]
    deploy_at, _ = _step_using(job, "actions/deploy-pages")
    assert build_at < pack_at < upload_at
    assert build_at < pages_at < deploy_at


def test_init_workflow_release_steps_work_on_the_new_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release job's commands, run here: mkdocs build --strict with the key in the
    environment, then `handbook pack` of what it published; the archive verifies."""
    folder = tmp_path / "lib"
    assert init(folder).exit_code == 0
    done = mkdocs_build(folder, "--strict")
    assert done.returncode == 0, done.stderr
    assert (folder / "build" / "site" / "index.html").is_file()
    monkeypatch.chdir(folder)
    packed = run_cli("pack", "build/bundle", "-o", "bundle-v0.1.0.tar.gz")
    assert packed.exit_code == 0, packed.stderr
    verified = run_cli("verify", "bundle-v0.1.0.tar.gz", "--key", PUBLIC)
    assert verified.exit_code == 0, verified.stderr
    assert verified.lines[-1] == "ok"
