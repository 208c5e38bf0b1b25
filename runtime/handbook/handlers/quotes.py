"""What `ask` quotes of a passage: the sentences or lines that hold the question's words.

A fixed window from the first matched word cut answers short ("…makes your docume…")
and quoted bare headings. Here a passage's text (its heading line left out: the answer
names the section) is split into units: sentences of prose, and single lines of code,
tables and lists. The units that hold the most of the question's weight are chosen,
greedily, within QUOTE_CHARS, and quoted in the passage's order; a chosen sentence that
ends with a colon brings the lines it introduces (the configuration after "add this:").
A unit longer than the room is clipped around its matched words, never before them.
A passage with no text under its heading has nothing to quote ("").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

from ..search.stemmer import stem

QUOTE_CHARS = 480
"""Room for one passage's quote: two or three sentences, or a short block of code."""
FOLLOW_LINES = 8
"""Lines a sentence ending in a colon may bring with it."""
LEAD_CHARS = 60
"""Context kept before the first matched word when a long unit is clipped."""
_FENCE = re.compile(r"^\s*(```|~~~)")
_BLOCK = re.compile(r"^\s*([-*+]\s|\d+[.)]\s|\||>|!!!|\?\?\?|<)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[*_]?[A-Z0-9])")
_WORD = re.compile(r"\w+")

Matcher = Callable[[Collection[str]], set[str]]
"""The question's terms that a set of stems holds (exactly or by a shared stem prefix)."""


class Unit(NamedTuple):
    text: str
    code: bool
    """A line of code, a table row or a list item: kept as a line."""


def units(text: str) -> list[Unit]:
    """The passage's sentences and lines, its heading line left out."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    out: list[Unit] = []
    paragraph: list[str] = []
    fenced = False

    def flush() -> None:
        if paragraph:
            prose = " ".join(" ".join(paragraph).split())
            out.extend(Unit(s, False) for s in _SENTENCE.split(prose) if s.strip())
            paragraph.clear()

    for line in lines:
        if _FENCE.match(line):
            flush()
            fenced = not fenced
        elif fenced or _BLOCK.match(line) or line.startswith("    "):
            flush()
            if line.strip():
                out.append(Unit(line.rstrip(), True))
        elif not line.strip() or line.lstrip().startswith("#"):
            flush()
            if line.strip():
                out.append(Unit(" ".join(line.split()), False))
        else:
            paragraph.append(line)
    flush()
    return out


def stems(text: str) -> frozenset[str]:
    return frozenset(stem(w.lower()) for w in _WORD.findall(text))


def quote(
    text: str, weights: Mapping[str, float], matched: Matcher, room: int = QUOTE_CHARS
) -> tuple[str, set[str]]:
    """(the quote of passage `text` for a question whose terms weigh `weights`, the terms
    it holds); ("", set()) when the passage has no text under its heading."""
    parts = units(text)
    if not parts:
        return "", set()
    held = [matched(stems(u.text)) for u in parts]
    chosen: list[int] = []
    covered: set[str] = set()
    used = 0
    while True:
        gains = [
            (sum(weights.get(t, 0.0) for t in held[n] - covered), -n)
            for n in range(len(parts))
            if n not in chosen and (not chosen or used + len(parts[n].text) <= room)
        ]
        best = max(gains, default=(0.0, 0))
        if best[0] <= 0:
            break
        n = -best[1]
        chosen.append(n)
        covered |= held[n]
        used += len(parts[n].text)
        for follow in range(n + 1, min(n + 1 + FOLLOW_LINES, len(parts))):
            if not parts[n].text.endswith(":") or follow in chosen:
                break
            if used + len(parts[follow].text) > room or not parts[follow].code:
                break
            chosen.append(follow)
            used += len(parts[follow].text)
    if not chosen:  # nothing holds the words: the passage's opening (its meaning matched)
        for n, part in enumerate(parts):
            if chosen and used + len(part.text) > room:
                break
            chosen.append(n)
            used += len(part.text)
    return _joined(parts, sorted(chosen), matched, room), covered


def _joined(parts: list[Unit], chosen: list[int], matched: Matcher, room: int) -> str:
    """The chosen units in the passage's order: adjacent ones joined, gaps shown as "…"."""
    out = ""
    for k, n in enumerate(chosen):
        piece = parts[n].text
        if len(piece) > room:
            piece = _clipped(piece, matched, room)
        if k and chosen[k - 1] == n - 1:
            out += ("\n" if parts[n].code or parts[n - 1].code else " ") + piece
        elif k:
            out += " … " + piece
        else:
            out = ("… " if n else "") + piece
    return out + (" …" if chosen[-1] < len(parts) - 1 else "")


def _clipped(text: str, matched: Matcher, room: int) -> str:
    """`room` characters of a long unit, from a little before its first matched word."""
    start = 0
    for word in _WORD.finditer(text):
        if matched({stem(word.group().lower())}):
            start = max(0, word.start() - LEAD_CHARS)
            break
    if start:
        start = text.rfind(" ", 0, start) + 1
    window = text[start : start + room]
    return ("…" if start else "") + window + ("…" if start + room < len(text) else "")
