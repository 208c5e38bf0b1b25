"""The build side's one exception tree, as drawn in `handbook_build/errors.py`, and the
one place that turns it into output and exit codes: every build command reports the same
failure the same way (1 findings and refusals, 2 usage errors)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from conftest import VALID_DOC, MakeLibrary, run_cli

import handbook.errors
from handbook_build import errors


def drawn_parents() -> dict[str, str]:
    """Class name -> parent name, as the module docstring's tree draws them."""
    tree = (errors.__doc__ or "").split("::", 1)[1].split("\n\n")[1]
    parents: dict[str, str] = {}
    at_depth: dict[int, str] = {}
    for line in tree.splitlines():
        found = re.search(r"\w+", line)
        assert found, line
        depth = found.start() // 4
        at_depth[depth] = found.group()
        if depth > 1:
            parents[found.group()] = at_depth[depth - 1]
    return parents


def test_the_drawn_tree_is_the_tree() -> None:
    classes = {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__
    }
    parents = drawn_parents()
    assert set(parents) | {"HandbookBuildError"} == set(classes)
    assert errors.HandbookBuildError.__bases__ == (handbook.errors.HandbookError,)
    for name, parent in parents.items():
        assert [base.__name__ for base in classes[name].__bases__] == [parent], name


def test_the_old_homes_still_export_their_errors() -> None:
    from handbook_build import pipeline
    from handbook_build.config import settings as config
    from handbook_build.read import frontmatter
    from handbook_build.tasks import release, scaffold
    from handbook_build.write import seal

    assert config.ConfigError is errors.ConfigError
    assert frontmatter.FrontmatterError is errors.FrontmatterError
    assert pipeline.BuildError is errors.BuildError
    assert (seal.PublishError, release.ReleaseError, scaffold.ScaffoldError) == (
        errors.PublishError,
        errors.ReleaseError,
        errors.ScaffoldError,
    )


@pytest.fixture
def library(make_library: MakeLibrary) -> Path:
    return make_library({"a.md": VALID_DOC.format(id="a")})


@pytest.fixture(autouse=True)
def _no_key_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CI", "HANDBOOK_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("command", ["build", "release"])
def test_a_configuration_error_is_a_usage_error_with_its_findings(
    tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "nope.yml"
    run = run_cli(command, *(["--patch"] if command == "release" else []), "--config", str(missing))
    assert run.exit_code == 2
    assert run.lines == [
        f"{missing}:1:1: HB001 no such file; pass --config PATH, create {missing} or run `handbook init`"
    ]
    assert run.stderr == f"{missing}: configuration error, nothing checked\n"


def test_a_malformed_key_is_a_usage_error(library: Path, tmp_path: Path) -> None:
    key = tmp_path / "bad.pem"
    key.write_text("not a key\n")
    run = run_cli("build", "--config", str(library), "--key", str(key))
    assert run.exit_code == 2
    assert run.stderr.startswith("Usage: ") and " build [OPTIONS]\n" in run.stderr
    assert f"\nError: {key} is not an unencrypted PEM private key (" in run.stderr
    assert run.stdout == ""


def test_a_required_signature_without_a_key_is_refused(library: Path, tmp_path: Path) -> None:
    run = run_cli("build", "--config", str(library), "--out", str(tmp_path / "b"), "--strict")
    assert run.exit_code == 1
    assert run.stderr == (
        "error: no signing key; pass --key KEYFILE, set $HANDBOOK_SIGNING_KEY or "
        "handbook.signing_key (unsigned builds are refused under --strict and in CI)\n"
    )
    assert not (tmp_path / "b").exists()


def test_an_archive_that_cannot_be_written_is_an_error(library: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    assert run_cli("build", "--config", str(library), "--out", str(bundle)).exit_code == 0
    out = tmp_path / "missing" / "b.tar.gz"
    run = run_cli("pack", str(bundle), "-o", str(out))
    assert run.exit_code == 1
    assert run.stderr == f"error: cannot write {out}: No such file or directory\n"


def test_an_os_error_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    folder = tmp_path / "a-file" / "lib"
    run = run_cli("init", str(folder), "--install-from", "handbook==0.1.0")
    assert run.exit_code == 1
    assert run.stderr == f"error: [Errno 20] Not a directory: '{folder}'\n"
