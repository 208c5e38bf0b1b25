"""HTML comments out of agent text.

A comment is for the page's authors and tools (mkdocs-material's pages carry a thousand
``<!-- md:version 7.1.0 -->`` hooks); the site hides it, so agents must not be handed it
either. Comments are found as markdown-it-py reads the page, never by a pattern over the
raw text: a ``<!--`` shown in a code span, a fence or an indented code block stays, and
so does one that is never closed (Python-Markdown shows it as text). Found are the
comments of HTML blocks, the inline ones (placed by the parser's own `html_inline` rule,
wrapped to note where each starts) and those in the indented body of an admonition or a
content tab (``!!! note``, ``???``, ``===``), which CommonMark reads as code but the site
renders as markdown.

A line that held nothing but comments goes with them. Where that line stood between two
lines of text, one empty line stays in its place, so a comment that ended a list or a
quote (``<!-- -->``, an idiom of MkDocs' own docs) still ends it; between blank lines it
goes with one of them, so no run of blank lines is left behind. `Stripped.lines` says
which line of the body each remaining line was, for the map of where lines are written.
A finding's column on a line that kept text after an inline comment counts the text as
it is now.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.rules_inline import html_inline
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token

_COMMENT_END = re.compile(r"--!?>")
_BLANK_TO_LINE_END = re.compile(r"[ \t\r\f\v]*(?:\n|\Z)")
_CONTAINER = re.compile(r"(?:!!!|\?\?\?\+?|===\+?)\s")
"""The first line of an admonition, a collapsible block or a content tab: the indented
lines after it are markdown to the site, code to CommonMark."""


def _placed_html_inline(state: StateInline, silent: bool) -> bool:
    """markdown-it's `html_inline`, noting where in the inline text the HTML starts."""
    start = state.pos
    if not html_inline(state, silent):
        return False
    if not silent:
        state.tokens[-1].meta["pos"] = start
    return True


_md = MarkdownIt("commonmark")
_md.inline.ruler.at("html_inline", _placed_html_inline)


class Comment(NamedTuple):
    """A comment taken out, where it was written."""

    line: int
    """0-based line of the body it was taken from (its first line)."""
    col: int
    """1-based column of its ``<!--``."""
    text: str

    def at(self, offset: int) -> tuple[int, int]:
        """The line and column of `offset` in the comment's text."""
        before = self.text[:offset]
        if "\n" not in before:
            return self.line, self.col + offset
        return self.line + before.count("\n"), offset - before.rfind("\n")


class Stripped(NamedTuple):
    text: str
    lines: tuple[int, ...]
    """For each line of `text`, the 0-based line of the body it was (where it starts)."""
    comments: tuple[Comment, ...]


def strip_comments(body: str) -> Stripped | None:
    """`body` without its HTML comments, or None when it has none."""
    if "<!--" not in body:
        return None
    text = _Lines(body)
    tokens = _md.parse(body)
    spans = sorted(set(_spans(text, tokens)))
    if not spans:
        return None
    cuts = _cuts(text, spans, set(_in_html(text, tokens)))
    comments = tuple(
        Comment(text.line(a), a - text.starts[text.line(a)] + 1, body[a:b]) for a, b in spans
    )
    return Stripped(*_apply(text, cuts), comments)


class _Lines:
    """A text and where its lines start."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def end(self, line: int) -> int:
        """Where line `line` ends, its line break included."""
        return self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)

    def blank(self, line: int) -> bool:
        return not self.text[self.starts[line] : self.end(line)].strip()


def _spans(text: _Lines, tokens: list[Token]) -> Iterator[tuple[int, int]]:
    """(start, end) offsets in `text` of every comment the parser sees in it."""
    after_container = False
    for token in tokens:
        if token.map is None:
            continue
        first, last = token.map
        if token.type == "html_block":
            yield from html_comments(text.text, text.starts[first], text.end(last - 1))
        elif token.type == "inline":
            place = _Placing(text, first, token.content)
            for child in token.children or ():
                if child.type == "html_inline" and child.content.startswith("<!--"):
                    at = child.meta.get("pos", -1)
                    yield from place.span(at, at + len(child.content))
        elif token.type == "code_block" and after_container and "<!--" in token.content:
            place, inner = _Placing(text, first, token.content), _Lines(token.content)
            for start, end in _spans(inner, _md.parse(token.content)):
                yield from place.span(start, end)
        after_container = token.type == "inline" and bool(_CONTAINER.match(token.content))


def html_comments(html: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The comments of raw HTML in `html[start:end]`, ended as a browser ends them
    (``-->``, ``--!>``, or at once: ``<!-->``, ``<!--->``); one never closed ends the
    search (no later one can close either)."""
    at = html.find("<!--", start, end)
    while at >= 0:
        if html.startswith(">", at + 4) or html.startswith("->", at + 4):
            stop = at + 5 if html[at + 4] == ">" else at + 6
        else:
            found = _COMMENT_END.search(html, at + 4, end)
            if found is None:
                return
            stop = found.end()
        yield at, stop
        at = html.find("<!--", stop, end)


def _in_html(text: _Lines, tokens: list[Token]) -> Iterator[int]:
    """The lines of HTML blocks that hold more than comments: a comment's line there goes
    without a trace (an empty line would end the block)."""
    for token in tokens:
        if token.type == "html_block" and token.map is not None:
            first, last = token.map
            start, end = text.starts[first], text.end(last - 1)
            rest = _Cut(list(html_comments(text.text, start, end))).left(text.text, start, end)
            if rest.strip():
                yield from range(first, last)


