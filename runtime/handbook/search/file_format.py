"""The compact search file (``search.bin``): its layout, and the writer the build uses.

``index.json`` is for lunr.js; parsing it into lunr.py's structures takes lunr.py 10 s
on 10,000 docs. This file holds the same terms and scores as flat little-endian arrays
that are used in place (memoryview casts), so opening it costs one read and one hash.
Its layout, written by the build and read here:

    b"HBSEARCH" · uint32 version · uint32 header length · header (JSON) · arrays

The header names each array with its byte offset, item count and type (``I`` uint32,
``H`` uint16, ``B`` bytes); arrays start at 8-byte boundaries. Arrays:

========================  ================================================================
``terms``                 the terms, sorted by code point (string table)
``term_lunr_index``       each term's ``_index`` in index.json (lunr's summation order)
``postings``              per term and field: offset of its first posting (+1 final)
``post_entry``            the entry of each posting
``post_score``            lunr's field-vector score x 1000 (lunr rounds to 3 decimals);
                          uint16 when every score fits (with boosts of 1 they are below
                          27,000), which makes the file a quarter smaller to read and hash
``entry_doc``             the doc (position in catalog.json) of each entry
``entry_start/_end``      the entry's UTF-8 byte range in its doc's content
``entry_title``           section titles ("" for a doc's own entry) (string table)
``entry_anchor``          section anchors ("" for a doc's own entry) (string table)
``entry_sub_title``       the subsection (``###`` or deeper) whose text the entry is, ""
``entry_sub_anchor``      when it is a ``##`` section's own or the doc's (string tables,
                          present only when some doc has subsections; added within
                          version 1: ``entry_title`` and ``entry_anchor`` still name the
                          ``##`` section that holds the entry)
``doc_id``, ``doc_title`` per doc (string tables)
``doc_content``           per doc, the 32-byte sha256 naming its content file
``excerpt_text``          each distinct text an excerpt is cut from, raw deflate against
``excerpt_text_offsets``  ``excerpt_text_dict`` (offsets: uint32, one final), and per
``excerpt_text_dict``     doc entry the number of its text (`handbook.search.hit_texts`);
``entry_excerpt``         added within version 1, as ``entry_text``, ``entry_text_offsets``
                          and ``entry_text_dict`` (one text per entry), which are read
                          but no longer written
``doc_retired``           per doc, 1 when it is retired, else 0 (added within version 1)
``post_head_lists``       the posting lists (row x fields + field) longer than HEAD
                          postings, ascending
``post_head``             per such list, the positions (in ``post_entry``) of its HEAD
                          highest-scoring postings, by score descending, ties by position;
                          the same count for every list (HEAD = len(post_head) /
                          len(post_head_lists)), so the last one's score bounds the rest
========================  ================================================================

The two ``post_head`` arrays (and the ``resource_`` ones, of the attached files'
postings) were added within version 1: a reader that does not know them ranks every
posting, one that does ranks the top of each list first and stops once no other entry can
reach the top k (`handbook.search.index`); a file without them is ranked exhaustively.

A string table ``NAME`` is two arrays: ``NAME`` (the UTF-8 strings concatenated) and
``NAME_offsets`` (uint32, where each starts, plus one final offset).

The entries of attached markdown files come after every doc's (entry numbers go on
from ``len(entry_doc)``) and live only in arrays of their own, named ``resource_``: a
reader that does not know them never meets one, so it can never take a range in an
attached file for a range in a doc's content. Their terms are in ``terms`` (with no
postings of the docs' there), so every reader builds the same query vectors as lunr.

========================  ================================================================
``resource_terms``        the terms (numbers in ``terms``) that have postings here, sorted
``resource_postings``     per listed term and field: offset of its first posting (+1 final)
``resource_post_entry``   the entry of each posting (numbered after the docs' entries)
``resource_post_score``   as ``post_score``
``resource_post_head_*``  as ``post_head_lists`` and ``post_head``
``resource_entry_file``   the attached file of each entry (its number in these arrays)
``resource_entry_start``  the entry's UTF-8 byte range in its file
``/_end``
``resource_entry_title``  section titles ("" for the text before the first section)
``resource_entry_anchor`` section anchors (string tables)
``resource_entry_sub_*``  as ``entry_sub_title`` and ``entry_sub_anchor``, for these entries
``resource_doc``          per file, its doc's position in catalog.json
``resource_path``         per file, its path in the doc's folder (string table)
``resource_content``      per file, the 32-byte sha256 naming its bundle file
========================  ================================================================

`handbook.search.index` reads it in place.
"""

from __future__ import annotations

import heapq
import json
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from . import hit_texts
from .query import FIELDS

MAGIC = b"HBSEARCH"
VERSION = 1
RESOURCE = "resource_"
"""The prefix of the arrays that hold attached markdown files' entries."""
HEAD = 64
"""Postings of a long list kept in score order (``post_head``): enough that the top 10
of almost every query is found among them and the tail's bound rules out the rest."""


