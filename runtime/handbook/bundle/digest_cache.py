"""The download cache of remote bundles on disk: files named by their sha256
(``objects/``), the verified chunks of files read by ranges (``chunks/<sha256>``, each
chunk written at its place in a sparse file of the file's size), and bundle folders
assembled from them for offline use (``bundles/<manifest sha256>``).

The cache is a folder anyone with access may change, so nothing in it is trusted: a
file is re-hashed on every use, and an assembled folder is verified like any local
bundle before it is opened (`handbook.bundle.remote`). Every write is made beside its
target and renamed into place, and leaves nothing behind: a failed write removes its
temporary file or folder, and a folder replaced is first moved aside (never emptied
under a reader), then removed once the new one is in place. A reader holding its files
open keeps them; one reading by path reads the new folder, built for the same manifest.
A chunk file is the exception: chunks are written into it in place, as they are
verified, and each is hashed again when read (bytes never written read as zeros, which
match no chunk's hash), so a write cut short or two processes writing the same chunk
cost at most a download.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

from .layout import MANIFEST
from .manifest import FileEntry

_ASIDE = ".old-"
"""The prefix of a folder moved aside, removed once its replacement is in place."""


def default_cache_dir() -> Path:
    base = os.environ.get("HANDBOOK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "handbook"
    )
    return Path(base)


class DigestCache:
    """Files by sha256 under `root/objects`, chunk files under `root/chunks`, bundle
    folders under `root/bundles`."""

    def __init__(self, root: Path) -> None:
        self.objects = root / "objects"
        self.chunks = root / "chunks"
        self.bundles = root / "bundles"
        self.objects.mkdir(parents=True, exist_ok=True)

    def read(self, entry: FileEntry) -> bytes | None:
        """The cached file for `entry` when it is there and still matches (re-hashed on
        every use); None otherwise."""
        fd = self.open(entry)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(entry.bytes + 1)
        if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
            return None
        return data

    def open(self, entry: FileEntry) -> int | None:
        """A descriptor of the cached file for `entry` when it is a regular file of
        `entry`'s size (not a link), its bytes unchecked; None otherwise."""
        try:
            fd = os.open(self.objects / entry.sha256, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != entry.bytes:
            os.close(fd)
            return None
        return fd

    def chunk_file(self, entry: FileEntry) -> int | None:
        """A read-write descriptor of the chunk file for `entry`, its bytes unchecked:
        the one there when it is a regular file of `entry`'s size with no other link
        (never written through a link to some other file, never truncated), else a new
        sparse one of that size renamed into its place. None when neither can be had (a
        read-only cache): chunks are then not kept."""
        path = self.chunks / entry.sha256
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            fd = -1
        if fd >= 0:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_size == entry.bytes:
                return fd
            os.close(fd)
        try:
            self.chunks.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.chunks, prefix=".tmp-")
        except OSError:
            return None
        try:
            os.ftruncate(fd, entry.bytes)
            os.replace(tmp, path)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return None
        return fd

    def store(self, sha256: str, data: bytes) -> None:
        """Keep `data` (already verified) as `objects/<sha256>`."""
        fd, tmp = tempfile.mkstemp(dir=self.objects, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.objects / sha256)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def folder(self, digest: str) -> Path:
        """Where the bundle whose manifest hashes to `digest` is assembled."""
        return self.bundles / digest

    def assemble(self, digest: str, manifest: bytes, files: Mapping[str, FileEntry]) -> Path:
        """The bundle folder for this manifest, built from the cached files beside its
        place and renamed into it; a folder already there is moved aside first, and
        every folder moved aside is removed once the new one is in place."""
        folder = self.folder(digest)
        if folder.exists() or folder.is_symlink():
            os.replace(folder, folder.with_name(f"{_ASIDE}{uuid.uuid4().hex}"))
        tmp = folder.with_name(f".tmp-{uuid.uuid4().hex}")
        tmp.mkdir(parents=True)
        try:
            for name, entry in files.items():
                target = tmp / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.objects / entry.sha256, target)
            (tmp / MANIFEST).write_bytes(manifest)
            os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for aside in self.bundles.glob(f"{_ASIDE}*"):
            _remove(aside)
        return folder


def _remove(path: Path) -> None:
    """Remove a folder moved aside (a link is unlinked, never followed); one that cannot
    be removed yet, still open elsewhere, is tried again at the next assembly."""
    if path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
