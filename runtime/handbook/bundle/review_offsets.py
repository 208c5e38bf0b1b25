"""Where each doc's records lie in ``reviews.json`` (``reviews-offsets.bin``), so that the
first pedigree asked for parses that doc's records alone, not all of them (23 MB and
about 1.7 s for 50,000 reviews).

The build writes both files from one value with `write`; a reader that has verified both
against the manifest finds a doc's records with `ReviewOffsets.reviews_of` and parses
those bytes alone. Layout, little-endian:

    b"HBREVOFF" · uint32 version (1) · uint32 policy start · uint32 policy end
    · uint32 reviewers start · uint32 reviewers end · sha256 of reviews.json (32 bytes)
    · the reviews table · the invalidations table

and each table:

    uint32 keys (K) · uint32 records (N) · uint32[K + 1] first record of each key
    · uint32[N] record start · uint32[N] record end · uint32[K + 1] key offsets · keys

Offsets are byte offsets into ``reviews.json``: its ``policy`` and ``reviewers``
objects, and each record object. The reviews table is keyed by the doc a review is
about (its id, or id NUL language for a review that names a language), the
invalidations table by the artifact (``about``); keys are UTF-8, sorted and unique, and
key k's records are ``first[k]`` to ``first[k + 1]``, in file order. The sha256 names the
reviews.json the offsets were written for: a reader whose reviews.json has another hash
parses it whole instead. Additive in ``handbook/v1``: readers that do not know the file
verify its hash and ignore it.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from ..errors import FormatError
from . import canonical
from .catalog_offsets import _le, _read, _uint32s
from .layout import REVIEW_OFFSETS, REVIEWS
from .manifest import Manifest
from .ranged import Ranged

MAGIC = b"HBREVOFF"
VERSION = 1
_HEAD = len(MAGIC) + 20 + 32
_PARTS = ("policy", "records", "reviewers")
REVIEW, INVALIDATION = "review", "invalidation"


def refuse(why: str) -> FormatError:
    return FormatError(f"{REVIEW_OFFSETS}: {why}")


def key_of(record: Mapping[str, Any]) -> tuple[Any, Any]:
    """(type, key) of a record's JSON: a review's doc key (`doc_key`), an invalidation's
    artifact. A key that is not text means the record belongs under no key."""
    payload = record.get("payload")
    payload = payload if isinstance(payload, dict) else {}
    kind = record.get("type")
    if kind == INVALIDATION:
        return kind, payload.get("about")
    return kind, doc_key(payload.get("doc"), payload.get("lang"))


def doc_key(doc: Any, lang: Any) -> str | None:
    """The reviews table's key of a doc: its id, plus NUL and its language when the
    review names one; None for values no honest record holds."""
    if not isinstance(doc, str) or not (lang is None or isinstance(lang, str)):
        return None
    return doc if lang is None else f"{doc}\0{lang}"


def write(data: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The bytes of ``reviews.json`` (exactly ``canonical.dumps(data) + b"\\n"``) and of
    ``reviews-offsets.bin``. `data` is ``{"policy", "records", "reviewers"}``."""
    if set(data) != set(_PARTS):
        raise ValueError(f"reviews.json holds exactly {', '.join(_PARTS)}")
    policy, reviewers = canonical.dumps(data["policy"]), canonical.dumps(data["reviewers"])
    parts = [b'{"policy":', policy, b',"records":[']
    at = len(parts[0]) + len(policy) + len(parts[2])
    groups: dict[str, dict[str, list[tuple[int, int]]]] = {REVIEW: {}, INVALIDATION: {}}
    for n, record in enumerate(data["records"]):
        if n:
            parts.append(b",")
            at += 1
        body = canonical.dumps(record)
        kind, key = key_of(record)
        if kind not in groups or not isinstance(key, str):
            raise ValueError(f"record {n} is neither a review of a doc nor an invalidation")
        groups[kind].setdefault(key, []).append((at, at + len(body)))
        parts.append(body)
        at += len(body)
    parts.append(b'],"reviewers":')
    at += len(parts[-1])
    parts += [reviewers, b"}\n"]
    whole = b"".join(parts)
    policy_at = len(parts[0])
    head = _uint32s([VERSION, policy_at, policy_at + len(policy), at, at + len(reviewers)])
    out = [MAGIC, _le(head), hashlib.sha256(whole).digest()]
    for kind in (REVIEW, INVALIDATION):
        out += _table(groups[kind])
    return whole, b"".join(out)


