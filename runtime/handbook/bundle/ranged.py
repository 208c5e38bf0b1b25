"""A listed file read by ranges, each range verified before a byte of it is used.

`Bundle.ranged` hands out a `Ranged` file: `need(start, end)` makes sure those bytes are
verified, `view` is the whole file as a memoryview (only the ranges already needed hold
its bytes), and slicing gives a range's verified bytes. Readers of large files (the
search file's arrays, one doc's entry in the catalog, one doc's reviews) call `need`
for what they read.

Two kinds: `Whole`, the file's bytes already verified whole against the manifest (every
`need` is free: a file without chunk hashes, or one read from a remote bundle), and
`ChunkedFile`, a local file with chunk hashes in ``chunks.bin``
(`handbook.bundle.chunks`), of which each chunk is read and checked when first needed.
A chunk's bytes are read into the reader's own memory (an anonymous map, whose pages cost
nothing until written) and hashed there; only then are they marked verified. Nothing is
ever used from the file's own pages, so a file changed on disk after a chunk was checked
cannot change what the reader sees, and bytes of a chunk not yet needed are zeros in the
map, never unverified bytes of the file.
"""

from __future__ import annotations

import hashlib
import io
import mmap
import os
import threading
import weakref
from collections.abc import Callable

from ..errors import BundleError, HashMismatchError
from .chunks import Chunked
from .layout import CHUNKS
from .tree import Tree, mismatch_size


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
    """A local listed file with chunk hashes, each chunk verified when a range first
    needs it. The file is opened once (no link followed) and its size checked against
    the manifest's now; `report` hears of every refusal (the bundle's integrity state)."""

    def __init__(
        self,
        tree: Tree,
        name: str,
        chunked: Chunked,
        report: Callable[[BundleError], None] = lambda exc: None,
    ) -> None:
        self.name, self.chunked, self._report = name, chunked, report
        self._file = io.FileIO(tree.open(name), closefd=True)
        """Held open (a file replaced later cannot redirect a read), read only under the
        lock: a seek, then reads into the map; closed with this object."""
        self.close = weakref.finalize(self, self._file.close)
        size = os.fstat(self._file.fileno()).st_size
        if size != chunked.size:
            self._fail(mismatch_size(name, size, chunked.size))
        self.buffer = mmap.mmap(-1, max(1, chunked.size))
        """The file's bytes where verified, zeros elsewhere (sliced, it gives bytes)."""
        self.view = memoryview(self.buffer)[: chunked.size]
        self._done = bytearray(len(chunked))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.chunked.size

    def need(self, start: int, end: int) -> None:
        """Verify the chunks that bytes `start` to `end` lie in (clipped to the file);
        a `HashMismatchError` naming the file and chunk when one does not match."""
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
        """Read chunks `first` to `last` (excluded) straight into the map (one read, no
        copy), check each, and only then mark them verified; on a mismatch the range is
        zeroed again, so no unverified byte stays in the map."""
        chunked = self.chunked
        start, end = chunked.span(first)[0], chunked.span(last - 1)[1]
        target = self.view[start:end]
        got = _read_into(self._file, start, target)
        if got != end - start:
            self._fail(mismatch_size(self.name, start + got, chunked.size), target)
        step = chunked.chunk_bytes
        for chunk in range(first, last):
            part = target[(chunk - first) * step : (chunk - first + 1) * step]
            if hashlib.sha256(part).digest() != chunked.digest(chunk):
                lo, hi = chunked.span(chunk)
                self._fail(
                    HashMismatchError(
                        f"{self.name}: chunk {chunk} (bytes {lo:,} to {hi:,}) does not match "
                        f"its sha256 in {CHUNKS}; the file was changed since it was signed"
                    ),
                    target,
                )
        self._done[first:last] = b"\x01" * (last - first)

    def _fail(self, exc: BundleError, read: memoryview | None = None) -> None:
        if read is not None:
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


def _read_into(file: io.FileIO, at: int, target: memoryview) -> int:
    """Fill `target` with the file's bytes from `at`; how many there were (fewer at the
    end of a file cut short)."""
    file.seek(at)
    got = 0
    while got < len(target):
        count = file.readinto(target[got:])
        if not count:
            break
        got += count
    return got
