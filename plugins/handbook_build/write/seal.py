"""Sealing and publishing a bundle: hash every file as it is written, sign the manifest,
verify the result with the runtime's own verifier, and swap it into place atomically.

Publishing scheme. ``OUT`` (default ``build/bundle``) is a symlink to a complete,
immutable version directory ``OUT.versions/<first 16 hex of the manifest's sha256>``:

1. all files are written into ``OUT.versions/.tmp-<random>/``, manifest last, and
   flushed to disk;
2. that directory is opened and verified exactly as a reader would (signature, every
   hash, no unlisted file); a failure deletes it and leaves ``OUT`` untouched;
3. it is renamed to its version name (an identical earlier build is simply reused);
4. a new symlink is created beside ``OUT`` and renamed over it with `os.replace`, the
   one atomic step: a reader resolves ``OUT`` either to the old version or the new;
5. versions other than the new and the previous one, and leftover ``.tmp-*`` folders of
   killed builds, are removed.

A killed build therefore leaves at worst a ``.tmp-*`` folder, which the next build
removes. Readers resolve ``OUT`` once (the runtime does) and read every file from the
resolved directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.chunks import CHUNK_BYTES, CHUNKED_ABOVE, Chunked, ChunkHasher
from handbook.bundle.chunks import dumps as chunk_file
from handbook.bundle.layout import CHUNKS, MANIFEST, is_content
from handbook.bundle.local import Bundle, open_bundle
from handbook.bundle.manifest import FileEntry, Manifest, Signed, check_path
from handbook.bundle.signing import MANIFEST_TAG, PublicKey, public_key_of, sign
from handbook.errors import BundleError

from ..errors import PublishError


class _HashingFile:
    """A file being written, hashed whole and by chunks (`handbook.bundle.chunks`)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh, self.hasher = fh, ChunkHasher(CHUNK_BYTES)

    def write(self, data: bytes | memoryview) -> int:
        self.hasher.update(data)
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()


class BundleWriter:
    """Writes a bundle's files into a fresh directory, recording each file's sha256 and
    size as it goes, so nothing is read back to be hashed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, FileEntry] = {}
        self.chunked: dict[str, Chunked] = {}
        """The chunk hashes of every file written, for chunks.bin."""
        root.mkdir()

    def write(self, path: str, data: bytes) -> None:
        with self.stream(path) as fh:
            fh.write(data)

    @contextmanager
    def stream(self, path: str) -> Iterator[_HashingFile]:
        problem = check_path(path)
        if problem or path in self.files or path == MANIFEST:
            raise ValueError(f"bundle path {path!r} {problem or 'is taken'}")
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as fh:
            hashing = _HashingFile(fh)
            yield hashing
        chunked = hashing.hasher.chunked()
        self.files[path] = FileEntry(chunked.sha256, chunked.size)
        if not is_content(path) and chunked.size > CHUNKED_ABOVE:
            self.chunked[path] = chunked

    def seal(
        self,
        *,
        library: str,
        version: str,
        built_at: str,
        docs: int,
        key: Ed25519PrivateKey | None,
        expires: str | None = None,
        audience: str | None = None,
    ) -> Manifest:
        """Sign the list of written files and write the manifest, last. Content and
        resource files are left out: the catalog names each by its sha256 and gives its
        size, so the manifest stays a handful of entries however many docs there are.
        The large files' chunk hashes go into chunks.bin first, listed like the others."""
        if self.chunked:
            self.write(CHUNKS, chunk_file(self.chunked))
        signed = Signed(
            library=library,
            version=version,
            built_at=built_at,
            files={p: e for p, e in sorted(self.files.items()) if not is_content(p)},
            docs=docs,
            expires=expires,
            audience=audience,
        )
        signatures = (sign(key, MANIFEST_TAG, signed.to_dict()),) if key is not None else ()
        manifest = Manifest(signed, signatures)
        (self.root / MANIFEST).write_bytes(manifest.to_bytes())
        # One flush of everything written, instead of an fsync per file (thousands of
        # content files): the data is on disk before the rename that publishes it.
        os.sync()
        return manifest


def versions_dir(out: Path) -> Path:
    return out.parent / f"{out.name}.versions"