def _table(groups: Mapping[str, list[tuple[int, int]]]) -> list[bytes]:
    keys = sorted(groups)
    first, starts, ends, key_at = _uint32s([0]), _uint32s(), _uint32s(), _uint32s([0])
    encoded = [key.encode() for key in keys]
    for key, raw in zip(keys, encoded, strict=True):
        for start, end in groups[key]:
            starts.append(start)
            ends.append(end)
        first.append(len(starts))
        key_at.append(key_at[-1] + len(raw))
    count = _uint32s([len(keys), len(starts)])
    return [_le(count), _le(first), _le(starts), _le(ends), _le(key_at), *encoded]


class _Table:
    """One table of the file: sorted keys, and the record ranges of each."""

    def __init__(self, data: bytes, at: int, what: str) -> None:
        if at + 8 > len(data):
            raise refuse(f"too short for its {what} table")
        keys, records = _read(data, at, 2)
        keys_at = at + 8 + 4 * (2 * (keys + 1) + 2 * records)
        if keys_at > len(data):
            raise refuse(f"too short for {keys:,} {what} keys and {records:,} records")
        self.first = _read(data, at + 8, keys + 1)
        self.starts = _read(data, at + 8 + 4 * (keys + 1), records)
        self.ends = _read(data, at + 8 + 4 * (keys + 1 + records), records)
        key_at = _read(data, keys_at - 4 * (keys + 1), keys + 1)
        if self.first[0] != 0 or self.first[-1] != records or key_at[0] != 0:
            raise refuse(f"the {what} table's groups do not cover its records")
        if any(a >= b for a, b in pairwise(self.first)):
            raise refuse(f"a {what} key has no records, or the groups are out of order")
        if any(a >= b for a, b in pairwise(key_at)):
            raise refuse(f"a {what} key is empty, or the key offsets are out of order")
        self.end = keys_at + key_at[-1]
        if self.end > len(data):
            raise refuse(f"too short for its {what} keys")
        try:
            self.keys = [data[keys_at + a : keys_at + b].decode() for a, b in pairwise(key_at)]
        except UnicodeDecodeError:
            raise refuse(f"a {what} key is not UTF-8") from None
        if any(a >= b for a, b in pairwise(self.keys)):
            raise refuse(f"the {what} keys are not sorted")
        self.what = what

    def ranges(self, key: str, size: int) -> list[tuple[int, int]]:
        """The ranges of `key`'s records (none for a key the table does not hold),
        checked in order and inside a reviews.json of `size` bytes."""
        n = bisect_left(self.keys, key)
        if n == len(self.keys) or self.keys[n] != key:
            return []
        out, previous = [], 0
        for r in range(self.first[n], self.first[n + 1]):
            start, end = self.starts[r], self.ends[r]
            if not previous < start < end < size:
                raise refuse(
                    f"the {self.what} ranges of {key!r} are out of order or outside {REVIEWS}"
                )
            out.append((start, end))
            previous = end
        return out


