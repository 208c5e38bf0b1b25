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
``doc_id``, ``doc_title`` per doc (string tables)
``doc_content``           per doc, the 32-byte sha256 naming its content file
========================  ================================================================

A string table ``NAME`` is two arrays: ``NAME`` (the UTF-8 strings concatenated) and
``NAME_offsets`` (uint32, where each starts, plus one final offset).

`handbook.search` reads it in place.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence

from .query import FIELDS

MAGIC = b"HBSEARCH"
VERSION = 1


def _strings(strings: Iterable[str]) -> tuple[bytes, array[int]]:
    """(concatenated UTF-8, uint32 offsets with one final offset)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = array("I", [0])
    for item in encoded:
        offsets.append(offsets[-1] + len(item))
    return b"".join(encoded), offsets


def write(
    *,
    terms: Sequence[str],
    lunr_index: array[int],
    offsets: array[int],
    post_entry: array[int],
    post_score: array[int],
    entry_doc: Sequence[int],
    entry_range: Sequence[tuple[int, int]],
    entry_title: Sequence[str],
    entry_anchor: Sequence[str],
    doc_id: Sequence[str],
    doc_title: Sequence[str],
    doc_content: Sequence[bytes],
) -> Iterator[bytes | memoryview]:
    """The file, in pieces (the postings are tens of megabytes: they are written from the
    arrays in place, never copied into one buffer). `terms` sorted by code point;
    `offsets[t * fields + f]` is where term t's postings in field f start."""
    arrays: dict[str, tuple[str, bytes | array[int]]] = {}
    if not post_score or max(post_score) <= 0xFFFF:
        post_score = array("H", post_score)
    for name, strings in (
        ("terms", terms),
        ("entry_title", entry_title),
        ("entry_anchor", entry_anchor),
        ("doc_id", doc_id),
        ("doc_title", doc_title),
    ):
        blob, starts = _strings(strings)
        arrays[name] = ("B", blob)
        arrays[f"{name}_offsets"] = ("I", starts)
    arrays.update(
        {
            "term_lunr_index": ("I", lunr_index),
            "postings": ("I", offsets),
            "post_entry": ("I", post_entry),
            "post_score": (post_score.typecode, post_score),
            "entry_doc": ("I", array("I", entry_doc)),
            "entry_start": ("I", array("I", [a for a, _ in entry_range])),
            "entry_end": ("I", array("I", [b for _, b in entry_range])),
            "doc_content": ("B", b"".join(doc_content)),
        }
    )
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
            piece = data
        yield piece
        yield b"\0" * (-len(piece) % 8)
