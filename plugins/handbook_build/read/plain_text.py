"""Markdown reduced to the words a reader sees: what the search index, a derived summary
and the embedded passages are made of.

Two views. `plain_text` is the cheap one the search index and the embedded passages are
made of (every section of every doc goes through it): link targets, tags, footnote marks
and markup characters go, link text and code stay (commands and config keys are worth
finding). `inline_text` renders one paragraph with markdown-it-py, for a derived summary
that `adopt --write` pins into the author's file: it keeps the words the page shows,
with the references the doc defines resolved, and none of the markers of the site's
extensions (footnote marks, attribute lists, icon shortcodes).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, MutableMapping
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline.state_inline import StateInline
from markdown_it.token import Token

_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_HTML_TAG = re.compile(r"<[^>\n]+>")
_FOOTNOTE_MARK = re.compile(r"\[\^[^\]\s]+\]")
_MARKUP = re.compile(r"[*`#|\[\]~<>]+")

_ATTR_LIST = re.compile(r"\{:?[ \t]*[.#][^{}\n]*\}|\{:[^{}\n]*\}")
"""Python-Markdown's attribute lists (`{: .source-link }`, `{ #anchor }`)."""
_SHORTCODE = re.compile(r"(?<![\w:]):[a-z0-9][a-z0-9_+-]*:(?![\w:])")
"""Emoji and icon shortcodes (`:octicons-file-code-24:`, `:material-check:`)."""
_UNRESOLVED_REFERENCE = re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")
"""`[text][label]` whose label the doc does not define: the reader needs only the text."""
_HILITE_LANG = re.compile(r"^(?:#!|:::)[\w+-]+ ")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?])(?=\s|$)")


def plain_text(markdown: str) -> str:
    """Link targets, tags, footnote marks and markup characters go; link text and code
    stay; character references are read."""
    text = _LINK_TARGET.sub("] ", _FOOTNOTE_MARK.sub(" ", markdown))
    return _MARKUP.sub(" ", html.unescape(_HTML_TAG.sub(" ", text)))


def _footnote_ref(state: StateInline, silent: bool) -> bool:
    """A footnote mark (`[^1]`), as a token of its own that says nothing."""
    src, pos = state.src, state.pos
    if not src.startswith("[^", pos):
        return False
    end = src.find("]", pos + 2)
    label = src[pos + 2 : end] if end > 0 else ""
    if not label or any(c.isspace() or c == "[" for c in label):
        return False
    if not silent:
        state.push("footnote_ref", "", 0).meta["label"] = label
    state.pos = end + 1
    return True


_inline = MarkdownIt("commonmark")
_inline.inline.ruler.before("link", "footnote_ref", _footnote_ref)


def inline_text(markdown: str, env: MutableMapping[str, Any] | None = None) -> str:
    """The words one block's inline `markdown` shows a reader, on one line. `env` holds
    the references the doc defines (what markdown-it's block parse of the doc put there)."""
    tokens = _inline.parseInline(markdown, dict(env or {}))
    children = (tokens[0].children or []) if tokens else []
    text = " ".join("".join(_words(children)).split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def _words(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        if token.type in ("text", "text_special"):
            text = _UNRESOLVED_REFERENCE.sub(r"\1", token.content)
            yield _SHORTCODE.sub("", _ATTR_LIST.sub("", text))
        elif token.type == "code_inline":  # less an InlineHilite language (`#!py x`)
            yield _HILITE_LANG.sub("", token.content)
        elif token.type in ("softbreak", "hardbreak"):
            yield " "
        elif token.children and token.type != "image":
            yield from _words(token.children)