class _Placing:
    """Offsets of a text the parser took from the lines of `body` from `first` on (less
    their indents and container marks, a paragraph's or a code block's content), placed
    in `body`: each of its lines ends its body line, but for trailing blanks."""

    def __init__(self, body: _Lines, first: int, content: str) -> None:
        self.body, self.first, self.content = body, first, _Lines(content)
        self.shifts: dict[int, int | None] = {}

    def span(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The span in `body`, if both ends can be placed and it is a comment there."""
        at, stop = self.offset(start), self.offset(end)
        if at is not None and stop is not None and self.body.text.startswith("<!--", at):
            yield at, stop

    def offset(self, pos: int) -> int | None:
        if pos < 0:
            return None
        row = self.content.line(pos)
        if row not in self.shifts:
            self.shifts[row] = self._shift(row)
        shift = self.shifts[row]
        if shift is None:
            return None
        return self.body.starts[self.first + row] + shift + pos - self.content.starts[row]

    def _shift(self, row: int) -> int | None:
        """Where line `row` of the content starts in its body line; None if unsure."""
        n = self.first + row
        if n >= len(self.body.starts):
            return None
        piece = self.content.text[self.content.starts[row] : self.content.end(row)].rstrip()
        source = self.body.text[self.body.starts[n] : self.body.end(n)].rstrip()
        if source.endswith(piece):
            return len(source) - len(piece)
        return source.find(piece) if source.count(piece) == 1 else None


class _Cut:
    """Sorted, merged ranges of a text to take out."""

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        merged: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.ranges = merged
        self.firsts = [a for a, _ in merged]

    def within(self, i: int) -> bool:
        """Whether offset `i` is strictly inside a range (text on both sides goes)."""
        n = bisect.bisect_right(self.firsts, i) - 1
        return n >= 0 and self.ranges[n][0] < i < self.ranges[n][1]

    def left(self, text: str, start: int, end: int) -> str:
        """What is left of `text[start:end]`."""
        n = max(bisect.bisect_right(self.firsts, start) - 1, 0)
        out, at = [], start
        while n < len(self.ranges) and self.ranges[n][0] < end:
            a, b = self.ranges[n]
            if b > at:
                out.append(text[at : max(a, at)])
                at = b
            n += 1
        out.append(text[at:end] if at < end else "")
        return "".join(out)


def _cuts(text: _Lines, spans: list[tuple[int, int]], in_html: set[int]) -> list[tuple[int, int]]:
    """The ranges to take out: each comment, with a blank beside it where two would meet,
    a line would end in one or start with one; and each line left with nothing but
    blanks, with the blank line after it when it stood between blank lines."""
    body, cuts = text.text, []
    for start, end in spans:
        if _BLANK_TO_LINE_END.match(body, end):
            while start > 0 and body[start - 1] in " \t":
                start -= 1
        elif _starts_line(body, start):
            while body[end : end + 1] == " ":  # the line's text starts where the comment did
                end += 1
        elif body[start - 1] == " " and body[end : end + 1] == " ":
            end += 1
        cuts.append((start, end))
    cut = _Cut(cuts)
    touched = sorted(
        {n for a, b in cut.ranges for n in range(text.line(a), text.line(max(a, b - 1)) + 1)}
    )
    emptied = [n for n in touched if n < len(text.starts) and _emptied(text, cut, n)]
    for run in _runs(emptied):
        first, last = run[0], run[-1]
        start, end = text.starts[first], text.end(last)
        if cut.within(start) or cut.within(end):  # part of a comment that goes on
            newline = body[end - 1 : end] == "\n" and not cut.within(end)
            cuts.append((start, end - 1 if newline else end))
            continue
        before = first == 0 or text.blank(first - 1)
        after = last + 1 >= len(text.starts) or text.blank(last + 1)
        if before and after and last + 1 < len(text.starts):
            end = text.end(last + 1)  # and the blank line after
        elif not before and not after and not in_html.issuperset(run):
            end -= 1  # one empty line stays, and ends a paragraph, a list or a quote
        cuts.append((start, end))
    return cuts


def _starts_line(body: str, at: int) -> bool:
    """Whether only blanks and quote marks are before `at` on its line."""
    while at > 0 and body[at - 1] in " \t>":
        at -= 1
    return at == 0 or body[at - 1] == "\n"


def _emptied(text: _Lines, cut: _Cut, n: int) -> bool:
    """Whether line `n` had text and has none once `cut` is taken out, or is a blank
    line within a comment."""
    start, end = text.starts[n], text.end(n)
    if text.blank(n):
        return cut.within(start)
    return not cut.left(text.text, start, end).strip()


def _runs(lines: list[int]) -> Iterator[list[int]]:
    run: list[int] = []
    for n in lines:
        if run and n != run[-1] + 1:
            yield run
            run = []
        run.append(n)
    if run:
        yield run


def _apply(text: _Lines, cuts: list[tuple[int, int]]) -> tuple[str, tuple[int, ...]]:
    """The text with `cuts` taken out, and for each of its lines the line it starts on."""
    body, kept, position = text.text, [], 0
    for a, b in _Cut(cuts).ranges:
        if a > position:
            kept.append((position, a))
        position = b
    if position < len(body):
        kept.append((position, len(body)))
    lines: list[int] = []
    at_start = True
    for a, b in kept:
        if at_start:
            lines.append(text.line(a))
        lines.extend(
            text.line(a + m.end()) for m in re.finditer("\n", body[a:b]) if a + m.end() < b
        )
        at_start = body[b - 1] == "\n"
    if at_start:  # the text ends with a line break, or is empty: its last line is empty
        lines.append(len(text.starts) - 1)
    return "".join(body[a:b] for a, b in kept), tuple(lines)
