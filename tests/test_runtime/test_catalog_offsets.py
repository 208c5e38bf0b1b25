"""`catalog-offsets.bin`: `get` parses the one catalog entry it needs, after both files
were verified against the manifest, and answers exactly as from the whole catalog; a
tampered or inconsistent offsets file is refused with an error naming it."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT
from test_format_versions import relist, rewrite

from handbook import Library
from handbook.bundle.catalog import Catalog
from handbook.bundle.catalog_offsets import CatalogOffsets, write
from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS
from handbook.bundle.local import open_bundle
from handbook.errors import FormatError, HashMismatchError
from handbook_build import load_config
from handbook_build.pipeline import build

LANGUAGES = ROOT / "examples" / "fleet-procedures" / "mkdocs.yml"


def _ids(folder: Path) -> list[str]:
    return [d["id"] for d in json.loads((folder / CATALOG).read_bytes())["docs"]]


def _whole(folder: Path) -> Library:
    """A library whose catalog is parsed whole before any get."""
    lib = Library.open(folder, [PUBLIC])
    lib.bundle.catalog  # noqa: B018
    return lib


def test_the_offsets_frame_every_entry_of_the_catalog(plant_floor_bundle: Path) -> None:
    data = (plant_floor_bundle / CATALOG).read_bytes()
    offsets = CatalogOffsets((plant_floor_bundle / CATALOG_OFFSETS).read_bytes(), len(data))
    whole = json.loads(data)
    assert offsets.ids == [d["id"] for d in whole["docs"]]
    for n, doc in enumerate(whole["docs"]):
        start, end = offsets.span(n)
        assert json.loads(data[start:end]) == doc
    assert json.loads(data[slice(*offsets.library)]) == whole["library"]
    # the writer's catalog.json is the one json.dumps of the whole would give
    catalog = Catalog.from_dict(json.loads(data))
    assert write(catalog)[0] == data
    assert (
        json.dumps(whole, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
        == data
    )


def test_get_reads_one_entry_and_answers_as_from_the_whole_catalog(
    plant_floor_bundle: Path,
) -> None:
    lazy, whole = Library.open(plant_floor_bundle, [PUBLIC]), _whole(plant_floor_bundle)
    for doc_id in _ids(plant_floor_bundle):
        assert lazy.get(doc_id) == whole.get(doc_id)
        assert lazy.get(doc_id, section="overview") == whole.get(doc_id, section="overview")
    assert lazy.bundle._catalog is None  # never parsed whole
    assert lazy.get("plant-floor:device.acme.ac200")["found"] is True


def test_search_renders_hits_from_single_entries(plant_floor_bundle: Path) -> None:
    """A search hit's pedigree needs its doc's entry: the first search parses those
    entries alone, and answers as with the whole catalog."""
    lazy, whole = Library.open(plant_floor_bundle, [PUBLIC]), _whole(plant_floor_bundle)
    for query in ("modbus", "register map", "compressor pressure"):
        assert lazy.search(query) == whole.search(query)
    assert lazy.bundle._catalog is None


def test_reviews_reach_hits_read_from_single_entries(tmp_path: Path) -> None:
    """A library with reviewers: every hit and get carries the pedigree it carries when
    the catalog is parsed whole."""
    out = tmp_path / "bundle"
    build(load_config(ROOT / "examples" / "packaging-line" / "mkdocs.yml"), out, KEY)
    lazy, whole = Library.open(out, [PUBLIC]), _whole(out)
    for doc_id in _ids(out):
        assert lazy.get(doc_id) == whole.get(doc_id)
    title = json.loads((out / CATALOG).read_bytes())["docs"][0]["title"]
    assert lazy.search(title)["hits"] and lazy.search(title) == whole.search(title)
    assert lazy.bundle._catalog is None


def test_an_unknown_id_still_gets_suggestions(plant_floor_bundle: Path) -> None:
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    answer = lib.get("device.acme.ac-200")
    assert answer["found"] is False and "device.acme.ac200" in answer["suggestions"]
    assert answer == _whole(plant_floor_bundle).get("device.acme.ac-200")


@pytest.fixture(scope="module")
def languages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lang") / "bundle"
    build(load_config(LANGUAGES), out, KEY)
    return out


def test_languages_are_chosen_as_from_the_whole_catalog(languages: Path) -> None:
    lazy, whole = Library.open(languages, [PUBLIC]), _whole(languages)
    for doc_id in set(_ids(languages)):
        for lang in (None, "de", "en", "fr"):
            assert lazy.get(doc_id, lang=lang) == whole.get(doc_id, lang=lang)
    assert lazy.get("procedure.damage-report", lang="de")["lang"] == "de"
    assert lazy.bundle._catalog is None


def _integrity(answer: dict[str, Any], name: str) -> str:
    assert answer.get("found") is not True
    error = answer["error"]
    assert error["code"] == "integrity_error", error
    assert error["message"].startswith(f"{name}: "), error
    return str(error["message"])


def test_a_tampered_offsets_file_is_refused_naming_it(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(plant_floor_bundle, folder)
    data = bytearray((folder / CATALOG_OFFSETS).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / CATALOG_OFFSETS).write_bytes(bytes(data))
    lib = Library.open(folder, [PUBLIC])
    assert "observed sha256" in _integrity(lib.get("device.acme.ac200"), CATALOG_OFFSETS)
    assert lib.status()["integrity_error"].startswith(f"{CATALOG_OFFSETS}: ")
    with pytest.raises(HashMismatchError, match=CATALOG_OFFSETS):  # so does a full check
        open_bundle(folder, [PUBLIC])


def test_a_tampered_catalog_is_refused_on_the_first_get(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(plant_floor_bundle, folder)
    data = (folder / CATALOG).read_bytes()
    (folder / CATALOG).write_bytes(data.replace(b"Register map", b"Register mop", 1))
    lib = Library.open(folder, [PUBLIC])
    assert "observed sha256" in _integrity(lib.get("device.acme.ac200"), CATALOG)


def _resigned_offsets(built: Path, tmp_path: Path, change: Any) -> Library:
    """A copy whose offsets file is changed by `change(bytearray)` and listed and signed
    again: the publisher's own inconsistent bundle, not a tampered one."""

    def edit(folder: Path, signed: dict[str, Any]) -> None:
        data = bytearray((folder / CATALOG_OFFSETS).read_bytes())
        change(data)
        (folder / CATALOG_OFFSETS).write_bytes(bytes(data))
        relist(folder, signed, CATALOG_OFFSETS)

    return Library.open(rewrite(built, tmp_path, edit), [PUBLIC])


