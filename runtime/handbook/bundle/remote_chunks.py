"""A remote bundle's large file read by HTTP ranges, chunk by chunk: a
`handbook.bundle.sources.ChunkSource` for `handbook.bundle.ranged.ChunkedFile`.

A search at 100,000 docs reads a few posting lists and ten hits' excerpts of a 468 MB
`search.bin`; fetching and hashing it whole made a remote reader's first answer cost the
whole file. Here each chunk a read needs comes, in this order, from:

1. the digest cache: the file's chunk file (``chunks/<sha256>``, where verified chunks
   were written at their place by earlier reads), then the whole file (left by an eager
   fetch), each read at the chunk's place and hashed before it is taken (a chunk never
   written reads as zeros, which match no hash);
2. the host: the chunks still missing, each run of adjacent ones in one ``Range``
   request (`handbook.bundle.remote.RemoteFiles.fetch_span`).

What the host sent is checked by `ChunkedFile` against ``chunks.bin`` before a byte is
used, and only then written to the chunk file (`keep`): nothing unverified is ever
kept. A host that ignores ``Range`` sends the whole file: it is checked whole against
the manifest and cached as any downloaded file, and the chunks are taken from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Protocol

from ..errors import BundleError, HashMismatchError
from .chunks import Chunked
from .digest_cache import DigestCache
from .fetcher import Span
from .layout import CHUNKS
from .manifest import FileEntry


class Host(Protocol):
    """What a remote file's chunks are fetched through (`handbook.bundle.remote.RemoteFiles`)."""

    cache: DigestCache

    @property
    def url(self) -> str:
        """The bundle's URL, for messages."""

    def fetch_span(self, name: str, entry: FileEntry, start: int, end: int) -> Span:
        """Bytes `start` to `end` of the file, unverified, or the whole file."""

    def check_whole(self, name: str, entry: FileEntry, data: bytes) -> None:
        """Check a whole file against the manifest and cache it."""

    def refused(self, exc: BundleError) -> BundleError:
        """What to raise for bytes that are not the listed file's."""


class RemoteChunks:
    """The listed file `name` (`entry` in the manifest, `chunked` its chunk hashes) of
    a remote bundle, chunk by chunk."""

    def __init__(self, files: Host, name: str, entry: FileEntry, chunked: Chunked) -> None:
        self.name, self.chunked = name, chunked
        self._files, self._entry = files, entry
        self._whole: bytes | None = None
        """The whole file, verified against the manifest, once a host sent it whole."""
        self._kept = files.cache.chunk_file(entry)
        """The file's chunk file in the cache, written as chunks are verified."""
        self._cached = files.cache.open(entry)
        """The whole file in the digest cache."""

    def fill(self, first: int, last: int, target: memoryview) -> Sequence[int]:
        """Chunks `first` to `last` into `target`: from the cache where there, from the
        host otherwise; the chunks the host sent (to be kept once verified)."""
        base = self.chunked.span(first)[0]

        def put(at: int, data: bytes | memoryview) -> None:
            target[at - base : at - base + len(data)] = data

        if self._whole is not None:
            put(base, memoryview(self._whole)[base : base + len(target)])
            return ()
        missing = [chunk for chunk in range(first, last) if not self._from_cache(chunk, put)]
        fetched: list[int] = []
        for run in _runs(missing):
            start, end = self.chunked.span(run[0])[0], self.chunked.span(run[-1])[1]
            span = self._files.fetch_span(self.name, self._entry, start, end)
            if span.whole:  # the host ignores Range: the file checked whole, as any
                self._files.check_whole(self.name, self._entry, span.data)
                self._whole = span.data
                put(base, memoryview(span.data)[base : base + len(target)])
                return fetched
            put(start, span.data)
            fetched += run
        return fetched

    def _from_cache(self, chunk: int, put: Callable[[int, bytes], None]) -> bool:
        """Put chunk `chunk` from the cache when it is there and matches its hash."""
        start, end = self.chunked.span(chunk)
        for fd in (self._kept, self._cached):
            if fd is None:
                continue
            data = os.pread(fd, end - start, start)
            if hashlib.sha256(data).digest() == self.chunked.digest(chunk):
                put(start, data)
                return True
        return False

    def keep(self, chunk: int, data: memoryview) -> None:
        """Write a verified chunk at its place in the chunk file; a cache that cannot be
        written only means the chunk is downloaded again next time."""
        if self._kept is not None:
            with contextlib.suppress(OSError):
                os.pwrite(self._kept, data, self.chunked.span(chunk)[0])

    def mismatch(self, chunk: int, start: int, end: int) -> BundleError:
        exc = HashMismatchError(
            f"{self.name}: chunk {chunk} (bytes {start:,} to {end:,}) as downloaded from "
            f"{self._files.url} does not match its sha256 in {CHUNKS}"
        )
        return self._files.refused(exc)

    def close(self) -> None:
        for fd in (self._kept, self._cached):
            if fd is not None:
                os.close(fd)
        self._kept = self._cached = None


def _runs(chunks: Sequence[int]) -> list[list[int]]:
    """`chunks` (ascending) cut into runs of adjacent ones: one request each."""
    runs: list[list[int]] = []
    for chunk in chunks:
        if runs and runs[-1][-1] + 1 == chunk:
            runs[-1].append(chunk)
        else:
            runs.append([chunk])
    return runs
