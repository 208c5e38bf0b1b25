"""Where a bundle's files come from: one small protocol, two implementations.

`Bundle` reads every file through a `FileSource`, which hands out bytes only after
checking their size and sha256 against the signed manifest (or, for a content
file, against the verified catalog entry that names it). A local folder is a
`handbook.bundle.tree.Tree` (read by descriptors, never following links); a remote bundle
opened lazily is a `handbook.bundle.remote.RemoteFiles` (each file downloaded on first use,
verified, and kept in a cache of files named by their digest). Neither hands out a
byte that did not match the manifest.

A file with chunk hashes in ``chunks.bin`` can also be read chunk by chunk: `chunks`
gives a `ChunkSource` (the open file of a folder, or HTTP ranges of a remote file), and
`handbook.bundle.ranged.ChunkedFile` checks each chunk it puts in before a byte is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..errors import BundleError
from .chunks import Chunked
from .manifest import FileEntry


class ChunkSource(Protocol):
    """Where one file's chunks come from, unverified: `ChunkedFile` hashes each one
    against ``chunks.bin`` before using it, and only then hands it to `keep`."""

    def fill(self, first: int, last: int, target: memoryview) -> Sequence[int]:
        """Put chunks `first` to `last` (excluded) into `target`, all their bytes; the
        chunks to `keep` once verified. A `BundleError` naming the file and byte range
        when they cannot all be had."""

    def keep(self, chunk: int, data: memoryview) -> None:
        """`data`, chunk `chunk`, has been verified (a source may cache it now)."""

    def mismatch(self, chunk: int, start: int, end: int) -> BundleError:
        """The error for chunk `chunk` (bytes `start` to `end`) that failed its hash."""

    def close(self) -> None:
        """Release what the source holds open."""


class FileSource(Protocol):
    """A bundle's listed files, each handed out verified."""

    @property
    def root(self) -> Path:
        """Where the verified files are held on disk: the bundle folder, or a remote
        bundle's digest cache."""

    def read_verified(self, name: str, entry: FileEntry) -> bytes:
        """The bytes of the file `name`, of `entry`'s size and sha256 (what the manifest
        lists, or for a content-addressed file what its verified catalog entry gives); a
        `BundleError` subclass naming the file otherwise."""

    def chunks(self, name: str, chunked: Chunked) -> ChunkSource | None:
        """The listed file `name` to read by chunks, `chunked` its verified chunk hashes;
        None when it must be read whole (`read_verified`). A `BundleError` naming the
        file when it is already known to be wrong (a local file of another size)."""
