"""Where a bundle's files come from: one small protocol, two implementations.

`Bundle` reads every file through a `FileSource`, which hands out bytes only after
checking their size and sha256 against the signed manifest (or, for a content
file, against the verified catalog entry that names it). A local folder is a
`handbook.bundle.tree.Tree` (read by descriptors, never following links); a remote bundle
opened lazily is a `handbook.bundle.remote.RemoteFiles` (each file downloaded on first use,
verified, and kept in a cache of files named by their digest). Neither hands out a
byte that did not match the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .manifest import FileEntry


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
