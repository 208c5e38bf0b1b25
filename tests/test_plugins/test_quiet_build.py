"""Quiet by default: `handbook build` counts what it does not list (`--explain` lists
every finding), and `handbook serve` serves the site where its configuration builds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from adopted_site import make_site
from conftest import run_cli
from release_helpers import INSTALL_FROM

from handbook.cli.serving import configured_site


@pytest.fixture
def adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = make_site(tmp_path / "repo", workflow=None)
    assert run_cli("init", "--adopt", str(site), "--install-from", INSTALL_FROM).exit_code == 0
    monkeypatch.chdir(site)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY", raising=False)
    return site


def test_build_counts_the_findings_it_does_not_list(adopted: Path) -> None:
    run = run_cli("build")
    assert run.exit_code == 0, run.stderr
    assert run.lines[0] == "2 warnings, 8 notices (--explain lists them)"
    assert run.lines[1].startswith("built widget-tools 0.1.0: 2 docs, ")
    assert not any("HB6" in line or "HB403" in line for line in run.lines)


def test_explain_lists_every_finding_and_the_rules_that_spoke(adopted: Path) -> None:
    run = run_cli("build", "--explain")
    assert run.exit_code == 0, run.stderr
    listed = [line for line in run.lines if ": HB" in line]
    assert len(listed) == 10
    assert (
        "guide/setup.md:3:12: HB403 (warning) event handler `onerror` on `<img>`: it runs "
        "script on the reader's page; remove the attribute"
    ) in listed
    assert "Rules that spoke:" in run.lines
    assert not any("(--explain lists them)" in line for line in run.lines)


def test_a_strict_site_lists_its_warnings(adopted: Path) -> None:
    text = (adopted / "mkdocs.yml").read_text(encoding="utf-8")
    (adopted / "mkdocs.yml").write_text(text.replace("strict: false", "strict: true"))
    run = run_cli("build")
    assert run.exit_code == 0, run.stderr
    assert [line.split(": ")[1].split(" ")[0] for line in run.lines if ": HB" in line] == [
        "HB403",
        "HB403",
    ]
    assert run.lines[2] == "8 notices (--explain lists them)"


def test_serve_finds_the_site_where_the_configuration_builds_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: S\nsite_dir: public/html\n")
    assert configured_site(tmp_path) == tmp_path / "public" / "html"
    (tmp_path / "mkdocs.yml").write_text("site_name: S\n")
    assert configured_site(tmp_path) == tmp_path / "site"  # MkDocs' default
    (tmp_path / "mkdocs.yml").write_text("site_name: [unclosed\n")
    assert configured_site(tmp_path) == Path("build/site")  # unreadable: Handbook's default
    empty = tmp_path / "empty"
    empty.mkdir()
    assert configured_site(empty) == Path("build/site")
