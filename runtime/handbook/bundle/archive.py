"""Bundle archives (``.tar.gz``): written deterministically by `handbook pack`, read here.

An archive is only a container: what counts is the bundle inside, which is verified
like any other after unpacking (`open_bundle` checks the signature and every hash). The
container is read within fixed budgets from its first byte: the stream is decompressed
a chunk at a time and read a header at a time (`handbook.bundle.tarstream`), and the manifest
comes first, so every later entry is checked against its listing before a byte of it is
read. A hostile archive costs at most its manifest in memory and, as the signature is
checked only afterwards, at most what that manifest lists on disk plus content-addressed
members, `MAX_TOTAL_BYTES` in all:

1. entry 1 is ``manifest.json``, at most `MAX_MANIFEST_BYTES`, parsed strictly; its
   listing may name at most `MAX_MEMBERS` files and `MAX_TOTAL_BYTES` bytes;
2. every later entry is a regular file or a folder with a safe path
   (`manifest.check_path`), appears once (case-folded), and is listed with exactly its
   listed size (a folder: holds a listed path), or is a content-addressed file
   (`content/<sha256>.md`, `resources/<sha256>`, which the manifest does not list),
   whose bytes must hash to its name as they are written; `MAX_MEMBERS` entries and
   `MAX_TOTAL_BYTES` bytes at the most;
3. every listed file is there at the end.

A listed file is therefore never written beyond its listed size, nothing beyond the
caps is written at all, and a refused archive leaves nothing behind. Whether each
content file is one the catalog refers to, of the size it gives, is then checked when
the unpacked bundle is verified or read, like any bundle folder.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..errors import FormatError, HashMismatchError, MissingFileError, UnlistedFileError
from .layout import CONTENT_FOLDERS, MANIFEST, addressed_sha
from .manifest import MAX_MANIFEST_BYTES, FileEntry, Manifest, check_path
from .tarstream import Entry, TarReader
from .trust import TrustPolicy

MAX_MEMBERS = 200_000
MAX_TOTAL_BYTES = 4 * 1024**3


def is_archive(path: str | os.PathLike[str]) -> bool:
    name = os.fspath(path)
    return name.endswith((".tar.gz", ".tgz")) and os.path.isfile(name)


def unpack(archive: str | os.PathLike[str], into: Path, trust: TrustPolicy | None = None) -> Path:
    """Extract the bundle in `archive` into the folder `into`, which must not exist yet;
    returns it. With `trust`, the manifest's signature is checked before anything but
    the manifest is written (an unsigned stranger's archive costs no disk). Raises a
    `BundleError` naming the archive and the entry, and then removes `into` again."""
    shown = os.fspath(archive)
    into.mkdir(parents=True)
    try:
        with gzip.open(archive, "rb") as stream:
            _extract(TarReader(stream, shown), into, shown, trust)
    except (OSError, EOFError, zlib.error) as exc:
        shutil.rmtree(into, ignore_errors=True)
        raise FormatError(f"{shown}: not a readable .tar.gz bundle archive ({exc})") from None
    except BaseException:
        shutil.rmtree(into, ignore_errors=True)
        raise
    return into


def check_caps(files: Mapping[str, FileEntry], shown: str) -> None:
    """Refuse a listing that an archive may not hold: the reader's caps, which `pack`
    checks too, so that it never writes an archive that readers refuse."""
    if len(files) + 1 > MAX_MEMBERS:
        raise FormatError(
            f"{shown}: {len(files) + 1:,} files with the manifest, "
            f"over the {MAX_MEMBERS:,} a bundle archive may have"
        )
    total = sum(entry.bytes for entry in files.values())
    if total > MAX_TOTAL_BYTES:
        raise FormatError(
            f"{shown}: the manifest lists {total:,} bytes, "
            f"over the {MAX_TOTAL_BYTES:,} a bundle archive may hold"
        )


def _extract(reader: TarReader, into: Path, shown: str, trust: TrustPolicy | None) -> None:
    first = reader.next()
    if first is None:
        raise FormatError(f"{shown}: the archive is empty; it must start with {MANIFEST}")
    if first.name != MANIFEST or first.folder:
        raise FormatError(
            f"{shown}: the archive starts with {first.name}, not {MANIFEST} "
            "(archives from `handbook pack` before the manifest came first must be packed again)"
        )
    if first.size > MAX_MANIFEST_BYTES:
        raise FormatError(
            f"{shown}: {MANIFEST} is {first.size:,} bytes, "
            f"over the {MAX_MANIFEST_BYTES:,} a manifest may have"
        )
    manifest_bytes = b"".join(reader.data(first))
    try:
        manifest = Manifest.from_bytes(manifest_bytes)
    except FormatError as exc:
        raise FormatError(f"{shown}: {exc}") from None
    if trust is not None:
        trust.check(manifest, shown)
    files = manifest.signed.files
    check_caps(files, shown)
    (into / MANIFEST).write_bytes(manifest_bytes)
    listing = _Listing(files, shown)
    while (entry := reader.next()) is not None:
        if entry.number > MAX_MEMBERS:
            raise FormatError(
                f"{shown}: entry {entry.number:,} ({entry.name}) is over "
                f"the {MAX_MEMBERS:,} a bundle archive may have"
            )
        listing.check(entry)
        target = into / entry.name
        if entry.folder:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with open(target, "xb") as out:
            for chunk in reader.data(entry):
                digest.update(chunk)
                out.write(chunk)
        named = addressed_sha(entry.name)
        if named is not None and digest.hexdigest() != named:
            raise HashMismatchError(
                f"{shown}: {entry.name} holds bytes of sha256 {digest.hexdigest()}, "
                "not the one it is named by"
            )
    listing.check_complete()


class _Listing:
    """What the manifest lets an archive hold, and what it has held so far: files by
    their case-folded names, folders by where they sit in the sorted listing (a folder
    is a prefix of a listed path, so two numbers name it, however long it is)."""

    def __init__(self, files: Mapping[str, FileEntry], shown: str) -> None:
        self._files = files
        self._sorted = sorted(files)
        self._shown = shown
        self._seen_files = {MANIFEST}
        self._seen_folders: set[tuple[int, int]] = set()
        self._addressed_bytes = sum(entry.bytes for entry in files.values())
        """Bytes the archive may write so far: the listed files', then each content file's."""

    def check(self, entry: Entry) -> None:
        shown, name = self._shown, entry.name
        problem = check_path(name)
        if problem:
            raise FormatError(f"{shown}: entry {name!r} {problem}")
        if entry.folder:
            self._check_folder(name)
            return
        folded = name.casefold()
        if folded in self._seen_files:
            raise FormatError(f"{shown}: {name} appears twice in the archive")
        self._seen_files.add(folded)
        listed = self._files.get(name)
        if listed is None and addressed_sha(name) is not None:
            self._addressed_bytes += entry.size
            if self._addressed_bytes > MAX_TOTAL_BYTES:
                raise FormatError(
                    f"{shown}: {name} takes the archive over "
                    f"the {MAX_TOTAL_BYTES:,} bytes a bundle archive may hold"
                )
            return
        if listed is None:
            raise UnlistedFileError(f"{shown}: {name} is not listed in the manifest")
        if entry.size != listed.bytes:
            raise HashMismatchError(
                f"{shown}: {name} is {entry.size:,} bytes in the archive, "
                f"{listed.bytes:,} in the manifest"
            )

    def _check_folder(self, name: str) -> None:
        if name in CONTENT_FOLDERS:  # folders of content-addressed files, never listed
            if name in self._seen_files:
                raise FormatError(f"{self._shown}: {name} appears twice in the archive")
            self._seen_files.add(name)
            return
        prefix = name + "/"
        at = bisect.bisect_left(self._sorted, prefix)
        if at == len(self._sorted) or not self._sorted[at].startswith(prefix):
            raise UnlistedFileError(
                f"{self._shown}: folder {name} holds no file the manifest lists"
            )
        if (at, len(name)) in self._seen_folders:
            raise FormatError(f"{self._shown}: {name} appears twice in the archive")
        self._seen_folders.add((at, len(name)))

    def check_complete(self) -> None:
        for name in self._files:
            if name.casefold() not in self._seen_files:
                raise MissingFileError(
                    f"{self._shown}: {name} is listed in the manifest but not in the archive"
                )


@contextmanager
def unpacked(path: str | os.PathLike[str], trust: TrustPolicy | None = None) -> Iterator[Path]:
    """The bundle folder at `path`, or the bundle in the archive at `path` unpacked
    into a temporary folder for the duration of the block (its signature checked
    against `trust` first, when given)."""
    if not is_archive(path):
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="handbook-bundle-") as tmp:
        yield unpack(path, Path(tmp) / "bundle", trust)
