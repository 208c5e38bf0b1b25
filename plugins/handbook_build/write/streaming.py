"""A bundle emitted as its docs are checked (issue 29: 100,000 docs in 2 GB).

`emit` writes a bundle from every parsed doc at once, so a build held each doc (about
2.5x its text) from the check to the end of emit, beside the index, the catalog's
objects and the search file's arrays. `Stream` takes each doc as the check hands it
over, in path order: it indexes it, writes its content and attached files, serializes
its catalog entry, and keeps only that entry's bytes and a slim doc (path, frontmatter
values, and the marks of the fields the library-wide checks name). `finish` then writes
the rest from those, as `emit` does from docs: the same bytes.

The search file's excerpt texts are cut from the content files just written, read back
by the processes that cut them. Only one bundle of every doc is written this way: a
library with audiences, or with reviewers (whose policy may leave docs out, and whose
check reads every doc's entry), is emitted by `emit` once the check is done.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import overload

from handbook.bundle.catalog import Catalog, DocEntry, Resource, doc_from_dict
from handbook.bundle.catalog_offsets import dumps

from ..config.settings import Config
from ..read.parse import Doc
from .catalog_files import write_catalog
from .emit import (
    catalog_order,
    doc_key,
    finish,
    index_attached,
    index_entries,
    library_info,
    write_doc,
)
from .lunr_index import LunrIndex
from .seal import BundleWriter

LIBRARY_FIELDS = ("id", "superseded_by", "audience")
"""The frontmatter fields whose places the library-wide checks report (duplicate ids,
successors, audiences): a slim doc keeps only these fields' marks."""


class Stream:
    """One bundle of every doc, written as the docs arrive (`add`), then finished."""

    def __init__(self, config: Config, writer: BundleWriter) -> None:
        self.config, self.writer = config, writer
        self.index = LunrIndex()
        self.docs: list[Doc] = []
        """Slim docs, in path order: no body, sections or headings."""
        self.entries: list[bytes] = []
        """Each doc's catalog entry as catalog.json holds it, in path order."""
        self.contents: list[str] = []
        """Each doc's content file, in path order."""
        self.attached: dict[int, tuple[Resource, ...]] = {}
        """Path-order position -> the doc's attached files (only docs that have some)."""
        self.texts: dict[str, str] = {}
        """sha256 -> text, of every attached markdown file (indexed after the docs)."""
        self.failure: OSError | None = None
        """The first attached file that could not be read: raised by `finish`, once the
        check has passed (a failed check reports its findings instead, as `emit` would)."""

    def add(self, doc: Doc, files: Sequence[str] = ()) -> Doc:
        """Index, write and note one checked doc (`files`: its attached files, paths in
        the docs root); return the slim doc the check keeps in its place."""
        self.index.extend(index_entries([doc]))
        try:
            entry = write_doc(doc, self.config, self.writer, files, self.texts)
        except OSError as exc:
            self.failure = self.failure or exc
            entry = write_doc(doc, self.config, self.writer, (), self.texts)
        if entry.resources:
            self.attached[len(self.entries)] = entry.resources
        self.entries.append(dumps(entry.to_dict()))
        self.contents.append(entry.content)
        kept = {k: doc.fields[k] for k in LIBRARY_FIELDS if k in doc.fields}
        slim = replace(doc, body="", headings=(), sections=(), fields=kept)
        self.docs.append(slim)
        return slim

    def finish(self, built_at: str, source_docs: Mapping[str, int]) -> Catalog:
        """Write the catalog, the index, the search file, tools.json and llms.txt, as
        `emit` would from the docs added; return the catalog (its entries decoded on
        each read, never all held)."""
        if self.failure is not None:
            raise self.failure
        ranked = sorted(range(len(self.docs)), key=lambda i: catalog_order(self.docs[i]))
        position = [0] * len(ranked)
        for n, i in enumerate(ranked):
            position[i] = n
        docs = [self.docs[i] for i in ranked]
        library = library_info(docs, self.config, built_at)._replace(source_docs=source_docs)
        entries = _Entries([self.entries[i] for i in ranked])
        self.entries.clear()
        owners = (
            (position[i], doc_key(d.id, d.meta), str(d.meta["title"]), self.attached.get(i, ()))
            for i, d in enumerate(self.docs)
        )
        markdown = index_attached(self.index, self.texts, owners)
        write_catalog(
            self.writer, library, ((d.id, e) for d, e in zip(docs, entries.raw, strict=True))
        )
        catalog = Catalog(library, entries)
        bodies = [self.writer.root / path for path in self.contents]  # read by who cuts them
        finish(self.config, self.writer, catalog, self.index, position, markdown, bodies)
        return catalog


class _Entries(Sequence[DocEntry]):
    """Catalog entries kept as their JSON bytes and decoded when read."""

    def __init__(self, raw: list[bytes]) -> None:
        self.raw = raw

    def __len__(self) -> int:
        return len(self.raw)

    @overload
    def __getitem__(self, n: int) -> DocEntry: ...
    @overload
    def __getitem__(self, n: slice) -> Sequence[DocEntry]: ...
    def __getitem__(self, n: int | slice) -> DocEntry | Sequence[DocEntry]:
        if isinstance(n, slice):
            return [doc_from_dict(json.loads(raw)) for raw in self.raw[n]]
        return doc_from_dict(json.loads(self.raw[n]))

    def __iter__(self) -> Iterator[DocEntry]:
        for raw in self.raw:
            yield doc_from_dict(json.loads(raw))
