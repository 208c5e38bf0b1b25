"""The bundle folder on disk, read without being fooled.

Files are opened relative to descriptors of their folders, opened once without
following links: a symlink anywhere inside the bundle is refused, not followed, and a
folder renamed or replaced after the bundle was opened cannot redirect a read. Reads
never take more than a file's listed size + 1 bytes, so a lying size is caught without
a huge allocation; one walk checks that exactly the listed files are there.

The content-addressed folders (`content/`, `resources/`) hold one file per doc: opening
does not list them (that would grow with the library), and no reader ever opens a file
there except by a name a verified catalog entry gives, checked against that entry's
sha256 and size. `check_content` lists them whole for `handbook verify`: exactly the
files the catalog refers to, each of its size.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import FormatError, HashMismatchError, MissingFileError, UnlistedFileError
from .chunks import Chunked
from .layout import CHUNKS, CONTENT_FOLDERS, MANIFEST
from .manifest import FileEntry

_CHUNK = 1 << 20


class Tree:
    """The bundle folder, held by descriptors opened once without following links; files
    are opened relative to their folder's descriptor. Reading a content file is then one
    `open` instead of one per path component, and a folder renamed or replaced after
    the bundle was opened cannot redirect a read."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: dict[str, int] = {}
        self._lock = threading.Lock()
        self._close = weakref.finalize(self, _close_all, self._folders)

    def folder(self, path: str) -> int:
        """The descriptor of folder `path` ("" for the root), opened on first use."""
        with self._lock:
            return self._folder(path)

    def _folder(self, path: str) -> int:
        fd = self._folders.get(path)
        if fd is None:
            if path:
                parent, _, leaf = path.rpartition("/")
                fd = os.open(
                    leaf, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._folder(parent)
                )
            else:
                fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
            self._folders[path] = fd
        return fd

    def open(self, name: str) -> int:
        """A descriptor for the regular file `name`; symlinks and special files are refused."""
        folder, _, leaf = name.rpartition("/")
        try:
            fd = os.open(
                leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.folder(folder)
            )
        except FileNotFoundError:
            raise MissingFileError(f"{name}: {_SAYS[_by_catalog(name)][2]} but missing") from None
        except OSError as exc:
            raise FormatError(
                f"{name}: cannot be opened safely ({exc.strerror}); symlinks are refused"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FormatError(f"{name}: not a regular file")
        return fd

    def read_verified(self, name: str, entry: FileEntry) -> bytes:
        """The file `name`, checked against `entry` (`handbook.bundle.sources`)."""
        return read_verified(self, name, entry)

    def chunks(self, name: str, chunked: Chunked) -> TreeChunks:
        """The file `name` read chunk by chunk (`handbook.bundle.sources`)."""
        return TreeChunks(self, name, chunked)


class TreeChunks:
    """A listed file of the folder as a `handbook.bundle.sources.ChunkSource`: opened once
    (no link followed; a file replaced later cannot redirect a read), its size checked
    against its chunk hashes now, each chunk read from the open file when asked for."""

    def __init__(self, tree: Tree, name: str, chunked: Chunked) -> None:
        self.name, self.chunked = name, chunked
        self._file = io.FileIO(tree.open(name), closefd=True)
        self.close = self._file.close
        size = os.fstat(self._file.fileno()).st_size
        if size != chunked.size:
            self._file.close()
            raise mismatch_size(name, size, chunked.size)

    def fill(self, first: int, last: int, target: memoryview) -> Sequence[int]:
        """Read the chunks into `target` in one read; nothing to keep (the folder has it)."""
        start = self.chunked.span(first)[0]
        self._file.seek(start)
        got = 0
        while got < len(target):
            count = self._file.readinto(target[got:])
            if not count:
                raise mismatch_size(self.name, start + got, self.chunked.size)
            got += count
        return ()

    def keep(self, chunk: int, data: memoryview) -> None:
        """Nothing to keep: the folder holds the file."""

    def mismatch(self, chunk: int, start: int, end: int) -> HashMismatchError:
        return HashMismatchError(
            f"{self.name}: chunk {chunk} (bytes {start:,} to {end:,}) does not match its "
            f"sha256 in {CHUNKS}; the file was changed since it was signed"
        )


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        os.close(fd)
    fds.clear()


def read(tree: Tree, name: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes: enough to tell that a file is too long. The file's
    size is looked at first, so a huge listed size never becomes a huge allocation."""
    with os.fdopen(tree.open(name), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return fh.read(min(size, limit) + 1)


def mismatch_size(name: str, observed: int, expected: int) -> HashMismatchError:
    more = "+" if observed > expected else ""
    return HashMismatchError(
        f"{name}: observed {observed:,}{more} bytes, {_lister(name)} lists {expected:,}"
    )


def read_verified(tree: Tree, name: str, entry: FileEntry) -> bytes:
    """The file `name`, of `entry`'s size and sha256 (the manifest's entry, or for a
    content file its catalog entry's); a `BundleError` naming the file otherwise."""
    data = read(tree, name, entry.bytes)
    if len(data) != entry.bytes:
        raise mismatch_size(name, len(data), entry.bytes)
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise HashMismatchError(
            f"{name}: observed sha256 {digest}, {_lister(name)} lists {entry.sha256}"
        )
    return data


def _by_catalog(name: str) -> bool:
    """Whether the catalog vouches for `name`'s size and hash (a content-addressed file),
    rather than the manifest."""
    return name.split("/", 1)[0] in CONTENT_FOLDERS


def _lister(name: str) -> str:
    return "the catalog" if _by_catalog(name) else "the manifest"


def hash_file(tree: Tree, name: str, entry: FileEntry) -> None:
    """Stream the file through sha256, reading at most its listed size + 1 bytes."""
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(tree.open(name), "rb") as fh:
        while size <= entry.bytes:
            chunk = fh.read(min(_CHUNK, entry.bytes + 1 - size))
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
    if size != entry.bytes:
        raise mismatch_size(name, size, entry.bytes)
    if digest.hexdigest() != entry.sha256:
        raise HashMismatchError(
            f"{name}: observed sha256 {digest.hexdigest()}, {_lister(name)} lists {entry.sha256}"
        )


def check_tree(tree: Tree, files: Mapping[str, FileEntry], sizes: bool) -> None:
    """One walk of the bundle folder, less the content-addressed folders: every listed
    file present and a regular file (not a link), of its listed size when `sizes`;
    nothing else there but `content/` and `resources/`, which must be folders, are
    opened (not listed) here and listed by `check_content`. Without `sizes` no file is
    stat'ed (sizes are then checked as each file is read)."""
    for folder, names in _expected(files).items():
        prefix = folder + "/" if folder else ""
        present = _present(tree, folder)
        if not folder:  # the content folders, when there, are checked by check_content
            addressed = {f"{name}/" for name in CONTENT_FOLDERS} & present.keys()
            names = names | addressed
        _check_names(prefix, names, present)
        if not folder:  # held open now: a folder swapped later cannot redirect a read
            for name in addressed:
                tree.folder(name.rstrip("/"))
        if sizes:
            _check_sizes(prefix, present, files)


def check_content(tree: Tree, files: Mapping[str, FileEntry]) -> None:
    """The content-addressed folders hold exactly `files` (every content and resource
    file the catalog refers to), each a regular file of its size: an unreferenced or
    misnamed file, a subfolder or a link there is refused. Folders are compared as sets
    of names, since `content/` holds one file per doc."""
    expected = _expected(files)
    root = _present(tree, "")
    for folder in CONTENT_FOLDERS:
        names = expected.get(folder, set())
        if f"{folder}/" not in root:
            if names:
                raise MissingFileError(f"{folder}/: a folder of referenced files, missing")
            continue
        present = _present(tree, folder)
        if not present:
            raise UnlistedFileError(f"{folder}/: an empty folder no doc refers to")
        _check_names(f"{folder}/", names, present, by_catalog=True)
        _check_sizes(f"{folder}/", present, files)


def _expected(files: Mapping[str, FileEntry]) -> dict[str, set[str]]:
    """Folder ("" for the root) -> the names `files` put in it, a folder's with a
    trailing `/`."""
    expected: dict[str, set[str]] = {"": {MANIFEST}}
    for path in files:
        folder, _, name = path.rpartition("/")
        expected.setdefault(folder, set()).add(name)
        while folder:  # every enclosing folder is expected in its parent
            parent, _, sub = folder.rpartition("/")
            names = expected.setdefault(parent, set())
            if sub + "/" in names:
                break
            names.add(sub + "/")
            folder = parent
    return expected


def _present(tree: Tree, folder: str) -> dict[str, os.DirEntry[str]]:
    """What `folder` holds, by name (a folder's with a trailing `/`); a folder that is
    missing, a link or no folder is refused."""
    try:
        with os.scandir(tree.folder(folder)) as it:
            return {
                entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name: entry
                for entry in it
            }
    except FileNotFoundError:
        raise MissingFileError(f"{folder}/: a folder of listed files, missing") from None
    except OSError as exc:  # not a folder, or a link to one: refused
        raise FormatError(
            f"{folder}/: cannot be opened as a folder ({exc.strerror}); symlinks are refused"
        ) from None


_SAYS = {
    False: (
        "a folder the manifest does not list",
        "not listed in the manifest",
        "listed in the manifest",
    ),
    True: (
        "a folder, where only files named by their sha256 belong",
        "referred to by no catalog entry (a content file no doc refers to, or misnamed)",
        "referred to by the catalog",
    ),
}
"""How a name out of place is reported: against the manifest, or (`by_catalog`) against
the catalog's references in a content-addressed folder."""


def _check_names(
    prefix: str,
    names: set[str],
    present: dict[str, os.DirEntry[str]],
    by_catalog: bool = False,
) -> None:
    """Exactly the listed `names` are `present`, each file a regular file."""
    folder, unlisted_file, listed = _SAYS[by_catalog]
    unlisted = present.keys() - names
    if unlisted:
        name = min(unlisted)
        what = folder if name.endswith("/") else f"present in the bundle but {unlisted_file}"
        raise UnlistedFileError(f"{prefix}{name}: {what}")
    missing = names - present.keys()
    if missing:
        raise MissingFileError(f"{prefix}{min(missing).rstrip('/')}: {listed} but missing")
    special = [
        n
        for n, entry in present.items()
        if not n.endswith("/") and not entry.is_file(follow_symlinks=False)
    ]
    if special:
        raise FormatError(
            f"{prefix}{min(special)}: not a regular file (a symlink or special file); symlinks are refused"
        )


def _check_sizes(
    prefix: str, present: dict[str, os.DirEntry[str]], files: Mapping[str, FileEntry]
) -> None:
    """Each file's size on disk is the one the manifest lists."""
    for name, entry in present.items():
        if name != MANIFEST and not name.endswith("/"):
            size, listed = entry.stat(follow_symlinks=False).st_size, files[prefix + name].bytes
            if size != listed:
                raise mismatch_size(prefix + name, size, listed)
