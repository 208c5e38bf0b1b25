"""Opening a bundle: every byte is checked before anything is parsed or served.

The order is fixed, as in TUF clients: read the manifest's bytes (size cap first) →
parse them strictly → verify the signature over the signed payload → read every listed
file (never more than its listed size + 1 bytes) and compare size and sha256 → refuse
any file the manifest does not list → only then parse the catalog and check that it
agrees with the manifest and the content files. Unverified data never leaves this
module: files are handed out only through `Bundle.read`, which checks them first and
keeps the verified bytes in memory, so nothing is re-read from disk unverified.

Paths are opened component by component with ``O_NOFOLLOW``: a symlink anywhere inside
the bundle is refused, not followed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from .catalog import CATALOG, Catalog
from .errors import FormatError, HashMismatchError, MissingFileError, UnlistedFileError
from .manifest import MANIFEST, MAX_MANIFEST_BYTES, FileEntry, Manifest
from .signing import PublicKey, trusted_keys, verify

_CHUNK = 1 << 20


class Bundle:
    """A verified bundle. The manifest and catalog are parsed; other files are read on
    demand through `read`, which checks size and hash before returning (and keeps the
    verified bytes), so nothing unverified is ever handed out."""

    def __init__(self, path: Path, manifest: Manifest, catalog: Catalog, signed_by: Sequence[str], cache: dict[str, bytes]) -> None:
        self.path = path
        self.manifest = manifest
        self.catalog = catalog
        self.signed_by = tuple(signed_by)
        """Key ids of the trusted keys whose signatures verified; empty when unsigned."""
        self._cache = cache

    @property
    def signature_state(self) -> str:
        if self.signed_by:
            return "verified"
        return "unsigned" if not self.manifest.signatures else "not verified (no trusted key)"

    def read(self, name: str) -> bytes:
        """The verified bytes of a listed file."""
        data = self._cache.get(name)
        if data is None:
            data = self._cache[name] = _read_verified(self.path, self.manifest, name)
        return data


def open_bundle(
    path: str | os.PathLike[str],
    keys: Iterable[str | PublicKey] = (),
    *,
    allow_unsigned: bool = False,
    threshold: int = 1,
    hash_all: bool = True,
) -> Bundle:
    """Verify the bundle at `path` and return it; raise a `BundleError` subclass naming
    the cause otherwise. Trusted keys come from `keys` and $HANDBOOK_TRUSTED_KEYS.

    With `allow_unsigned`, an unsigned bundle is accepted, and a signed one is still
    verified when trusted keys are given. Every file's presence and size are always
    checked; with `hash_all` (the default) every file is hashed now, otherwise files are
    hashed when first read."""
    root = Path(os.path.realpath(path))
    if not root.is_dir():
        raise MissingFileError(f"{path}: no bundle directory here")
    manifest = Manifest.from_bytes(_read(root, MANIFEST, MAX_MANIFEST_BYTES))
    signed = manifest.signed
    trusted = trusted_keys(keys)
    signed_by: list[str] = []
    if not (allow_unsigned and (not manifest.signatures or not trusted)):
        signed_by = verify(manifest.signatures, signed.to_dict(), trusted, threshold=threshold)
    for name, entry in sorted(signed.files.items()):
        if hash_all:
            _hash_file(root, name, entry)
        else:
            _check_size(root, name, entry)
    _refuse_unlisted(root, signed.files.keys())
    catalog_bytes = _read_verified(root, manifest, CATALOG) if CATALOG in signed.files else b""
    catalog = _parse_catalog(catalog_bytes, CATALOG in signed.files)
    check_agreement(manifest, catalog)
    return Bundle(root, manifest, catalog, signed_by, {CATALOG: catalog_bytes})


def _open(root: Path, name: str) -> int:
    """A descriptor for `name`, opened component by component without following links."""
    parts = name.split("/")
    fds = []
    try:
        current = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        fds.append(current)
        for part in parts[:-1]:
            current = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
            fds.append(current)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=current)
    except FileNotFoundError:
        raise MissingFileError(f"{name}: listed in the manifest but missing") from None
    except OSError as exc:
        raise FormatError(f"{name}: cannot be opened safely ({exc.strerror}); symlinks are refused") from None
    finally:
        for opened in fds:
            os.close(opened)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FormatError(f"{name}: not a regular file")
    return fd


def _read(root: Path, name: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes: enough to tell that a file is too long."""
    with os.fdopen(_open(root, name), "rb") as fh:
        return fh.read(limit + 1)


