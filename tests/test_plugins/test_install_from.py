"""What the workflow of `handbook init` installs Handbook with: `--install-from SPEC`,
checked so it cannot break the workflow's YAML or shell step; by default the commit the
running Handbook comes from, on a remote that has it; else a refusal. The default is
followed for real: the generated step installs the pinned commit into a fresh virtual
environment, from a local repository, with no index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES
from release_helpers import commit_all, git, init, new_repository

from handbook_build.tasks import install
from handbook_build.tasks.install import ASK, pip_url

pytest_plugins = ["release_fixtures"]
pytestmark = pytest.mark.usefixtures("clean_environment")

SHA = "5f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6"


def workflow_env(folder: Path) -> dict[str, Any]:
    workflow = yaml.safe_load((folder / ".github" / "workflows" / "handbook.yml").read_text())
    env: dict[str, Any] = workflow["env"]
    return env


@pytest.mark.parametrize(
    "spec",
    [
        "handbook==0.1.0",
        "handbook~=0.1.0",
        f"git+https://github.com/org/handbook@{SHA}",
        "git+https://github.com/org/handbook.git@v0.1.0",
        f"git+ssh://git@github.com/org/handbook.git@{SHA}#egg=handbook",
        "https://files.example.com/wheels/handbook-0.1.0-py3-none-any.whl",
        "./wheels/handbook-0.1.0-py3-none-any.whl",
    ],
)
def test_a_pinned_requirement_goes_into_the_workflow_as_it_is(tmp_path: Path, spec: str) -> None:
    run = init(tmp_path / "lib", install_from=spec)
    assert run.exit_code == 0, run.stderr
    assert workflow_env(tmp_path / "lib") == {"HANDBOOK": spec}
    assert f"the workflow installs Handbook with: {spec}" in run.lines


@pytest.mark.parametrize(
    "spec",
    [
        "handbook==0.1.0\nrun: curl https://evil.example",
        'handbook"',
        "handbook; curl https://evil.example",
        "$(curl https://evil.example)",
        "`id`",
        "${{ secrets.HANDBOOK_SIGNING_KEY }}",
        "handbook >=0.1",
        "handbook>=0.1",
        "handbook[serve]",
        "handbook\\",
        "handbook|x",
        "handbook&",
    ],
)
def test_a_requirement_that_could_break_the_workflow_is_refused(tmp_path: Path, spec: str) -> None:
    run = init(tmp_path / "lib", install_from=spec)
    assert run.exit_code == 2
    assert f"Error: --install-from {spec!r}: " in run.stderr
    assert "a requirement here has only letters, digits and . _ ~ : / ? # @ + , = % -" in run.stderr
    assert not (tmp_path / "lib").exists()


def test_refusal_messages_verbatim(tmp_path: Path) -> None:
    newline = init(tmp_path / "lib", install_from="handbook==0.1.0\nrun: x")
    assert newline.stderr.endswith(
        "Error: --install-from 'handbook==0.1.0\\nrun: x': '\\n' cannot go into the workflow's "
        "YAML and shell step as it is; a requirement here has only letters, digits and "
        ". _ ~ : / ? # @ + , = % -\n"
    )
    option = init(tmp_path / "lib", install_from="--index-url=https://evil.example")
    assert option.stderr.endswith(
        "Error: --install-from '--index-url=https://evil.example' starts with '-', which pip "
        f"would read as an option; {ASK}\n"
    )
    empty = init(tmp_path / "lib", install_from="")
    assert empty.stderr.endswith(f"Error: --install-from is empty; {ASK}\n")
    assert (newline.exit_code, option.exit_code, empty.exit_code) == (2, 2, 2)


# -- the default: the commit the running Handbook comes from ---------------------------------


REMOTE = "https://git.example.invalid/handbook.git"
"""The stand-in's remote as a runner reaches it; pushes go to a bare repository instead."""