@contextmanager
def staging(out: Path) -> Iterator[BundleWriter]:
    """A writer into a temporary folder beside `out`; removed if the block fails."""
    versions = versions_dir(Path(os.path.abspath(out)))
    versions.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(versions)
    tmp = versions / f".tmp-{uuid.uuid4().hex}"
    try:
        yield BundleWriter(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def publish(writer: BundleWriter, out: Path, key: Ed25519PrivateKey | None) -> Bundle:
    """Verify the sealed folder as a reader would, then make it what `out` points at."""
    out = Path(os.path.abspath(out))
    versions, tmp = versions_dir(out), writer.root
    try:
        keys = [public_key_of(key)] if key is not None else []
        bundle = open_bundle(
            tmp, keys, allow_unsigned=key is None, check_expires=False
        )  # readers check expiry
        manifest_sha = hashlib.sha256((tmp / MANIFEST).read_bytes()).hexdigest()
        final = versions / manifest_sha[:16]
        if final.exists() and _intact(final, tmp, keys, key is None):
            shutil.rmtree(tmp)  # an identical earlier build, checked whole, is reused
            bundle = open_bundle(
                final, keys, allow_unsigned=key is None, check_expires=False, hash_all=False
            )
        else:
            if (
                final.exists()
            ):  # left half-deleted by a killed prune, or altered: set aside, cleaned later
                os.rename(final, versions / f".tmp-{uuid.uuid4().hex}")
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    previous = _adopt_existing(out, versions)
    _point(out, final)
    keep = {final.name, previous}
    if previous == final.name:  # the same version again: keep the one before it too
        older = sorted(
            (p for p in versions.iterdir() if p.name != final.name and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime,
        )
        keep |= {older[-1].name} if older else set()
    _prune(versions, keep=keep)
    bundle.path = final
    return bundle


def published(folders: Iterable[Path]) -> dict[Path, Path | None]:
    """Each of `folders` -> the version folder it points at now (None: no bundle there
    yet), taken before a build so that `roll_back` can restore it."""
    return {
        folder: Path(os.path.realpath(folder)) if Path(folder).is_symlink() else None
        for folder in folders
    }


def roll_back(previous: dict[Path, Path | None]) -> None:
    """Point each folder back at the version `published` found there (every publish
    keeps the version before it), or remove the link when there was none: undoes the
    publishing of a build that failed after it. A folder whose old version is gone is
    left as it is."""
    for folder, version in previous.items():
        out = Path(os.path.abspath(folder))
        if version is None:
            if out.is_symlink():
                out.unlink()
        elif version.is_dir():
            _point(out, version)


def _intact(final: Path, fresh: Path, keys: list[PublicKey], unsigned: bool) -> bool:
    """Whether the existing version folder `final` is whole and holds what `fresh` holds."""
    try:
        open_bundle(final, keys, allow_unsigned=unsigned, check_expires=False)
        return (final / MANIFEST).read_bytes() == (fresh / MANIFEST).read_bytes()
    except (BundleError, OSError):
        return False


def _adopt_existing(out: Path, versions: Path) -> str | None:
    """The version `out` points at now. A plain bundle directory left by another tool is
    moved into the versions folder first (the only non-atomic case, once)."""
    if out.is_symlink():
        return Path(os.readlink(out)).name
    if not out.exists():
        return None
    if out.is_dir() and (out / MANIFEST).is_file():
        name = f"adopted-{uuid.uuid4().hex[:8]}"
        os.rename(out, versions / name)
        return name
    raise PublishError(f"{out} exists and is not a bundle; remove it or choose another --out")


def _point(out: Path, target: Path) -> None:
    link = out.parent / f".{out.name}.link-{uuid.uuid4().hex}"
    os.symlink(os.path.relpath(target, out.parent), link)
    try:
        os.replace(link, out)
    except BaseException:
        link.unlink(missing_ok=True)
        raise


def _clean_leftovers(versions: Path) -> None:
    for leftover in versions.glob(".tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for link in versions.parent.glob(".*.link-*"):
        if link.is_symlink():
            link.unlink(missing_ok=True)


def _prune(versions: Path, keep: set[str | None]) -> None:
    """Keep the new version and the previous one (readers may still be on it)."""
    for entry in versions.iterdir():
        if entry.name not in keep and not entry.name.startswith("."):
            shutil.rmtree(entry, ignore_errors=True)
