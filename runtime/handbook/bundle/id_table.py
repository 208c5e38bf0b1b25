"""The ids of a bundle as an unknown id's suggestions search them (``ids.bin``): each id
squeezed, a line each, and the lines' orders by start and by end, so that a fresh
process answers its first unknown id by bisecting bytes it has only hashed, with no
per-id work (no decode, no squeeze, no sort of 10,000 ids).

`squeeze` lowercases (ASCII) and drops ASCII punctuation, spaces and control characters:
`AC-200`, `ac 200` and `AC200` all become `ac200`. `IdTable` holds, for ids in catalog
order (so sorted, once per language): the ids; ``text``, a line break and then each
squeezed id followed by a line break (what substring searches run over); ``by_start``,
the line numbers ordered by squeezed id, and ``by_end``, ordered by squeezed id read
backwards (ties by line number). The build writes it with `dumps`; a reader makes one
with `parse` from the verified file, or with `of_ids` from the ids in memory (a bundle
without the file), without orders: its lines are then searched one anchor length at a
time. Layout, little-endian:

    b"HBDOCIDS" · uint32 version (1) · uint32 docs · uint32 squeezed bytes
    · sha256 of catalog.json (32 bytes) · uint32[docs + 1] id offsets
    · uint32[docs] by start · uint32[docs] by end · squeezed ids · ids (UTF-8)

A reader checks at parse only what costs no per-id work (the header, the sizes adding
up, the framing line breaks); each line number and id range it uses is checked when
used. That the lines are the catalog's ids, squeezed and ordered, is checked whole by
`check` (`handbook verify`). Additive in ``handbook/v2``: readers that do not know it
verify its hash and ignore it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

from ..errors import FormatError
from .catalog_offsets import _le, _read, _uint32s
from .layout import CATALOG, IDS
from .manifest import FileEntry

MAGIC = b"HBDOCIDS"
VERSION = 1
_HEAD = len(MAGIC) + 12 + 32
_DROP = bytes(b for b in range(128) if not chr(b).isalnum() and b != 0x0A)


def squeeze(text: str) -> bytes:
    """`text` lowercased (ASCII), UTF-8, without ASCII punctuation, spaces or controls."""
    return text.encode("utf-8", "replace").lower().translate(None, _DROP)


def _refuse(why: str) -> FormatError:
    return FormatError(f"{IDS}: {why}")


class IdTable:
    """Squeezed ids, with their orders when read from ids.bin (see the module
    docstring); `line(n)` is the n-th squeezed id, made from the id on use."""

    def __init__(
        self,
        ids: Sequence[str],
        text: bytes,
        by_start: Sequence[int] | None = None,
        by_end: Sequence[int] | None = None,
    ) -> None:
        self.ids, self.text, self.by_start, self.by_end = ids, text, by_start, by_end

    def line(self, n: int) -> bytes:
        if not 0 <= n < len(self.ids):
            raise _refuse(f"line {n} of {len(self.ids)} named")
        return squeeze(self.ids[n]).replace(b"\n", b"")

    def holds(self, doc_id: str) -> bool:
        """Whether `doc_id` is one of the ids (which are sorted)."""
        at = bisect_left(self.ids, doc_id)
        return at < len(self.ids) and self.ids[at] == doc_id


def of_ids(ids: Sequence[str]) -> IdTable:
    """The table of `ids` (in catalog order) made in memory, without orders: a join and
    a squeeze, in C (sorting 10,000 squeezed ids read backwards would take longer than
    searching them). An id holding a line break is squeezed without it."""
    joined = "\n".join(ids)
    if joined.count("\n") != max(0, len(ids) - 1):
        joined = "\n".join(i.replace("\n", "") for i in ids)
    return IdTable(ids, b"\n" + squeeze(joined) + b"\n")


def orders(table: IdTable) -> tuple[list[int], list[int]]:
    """The line numbers of `table` by squeezed id and by squeezed id read backwards, ties
    by line number."""
    lines = table.text[1:-1].split(b"\n") if table.ids else []
    backwards = [line[::-1] for line in lines]
    return (
        sorted(range(len(lines)), key=lines.__getitem__),
        sorted(range(len(lines)), key=backwards.__getitem__),
    )


def dumps(ids: Sequence[str], catalog_sha256: bytes) -> bytes:
    """The bytes of ``ids.bin`` for `ids` (catalog order), written for the catalog.json
    whose sha256 is `catalog_sha256`."""
    table = of_ids(ids)
    encoded = [i.encode() for i in ids]
    by_start, by_end = orders(table)
    offsets = _uint32s([0])
    for item in encoded:
        offsets.append(offsets[-1] + len(item))
    head = _uint32s([VERSION, len(ids), len(table.text)])
    arrays = [offsets, _uint32s(by_start), _uint32s(by_end)]
    return b"".join([MAGIC, _le(head), catalog_sha256, *map(_le, arrays), table.text, *encoded])


class _FileIds(Sequence[str]):
    """The ids of a verified ``ids.bin``, each decoded when asked for."""

    def __init__(self, blob: bytes, offsets: array[int]) -> None:
        self._blob, self._offsets = blob, offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, n: int) -> str: ...
    @overload
    def __getitem__(self, n: slice) -> list[str]: ...
    def __getitem__(self, n: int | slice) -> str | list[str]:
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(len(self)))]
        if n < 0:
            n += len(self)
        if not 0 <= n < len(self):
            raise IndexError(n)
        start, end = self._offsets[n], self._offsets[n + 1]
        if not start <= end <= len(self._blob):
            raise _refuse(f"the range of id {n} is out of order or outside the file")
        try:
            return self._blob[start:end].decode()
        except UnicodeDecodeError:
            raise _refuse(f"id {n} is not UTF-8") from None

    def __iter__(self) -> Iterator[str]:
        return (self[n] for n in range(len(self)))


def parse(data: bytes) -> tuple[IdTable, str]:
    """The table a verified ``ids.bin`` holds and the sha256 of the catalog.json it was
    written for; FormatError, naming the file, for a header, version or sizes that do
    not add up."""
    if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
        raise _refuse("not an ids file (no HBDOCIDS header)")
    version, docs, squeezed = _read(data, len(MAGIC), 3)
    if version != VERSION:
        raise _refuse(f"version {version}; this reader knows version {VERSION}")
    text_at = _HEAD + 4 * (3 * docs + 1)
    if text_at + squeezed > len(data):
        raise _refuse(f"too short for {docs:,} docs")
    offsets = _read(data, _HEAD, docs + 1)
    text = data[text_at : text_at + squeezed]
    if offsets[0] != 0 or text_at + squeezed + offsets[-1] != len(data):
        raise _refuse("its ids do not fill the end of the file")
    if text[:1] != b"\n" or text[-1:] != b"\n" or len(text) < 2:
        raise _refuse("its squeezed ids are not framed by line breaks")
    ids = _FileIds(data[text_at + squeezed :], offsets)
    by_start = _read(data, _HEAD + 4 * (docs + 1), docs)
    by_end = _read(data, _HEAD + 4 * (2 * docs + 1), docs)
    return IdTable(ids, text, by_start, by_end), data[_HEAD - 32 : _HEAD].hex()


def from_bundle(
    files: Mapping[str, FileEntry], docs: int, read: Callable[[str], bytes]
) -> IdTable | None:
    """The table of a bundle's ``ids.bin`` (read verified through `read`), or None when
    the bundle has none or it was written for another catalog.json (a tool rewrote the
    catalog and signed it again: its ids are then taken from the catalog)."""
    if IDS not in files or CATALOG not in files:
        return None
    table, catalog_sha256 = parse(read(IDS))
    if catalog_sha256 != files[CATALOG].sha256:
        return None
    if len(table.ids) != docs:
        raise _refuse(f"lists {len(table.ids)} docs, the manifest {docs}")
    return table


def check(files: Mapping[str, FileEntry], read: Callable[[str], bytes], ids: Sequence[str]) -> None:
    """`handbook verify`: an ``ids.bin`` written for the listed catalog.json must be
    exactly the file the build writes for its ids (`ids`, in catalog order)."""
    if IDS not in files:
        return
    data = read(IDS)
    _, catalog_sha256 = parse(data)
    if catalog_sha256 == files[CATALOG].sha256 and data != dumps(
        ids, bytes.fromhex(catalog_sha256)
    ):
        raise _refuse(f"its lines or orders are not those of {CATALOG}'s ids")
