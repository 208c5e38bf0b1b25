"""The ids of a bundle as an unknown id's suggestions search them (``ids.bin``): each id
squeezed, a line each, and the lines' orders by start and by end, so that a fresh
process answers its first unknown id by bisecting bytes it has only hashed, with no
per-id work (no decode, no squeeze, no sort of 10,000 ids).

`squeeze` lowercases (ASCII) and drops ASCII punctuation, spaces and control characters:
`AC-200`, `ac 200` and `AC200` all become `ac200`. An `IdTable` holds, for the ids in
catalog order (so sorted, once per language): the ids; ``text``, a line break and then
each squeezed id followed by a line break (what substring searches run over); and, read
from ids.bin, ``by_start``, the line numbers ordered by squeezed id, and ``by_end``,
ordered by squeezed id read backwards (ties by line number). The ids themselves are
catalog-offsets.bin's (`IdBytes`), cut when used. Without ids.bin, `of_ids` makes the
table in memory, without orders: its lines are then searched one anchor length at a
time. Layout, little-endian:

    b"HBDOCIDS" · uint32 version (1) · uint32 docs · sha256 of catalog.json (32 bytes)
    · uint32[docs] by start · uint32[docs] by end · squeezed ids (to the end)

A reader checks at parse only what costs no per-id work (header, sizes, the framing
line breaks); each line number it uses is checked when used. That the lines and orders
are those of the catalog's ids is checked whole by `check` (`handbook verify`).
Additive in ``handbook/v2``: readers that do not know it verify its hash and ignore it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..errors import FormatError
from .catalog_offsets import IdBytes, _le, _read, _uint32s
from .layout import CATALOG, CATALOG_OFFSETS, IDS
from .manifest import FileEntry, Signed

MAGIC = b"HBDOCIDS"
VERSION = 1
_HEAD = len(MAGIC) + 8 + 32
_DROP = bytes(b for b in range(128) if not chr(b).isalnum() and b != 0x0A)
_DROP_LINE = _DROP + b"\n"
"""What squeezing one id drops: a line break too."""


def squeeze(text: str) -> bytes:
    """`text` lowercased (ASCII), UTF-8, without ASCII punctuation, spaces or controls."""
    return text.encode("utf-8", "replace").lower().translate(None, _DROP)


def _refuse(why: str) -> FormatError:
    return FormatError(f"{IDS}: {why}")


class IdTable:
    """Squeezed ids, with their orders when read from ids.bin (see the module
    docstring). `line(n)` is the n-th squeezed id, made from the id when used (from
    its UTF-8 bytes, `encoded(n)`, when the ids are catalog-offsets.bin's)."""

    def __init__(
        self,
        ids: Sequence[str],
        text: bytes,
        orders: tuple[Sequence[int], Sequence[int]] | None = None,
        encoded: Callable[[int], bytes] | None = None,
    ) -> None:
        self.ids, self.text, self._docs = ids, text, len(ids)
        self.by_start: Sequence[int] | None = orders[0] if orders else None
        self.by_end: Sequence[int] | None = orders[1] if orders else None
        self._encoded = encoded

    def line(self, n: int) -> bytes:
        if not 0 <= n < self._docs:
            raise _refuse(f"line {n} of {self._docs} named")
        if self._encoded is None:
            return squeeze(self.ids[n]).replace(b"\n", b"")
        return self._encoded(n).lower().translate(None, _DROP_LINE)


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
    by_start, by_end = orders(table)
    head = _le(_uint32s([VERSION, len(ids)]))
    arrays = _le(_uint32s(by_start)) + _le(_uint32s(by_end))
    return MAGIC + head + catalog_sha256 + arrays + table.text


def parse(data: bytes, ids: IdBytes) -> tuple[IdTable, str]:
    """The table a verified ``ids.bin`` holds over `ids` (catalog-offsets.bin's), and the
    sha256 of the catalog.json it was written for; FormatError, naming the file, for a
    header, version or sizes that do not add up."""
    if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
        raise _refuse("not an ids file (no HBDOCIDS header)")
    version, docs = _read(data, len(MAGIC), 2)
    if version != VERSION:
        raise _refuse(f"version {version}; this reader knows version {VERSION}")
    text_at = _HEAD + 8 * docs
    if text_at + 2 > len(data):
        raise _refuse(f"too short for {docs:,} docs")
    if docs != len(ids):
        raise _refuse(f"lists {docs:,} docs, {CATALOG_OFFSETS} {len(ids):,}")
    text = data[text_at:]
    if text[:1] != b"\n" or text[-1:] != b"\n":
        raise _refuse("its squeezed ids are not framed by line breaks")
    by_start, by_end = _read(data, _HEAD, docs), _read(data, _HEAD + 4 * docs, docs)
    table = IdTable(ids, text, (by_start, by_end), ids.encoded)
    return table, data[_HEAD - 32 : _HEAD].hex()


class BundleIds:
    """A bundle's ids as a `get` of an unknown id needs them: catalog-offsets.bin's,
    searched as bytes (`absent`), and ids.bin's table over them (`table`), each file
    read when first needed and used only when written for the listed catalog.json."""

    def __init__(self, signed: Signed, read: Callable[[str], bytes]) -> None:
        self.signed, self.read = signed, read
        self._ids: IdBytes | None = None
        self._table: IdTable | None = None
        self._tried: set[str] = set()
        """The files read already, whether used or not (written for another catalog)."""

    def _bytes(self) -> IdBytes | None:
        files = self.signed.files
        if CATALOG_OFFSETS not in self._tried and CATALOG_OFFSETS in files and CATALOG in files:
            ids = IdBytes(self.read(CATALOG_OFFSETS))
            if ids.catalog_sha256 == files[CATALOG].sha256 and len(ids) == self.signed.docs:
                self._ids = ids  # else the bundle reads the catalog its own way
            self._tried.add(CATALOG_OFFSETS)
        return self._ids

    def absent(self, doc_id: str) -> bool:
        """True when no doc has id `doc_id`, told from catalog-offsets.bin's bytes."""
        ids = self._bytes()
        return ids is not None and ids.absent(doc_id)

    def table(self) -> IdTable | None:
        """ids.bin's table, when the bundle has one written for its catalog.json."""
        if IDS not in self._tried and IDS in self.signed.files and (ids := self._bytes()):
            table, catalog_sha256 = parse(self.read(IDS), ids)
            if catalog_sha256 == self.signed.files[CATALOG].sha256:
                self._table = table
            self._tried.add(IDS)
        return self._table


def check(files: Mapping[str, FileEntry], read: Callable[[str], bytes], ids: Sequence[str]) -> None:
    """`handbook verify`: an ``ids.bin`` written for the listed catalog.json must be
    exactly the file the build writes for its ids (`ids`, in catalog order)."""
    if IDS not in files:
        return
    data = read(IDS)
    if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
        raise _refuse("not an ids file (no HBDOCIDS header)")
    catalog_sha256 = data[_HEAD - 32 : _HEAD]
    if catalog_sha256.hex() == files[CATALOG].sha256 and data != dumps(ids, catalog_sha256):
        raise _refuse(f"its lines or orders are not those of {CATALOG}'s ids")
