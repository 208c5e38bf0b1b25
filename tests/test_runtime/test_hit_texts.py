"""Search hits rendered from the excerpt texts kept in ``search.bin`` (``excerpt_text``,
`handbook.search.hit_texts`): the same answers, byte for byte, as when every excerpt was
cut from its content file, without reading one; files without the texts still search;
hostile texts and offsets are refused with the search file named."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, MakeLibrary

from handbook import FormatError, Library
from handbook.bundle.local import Bundle
from handbook.search import hit_texts
from handbook.search.index import SearchIndex
from handbook.search.query import parse
from handbook_build import load_config
from handbook_build.pipeline import build

QUERIES = [
    "pump",
    "calibrate the sensor",
    "lockout tagout",
    "title:pump",
    "valve~1",
    "cal*",
    "+pressure -alarm",
    "safety procedure",
    "modbus register map",
    "the",
]


def _queries(lib: Library) -> list[str]:
    """The fixed queries, and one from every doc's title."""
    titles = [hit["title"] for hit in lib.list(limit=100)["docs"]]
    return QUERIES + [" ".join(title.split()[:2]) for title in titles]


def _answers(lib: Library, queries: list[str]) -> str:
    return json.dumps([lib.search(q, limit=20) for q in queries], ensure_ascii=False)


def test_stored_texts_answer_as_the_content_files_do(
    plant_floor_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = Library.open(plant_floor_bundle, trusted_keys=[PUBLIC])
    index = stored.snapshot.retriever.index
    assert index.texts is not None and len(index.texts) == len(index.entry_doc)
    queries = _queries(stored)
    read = Bundle.read

    def no_content(self: Bundle, name: str, keep: bool = True) -> bytes:
        assert not name.startswith("content/"), f"a search read {name}"
        return read(self, name, keep)

    with monkeypatch.context() as mp:
        mp.setattr(Bundle, "read", no_content)
        new = _answers(stored, queries)
    old_lib = Library.open(plant_floor_bundle, trusted_keys=[PUBLIC])
    old_lib.snapshot.retriever.index.texts = None  # what a reader without them does
    old_lib.snapshot.retriever.index.doc_retired = None
    old = _answers(old_lib, queries)
    assert new == old
    assert sum(len(json.loads(new)[i]["hits"]) for i in range(len(queries))) > 50


def test_every_entry_text_is_its_content_range(plant_floor_bundle: Path) -> None:
    lib = Library.open(plant_floor_bundle, trusted_keys=[PUBLIC])
    retriever = lib.snapshot.retriever
    texts = retriever.index.texts
    assert texts is not None
    for entry in range(len(texts)):
        passage = retriever.passage(entry)
        content = lib.snapshot.bundle.read(passage.content)
        assert texts[entry] == hit_texts.excerpt_text(content, passage.start, passage.end)


RETIRED = """\
---
id: {id}
title: Pump {id} seals
kind: procedure
summary: How to replace the pump seals of line {id}.
{extra}
---
# Pump {id} seals

The pump seals wear out; replace them every year.
"""


def test_a_retired_docs_hits_show_its_pedigree_and_current_ones_none(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config = make_library(
        {
            "old.md": RETIRED.format(id="old", extra="retired: replaced by the new line"),
            "new.md": RETIRED.format(id="new", extra=""),
        }
    )
    build(load_config(config), tmp_path / "bundle", KEY)
    lib = Library.open(tmp_path / "bundle", trusted_keys=[PUBLIC])
    flags = lib.snapshot.retriever.index.doc_retired
    assert flags is not None and sorted(flags) == [0, 1]
    hits = lib.search("pump seals", limit=10)["hits"]
    shown = {hit["id"]: hit.get("pedigree") for hit in hits}
    assert shown["old"]["state"] == "retired" and shown["new"] is None
    old_lib = Library.open(tmp_path / "bundle", trusted_keys=[PUBLIC])
    old_lib.snapshot.retriever.index.doc_retired = None
    assert old_lib.search("pump seals", limit=10)["hits"] == hits


# -- the file itself ----------------------------------------------------------------------


def _header_and_body(data: bytes) -> tuple[dict[str, list[list[object]]], bytes]:
    length = int.from_bytes(data[12:16], "little")
    return json.loads(data[16 : 16 + length]), data[16 + length :]


def _with_header(data: bytes, header: dict[str, object]) -> bytes:
    _, body = _header_and_body(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-(8 + 8 + len(text)) % 8)
    return data[:12] + len(text).to_bytes(4, "little") + text + body


TEXT_ARRAYS = ("excerpt_text", "excerpt_text_offsets", "excerpt_text_dict", "entry_excerpt")


@pytest.fixture
def data(plant_floor_bundle: Path) -> bytes:
    return (plant_floor_bundle / "search.bin").read_bytes()


def test_a_file_without_the_texts_still_searches(data: bytes) -> None:
    header, _ = _header_and_body(data)
    arrays = header["arrays"]
    old = {k: v for k, v in arrays.items() if k not in TEXT_ARRAYS}
    assert len(old) == len(arrays) - 4
    before, after = SearchIndex(data), SearchIndex(_with_header(data, {**header, "arrays": old}))
    assert after.texts is None
    for text in ("pump", "+pressure -alarm", "cal*"):
        assert after.search(parse(text), 5) == before.search(parse(text), 5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: {**a, "excerpt_text_offsets": [*a["excerpt_text_offsets"][:1], 3, "I"]}, "span"),
        (lambda a: {**a, "excerpt_text": [a["excerpt_text"][0], 0, "B"]}, "span"),
        (lambda a: {k: v for k, v in a.items() if k != "excerpt_text_dict"}, "KeyError"),
        (lambda a: {**a, "entry_excerpt": [*a["entry_excerpt"][:1], 3, "I"]}, "one per entry"),
        (lambda a: {**a, "doc_retired": [a["doc_retired"][0], 1, "B"]}, "one flag per doc"),
    ],
)
def test_texts_of_the_wrong_length_are_refused(data: bytes, change: object, message: str) -> None:
    header, _ = _header_and_body(data)
    arrays = change(header["arrays"])  # type: ignore[operator]
    with pytest.raises(FormatError, match=rf"search\.bin: malformed .*{message}"):
        SearchIndex(_with_header(data, {**header, "arrays": arrays}))