def _strings(strings: Iterable[str]) -> tuple[bytes, array[int]]:
    """(concatenated UTF-8, uint32 offsets with one final offset)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = array("I", [0])
    for item in encoded:
        offsets.append(offsets[-1] + len(item))
    return b"".join(encoded), offsets


class Strings:
    """UTF-8 strings appended one at a time into one buffer with uint32 offsets, as the
    file stores them: a million entries' titles and anchors held as str objects took
    hundreds of megabytes at 100,000 docs."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.offsets = array("I", [0])

    def append(self, text: str) -> None:
        self.blob += text.encode("utf-8")
        self.offsets.append(len(self.blob))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, n: int) -> str:
        return self.blob[self.offsets[n] : self.offsets[n + 1]].decode("utf-8")

    def any(self) -> bool:
        """Whether any string is not empty."""
        return bool(self.blob)


@dataclass
class Passages:
    """Per entry of one group, in index order: its owner (a doc's catalog position, or an
    attached file's number), its UTF-8 byte range in the owner's text, its ``##``
    section's title and anchor ("" for the text before the first section), and the
    subsection's whose text it is ("" for a ``##`` section's own text). Kept as the
    file's arrays, never as objects per entry."""

    owner: array[int] = field(default_factory=lambda: array("I"))
    starts: array[int] = field(default_factory=lambda: array("I"))
    ends: array[int] = field(default_factory=lambda: array("I"))
    title: Strings = field(default_factory=Strings)
    anchor: Strings = field(default_factory=Strings)
    sub_title: Strings = field(default_factory=Strings)
    sub_anchor: Strings = field(default_factory=Strings)

    def __len__(self) -> int:
        return len(self.owner)

    def add(
        self,
        owner: int,
        start: int,
        end: int,
        title: str,
        anchor: str,
        sub_title: str = "",
        sub_anchor: str = "",
    ) -> None:
        self.owner.append(owner)
        self.starts.append(start)
        self.ends.append(end)
        self.title.append(title)
        self.anchor.append(anchor)
        self.sub_title.append(sub_title)
        self.sub_anchor.append(sub_anchor)


class Postings(NamedTuple):
    """One group's postings: for each row and field, the offset of its first posting (one
    final offset ends the last), and per posting its entry and score x 1000. The docs'
    rows are all the terms; the attached files' rows are the terms listed in `rows`."""

    rows: array[int] | None
    offsets: array[int]
    entries: array[int]
    scores: array[int]


class SearchArrays(NamedTuple):
    """What the index gives the search file: terms sorted by code point, each term's
    ``_index`` in index.json, and the postings of the docs' and the attached files' entries."""

    terms: Sequence[str]
    lunr_index: array[int]
    docs: Postings
    attached: Postings


class Attached(NamedTuple):
    """The attached markdown files: their entries, and per file its doc (catalog
    position), its path in the doc's folder and the sha256 naming its bundle file."""

    passages: Passages
    doc: Sequence[int]
    path: Sequence[str]
    content: Sequence[bytes]


def write(
    index: SearchArrays,
    docs: Passages,
    *,
    doc_id: Sequence[str],
    doc_title: Sequence[str],
    doc_content: Sequence[bytes],
    attached: Attached | None = None,
    entry_text: hit_texts.Packer | None = None,
    doc_retired: Sequence[bool] | None = None,
) -> Iterator[bytes | memoryview]:
    """The file, in pieces (the postings are tens of megabytes: they are written from the
    arrays in place, never copied into one buffer). The ``resource_`` arrays are written
    only when there are attached files to search, and the ``entry_sub_`` ones only when
    a doc (or an attached file, for ``resource_entry_sub_``) has subsections, so other
    bundles read as before. `entry_text` holds the doc entries' excerpt texts, compressed
    as the build made them (`handbook.search.hit_texts.Packer`), stored when given;
    `doc_retired`, per doc, whether it is retired (a hit then shows its pedigree)."""
    arrays: dict[str, tuple[str, bytes | bytearray | array[int]]] = {}
    for name, strings in (
        ("terms", index.terms),
        ("entry_title", docs.title),
        ("entry_anchor", docs.anchor),
        ("doc_id", doc_id),
        ("doc_title", doc_title),
    ):
        _strings_into(arrays, name, strings)
    if docs.sub_anchor.any():
        _strings_into(arrays, "entry_sub_title", docs.sub_title)
        _strings_into(arrays, "entry_sub_anchor", docs.sub_anchor)
    arrays["term_lunr_index"] = ("I", index.lunr_index)
    _group(arrays, "", index.docs, docs)
    arrays["doc_content"] = ("B", b"".join(doc_content))
    if entry_text is not None:
        _texts_into(arrays, entry_text)
    if doc_retired is not None:
        arrays["doc_retired"] = ("B", bytes(map(bool, doc_retired)))
    if attached is not None:
        _attached_into(arrays, index.attached, attached)
    layout, position = {}, 0
    for name, (typecode, data) in arrays.items():
        size = len(data) * (data.itemsize if isinstance(data, array) else 1)
        layout[name] = [position, len(data), typecode]
        position += size + (-size % 8)
    header = json.dumps(
        {"fields": list(FIELDS), "arrays": layout}, sort_keys=True, separators=(",", ":")
    ).encode()
    header += b" " * (-(len(MAGIC) + 8 + len(header)) % 8)
    yield MAGIC + VERSION.to_bytes(4, "little") + len(header).to_bytes(4, "little") + header
    for _, data in arrays.values():
        if isinstance(data, array):
            if sys.byteorder == "big":  # the file is little-endian everywhere
                data = array(data.typecode, data)
                data.byteswap()
            piece: bytes | memoryview = memoryview(data).cast("B")
        else:
            piece = memoryview(data)
        yield piece
        yield b"\0" * (-len(piece) % 8)


