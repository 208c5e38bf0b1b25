"""Catalog entries as a reader takes them: each checked before use, and each vouching for
the content and attached files it names (handbook/v2: the manifest lists the catalog, the
catalog's entries give each content file's sha256 and size).

`check_agreement` checks a whole parsed catalog against the signed manifest, `Entries`
parses single entries of a verified catalog.json through catalog-offsets.bin, and both
put every file an entry names into the `known` map a `handbook.bundle.local.Bundle`
reads those files against.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import FormatError
from .catalog import Catalog, DocEntry, doc_from_dict, library_from_dict
from .catalog_offsets import CatalogOffsets
from .layout import CATALOG, CATALOG_OFFSETS, CONTENT_DIR, addressed_sha
from .manifest import FileEntry, Manifest, check_path
from .ranged import Ranged


class Entries:
    """Single doc entries of a verified catalog.json, found with its verified offsets."""

    def __init__(
        self,
        offsets: CatalogOffsets,
        catalog: Ranged,
        manifest: Manifest,
        known: dict[str, FileEntry],
    ) -> None:
        self.offsets, self.catalog, self.known = offsets, catalog, known
        start, end = offsets.library
        library = _entry(catalog, start, end, "the library", library_from_dict)
        signed = manifest.signed
        if (library.name, library.version) != (signed.library, signed.version):
            raise FormatError(
                f"{CATALOG}: describes {library.name} {library.version}, "
                f"the manifest {signed.library} {signed.version}"
            )
        if len(offsets) != signed.docs:
            raise FormatError(
                f"{CATALOG_OFFSETS}: lists {len(offsets)} docs, the manifest {signed.docs}"
            )
        self.library = library
        self._docs: dict[int, DocEntry] = {}

    def with_id(self, doc_id: str) -> list[DocEntry]:
        return [self.doc(n) for n in self.offsets.positions(doc_id)]

    def doc(self, position: int) -> DocEntry:
        if not 0 <= position < len(self.offsets):
            raise IndexError(f"no doc at catalog position {position}")
        doc = self._docs.get(position)
        if doc is None:
            expected = self.offsets.ids[position]
            doc = _entry(self.catalog, *self.offsets.span(position), repr(expected), doc_from_dict)
            if doc.id != expected:
                raise FormatError(
                    f"{CATALOG_OFFSETS}: entry {position} of {CATALOG} is doc {doc.id!r}, "
                    f"the offsets name {expected!r}"
                )
            check_doc(doc, self.known)
            self._docs[position] = doc
        return doc


def _entry(catalog: Ranged, start: int, end: int, what: str, parse: Any) -> Any:
    """One object of catalog.json, parsed and typed (a FormatError naming both files
    when the offsets do not frame an entry of the right shape)."""
    try:
        return parse(json.loads(catalog[start:end].decode("utf-8")))
    except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
        raise FormatError(
            f"{CATALOG_OFFSETS}: the range it gives for {what} in {CATALOG} is not "
            f"an entry ({type(exc).__name__}: {str(exc)[:120]})"
        ) from None


def check_agreement(
    manifest: Manifest, catalog: Catalog, known: dict[str, FileEntry] | None = None
) -> None:
    """The catalog must name the same library, version and number of docs as the signed
    manifest, with unique ids, and each doc must pass `check_doc`; the content files its
    entries name join `known`. (That no other content file is there is a matter of the
    folder, which `handbook verify` lists: `handbook.bundle.tree.check_content`.)"""
    known = {} if known is None else known
    signed = manifest.signed
    lib = catalog.library
    if (lib.name, lib.version) != (signed.library, signed.version):
        raise FormatError(
            f"{CATALOG}: describes {lib.name} {lib.version}, the manifest {signed.library} {signed.version}"
        )
    if len(catalog.docs) != signed.docs:
        raise FormatError(f"{CATALOG}: lists {len(catalog.docs)} docs, the manifest {signed.docs}")
    seen: set[tuple[str, str]] = set()
    for doc in catalog.docs:
        key = (doc.id, str(doc.meta.get("lang") or ""))  # an id may exist once per language
        if key in seen:
            raise FormatError(
                f"{CATALOG}: doc id {doc.id!r} appears twice"
                + (f" in language {key[1]}" if key[1] else "")
            )
        seen.add(key)
        check_doc(doc, known)


def check_doc(doc: DocEntry, known: dict[str, FileEntry]) -> None:
    """A doc entry must name its content file by a sha256 and give its size, keep its
    sections inside it, and attach only files named by their sha256 at safe paths. The
    files it names join `known`, which is what each is checked against when read."""
    if not doc.content.startswith(CONTENT_DIR + "/") or addressed_sha(doc.content) is None:
        raise FormatError(
            f"{CATALOG}: doc {doc.id!r} points at {doc.content!r}, "
            "not at a content file content/<sha256>.md"
        )
    _vouch(known, doc, doc.content, FileEntry(doc.sha256, doc.bytes))
    if any(not 0 <= s.start <= s.end <= doc.bytes for s in doc.headed):
        raise FormatError(f"{CATALOG}: doc {doc.id!r} has a section outside its content")
    for resource in doc.resources:
        if addressed_sha(resource.file) is None:
            raise FormatError(
                f"{CATALOG}: doc {doc.id!r} attaches {resource.path} "
                "with a sha256 that is not 64 lowercase hex digits"
            )
        _vouch(known, doc, resource.file, FileEntry(resource.sha256, resource.bytes))
        if check_path(resource.path) or resource.path.startswith(".."):
            raise FormatError(
                f"{CATALOG}: doc {doc.id!r} attaches an unsafe path {resource.path!r}"
            )
        if any(not 0 <= s.start <= s.end <= resource.bytes for s in resource.headed):
            raise FormatError(
                f"{CATALOG}: doc {doc.id!r} attaches {resource.path} "
                "with a section outside the file"
            )


def _vouch(known: dict[str, FileEntry], doc: DocEntry, name: str, entry: FileEntry) -> None:
    """Record that `doc` vouches for file `name` holding `entry`; two entries that name
    one file with different sizes cannot both be right, and are refused."""
    if entry.bytes < 0:
        raise FormatError(f"{CATALOG}: doc {doc.id!r} gives {name} a negative size")
    if known.setdefault(name, entry) != entry:
        raise FormatError(
            f"{CATALOG}: doc {doc.id!r} gives {name} {entry.bytes:,} bytes, "
            f"another entry {known[name].bytes:,}"
        )
