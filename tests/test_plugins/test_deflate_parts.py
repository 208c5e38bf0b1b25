"""index.json.gz from parts compressed apart: one valid gzip member whatever the parts,
and the same bytes whether the index's parts were rendered here or by forked workers."""

from __future__ import annotations

import gzip
import io
import random
import zlib

import pytest

from handbook_build.write import lunr_index
from handbook_build.write.deflate_parts import crc32_combine, deflated, write_gzip, xfl
from handbook_build.write.lunr_index import Entry, LunrIndex


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (b"", b""),
        (b"a", b""),
        (b"", b"b"),
        (b"\0" * 5, b"\xff" * 3),
        (bytes(range(256)) * 300, b"x"),
    ],
)
def test_crc32_combine_equals_the_crc_of_the_joined_bytes(first: bytes, second: bytes) -> None:
    assert crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(
        first + second
    )


def test_crc32_combine_over_random_splits() -> None:
    rng = random.Random(7)
    data = rng.randbytes(200_000)
    for _ in range(20):
        cut = rng.randrange(len(data) + 1)
        a, b = data[:cut], data[cut:]
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(data)


@pytest.mark.parametrize("level", [1, 4, 6, 9])
def test_parts_join_into_one_gzip_member(level: int) -> None:
    """Empty parts, incompressible ones and repetitive ones, joined: gzip (and zlib with
    a gzip header, strictly) reads back exactly their concatenation, with no extra member."""
    rng = random.Random(level)
    parts = [b"", rng.randbytes(70_000), b"", b"lunr " * 50_000, "é€𝄞".encode() * 1000, b""]
    out = io.BytesIO()
    write_gzip(out, [deflated(p, level) for p in parts], level)
    packed = out.getvalue()
    assert packed[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes((xfl(level), 255))
    assert gzip.decompress(packed) == b"".join(parts)
    reader = zlib.decompressobj(16 + 15)
    assert reader.decompress(packed) == b"".join(parts)
    assert reader.eof and not reader.unused_data


def test_no_parts_is_an_empty_gzip_file() -> None:
    out = io.BytesIO()
    write_gzip(out, [], 4)
    assert gzip.decompress(out.getvalue()) == b""


def test_a_truncated_or_altered_file_is_refused_by_gzip() -> None:
    """The trailer really checks the combined CRC: one altered byte of text fails."""
    out = io.BytesIO()
    write_gzip(out, [deflated(b"alpha " * 100, 4), deflated(b"beta " * 100, 4)], 4)
    packed = bytearray(out.getvalue())
    packed[-8] ^= 1  # the CRC
    with pytest.raises(gzip.BadGzipFile):
        gzip.decompress(bytes(packed))
    with pytest.raises(EOFError):
        gzip.decompress(out.getvalue()[:-9])


def _index() -> LunrIndex:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "épée", "𝄞clef", "x-ray", "the", "and"]
    entries = [
        Entry(
            f"doc-{n}", [rng.choice(words), " ".join(rng.choices(words, k=rng.randrange(1, 9))), ""]
        )
        for n in range(300)
    ]
    return LunrIndex(entries)


def test_gzip_index_is_the_json_index_and_the_same_serial_or_forked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serial = io.BytesIO()
    _index().write_gzip(serial, 4)
    assert gzip.decompress(serial.getvalue()) == _index().to_bytes()
    monkeypatch.setattr(lunr_index, "_PARALLEL_MIN_ENTRIES", 0)
    monkeypatch.setattr(lunr_index, "_PARTS", 7)
    forked_parts = io.BytesIO()
    _index().write_gzip(forked_parts, 4)
    assert gzip.decompress(forked_parts.getvalue()) == _index().to_bytes()
    monkeypatch.setattr(lunr_index, "_PARTS", 256)
    forked = io.BytesIO()
    _index().write_gzip(forked, 4)
    assert forked.getvalue() == serial.getvalue()


def test_an_empty_index_gzips_to_its_json() -> None:
    out = io.BytesIO()
    LunrIndex().write_gzip(out, 4)
    data = gzip.decompress(out.getvalue())
    assert data == LunrIndex().to_bytes()
    assert b'"fieldVectors":[],"invertedIndex":[]' in data
