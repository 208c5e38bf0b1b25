"""A markdown text's `##` sections in the catalog's terms (UTF-8 byte ranges), for a doc's
body and for a markdown file attached to a folder doc alike, and their subsections
(`###` and deeper).

Readers slice the bytes they verified, so offsets count bytes, not characters. An
attached file is bounded only by `limits.resource_bytes`, not by the body limits, so a
file of nothing but headings could make a million sections: past
`MAX_ATTACHED_SECTIONS`, the rest of the file stays in the last section (searchable and
readable page by page, never split further). Subsections (a doc's, an attached file's)
are bounded the same way by `MAX_SUBSECTIONS`: a text of nothing but `###` lines stays
a few thousand entries.
"""

from __future__ import annotations

from collections.abc import Sequence

from handbook.bundle.catalog import SectionEntry

from ..read.frontmatter import body_offset
from ..read.parse import SECTION_LEVELS, SUBSECTION_LEVELS, Doc, Section, sections_of, subsections

MARKDOWN = "text/markdown"
MAX_ATTACHED_SECTIONS = 1000
"""Far above what real references hold (the Agent Skills examples have at most 21)."""
MAX_SUBSECTIONS = 1000
"""Far above what real pages hold (mkdocs' release notes, the most in the real sites we
tried, have 122 `###` headings)."""


def section_entries(text: str, sections: Sequence[Section]) -> tuple[SectionEntry, ...]:
    """`sections` (character offsets into `text`) as catalog entries."""
    offsets = _byte_offsets(text, sorted({o for s in sections for o in (s.start, s.end)}))
    return tuple(
        SectionEntry(s.title, s.anchor, s.level, offsets[s.start], offsets[s.end], s.end - s.start)
        for s in sections
    )


def markdown_text(media_type: str, data: bytes) -> str | None:
    """The text of an attached file that is markdown in UTF-8, which gets sections and
    search entries; None for any other file."""
    if media_type != MARKDOWN:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def attached_sections(text: str) -> tuple[SectionEntry, ...]:
    """The sections of an attached markdown file, found as a doc's are, after its
    frontmatter if it has one (an agent file's `name` and `description`: no headings)."""
    return section_entries(text, _in_file(text, SECTION_LEVELS, MAX_ATTACHED_SECTIONS))


def attached_subsections(text: str) -> tuple[SectionEntry, ...]:
    """The subsections (`###` and deeper) of an attached markdown file, as a doc's are."""
    return section_entries(text, _in_file(text, SUBSECTION_LEVELS, MAX_SUBSECTIONS))


def _in_file(text: str, levels: tuple[int, ...], most: int) -> list[Section]:
    skip = body_offset(text)
    found = [
        s._replace(start=s.start + skip, end=s.end + skip) for s in sections_of(text[skip:], levels)
    ]
    return bounded(found, most, len(text))


def doc_subsections(doc: Doc) -> tuple[Section, ...]:
    """A doc's subsections, at most `MAX_SUBSECTIONS` (see `bounded`)."""
    return tuple(bounded(list(subsections(doc)), MAX_SUBSECTIONS, len(doc.body)))


def bounded(found: list[Section], most: int, end: int) -> list[Section]:
    """`found`, of at most `most` sections: past it, the last one runs to `end` (the end of
    the text), so the rest stays readable (by offset) and searchable."""
    if len(found) > most:
        found[most - 1 :] = [found[most - 1]._replace(end=end)]
    return found


def _byte_offsets(text: str, char_offsets: list[int]) -> dict[int, int]:
    """Character offset -> UTF-8 byte offset, in one pass."""
    out, last, total = {}, 0, 0
    for offset in char_offsets:
        total += len(text[last:offset].encode("utf-8"))
        out[offset], last = total, offset
    return out