def served(checkout: Path, bare: Path, name: str, url: str) -> None:
    """Give `checkout` the remote `name` at `url` (what the workflow names), backed by
    the local bare repository `bare` (`pushInsteadOf`: only pushes are redirected, so
    git still reports `url`), and push `main` to it."""
    git(bare.parent, "init", "-q", "--bare", "-b", "main", str(bare))
    git(checkout, "remote", "add", name, url)
    git(checkout, "config", f"url.{bare.as_uri()}.pushInsteadOf", url)
    git(checkout, "push", "-q", name, "main")


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in Handbook checkout (a `handbook` distribution pip builds offline), with
    a bare remote `origin` that has its commit; the running Handbook "comes from" it."""
    root = tmp_path / "handbook-src"
    shutil.copytree(FIXTURES / "stub-handbook", root)
    new_repository(root, "Stand-in Handbook")
    served(root, tmp_path / "remote.git", "origin", REMOTE)
    monkeypatch.setattr(install, "HANDBOOK_CODE", root / "handbook")
    return root


def test_by_default_the_workflow_installs_the_running_commit(
    checkout: Path, tmp_path: Path
) -> None:
    commit = git(checkout, "rev-parse", "HEAD")
    run = init(tmp_path / "lib", install_from=None)
    assert run.exit_code == 0, run.stderr
    spec = f"git+{REMOTE}@{commit}"
    assert workflow_env(tmp_path / "lib") == {"HANDBOOK": spec}
    assert f"the workflow installs Handbook with: {spec}" in run.lines


def test_the_generated_step_installs_the_pinned_commit(checkout: Path, tmp_path: Path) -> None:
    """The workflow's own install step, run by bash as GitHub runs it, with pip from a
    fresh virtual environment and no index: pip builds the remote's commit and installs
    it, and records that commit as what it installed."""
    commit = git(checkout, "rev-parse", "HEAD")
    assert init(tmp_path / "lib", install_from=None).exit_code == 0
    workflow = yaml.safe_load(
        (tmp_path / "lib" / ".github" / "workflows" / "handbook.yml").read_text()
    )
    steps = {
        s["run"]
        for job in workflow["jobs"].values()
        for s in job["steps"]
        if "pip" in s.get("run", "")
    }
    assert steps == {'pip install "$HANDBOOK"'}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "HANDBOOK": workflow["env"]["HANDBOOK"],
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        # the runner would fetch REMOTE; here it is the bare repository the fixture pushed to
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{(tmp_path / 'remote.git').as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": REMOTE,
    }
    done = subprocess.run(
        ["bash", "-e", "-c", steps.pop()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    installed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; d = m.distribution('handbook'); "
            "print(d.version); print(d.read_text('direct_url.json'))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert installed[0] == "0.0.0"
    assert json.loads(installed[1]) == {
        "url": REMOTE,
        "vcs_info": {"commit_id": commit, "requested_revision": commit, "vcs": "git"},
    }


def test_without_a_remote_init_refuses_and_asks_for_install_from(
    checkout: Path, tmp_path: Path
) -> None:
    git(checkout, "remote", "remove", "origin")
    run = init(tmp_path / "lib", install_from=None)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: the Handbook checkout {checkout} has no git remote a CI runner could "
        f"install from; {ASK}\n"
    )
    assert not (tmp_path / "lib").exists()


def test_an_unpushed_commit_is_refused(checkout: Path, tmp_path: Path) -> None:
    (checkout / "handbook" / "__init__.py").write_text('"""Changed, not pushed."""\n')
    commit_all(checkout, "Not pushed")
    commit = git(checkout, "rev-parse", "HEAD")
    run = init(tmp_path / "lib", install_from=None)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: commit {commit[:12]} of the Handbook checkout {checkout} is on no branch of "
        f"its remotes (origin) as far as this checkout knows; push it, or {ASK}\n"
    )


def test_the_remote_that_has_the_commit_is_chosen(checkout: Path, tmp_path: Path) -> None:
    """`origin` comes first, but only a remote that has the commit will do."""
    mirror = "https://mirror.example.invalid/handbook.git"
    (checkout / "handbook" / "__init__.py").write_text('"""On the mirror only."""\n')
    commit_all(checkout, "Mirror only")
    served(checkout, tmp_path / "mirror.git", "mirror", mirror)
    commit = git(checkout, "rev-parse", "HEAD")
    assert install.default_spec() == f"git+{mirror}@{commit}"


@pytest.mark.parametrize("remote", ["folder", "file URL"])
def test_a_remote_on_this_machine_is_refused(checkout: Path, tmp_path: Path, remote: str) -> None:
    """A checkout whose remote is a folder here: no runner has it, so the workflow would
    fail on its first push."""
    bare = tmp_path / "local.git"
    git(tmp_path, "clone", "-q", "--bare", str(checkout), str(bare))
    git(checkout, "remote", "set-url", "origin", str(bare) if remote == "folder" else bare.as_uri())
    git(checkout, "fetch", "-q", "origin")
    commit = git(checkout, "rev-parse", "HEAD")
    run = init(tmp_path / "lib", install_from=None)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: the workflow would install Handbook from 'git+{bare.as_uri()}@{commit}', a "
        f"path on this machine that no CI runner has; {ASK}\n"
    )
    assert not (tmp_path / "lib").exists()


@pytest.mark.parametrize(
    "spec",
    [
        ".",
        "..",
        "../handbook",
        "/opt/handbook",
        "~/src/handbook",
        "file:///opt/h",
        "git+file:///opt/handbook.git@v1",
        "./handbook-src",
        "wheels/../../h.whl",
    ],
)
def test_a_local_install_from_is_refused(tmp_path: Path, spec: str) -> None:
    run = init(tmp_path / "lib", install_from=spec)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: the workflow would install Handbook from {spec!r}, a path on this machine "
        f"that no CI runner has; {ASK}\n"
    )
    assert not (tmp_path / "lib").exists()


@pytest.mark.parametrize("where", ["no checkout", "untracked in a checkout"])
def test_code_outside_a_committed_checkout_is_refused(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Handbook installed from a wheel into a virtual environment that sits inside some
    project's checkout is not that project's code."""
    if where == "no checkout":
        code = tmp_path / "site-packages" / "handbook"
    else:
        code = checkout / ".venv" / "lib" / "site-packages" / "handbook"
    code.mkdir(parents=True)
    (code / "__init__.py").write_text("")
    monkeypatch.setattr(install, "HANDBOOK_CODE", code)
    run = init(tmp_path / "lib", install_from=None)
    assert run.exit_code == 2
    assert run.stderr.endswith(
        f"Error: Handbook runs from {code}, which is not committed in a git checkout; {ASK}\n"
    )


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("https://github.com/org/handbook.git", "https://github.com/org/handbook.git"),
        ("git@github.com:org/handbook.git", "ssh://git@github.com/org/handbook.git"),
        ("github.com:org/handbook", "ssh://github.com/org/handbook"),
        ("host:/srv/git/handbook.git", "ssh://host/srv/git/handbook.git"),
        ("ssh://git@host:2222/org/handbook.git", "ssh://git@host:2222/org/handbook.git"),
        ("ssh://git:secret@[::1]/org/handbook.git", "ssh://git@[::1]/org/handbook.git"),
        (
            "https://x-access-token:ghs_secret@github.com/org/handbook.git",
            "https://github.com/org/handbook.git",
        ),
        ("https://ghp_token@github.com/org/handbook", "https://github.com/org/handbook"),
        ("file:///srv/git/handbook.git", "file:///srv/git/handbook.git"),
        ("/srv/git/handbook.git", "file:///srv/git/handbook.git"),
        ("../shared/handbook.git", "file:///work/shared/handbook.git"),
    ],
)
def test_remote_urls_as_pip_reads_them(remote: str, url: str) -> None:
    assert pip_url(remote, Path("/work/checkout")) == url
