"""`reviews-offsets.bin`: a pedigree parses the records of its doc alone, after both files
were verified against the manifest, and answers exactly as from the whole reviews.json;
an inconsistent offsets file is refused with an error naming it, and offsets written for
another reviews.json fall back to parsing it whole."""

from __future__ import annotations

import json
import struct
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT
from test_format_versions import relist, rewrite

from handbook import Library
from handbook.bundle import canonical
from handbook.bundle.layout import CATALOG, REVIEW_OFFSETS, REVIEWS
from handbook.bundle.local import open_bundle
from handbook.bundle.review_offsets import ReviewOffsets, write
from handbook.errors import FormatError, HashMismatchError
from handbook.pedigree import indexed
from handbook.pedigree.derived import Ledger
from handbook.pedigree.indexed import IndexedLedger
from handbook_build import load_config
from handbook_build.pipeline import build

PACKAGING = ROOT / "examples" / "packaging-line" / "mkdocs.yml"
HEX = "ab" * 32


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reviewed") / "bundle"
    build(load_config(PACKAGING), out, KEY)
    return out


def _ids(folder: Path) -> list[str]:
    return [d["id"] for d in json.loads((folder / CATALOG).read_bytes())["docs"]]


def _dropped(built: Path, tmp_path: Path) -> Path:
    """The same bundle without the offsets file, as bundles built before it."""

    def drop(folder: Path, signed: dict[str, Any]) -> None:
        (folder / REVIEW_OFFSETS).unlink()
        del signed["files"][REVIEW_OFFSETS]

    return rewrite(built, tmp_path / "dropped", drop)


# -- the format ---------------------------------------------------------------------------------


def _review(doc: str, n: int, lang: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"doc": doc, "basis": f"b{n}", "issued_at": n, "reviewer": HEX}
    if lang is not None:
        payload["lang"] = lang
    return {"type": "review", "payload": payload, "signature": "s"}


def _invalidation(about: str, n: int) -> dict[str, Any]:
    return {"type": "invalidation", "payload": {"about": about, "changed_at": n}, "signature": ""}


DATA = {
    "policy": {"required_approvals": 1, "protected_kinds": ["device"]},
    "reviewers": {HEX: "älice"},
    "records": [
        _review("b.doc", 1),
        _invalidation("urn:x:1", 2),
        _review("a.doc", 3, lang="de"),
        _review("a.doc", 4),
        _review("b.doc", 5),
        _review("a.doc", 6, lang="de"),
    ],
}


def test_the_writer_keeps_reviews_json_canonical_and_frames_every_record() -> None:
    whole, data = write(DATA)
    assert whole == canonical.dumps(DATA) + b"\n"  # the bytes reviews.json always had
    offsets = ReviewOffsets(data, len(whole))
    assert offsets.head(whole) == (DATA["policy"], DATA["reviewers"])
    assert offsets.keys == (["a.doc", "a.doc\0de", "b.doc"], ["urn:x:1"])
    records: list[Any] = DATA["records"]  # type: ignore[assignment]
    assert offsets.reviews_of(whole, "b.doc") == [records[0], records[4]]  # in file order
    assert offsets.reviews_of(whole, "a.doc\0de") == [records[2], records[5]]
    assert offsets.reviews_of(whole, "a.doc") == [records[3]]
    assert offsets.invalidations_of(whole, "urn:x:1") == [records[1]]
    assert offsets.reviews_of(whole, "c.doc") == [] and offsets.records == 6


def test_no_records_is_an_empty_index() -> None:
    whole, data = write({"policy": {}, "reviewers": {}, "records": []})
    offsets = ReviewOffsets(data, len(whole))
    assert offsets.keys == ([], []) and offsets.head(whole) == ({}, {})


# -- the runtime reads one doc's records ----------------------------------------------------------


def test_pedigrees_read_per_doc_equal_those_of_the_whole_file(
    reviewed: Path, tmp_path: Path
) -> None:
    lazy, whole = (
        Library.open(reviewed, [PUBLIC]),
        Library.open(_dropped(reviewed, tmp_path), [PUBLIC]),
    )
    for doc_id in _ids(reviewed):
        assert lazy.get(doc_id) == whole.get(doc_id)
    assert lazy.list(suspect=True) == whole.list(suspect=True)
    assert lazy.list(reviewed=True) == whole.list(reviewed=True)
    assert isinstance(lazy.snapshot.ledger, IndexedLedger)
    assert type(whole.snapshot.ledger) is Ledger


