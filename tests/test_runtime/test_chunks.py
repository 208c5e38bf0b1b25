"""`chunks.bin`: the large files' chunk hashes. A reader hashes only the chunks it reads,
answers exactly as one that hashes every file whole, and refuses, naming the file, a
tampered chunk, a tampered or inconsistent chunk hash file, and a truncated file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT, MakeLibrary
from test_format_versions import relist, rewrite

from handbook import BundleError, Library
from handbook.bundle.chunks import MAGIC, Chunked, ChunkHasher, ChunkHashes, chunk_count, dumps
from handbook.bundle.layout import CATALOG, CHUNKS, SEARCH
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import FileEntry
from handbook.bundle.ranged import ChunkedFile, Whole
from handbook.errors import FormatError, HashMismatchError
from handbook.search.query import parse
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.write import seal

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
SMALL = 1024
QUERIES = [
    "modbus",
    "pressure valve",
    "acme*",
    "regster~1",
    "+modbus -tcp",
    "title:compressor",
    "lockout tagout procedure",
    "co*r",
    "+register +map",
    "holding registers",
]


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example built with 1 KiB chunks for every file above 1 KiB (the build's
    defaults are 64 KiB chunks above 1 MiB, which the example's files never reach)."""
    out = tmp_path_factory.mktemp("chunked") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "CHUNK_BYTES", SMALL)
        mp.setattr(seal, "CHUNKED_ABOVE", SMALL)
        build(load_config(EXAMPLE), out, KEY)
    return Path(os.path.realpath(out))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two answers alike but for their correlation ids (new for each question)."""
    return {**a, "correlation_id": None} == {**b, "correlation_id": None}


def _hashes(folder: Path) -> ChunkHashes:
    signed = json.loads((folder / "manifest.json").read_bytes())["signed"]
    files = {n: FileEntry(e["sha256"], e["bytes"]) for n, e in signed["files"].items()}
    return ChunkHashes((folder / CHUNKS).read_bytes(), files)


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


# -- the format ------------------------------------------------------------------------------


def test_hasher_gives_the_whole_hash_and_each_chunks() -> None:
    data = bytes(range(256)) * 10  # 2,560 bytes: two whole chunks and a part
    hasher = ChunkHasher(SMALL)
    for at in range(0, len(data), 700):  # writes that straddle chunk boundaries
        hasher.update(data[at : at + 700])
    got = hasher.chunked()
    assert got.size == len(data) and got.sha256 == hashlib.sha256(data).hexdigest()
    assert len(got) == chunk_count(len(data), SMALL) == 3
    for n in range(3):
        assert got.digest(n) == hashlib.sha256(data[n * SMALL : (n + 1) * SMALL]).digest()
    assert got.span(2) == (2048, 2560)


def _one(data: bytes, name: str = SEARCH) -> tuple[bytes, dict[str, FileEntry]]:
    hasher = ChunkHasher(SMALL)
    hasher.update(data)
    entry = FileEntry(hashlib.sha256(data).hexdigest(), len(data))
    return dumps({name: hasher.chunked()}), {name: entry}


def test_a_well_formed_file_reads_back() -> None:
    raw, listed = _one(b"x" * 3000)
    hashes = ChunkHashes(raw, listed)
    found = hashes.of(SEARCH, listed[SEARCH])
    assert found is not None and len(found) == 3 and hashes.names == [SEARCH]
    other = FileEntry("0" * 64, 3000)  # the listed file is another version: hashed whole
    assert hashes.of(SEARCH, other) is None


def _patched(raw: bytes, at: int, value: bytes) -> bytes:
    return raw[:at] + value + raw[at + len(value) :]


NAME_AT = 16 + 4  # where the first path starts
SIZE_AT = NAME_AT + len(SEARCH)
CHUNK_AT = SIZE_AT + 8 + 32


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda raw: b"HBCHUNKZ" + raw[8:], "no HBCHUNKS header"),
        (lambda raw: _patched(raw, 8, (2).to_bytes(4, "little")), "version 2"),
        (lambda raw: raw[:-1], "ends inside search.bin's chunk hashes"),
        (lambda raw: raw + b"\0", "1 bytes follow its last entry"),
        (lambda raw: raw[:30], "ends inside a file's entry"),
        (lambda raw: _patched(raw, 12, (2).to_bytes(4, "little")), "ends inside a file's entry"),
        (lambda raw: _patched(raw, CHUNK_AT, (1000).to_bytes(4, "little")), "not a power of two"),
        (lambda raw: _patched(raw, CHUNK_AT, (512).to_bytes(4, "little")), "not a power of two"),
        (lambda raw: _patched(raw, CHUNK_AT, (2048).to_bytes(4, "little")), "bytes follow"),
        (lambda raw: _patched(raw, SIZE_AT, (2000).to_bytes(8, "little")), "the manifest lists"),
        (lambda raw: _patched(raw, NAME_AT, b"tools.bin"[: len(SEARCH)]), "does not list"),
        (lambda raw: _patched(raw, NAME_AT, b"\xff"), "not UTF-8"),
    ],
)
def test_a_malformed_chunk_file_is_refused_naming_it(change: Any, message: str) -> None:
    raw, listed = _one(b"x" * 3000)
    with pytest.raises(FormatError, match=message) as caught:
        ChunkHashes(change(raw), listed)
    assert str(caught.value).startswith(f"{CHUNKS}: ")


def test_paths_must_be_sorted_and_unique() -> None:
    hasher = ChunkHasher(SMALL)
    hasher.update(b"y" * 1500)
    entry = hasher.chunked()
    raw = dumps({"a.bin": entry, "b.bin": entry})
    listed = {n: FileEntry(entry.sha256, entry.size) for n in ("a.bin", "b.bin")}
    assert ChunkHashes(raw, listed).names == ["a.bin", "b.bin"]
    first = len(raw) - (len(raw) - 16) // 2
    swapped = raw[:16] + raw[first:] + raw[16:first]
    with pytest.raises(FormatError, match="not sorted and unique"):
        ChunkHashes(swapped, listed)
    with pytest.raises(FormatError, match="not sorted and unique"):
        ChunkHashes(raw[:16] + raw[16:first] * 2, listed)


# -- reading by chunks -------------------------------------------------------------------------


def test_the_build_lists_chunk_hashes_of_the_large_files(chunked: Path) -> None:
    hashes = _hashes(chunked)
    assert {SEARCH, CATALOG} <= set(hashes.names)
    for name in hashes.names:
        data = (chunked / name).read_bytes()
        assert len(data) > SMALL
        entry = hashes.of(name, FileEntry(hashlib.sha256(data).hexdigest(), len(data)))
        assert entry is not None and entry.chunk_bytes == SMALL
        for n in range(len(entry)):
            lo, hi = entry.span(n)
            assert hashlib.sha256(data[lo:hi]).digest() == entry.digest(n)
    assert (chunked / CHUNKS).read_bytes()[:8] == MAGIC
    open_bundle(chunked, [PUBLIC], hash_all=True)  # as handbook verify checks it


def test_answers_are_those_of_a_reader_that_hashes_whole(
    chunked: Path, plant_floor_bundle: Path
) -> None:
    lazy, whole = Library.open(chunked, [PUBLIC]), Library.open(plant_floor_bundle, [PUBLIC])
    search = lazy.bundle.ranged(SEARCH)
    assert isinstance(search, ChunkedFile) and isinstance(whole.bundle.ranged(SEARCH), Whole)
    assert 0 < sum(search._done) < len(search._done)  # opened: only the small arrays
    for query in QUERIES:
        assert lazy.search(query, limit=10) == whole.search(query, limit=10), query
    for doc_id in ("device.acme.ac200", "guide.lockout-tagout", "no.such-doc"):
        assert lazy.get(doc_id) == whole.get(doc_id)
    for question in ("How do I lock out the compressor?", "What is register 40001?"):
        assert _same(lazy.ask(question), whole.ask(question))
        assert lazy.brief(question) == whole.brief(question)
    assert lazy.collect(query="modbus") == whole.collect(query="modbus")
    catalog = lazy.bundle.ranged(CATALOG)
    assert isinstance(catalog, ChunkedFile) and sum(catalog._done) < len(catalog._done)


def test_a_tampered_chunk_is_refused_when_read_naming_the_file(
    chunked: Path, tmp_path: Path
) -> None:
    """A byte flipped in each chunk of search.bin in turn: verify refuses the bundle; a
    lazy reader opens it (the chunk is not read yet), then refuses that chunk."""
    size = (chunked / SEARCH).stat().st_size
    for chunk in range(chunk_count(size, SMALL)):
        copy = _copy(chunked, tmp_path / str(chunk))
        _flip(copy / SEARCH, min(size - 1, chunk * SMALL + 7))
        with pytest.raises(BundleError, match=SEARCH):
            open_bundle(copy, [PUBLIC], hash_all=True)
        try:
            lib = Library.open(copy, [PUBLIC])
        except HashMismatchError as exc:  # a chunk the opening verifies
            assert f"{SEARCH}: chunk {chunk} " in str(exc)
            continue
        with pytest.raises(HashMismatchError, match=f"{SEARCH}: chunk {chunk} ") as caught:
            lib.bundle.ranged(SEARCH).need(chunk * SMALL, chunk * SMALL + 1)
        assert "chunks.bin" in str(caught.value)
        assert lib.bundle.integrity_error == str(caught.value)
        with pytest.raises(HashMismatchError):  # refused again, never handed out
            lib.bundle.ranged(SEARCH)[chunk * SMALL : chunk * SMALL + 10]


def test_a_search_that_reads_a_tampered_chunk_answers_an_error(
    chunked: Path, tmp_path: Path
) -> None:
    """A posting in the middle of post_entry flipped (a chunk the opening does not
    verify): the bundle opens, and a search for the term whose list holds it answers an
    error naming search.bin, never hits ranked from the tampered bytes."""
    index = Library.open(chunked, [PUBLIC]).snapshot.retriever.index
    at, item = index._spans["post_entry"]
    group, nfields = index.groups[0], len(index.fields)
    middle = len(group.entries) // 2
    query = next(
        index.term_table[term]
        for term in range(len(index.term_table))
        if any(
            lo <= middle < hi for lo, hi in (group.span(term, f, nfields) for f in range(nfields))
        )
        and index.expand(parse(index.term_table[term])[0]) == [term]
    )
    copy = _copy(chunked, tmp_path)
    _flip(copy / SEARCH, at + middle * item)
    lib = Library.open(copy, [PUBLIC])
    answer = lib.search(query, limit=10)
    assert not answer.get("hits"), answer
    assert SEARCH in json.dumps(answer) and lib.bundle.integrity_error


def _sectioned_doc(n: int) -> str:
    sections = "".join(
        f"## Step {n}.{s} of the calibration of valve unit {n * 100 + s}\n\n"
        f"Turn the trim screw of unit {n * 100 + s} until word{n}x{s} reads zero.\n\n"
        for s in range(12)
    )
    return (
        f"---\nid: valve.unit{n}\ntitle: Valve unit {n}\nkind: device\n"
        f"summary: Calibrating valve unit {n}.\n---\n{sections}"
    )


def test_hit_titles_are_verified_when_shown_not_at_open(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    """The term table and the per-entry titles and anchors are verified by the items a
    word's bisection or a hit reads, not at open; a hit's title flipped in a chunk the
    open did not read fails the search that shows it, naming search.bin, never a hit
    with the tampered title; a term flipped fails the search for it."""
    config = make_library({f"unit{n}.md": _sectioned_doc(n) for n in range(40)})
    out = tmp_path / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "CHUNK_BYTES", SMALL)
        mp.setattr(seal, "CHUNKED_ABOVE", SMALL)
        build(load_config(config), out, KEY)
    lib = Library.open(out, [PUBLIC])
    index = lib.snapshot.retriever.index
    file = index.file
    assert isinstance(file, ChunkedFile)
    for name in ("terms", "entry_title", "entry_anchor"):  # at most the chunks at each end
        at, _ = index._spans[name]
        chunks = range(at // SMALL, (at + len(index._arrays[name])) // SMALL)
        assert len(chunks) > 4 and sum(file._done[c] for c in chunks) <= 2, name
    hit = lib.search("word17x5", limit=1)["hits"][0]
    assert hit["section"] == "Step 17.5 of the calibration of valve unit 1705"
    entry = next(e for e in range(index.entries) if "1705" in index.strings("entry_title")[e])
    byte = index._spans["entry_title"][0] + index.strings("entry_title").offsets[entry] + 5
    copy = _copy(out, tmp_path)
    _flip(copy / SEARCH, byte)
    fresh = Library.open(copy, [PUBLIC])
    answer = fresh.search("word17x5", limit=1)
    assert not answer.get("hits"), answer
    assert SEARCH in json.dumps(answer) and fresh.bundle.integrity_error
    term = index.term_table.find("word23x7")
    assert term is not None
    copy = _copy(out, tmp_path / "term")
    _flip(copy / SEARCH, index._spans["terms"][0] + index.term_table.offsets[term] + 2)
    answer = Library.open(copy, [PUBLIC]).search("word23x7", limit=1)
    assert not answer.get("hits") and SEARCH in json.dumps(answer), answer


def test_a_tampered_catalog_chunk_fails_the_get_of_a_doc_in_it(
    chunked: Path, tmp_path: Path
) -> None:
    copy = _copy(chunked, tmp_path)
    raw = (copy / CATALOG).read_bytes()
    at = raw.index(b'"id":"device.acme.ac200"')
    _flip(copy / CATALOG, at + 8)
    lib = Library.open(copy, [PUBLIC])
    answer = lib.get("device.acme.ac200")
    assert answer.get("found") is not True and CATALOG in json.dumps(answer)
    with pytest.raises(BundleError, match=CATALOG):
        open_bundle(copy, [PUBLIC], hash_all=True)


def test_a_truncated_file_is_refused_naming_it(chunked: Path, tmp_path: Path) -> None:
    copy = _copy(chunked, tmp_path)
    (copy / SEARCH).write_bytes((copy / SEARCH).read_bytes()[:-1])
    with pytest.raises(HashMismatchError, match=f"{SEARCH}: observed"):
        Library.open(copy, [PUBLIC])
    with pytest.raises(BundleError, match=SEARCH):
        open_bundle(copy, [PUBLIC], hash_all=True)


def test_a_tampered_chunk_file_is_refused_naming_it(chunked: Path, tmp_path: Path) -> None:
    copy = _copy(chunked, tmp_path)
    _flip(copy / CHUNKS, 40)
    for opening in (lambda: Library.open(copy, [PUBLIC]), lambda: open_bundle(copy, [PUBLIC])):
        with pytest.raises(HashMismatchError, match=CHUNKS):
            opening()


def _resigned_with(chunked: Path, tmp_path: Path, change: Any) -> Path:
    def edit(folder: Path, signed: dict[str, Any]) -> None:
        (folder / CHUNKS).write_bytes(change((folder / CHUNKS).read_bytes(), folder))
        relist(folder, signed, CHUNKS)

    return rewrite(chunked, tmp_path, edit)


def _search_entry(raw: bytes) -> int:
    """Where search.bin's chunk digests start in chunks.bin's bytes."""
    at = raw.index(SEARCH.encode()) + len(SEARCH)
    return at + 8 + 32 + 4


def test_a_signed_chunk_file_with_a_wrong_hash_is_refused_on_read(
    chunked: Path, tmp_path: Path
) -> None:
    """The signer's chunks.bin does not match search.bin: verify refuses it, and a lazy
    reader refuses the chunk, naming the file and chunks.bin."""

    index = Library.open(chunked, [PUBLIC]).snapshot.retriever.index
    at, item = index._spans["post_entry"]
    chunk = (at + len(index.groups[0].entries) // 2 * item) // SMALL  # read by no opening

    def wrong(raw: bytes, folder: Path) -> bytes:
        at = _search_entry(raw) + 32 * chunk
        return raw[:at] + bytes(32) + raw[at + 32 :]

    folder = _resigned_with(chunked, tmp_path, wrong)
    with pytest.raises(HashMismatchError, match=f"{SEARCH}: chunk {chunk} .*{CHUNKS}"):
        open_bundle(folder, [PUBLIC], hash_all=True)
    lib = Library.open(folder, [PUBLIC])
    search = lib.bundle.ranged(SEARCH)
    with pytest.raises(HashMismatchError, match=f"{SEARCH}: chunk {chunk} "):
        search.need(chunk * SMALL, chunk * SMALL + 1)
    assert not any(search.view[chunk * SMALL : (chunk + 1) * SMALL])  # read, refused, zeroed


def test_a_signed_chunk_file_with_a_wrong_count_or_size_is_refused(
    chunked: Path, tmp_path: Path
) -> None:
    def one_less(raw: bytes, folder: Path) -> bytes:
        at = _search_entry(raw)
        return raw[:at] + raw[at + 32 :]

    def half_size(raw: bytes, folder: Path) -> bytes:
        at = _search_entry(raw) - 4
        return raw[:at] + (SMALL * 2).to_bytes(4, "little") + raw[at + 4 :]

    for n, change in enumerate((one_less, half_size)):
        folder = _resigned_with(chunked, tmp_path / str(n), change)
        with pytest.raises(FormatError, match=f"^{CHUNKS}: "):
            Library.open(folder, [PUBLIC])
        with pytest.raises(FormatError, match=f"^{CHUNKS}: "):
            open_bundle(folder, [PUBLIC])


def test_chunk_hashes_of_another_version_are_ignored(chunked: Path, tmp_path: Path) -> None:
    """A tool that rewrote search.bin and signed it again, leaving chunks.bin as it was:
    the file is hashed whole, as by a reader that does not know chunks.bin."""

    def change(folder: Path, signed: dict[str, Any]) -> None:
        with open(folder / SEARCH, "ab") as fh:
            fh.write(b"\0" * 8)
        relist(folder, signed, SEARCH)

    folder = rewrite(chunked, tmp_path, change)
    lib = Library.open(folder, [PUBLIC])
    assert isinstance(lib.bundle.ranged(SEARCH), Whole)
    assert lib.search("modbus", limit=3)["hits"]
    open_bundle(folder, [PUBLIC], hash_all=True)


def test_a_bundle_without_chunk_hashes_is_read_whole(plant_floor_bundle: Path) -> None:
    lib = Library.open(plant_floor_bundle, [PUBLIC])
    assert CHUNKS not in lib.bundle.manifest.signed.files
    assert isinstance(lib.bundle.ranged(SEARCH), Whole)


def test_chunked_is_one_chunk_for_a_small_file() -> None:
    entry = Chunked(10, "0" * 64, SMALL, bytes(32))
    assert len(entry) == 1 and entry.span(0) == (0, 10)


def test_reviews_are_read_by_chunks_and_pedigrees_unchanged(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A library with reviews: reviews.json is read by the chunks a pedigree's records lie
    in, and every pedigree is the one a reader of the whole file gives; a tampered chunk
    of it fails the pedigrees that read it, naming the file."""
    from handbook.bundle.layout import REVIEWS
    from handbook.pedigree.indexed import IndexedLedger

    config = load_config(ROOT / "examples" / "packaging-line" / "mkdocs.yml")
    plain = tmp_path_factory.mktemp("reviews") / "bundle"
    build(config, plain, KEY)
    chunked_out = tmp_path_factory.mktemp("reviews-chunked") / "bundle"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seal, "CHUNK_BYTES", SMALL)
        mp.setattr(seal, "CHUNKED_ABOVE", SMALL)
        build(config, chunked_out, KEY)
    lazy, whole = Library.open(chunked_out, [PUBLIC]), Library.open(plain, [PUBLIC])
    ids = [d["id"] for d in json.loads((plain / CATALOG).read_bytes())["docs"]]
    for doc_id in ids:
        assert lazy.get(doc_id) == whole.get(doc_id)
    assert lazy.list(reviewed=True) == whole.list(reviewed=True)
    assert isinstance(lazy.snapshot.ledger, IndexedLedger)
    reviews = lazy.bundle.ranged(REVIEWS)
    assert isinstance(reviews, ChunkedFile) and len(reviews) > 2 * SMALL
    copy = _copy(Path(os.path.realpath(chunked_out)), tmp_path)
    size = (copy / REVIEWS).stat().st_size
    _flip(copy / REVIEWS, size // 2)
    tampered = Library.open(copy, [PUBLIC])
    answers = [tampered.get(doc_id) for doc_id in ids]
    assert any(REVIEWS in json.dumps(a) for a in answers), "no pedigree read the chunk"
    with pytest.raises(BundleError, match=REVIEWS):
        open_bundle(copy, [PUBLIC], hash_all=True)
