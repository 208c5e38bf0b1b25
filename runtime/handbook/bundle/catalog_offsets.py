"""Where each doc's entry lies in ``catalog.json`` (``catalog-offsets.bin``), so that a
`get` parses one entry instead of the whole catalog (13 MB and about 0.3 s at 10,000 docs).

The build writes both files from one `Catalog` with `write`; a reader that has verified
both against the manifest looks an id up with `CatalogOffsets.positions` and parses the
entry's bytes alone. Layout, little-endian:

    b"HBCATOFF" · uint32 version (1) · uint32 docs · uint32 library start · uint32 library end
    · sha256 of catalog.json (32 bytes) · uint32[docs] entry start · uint32[docs] entry end
    · uint32[docs + 1] id offsets · ids

Offsets are byte offsets into ``catalog.json``: the library object, and each doc's object
(in catalog order, so by id). The ids are UTF-8, concatenated, each starting at its id
offset (the last offset ends the last). The sha256 names the catalog the offsets were
written for: a reader whose catalog.json has another hash (a tool rewrote the catalog
and signed it again without this file) parses the whole catalog instead. The file is
additive in ``handbook/v1``: readers that do not know it verify its hash and ignore it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any, overload

from ..errors import FormatError
from .catalog import Catalog
from .layout import CATALOG, CATALOG_OFFSETS

MAGIC = b"HBCATOFF"
VERSION = 1
_HEAD = len(MAGIC) + 16 + 32
PLACES = 64
"""Places an id's bytes are looked at in the ids by `IdBytes.absent` before it leaves
the answer to `CatalogOffsets`."""


def dumps(value: Any) -> bytes:
    """JSON as catalog.json is written: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def write(catalog: Catalog) -> tuple[bytes, bytes]:
    """The bytes of ``catalog.json`` (exactly `dumps(catalog.to_dict())`) and of
    ``catalog-offsets.bin``, which gives the place of each of its objects."""
    parts: list[bytes] = []
    entries = ((doc.id, dumps(doc.to_dict())) for doc in catalog.docs)
    offsets = write_to(parts.append, entries, dumps(catalog.library.to_dict()))
    return b"".join(parts), offsets


def write_to(
    out: Callable[[bytes], object], entries: Iterable[tuple[str, bytes]], library: bytes
) -> bytes:
    """Write ``catalog.json`` piece by piece to `out`, from each doc's (id, serialized
    entry) in catalog order and the serialized library, and return the bytes of
    ``catalog-offsets.bin``: a build of 100,000 docs never holds the whole catalog (208 MB)."""
    starts, ends, id_offsets, ids = _uint32s(), _uint32s(), _uint32s([0]), []
    whole = hashlib.sha256()

    def put(data: bytes) -> None:
        whole.update(data)
        out(data)

    put(b'{"docs":[')
    at = len(b'{"docs":[')
    for n, (doc_id, entry) in enumerate(entries):
        if n:
            put(b",")
            at += 1
        put(entry)
        starts.append(at)
        at += len(entry)
        ends.append(at)
        ids.append(doc_id.encode())
        id_offsets.append(id_offsets[-1] + len(ids[-1]))
    put(b'],"library":')
    at += len(b'],"library":')
    put(library)
    put(b"}")
    header = _uint32s([VERSION, len(ids), at, at + len(library)])
    return b"".join(
        [MAGIC, _le(header), whole.digest()] + [_le(a) for a in (starts, ends, id_offsets)] + ids
    )


class CatalogOffsets:
    """A verified ``catalog-offsets.bin``, checked against the size of the verified
    ``catalog.json`` it describes: every range inside it, in order, ids sorted."""

    def __init__(self, data: bytes, catalog_bytes: int) -> None:
        def refuse(why: str) -> FormatError:
            return FormatError(f"{CATALOG_OFFSETS}: {why}")

        if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
            raise refuse("not a catalog offsets file (no HBCATOFF header)")
        version, docs, lib_start, lib_end = _read(data, len(MAGIC), 4)
        if version != VERSION:
            raise refuse(f"version {version}; this reader knows version {VERSION}")
        self.catalog_sha256 = data[_HEAD - 32 : _HEAD].hex()
        """The catalog.json these offsets were written for."""
        ids_at = _HEAD + 4 * (3 * docs + 1)
        if ids_at > len(data):
            raise refuse(f"too short for {docs:,} docs")
        self.starts = _read(data, _HEAD, docs)
        self.ends = _read(data, _HEAD + 4 * docs, docs)
        id_offsets = _read(data, _HEAD + 8 * docs, docs + 1)
        if id_offsets[0] != 0 or ids_at + id_offsets[-1] != len(data):
            raise refuse("its ids do not fill the end of the file")
        bounds = _uint32s([0] * 2 * docs)  # start, end, start, end, ... never falling
        bounds[0::2], bounds[1::2] = self.starts, self.ends
        if docs and not (self.starts[0] > 0 and _sorted(bounds.tolist())):
            raise refuse(f"entry ranges out of order in {CATALOG}")  # an empty one: on use
        if not (self.ends[-1] if docs else 0) < lib_start < lib_end < catalog_bytes:
            raise refuse(f"the library's range lies outside {CATALOG}")
        self.library = (lib_start, lib_end)
        if not _sorted(id_offsets.tolist()):
            raise refuse("the id offsets are out of order")
        self.ids = _ids(data[ids_at:], id_offsets)
        if not _sorted(self.ids):
            raise refuse("ids are not sorted")
        if docs and not self.ids[0]:  # sorted: an empty id comes first
            raise refuse("an id is empty")

    def __len__(self) -> int:
        return len(self.ids)

    def positions(self, doc_id: str) -> range:
        """The catalog positions of the docs with id `doc_id` (one per language)."""
        return range(bisect_left(self.ids, doc_id), bisect_right(self.ids, doc_id))

    def span(self, position: int) -> tuple[int, int]:
        """The byte range of the doc at `position` in catalog.json."""
        return self.starts[position], self.ends[position]