def _poke(data: bytes, name: str, i: int, value: int) -> bytes:
    """`data` with item `i` of the uint32 array `name` set to `value`."""
    header, _ = _header_and_body(data)
    offset = header["arrays"][name][0]
    out = bytearray(data)
    struct.pack_into("<I", out, 16 + int.from_bytes(data[12:16], "little") + offset + 4 * i, value)
    return bytes(out)


def test_offsets_out_of_range_or_backwards_are_refused(data: bytes) -> None:
    """Offsets that do not span the texts are refused at open; one that goes backwards
    when a hit needs a text it bounds, naming the search file (the open does not scan
    them), and every other text still reads as written."""
    header, _ = _header_and_body(data)
    count = header["arrays"]["excerpt_text_offsets"][1]
    with pytest.raises(FormatError, match=r"search\.bin: malformed .*span"):
        SearchIndex(_poke(data, "excerpt_text_offsets", count - 1, 1 << 30))
    index, clean = SearchIndex(_poke(data, "excerpt_text_offsets", 1, 1 << 30)), SearchIndex(data)
    assert index.texts is not None and clean.texts is not None
    refused = 0
    for entry in range(len(index.texts)):
        try:
            text = index.texts[entry]
        except FormatError as exc:
            assert "search.bin" in str(exc) and "backwards" in str(exc)
            refused += 1
        else:
            assert text == clean.texts[entry]
    assert refused > 0


def test_an_entry_naming_a_text_past_the_last_is_refused_when_shown(data: bytes) -> None:
    """`entry_excerpt` is not scanned when the file opens: a number past the texts is
    refused when that entry's hit needs its text, naming the search file."""
    index = SearchIndex(_poke(data, "entry_excerpt", 1, 1 << 30))
    assert index.texts is not None
    with pytest.raises(FormatError, match=r"search\.bin: entry 1's excerpt text is malformed"):
        index.texts[1]
    assert index.texts[0] == SearchIndex(data).texts[0]  # type: ignore[index]


SHARED = """\
---
id: {id}
title: Valve {id}
kind: procedure
summary: Servicing valve {id}.
---
# Valve {id}

Close valve {id} before you start.

## See also

- The plant's safety rules.
"""


def test_identical_texts_are_stored_once(make_library: MakeLibrary, tmp_path: Path) -> None:
    """Two docs with the same "See also" section, and a third with the same body as the
    second: each distinct text is stored once, and every entry still reads its own."""
    second = SHARED.format(id="b")
    config = make_library(
        {
            "a.md": SHARED.format(id="a"),
            "b.md": second,
            "c.md": second.replace("id: b", "id: c"),
        }
    )
    build(load_config(config), tmp_path / "bundle", KEY)
    lib = Library.open(tmp_path / "bundle", trusted_keys=[PUBLIC])
    retriever = lib.snapshot.retriever
    texts = retriever.index.texts
    assert texts is not None and texts.of is not None
    numbers = list(texts.of)
    assert len(numbers) == 6 and len(texts.offsets) - 1 == 3  # a's and b's intro, "See also"
    for entry in range(len(numbers)):
        passage = retriever.passage(entry)
        content = lib.snapshot.bundle.read(passage.content)
        assert texts[entry] == hit_texts.excerpt_text(content, passage.start, passage.end)
    hits = lib.search("plant safety rules", limit=10)["hits"]
    assert {hit["id"] for hit in hits} == {"a", "b", "c"}


