"""One markdown file -> `Doc`: frontmatter, body, headings, sections and fenced snippets.

Structure comes from markdown-it-py's block tokens, not regular expressions, so a ``##``
inside a fence or an indented block is never taken for a heading, and every fence knows
its line. Anchors are made the way MkDocs' toc makes them (Python-Markdown's own
`slugify` and `unique` over every heading in order), so `get(doc, section=anchor)` and
the site's `#anchor` links always agree.

Given an `Expander`, the body is the markdown after the site's include extensions ran
(`includes`), and its plugins and render-time text (`site_text`); its HTML comments
are taken out (`comments`): the body is the text agents get. Everything here
(headings, sections, offsets, fences and their lines) is about that text, counted as
if it stood in the file from the body's first line on; `Doc.located` moves a finding
about it to where its line is written.

Only block parsing runs over the whole body; inline parsing runs on heading text alone.
That keeps parsing linear and cheap on the 10,000-page corpus. The parts of a doc are
named tuples because docs cross process boundaries, and tuples pickle fastest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from markdown.extensions.toc import slugify, unique
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..errors import FrontmatterError
from ..findings import Finding
from .comments import Comment, strip_comments
from .frontmatter import BoolWord, Field, Mark
from .frontmatter import parse as parse_frontmatter
from .includes import Expansion
from .origins import Run, after_removal, source_line
from .source import Text

SECTION_LEVELS = (2,)
"""Sections are the `##` headings: what an agent fetches one at a time."""
SUBSECTION_LEVELS = (3, 4, 5, 6)
"""Subsections are the deeper headings: each readable on its own too, and a search
passage of its own (the catalog keeps them apart from `sections`: docs/spec/bundle.md)."""
_NEWLINE = re.compile("\n")

_md = MarkdownIt("commonmark").disable("inline")
_inline = MarkdownIt("commonmark")


class Expands(Protocol):
    """What makes a body what people read: an `includes.Expander` (the include
    extensions), or a `site_text.Renderer` (the site's plugins and render-time text too)."""

    def expand(self, path: str, body: str, body_line: int) -> Expansion: ...


class Heading(NamedTuple):
    level: int
    title: str
    anchor: str
    line: int
    """1-based line in the file."""
    offset: int
    """Character offset of the heading line in the body."""


class Section(NamedTuple):
    """A heading (``##``, or deeper for a subsection) and the body text it spans, up to
    the next heading of the same or a higher level (its own subsections included)."""

    title: str
    anchor: str
    level: int
    start: int
    end: int
    line: int


class Fence(NamedTuple):
    lang: str
    text: str
    line: int
    """1-based file line of the snippet's first line."""
    col: int
    """1-based file column of the opening fence, where the snippet's lines start."""


@dataclass(frozen=True)
class Doc:
    path: str
    """POSIX path relative to the docs root."""
    meta: dict[str, Any]
    """The frontmatter fields whose values were read (a refused value is not here)."""
    fields: dict[str, Field]
    """Where every frontmatter field is written, read or refused."""
    body: str
    body_line: int
    headings: tuple[Heading, ...]
    sections: tuple[Section, ...]
    fences: tuple[Fence, ...]
    bool_words: tuple[BoolWord, ...]
    """The YAML 1.1 words in the frontmatter that were read as booleans."""
    origin: tuple[Run, ...] = ()
    """Where the lines of the expanded body are written; () when includes changed nothing."""
    comments: tuple[Comment, ...] = ()
    """The HTML comments taken out of the body (agents get none), at their file lines."""

    @property
    def id(self) -> str:
        value = self.meta.get("id")
        return value if isinstance(value, str) else ""

    @property
    def lines(self) -> dict[str, int]:
        """Frontmatter key -> 1-based line."""
        return {name: f.key.line for name, f in self.fields.items()}

    def located(self, finding: Finding) -> Finding:
        """`finding`, made about a line of the expanded body, at the place that line is
        written: included text is at its include line (the extensions keep no finer map)."""
        if not self.origin or finding.line < self.body_line:
            return finding
        line, included = source_line(self.origin, finding.line - self.body_line)
        return replace(finding, line=self.body_line + line, col=1 if included else finding.col)

    def key_at(self, key: str) -> Mark:
        """Where a frontmatter key is written, or the opening `---` when it is absent."""
        found = self.fields.get(key)
        return found.key if found else Mark(1, 1)

    def value_at(self, key: str) -> Mark:
        """Where a frontmatter field's value is written, or the opening `---`."""
        found = self.fields.get(key)
        return found.value if found else Mark(1, 1)


def parse(
    source: Text, expander: Expands | None = None, frontmatter_optional: bool = False
) -> tuple[Doc | None, list[Finding]]:
    """The doc and the findings about its frontmatter's fields and its includes, or None
    and the findings that make it unusable. With `frontmatter_optional`, a file without
    frontmatter is a doc with no fields (adoption derives them)."""
    try:
        fm = parse_frontmatter(source.path, source.text, frontmatter_optional)
    except FrontmatterError as exc:
        return None, exc.findings
    body, origin = source.text[fm.body_offset :], tuple[Run, ...]()
    if expander is not None:
        expansion = expander.expand(source.path, body, fm.body_line)
        body, origin = expansion.body, expansion.runs
        fm.findings.extend(expansion.findings)
    body, origin, comments = _without_comments(body, origin, fm.body_line)
    headings, fences = _structure(body, fm.body_line)
    sections = _sections(headings, len(body))
    doc = Doc(
        source.path,
        fm.data,
        fm.fields,
        body,
        fm.body_line,
        headings,
        sections,
        fences,
        tuple(fm.bool_words),
        origin,
        comments,
    )
    return doc, fm.findings


def _without_comments(
    body: str, origin: tuple[Run, ...], body_line: int
) -> tuple[str, tuple[Run, ...], tuple[Comment, ...]]:
    """The body agents get (`comments`), the map of where its lines are written, and the
    comments taken out, each at the file line and column it is written at."""
    stripped = strip_comments(body)
    if stripped is None:
        return body, origin, ()
    found = []
    for comment in stripped.comments:
        line, included = source_line(origin, comment.line)
        found.append(comment._replace(line=body_line + line, col=1 if included else comment.col))
    return stripped.text, after_removal(origin, stripped.lines), tuple(found)


def written_body(source: Text, frontmatter_optional: bool = False) -> str | None:
    """The body as the file has it, includes not expanded, split off as `parse` does
    (`frontmatter_optional`: a page without frontmatter is all body, as adoption reads
    it); None when the frontmatter cannot be read."""
    try:
        fm = parse_frontmatter(source.path, source.text, frontmatter_optional)
        return source.text[fm.body_offset :]
    except FrontmatterError:
        return None


def sections_of(text: str, levels: tuple[int, ...] = SECTION_LEVELS) -> tuple[Section, ...]:
    """The `##` sections (or the headings of other `levels`) of a markdown text that is
    not a doc (a file attached to one), found exactly as a doc's are; lines counted from
    the text's first."""
    headings, _ = _structure(text, 1)
    return _sections(headings, len(text), levels)


def subsections(doc: Doc) -> tuple[Section, ...]:
    """The `###` to `######` sections of a doc's body, in the order they are written."""
    return _sections(doc.headings, len(doc.body), SUBSECTION_LEVELS)


def _sections(
    headings: tuple[Heading, ...], body_chars: int, levels: tuple[int, ...] = SECTION_LEVELS
) -> tuple[Section, ...]:
    """Each section ends where the next heading of its level or higher begins."""
    sections = []
    open_: list[Heading] = []
    for h in (*headings, None):
        level = h.level if h else 0
        end = h.offset if h else body_chars
        while open_ and open_[-1].level >= level:
            o = open_.pop()
            if o.level in levels:
                sections.append(Section(o.title, o.anchor, o.level, o.offset, end, o.line))
        if h:
            open_.append(h)
    return tuple(sorted(sections, key=lambda s: s.start))


def _structure(body: str, body_line: int) -> tuple[tuple[Heading, ...], tuple[Fence, ...]]:
    # markdown-it breaks lines at "\n" only (str.splitlines would also break at U+2028,
    # form feeds and more, and put every later section on the wrong line)
    line_offsets = [0, *(m.end() for m in _NEWLINE.finditer(body))]
    headings: list[Heading] = []
    fences: list[Fence] = []
    used_ids: set[str] = set()
    counters: dict[str, int] = {}
    tokens = _md.parse(body)
    for i, token in enumerate(tokens):
        if token.map is None:
            continue
        if token.type == "heading_open":
            title = heading_text(tokens[i + 1].content)
            anchor = unique(slugify(title, "-"), used_ids, counters)
            offset = line_offsets[token.map[0]]
            headings.append(
                Heading(int(token.tag[1]), title, anchor, body_line + token.map[0], offset)
            )
        elif token.type == "fence":
            lang = (
                token.info.split(maxsplit=1)[0].strip("{}.").lower() if token.info.strip() else ""
            )
            start = line_offsets[token.map[0]]
            col = body.find(token.markup, start) - start + 1  # after an indent, `>` or `-`
            fences.append(Fence(lang, token.content, body_line + token.map[0] + 1, col))
    return tuple(headings), tuple(fences)


def heading_text(source: str) -> str:
    """The plain text of a heading's inline markdown, as MkDocs' toc sees it: markup and
    inline HTML tags dropped, code and entities kept as text, images contribute nothing."""
    return " ".join("".join(_text(_inline.parseInline(source))).split())


def _text(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        if token.type in ("text", "code_inline", "text_special"):
            yield token.content
        elif token.type in ("softbreak", "hardbreak"):
            yield " "
        elif token.children and token.type != "image":
            yield from _text(token.children)
