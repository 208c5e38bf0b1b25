"""A listed file read by ranges, each range verified before a byte of it is used.

`Bundle.ranged` hands out a `Ranged` file: `need(start, end)` makes sure those bytes are
verified, `view` is the whole file as a memoryview (only the ranges already needed hold
its bytes), and slicing gives a range's verified bytes. Readers of large files (the
search file's arrays, one doc's entry in the catalog, one doc's reviews) call `need`
for what they read.

Two kinds: `Whole`, the file's bytes already verified whole against the manifest (every
`need` is free: a file without chunk hashes, or one whose source reads only whole
files), and `ChunkedFile`, a file with chunk hashes in ``chunks.bin``
(`handbook.bundle.chunks`), of which each chunk is read and checked when first needed.
Its chunks come from a `handbook.bundle.sources.ChunkSource`: a local folder's open file
(`handbook.bundle.tree.TreeChunks`) or HTTP ranges of a remote one
(`handbook.bundle.remote_chunks`). A chunk's bytes are put into the reader's own memory
(an anonymous map, whose pages cost nothing until written) and hashed there; only then
are they marked verified, and only then may the source keep them (a remote reader's
cache). Nothing is ever used from the file's own pages, so a file changed on disk after
a chunk was checked cannot change what the reader sees, and bytes of a chunk not yet
needed are zeros in the map, never unverified bytes of the file.
"""

from __future__ import annotations

import hashlib
import mmap
import threading
import weakref
from collections.abc import Callable
from typing import NoReturn

from ..errors import BundleError
from .chunks import Chunked
from .sources import ChunkSource


class Whole:
    """A file verified whole: every range of it is."""

    def __init__(self, data: bytes) -> None:
        self.data = self.buffer = data
        self.view = memoryview(data)

    def __len__(self) -> int:
        return len(self.data)

    def need(self, start: int, end: int) -> None:
        """Nothing to do: every byte was verified."""

    def __getitem__(self, span: slice) -> bytes:
        return self.data[span]


class ChunkedFile:
    """A listed file with chunk hashes, each chunk taken from `source` and verified when
    a range first needs it; `report` hears of every refusal (the bundle's integrity
    state)."""

    def __init__(
        self,
        source: ChunkSource,
        name: str,
        chunked: Chunked,
        report: Callable[[BundleError], None] = lambda exc: None,
    ) -> None:
        self.name, self.chunked, self._report = name, chunked, report
        self._source = source
        """Read only under the lock; closed with this object."""
        self.close = weakref.finalize(self, source.close)
        self.buffer = mmap.mmap(-1, max(1, chunked.size))
        """The file's bytes where verified, zeros elsewhere (sliced, it gives bytes)."""
        self.view = memoryview(self.buffer)[: chunked.size]
        self._done = bytearray(len(chunked))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.chunked.size

    def need(self, start: int, end: int) -> None:
        """Verify the chunks that bytes `start` to `end` lie in (clipped to the file);
        a `BundleError` naming the file and byte range when one cannot be had or does
        not match (`HashMismatchError` for a mismatch)."""
        size = self.chunked.size
        start, end = max(0, start), min(end, size)
        if start >= end:
            return
        step = self.chunked.chunk_bytes
        first, last = start // step, (end - 1) // step + 1
        if self._done.find(0, first, last) < 0:
            return
        with self._lock:
            chunk = self._done.find(0, first, last)
            while 0 <= chunk < last:
                stop = self._done.find(1, chunk, last)
                stop = last if stop < 0 else stop
                self._verify(chunk, stop)
                chunk = self._done.find(0, stop, last)

    def _verify(self, first: int, last: int) -> None:
        """Have the source put chunks `first` to `last` (excluded) straight into the map,
        check each, and only then mark them verified and let the source keep them; on a
        failure the range is zeroed again, so no unverified byte stays in the map."""
        chunked = self.chunked
        start, end = chunked.span(first)[0], chunked.span(last - 1)[1]
        target = self.view[start:end]
        try:
            fresh = self._source.fill(first, last, target)
        except BundleError as exc:
            self._fail(exc, target)
        step = chunked.chunk_bytes
        for chunk in range(first, last):
            part = target[(chunk - first) * step : (chunk - first + 1) * step]
            if hashlib.sha256(part).digest() != chunked.digest(chunk):
                self._fail(self._source.mismatch(chunk, *chunked.span(chunk)), target)
        self._done[first:last] = b"\x01" * (last - first)
        for chunk in fresh:
            self._source.keep(chunk, target[(chunk - first) * step : (chunk - first + 1) * step])

    def _fail(self, exc: BundleError, read: memoryview) -> NoReturn:
        read[:] = bytes(len(read))
        self._report(exc)
        raise exc

    def __getitem__(self, span: slice) -> bytes:
        start, stop, _ = span.indices(self.chunked.size)
        self.need(start, stop)
        return bytes(self.view[span])

    def verify_all(self) -> None:
        """Every chunk, checked (what `handbook verify` does with chunk hashes)."""
        self.need(0, self.chunked.size)


Ranged = Whole | ChunkedFile