def test_a_pedigree_parses_only_its_docs_records(
    reviewed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[dict[str, Any]] = []
    original = indexed.from_dict

    def counting(data: Any) -> Any:
        parsed.append(data)
        return original(data)

    monkeypatch.setattr(indexed, "from_dict", counting)
    lib = Library.open(reviewed, [PUBLIC])
    assert lib.get("procedure.reject-bin")["pedigree"]["reviews"] == 2
    assert {r["payload"].get("doc") for r in parsed} == {"procedure.reject-bin"}
    assert len(parsed) == 2
    lib.get("procedure.reject-bin")
    assert len(parsed) == 2  # kept


# -- hostile and inconsistent files --------------------------------------------------------------


def _layout(data: bytes) -> dict[str, Any]:
    """The file as lists, to change one thing and write it again with `_encode`."""
    head = list(struct.unpack_from("<5I", data, 8))
    at, tables = 60, []
    for _ in range(2):
        keys, records = struct.unpack_from("<2I", data, at)
        at += 8
        first = list(struct.unpack_from(f"<{keys + 1}I", data, at))
        at += 4 * (keys + 1)
        starts = list(struct.unpack_from(f"<{records}I", data, at))
        ends = list(struct.unpack_from(f"<{records}I", data, at + 4 * records))
        at += 8 * records
        key_at = list(struct.unpack_from(f"<{keys + 1}I", data, at))
        at += 4 * (keys + 1)
        names = [data[at + a : at + b] for a, b in pairwise(key_at)]
        at += key_at[-1]
        tables.append({"first": first, "starts": starts, "ends": ends, "keys": names})
    return {"head": head, "sha": data[28:60], "tables": tables}


def _encode(layout: dict[str, Any]) -> bytes:
    out = [b"HBREVOFF", struct.pack("<5I", *layout["head"]), layout["sha"]]
    for t in layout["tables"]:
        key_at = [0]
        for key in t["keys"]:
            key_at.append(key_at[-1] + len(key))
        n = len(t["starts"])
        out.append(struct.pack(f"<2I{len(t['first'])}I", len(t["keys"]), n, *t["first"]))
        out.append(struct.pack(f"<{2 * n}I", *t["starts"], *t["ends"]))
        out.append(struct.pack(f"<{len(key_at)}I", *key_at) + b"".join(t["keys"]))
    return b"".join(out)


def _resigned(built: Path, tmp_path: Path, change: Any) -> Library:
    """A copy whose offsets file is changed by `change(layout)` and listed and signed
    again: the publisher's own inconsistent bundle, not a tampered one."""

    def edit(folder: Path, signed: dict[str, Any]) -> None:
        layout = _layout((folder / REVIEW_OFFSETS).read_bytes())
        change(layout)
        (folder / REVIEW_OFFSETS).write_bytes(_encode(layout))
        relist(folder, signed, REVIEW_OFFSETS)

    return Library.open(rewrite(built, tmp_path, edit), [PUBLIC])


def _refused(lib: Library, doc_id: str, message: str) -> None:
    """The first get that needs the doc's pedigree refuses, naming the file; so does
    `handbook verify` (every file hashed, every record placed)."""
    error = lib.get(doc_id)["error"]
    assert error["code"] == "integrity_error", error
    assert error["message"].startswith(f"{REVIEW_OFFSETS}: ") and message in error["message"]
    with pytest.raises(FormatError, match=f"^{REVIEW_OFFSETS}: "):
        open_bundle(lib.bundle.path, [PUBLIC])


def test_the_writer_round_trips_through_the_test_layout(reviewed: Path) -> None:
    data = (reviewed / REVIEW_OFFSETS).read_bytes()
    assert _encode(_layout(data)) == data  # so the cases below change only what they say


def test_ranges_out_of_order_are_refused(reviewed: Path, tmp_path: Path) -> None:
    def reverse(layout: dict[str, Any]) -> None:  # reject-bin has two reviews
        t = layout["tables"][0]
        n = t["keys"].index(b"procedure.reject-bin")
        a, b = t["first"][n], t["first"][n + 1]
        t["starts"][a:b], t["ends"][a:b] = t["starts"][a:b][::-1], t["ends"][a:b][::-1]

    lib = _resigned(reviewed, tmp_path, reverse)
    _refused(lib, "procedure.reject-bin", "out of order or outside reviews.json")
    assert lib.get("procedure.changeover")["found"] is True  # other docs still answer


def test_ranges_outside_reviews_json_are_refused(reviewed: Path, tmp_path: Path) -> None:
    def outside(layout: dict[str, Any]) -> None:
        layout["tables"][0]["ends"][0] = 10**9

    lib = _resigned(reviewed, tmp_path, outside)
    first = _layout((reviewed / REVIEW_OFFSETS).read_bytes())["tables"][0]["keys"][0].decode()
    _refused(lib, first, "out of order or outside reviews.json")


def test_a_range_framing_another_docs_review_is_refused(reviewed: Path, tmp_path: Path) -> None:
    def swap(layout: dict[str, Any]) -> None:  # the first doc's review and the next doc's
        t = layout["tables"][0]
        assert t["first"][:2] == [0, 1]
        for name in ("starts", "ends"):
            t[name][0], t[name][1] = t[name][1], t[name][0]

    lib = _resigned(reviewed, tmp_path, swap)
    _refused(lib, "device.kestrel.cw5", "for a review of 'device.kestrel.cw5'")


def test_a_range_inside_a_record_is_refused(reviewed: Path, tmp_path: Path) -> None:
    """The payload object inside a record: valid JSON, but not after "[" or ","."""
    raw = (reviewed / REVIEWS).read_bytes()

    def inside(layout: dict[str, Any]) -> None:
        t = layout["tables"][0]
        start = raw.index(b'"payload":', t["starts"][0]) + len(b'"payload":')
        t["starts"][0], t["ends"][0] = start, raw.index(b"}", start) + 1

    lib = _resigned(reviewed, tmp_path, inside)
    _refused(lib, "device.kestrel.cw5", "does not frame it")


def test_unsorted_keys_are_refused(reviewed: Path, tmp_path: Path) -> None:
    def unsort(layout: dict[str, Any]) -> None:
        keys = layout["tables"][0]["keys"]
        keys[0] = b"~" + keys[0][1:]  # same length, now after every other key

    _refused(_resigned(reviewed, tmp_path, unsort), "device.kestrel.cw5", "keys are not sorted")


def test_a_key_that_is_not_utf8_is_refused(reviewed: Path, tmp_path: Path) -> None:
    def invalid(layout: dict[str, Any]) -> None:
        keys = layout["tables"][0]["keys"]
        keys[-1] = keys[-1][:-1] + b"\xff"

    _refused(_resigned(reviewed, tmp_path, invalid), "device.kestrel.cw5", "is not UTF-8")


def test_another_version_is_refused(reviewed: Path, tmp_path: Path) -> None:
    def bump(layout: dict[str, Any]) -> None:
        layout["head"][0] = 2

    lib = _resigned(reviewed, tmp_path, bump)
    _refused(lib, "device.kestrel.cw5", "version 2; this reader knows version 1")


def test_a_policy_range_that_frames_something_else_is_refused(
    reviewed: Path, tmp_path: Path
) -> None:
    def shift(layout: dict[str, Any]) -> None:
        layout["head"][1] += 1

    _refused(_resigned(reviewed, tmp_path, shift), "device.kestrel.cw5", "the policy")


def test_verify_refuses_offsets_that_leave_a_record_out(reviewed: Path, tmp_path: Path) -> None:
    """The artifact's invalidation left out: per doc nothing looks wrong (the doc is only
    not suspect), which is why `handbook verify` counts every record."""

    def omit(layout: dict[str, Any]) -> None:
        layout["tables"][1] = {"first": [0], "starts": [], "ends": [], "keys": []}

    lib = _resigned(reviewed, tmp_path, omit)
    with pytest.raises(FormatError, match=f"^{REVIEW_OFFSETS}: places 8 of the 9 records"):
        open_bundle(lib.bundle.path, [PUBLIC])


def test_a_tampered_offsets_file_is_refused_naming_it(reviewed: Path, tmp_path: Path) -> None:
    folder = rewrite(reviewed, tmp_path, lambda folder, signed: None)
    data = bytearray((folder / REVIEW_OFFSETS).read_bytes())
    data[-3] ^= 0x01
    (folder / REVIEW_OFFSETS).write_bytes(bytes(data))
    lib = Library.open(folder, [PUBLIC])
    error = lib.get("device.kestrel.cw5")["error"]
    assert error["code"] == "integrity_error" and error["message"].startswith(REVIEW_OFFSETS)
    with pytest.raises(HashMismatchError, match=REVIEW_OFFSETS):
        open_bundle(folder, [PUBLIC])


def test_a_tampered_reviews_json_is_refused_before_any_record_is_read(
    reviewed: Path, tmp_path: Path
) -> None:
    folder = rewrite(reviewed, tmp_path, lambda folder, signed: None)
    data = (folder / REVIEWS).read_bytes()
    (folder / REVIEWS).write_bytes(data.replace(b'"verdict":"approve"', b'"verdict":"reject"', 1))
    error = Library.open(folder, [PUBLIC]).get("device.kestrel.cw5")["error"]
    assert error["code"] == "integrity_error" and error["message"].startswith(f"{REVIEWS}: ")


def test_offsets_for_another_reviews_json_fall_back_to_the_whole_file(
    reviewed: Path, tmp_path: Path
) -> None:
    """A tool that rewrites reviews.json and signs it again, leaving the offsets as they
    were: they name another file's sha256, so reviews.json is parsed whole."""

    def change(folder: Path, signed: dict[str, Any]) -> None:
        whole = json.loads((folder / REVIEWS).read_bytes())
        (folder / REVIEWS).write_bytes(json.dumps(whole, indent=1).encode())
        relist(folder, signed, REVIEWS)

    lib = Library.open(rewrite(reviewed, tmp_path, change), [PUBLIC])
    plain = Library.open(reviewed, [PUBLIC])
    for doc_id in _ids(reviewed):
        assert lib.get(doc_id) == plain.get(doc_id)
    assert type(lib.snapshot.ledger) is Ledger
    open_bundle(lib.bundle.path, [PUBLIC])  # a full verification accepts it too
