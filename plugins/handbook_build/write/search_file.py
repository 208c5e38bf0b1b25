"""``search.bin``, the runtime's search file: the lunr index's terms and scores, plus what
a hit needs to be shown without parsing the catalog, entry by entry in index order (each
doc's passages as `passages` cuts its content, then the attached markdown files')."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

from handbook.bundle.catalog import Catalog, Resource, SectionEntry, passages
from handbook.pedigree.derived import is_retired
from handbook.search import file_format as search_format
from handbook.search import hit_texts
from handbook.search.hit_texts import excerpt_text

from ..workers import parallel
from .lunr_index import LunrIndex


def search_file(
    order: Sequence[int],
    markdown: Sequence[tuple[int, Resource]],
    catalog: Catalog,
    index: LunrIndex,
    bodies: Sequence[Body] | None = None,
) -> Iterator[bytes | memoryview]:
    """The runtime's search file: the index's terms and scores, plus what a hit needs to
    be shown without parsing the catalog (ids, titles, paths, anchors, byte ranges).
    `order` is the docs' catalog positions in index order; the entries of the attached
    markdown files (`markdown`: catalog position, file) follow theirs, in their arrays.
    With `bodies` (each doc's markdown, in `order`), each doc entry's excerpt text is
    stored too, so that rendering a hit reads no content file (`handbook.search.hit_texts`).
    `index` is used up (`LunrIndex.release`): write the lunr index from it first."""
    docs = search_format.Passages()
    firsts = []  # per doc in `order`, its first entry
    for n in order:
        entry = catalog.docs[n]
        firsts.append(len(docs))
        _passages(docs, n, entry.sections, entry.subsections, entry.bytes)
    files = search_format.Passages()
    for f, (_, resource) in enumerate(markdown):
        _passages(files, f, resource.sections, resource.subsections, resource.bytes)
    if len(docs) + len(files) != len(index.refs):
        raise RuntimeError("the index and the catalog disagree about the entries")
    arrays = index.search_arrays(split=len(docs))
    index.release()  # the texts are cut without the postings beside them
    texts = None if bodies is None else _texts(docs, firsts, bodies)
    doc_id, doc_title, doc_content, doc_retired = [], [], [], []
    for d in catalog.docs:  # once: a streamed build's entries are decoded on each read
        doc_id.append(d.id)
        doc_title.append(d.title)
        doc_content.append(bytes.fromhex(d.sha256))
        doc_retired.append(is_retired(d))
    return search_format.write(
        arrays,
        docs,
        doc_id=doc_id,
        doc_title=doc_title,
        doc_content=doc_content,
        attached=search_format.Attached(
            files,
            doc=[n for n, _ in markdown],
            path=[r.path for _, r in markdown],
            content=[bytes.fromhex(r.sha256) for _, r in markdown],
        )
        if markdown
        else None,
        entry_text=texts,
        doc_retired=doc_retired,
    )


Body = str | Path
"""A doc's markdown, or the content file that holds it (read by the worker that cuts it)."""


def _texts(
    docs: search_format.Passages, firsts: Sequence[int], bodies: Sequence[Body]
) -> hit_texts.Packer:
    """Each doc entry's excerpt text (`hit_texts.excerpt_text`), compressed as it is cut
    (by worker processes, a chunk of docs each, on a library large enough), equal texts
    once; the dictionary is sampled from the texts first, as `hit_texts.dictionary`
    would from all of them."""
    total = len(docs)
    step = max(1, total // hit_texts.DICT_SAMPLE)
    sample = [_text(docs, firsts, bodies, e) for e in range(0, total, step)]
    packer = hit_texts.Packer(hit_texts.dictionary(sample))
    ends = [*firsts[1:], total][: len(firsts)]  # a bundle may have no doc
    items = [
        (body, docs.starts[a:b].tobytes(), docs.ends[a:b].tobytes())
        for body, a, b in zip(bodies, firsts, ends, strict=True)
    ]
    for key, packed in parallel(_cut, packer.zdict, items):
        packer.add_packed(key, packed)
    packer.close()
    return packer


def _cut(zdict: bytes, items: list[tuple[Body, bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Per entry of these docs, its text's key and, the first time this chunk meets the
    text, the text compressed (b"" after: the main process stores each text once, and
    meets every text's first appearance first)."""
    packer, seen, out = hit_texts.Packer(zdict), set(), []
    for body, starts, ends in items:
        content = _content(body)
        for start, end in zip(array("I", starts), array("I", ends), strict=True):
            text = excerpt_text(content, start, end).encode("utf-8")
            key = hit_texts.key(text)
            out.append((key, b"" if key in seen else packer.deflate(text)))
            seen.add(key)
    return out


def _content(body: Body) -> bytes:
    return body.read_bytes() if isinstance(body, Path) else body.encode("utf-8")


def _text(
    docs: search_format.Passages, firsts: Sequence[int], bodies: Sequence[Body], entry: int
) -> bytes:
    start, end = docs.starts[entry], docs.ends[entry]
    body = _content(bodies[bisect.bisect_right(firsts, entry) - 1])
    return excerpt_text(body, start, end).encode("utf-8")


def _passages(
    out: search_format.Passages,
    owner: int,
    sections: Sequence[SectionEntry],
    subsections: Sequence[SectionEntry],
    size: int,
) -> None:
    """The entries of one text (a doc's content, an attached file), cut by `passages`: its
    overview, then each heading's text, named by its `##` section and its own."""
    first, parts = passages(sections, subsections, size)
    out.add(owner, 0, first, "", "")
    for start, end, own, in_ in parts:
        sub = ("", "") if own is in_ else (own.title, own.anchor)
        out.add(owner, start, end, in_.title if in_ else "", in_.anchor if in_ else "", *sub)
