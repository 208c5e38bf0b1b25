"""`ids.bin`: the ids squeezed and ordered for an unknown id's suggestions. The build
writes it beside the catalog; a reader answers an unknown id from it alone (no catalog,
no catalog-offsets.bin), after verifying its hash; a tampered, truncated or inconsistent
file is refused naming it, and `handbook verify` checks it is exactly the build's."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import PUBLIC
from test_format_versions import relist, rewrite

from handbook import Library
from handbook.bundle import id_table
from handbook.bundle.catalog_offsets import PLACES, IdBytes
from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS, IDS
from handbook.bundle.local import open_bundle
from handbook.errors import FormatError, HashMismatchError

IDS_LIST = ["device.acme.ac200", "device.acme.ac300", "guide.a", "guide.a", "guide.é-x"]
SHA = hashlib.sha256(b"catalog").digest()
HEAD = 8 + 8 + 32


def offsets_file(ids: list[str]) -> bytes:
    """A catalog-offsets.bin holding `ids` (its entry ranges, which `IdBytes` does not
    read, all zero)."""
    encoded = [i.encode() for i in ids]
    ends = list(itertools.accumulate(map(len, encoded), initial=0))
    head = struct.pack("<4I", 1, len(ids), 0, 0) + SHA + bytes(8 * len(ids))
    return b"HBCATOFF" + head + struct.pack(f"<{len(ends)}I", *ends) + b"".join(encoded)


def table_of(ids: list[str]) -> id_table.IdTable:
    """The table ids.bin and catalog-offsets.bin written for `ids` give a reader."""
    table, sha = id_table.parse(id_table.dumps(ids, SHA), IdBytes(offsets_file(ids)))
    assert sha == SHA.hex()
    return table


def _integrity(answer: dict[str, Any], name: str = IDS) -> str:
    assert answer.get("found") is not True
    error = answer["error"]
    assert error["code"] == "integrity_error", error
    assert error["message"].startswith(f"{name}: "), error
    return str(error["message"])


def test_the_file_holds_the_lines_and_orders_of_the_ids() -> None:
    rng = random.Random(5)
    ids = sorted(
        f"{rng.choice('abc')}.{rng.randrange(10**6)}-{rng.choice('xé')}" for _ in range(500)
    )
    table, memory = table_of(ids), id_table.of_ids(ids)
    assert list(table.ids) == ids and table.ids[-2:] == ids[-2:] and table.text == memory.text
    assert memory.by_start is None and memory.by_end is None  # searched line by line
    assert table.by_start is not None and table.by_end is not None
    assert (list(table.by_start), list(table.by_end)) == id_table.orders(memory)
    lines = [table.line(n) for n in range(len(ids))]
    assert lines == [memory.line(n) for n in range(len(ids))] == memory.text[1:-1].split(b"\n")
    assert [lines[n] for n in table.by_start] == sorted(lines)
    assert [lines[n][::-1] for n in table.by_end] == sorted(line[::-1] for line in lines)


def test_an_unknown_id_is_told_from_the_offsets_files_bytes() -> None:
    """Exact whatever the ids' order: found places that are not an id's are skipped; an
    id whose bytes occur in too many places is left to `CatalogOffsets`."""
    ids = ["ab", "abab", "b.ab", "ba", "guide.é", "x" * 300]
    found = IdBytes(offsets_file(ids))
    shuffled = IdBytes(offsets_file(ids[::-1]))
    for view in (found, shuffled):
        assert not any(view.absent(i) for i in ids)
        assert all(view.absent(i) for i in ["a", "bab", "aba", "b.a", "guide.", "é", "\ud800", "y"])
        assert not view.absent("")  # never an id; left to the usual lookup
    many = IdBytes(offsets_file([f"x{n:03}" for n in range(PLACES + 1)]))
    assert many.absent("y") and many.absent("x0") is False  # 65 places: not told
    assert many.absent("x000") is False and many.absent("x0000")


def test_an_empty_library_has_an_empty_table() -> None:
    table = table_of([])
    assert len(table.ids) == 0 and table.text == b"\n\n"


def _set(data: bytearray, at: int, value: int) -> bytes:
    data[at : at + 4] = struct.pack("<I", value)
    return bytes(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: b"HBCATOFF" + d[8:], "no HBDOCIDS header"),
        (lambda d: d[:30], "no HBDOCIDS header"),
        (lambda d: _set(d, 8, 2), "version 2; this reader knows version 1"),
        (lambda d: _set(d, 12, 10**6), "too short for 1,000,000 docs"),
        (lambda d: _set(d, 12, 4), "lists 4 docs, catalog-offsets.bin 5"),
        (lambda d: d[:-1], "not framed by line breaks"),
        (lambda d: bytes(d) + b"x", "not framed by line breaks"),
        (lambda d: d[: HEAD + 40] + b"x" + d[HEAD + 40 :], "not framed by line breaks"),
    ],
)
def test_a_file_whose_sizes_do_not_add_up_is_refused_at_parse(change: Any, message: str) -> None:
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    with pytest.raises(FormatError, match=f"^{IDS}: .*{message}"):
        id_table.parse(change(data), IdBytes(offsets_file(IDS_LIST)))


def test_hostile_orders_and_ids_are_refused_when_used() -> None:
    """Sizes that add up, but a line number past the last, an id range reversed, an id
    that is not UTF-8: refused naming the file when the suggestion reaches them."""
    from handbook.handlers.suggestions import IdIndex

    ids = IdBytes(offsets_file(IDS_LIST))
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    hostile, _ = id_table.parse(_set(data, HEAD + 4, 99), ids)
    with pytest.raises(FormatError, match=f"^{IDS}: line 99 of 5"):
        IdIndex(hostile).suggest("device.acme.ac2000")
    offsets = bytearray(offsets_file(IDS_LIST))
    at = 8 + 16 + 32 + 8 * len(IDS_LIST)  # the id offsets
    reversed_range = IdBytes(_set(offsets, at + 4, 40))
    with pytest.raises(FormatError, match=f"^{CATALOG_OFFSETS}: the range of id 1 is out"):
        reversed_range[1]
    offsets = bytearray(offsets_file(IDS_LIST))
    offsets[-1] = 0xFF  # the last byte of the last id: "guide.é-x"
    with pytest.raises(FormatError, match=f"^{CATALOG_OFFSETS}: id 4 is not UTF-8"):
        IdBytes(bytes(offsets))[-1]


# -- in a bundle ------------------------------------------------------------------------


def test_an_unknown_id_is_answered_from_ids_bin_alone(plant_floor_bundle: Path) -> None:
    """Neither the catalog nor its ids cut (`CatalogOffsets`): catalog-offsets.bin's bytes
    are searched, ids.bin's orders bisected. A known id reads no ids.bin."""
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    assert IDS in lib.bundle.manifest.signed.files
    answer = lib.get("device.acme.ac-2000")
    assert answer["found"] is False and answer["suggestions"][0] == "device.acme.ac200"
    assert IDS in lib.bundle._core and CATALOG_OFFSETS in lib.bundle._core
    assert lib.bundle._offsets_read is None and CATALOG not in lib.bundle._core
    known = Library.open(plant_floor_bundle, [PUBLIC])
    assert known.get("device.acme.ac200")["found"] is True
    assert IDS not in known.bundle._core


