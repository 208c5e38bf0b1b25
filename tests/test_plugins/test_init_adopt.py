"""`handbook init --adopt`: an existing site becomes a library by one insertion into its
configuration (or a handbook.yml beside it), every other byte kept; refused, with nothing
changed, where there is no site or it is configured already."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import KEY_FILE, Run, run_cli
from release_helpers import EPOCH, INSTALL_FROM, mkdocs_build

PAGE = "# Getting started\n\nInstall the tool, then run it on your files.\n"


def site(root: Path, config_name: str, config: str, pages: dict[str, str] | None = None) -> Path:
    (root / "docs").mkdir(parents=True)
    for rel, text in (pages or {"index.md": PAGE, "guides/setup.md": PAGE}).items():
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text(text, encoding="utf-8")
    (root / config_name).write_bytes(config.encode("utf-8"))
    return root


def adopt(folder: Path, *args: str) -> Run:
    return run_cli("init", "--adopt", str(folder), "--install-from", INSTALL_FROM, *args)


def test_a_site_without_plugins_gets_search_and_the_entry(tmp_path: Path) -> None:
    root = site(tmp_path / "s", "mkdocs.yml", "site_name: S\n")
    run = adopt(root)
    assert run.exit_code == 0, run.stderr
    text = (root / "mkdocs.yml").read_text(encoding="utf-8")
    assert text.startswith("site_name: S\n\nplugins:\n  - search\n  - handbook:\n")
    entry = yaml.safe_load(text)["plugins"][1]["handbook"]
    assert entry["library"] == "s"
    assert entry["adopt"] == {"default_kind": "page", "kinds": {"guides/**": "guides"}}
    assert entry["vocab"] == {"kind": ["guides", "page"]}
    check = run_cli("check", "--config", str(root))
    assert check.exit_code == 0 and "2 docs" in check.lines[-1], check.stdout


def test_the_entry_is_appended_to_a_block_plugins_list_and_nothing_else_changes(
    tmp_path: Path,
) -> None:
    config = (
        "site_name: S\r\n"
        "plugins:\r\n"
        "    - search:\r\n"
        "        lang: en   # a comment kept\r\n"
        "    - tags\r\n"
        "\r\n"
        "markdown_extensions:\r\n"
        "    - toc\r\n"
        "extra:\r\n"
        "  emoji: !!python/name:material.extensions.emoji.twemoji\r\n"
    )
    root = site(tmp_path / "s", "mkdocs.yml", config)
    assert adopt(root).exit_code == 0
    text = (root / "mkdocs.yml").read_bytes().decode("utf-8")
    head = config[: config.index("\r\n\r\nmarkdown_extensions")] + "\r\n"
    assert text.startswith(head + "    - handbook:\r\n        library: s\r\n")
    assert text.endswith(
        "\r\n\r\nmarkdown_extensions:\r\n    - toc\r\nextra:\r\n" + config.split("extra:\r\n")[1]
    )
    assert "\n" not in text.replace("\r\n", "")


@pytest.mark.parametrize("plugins", ["plugins: [search]\n", "plugins:\n  search: {}\n"])
def test_a_plugins_list_it_cannot_extend_gets_a_handbook_yml(tmp_path: Path, plugins: str) -> None:
    config = "site_name: S\n" + plugins
    root = site(tmp_path / "s", "mkdocs.yml", config)
    run = adopt(root)
    assert run.exit_code == 0, run.stderr
    assert (root / "mkdocs.yml").read_text(encoding="utf-8") == config
    standalone = yaml.safe_load((root / "handbook.yml").read_text(encoding="utf-8"))
    assert standalone["site"] == "mkdocs.yml" and standalone["library"] == "s"
    assert run_cli("check", "--config", str(root)).exit_code == 0


def test_a_zensical_toml_site(tmp_path: Path) -> None:
    root = site(tmp_path / "zen", "zensical.toml", '[project]\nsite_name = "Zen"\n')
    assert adopt(root).exit_code == 0
    assert (
        yaml.safe_load((root / "handbook.yml").read_text(encoding="utf-8"))["site"]
        == "zensical.toml"
    )
    check = run_cli("check", "--config", str(root))
    assert check.exit_code == 0 and "2 docs" in check.lines[-1], check.stdout


def test_an_existing_workflow_is_left_alone(tmp_path: Path) -> None:
    root = site(tmp_path / "s", "mkdocs.yml", "site_name: S\n")
    workflow = root / ".github" / "workflows" / "handbook.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: ours\n", encoding="utf-8")
    run = adopt(root)
    assert run.exit_code == 0
    assert workflow.read_text(encoding="utf-8") == "name: ours\n"
    assert "note: .github/workflows/handbook.yml exists; left as it is" in run.lines


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "no site here"),
        (
            {"mkdocs.yml": "plugins:\n  - handbook: {library: x, version: 1.0.0}\n"},
            "already has a `handbook` entry",
        ),
        ({"mkdocs.yml": "site_name: [unclosed\n"}, "invalid YAML"),
    ],
)
def test_refusals_change_nothing(tmp_path: Path, files: dict[str, str], message: str) -> None:
    root = tmp_path / "s"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    run = adopt(root)
    assert run.exit_code == 2
    assert message in run.stderr
    assert sorted(p.name for p in root.iterdir()) == sorted(files)
    for name, text in files.items():
        assert (root / name).read_text(encoding="utf-8") == text


def test_mkdocs_build_publishes_the_adopted_sites_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the site's own plugins are installed, `mkdocs build` renders it and writes
    the signed bundle, the same bytes `handbook build` writes."""
    root = site(tmp_path / "s", "mkdocs.yml", "site_name: S\ntheme: {name: material}\n")
    assert adopt(root).exit_code == 0
    done = mkdocs_build(root)
    assert done.returncode == 0, done.stderr
    assert "handbook: 8 notices (`handbook check --explain` lists them)" in done.stderr
    assert "HB601" not in done.stderr  # each notice is a debug line, not noise
    assert (root / "site" / "guides" / "setup" / "index.html").is_file()
    by_mkdocs = (root / "build" / "bundle" / "catalog.json").read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    again = run_cli(
        "build", "--config", str(root), "--out", str(tmp_path / "b"), "--key", str(KEY_FILE)
    )
    assert again.exit_code == 0, again.stderr
    assert (tmp_path / "b" / "catalog.json").read_bytes() == by_mkdocs
