"""Where the configuration is found and read: mkdocs.yml, zensical.yml, zensical.toml, a
standalone handbook.yml, or a bare folder of Agent Skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from handbook_build.config.settings import ConfigError, load_config
from handbook_build.config.site_config import find


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return [str(f) for f in info.value.findings]


SKILL = "---\nname: {name}\ndescription: Does {name} things.\n---\n# {name}\n\nBody.\n"


def test_handbook_yml_wins_and_takes_docs_dir_and_nav_from_the_site_it_names(
    tmp_path: Path,
) -> None:
    site = tree(
        tmp_path,
        {
            "site/mkdocs.yml": "site_name: Site\ndocs_dir: pages\nnav:\n  - Start here: index.md\n",
            "site/pages/index.md": "# Home\n",
            "handbook.yml": "site: site/mkdocs.yml\nlibrary: lib\nversion: 1.0.0\nadopt: {}\n",
            "mkdocs.yml": "site_name: ignored\n",
        },
    )
    assert find(site) == site / "handbook.yml"
    config = load_config(site)
    assert config.docs_dir == (site / "site" / "pages").resolve()
    assert config.site_name == "Site"
    assert config.nav_titles == {"index.md": "Start here"}
    assert config.adopt is not None


def test_zensical_toml_settings_and_entry(tmp_path: Path) -> None:
    site = tree(
        tmp_path,
        {
            "zensical.toml": (
                '[project]\nsite_name = "Zen"\ndocs_dir = "content"\n'
                "[project.markdown_extensions.admonition]\n"
                '[project.plugins.handbook]\nlibrary = "zen"\nversion = "2.0.0"\n'
            ),
            "content/index.md": "# Zen\n",
        },
    )
    config = load_config(site)
    assert (config.library, config.version, config.site_name) == ("zen", "2.0.0", "Zen")
    assert config.docs_dir == (site / "content").resolve()


def test_zensical_toml_without_an_entry_says_how_to_add_one(tmp_path: Path) -> None:
    tree(tmp_path, {"zensical.toml": '[project]\nsite_name = "Zen"\n'})
    [message] = problems(tmp_path)
    assert message.endswith(
        "zensical.toml:1:1: HB001 no `[project.plugins.handbook]` table; add one with `library` "
        "and `version`, or run `handbook init --adopt`"
    )


def test_broken_toml_is_reported_at_its_line(tmp_path: Path) -> None:
    tree(tmp_path, {"zensical.toml": '[project]\nsite_name = "Zen"\n[project.plugins\n'})
    [message] = problems(tmp_path)
    assert "zensical.toml:3:" in message
    assert "HB001 invalid TOML: " in message
    assert "(at line" not in message


def test_zensical_yml_reads_like_mkdocs_yml(tmp_path: Path) -> None:
    tree(
        tmp_path,
        {
            "zensical.yml": "site_name: Z\nplugins:\n  - handbook:\n      library: z\n      version: 1.0.0\n",
            "docs/index.md": "# Z\n",
        },
    )
    assert load_config(tmp_path).library == "z"


def test_handbook_yml_naming_a_missing_site(tmp_path: Path) -> None:
    tree(tmp_path, {"handbook.yml": "site: nowhere.yml\nlibrary: lib\nversion: 1.0.0\n"})
    [message] = problems(tmp_path)
    assert (
        message
        == "nowhere.yml:1:1: HB001 no such file; pass --config PATH, create nowhere.yml or run `handbook init`"
    )


def test_a_folder_of_skills_is_a_library_of_its_skills(tmp_path: Path) -> None:
    root = tree(
        tmp_path / "Team Skills!",
        {
            "pdf/SKILL.md": SKILL.format(name="pdf"),
            "pdf/reference.md": "# Reference\n",
            "README.md": "# Not a skill\n",
        },
    )
    assert find(root) == root
    config = load_config(root)
    assert (config.library, config.version, config.layout) == ("team-skills", "0.1.0", "skills")
    assert config.adopt is not None and config.adopt.default_kind == "skill"
    assert config.docs_dir == root.resolve()


def test_a_folder_with_nothing_to_read(tmp_path: Path) -> None:
    [message] = problems(tmp_path)
    assert "HB001 no such file" in message