def _group(
    arrays: dict[str, tuple[str, bytes | bytearray | array[int]]],
    prefix: str,
    postings: Postings,
    passages: Passages,
) -> None:
    """One group's postings and entry places, named with `prefix` ("" for the docs')."""
    scores = postings.scores
    if not scores or max(scores) <= 0xFFFF:
        scores = array("H", scores)
    if postings.rows is not None:
        arrays[f"{prefix}terms"] = ("I", postings.rows)
    arrays[f"{prefix}postings"] = ("I", postings.offsets)
    arrays[f"{prefix}post_entry"] = ("I", postings.entries)
    arrays[f"{prefix}post_score"] = (scores.typecode, scores)
    lists, head = impact_heads(postings.offsets, postings.scores, HEAD)
    arrays[f"{prefix}post_head_lists"] = ("I", lists)
    arrays[f"{prefix}post_head"] = ("I", head)
    owner = f"{prefix}entry_file" if prefix else "entry_doc"
    arrays[owner] = ("I", passages.owner)
    arrays[f"{prefix}entry_start"] = ("I", passages.starts)
    arrays[f"{prefix}entry_end"] = ("I", passages.ends)


def impact_heads(
    offsets: Sequence[int], scores: Sequence[int], size: int = HEAD
) -> tuple[array[int], array[int]]:
    """(the lists longer than `size` postings, per list the positions of its `size` best
    postings by score descending, ties by position): ``post_head_lists``, ``post_head``."""
    lists, head = array("I"), array("I")
    for i in range(len(offsets) - 1):
        start, stop = offsets[i], offsets[i + 1]
        if stop - start > size:
            lists.append(i)
            # nlargest is sorted(..., reverse=True)[:size]: stable, so ties keep position order
            head.extend(heapq.nlargest(size, range(start, stop), key=scores.__getitem__))
    return lists, head


def _attached_into(
    arrays: dict[str, tuple[str, bytes | bytearray | array[int]]],
    postings: Postings,
    attached: Attached,
) -> None:
    """The ``resource_`` arrays: the attached files' postings, entries and files."""
    _group(arrays, RESOURCE, postings, attached.passages)
    _strings_into(arrays, f"{RESOURCE}entry_title", attached.passages.title)
    _strings_into(arrays, f"{RESOURCE}entry_anchor", attached.passages.anchor)
    if attached.passages.sub_anchor.any():
        _strings_into(arrays, f"{RESOURCE}entry_sub_title", attached.passages.sub_title)
        _strings_into(arrays, f"{RESOURCE}entry_sub_anchor", attached.passages.sub_anchor)
    arrays[f"{RESOURCE}doc"] = ("I", array("I", attached.doc))
    _strings_into(arrays, f"{RESOURCE}path", attached.path)
    arrays[f"{RESOURCE}content"] = ("B", b"".join(attached.content))


def _texts_into(
    arrays: dict[str, tuple[str, bytes | bytearray | array[int]]], texts: hit_texts.Packer
) -> None:
    """``excerpt_text`` (each distinct text deflated against ``excerpt_text_dict``), its
    offsets, and ``entry_excerpt``: per entry, the number of its text."""
    arrays["excerpt_text_dict"] = ("B", texts.zdict)
    arrays["excerpt_text"] = ("B", texts.blob)
    arrays["excerpt_text_offsets"] = ("I", texts.offsets)
    arrays["entry_excerpt"] = ("I", texts.of)


def _strings_into(
    arrays: dict[str, tuple[str, bytes | bytearray | array[int]]],
    name: str,
    strings: Strings | Iterable[str],
) -> None:
    blob: bytes | bytearray
    if isinstance(strings, Strings):
        blob, starts = strings.blob, strings.offsets
    else:
        blob, starts = _strings(strings)
    arrays[name] = ("B", blob)
    arrays[f"{name}_offsets"] = ("I", starts)
