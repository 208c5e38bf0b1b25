"""`ids.bin`: the ids squeezed and ordered for an unknown id's suggestions. The build
writes it beside the catalog; a reader answers an unknown id from it alone (no catalog,
no catalog-offsets.bin), after verifying its hash; a tampered, truncated or inconsistent
file is refused naming it, and `handbook verify` checks it is exactly the build's."""

from __future__ import annotations

import hashlib
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
from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS, IDS
from handbook.bundle.local import open_bundle
from handbook.errors import FormatError, HashMismatchError

IDS_LIST = ["device.acme.ac200", "device.acme.ac300", "guide.a", "guide.a", "guide.é-x"]
SHA = hashlib.sha256(b"catalog").digest()
HEAD = 8 + 12 + 32


def _integrity(answer: dict[str, Any]) -> str:
    assert answer.get("found") is not True
    error = answer["error"]
    assert error["code"] == "integrity_error", error
    assert error["message"].startswith(f"{IDS}: "), error
    return str(error["message"])


def test_the_file_holds_the_table_made_in_memory() -> None:
    rng = random.Random(5)
    ids = sorted(
        f"{rng.choice('abc')}.{rng.randrange(10**6)}-{rng.choice('xé')}" for _ in range(500)
    )
    table, sha = id_table.parse(id_table.dumps(ids, SHA))
    memory = id_table.of_ids(ids)
    assert sha == SHA.hex() and list(table.ids) == ids and table.ids[-2:] == ids[-2:]
    assert table.text == memory.text
    assert memory.by_start is None and memory.by_end is None  # searched line by line
    assert table.by_start is not None and table.by_end is not None
    assert (list(table.by_start), list(table.by_end)) == id_table.orders(memory)
    lines = [table.line(n) for n in range(len(ids))]
    assert [lines[n] for n in table.by_start] == sorted(lines)
    assert [lines[n][::-1] for n in table.by_end] == sorted(line[::-1] for line in lines)
    assert all(table.holds(i) for i in ids)
    assert not any(table.holds(i + "x") or table.holds(i.upper()) for i in ids[:50])


def test_an_empty_library_has_an_empty_table() -> None:
    table, _ = id_table.parse(id_table.dumps([], SHA))
    assert len(table.ids) == 0 and not table.holds("a")


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
        (lambda d: d[:-1], "do not fill the end"),
        (lambda d: bytes(d) + b"x", "do not fill the end"),
        (lambda d: _set(d, 16, struct.unpack_from("<I", d, 16)[0] - 1), "do not fill the end"),
        (lambda d: _set(d, HEAD, 1), "do not fill the end"),
    ],
)
def test_a_file_whose_sizes_do_not_add_up_is_refused_at_parse(change: Any, message: str) -> None:
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    with pytest.raises(FormatError, match=f"^{IDS}: .*{message}"):
        id_table.parse(change(data))


def test_text_not_framed_by_line_breaks_is_refused() -> None:
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    text_at = HEAD + 4 * (3 * len(IDS_LIST) + 1)
    data[text_at] = ord("x")
    with pytest.raises(FormatError, match=f"^{IDS}: its squeezed ids are not framed"):
        id_table.parse(bytes(data))


def test_hostile_orders_and_ids_are_refused_when_used() -> None:
    """Sizes that add up, but a line number past the last, an id range reversed, an id
    that is not UTF-8: refused naming the file when the suggestion reaches them."""
    from handbook.handlers.suggestions import IdIndex

    docs = len(IDS_LIST)
    by_start = HEAD + 4 * (docs + 1)
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    hostile = id_table.parse(_set(data, by_start + 4, 99))[0]
    with pytest.raises(FormatError, match=f"^{IDS}: line 99 of 5"):
        IdIndex(hostile).suggest("device.acme.ac2000")
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    reversed_range = id_table.parse(_set(data, HEAD + 4, 40))[0]
    with pytest.raises(FormatError, match=f"^{IDS}: the range of id 1 is out of order"):
        reversed_range.holds("device.acme.ac200")
    data = bytearray(id_table.dumps(IDS_LIST, SHA))
    data[-1] = 0xFF  # the last byte of the last id: "guide.é-x"
    with pytest.raises(FormatError, match=f"^{IDS}: id 4 is not UTF-8"):
        id_table.parse(bytes(data))[0].ids[4]


# -- in a bundle ------------------------------------------------------------------------


def test_an_unknown_id_is_answered_from_ids_bin_alone(plant_floor_bundle: Path) -> None:
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    assert IDS in lib.bundle.manifest.signed.files
    answer = lib.get("device.acme.ac-2000")
    assert answer["found"] is False and answer["suggestions"][0] == "device.acme.ac200"
    assert IDS in lib.bundle._core
    assert CATALOG_OFFSETS not in lib.bundle._core and CATALOG not in lib.bundle._core
    assert lib.get("device.acme.ac200")["found"] is True  # a known id reads on as before


def test_a_tampered_ids_file_is_refused_naming_it(plant_floor_bundle: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(plant_floor_bundle, folder)
    data = bytearray((folder / IDS).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / IDS).write_bytes(bytes(data))
    lib = Library.open(folder, [PUBLIC])
    assert "observed sha256" in _integrity(lib.get("device.acme.ac-2000"))
    assert "observed sha256" in _integrity(lib.get("device.acme.ac200"))  # never parsed
    assert lib.status()["integrity_error"].startswith(f"{IDS}: ")
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
        docs = struct.unpack_from("<I", data, 12)[0]
        return _set(data, HEAD + 4 * (docs + 1), 10**6)  # the first line by start

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
        assert lib.snapshot.id_file is None
        open_bundle(folder, [PUBLIC])  # a full verification accepts both
