"""Review and invalidation records: who vouched for a doc, who disputed it, and when a
thing docs are about changed.

A record is a payload signed by a declared reviewer under its own signing domain —
``handbook/v1/review`` or ``handbook/v1/invalidation`` — with the canonical signing of
manifests (`signing.signing_input`), so a review signature can never pass as a manifest
signature, an invalidation's, or the reverse. Its id is the sha256 of that signing input:
derived from the content, never chosen, so two identical reviews are one record, and a
file named by its id cannot be swapped for another.

A review is about one revision of one doc (optionally one section of it): the doc's
`revision` in the catalog changes whenever its fields, body or attached files do, and a
review names the revision it read. Its verdict is one of

- ``approve``: vouches for the revision; counts towards a protected doc's approvals;
- ``corroborate``: re-checked it against the world and it still holds;
- ``contradict``: it is wrong (the basis says how); attaches to the doc, never edits it;
- ``reject``: must not be approved as it stands.

An invalidation says that an artifact docs are `about` (a device model, a firmware
version, an API, a file elsewhere: a URI) changed at a time; every doc about it is
suspect until a review issued after that time.

Files hold ``{"type", "payload", "signature"}``: the signature is standard base64 over
the signing input, by the key `payload.reviewer` names (a key id).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from ..bundle import canonical
from ..bundle.signing import PublicKey, b64decode_strict, b64encode, keyid, signing_input

REVIEW_TAG = "handbook/v1/review"
INVALIDATION_TAG = "handbook/v1/invalidation"
TAGS = {"review": REVIEW_TAG, "invalidation": INVALIDATION_TAG}

Verdict = Literal["approve", "corroborate", "contradict", "reject"]
VERDICTS: tuple[Verdict, ...] = ("approve", "corroborate", "contradict", "reject")
SUPPORT = frozenset({"approve", "corroborate"})
AGAINST = frozenset({"contradict", "reject"})

MAX_BASIS_CHARS = 2000
MAX_EVIDENCE = 16
MAX_REF_CHARS = 500
MAX_RECORD_BYTES = 16 * 1024
"""A record file larger than this is refused before it is parsed."""

_HEX64 = re.compile(r"[0-9a-f]{64}")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")


class RecordError(ValueError):
    """A record that is malformed, or whose signature or id does not hold."""


class Review(NamedTuple):
    id: str
    library: str
    doc: str
    revision: str
    verdict: Verdict
    basis: str
    reviewer: str
    """The key id of the reviewer's public key."""
    issued_at: int
    """Seconds since the epoch (UTC)."""
    section: str | None = None
    """The anchor of the section reviewed, or None for the whole doc."""
    lang: str | None = None
    evidence: tuple[str, ...] = ()
    signature: str = ""


class Invalidation(NamedTuple):
    id: str
    library: str
    about: str
    """The URI of the artifact that changed."""
    changed_at: int
    reviewer: str
    issued_at: int
    signature: str = ""


Record = Review | Invalidation


def review_payload(review: Review) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "library": review.library,
        "doc": review.doc,
        "revision": review.revision,
        "verdict": review.verdict,
        "basis": review.basis,
        "reviewer": review.reviewer,
        "issued_at": review.issued_at,
    }
    if review.section is not None:
        payload["section"] = review.section
    if review.lang is not None:
        payload["lang"] = review.lang
    if review.evidence:
        payload["evidence"] = list(review.evidence)
    return payload


def invalidation_payload(record: Invalidation) -> dict[str, Any]:
    return {
        "library": record.library,
        "about": record.about,
        "changed_at": record.changed_at,
        "reviewer": record.reviewer,
        "issued_at": record.issued_at,
    }


def _payload(record: Record) -> tuple[str, dict[str, Any]]:
    if isinstance(record, Review):
        return "review", review_payload(record)
    return "invalidation", invalidation_payload(record)


def record_id(record: Record) -> str:
    """The sha256 of the record's signing input: its id, whatever id it carries."""
    kind, payload = _payload(record)
    return hashlib.sha256(signing_input(TAGS[kind], payload)).hexdigest()


def sign(record: Record, private: Any) -> Record:
    """`record` with its id and the signature of `private` (an Ed25519 private key whose
    key id the record names as its reviewer)."""
    kind, payload = _payload(record)
    message = signing_input(TAGS[kind], payload)
    public = private.public_key().public_bytes_raw()
    if keyid(public) != record.reviewer:
        raise RecordError("the record names another reviewer than the key that signs it")
    signature = b64encode(private.sign(message))
    signed = record._replace(id=hashlib.sha256(message).hexdigest(), signature=signature)
    check(signed)
    return signed


def check(record: Record) -> None:
    """Raise RecordError when the build would refuse the record's file: one format for
    writer and reader, so a reviewer never commits a record every check then rejects."""
    size = len(to_bytes(record))
    if size > MAX_RECORD_BYTES:
        raise RecordError(f"the record is {size:,} bytes; the limit is {MAX_RECORD_BYTES:,}")
    from_dict(to_dict(record))


