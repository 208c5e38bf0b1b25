"""Chunk hashes of a bundle's large files (``chunks.bin``), so that a reader hashes only
the parts of a file it reads.

The manifest lists every file with its whole sha256, so a reader that knows nothing else
hashes ``search.bin`` (31 MB at 10,000 docs) and ``catalog.json`` (12 MB) whole before
using a byte: the open that grows with the library. ``chunks.bin`` is one more listed
file (hashed whole against the manifest, 32 bytes per chunk) that gives, for each
listed file above `CHUNKED_ABOVE`, its size, its whole sha256, a chunk size and the
sha256 of each chunk. A reader that has verified it checks each chunk of such a file
before using a byte of it (`handbook.bundle.ranged`). Layout, little-endian:

    b"HBCHUNKS" · uint32 version (1) · uint32 files
    · per file, by path: uint32 path length · path (UTF-8) · uint64 bytes · sha256 (32)
      · uint32 chunk size · sha256 of each chunk (32 bytes each, ceil(bytes / chunk size))

The last chunk holds the rest of the file. The file's sha256 and size name the version
it was written for: when they are not the manifest's (a tool rewrote the file and signed
it again without this one), a reader hashes the file whole, as one that does not know
``chunks.bin``. Additive in ``handbook/v2``: such readers verify its hash and ignore it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import NamedTuple

from ..errors import FormatError
from .layout import CHUNKS
from .manifest import FileEntry

MAGIC = b"HBCHUNKS"
VERSION = 1
CHUNK_BYTES = 16 * 1024
"""The chunk size the build writes: a search reads a few posting lists, and ten excerpt
texts, titles and anchors, and a `get` one catalog entry, so small chunks hash little
more than what is read (2 KB of hashes per MiB). 64 KiB chunks made a 10k library's
first touch of a hit's strings cost ~70 us each; 4 KiB ones cost more at open (a
Python step per chunk of the arrays verified whole) than they saved."""
CHUNKED_ABOVE = 1024 * 1024
"""Files larger than this get chunk hashes; smaller ones are hashed whole in well under
a millisecond."""
MIN_CHUNK, MAX_CHUNK = 1024, 1 << 30
"""The chunk sizes a reader accepts (a power of two between them)."""
_DIGEST = 32


class Chunked(NamedTuple):
    """One file's chunk hashes: what it must be (size and whole sha256), its chunk size,
    and the sha256 of each chunk, concatenated."""

    size: int
    sha256: str
    chunk_bytes: int
    digests: bytes

    def __len__(self) -> int:
        return len(self.digests) // _DIGEST

    def digest(self, chunk: int) -> bytes:
        return self.digests[chunk * _DIGEST : (chunk + 1) * _DIGEST]

    def span(self, chunk: int) -> tuple[int, int]:
        """The byte range of chunk `chunk` in the file."""
        start = chunk * self.chunk_bytes
        return start, min(self.size, start + self.chunk_bytes)


def chunk_count(size: int, chunk_bytes: int) -> int:
    return -(-size // chunk_bytes)


class ChunkHasher:
    """Hashes a file as it is written, whole and chunk by chunk (the build's side)."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.chunk_bytes = chunk_bytes
        self.whole = hashlib.sha256()
        self._chunk = hashlib.sha256()
        self._filled = 0
        self._digests: list[bytes] = []
        self.size = 0

    def update(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        self.whole.update(view)
        self.size += len(view)
        while view:
            take = min(len(view), self.chunk_bytes - self._filled)
            self._chunk.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == self.chunk_bytes:
                self._digests.append(self._chunk.digest())
                self._chunk, self._filled = hashlib.sha256(), 0

    def chunked(self) -> Chunked:
        """The file's chunk hashes, once it is written whole."""
        digests = self._digests + ([self._chunk.digest()] if self._filled else [])
        return Chunked(self.size, self.whole.hexdigest(), self.chunk_bytes, b"".join(digests))


def dumps(files: Mapping[str, Chunked]) -> bytes:
    """The bytes of ``chunks.bin`` for `files` (path -> its chunk hashes)."""
    parts = [MAGIC, _u32(VERSION), _u32(len(files))]
    for name in sorted(files):
        entry = files[name]
        path = name.encode("utf-8")
        parts += [_u32(len(path)), path, entry.size.to_bytes(8, "little")]
        parts += [bytes.fromhex(entry.sha256), _u32(entry.chunk_bytes), entry.digests]
    return b"".join(parts)


class ChunkHashes:
    """A verified ``chunks.bin``, checked against the manifest's files: each path listed
    there, each chunk count what the size and chunk size make. `of` gives a file's chunk
    hashes when they were written for the listed file."""

    def __init__(self, data: bytes, listed: Mapping[str, FileEntry]) -> None:
        def refuse(why: str) -> FormatError:
            return FormatError(f"{CHUNKS}: {why}; rebuild the bundle")

        if data[:8] != MAGIC or len(data) < 16:
            raise refuse("not a chunk hash file (no HBCHUNKS header)")
        version, count = _read_u32(data, 8), _read_u32(data, 12)
        if version != VERSION:
            raise refuse(f"version {version}; this reader knows version {VERSION}")
        self._files: dict[str, Chunked] = {}
        at, previous = 16, b""
        for _ in range(count):
            if at + 4 > len(data):
                raise refuse("it ends inside a file's entry")
            length = _read_u32(data, at)
            raw, at = data[at + 4 : at + 4 + length], at + 4 + length
            if len(raw) != length or at + 44 > len(data):
                raise refuse("it ends inside a file's entry")
            if raw <= previous:
                raise refuse("its paths are not sorted and unique")
            previous = raw
            name = _path(raw, refuse)
            size, sha = int.from_bytes(data[at : at + 8], "little"), data[at + 8 : at + 40].hex()
            chunk_bytes = _read_u32(data, at + 40)
            if not (MIN_CHUNK <= chunk_bytes <= MAX_CHUNK and chunk_bytes & (chunk_bytes - 1) == 0):
                raise refuse(f"{name} has a chunk size of {chunk_bytes}, not a power of two")
            digests_at = at + 44
            at = digests_at + _DIGEST * chunk_count(size, chunk_bytes)
            if at > len(data):
                raise refuse(f"it ends inside {name}'s chunk hashes ({size:,} bytes)")
            entry = listed.get(name)
            if entry is None:
                raise refuse(f"it gives chunk hashes of {name}, which the manifest does not list")
            if sha == entry.sha256 and size != entry.bytes:
                raise refuse(f"{name} has {size:,} bytes, the manifest lists {entry.bytes:,}")
            self._files[name] = Chunked(size, sha, chunk_bytes, data[digests_at:at])
        if at != len(data):
            raise refuse(f"{len(data) - at:,} bytes follow its last entry")

    def of(self, name: str, entry: FileEntry) -> Chunked | None:
        """`name`'s chunk hashes when they describe the file the manifest lists (`entry`);
        None otherwise: the file is then hashed whole."""
        chunked = self._files.get(name)
        if chunked is None or (chunked.sha256, chunked.size) != (entry.sha256, entry.bytes):
            return None
        return chunked

    @property
    def names(self) -> list[str]:
        """The files it gives chunk hashes of, sorted."""
        return list(self._files)


def _path(raw: bytes, refuse: Callable[[str], FormatError]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse("a path is not UTF-8") from None


def _u32(value: int) -> bytes:
    return value.to_bytes(4, "little")


def _read_u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")
