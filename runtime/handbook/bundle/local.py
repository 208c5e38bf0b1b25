"""Opening a bundle: every byte is checked before anything is parsed or served.

The order is fixed, as in TUF clients: read the manifest's bytes (size cap first) →
parse them strictly → verify the signature over the signed payload → check that the
listed files are there and nothing unlisted is (the content-addressed folders aside) →
read each listed file (never more than its listed size + 1 bytes) and compare size and
sha256 before parsing it. The manifest lists a handful of files, so opening costs the
same at any number of docs (handbook/v2). Content and resource files sit one level
down the chain: a verified catalog entry names each by its sha256 and gives its size,
and the file is read against those when first asked for (`Bundle.read`); no other file
of those folders is ever opened. When the bundle has `catalog-offsets.bin`, one doc's
entry can be parsed alone (`Bundle.docs_with_id`), after both files were verified
against the manifest. `handbook verify` (`hash_all`) also lists the content folders and
refuses any file there no catalog entry refers to. Unverified data never leaves this
module: files are handed out only through `Bundle.read`, which checks them first and
keeps the verified bytes in memory, so nothing is re-read from disk unverified. Where
the bytes come from is a `handbook.bundle.sources.FileSource`: a local folder read without
following links (`handbook.bundle.tree`), or a remote bundle fetched file by file as calls
need them (`handbook.bundle.remote`); either verifies each file before handing it over.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import (
    BundleError,
    DownloadError,
    ExpiredError,
    FormatError,
    HashMismatchError,
    MissingFileError,
)
from . import id_table, review_offsets
from .catalog import Catalog, DocEntry, LibraryInfo
from .catalog_offsets import CatalogOffsets
from .chunks import ChunkHashes
from .entries import Entries, check_agreement
from .layout import (
    CATALOG,
    CATALOG_OFFSETS,
    CHUNKS,
    CONTENT_DIR,
    MANIFEST,
    REVIEW_OFFSETS,
    addressed_sha,
)
from .manifest import MAX_MANIFEST_BYTES, FileEntry, Manifest, utc_seconds
from .ranged import ChunkedFile, Ranged, Whole
from .signing import PublicKey
from .sources import FileSource
from .tree import Tree, check_content, check_tree, hash_file, read
from .trust import TrustPolicy

CONTENT_CACHE_BYTES = 16 * 1024 * 1024
"""Verified content kept in memory; beyond it, least recently used files are re-read
(and re-verified) from disk when asked for again."""


class Bundle:
    """A verified bundle. Files are handed out only through `read`, which checks size and
    hash first; the catalog is parsed on first use. Core files stay in memory once read,
    content files in a bounded cache, so nothing unverified is ever handed out."""

    def __init__(
        self,
        source: FileSource,
        manifest: Manifest,
        signed_by: Sequence[str],
        manifest_bytes: bytes = b"",
    ) -> None:
        self.source = source
        """Where the files come from; each is verified there before it is handed out."""
        self.path = source.root
        self.manifest = manifest
        self.signed_by = tuple(signed_by)
        """Key ids of the trusted keys whose signatures verified; empty when unsigned."""
        self._core: dict[str, bytes] = {MANIFEST: manifest_bytes} if manifest_bytes else {}
        """Verified files kept for good; the manifest is its bytes as verified at open."""
        self._content: OrderedDict[str, bytes] = OrderedDict()
        self._content_bytes = 0
        self._known: dict[str, FileEntry] = {}
        """Content and resource files, vouched for by the verified catalog entries read
        so far: what each must hold (its sha256 is its name, its size the entry's)."""
        self._catalog: Catalog | None = None
        self._entries: Entries | None = None
        self._offsets_read: CatalogOffsets | None = None
        """Doc entries read one at a time through catalog-offsets.bin, until the whole
        catalog is parsed."""
        self._whole = False
        """Set when catalog-offsets.bin describes another catalog.json: parse it whole."""
        self._chunks: ChunkHashes | None = None
        self._ranged: dict[str, Ranged] = {}
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
                check_agreement(self.manifest, catalog, self._known)
            except (
                TypeError,
                AttributeError,
                ValueError,
            ) as exc:  # a field of the wrong type, even if signed
                raise FormatError(
                    f"{CATALOG}: a field has the wrong type ({type(exc).__name__}: {exc})"
                ) from None
            self._catalog, self._entries = catalog, None
            with self._lock:
                self._core.pop(CATALOG, None)  # kept for single entries; parsed now
                self._ranged.pop(CATALOG, None)
        return self._catalog

    @property
    def library_info(self) -> LibraryInfo:
        """The catalog's library object, without parsing the docs when the bundle has
        catalog-offsets.bin."""
        entries = self._lazy_entries()
        return self.catalog.library if entries is None else entries.library

    def docs_with_id(self, doc_id: str) -> list[DocEntry] | None:
        """The docs with id `doc_id` (one per language), each entry parsed alone and
        checked against the manifest; None when that is not possible (a bundle without
        catalog-offsets.bin, or a catalog already parsed: use `catalog`). An id the
        offsets file does not hold is answered without reading catalog.json."""
        offsets = None if self._catalog is not None else self._offsets()
        if offsets is not None and not offsets.positions(doc_id):
            return []
        entries = self._lazy_entries()
        return None if entries is None else entries.with_id(doc_id)

    def doc_ids(self) -> Sequence[str]:
        """Every doc's id in catalog order (so sorted, once per language): from
        catalog-offsets.bin alone where it describes the listed catalog.json."""
        offsets = None if self._catalog is not None else self._offsets()
        return [doc.id for doc in self.catalog.docs] if offsets is None else offsets.ids

    def doc_at(self, position: int) -> DocEntry | None:
        """The doc at `position` in the catalog, its entry parsed alone and checked
        against the manifest; None when that is not possible (as `docs_with_id`)."""
        entries = self._lazy_entries()
        return None if entries is None else entries.doc(position)

    def _offsets(self) -> CatalogOffsets | None:
        """catalog-offsets.bin, verified, when it was written for the listed catalog.json."""
        files = self.manifest.signed.files
        if self._whole or CATALOG_OFFSETS not in files:
            return None
        if self._offsets_read is None:
            if CATALOG not in files:
                raise FormatError(f"{CATALOG}: not listed in the manifest")
            offsets = CatalogOffsets(self.read(CATALOG_OFFSETS), files[CATALOG].bytes)
            if offsets.catalog_sha256 != files[CATALOG].sha256:  # for another catalog.json
                self._whole = True
                return None
            if len(offsets) != self.manifest.signed.docs:
                raise FormatError(
                    f"{CATALOG_OFFSETS}: lists {len(offsets)} docs, not {self.manifest.signed.docs}"
                )
            self._offsets_read = offsets
        return self._offsets_read

    def _lazy_entries(self) -> Entries | None:
        offsets = None if self._catalog is not None else self._offsets()
        if offsets is not None and self._entries is None:  # catalog.json verified whole
            self._entries = Entries(offsets, self.ranged(CATALOG), self.manifest, self._known)
        return None if offsets is None else self._entries

    def entry(self, name: str) -> FileEntry | None:
        """What file `name` must hold: the manifest's entry, or for a content-addressed
        file the size and sha256 that a verified catalog entry gives (the whole catalog is
        parsed when no entry read so far names it); None when the bundle has no such
        file."""
        listed = self.manifest.signed.files.get(name)
        if listed is not None or addressed_sha(name) is None:
            return listed
        known = self._known.get(name)
        if known is None and self._catalog is None:
            self.catalog  # noqa: B018 - every entry vouches for its files
            known = self._known.get(name)
        return known

    def listing(self) -> dict[str, FileEntry]:
        """Every file of the bundle but the manifest, with its size and sha256: the listed
        ones and every content and resource file the catalog refers to (the whole catalog
        is parsed): what `handbook verify`, packing and fetching go through."""
        self.catalog  # noqa: B018 - every entry vouches for its files
        return {**self.manifest.signed.files, **dict(sorted(self._known.items()))}

    def ranged(self, name: str) -> Ranged:
        """A listed file to read by ranges (`handbook.bundle.ranged`): one with chunk
        hashes has each chunk verified when first needed, where its source reads by
        chunks (a folder, or a host that answers HTTP ranges); any other is read and
        verified whole now."""
        with self._lock:
            found = self._ranged.get(name)
        if found is not None:
            return found
        files = self.manifest.signed.files
        entry = files.get(name)
        if entry is None:
            raise MissingFileError(f"{name}: not listed in the manifest")
        try:
            if CHUNKS in files and self._chunks is None:
                self._chunks = ChunkHashes(self.read(CHUNKS), files)
            chunked = None if self._chunks is None else self._chunks.of(name, entry)
            source = None if chunked is None else self.source.chunks(name, chunked)
            made: Ranged = (
                Whole(self.read(name))
                if source is None or chunked is None
                else ChunkedFile(source, name, chunked, self._refused)
            )
        except BundleError as exc:
            self._refused(exc)
            raise
        with self._lock:
            return self._ranged.setdefault(name, made)

    def _refused(self, exc: BundleError) -> None:
        self.integrity_error = str(exc)

    def read(self, name: str, keep: bool = True) -> bytes:
        """The verified bytes of a listed file, or of a content file a verified catalog
        entry names (`entry`). Content files are kept in a bounded cache, other files
        for good unless `keep` is false (the catalog's 13 MB of JSON is not needed once
        parsed)."""
        with self._lock:
            data = self._core.get(name) or self._content.get(name)
            if data is not None:
                if name in self._content:
                    self._content.move_to_end(name)
                return data
        try:
            entry = self.entry(name)
            if entry is None:
                raise MissingFileError(
                    f"{name}: neither listed in the manifest nor referred to by the catalog"
                )
            data = self.source.read_verified(name, entry)
        except (HashMismatchError, MissingFileError, FormatError, DownloadError) as exc:
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

    Every listed file's presence and type are always checked, and no unlisted file may
    exist outside the content folders. With `hash_all` (the default, as for `handbook
    verify`) every listed file is hashed now, the catalog parsed and checked, the content
    folders listed (exactly the files the catalog refers to) and every content file
    hashed; otherwise each file is checked when it is first read, a content file against
    the catalog entry that names it (the runtime's fast open: an agent's process should
    not hash 300 MB, or list 10,000 names, to answer one question)."""
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
    check_tree(tree, manifest.signed.files, sizes=hash_all)
    bundle = Bundle(tree, manifest, signed_by, manifest_bytes)
    if hash_all:
        for name, entry in sorted(manifest.signed.files.items()):
            hash_file(tree, name, entry)
        bundle.catalog  # noqa: B018 - parse and check it now
        check_offsets(bundle)
        id_table.check(manifest.signed.files, bundle.read, [d.id for d in bundle.catalog.docs])
        check_chunks(bundle, tree)
        if REVIEW_OFFSETS in manifest.signed.files:
            review_offsets.check(manifest, bundle.read(REVIEW_OFFSETS), bundle.read)
        content = {n: e for n, e in bundle.listing().items() if n not in manifest.signed.files}
        check_content(tree, content)  # exactly the files the catalog refers to
        for name, entry in content.items():
            hash_file(tree, name, entry)
    return bundle


def check_offsets(bundle: Bundle) -> None:
    """Check catalog-offsets.bin, when the bundle has one, against the parsed catalog:
    every range frames the entry of the doc it names (as a lazy reader would parse it).
    Offsets written for another catalog.json are left alone: readers parse the whole
    catalog then."""
    files = bundle.manifest.signed.files
    if CATALOG_OFFSETS not in files:
        return
    listed = files[CATALOG]
    offsets = CatalogOffsets(bundle.read(CATALOG_OFFSETS), listed.bytes)
    if offsets.catalog_sha256 != listed.sha256:
        return
    entries = Entries(offsets, Whole(bundle.read(CATALOG, keep=False)), bundle.manifest, {})
    for position, doc in enumerate(bundle.catalog.docs):
        if entries.doc(position) != doc:
            raise FormatError(
                f"{CATALOG_OFFSETS}: entry {position} is not {CATALOG}'s doc {doc.id!r}"
            )


def check_chunks(bundle: Bundle, tree: Tree) -> None:
    """Check every chunk hash of chunks.bin, when the bundle has one, against the file it
    describes (the files were hashed whole against the manifest already): a reader that
    reads by chunks must accept exactly what one that hashes whole accepts."""
    files = bundle.manifest.signed.files
    if CHUNKS not in files:
        return
    hashes = ChunkHashes(bundle.read(CHUNKS), files)
    for name in hashes.names:
        chunked = hashes.of(name, files[name])
        if chunked is not None:
            checked = ChunkedFile(tree.chunks(name, chunked), name, chunked)
            checked.verify_all()
            checked.close()


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


def describe(bundle: Bundle) -> Sequence[str]:
    """Lines for people: what was verified."""
    signed = bundle.manifest.signed
    files = bundle.listing()
    return [
        f"library   {signed.library} {signed.version} (built {signed.built_at})",
        f"docs      {signed.docs}",
        f"files     {len(files) + 1} ({sum(f.bytes for f in files.values()):,} bytes), "
        "every hash verified",
        f"signature {bundle.signature_state}"
        + (f" by {', '.join(k[:16] for k in bundle.signed_by)}" if bundle.signed_by else ""),
    ]
