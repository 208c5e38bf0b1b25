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


class LexicalRetriever:
    """lunr's ranking, exactly, over the compact search file (`handbook.search.index`)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index
        self._doc_id = index.strings("doc_id")
        self._doc_title = index.strings("doc_title")
        self._title = index.strings("entry_title")
        self._anchor = index.strings("entry_anchor")
        self._sub = (
            (index.strings("entry_sub_title"), index.strings("entry_sub_anchor"))
            if index.subsections
            else None
        )
        if index.attached:
            self._resource_title = index.strings(f"{RESOURCE}entry_title")
            self._resource_anchor = index.strings(f"{RESOURCE}entry_anchor")
            self._resource_path = index.strings(f"{RESOURCE}path")

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
            title, anchor = self._title[entry], self._anchor[entry]
            if self._sub is not None and self._sub[1][entry]:  # a subsection's own text
                title, anchor = self._sub[0][entry], self._sub[1][entry]
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
        return Passage(
            doc,
            self._doc_id[doc],
            self._doc_title[doc],
            self._resource_title[local],
            self._resource_anchor[local],
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


def open_retriever(bundle: Bundle) -> LexicalRetriever:
    """The retriever for a verified bundle: the lexical one over its search file."""
    if SEARCH not in bundle.manifest.signed.files:
        raise BundleError(
            f"{SEARCH}: missing from the manifest; rebuild the bundle with this version of Handbook"
        )
    return LexicalRetriever(SearchIndex(bundle.read(SEARCH)))
