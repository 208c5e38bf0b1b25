"""A site as people have them before Handbook: a git repository with its own docs
workflow (`mkdocs build --strict`), an explicit `nav`, a strictness setting that makes
pages left out of the nav a warning, and pages that Handbook finds things in (no
frontmatter, a `<script>`, an event handler). Shared by the adoption tests, with the
commands they run on it as the site's own CI would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

MKDOCS_YML = """\
site_name: Widget Tools
nav:
  - Home: index.md
  - Setup: guide/setup.md
validation:
  nav:
    omitted_files: warn
plugins:
  - search
"""

PAGES = {
    "index.md": "# Widget Tools\n\nWidgets for every bench.\n\n"
    "<script>track('home')</script>\n\nMore about widgets.\n",
    "guide/setup.md": '# Setup\n\nInstall it <img src=x onerror="alert(1)"> now.\n\n'
    "## Steps\n\nPlug the widget in.\n",
}

DOCS_WORKFLOW = """\
name: docs
on: [push]
jobs:
  docs:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install mkdocs
      - name: Build the docs
        run: mkdocs build --strict
"""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_site(repo: Path, subfolder: str = ".", workflow: str | None = DOCS_WORKFLOW) -> Path:
    """The repository at `repo`, its site in `subfolder`; returns the site's folder."""
    site = repo / subfolder
    for rel, text in PAGES.items():
        (site / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / "docs" / rel).write_text(text, encoding="utf-8")
    (site / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    if workflow is not None:
        (repo / ".github" / "workflows").mkdir(parents=True)
        (repo / ".github" / "workflows" / "docs.yml").write_text(workflow, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    return site


def mkdocs(
    site: Path, *args: str, ci: bool = False, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`mkdocs build` of `site` in a child process (this Handbook on its PYTHONPATH), as
    a developer runs it, or as CI does (`ci`); signed only with `key`."""
    env = _env(ci, key)
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *args],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def workflow_build_steps(workflow: Path) -> list[str]:
    """The `run:` steps of a workflow that build or check the docs (installs are left
    out: the test has no network, and the tools are installed here already)."""
    jobs = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"]
    return [
        step["run"]
        for job in jobs.values()
        for step in job["steps"]
        if "run" in step and "pip install" not in step["run"]
    ]


def run_step(command: str, cwd: Path, key: str | None = None) -> subprocess.CompletedProcess[str]:
    """One workflow step, run by bash as GitHub runs it, with `CI=true`."""
    env = _env(True, key)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _env(ci: bool, key: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDBOOK_SIGNING_KEY")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    if ci:
        env["CI"] = "true"
    if key is not None:
        env["HANDBOOK_SIGNING_KEY"] = key
    return env
