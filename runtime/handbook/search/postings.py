"""The search file's arrays, read in place: its string tables and its posting groups.

``search.bin`` (`handbook.search.file_format`) is a JSON header naming flat little-endian
arrays; each is used where it lies, as a memoryview cast to its type (swapped once on a
big-endian machine), so opening the file costs one read and one hash. Every size is
checked against the others here, before anything is searched.
"""

from __future__ import annotations

import bisect
import json
import sys
from array import array
from collections.abc import Callable
from typing import Any, NamedTuple

_ITEM_SIZE = {"I": 4, "H": 2, "B": 1}


def read_arrays(data: bytes) -> tuple[dict[str, Any], dict[str, memoryview]]:
    """(the header, every array by name) of a search file whose magic and version were
    checked; ValueError (or another error of malformed data) when an array lies outside
    the file."""
    header_len = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + header_len])
    base = 16 + header_len
    view = memoryview(data)
    arrays: dict[str, memoryview] = {}
    for name, (offset, count, typecode) in header["arrays"].items():
        size = count * _ITEM_SIZE[typecode]
        if offset < 0 or count < 0:
            raise ValueError(f"array {name} has a negative offset or count")
        chunk = view[base + offset : base + offset + size]
        if len(chunk) != size:
            raise ValueError(f"array {name} runs past the end")
        if typecode != "B" and sys.byteorder == "big":
            chunk = memoryview(_swapped(bytes(chunk), typecode))
        arrays[name] = chunk.cast(typecode) if typecode != "B" else chunk
    return header, arrays


def _swapped(data: bytes, typecode: str) -> bytes:
    a = array(typecode, data)
    a.byteswap()
    return a.tobytes()


class Strings:
    """A string table: UTF-8 blob plus offsets; items decoded on demand."""

    def __init__(self, blob: memoryview, offsets: memoryview) -> None:
        self.blob, self.offsets = blob, offsets

    def __getitem__(self, i: int) -> str:
        return str(self.blob[self.offsets[i] : self.offsets[i + 1]], "utf-8")  # no copy

    def raw(self, i: int) -> bytes:
        return bytes(self.blob[self.offsets[i] : self.offsets[i + 1]])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def find(self, value: str) -> int | None:
        """The index of `value` in a table sorted by code point (= UTF-8 byte order)."""
        target = value.encode("utf-8")
        i = bisect.bisect_left(range(len(self)), target, key=self.raw)
        return i if i < len(self) and self.raw(i) == target else None


class CheckedStrings(Strings):
    """A string table verified by the items read (`handbook.bundle.ranged`): before an
    item is decoded, `need_offsets` and `need_blob` are given the byte ranges of the
    array and blob it reads. The per-entry titles and anchors are used only for the
    hits shown, so verifying them whole at open would hash megabytes for ten strings."""

    def __init__(
        self,
        blob: memoryview,
        offsets: memoryview,
        need_blob: Callable[[int, int], None],
        need_offsets: Callable[[int, int], None],
    ) -> None:
        super().__init__(blob, offsets)
        self._need_blob, self._need_offsets = need_blob, need_offsets
        self._checked = bytearray(len(self))
        """1 for each item already verified: a hit shown again costs a lookup."""

    def _span(self, i: int) -> tuple[int, int]:
        if i < 0:
            raise IndexError(f"string {i} is not in the table")
        if not self._checked[i]:
            size = self.offsets.itemsize
            self._need_offsets(i * size, (i + 2) * size)
            self._need_blob(self.offsets[i], self.offsets[i + 1])
            self._checked[i] = 1
        return self.offsets[i], self.offsets[i + 1]

    def __getitem__(self, i: int) -> str:
        start, end = self._span(i)
        return str(self.blob[start:end], "utf-8")

    def raw(self, i: int) -> bytes:
        start, end = self._span(i)
        return bytes(self.blob[start:end])


class Postings(NamedTuple):
    """One group of postings (`handbook.search.file_format`): per row and field, where the row's
    postings start; a row per term, or per term listed in `rows`. `head_lists` and `head`
    (None in files written before them) give the best postings of each long list."""

    rows: memoryview | None
    offsets: memoryview
    entries: memoryview
    scores: memoryview
    head_lists: memoryview | None = None
    head: memoryview | None = None

    def list_of(self, term: int, field: int, fields: int) -> int | None:
        """The number of the posting list of `term` in `field` (None: no postings)."""
        row = term
        if self.rows is not None:
            row = bisect.bisect_left(self.rows, term)
            if row == len(self.rows) or self.rows[row] != term:
                return None
        return row * fields + field

    def span(self, term: int, field: int, fields: int) -> tuple[int, int]:
        """Where the postings of `term` in `field` are ((0, 0) for none)."""
        i = self.list_of(term, field, fields)
        return (0, 0) if i is None else (self.offsets[i], self.offsets[i + 1])

    def head_of(self, i: int) -> memoryview | None:
        """The positions of list `i`'s best postings, by score descending (None when the
        list is short, which means all of it is at hand, or the file has no heads)."""
        if self.head_lists is None or self.head is None or not self.head_lists:
            return None
        at = bisect.bisect_left(self.head_lists, i)
        if at == len(self.head_lists) or self.head_lists[at] != i:
            return None
        size = len(self.head) // len(self.head_lists)
        return self.head[at * size : (at + 1) * size]


def read_group(arrays: dict[str, memoryview], prefix: str, rows: int, fields: int) -> Postings:
    """The group of postings whose arrays are named with `prefix` ("" for the docs'), a
    row per term (or `rows` of them), checked against each other."""
    a = arrays
    group = Postings(
        a[f"{prefix}terms"] if prefix else None,
        a[f"{prefix}postings"],
        a[f"{prefix}post_entry"],
        a[f"{prefix}post_score"],
        a.get(f"{prefix}post_head_lists"),
        a.get(f"{prefix}post_head"),
    )
    if len(group.offsets) != rows * fields + 1 or len(group.entries) != len(group.scores):
        raise ValueError("array sizes do not agree")
    if (group.head_lists is None) != (group.head is None) or (
        group.head_lists is not None
        and group.head is not None
        and (
            len(group.head) % max(1, len(group.head_lists))
            or (len(group.head_lists) == 0) != (len(group.head) == 0)
        )
    ):
        raise ValueError("the posting heads do not agree")
    return group