def _refused_by_verify(lib: Library) -> None:
    """`handbook verify` (every file hashed, the catalog parsed) refuses it too."""
    with pytest.raises(FormatError, match=f"^{CATALOG_OFFSETS}: "):
        open_bundle(lib.bundle.path, [PUBLIC])


HEAD = 8 + 16 + 32  # magic, four uint32, the catalog's sha256


def _set(data: bytearray, at: int, value: int) -> None:
    data[at : at + 4] = struct.pack("<I", value)


def test_offsets_that_frame_another_doc_are_refused(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """Ranges in order and inside the catalog, but each id's frames the next doc's entry."""

    def shift(d: bytearray) -> None:
        docs = struct.unpack_from("<I", d, 12)[0]
        starts = struct.unpack_from(f"<{docs}I", d, HEAD)
        ends = struct.unpack_from(f"<{docs}I", d, HEAD + 4 * docs)
        last = (ends[-1] + 1, ends[-1] + 2)  # inside '],"library":', before the library
        for n, (start, end) in enumerate([*zip(starts[1:], ends[1:], strict=True), last]):
            _set(d, HEAD + 4 * n, start)
            _set(d, HEAD + 4 * (docs + n), end)

    lib = _resigned_offsets(plant_floor_bundle, tmp_path, shift)
    first, second = _ids(plant_floor_bundle)[:2]
    assert f"is doc {second!r}, the offsets name {first!r}" in _integrity(
        lib.get(first), CATALOG_OFFSETS
    )
    _refused_by_verify(lib)


def test_offsets_outside_the_catalog_are_refused(plant_floor_bundle: Path, tmp_path: Path) -> None:
    lib = _resigned_offsets(
        plant_floor_bundle, tmp_path, lambda d: _set(d, 20, 10**9)
    )  # the library's end
    assert "outside catalog.json" in _integrity(lib.get("device.acme.ac200"), CATALOG_OFFSETS)
    _refused_by_verify(lib)


def test_an_offsets_file_of_another_version_is_refused(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    lib = _resigned_offsets(plant_floor_bundle, tmp_path, lambda d: _set(d, 8, 2))
    assert "version 2; this reader knows version 1" in _integrity(
        lib.get("device.acme.ac200"), CATALOG_OFFSETS
    )
    _refused_by_verify(lib)


def test_unsorted_ids_are_refused(plant_floor_bundle: Path, tmp_path: Path) -> None:
    def unsort(d: bytearray) -> None:  # the first id now starts with "~": after all others
        docs = struct.unpack_from("<I", d, 12)[0]
        d[HEAD + 12 * docs + 4] = ord("~")

    lib = _resigned_offsets(plant_floor_bundle, tmp_path, unsort)
    # the first id is gone from the file: an unknown id, told from its bytes (issue 29);
    # any id it still holds is refused, as the order is checked before an entry is read
    message = _integrity(lib.get(_ids(plant_floor_bundle)[1]), CATALOG_OFFSETS)
    assert "not sorted" in message or "the offsets name" in message
    _refused_by_verify(lib)


def test_offsets_for_another_catalog_fall_back_to_the_whole_catalog(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """A tool that rewrites catalog.json and signs it again, leaving the offsets file as
    it was: the offsets name another catalog's sha256, so the whole catalog is parsed."""

    def change(folder: Path, signed: dict[str, Any]) -> None:
        catalog = json.loads((folder / CATALOG).read_bytes())
        catalog["docs"][0]["title"] = "Retitled"
        (folder / CATALOG).write_bytes(json.dumps(catalog, indent=1).encode())
        relist(folder, signed, CATALOG)

    lib = Library.open(rewrite(plant_floor_bundle, tmp_path, change), [PUBLIC])
    first = _ids(plant_floor_bundle)[0]
    assert lib.get(first)["title"] == "Retitled"
    assert lib.bundle._catalog is not None
    open_bundle(lib.bundle.path, [PUBLIC])  # a full verification accepts it too


def test_a_bundle_without_offsets_reads_the_whole_catalog(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    """Bundles built before the file existed."""

    def drop(folder: Path, signed: dict[str, Any]) -> None:
        (folder / CATALOG_OFFSETS).unlink()
        del signed["files"][CATALOG_OFFSETS]

    lib = Library.open(rewrite(plant_floor_bundle, tmp_path, drop), [PUBLIC])
    assert lib.get("device.acme.ac200")["found"] is True
    assert lib.bundle._catalog is not None


def test_opening_lists_no_content_folder_and_get_parses_one_entry(
    plant_floor_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """handbook/v2: opening costs the same at any number of docs. The manifest lists no
    content file, a lazy open lists the root folder but never content/, and a `get`
    checks its content file against the one entry it parsed (the whole catalog is never
    parsed); `handbook verify`'s open lists content/ and parses the catalog whole."""
    from handbook.bundle import local, tree

    listed: list[str] = []
    parsed: list[int] = []
    present, parse = tree._present, local._parse_catalog
    monkeypatch.setattr(
        tree, "_present", lambda t, folder: listed.append(folder) or present(t, folder)
    )
    monkeypatch.setattr(local, "_parse_catalog", lambda held: parsed.append(1) or parse(held))
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    assert not any(
        name.startswith(("content/", "resources/")) for name in lib.bundle.manifest.signed.files
    )
    answer = lib.get("device.acme.ac200")
    assert answer["found"] is True and answer["content"]
    assert listed == [""] and parsed == []
    open_bundle(plant_floor_bundle, [PUBLIC], hash_all=True)
    assert "content" in listed and parsed == [1]
