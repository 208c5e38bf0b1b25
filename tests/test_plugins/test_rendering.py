"""A site whose pages are made by its plugins and at render time: the bundle holds what
the page shows (mkdocs-include-markdown with custom tags, a markdown-exec block, a
mkdocstrings `:::` of a local module), lines keep their places, and whatever cannot be
made is a finding at its line with the page's own text kept, never a half-made page."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from handbook_build import load_config
from handbook_build.findings import Finding
from handbook_build.pipeline import build, check
from handbook_build.read import rendering

CONFIG = """\
site_name: Synthetic
plugins:
  - handbook:
      library: synthetic
      version: 1.0.0
      adopt: {{default_kind: page}}
      vocab: {{kind: [page]}}
  - include-markdown:
      opening_tag: "[%"
      closing_tag: "%]"
  - mkdocstrings:
      handlers:
        python:
          paths: [src]
          inventories: ["https://docs.python.org/3/objects.inv"]
{extra_plugins}
markdown_extensions:
  - pymdownx.snippets:
      check_paths: true
  - pymdownx.superfences:
      custom_fences:
        - name: python
          class: python
          validator: !!python/name:markdown_exec.validator
          format: !!python/name:markdown_exec.formatter
{extra}"""

MODULE = '''\
"""A tiny module the site documents."""


def greet(name: str, times: int = 1) -> str:
    """Say hello to someone by name, as often as asked.

    Parameters:
        name: Who is greeted.
        times: How many greetings.
    """
    return " ".join([f"Hello {name}"] * times)
'''

INDEX = """\
# Home

[% include-markdown "../NOTES.md" %]

```python exec="on"
print("Computed by markdown-exec:", 6 * 7)
```

::: tinymod.greet

A Jinja example, shown as written: {% include "part.md" %} and {{ page.title }}.

--8<-- "missing.md"
"""


def site(tmp_path: Path, pages: dict[str, str], extra: str = "", plugins: str = "") -> Path:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "tinymod.py").write_text(MODULE)
    (root / "NOTES.md").write_text("Notes that the plugin includes.\n\nA second line of notes.\n")
    for name, text in pages.items():
        (root / "docs" / name).write_text(text)
    config = root / "mkdocs.yml"
    config.write_text(CONFIG.format(extra=extra, extra_plugins=plugins))
    return config


def contents(bundle: Path) -> dict[str, str]:
    catalog = json.loads((bundle / "catalog.json").read_text(encoding="utf-8"))
    return {
        d["source"]: (bundle / d["content"]).read_text(encoding="utf-8") for d in catalog["docs"]
    }


def coded(findings: list[Finding], *codes: str) -> list[str]:
    return [str(f) for f in findings if f.code in codes]


def test_the_bundle_holds_what_the_page_shows(tmp_path: Path) -> None:
    config = site(tmp_path, {"index.md": INDEX})
    built = build(load_config(config), tmp_path / "bundle", None)
    text = contents(tmp_path / "bundle")["index.md"]
    assert "Notes that the plugin includes." in text and "A second line of notes." in text
    assert "Computed by markdown-exec: 42" in text
    assert "greet(name: str, times: int = 1) -> str" in text
    assert "Say hello to someone by name, as often as asked." in text
    assert "Who is greeted." in text
    for made in ("[% include-markdown", 'exec="on"', "::: tinymod"):
        assert made not in text
    # no macros plugin on this site: Jinja is an example, and stays one
    assert '{% include "part.md" %} and {{ page.title }}' in text
    # the include the site's own snippets cannot expand is still found at its written line
    assert coded(built.findings, "HB511") == [
        'index.md:13:1: HB511 (warning) `--8<-- "missing.md"` is not expanded: Snippet at '
        "path 'missing.md' could not be found; fix the include, or add the file or section "
        "it names"
    ]
    assert coded(built.findings, "HB512") == []
    assert coded(built.findings, "HB513") == [
        "mkdocs.yml:2:1: HB513 (notice) 1 inventory URL(s) of mkdocstrings' handlers are "
        "not fetched (builds are offline): cross-references to those projects are plain "
        "text in agent text"
    ]


def test_text_that_cannot_be_made_keeps_its_lines_and_is_reported(tmp_path: Path) -> None:
    page = textwrap.dedent(
        """\
        # Failing

        ```python exec="on"
        raise ValueError("the script broke")
        ```

        ::: tinymod.nothing_here

        The end.
        """
    )
    config = site(tmp_path, {"index.md": page})
    built = build(load_config(config), tmp_path / "bundle", None)
    text = contents(tmp_path / "bundle")["index.md"]
    assert 'raise ValueError("the script broke")' in text and 'exec="on"' in text
    assert "::: tinymod.nothing_here" in text
    assert "Traceback" not in text
    found = coded(built.findings, "HB512")
    assert [f.split(": HB512")[0] for f in found] == ["index.md:3:1", "index.md:7:1"]
    assert "agents do not get the output of its code" in found[0]
    assert "ValueError" in found[0]
    assert "agents do not get the documentation it renders" in found[1]
    assert "nothing_here" in found[1]


def test_a_plugin_that_raises_leaves_the_page_as_written(tmp_path: Path) -> None:
    """The hook runs after include-markdown changed the page: nothing of that is kept."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "hooks.py").write_text(
        "def on_page_markdown(markdown, page, **kwargs):\n"
        "    if page.file.src_uri == 'boom.md':\n"
        "        raise RuntimeError('the hook gave up')\n"
    )
    boom = '# Boom\n\n[% include-markdown "../NOTES.md" %]\n'
    config = site(
        tmp_path,
        {"boom.md": boom, "fine.md": boom.replace("Boom", "Fine")},
        extra="hooks:\n  - hooks.py\n",
    )
    built = build(load_config(config), tmp_path / "bundle", None)
    docs = contents(tmp_path / "bundle")
    assert docs["boom.md"] == boom
    assert "Notes that the plugin includes." in docs["fine.md"]
    found = coded(built.findings, "HB512")
    assert len(found) == 1 and found[0].startswith("boom.md:1:1: HB512 (warning)")
    assert "RuntimeError: the hook gave up" in found[0]
    assert "the page is left as written" in found[0]


