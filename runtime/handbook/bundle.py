"""Opening a bundle: every byte is checked before anything is parsed or served.

The order is fixed, as in TUF clients: read the manifest's bytes (size cap first) →
parse them strictly → verify the signature over the signed payload → read every listed
file (never more than its listed size + 1 bytes) and compare size and sha256 → refuse
any file the manifest does not list → only then parse the catalog and check that it
agrees with the manifest and the content files. Unverified data never leaves this
module: files are handed out only through `Bundle.read`, which checks them first and
keeps the verified bytes in memory, so nothing is re-read from disk unverified. How
the folder itself is read without following links is `handbook.tree`'s.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

from .catalog import Catalog
from .errors import ExpiredError, FormatError, HashMismatchError, MissingFileError
from .layout import CATALOG, CONTENT_DIR, MANIFEST, is_content
from .manifest import MAX_MANIFEST_BYTES, Manifest, check_path, utc_seconds
from .signing import PublicKey
from .tree import Tree, check_tree, hash_file, read, read_verified
from .trust import TrustPolicy

CONTENT_CACHE_BYTES = 16 * 1024 * 1024
"""Verified content kept in memory; beyond it, least recently used files are re-read
(and re-verified) from disk when asked for again."""


class Bundle:
    """A verified bundle. Files are handed out only through `read`, which checks size and
    hash first; the catalog is parsed on first use. Core files stay in memory once read,
    content files in a bounded cache, so nothing unverified is ever handed out."""

    def __init__(
        self, tree: Tree, manifest: Manifest, signed_by: Sequence[str], manifest_bytes: bytes = b""
    ) -> None:
        self.tree = tree
        self.path = tree.root
        self.manifest = manifest
        self.signed_by = tuple(signed_by)
        """Key ids of the trusted keys whose signatures verified; empty when unsigned."""
        self._core: dict[str, bytes] = {MANIFEST: manifest_bytes} if manifest_bytes else {}
        """Verified files kept for good; the manifest is its bytes as verified at open."""
        self._content: OrderedDict[str, bytes] = OrderedDict()
        self._content_bytes = 0
        self._catalog: Catalog | None = None
        self._lock = threading.Lock()
        self.integrity_error: str | None = None
        """The last file refused when read (hashed lazily), for `status` to report."""

    @property
    def signature_state(self) -> str:
        if self.signed_by:
            return "verified"
        return "unsigned" if not self.manifest.signatures else "not verified (no trusted key)"

    @property
    def catalog(self) -> Catalog:
        """Parsed, and checked against the manifest, on first use."""
        if self._catalog is None:
            if CATALOG not in self.manifest.signed.files:
                raise FormatError(f"{CATALOG}: not listed in the manifest")
            catalog = _parse_catalog([self.read(CATALOG, keep=False)])
            try:
                check_agreement(self.manifest, catalog)
            except (
                TypeError,
                AttributeError,
                ValueError,
            ) as exc:  # a field of the wrong type, even if signed
                raise FormatError(
                    f"{CATALOG}: a field has the wrong type ({type(exc).__name__}: {exc})"
                ) from None
            self._catalog = catalog
        return self._catalog

    def read(self, name: str, keep: bool = True) -> bytes:
        """The verified bytes of a listed file. Content files are kept in a bounded cache,
        other files for good unless `keep` is false (the catalog's 13 MB of JSON is not
        needed once parsed)."""
        with self._lock:
            data = self._core.get(name) or self._content.get(name)
            if data is not None:
                if name in self._content:
                    self._content.move_to_end(name)
                return data
        try:
            data = read_verified(self.tree, self.manifest, name)
        except (HashMismatchError, MissingFileError, FormatError) as exc:
            self.integrity_error = str(exc)
            raise
        with self._lock:
            if not name.startswith(CONTENT_DIR + "/"):
                if keep:
                    self._core[name] = data
            elif name not in self._content:
                self._content[name] = data
                self._content_bytes += len(data)
                while self._content_bytes > CONTENT_CACHE_BYTES and len(self._content) > 1:
                    _, dropped = self._content.popitem(last=False)
                    self._content_bytes -= len(dropped)
        return data


def open_bundle(
    path: str | os.PathLike[str],
    keys: Iterable[str | PublicKey] = (),
    *,
    allow_unsigned: bool = False,
    threshold: int = 1,
    hash_all: bool = True,
    check_expires: bool = True,
    trust: TrustPolicy | None = None,
) -> Bundle:
    """Verify the bundle at `path` and return it; raise a `BundleError` subclass naming
    the cause otherwise. Whom to trust is `trust`, or else a policy made from `keys`
    (plus $HANDBOOK_TRUSTED_KEYS), `allow_unsigned` and `threshold`.

    Every file's presence, type and size are always checked, and no unlisted file may
    exist. With `hash_all` (the default, as for `handbook verify`) every file is hashed
    now and the catalog checked against the content; otherwise each file is hashed when
    it is first read (the runtime's fast open: an agent's process should not hash 300 MB
    to answer one question)."""
    if trust is None:
        trust = TrustPolicy.of(keys, threshold=threshold, allow_unsigned=allow_unsigned)
    root = Path(os.path.realpath(path))
    if not root.is_dir():
        raise MissingFileError(f"{path}: no bundle directory here")
    tree = Tree(root)
    manifest_bytes = read(tree, MANIFEST, MAX_MANIFEST_BYTES)
    manifest = Manifest.from_bytes(manifest_bytes)
    signed_by = trust.check(manifest, path)
    if check_expires:
        check_expiry(manifest)
    check_tree(tree, manifest, sizes=hash_all)
    bundle = Bundle(tree, manifest, signed_by, manifest_bytes)
    if hash_all:
        for name, entry in sorted(manifest.signed.files.items()):
            hash_file(tree, name, entry)
        bundle.catalog  # noqa: B018 - parse and check it now
    return bundle


def check_expiry(manifest: Manifest, now: float | None = None) -> None:
    """Refuse a manifest whose signed `expires` time has passed: a mirror that keeps
    serving an old bundle cannot freeze its readers on it forever."""
    expires = manifest.signed.expires
    if expires is None:
        return
    deadline = utc_seconds(expires)
    if deadline is None or (time.time() if now is None else now) >= deadline:
        raise ExpiredError(
            f"{MANIFEST}: expired at {expires}; fetch a newer bundle (the build sets expires)"
        )


def _parse_catalog(holder: list[bytes]) -> Catalog:
    """Parse the catalog's bytes, handed over in a list so that they can be dropped as
    soon as they are decoded: bytes, text and parsed tree of a 13 MB catalog would
    otherwise all be alive at the peak."""
    try:
        text = holder.pop().decode("utf-8")
        value = json.loads(text)
        del text
        return Catalog.from_dict(value)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{CATALOG}: not valid JSON ({exc})") from None


def check_agreement(manifest: Manifest, catalog: Catalog) -> None:
    """The catalog must describe exactly the listed content files, and name the same
    library and version as the signed manifest."""
    signed = manifest.signed
    lib = catalog.library
    if (lib.name, lib.version) != (signed.library, signed.version):
        raise FormatError(
            f"{CATALOG}: describes {lib.name} {lib.version}, the manifest {signed.library} {signed.version}"
        )
    if len(catalog.docs) != signed.docs:
        raise FormatError(f"{CATALOG}: lists {len(catalog.docs)} docs, the manifest {signed.docs}")
    seen: set[tuple[str, str]] = set()
    referenced: set[str] = set()
    for doc in catalog.docs:
        key = (doc.id, str(doc.meta.get("lang") or ""))  # an id may exist once per language
        if key in seen:
            raise FormatError(
                f"{CATALOG}: doc id {doc.id!r} appears twice"
                + (f" in language {key[1]}" if key[1] else "")
            )
        seen.add(key)
        entry = signed.files.get(doc.content)
        if entry is None:
            raise FormatError(
                f"{CATALOG}: doc {doc.id!r} points at {doc.content}, which the manifest does not list"
            )
        if entry.sha256 != doc.sha256 or entry.bytes != doc.bytes:
            raise FormatError(
                f"{CATALOG}: doc {doc.id!r} does not match its content file {doc.content}"
            )
        if any(not 0 <= s.start <= s.end <= doc.bytes for s in doc.sections):
            raise FormatError(f"{CATALOG}: doc {doc.id!r} has a section outside its content")
        referenced.add(doc.content)
        for resource in doc.resources:
            listed = signed.files.get(resource.file)
            if listed is None or (listed.sha256, listed.bytes) != (resource.sha256, resource.bytes):
                raise FormatError(
                    f"{CATALOG}: doc {doc.id!r} attaches {resource.path}, "
                    f"which does not match {resource.file} in the manifest"
                )
            if check_path(resource.path) or resource.path.startswith(".."):
                raise FormatError(
                    f"{CATALOG}: doc {doc.id!r} attaches an unsafe path {resource.path!r}"
                )
            if any(not 0 <= s.start <= s.end <= resource.bytes for s in resource.sections):
                raise FormatError(
                    f"{CATALOG}: doc {doc.id!r} attaches {resource.path} "
                    "with a section outside the file"
                )
            referenced.add(resource.file)
    orphans = sorted(p for p in signed.files if is_content(p) and p not in referenced)
    if orphans:
        raise FormatError(f"{orphans[0]}: a content file no doc refers to")


def describe(bundle: Bundle) -> Sequence[str]:
    """Lines for people: what was verified."""
    signed = bundle.manifest.signed
    return [
        f"library   {signed.library} {signed.version} (built {signed.built_at})",
        f"docs      {signed.docs}",
        f"files     {len(signed.files) + 1} ({sum(f.bytes for f in signed.files.values()):,} bytes), "
        "every hash verified",
        f"signature {bundle.signature_state}"
        + (f" by {', '.join(k[:16] for k in bundle.signed_by)}" if bundle.signed_by else ""),
    ]