def test_a_tampered_ids_file_is_refused_naming_it(plant_floor_bundle: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(plant_floor_bundle, folder)
    data = bytearray((folder / IDS).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / IDS).write_bytes(bytes(data))
    lib = Library.open(folder, [PUBLIC])
    assert "observed sha256" in _integrity(lib.get("device.acme.ac-2000"))
    assert lib.status()["integrity_error"].startswith(f"{IDS}: ")
    assert lib.get("device.acme.ac200")["found"] is True  # a known id does not need it
    with pytest.raises(HashMismatchError, match=IDS):
        open_bundle(folder, [PUBLIC])


def _resigned(built: Path, tmp_path: Path, change: Any) -> Library:
    """A copy whose ids.bin is changed by `change(bytearray)` and listed and signed
    again: the publisher's own inconsistent file, not a tampered one."""

    def edit(folder: Path, signed: dict[str, Any]) -> None:
        data = bytearray((folder / IDS).read_bytes())
        (folder / IDS).write_bytes(bytes(change(data)))
        relist(folder, signed, IDS)

    return Library.open(rewrite(built, tmp_path, edit), [PUBLIC])


def test_lines_that_are_not_the_catalogs_are_refused_by_verify(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """A squeezed line changed (sizes unchanged): a lazy reader suggests from the file as
    it is, without error; `handbook verify` refuses it."""

    def change(data: bytearray) -> bytearray:
        at = data.index(b"\ndeviceacmeac200\n")
        data[at + 1 : at + 7] = b"zzzzzz"
        return data

    lib = _resigned(plant_floor_bundle, tmp_path, change)
    assert lib.get("device.acme.ac-2000")["found"] is False
    assert lib.get("device.acme.ac200")["found"] is True
    with pytest.raises(FormatError, match=f"^{IDS}: its lines or orders are not those"):
        open_bundle(lib.bundle.path, [PUBLIC])


def test_an_order_past_the_last_line_is_refused_on_use(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    def change(data: bytearray) -> bytes:
        return _set(data, HEAD, 10**6)  # the first line by start

    lib = _resigned(plant_floor_bundle, tmp_path, change)
    assert "line 1000000" in _integrity(lib.get("device.acme.ac-2000"))
    with pytest.raises(FormatError, match=f"^{IDS}: "):
        open_bundle(lib.bundle.path, [PUBLIC])


def test_a_file_for_another_catalog_or_none_falls_back_to_the_catalogs_ids(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """A tool that rewrites catalog.json and signs again, leaving ids.bin as it was; a
    bundle built before ids.bin: suggestions come from the catalog's ids, as before."""
    expected = Library.open(plant_floor_bundle, [PUBLIC]).get("device.acme.ac-2000")

    def retitle(folder: Path, signed: dict[str, Any]) -> None:
        catalog = json.loads((folder / CATALOG).read_bytes())
        catalog["docs"][0]["title"] = "Retitled"
        (folder / CATALOG).write_bytes(json.dumps(catalog, indent=1).encode())
        relist(folder, signed, CATALOG)

    def drop(folder: Path, signed: dict[str, Any]) -> None:
        (folder / IDS).unlink()
        del signed["files"][IDS]

    for name, change in (("other", retitle), ("none", drop)):
        folder = rewrite(plant_floor_bundle, tmp_path / name, change)
        lib = Library.open(folder, [PUBLIC])
        assert lib.get("device.acme.ac-2000") == expected
        assert lib.snapshot.id_files.table() is None
        open_bundle(folder, [PUBLIC])  # a full verification accepts both