def test_a_plugin_that_is_not_installed_is_reported_at_the_lines_it_would_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = rendering.entry_points(group="mkdocs.plugins")
    monkeypatch.setattr(
        rendering,
        "entry_points",
        lambda group: [ep for ep in installed if ep.name != "include-markdown"],
    )
    page = '# Page\n\nText.\n\n[% include-markdown "../NOTES.md" %]\n'
    config = site(tmp_path, {"index.md": page}, plugins="  - no-such-plugin-here\n")
    result = check(load_config(config))
    text = next(d for d in result.docs if d.path == "index.md").body
    assert '[% include-markdown "../NOTES.md" %]' in text
    assert "Notes that the plugin includes." not in text
    found = coded(result.findings, "HB512")
    assert [f.split(" (warning) ")[0] for f in found] == [
        "index.md:5:1: HB512",
        "mkdocs.yml:2:1: HB512",
        "mkdocs.yml:2:1: HB512",
    ]
    assert "the plugin `include-markdown` is not installed here" in found[0]
    assert {"include-markdown", "no-such-plugin-here"} == {
        name for f in found[1:] for name in ("include-markdown", "no-such-plugin-here") if name in f
    }


def test_a_configuration_mkdocs_refuses_is_one_finding_and_blocks_stay(tmp_path: Path) -> None:
    config = site(tmp_path, {"index.md": INDEX}, extra="nav: 42\n")
    result = check(load_config(config))
    found = coded(result.findings, "HB512")
    setup = [f for f in found if f.startswith("mkdocs.yml")]
    assert len(setup) == 1
    assert setup[0].startswith(
        "mkdocs.yml:2:1: HB512 (warning) the site's plugins cannot be loaded"
    )
    assert "nav" in setup[0]
    body = result.docs[0].body
    assert '[% include-markdown "../NOTES.md" %]' in body and "::: tinymod.greet" in body
    pages = [f.split(": HB512")[0] for f in found if f.startswith("index.md")]
    assert pages == ["index.md:3:1", "index.md:5:1", "index.md:9:1"]  # include, exec, `:::`
    assert "did not load with the site's configuration" in found[0]


def test_mkdocs_build_gives_the_same_bundle(tmp_path: Path) -> None:
    """`mkdocs build` with the handbook plugin runs the same pipeline: same text. (The
    page leaves out the missing snippet: with `check_paths: true` the site's own build
    fails on it, as it did before adoption.)"""
    import os
    import subprocess
    import sys

    config = site(tmp_path, {"index.md": INDEX.replace('--8<-- "missing.md"\n', "")})
    build(load_config(config), tmp_path / "cli-bundle", None)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDBOOK_SIGNING_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"],
        cwd=config.parent,
        env={**env, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert contents(config.parent / "build" / "bundle") == contents(tmp_path / "cli-bundle")


@pytest.mark.parametrize(
    ("name", "theme", "expected"),
    [
        ("blog", {"name": "material"}, "material/blog"),  # Material's blog, as MkDocs finds it
        ("blog", "material", "material/blog"),
        ("search", {"name": "material"}, "material/search"),
        ("search", None, "search"),
        ("/search", {"name": "material"}, "search"),  # a leading `/` skips the theme's
        ("blog", {"name": "mkdocs"}, None),
        ("material/blog", None, "material/blog"),
        ("no-such-plugin", {"name": "material"}, None),
    ],
)
def test_a_plugin_name_resolves_as_mkdocs_resolves_it(
    name: str, theme: object, expected: str | None
) -> None:
    from handbook_build.read.rendering import _resolved

    installed = {"search", "material/search", "material/blog", "minify"}
    assert _resolved(name, theme, installed) == expected


def test_a_site_named_by_a_relative_path_renders_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugins run in the site's folder: a relative config path given from elsewhere
    must still name the site there (it once named a folder inside the site's own)."""
    config = site(tmp_path, {"index.md": INDEX})
    monkeypatch.chdir(tmp_path)
    built = build(load_config(Path("site") / "mkdocs.yml"), tmp_path / "bundle", None)
    assert coded(built.findings, "HB512") == [], coded(built.findings, "HB512")
    text = contents(tmp_path / "bundle")["index.md"]
    assert "Say hello to someone by name, as often as asked." in text
    assert config.exists()