def test_the_first_layout_one_text_per_entry_still_reads(data: bytes) -> None:
    """A file written with ``entry_text`` (one stream per entry) answers the same."""
    index = SearchIndex(data)
    texts = index.texts
    assert texts is not None and texts.of is not None
    every = [texts[e] for e in range(len(texts))]
    packed = hit_texts.compressed([t.encode() for t in every], texts.zdict)
    starts = [0]
    for item in packed:
        starts.append(starts[-1] + len(item))
    arrays = {
        "entry_text": memoryview(b"".join(packed)),
        "entry_text_offsets": memoryview(struct.pack(f"<{len(starts)}I", *starts)).cast("I"),
        "entry_text_dict": memoryview(texts.zdict),
    }
    first = hit_texts.read(arrays, len(every))
    assert first is not None and first.of is None
    assert [first[e] for e in range(len(every))] == every
    with pytest.raises(ValueError, match="one per entry"):
        hit_texts.read(arrays, len(every) + 1)
    assert hit_texts.read({}, len(every)) is None


def test_a_text_that_is_not_utf8_or_not_deflate_is_refused(data: bytes) -> None:
    index = SearchIndex(data)
    texts = index.texts
    assert texts is not None
    first = bytes(texts.blob[texts.offsets[0] : texts.offsets[1]])
    bad = hit_texts.compressed([b"\xff\xfe not UTF-8"], texts.zdict)[0]
    garbage = b"\xff" * len(first)
    for packed in (bad, garbage):
        blob = bytearray(packed + bytes(texts.blob[texts.offsets[1] :]))
        shift = len(packed) - len(first)
        offsets = memoryview(
            struct.pack(f"<{len(texts.offsets)}I", 0, *(o + shift for o in texts.offsets[1:]))
        ).cast("I")
        hostile = hit_texts.HitTexts(memoryview(bytes(blob)), offsets, memoryview(texts.zdict))
        with pytest.raises(FormatError, match=r"search\.bin: entry 0's excerpt text is malformed"):
            hostile[0]
        assert hostile[1] == texts[1]


def test_the_dictionary_is_refused_past_deflates_window() -> None:
    offsets = memoryview(struct.pack("<I", 0)).cast("I")
    with pytest.raises(ValueError, match="window"):
        hit_texts.HitTexts(memoryview(b""), offsets, memoryview(b"x" * 40000))


def test_texts_round_trip_against_a_dictionary_of_their_own_text() -> None:
    texts = [f"line {i % 3} is common enough\nand {i}\n".encode() for i in range(40)]
    zdict = hit_texts.dictionary(texts)
    assert b"common enough" in zdict and len(zdict) <= hit_texts.DICT_BYTES
    assert len(hit_texts.dictionary([b"x" * 50000])) == hit_texts.DICT_BYTES
    packed = hit_texts.compressed(texts, zdict)
    blob = b"".join(packed)
    starts = [0]
    for item in packed:
        starts.append(starts[-1] + len(item))
    view = memoryview(struct.pack(f"<{len(starts)}I", *starts)).cast("I")
    stored = hit_texts.HitTexts(memoryview(blob), view, memoryview(zdict))
    assert [stored[i] for i in range(len(texts))] == [t.decode() for t in texts]
    assert zlib.decompressobj(-15, zdict=zdict).decompress(packed[0]) == texts[0]


def test_the_packer_stores_equal_texts_once_as_a_fresh_compressor_would() -> None:
    """Copies of one primed compressor give the bytes of a fresh one per text; equal
    texts (the empty one included) get one stream and the same number."""
    texts = [b"alpha beta", b"", "é𝄞 gamma".encode(), b"alpha beta", b"", b"x" * 70000]
    zdict = hit_texts.dictionary(texts)
    packer = hit_texts.Packer(zdict)
    for text in texts:
        packer.add(text)
    assert list(packer.of) == [0, 1, 2, 0, 1, 3]
    for n, text in enumerate([texts[0], texts[1], texts[2], texts[5]]):
        fresh = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, zdict)
        assert packer[n] == fresh.compress(text) + fresh.flush()
        assert zlib.decompressobj(-15, zdict=zdict).decompress(packer[n]) == text
