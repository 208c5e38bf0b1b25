"""The retriever seam: what ranks a query over a verified bundle's passages.

A passage is a doc's own entry (title, keywords, summary, overview) or one of its ``##``
sections, or the same of a markdown file attached to a doc. Handlers never read search
arrays themselves: they ask a `Retriever` for scored passages and for where each passage
lives, so another ranking (a semantic one, an external engine with the same fields and
boosts) can stand behind the same tools.
`LexicalRetriever`, lunr-compatible and answering from ``search.bin`` in place, is the
default.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import NamedTuple, Protocol

from ..bundle.layout import SEARCH, content_path, resource_path
from ..bundle.local import Bundle
from ..errors import BundleError
from .file_format import RESOURCE
from .index import Hit, SearchIndex
from .postings import Strings
from .query import Clause


class Passage(NamedTuple):
    """Where a ranked entry lives: its doc (catalog position, id, title), the bundle file
    that holds its text (the doc's content, or a file attached to the doc, whose path in
    the doc's folder is `resource`) and its section, the deepest heading it lies under
    (`##` or a subsection; "" title and anchor for the text before the first section),
    as a UTF-8 byte range in that file."""

    doc: int
    doc_id: str
    doc_title: str
    title: str
    anchor: str
    start: int
    end: int
    content: str
    resource: str = ""


class Retriever(Protocol):
    """Ranks parsed queries over one verified bundle."""

    def rank(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
        text: str = "",
    ) -> tuple[int, list[Hit]]:
        """(how many passages match, the best `limit` of them, best first); with `docs`,
        only passages of those docs (catalog positions) count. `text` is the query as
        written, for retrievers that read meaning rather than terms."""
        ...

    def scores(self, clauses: Sequence[Clause], text: str = "") -> dict[int, float]:
        """Every matching passage's score."""
        ...

    def passage(self, entry: int) -> Passage: ...

    def indexed_docs(self) -> frozenset[int]:
        """The docs (catalog positions) that have at least one passage."""
        ...

    def document_frequency(self, term: str) -> int:
        """How many passages hold `term` (stemmed), counted once per field as lunr's IDF
        counts them: what says how informative a word is in this library."""
        ...

    def passage_count(self) -> int: ...

    def closeness(self, text: str, entries: Sequence[int]) -> list[float] | None:
        """Each entry's closeness in meaning to `text` (cosine of their embeddings), or
        None for a retriever that reads no meaning."""
        ...


class LexicalRetriever:
    """lunr's ranking, exactly, over the compact search file (`handbook.search.index`)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._doc_id = index.strings("doc_id")
        self._doc_title = index.strings("doc_title")
        self._title = index.strings("entry_title")
        self._anchor = index.strings("entry_anchor")
        self._sub = _deepest(index, "") if index.subsections else None
        self._resource_sub: tuple[Strings, Strings] | None = None
        if index.attached:
            self._resource_title = index.strings(f"{RESOURCE}entry_title")
            self._resource_anchor = index.strings(f"{RESOURCE}entry_anchor")
            self._resource_path = index.strings(f"{RESOURCE}path")
            if index.resource_subsections:
                self._resource_sub = _deepest(index, RESOURCE)

    def rank(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
        text: str = "",
    ) -> tuple[int, list[Hit]]:
        return self.index.search(clauses, limit, docs=docs)

    def scores(self, clauses: Sequence[Clause], text: str = "") -> dict[int, float]:
        return self.index.scores(clauses)[0]

    def passage(self, entry: int) -> Passage:
        index = self.index
        doc = index.doc_of(entry)
        local = entry - len(index.entry_doc)
        if local < 0:
            title, anchor = _named(self._title, self._anchor, self._sub, entry)
            return Passage(
                doc,
                self._doc_id[doc],
                self._doc_title[doc],
                title,
                anchor,
                index.entry_start[entry],
                index.entry_end[entry],
                content_path(index.content_sha(doc)),
            )
        file = index.resource_entry_file[local]
        title, anchor = _named(
            self._resource_title, self._resource_anchor, self._resource_sub, local
        )
        return Passage(
            doc,
            self._doc_id[doc],
            self._doc_title[doc],
            title,
            anchor,
            index.resource_entry_start[local],
            index.resource_entry_end[local],
            resource_path(index.resource_sha(file)),
            self._resource_path[file],
        )

    def indexed_docs(self) -> frozenset[int]:
        return frozenset(self.index.entry_doc)

    def document_frequency(self, term: str) -> int:
        return self.index.document_frequency(term)

    def passage_count(self) -> int:
        return self.index.entries

    def closeness(self, text: str, entries: Sequence[int]) -> list[float] | None:
        return None


def open_retriever(bundle: Bundle) -> LexicalRetriever:
    """The retriever for a verified bundle: the lexical one over its search file."""
    if SEARCH not in bundle.manifest.signed.files:
        raise BundleError(
            f"{SEARCH}: missing from the manifest; rebuild the bundle with this version of Handbook"
        )
    return LexicalRetriever(SearchIndex(bundle.ranged(SEARCH)))


def _deepest(index: SearchIndex, group: str) -> tuple[Strings, Strings]:
    """A group's subsection titles and anchors (`entry_sub_` arrays)."""
    return index.strings(f"{group}entry_sub_title"), index.strings(f"{group}entry_sub_anchor")


def _named(
    titles: Strings, anchors: Strings, sub: tuple[Strings, Strings] | None, entry: int
) -> tuple[str, str]:
    """The title and anchor of the deepest heading an entry is under: its subsection's
    when it names one, else its `##` section's ("" for the text before the first)."""
    if sub is not None and (anchor := sub[1][entry]):
        return sub[0][entry], anchor
    return titles[entry], anchors[entry]
