"""An adopted site's unsafe HTML, kept from agents: what HB403 finds is left out of the
doc's agent text.

A site that was not written for Handbook may hold script, `<base>` or a refresh pragma
that its authors meant (an embed, an analytics snippet). Adoption accepts the site as it
stands, so there HB403 is a warning and the site's own page keeps the HTML; but the
bundle's text is handed to agents and to whatever renders their answers, which did not
ask for it. Each block (a paragraph, an HTML block, a fence's info line) holding what
HB403 finds is replaced, in the bundle only, by one line saying that something was left
out; a heading keeps its words. Lines keep their count, so every place the check
reported stays where it was; section offsets move with the text.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right

from markdown_it import MarkdownIt

from .. import rules
from ..read.parse import Doc
from .unsafe_html import may_hold_script, scan_body

LEFT_OUT = (
    f"*[HTML that runs script or moves the page is left out here ({rules.UNSAFE_HTML.code})]*"
)
"""What an agent reads in place of a block that held unsafe HTML."""
_LEAVES = ("html_block", "inline", "fence")
_blocks = MarkdownIt("commonmark").disable("inline")


def defused(doc: Doc) -> Doc:
    """`doc` with each block that holds unsafe HTML replaced by `LEFT_OUT` (a heading by
    its plain words); `doc` itself when there is none."""
    if not may_hold_script(doc.body):
        return doc
    found = {line for line, _, _ in scan_body(doc.body)}
    if not found:
        return doc
    lines = doc.body.split("\n")
    new = list(lines)
    tokens = _blocks.parse(doc.body)
    for i, token in enumerate(tokens):
        if token.type not in _LEAVES or token.map is None:
            continue
        start, end = token.map
        if not any(start <= line < end for line in found):
            continue
        heading = token.type == "inline" and i > 0 and tokens[i - 1].type == "heading_open"
        level = int(tokens[i - 1].tag[1:]) if heading else 0
        words = _heading_words(doc, start) if heading else None
        new[start] = "#" * level + " " + words if words is not None else LEFT_OUT
        for blank in range(start + 1, end):
            new[blank] = ""
    return _with_body(doc, lines, new)


def _heading_words(doc: Doc, line: int) -> str | None:
    """The plain title of the heading written on body line `line`, or None."""
    offset = sum(len(text) + 1 for text in doc.body.split("\n")[:line])
    return next((h.title for h in doc.headings if h.offset == offset), None)


def _with_body(doc: Doc, old: list[str], new: list[str]) -> Doc:
    """`doc` with the body `new` (as many lines as `old`), its headings and sections
    moved to the same lines of it."""
    old_starts, new_starts = _starts(old), _starts(new)
    old_length = old_starts[-1] - 1

    def moved(offset: int) -> int:
        if offset >= old_length:
            return new_starts[-1] - 1
        line = bisect_right(old_starts, offset) - 1
        return new_starts[line] + min(offset - old_starts[line], len(new[line]))

    return dataclasses.replace(
        doc,
        body="\n".join(new),
        headings=tuple(h._replace(offset=moved(h.offset)) for h in doc.headings),
        sections=tuple(s._replace(start=moved(s.start), end=moved(s.end)) for s in doc.sections),
    )


def _starts(lines: list[str]) -> list[int]:
    """The offset each line starts at, then one past the text's end (plus the newline
    it does not have)."""
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text) + 1)
    return starts
