"""`handbook adopt`: derived fields pinned into the pages, shown first, written only with
--write, no other byte changed, unparsable files left alone, and a second run a no-op."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

from handbook_build import load_config
from handbook_build.errors import PublishError
from handbook_build.pipeline import check
from handbook_build.tasks.pin import pinned, plan, write

ADOPTED = FIXTURES / "adopted"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    copy = tmp_path / "adopted"
    shutil.copytree(ADOPTED, copy)
    return copy


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def ids(site: Path) -> list[str]:
    return sorted(doc.id for doc in check(load_config(site / "mkdocs.yml")).docs)


def test_preview_shows_a_diff_and_writes_nothing(site: Path) -> None:
    before = snapshot(site)
    run = run_cli("adopt", "--config", str(site / "mkdocs.yml"))
    assert run.exit_code == 0, run.stderr
    assert snapshot(site) == before
    assert "+id: guides.no-heading\n" in run.stdout
    assert run.lines[-1] == "5 pages would get 20 fields; `handbook adopt --write` writes them"
    assert "1 skill keep the frontmatter of the Agent Skills specification" in run.stdout


def test_write_pins_keeps_ids_and_a_second_run_changes_nothing(site: Path) -> None:
    config = site / "mkdocs.yml"
    derived_ids = ids(site)
    run = run_cli("adopt", "--write", "--config", str(config))
    assert run.exit_code == 0, run.stderr
    assert run.lines[-1] == "pinned 20 fields into 5 pages"
    assert ids(site) == derived_ids
    check = run_cli("check", "--explain", "--config", str(config))
    assert not [line for line in check.lines if ": HB60" in line and "skills/" not in line]
    after = snapshot(site)
    again = run_cli("adopt", "--write", "--config", str(config))
    assert again.lines[-1] == "nothing to pin: every page has its id, title, kind and summary"
    assert snapshot(site) == after


def test_only_the_missing_fields_are_inserted_and_no_other_byte_changes() -> None:
    page = (
        "\ufeff---\r\ntitle: 'Kept: as written'  # a comment\r\n---\r\n# Heading\r\n\r\nBody.\r\n"
    )
    out = pinned(page.encode(), {"id": "a.b", "summary": 'Says: "things" # not a comment'})
    assert out is not None
    assert out.decode() == (
        "\ufeff---\r\ntitle: 'Kept: as written'  # a comment\r\nid: a.b\r\n"
        "summary: 'Says: \"things\" # not a comment'\r\n---\r\n# Heading\r\n\r\nBody.\r\n"
    )


def test_a_page_without_frontmatter_gets_one() -> None:
    out = pinned(b"# Title\n\nText.\n", {"id": "x", "title": "Ti\u00fcle"})
    assert out == "---\nid: x\ntitle: Ti\u00fcle\n---\n# Title\n\nText.\n".encode()


def test_a_page_that_does_not_parse_is_left_alone(site: Path) -> None:
    broken = site / "docs" / "guides" / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\nBody.\n", encoding="utf-8")
    run = run_cli("adopt", "--write", "--config", str(site / "mkdocs.yml"))
    assert run.exit_code == 0
    assert broken.read_text(encoding="utf-8") == "---\ntitle: [unclosed\n---\nBody.\n"
    assert "docs/guides/broken.md: HB203 frontmatter is not valid YAML" in run.stderr


def test_a_file_changed_since_it_was_read_is_not_overwritten(site: Path) -> None:
    config = load_config(site / "mkdocs.yml")
    planned = plan(config)
    target = config.docs_dir / planned.changes[0].path
    target.write_text("edited meanwhile\n", encoding="utf-8")
    with pytest.raises(PublishError, match="changed since it was read"):
        write(config, planned.changes)
    assert target.read_text(encoding="utf-8") == "edited meanwhile\n"