class ReviewOffsets:
    """A verified ``reviews-offsets.bin``, checked against the size of the verified
    ``reviews.json`` it describes; each group's ranges are checked when it is read."""

    def __init__(self, data: bytes, reviews_bytes: int) -> None:
        if len(data) < _HEAD or data[: len(MAGIC)] != MAGIC:
            raise refuse("not a review offsets file (no HBREVOFF header)")
        version, policy_start, policy_end, reviewers_start, reviewers_end = _read(
            data, len(MAGIC), 5
        )
        if version != VERSION:
            raise refuse(f"version {version}; this reader knows version {VERSION}")
        if not 0 < policy_start < policy_end < reviewers_start < reviewers_end < reviews_bytes:
            raise refuse(f"the policy's or reviewers' range lies outside {REVIEWS}")
        self.policy, self.reviewers = (policy_start, policy_end), (reviewers_start, reviewers_end)
        self.reviews_sha256 = data[_HEAD - 32 : _HEAD].hex()
        """The reviews.json these offsets were written for."""
        self.size = reviews_bytes
        self._reviews = _Table(data, _HEAD, REVIEW)
        self._invalidations = _Table(data, self._reviews.end, INVALIDATION)
        if self._invalidations.end != len(data):
            raise refuse("its tables do not end where the file does")

    @property
    def records(self) -> int:
        """How many records the file places."""
        return len(self._reviews.starts) + len(self._invalidations.starts)

    @property
    def keys(self) -> tuple[Sequence[str], Sequence[str]]:
        """The docs' keys and the artifacts' (for `handbook verify`)."""
        return self._reviews.keys, self._invalidations.keys

    def head(self, reviews: bytes | Ranged) -> tuple[Any, Any]:
        """The ``policy`` and ``reviewers`` values, parsed alone."""
        return (
            _framed(reviews, *self.policy, (b'{"policy":',), (b',"records":[',), "the policy"),
            _framed(reviews, *self.reviewers, (b'],"reviewers":',), (b"}\n",), "the reviewers"),
        )

    def reviews_of(self, reviews: bytes | Ranged, key: str) -> list[dict[str, Any]]:
        """The JSON of the reviews of the doc `key` names (`doc_key`), each parsed alone
        and checked to be a review of that doc."""
        return self._group(reviews, self._reviews, key, REVIEW)

    def invalidations_of(self, reviews: bytes | Ranged, about: str) -> list[dict[str, Any]]:
        """The JSON of the invalidations of the artifact `about`, each checked as
        `reviews_of` checks reviews."""
        return self._group(reviews, self._invalidations, about, INVALIDATION)

    def _group(
        self, reviews: bytes | Ranged, table: _Table, key: str, kind: str
    ) -> list[dict[str, Any]]:
        out = []
        for start, end in table.ranges(key, self.size):
            what = f"a {kind} of {key!r}"
            record = _framed(reviews, start, end, (b",", b"["), (b",", b"]"), what)
            if not isinstance(record, dict) or key_of(record) != (kind, key):
                raise refuse(f"the range at {start} it gives for {what} in {REVIEWS} is not one")
            out.append(record)
        return out


def check(manifest: Manifest, offsets: bytes, read: Callable[..., bytes]) -> None:
    """`handbook verify`'s check of a reviews-offsets.bin written for the bundle's
    reviews.json (`read` hands out verified files): the policy and reviewers it frames
    are the file's, and every record lies in exactly one range, under its own key."""
    listed = manifest.signed.files.get(REVIEWS)
    if listed is None:
        raise refuse(f"the bundle has no {REVIEWS}")
    index = ReviewOffsets(offsets, listed.bytes)
    if index.reviews_sha256 != listed.sha256:
        return  # written for another reviews.json: readers parse it whole
    raw = read(REVIEWS, keep=False)
    try:
        whole = json.loads(raw)
        records, head = whole["records"], (whole["policy"], whole["reviewers"])
    except (ValueError, RecursionError, KeyError, TypeError):
        raise FormatError(f"{REVIEWS}: not an object of policy, records and reviewers") from None
    docs, artifacts = index.keys
    placed = [r for key in docs for r in index.reviews_of(raw, key)]
    placed += [r for key in artifacts for r in index.invalidations_of(raw, key)]
    if index.head(raw) != head or len(placed) != len(records):
        raise refuse(
            f"places {len(placed)} of the {len(records)} records of {REVIEWS}, "
            "or frames another policy or reviewers"
        )


def _framed(
    data: bytes | Ranged,
    start: int,
    end: int,
    before: tuple[bytes, ...],
    after: tuple[bytes, ...],
    what: str,
) -> Any:
    """The JSON value at `data[start:end]`, which must sit right after one of `before` and
    right before one of `after` (a range inside a value, or across two, never does)."""
    fits = any(data[max(0, start - len(b)) : start] == b for b in before) and any(
        data[end : end + len(a)] == a for a in after
    )
    if fits:
        try:
            return json.loads(data[start:end].decode("utf-8"))
        except (ValueError, RecursionError):
            pass
    raise refuse(f"the range it gives for {what} in {REVIEWS} does not frame it")
