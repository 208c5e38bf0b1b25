"""Issue 26: HTML comments never reach agents. They are found as markdown-it-py reads the
page: a `<!--` in a code span, a fence or an indented code block stays, one never closed
stays (the site shows it), and the lines that held only comments go without leaving runs
of blank lines; findings after them stay on the lines the author wrote."""

from __future__ import annotations

import pytest
from conftest import REAL_SITES, shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

from handbook_build.findings import Finding, Severity
from handbook_build.read.comments import strip_comments
from handbook_build.read.parse import parse
from handbook_build.read.source import Text

FM = "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n---\n"
"""Six lines: a body's first line is line 7 of the file."""


def stripped(body: str) -> str:
    result = strip_comments(body)
    return body if result is None else result.text


@pytest.mark.parametrize(
    ("body", "agents_get"),
    [
        (  # mkdocs-material's hooks under a heading: no blank lines pile up
            "### Palette\n\n<!-- md:version 7.1.0 -->\n<!-- md:default computed -->\n\nText\n",
            "### Palette\n\nText\n",
        ),
        ("a\n<!-- -->\nb\n", "a\n\nb\n"),  # a separator still separates
        ("> a\n> <!-- -->\n> b\n", "> a\n>\n> b\n"),
        ("text <!-- x --> more\n", "text more\n"),
        ("text <!-- a\nb -->\nnext\n", "text\nnext\n"),
        ("<!-- a --> visible\n", "visible\n"),
        ("<div>\n<!-- in div -->\n</div>\n", "<div>\n</div>\n"),
        ("- item <!-- a\n  b --> tail\n- two\n", "- item tail\n- two\n"),
        ("!!! note\n\n    <!-- md:flag -->\n    body\n", "!!! note\n\n    body\n"),
        ("<!-- a\n\nb -->\nc\n", "c\n"),
        ("<!---->x<!--->y<!-->z\n", "xyz\n"),
        ("<!-- <!-- nested --> -->\ntext\n", "-->\ntext\n"),  # a browser shows the rest too
        ("[a <!-- x --> b](u)\n", "[a b](u)\n"),
    ],
)
def test_comments_are_taken_out(body: str, agents_get: str) -> None:
    assert stripped(body) == agents_get


@pytest.mark.parametrize(
    "body",
    [
        "Use `<!-- md:flag -->` to mark a flag.\n",  # inline code
        "```html\n<!-- shown in a fence -->\n```\n",
        "~~~\n<!--\n~~~\n",
        "Code:\n\n    <!-- an indented code block -->\n",
        "<!-- never closed\n\n## Still here\n",  # Python-Markdown shows it as text
        "\\<!-- escaped --> text\n",
        "A <!-- unterminated inline comment\n",
    ],
)
def test_what_is_not_a_comment_stays(body: str) -> None:
    assert stripped(body) == body


def test_structure_and_findings_follow_the_written_lines() -> None:
    text = FM + (
        "# T\n\n<!-- md:version 7.1.0 -->\n<!-- md:flag -->\n\n## Sec\n\n"
        "text <!-- c --> more\n\n```yaml\n<!-- kept -->\n```\n"
    )
    doc, problems = parse(Text("a.md", text))
    assert doc is not None and problems == []
    assert "md:version" not in doc.body and "<!-- kept -->" in doc.body
    assert [(s.title, doc.body[s.start : s.end].split("\n")[0]) for s in doc.sections] == [
        ("Sec", "## Sec")
    ]
    fence = doc.fences[0]
    assert fence.text == "<!-- kept -->\n"
    heading = next(h for h in doc.headings if h.title == "Sec")
    moved = doc.located(Finding("a.md", heading.line, 1, "X", "m", Severity.NOTICE))
    assert text.split("\n")[moved.line - 1] == "## Sec"
    moved = doc.located(Finding("a.md", fence.line, 1, "X", "m", Severity.NOTICE))
    assert text.split("\n")[moved.line - 1] == "<!-- kept -->"
    assert [(c.line, c.col, c.text) for c in doc.comments] == [
        (9, 1, "<!-- md:version 7.1.0 -->"),
        (10, 1, "<!-- md:flag -->"),
        (14, 6, "<!-- c -->"),
    ]


FRAGMENTS = ["<!--", "-->", "--!>", "<!-->", "`", "```\n", "\n", "\n\n", "    ", "> ", "- "]
FRAGMENTS += ["x", "## h", "!!! note\n", "<div>", "\\", " ", "<!-- c -->"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_the_line_map_is_whole_and_in_order(body: str) -> None:
    result = strip_comments(body)
    if result is None:
        return
    assert len(result.lines) == result.text.count("\n") + 1
    assert list(result.lines) == sorted(result.lines)
    assert all(0 <= n <= body.count("\n") for n in result.lines)
    assert all(body.split("\n")[c.line][c.col - 1 :].startswith("<!--") for c in result.comments)


def test_hostile_bodies_take_linear_time() -> None:
    """Each of these is 250 KB; a quadratic step would take minutes, not a second."""
    for body in ("<!--\n" * 50_000, "<!---->" * 36_000, "a <!-- x --> " * 20_000):
        result = strip_comments(body)
        assert result is None or "<!---->" not in result.text


def test_real_pages_lose_their_comments_and_keep_their_separators() -> None:
    """MkDocs' own docs end a quote with `<!-- -->` before the next one starts."""
    page = shared_data(REAL_SITES) / "mkdocs" / "docs" / "dev-guide" / "plugins.md"
    doc, _ = parse(Text("plugins.md", page.read_text(encoding="utf-8")), frontmatter_optional=True)
    assert doc is not None and "<!-- -->" not in doc.body
    assert "```\n\n>? EXAMPLE:" in doc.body  # the quotes stay two
    themes = shared_data(REAL_SITES) / "mkdocs" / "docs" / "dev-guide" / "themes.md"
    doc, _ = parse(Text("themes.md", themes.read_text(encoding="utf-8")), frontmatter_optional=True)
    assert doc is not None and "<!--" not in doc.body
    assert "> ```\n>\n> >? EXAMPLE: **New style:**" in doc.body  # `> <!-- -->` became `>`
