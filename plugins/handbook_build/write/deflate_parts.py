"""One gzip file from parts compressed apart (as pigz does), so that the processes that
render the lunr index's parts also compress them, and the build's main process never
holds or compresses the whole uncompressed index (2.3 GB at 100,000 docs).

Each part is raw deflate ended by a sync flush (byte-aligned, not final), so the parts
join into one deflate stream; an empty final block ends it. The gzip trailer's CRC-32
is combined from the parts' (`crc32_combine`, zlib's algorithm: the CRC of zeros is a
linear map, applied by squaring matrices over GF(2)). The bytes depend only on the parts
and the level, never on which process compressed which part: builds stay reproducible.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import NamedTuple, Protocol


class Writable(Protocol):
    def write(self, data: bytes, /) -> int: ...


class Deflated(NamedTuple):
    """One part: its CRC-32 and length uncompressed, and its raw deflate (sync-flushed)."""

    crc: int
    size: int
    data: bytes


def deflated(data: bytes, level: int) -> Deflated:
    packer = zlib.compressobj(level, zlib.DEFLATED, -15)
    return Deflated(
        zlib.crc32(data), len(data), packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)
    )


_POLY = 0xEDB88320
_zeros: list[list[int]] = []
"""_zeros[k]: the matrix that appends 2**k zero bytes to a CRC (built on first use)."""


def _times(matrix: list[int], vector: int) -> int:
    out, i = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, row) for row in matrix]


def _zero_operators() -> list[list[int]]:
    if not _zeros:
        one_bit = [_POLY] + [1 << n for n in range(31)]
        op = _square(_square(_square(one_bit)))  # 8 zero bits: one zero byte
        for _ in range(64):
            _zeros.append(op)
            op = _square(op)
    return _zeros


def crc32_combine(crc1: int, crc2: int, size2: int) -> int:
    """The CRC-32 of A + B from A's (`crc1`), B's (`crc2`) and B's length (`size2`)."""
    operators = _zero_operators()
    k = 0
    while size2:
        if size2 & 1:
            crc1 = _times(operators[k], crc1)
        size2 >>= 1
        k += 1
    return crc1 ^ crc2


def xfl(level: int) -> int:
    """The gzip header's XFL byte for a compression level, as gzip and zlib set it."""
    return 4 if level == 1 else 2 if level == 9 else 0


def write_gzip(fh: Writable, parts: Iterable[Deflated], level: int) -> None:
    """A gzip member (no name, time 0, OS unknown) of `parts` joined in order."""
    fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes((xfl(level), 255)))
    crc, size = 0, 0
    for part in parts:
        fh.write(part.data)
        crc = crc32_combine(crc, part.crc, part.size)
        size += part.size
    fh.write(zlib.compressobj(level, zlib.DEFLATED, -15).flush())  # the empty final block
    fh.write(crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