def _refuse(why: str) -> FormatError:
    return FormatError(f"{CATALOG_OFFSETS}: {why}")


class IdBytes(Sequence[str]):
    """The ids of a verified ``catalog-offsets.bin``, each cut and decoded when asked
    for, so that an unknown id is answered without cutting 10,000 of them. Nothing is
    checked here about their order: `CatalogOffsets` checks it before an entry is read,
    and `handbook verify` always."""

    def __init__(self, data: bytes) -> None:
        if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
            raise _refuse("not a catalog offsets file (no HBCATOFF header)")
        version, docs = _read(data, len(MAGIC), 2)
        if version != VERSION:
            raise _refuse(f"version {version}; this reader knows version {VERSION}")
        self._at = _HEAD + 4 * (3 * docs + 1)
        if self._at > len(data):
            raise _refuse(f"too short for {docs:,} docs")
        self._offsets = _read(data, _HEAD + 8 * docs, docs + 1)
        if self._offsets[0] != 0 or self._at + self._offsets[-1] != len(data):
            raise _refuse("its ids do not fill the end of the file")
        self._data, self._docs = data, docs
        self.catalog_sha256 = data[_HEAD - 32 : _HEAD].hex()

    def __len__(self) -> int:
        return self._docs

    def encoded(self, n: int) -> bytes:
        """The UTF-8 bytes of the n-th id."""
        if 0 <= n < self._docs:
            start, end = self._offsets[n], self._offsets[n + 1]
            if start <= end:
                return self._data[self._at + start : self._at + end]
        raise _refuse(f"the range of id {n} is out of order")

    @overload
    def __getitem__(self, n: int) -> str: ...
    @overload
    def __getitem__(self, n: slice) -> list[str]: ...
    def __getitem__(self, n: int | slice) -> str | list[str]:
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(self._docs))]
        if not -self._docs <= n < self._docs:
            raise IndexError(n)
        try:
            return self.encoded(n % self._docs).decode()
        except UnicodeDecodeError:
            raise _refuse(f"id {n % self._docs} is not UTF-8") from None

    def absent(self, doc_id: str) -> bool:
        """True when no id is `doc_id`: its bytes are searched in the ids (in C) and each
        place found looked up in the id offsets, whatever the ids' order (exact for any
        file whose offsets rise, as `CatalogOffsets` requires). False when an id is, or
        when the bytes occur in more than `PLACES` places (`CatalogOffsets` answers)."""
        try:
            needle = doc_id.encode()
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 id holds one
            return True
        data, offsets, found = self._data, self._offsets, self._at - 1
        for _ in range(PLACES if needle else 0):
            found = data.find(needle, found + 1)
            if found < 0:
                return True
            place = found - self._at
            k = bisect_left(offsets, place)
            if k < self._docs and offsets[k] == place and offsets[k + 1] == place + len(needle):
                return False
        return False


def _sorted(values: list[Any]) -> bool:
    """Whether `values` never fall (compared in C: a sorted list sorts in one pass, so
    the checks of 10,000 docs take well under a millisecond)."""
    return values == sorted(values)


def _ids(blob: bytes, offsets: array[int]) -> list[str]:
    """The ids the offsets cut `blob` into; FormatError when one is not UTF-8. (A list
    comprehension over the offsets as a list cuts 10,000 ids in half the time `map` over
    slice objects takes: every first `get` pays for it.)"""
    at = offsets.tolist()
    try:
        if blob.isascii():  # decoded once, then cut
            text = blob.decode("ascii")
            return [text[a:b] for a, b in pairwise(at)]
        return [blob[a:b].decode() for a, b in pairwise(at)]
    except UnicodeDecodeError:
        raise FormatError(f"{CATALOG_OFFSETS}: an id is not UTF-8") from None


def _uint32s(items: list[int] | None = None) -> array[int]:
    out = array("I", items or [])
    if out.itemsize != 4:  # pragma: no cover - every platform Python supports today
        raise RuntimeError("array('I') is not 32 bits here")
    return out


def _le(items: array[int]) -> bytes:
    if sys.byteorder == "big":  # pragma: no cover
        items = array("I", items)
        items.byteswap()
    return items.tobytes()


def _read(data: bytes, at: int, count: int) -> array[int]:
    out = _uint32s()
    out.frombytes(data[at : at + 4 * count])
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return out
