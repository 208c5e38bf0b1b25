"""Issue 26: a derived summary is a plain sentence, since `adopt --write` pins it into the
author's file: the words the page shows, rendered by markdown-it-py with the doc's
references resolved; no admonition markers, reference labels, footnote marks, emphasis
markers, attribute lists, icon shortcodes, HTML comments or stray spaces."""

from __future__ import annotations

import pytest
from conftest import REAL_SITES, MakeLibrary, shared_data

from handbook_build import load_config
from handbook_build.checks.adopt import _paragraphs
from handbook_build.pipeline import load
from handbook_build.read.parse import parse
from handbook_build.read.plain_text import inline_text, plain_text
from handbook_build.read.source import Text


def summary(make_library: MakeLibrary, body: str) -> str:
    config = load_config(make_library({"a.md": body}, adopt={}))
    doc, _ = load(config, "a.md")
    assert doc is not None
    return str(doc.meta["summary"])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # the admonition is not the page's opening sentence
            "# T\n\n!!! note\n    Only use these functions in hooks.\n\n"
            "The plugin renders pages for people.\n",
            "The plugin renders pages for people.",
        ),
        (
            "# T\n\n??? tip\n\n    Hidden tip text here.\n\nA real opening line.\n",
            "A real opening line.",
        ),
        (
            "# T\n\n/// warning | Support\nNot supported by us at all.\n\nStill inside.\n///\n\n"
            "Mermaid draws diagrams from text.\n",
            "Mermaid draws diagrams from text.",
        ),
        (
            "A theme for [MkDocs][mkdocs], but not only.\n\n[mkdocs]: https://www.mkdocs.org\n",
            "A theme for MkDocs, but not only.",
        ),
        ("A theme for [MkDocs][nowhere], but not only.\n", "A theme for MkDocs, but not only."),
        (
            "See the documentation.[^1] If you're lost, ask.\n\n[^1]: A footnote text here.\n",
            "See the documentation. If you're lost, ask.",
        ),
        (
            "__As we're told__, the build is *fast* and `mkdocs build` works.\n",
            "As we're told, the build is fast and mkdocs build works.",
        ),
        (
            "[:octicons-file-code-24:][src]{: .source-link }\n\n# Arithmatex\n\n"
            "Arithmatex preserves math for MathJax.\n\n[src]: https://example.com/a.py\n",
            "Arithmatex preserves math for MathJax.",
        ),
        (
            "Project documentation with&nbsp;Markdown and more.\n",
            "Project documentation with Markdown and more.",
        ),
        (
            "Wraps `#!html <figure>` tags around ![logo](l.png) images <b>now</b> .\n",
            "Wraps <figure> tags around images now.",
        ),
        ("<!-- TODO: say what this page is -->\n\nThe page says this.\n", "The page says this."),
        (
            "*[FAQ]: Frequent Asked Questions\n\nThe answers people ask for.\n",
            "The answers people ask for.",
        ),
    ],
)
def test_summaries_are_plain_sentences(make_library: MakeLibrary, body: str, expected: str) -> None:
    assert summary(make_library, body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "!!! note\n    Only markup here.\n",
        "[![badge](b.svg)](https://ci)\n\n<!-- a comment -->\n\n[^1]: Only a footnote here.\n",
        "/// tab | One\nOnly a tab here.\n///\n",
        "<!-- only a comment, and nothing else -->\n",
    ],
)
def test_a_page_of_only_markup_falls_back_to_its_title(
    make_library: MakeLibrary, body: str
) -> None:
    assert summary(make_library, "# The title\n\n" + body) == "The title"


def test_inline_text_keeps_what_people_read() -> None:
    assert inline_text("a `<!-- code -->` b") == "a <!-- code --> b"
    assert inline_text("[text](https://x.example) and [^note] end.") == "text and end."
    assert (
        inline_text("snake_case_name stays; __init__ is bold")
        == "snake_case_name stays; init is bold"
    )


def test_plain_text_for_the_index_drops_footnote_marks_and_reads_entities() -> None:
    words = plain_text("Docs.[^1] with&nbsp;Markdown &amp; more `code_name`").split()
    assert words == ["Docs.", "with", "Markdown", "&", "more", "code_name"]


def test_real_summaries_are_clean() -> None:
    """The pages of pymdown-extensions and mkdocs-macros-plugin that gave
    `!!! Note New…`, `:octicons-file-code-24: _arithmatex {: .source-link }` and
    `_New in 1.0.2_` before."""
    root = shared_data(REAL_SITES)
    pages = {
        "pymdown-extensions/docs/src/markdown/extensions/arithmatex.md": "Arithmatex is an",
        "mkdocs-macros-plugin/webdoc/docs/pluglets.md": "A pluglet is a preinstalled module",
        "mkdocs-macros-plugin/webdoc/docs/troubleshooting.md": "By default a rendering error",
    }
    for rel, start in pages.items():
        text = (root / rel).read_text(encoding="utf-8")
        doc, _ = parse(Text(rel, text), frontmatter_optional=True)
        assert doc is not None
        first = next(_paragraphs(doc))[1]
        assert first.startswith(start), (rel, first)
        for junk in ("!!!", "///", "{:", ":octicons", "^1", " ,", " .", "__"):
            assert junk not in first, (rel, first)
