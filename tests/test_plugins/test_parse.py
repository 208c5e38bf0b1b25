"""Parsing: section anchors equal MkDocs' own, fences keep their lines, sections span
the right text."""

from __future__ import annotations

import markdown
import pytest

from handbook_build.read.parse import Doc, parse
from handbook_build.read.source import Text

FRONT = "---\nid: t\n---\n"  # the body starts on line 4


def doc_of(body: str) -> Doc:
    doc, findings = parse(Text("t.md", FRONT + body))
    assert doc is not None, findings
    return doc


def mkdocs_anchors(body: str) -> list[str]:
    """What MkDocs renders: Python-Markdown with MkDocs' built-in extensions."""
    md = markdown.Markdown(extensions=["toc", "tables", "fenced_code"])
    md.convert(body)

    def walk(tokens: list[dict]) -> list[str]:
        return [a for t in tokens for a in (t["id"], *walk(t["children"]))]

    return walk(md.toc_tokens)


TRICKY = [
    "## Über Größe",
    "## Ça & Çà: naïve café",
    "## Overview",
    "## Overview",
    "## Overview_1",
    "## `code()` and *emphasis* and **strong**",
    "## [A link](https://example.com) to <kbd>Ctrl</kbd>+<kbd>C</kbd>",
    "## Image ![alt text](x.png) here",
    "## Entities &amp; &copy; &#169;",
    "## 日本語の見出し",
    "## 日本語の見出し",
    "## Emoji 🚀 launch",
    "## Trailing hashes ##",
    "## Punctuation!?.,;:()[]{}'\"",
    "## --- dashes --- and   spaces",
    "## Escaped \\*stars\\* and \\#hash",
    "## 40001 – 40004 registers",  # noqa: RUF001 (a real en dash, on purpose)
    "### Nested three",
    "#### Four",
    "# Top level",
    "## Top level",
]


def test_anchors_equal_mkdocs_toc_for_tricky_headings() -> None:
    body = "\n\ntext\n\n".join(TRICKY) + "\n"
    doc = doc_of(body)
    assert [h.anchor for h in doc.headings] == mkdocs_anchors(body)


@pytest.mark.parametrize("heading", TRICKY)
def test_each_tricky_heading_alone(heading: str) -> None:
    assert [h.anchor for h in doc_of(heading + "\n").headings] == mkdocs_anchors(heading + "\n")


def test_heading_titles_are_plain_text() -> None:
    doc = doc_of("## `code()` and *emphasis* [link](x) &amp; ![img](y.png)\n")
    assert doc.headings[0].title == "code() and emphasis link &"


def test_headings_inside_fences_and_indented_code_are_not_sections() -> None:
    doc = doc_of("## Real\n\n```\n## In a fence\n```\n\n    ## Indented code\n\n> ## In a quote\n")
    assert [(h.title, h.level) for h in doc.headings] == [("Real", 2), ("In a quote", 2)]


def test_sections_span_to_the_next_heading_of_their_level() -> None:
    body = "# Title\n\nIntro.\n\n## One\n\nA.\n\n### One point one\n\nB.\n\n## Two\n\nC.\n"
    doc = doc_of(body)
    spans = {s.title: (s.level, body[s.start : s.end]) for s in doc.sections}
    assert spans == {
        "One": (2, "## One\n\nA.\n\n### One point one\n\nB.\n\n"),
        "Two": (2, "## Two\n\nC.\n"),
    }
    assert [s.line for s in doc.sections] == [8, 16]


def test_setext_headings_count() -> None:
    doc = doc_of("Setext two\n----------\n\ntext\n")
    assert [(s.title, s.anchor, s.line) for s in doc.sections] == [("Setext two", "setext-two", 4)]


def test_fence_lines_languages_and_text() -> None:
    body = (
        "Intro\n"  # line 4
        "\n"
        "```yaml\n"  # 6
        "a: 1\n"  # 7
        "```\n"
        "\n"
        "- item\n"  # 10
        "\n"
        '  ~~~~ JSON title="x"\n'  # 12
        '  {"b": 2}\n'  # 13
        "  ~~~~\n"
        "\n"
        "> ```{.toml}\n"  # 16
        "> c = 3\n"  # 17
        "> ```\n"
        "\n"
        "````markdown\n"  # 20
        "```yaml\n"  # 21: inside an outer fence, not a fence of its own
        "x: [\n"
        "```\n"
        "````\n"
        "\n"
        "```\n"  # 26
        "no language\n"
        "```\n"
    )
    doc = doc_of(body)
    assert [(f.lang, f.line, f.col, f.text) for f in doc.fences] == [
        ("yaml", 7, 1, "a: 1\n"),
        ("json", 13, 3, '{"b": 2}\n'),  # in a list item: the snippet starts in column 3
        ("toml", 17, 3, "c = 3\n"),  # in a quote, after "> "
        ("markdown", 21, 1, "```yaml\nx: [\n```\n"),
        ("", 27, 1, "no language\n"),
    ]


def test_body_and_line_marks() -> None:
    doc, _ = parse(Text("t.md", "---\nid: x\ntitle: T\n---\n# Body\n"))
    assert doc is not None
    assert (doc.body, doc.body_line, doc.lines) == ("# Body\n", 5, {"id": 2, "title": 3})


def test_unterminated_fence_runs_to_the_end() -> None:
    doc = doc_of("```yaml\na: [\n")
    assert [(f.lang, f.line, f.text) for f in doc.fences] == [("yaml", 5, "a: [\n")]
