"""Includes expanded by the site's own include extensions: what the bundle holds, where
findings point, and every include that cannot be expanded reported at its line."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import KEY, KEY_PEM, PUBLIC
from markdown_it import MarkdownIt
from pymdownx.snippets import SnippetPreprocessor

from handbook.libraries.library import Library
from handbook_build import load_config, workers
from handbook_build.pipeline import build, check
from handbook_build.read.includes import Configured, configured

DOC = """\
---
id: {id}
title: Guide {id}
kind: guide
summary: A doc with includes.
---
"""


def library(
    root: Path,
    docs: dict[str, str],
    extensions: list[Any],
    files: dict[str, str] | None = None,
) -> Path:
    """A library at `root`: docs (bodies after a fixed frontmatter with the id given by
    the file's stem), other files beside mkdocs.yml, and `markdown_extensions`."""
    for rel, body in docs.items():
        path = root / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DOC.format(id=Path(rel).stem) + textwrap.dedent(body), encoding="utf-8")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    config = {
        "site_name": "t",
        "docs_dir": "docs",
        "markdown_extensions": extensions,
        "plugins": [{"handbook": {"library": "test", "version": "1.0.0"}}],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root / "mkdocs.yml"


def snippets(**options: Any) -> list[Any]:
    return [{"pymdownx.snippets": options}] if options else ["pymdownx.snippets"]


def checked(config: Path) -> tuple[dict[str, str], list[str]]:
    """Each doc's body by path, and the findings as `handbook check` prints them."""
    result = check(load_config(config))
    return {doc.path: doc.body for doc in result.docs}, [str(f) for f in result.findings]


PARTS = {
    "parts/intro.md": "Included intro.\n",
    "parts/numbers.md": "one\ntwo\nthree\nfour\n",
    "parts/sections.md": """\
        before
        --8<-- [start:usage]
        Usage text.
        --8<-- [end:usage]
        after
        """,
}


def test_base_path_is_relative_to_the_config_folder_not_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = library(
        tmp_path / "lib",
        {"guide.md": 'Before.\n\n--8<-- "intro.md"\n\nAfter.\n'},
        snippets(base_path=["parts"]),
        PARTS,
    )
    monkeypatch.chdir(tmp_path)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "Before.\n\nIncluded intro.\n\n\nAfter.\n"
    assert findings == []


def test_line_ranges_sections_and_blocks(tmp_path: Path) -> None:
    body = """\
        --8<-- "parts/numbers.md:2:3"
        --8<-- "parts/sections.md:usage"
        --8<--
        parts/intro.md
        parts/numbers.md:4
        --8<--
        """
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "two\nthree\nUsage text.\nIncluded intro.\n\nfour\n\n"
    assert findings == []


def test_auto_append_ends_every_page(tmp_path: Path) -> None:
    config = library(
        tmp_path / "lib",
        {"a.md": "# A\n", "b.md": "# B\n"},
        snippets(base_path=["parts"], auto_append=["intro.md"]),
        PARTS,
    )
    bodies, findings = checked(config)
    assert bodies == {
        "a.md": "# A\n\n\n\nIncluded intro.\n\n",
        "b.md": "# B\n\n\n\nIncluded intro.\n\n",
    }
    assert findings == []


@pytest.mark.parametrize("check_paths", [True, False])
def test_a_missing_file_is_a_finding_at_its_line_and_the_rest_is_expanded(
    tmp_path: Path, check_paths: bool
) -> None:
    body = 'Text.\n\n  --8<-- "parts/gone.md"\n\n--8<-- "parts/intro.md"\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(check_paths=check_paths), PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "Text.\n\n\nIncluded intro.\n\n"
    assert findings == [
        'guide.md:9:3: HB511 `--8<-- "parts/gone.md"` is not expanded: Snippet at path '
        "'parts/gone.md' could not be found; fix the include, or add the file or section "
        "it names"
    ]


def test_a_path_that_leaves_the_base_path_is_refused(tmp_path: Path) -> None:
    config = library(
        tmp_path / "lib",
        {"guide.md": '--8<-- "../secret.txt"\n--8<-- "/etc/hostname"\n'},
        snippets(base_path=["parts"]),
        {**PARTS, "secret.txt": "SECRET\n"},
    )
    bodies, findings = checked(config)
    assert "SECRET" not in bodies["guide.md"]
    assert [f.split(": HB511 ")[1].split(" is not")[0] for f in findings] == [
        '`--8<-- "../secret.txt"`',
        '`--8<-- "/etc/hostname"`',
    ]


def test_a_failure_inside_an_included_file_is_at_the_include_line(tmp_path: Path) -> None:
    parts = {**PARTS, "parts/nested.md": 'Nested.\n--8<-- "parts/gone.md"\n'}
    body = 'Text.\n--8<-- "parts/nested.md"\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), parts)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "Text.\nNested.\n\n"
    assert findings == [
        'guide.md:8:1: HB511 `--8<-- "parts/nested.md"` is not expanded: Snippet at path '
        "'parts/gone.md' could not be found; fix the include, or add the file or section "
        "it names"
    ]


def test_a_block_of_paths_fails_at_its_first_line(tmp_path: Path) -> None:
    body = "Text.\n--8<--\nparts/intro.md\nparts/gone.md\n--8<--\n"
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "Text.\nIncluded intro.\n\n"
    assert [f.split(" is not")[0] for f in findings] == ["guide.md:8:1: HB511 `--8<--`"]


def test_a_missing_section_and_a_missing_auto_append(tmp_path: Path) -> None:
    config = library(
        tmp_path / "lib",
        {"guide.md": 'Text.\n--8<-- "parts/sections.md:nope"\n'},
        snippets(auto_append=["parts/gone.md"]),
        PARTS,
    )
    _, findings = checked(config)
    assert findings == [
        'guide.md:8:1: HB511 `--8<-- "parts/sections.md:nope"` is not expanded: Snippet '
        "section 'nope' could not be located; fix the include, or add the file or section "
        "it names",
        "guide.md:9:1: HB511 what the include extensions add to every page is missing: "
        "Snippet at path 'parts/gone.md' could not be found; fix their options in "
        "mkdocs.yml (such as `auto_append`)",
    ]


def test_an_extension_that_is_not_installed_leaves_its_includes_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mdx_include", None)  # importing it now fails
    body = "Text.\n\n{! parts/intro.md !}\n"
    config = library(tmp_path / "lib", {"guide.md": body}, ["mdx_include"], PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == body
    assert findings == [
        "guide.md:9:1: HB511 `{! parts/intro.md !}` is left as written: the markdown "
        "extension mdx_include is not installed; install it where Handbook runs"
    ]


def test_an_extension_that_refuses_its_options(tmp_path: Path) -> None:
    body = 'Text.\n--8<-- "parts/intro.md"\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(check_paths="maybe"), PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == body
    assert findings == [
        'guide.md:8:1: HB511 `--8<-- "parts/intro.md"` is left as written: the markdown '
        "extension pymdownx.snippets refuses its options (Cannot parse bool value: 'maybe'); "
        "fix them in mkdocs.yml"
    ]


def test_an_extension_failing_on_the_whole_page_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = SnippetPreprocessor.run

    def fails_on_pages(self: SnippetPreprocessor, lines: list[str]) -> list[str]:
        if len(lines) > 1:
            raise OSError("the network is down")
        return run(self, lines)

    monkeypatch.setattr(SnippetPreprocessor, "run", fails_on_pages)
    body = 'Text.\n--8<-- "parts/intro.md"\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), PARTS)
    bodies, findings = checked(config)
    assert bodies["guide.md"] == "Text.\nIncluded intro.\n\n"  # each line on its own
    assert findings == [
        "guide.md:7:1: HB511 the include extensions failed on this page: the network is "
        "down; its includes are not expanded"
    ]


def test_an_expansion_far_over_the_limit_is_not_kept(tmp_path: Path) -> None:
    config = library(
        tmp_path / "lib",
        {"guide.md": 'Text.\n--8<-- "big.md"\n'},
        snippets(),
        {"big.md": "word " * 60_000},
    )
    bodies, findings = checked(config)
    assert bodies["guide.md"] == 'Text.\n--8<-- "big.md"\n'
    assert findings[-1] == (
        "guide.md:7:1: HB511 includes make the body 300,007 characters, far over the "
        "262,144 limit; they are not expanded: include less"
    )


def test_fences_in_included_text_are_checked_and_found_at_the_include_line(
    tmp_path: Path,
) -> None:
    parts = {"parts/config.md": 'Config:\n\n```json\n{"a": 1,,}\n```\n'}
    body = 'Intro.\n\n--8<-- "parts/config.md"\n\n```yaml\nkey: [unclosed\n```\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), parts)
    bodies, findings = checked(config)
    assert '{"a": 1,,}' in bodies["guide.md"]
    assert findings == [
        "guide.md:9:1: HB501 json snippet: invalid JSON: Expecting property name enclosed "
        "in double quotes",
        "guide.md:12:15: HB501 yaml snippet: invalid YAML: did not find expected ',' or ']'",
    ]


def test_the_bundle_holds_the_expanded_text_and_its_sections(tmp_path: Path) -> None:
    parts = {"parts/setup.md": "## Wiring\n\nConnect the zebrafish terminal.\n"}
    body = '# Guide\n\nOverview.\n\n--8<-- "parts/setup.md"\n\n## Own\n\nOwn text.\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), parts)
    build(load_config(config), tmp_path / "bundle", KEY)
    catalog = json.loads((tmp_path / "bundle" / "catalog.json").read_text())
    (entry,) = catalog["docs"]
    assert entry["source"] == "guide.md"
    content = (tmp_path / "bundle" / entry["content"]).read_bytes()
    assert b"--8<--" not in content
    sections = {s["anchor"]: content[s["start"] : s["end"]] for s in entry["sections"]}
    assert sections == {
        "wiring": b"## Wiring\n\nConnect the zebrafish terminal.\n\n\n",
        "own": b"## Own\n\nOwn text.\n",
    }
    lib = Library.open(tmp_path / "bundle", [PUBLIC])
    (hit,) = lib.search("zebrafish")["hits"]
    assert (hit["id"], hit["anchor"]) == ("guide", "wiring")
    assert lib.get("guide", section="wiring")["content"].startswith("## Wiring")


def outside_fences(markdown: str) -> list[str]:
    """The lines of `markdown` that are not inside a fenced code block."""
    lines = markdown.split("\n")
    inside = set()
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "fence" and token.map:
            inside.update(range(*token.map))
    return [line for n, line in enumerate(lines) if n not in inside]


def test_escaped_includes_in_fences_stay_there_as_written(tmp_path: Path) -> None:
    body = 'Write:\n\n```md\n;--8<-- "parts/intro.md"\n```\n\n--8<-- "parts/intro.md"\n'
    config = library(tmp_path / "lib", {"guide.md": body}, snippets(), PARTS)
    bodies, findings = checked(config)
    expanded = bodies["guide.md"]
    assert expanded.startswith('Write:\n\n```md\n--8<-- "parts/intro.md"\n```\n')
    assert not [line for line in outside_fences(expanded) if "--8<--" in line]
    assert findings == []


def test_worker_processes_expand_like_the_main_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = {f"d{n}.md": f'Doc {n}.\n--8<-- "parts/intro.md"\n--8<-- "gone.md"\n' for n in range(6)}
    config = library(tmp_path / "lib", docs, snippets(), PARTS)
    serial = checked(config)
    monkeypatch.setattr(workers, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(workers, "CHUNK", 2)
    assert checked(config) == serial
    assert len(serial[1]) == 6


def test_mdx_include_and_markdown_include_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mdx_include")
    pytest.importorskip("markdown_include_variants")
    files = {
        **PARTS,
        "src/app.py": "def main():\n    return 1\n",
        "src/app_py310.py": "def main() -> int:\n    return 1\n",
    }
    body = "{! parts/intro.md !}\n\n{* src/app.py *}\n\n{! parts/gone.md !}\n"
    extensions = ["markdown_include_variants", {"mdx_include": {"base_path": "."}}]
    config = library(tmp_path / "lib", {"guide.md": body}, extensions, files)
    monkeypatch.chdir(config.parent)  # markdown_include_variants reads from the current folder
    bodies, findings = checked(config)
    expanded = bodies["guide.md"]
    assert expanded.startswith("Included intro.\n")
    assert "def main() -> int:" in expanded and "{*" not in expanded and "{!" not in expanded
    missing = (config.parent / "parts" / "gone.md").as_posix()
    assert findings == [
        f"guide.md:11:1: HB511 `{{! parts/gone.md !}}` is not expanded: E: Could not find "
        f"file: {missing}; fix the include, or add the file or section it names"
    ]


def test_an_include_that_brings_in_a_private_key_is_not_expanded(tmp_path: Path) -> None:
    body = 'Text.\n--8<-- "parts/intro.md"\n--8<-- "site.key"\n'
    config = library(
        tmp_path / "lib",
        {"guide.md": body},
        snippets(),
        {**PARTS, "site.key": KEY_PEM},
    )
    bodies, findings = checked(config)
    assert bodies["guide.md"] == body
    assert findings == [
        'guide.md:9:1: HB511 `--8<-- "site.key"` brings in a private key, which would be '
        "published; the includes are not expanded: never include a key file"
    ]


def test_the_include_extensions_are_picked_from_markdown_extensions() -> None:
    listed = [
        "toc",
        {"pymdownx.snippets": None},
        {"a": 1, "b": 2},  # MkDocs refuses it: not ours to report
        None,
        {"mdx_include": {"base_path": "x"}},
        {"pymdownx.snippets": {"check_paths": True}},  # the last one counts, as in MkDocs
    ]
    assert configured(listed) == (
        Configured("pymdownx.snippets", {"check_paths": True}),
        Configured("mdx_include", {"base_path": "x"}),
    )
    assert configured({"pymdownx.snippets": {}, "toc": {}}) == (
        Configured("pymdownx.snippets", {}),
    )
    assert configured(None) == ()