def to_dict(record: Record) -> dict[str, Any]:
    kind, payload = _payload(record)
    return {"type": kind, "payload": payload, "signature": record.signature}


def to_bytes(record: Record) -> bytes:
    """The file a record is kept in: canonical JSON and a newline."""
    return canonical.dumps(to_dict(record)) + b"\n"


def verify(record: Record, reviewers: Mapping[str, PublicKey]) -> None:
    """Raise RecordError unless a declared reviewer's key signed exactly this record.
    `reviewers` maps key ids to their keys."""
    kind, payload = _payload(record)
    key = reviewers.get(record.reviewer)
    if key is None:
        raise RecordError(
            f"signed by key id {record.reviewer[:16]}, which is not a declared reviewer"
        )
    try:
        signature = b64decode_strict(record.signature, "signature")
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    if len(signature) != 64 or not key.verifies(signature, signing_input(TAGS[kind], payload)):
        raise RecordError(
            f"the signature does not verify with the key of reviewer {record.reviewer[:16]}"
        )


def from_dict(data: Any) -> Record:
    """A record from its file's JSON, its fields checked and its id derived; raises
    RecordError naming what is wrong. The signature is not checked here: `verify`."""
    if not isinstance(data, dict) or set(data) != {"type", "payload", "signature"}:
        raise RecordError('a record is {"type", "payload", "signature"} and nothing else')
    kind, payload, signature = data["type"], data["payload"], data["signature"]
    if kind not in TAGS:
        raise RecordError(f"type must be review or invalidation, not {kind!r}")
    if not isinstance(payload, dict):
        raise RecordError("payload must be an object")
    if not isinstance(signature, str):
        raise RecordError("signature must be text")
    record = _review(payload) if kind == "review" else _invalidation(payload)
    record = record._replace(signature=signature)
    return record._replace(id=record_id(record))


def _review(p: dict[str, Any]) -> Review:
    _keys(
        p,
        {"library", "doc", "revision", "verdict", "basis", "reviewer", "issued_at"},
        {"section", "lang", "evidence"},
    )
    if p["verdict"] not in VERDICTS:
        raise RecordError(f"verdict must be one of {', '.join(VERDICTS)}, not {p['verdict']!r}")
    for name in ("library", "doc", "basis"):
        _text(p, name, MAX_BASIS_CHARS)
    _hex(p, "revision")
    _hex(p, "reviewer")
    _time(p, "issued_at")
    for name in ("section", "lang"):
        if name in p:
            _text(p, name, MAX_REF_CHARS)
    evidence = p.get("evidence", [])
    if (
        not isinstance(evidence, list)
        or len(evidence) > MAX_EVIDENCE
        or not all(isinstance(e, str) and 0 < len(e) <= MAX_REF_CHARS for e in evidence)
    ):
        raise RecordError(f"evidence must be a list of at most {MAX_EVIDENCE} references")
    return Review(
        "",
        p["library"],
        p["doc"],
        p["revision"],
        p["verdict"],
        p["basis"],
        p["reviewer"],
        p["issued_at"],
        p.get("section"),
        p.get("lang"),
        tuple(evidence),
    )


def _invalidation(p: dict[str, Any]) -> Invalidation:
    _keys(p, {"library", "about", "changed_at", "reviewer", "issued_at"}, set())
    _text(p, "library", MAX_REF_CHARS)
    _text(p, "about", MAX_REF_CHARS)
    if not _URI.fullmatch(p["about"]):
        raise RecordError(f"about must be a URI (scheme:rest), not {p['about']!r}")
    _hex(p, "reviewer")
    _time(p, "changed_at")
    _time(p, "issued_at")
    return Invalidation(
        "", p["library"], p["about"], p["changed_at"], p["reviewer"], p["issued_at"]
    )


def _keys(p: dict[str, Any], required: set[str], optional: set[str]) -> None:
    missing, unknown = required - set(p), set(p) - required - optional
    if missing:
        raise RecordError(f"payload lacks {', '.join(sorted(missing))}")
    if unknown:
        raise RecordError(f"payload has unknown fields {', '.join(sorted(unknown))}")


def _text(p: dict[str, Any], name: str, limit: int) -> None:
    value = p[name]
    if not isinstance(value, str) or len(value) > limit:
        raise RecordError(f"{name} must be text of at most {limit:,} characters")
    if name != "basis" and not value:
        raise RecordError(f"{name} must not be empty")


def _hex(p: dict[str, Any], name: str) -> None:
    if not isinstance(p[name], str) or not _HEX64.fullmatch(p[name]):
        raise RecordError(f"{name} must be 64 lowercase hex digits")


def _time(p: dict[str, Any], name: str) -> None:
    value = p[name]
    if type(value) is not int or not 0 <= value <= canonical.MAX_SAFE_INTEGER:
        raise RecordError(f"{name} must be whole seconds since 1970 (an integer)")
