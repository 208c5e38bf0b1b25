"""The ledger of a bundle, read doc by doc: a pedigree parses the records of the doc it is
about (and of the artifacts that doc is `about`), found with ``reviews-offsets.bin``,
rather than all of ``reviews.json`` (50,000 reviews: 1.7 s) on the first call.

Both files are verified against the manifest before any byte is used (reviews.json is
hashed whole, once). A bundle without the offsets file, or whose offsets name another
reviews.json (a tool rewrote it and signed again), has its reviews.json parsed whole, as
before. Calls that need every record (the review queue, llms.txt) use `ledger_of`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from ..bundle.layout import REVIEW_OFFSETS, REVIEWS
from ..bundle.local import Bundle
from ..bundle.ranged import Ranged
from ..bundle.review_offsets import ReviewOffsets, doc_key, refuse
from ..errors import FormatError
from .derived import Ledger, head_of, ledger_of
from .records import Invalidation, RecordError, Review, from_dict


def open_ledger(bundle: Bundle) -> Ledger | None:
    """The bundle's ledger (None for a library without reviewers): indexed by doc where
    the bundle has reviews-offsets.bin written for its reviews.json, else parsed whole."""
    files = bundle.manifest.signed.files
    if REVIEWS not in files:
        return None
    if REVIEW_OFFSETS in files:
        offsets = ReviewOffsets(bundle.read(REVIEW_OFFSETS), files[REVIEWS].bytes)
        if offsets.reviews_sha256 == files[REVIEWS].sha256:
            return IndexedLedger(offsets, bundle.ranged(REVIEWS))
    return ledger_of(json.loads(bundle.read(REVIEWS)))


class IndexedLedger(Ledger):
    """A ledger whose records are parsed per doc and per artifact when first asked for,
    and kept."""

    def __init__(self, offsets: ReviewOffsets, reviews: Ranged) -> None:
        try:
            reviewers, policy = head_of(*offsets.head(reviews))
        except (ValueError, TypeError) as exc:
            raise refuse(f"the policy or reviewers it frames: {exc}") from None
        super().__init__(reviewers, (), (), policy)
        self._offsets, self._bytes = offsets, reviews
        self._lock = threading.Lock()
        self._by_doc: dict[tuple[str, str | None], list[Review]] = {}
        self._by_artifact: dict[str, list[Invalidation]] = {}

    def reviews_of(self, doc_id: str, lang: str | None) -> Sequence[Review]:
        found = self._by_doc.get((doc_id, lang))
        if found is None:
            key = doc_key(doc_id, lang)
            raw = self._offsets.reviews_of(self._bytes, key) if key is not None else []
            found = [r for r in _records(raw) if isinstance(r, Review)]
            with self._lock:
                self._by_doc[(doc_id, lang)] = found
        return found

    def invalidations_of(self, about: str) -> Sequence[Invalidation]:
        found = self._by_artifact.get(about)
        if found is None:
            raw = self._offsets.invalidations_of(self._bytes, about)
            found = [r for r in _records(raw) if isinstance(r, Invalidation)]
            with self._lock:
                self._by_artifact[about] = found
        return found


def _records(raw: list[dict[str, Any]]) -> list[Review | Invalidation]:
    try:
        return [from_dict(r) for r in raw]
    except RecordError as exc:
        raise FormatError(f"{REVIEWS}: a record is malformed ({exc})") from None