def _mismatch_size(name: str, observed: int, expected: int) -> HashMismatchError:
    more = "+" if observed > expected else ""
    return HashMismatchError(f"{name}: observed {observed:,}{more} bytes, the manifest lists {expected:,}")


def _read_verified(root: Path, manifest: Manifest, name: str) -> bytes:
    entry = manifest.signed.files.get(name)
    if entry is None:
        raise MissingFileError(f"{name}: not listed in the manifest")
    data = _read(root, name, entry.bytes)
    if len(data) != entry.bytes:
        raise _mismatch_size(name, len(data), entry.bytes)
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise HashMismatchError(f"{name}: observed sha256 {digest}, the manifest lists {entry.sha256}")
    return data


def _hash_file(root: Path, name: str, entry: FileEntry) -> None:
    """Stream the file through sha256, reading at most its listed size + 1 bytes."""
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(_open(root, name), "rb") as fh:
        while size <= entry.bytes:
            chunk = fh.read(min(_CHUNK, entry.bytes + 1 - size))
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
    if size != entry.bytes:
        raise _mismatch_size(name, size, entry.bytes)
    if digest.hexdigest() != entry.sha256:
        raise HashMismatchError(f"{name}: observed sha256 {digest.hexdigest()}, the manifest lists {entry.sha256}")


def _check_size(root: Path, name: str, entry: FileEntry) -> None:
    fd = _open(root, name)
    try:
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size != entry.bytes:
        raise _mismatch_size(name, size, entry.bytes)


def _refuse_unlisted(root: Path, listed: Iterable[str]) -> None:
    allowed = {MANIFEST, *listed}
    parents = {"/".join(p.split("/")[:i]) for p in allowed for i in range(1, p.count("/") + 1)}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            if prefix + name not in allowed:
                raise UnlistedFileError(f"{prefix}{name}: present in the bundle but not listed in the manifest")
        for name in sorted(dirnames):
            if prefix + name not in parents and not os.path.islink(os.path.join(dirpath, name)):
                raise UnlistedFileError(f"{prefix}{name}/: a folder the manifest does not list")


def _parse_catalog(data: bytes, listed: bool) -> Catalog:
    if not listed:
        raise FormatError(f"{CATALOG}: not listed in the manifest")
    try:
        return Catalog.from_dict(json.loads(data))
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{CATALOG}: not valid JSON ({exc})") from None


def check_agreement(manifest: Manifest, catalog: Catalog) -> None:
    """The catalog must describe exactly the listed content files, and name the same
    library and version as the signed manifest."""
    signed = manifest.signed
    lib = catalog.library
    if (lib.name, lib.version) != (signed.library, signed.version):
        raise FormatError(f"{CATALOG}: describes {lib.name} {lib.version}, the manifest {signed.library} {signed.version}")
    if len(catalog.docs) != signed.docs:
        raise FormatError(f"{CATALOG}: lists {len(catalog.docs)} docs, the manifest {signed.docs}")
    seen: set[str] = set()
    referenced: set[str] = set()
    for doc in catalog.docs:
        if doc.id in seen:
            raise FormatError(f"{CATALOG}: doc id {doc.id!r} appears twice")
        seen.add(doc.id)
        entry = signed.files.get(doc.content)
        if entry is None:
            raise FormatError(f"{CATALOG}: doc {doc.id!r} points at {doc.content}, which the manifest does not list")
        if entry.sha256 != doc.sha256 or entry.bytes != doc.bytes:
            raise FormatError(f"{CATALOG}: doc {doc.id!r} does not match its content file {doc.content}")
        if any(not 0 <= s.start <= s.end <= doc.bytes for s in doc.sections):
            raise FormatError(f"{CATALOG}: doc {doc.id!r} has a section outside its content")
        referenced.add(doc.content)
    orphans = sorted(p for p in signed.files if p.startswith("content/") and p not in referenced)
    if orphans:
        raise FormatError(f"{orphans[0]}: a content file no doc refers to")


def describe(bundle: Bundle) -> Sequence[str]:
    """Lines for people: what was verified."""
    signed = bundle.manifest.signed
    return [
        f"library   {signed.library} {signed.version} (built {signed.built_at})",
        f"docs      {signed.docs}",
        f"files     {len(signed.files) + 1} ({sum(f.bytes for f in signed.files.values()):,} bytes), every hash verified",
        f"signature {bundle.signature_state}" + (f" by {', '.join(k[:16] for k in bundle.signed_by)}" if bundle.signed_by else ""),
    ]
