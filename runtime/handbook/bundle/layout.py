"""Where everything lives in a bundle: the one place that names its files.

The build writes these paths and every reader (the bundle verifier, the library, the
transports) looks them up here, so a file is renamed or added in one line. The format
spec (docs/spec/bundle.md) describes each file; its version policy says which additions
readers of the same major version accept.
"""

from __future__ import annotations

import re

MANIFEST = "manifest.json"
"""The signed list of every other file with its sha256 and size, except the
content-addressed ones (`content/`, `resources/`), which the catalog names and sizes."""
CATALOG = "catalog.json"
"""Library metadata and one entry per doc."""
CATALOG_OFFSETS = "catalog-offsets.bin"
"""Where each doc's entry lies in the catalog, for reading one entry (`handbook.bundle.catalog_offsets`)."""
IDS = "ids.bin"
"""The ids squeezed and ordered for an unknown id's suggestions (`handbook.bundle.id_table`)."""
CHUNKS = "chunks.bin"
"""The sha256 of each chunk of the large listed files, so that a reader hashes only the
chunks it reads (`handbook.bundle.chunks`)."""
SEARCH = "search.bin"
"""The runtime's compact search file (`handbook.search.index`)."""
VECTORS = "vectors.bin"
"""Sentence embeddings of every search entry, for the optional semantic retriever."""
INDEX = "index.json"
"""The lunr 2.3 index, for lunr.js and lunr.py readers (with `lunr_index: json`)."""
INDEX_GZ = "index.json.gz"
"""The same index gzipped (`lunr_index: gzip`, the default): the runtime never reads it."""
TOOLS = "tools.json"
"""The agent tool definitions, for offline consumers (generated from `handbook.tools.table`)."""
LLMS = "llms.txt"
"""The llms.txt view of the library."""
REVIEWS = "reviews.json"
"""The verified review and invalidation records, the reviewers and the review policy
(only in a library that declares reviewers)."""
REVIEW_OFFSETS = "reviews-offsets.bin"
"""Where each doc's records lie in reviews.json, for reading one doc's alone
(`handbook.bundle.review_offsets`)."""
OBJECTS_DIR = "objects"
"""Not part of a bundle: where a publisher may put every listed file again under its
sha256 (`objects/<sha256>` beside the manifest), so that remote readers fetch each file
at an address that never changes (`handbook.bundle.remote`; docs/spec/bundle.md)."""
CONTENT_DIR = "content"
RESOURCES_DIR = "resources"


def content_path(sha256: str) -> str:
    """A doc body's file, named by the sha256 of its bytes."""
    return f"{CONTENT_DIR}/{sha256}.md"


def content_sha(path: str) -> str:
    """The sha256 a content file is named by."""
    return path.removeprefix(CONTENT_DIR + "/").removesuffix(".md")


def resource_path(sha256: str) -> str:
    """An attached file's bytes, named by their sha256."""
    return f"{RESOURCES_DIR}/{sha256}"


def is_content(path: str) -> bool:
    """Content and resource files: named by their hash, so immutable."""
    return path.startswith((CONTENT_DIR + "/", RESOURCES_DIR + "/"))


CONTENT_FOLDERS = (CONTENT_DIR, RESOURCES_DIR)
"""The folders of content-addressed files: the manifest does not list them (handbook/v2);
each file is vouched for by the catalog entry that names it, and checked when read."""
_ADDRESSED = re.compile(r"(?:content/([0-9a-f]{64})\.md|resources/([0-9a-f]{64}))")


def addressed_sha(path: str) -> str | None:
    """The sha256 a well-formed content or resource path is named by, or None for any
    other path (a misnamed file in those folders is nothing a reader may open)."""
    match = _ADDRESSED.fullmatch(path)
    return None if match is None else match.group(1) or match.group(2)
