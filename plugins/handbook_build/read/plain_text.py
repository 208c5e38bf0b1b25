"""Markdown reduced to the words a reader sees: what the search index, a derived summary
and the embedded passages are made of."""

from __future__ import annotations

import re

_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
_HTML_TAG = re.compile(r"<[^>\n]+>")
_MARKUP = re.compile(r"[*`#|\[\]~<>]+")


def plain_text(markdown: str) -> str:
    """Link targets, tags and markup characters go; link text and code stay (commands and
    config keys are worth finding)."""
    return _MARKUP.sub(" ", _HTML_TAG.sub(" ", _LINK_TARGET.sub("] ", markdown)))
