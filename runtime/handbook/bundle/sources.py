"""Where a bundle's files come from: one small protocol, two implementations.

`Bundle` reads every file through a `FileSource`, which hands out bytes only after
checking their size and sha256 against the signed manifest. A local folder is a
`handbook.bundle.tree.Tree` (read by descriptors, never following links); a remote bundle
opened lazily is a `handbook.bundle.remote.RemoteFiles` (each file downloaded on first use,
verified, and kept in a cache of files named by their digest). Neither hands out a
byte that did not match the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .manifest import Manifest


class FileSource(Protocol):
    """A bundle's listed files, each handed out verified."""

    @property
    def root(self) -> Path:
        """Where the verified files are held on disk: the bundle folder, or a remote
        bundle's digest cache."""

    def read_verified(self, manifest: Manifest, name: str) -> bytes:
        """The bytes of the listed file `name`, of its listed size and sha256; a
        `BundleError` subclass naming the file otherwise."""
