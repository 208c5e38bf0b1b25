"""Reviews at check and build: read the records kept beside the docs, verify each, and
hold the library to its review policy.

Only a record that parses, is kept under its own id, is about this library, is signed
by a declared reviewer and names a doc the library has reaches the bundle
(`reviews.json`); every other is a finding with its file and the reason. The policy —
`required_approvals` distinct reviewers, never a doc's own `owners`, approving the
current revision of every protected doc — is applied here too, so a shortfall is
reported at check like any other rule, and `unapproved: omit` can leave such a doc out
of the bundle.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handbook.bundle import canonical, review_offsets
from handbook.bundle.catalog import DocEntry
from handbook.bundle.signing import PublicKey
from handbook.pedigree.derived import Ledger, Policy, is_retired
from handbook.pedigree.records import (
    MAX_RECORD_BYTES,
    Invalidation,
    Record,
    RecordError,
    Review,
    from_dict,
    to_bytes,
    to_dict,
    verify,
)

from .. import rules
from ..config.options import ReviewSettings
from ..config.settings import Config
from ..errors import PublishError
from ..findings import Finding
from ..read.parse import Doc
from ..safe_paths import write_file

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
PEDIGREE_FIELDS = ("owners", "about", "retired", "superseded_by")


@dataclass
class Reviewed:
    """The verified records, what was wrong with the others, and the docs the policy
    leaves out of the bundle (by path)."""

    records: list[Record] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    omitted: set[str] = field(default_factory=set)


def reviewers_of(settings: ReviewSettings) -> dict[str, tuple[str, PublicKey]]:
    """Key id -> (name, key) of every declared reviewer."""
    out = {}
    for name, text in settings.reviewers:
        key = PublicKey.parse(text)
        out[key.keyid] = (name, key)
    return out


def policy_of(settings: ReviewSettings) -> Policy:
    return Policy(
        settings.required_approvals,
        settings.protected_kinds,
        settings.protected_keywords,
        settings.horizon,
    )


def ledger_of(settings: ReviewSettings, records: Sequence[Record]) -> Ledger:
    """What the runtime derives pedigrees from, made of verified records."""
    return Ledger(
        {k: name for k, (name, _) in reviewers_of(settings).items()},
        [r for r in records if isinstance(r, Review)],
        [r for r in records if isinstance(r, Invalidation)],
        policy_of(settings),
    )


def check_fields(doc: Doc, config: Config) -> Iterator[Finding]:
    """The pedigree fields of one doc: `owners` (declared reviewers), `about` (URIs),
    `retired` (true or a reason); `superseded_by` needs the library (`check_library`)."""
    rule, meta = rules.PEDIGREE_FIELD, doc.meta
    names = {name for name, _ in config.reviews.reviewers} if config.reviews else set()
    if "owners" in meta:
        at = doc.value_at("owners")
        owners = meta["owners"]
        if not isinstance(owners, list) or not all(isinstance(o, str) for o in owners):
            yield rule.at(doc.path, at.line, at.col, variant="owners_type")
        elif config.reviews is not None:
            for name in owners:
                if name not in names:
                    yield rule.at(doc.path, at.line, at.col, variant="owners", name=name)
    if "about" in meta:
        at = doc.value_at("about")
        about = meta["about"] if isinstance(meta["about"], list) else [meta["about"]]
        for value in about:
            if not isinstance(value, str) or not _URI.fullmatch(value):
                yield rule.at(doc.path, at.line, at.col, variant="about", value=value)
    if "retired" in meta and not isinstance(meta["retired"], (bool, str)):
        at = doc.value_at("retired")
        yield rule.at(
            doc.path, at.line, at.col, variant="retired", type=type(meta["retired"]).__name__
        )


def check_library(docs: Sequence[Doc]) -> Iterator[Finding]:
    """`superseded_by` names a doc of the library, and not the doc itself."""
    ids = {doc.id for doc in docs}
    for doc in docs:
        successor = doc.meta.get("superseded_by")
        if successor is None:
            continue
        at = doc.value_at("superseded_by")
        if successor == doc.id:
            yield rules.PEDIGREE_FIELD.at(doc.path, at.line, at.col, variant="self_successor")
        elif successor not in ids:
            yield rules.PEDIGREE_FIELD.at(
                doc.path, at.line, at.col, variant="successor", successor=successor
            )


def read_records(config: Config) -> tuple[list[tuple[str, Record]], list[Finding]]:
    """Every record file in the reviews folder that parses, is named by its id and is
    about this library, with the path findings name it by (relative to the docs folder),
    and the findings about the others. Signatures are checked by `review`."""
    assert config.reviews is not None
    folder = config.reviews.folder
    found: list[tuple[str, Record]] = []
    findings: list[Finding] = []
    if not folder.is_dir():
        return found, findings
    for path in sorted(folder.glob("*.json")):
        shown = os.path.relpath(path, config.docs_dir)
        invalid = rules.REVIEW_INVALID
        try:
            size = path.lstat().st_size
            if size > MAX_RECORD_BYTES:
                findings.append(
                    invalid.at(shown, 1, variant="large", size=size, limit=MAX_RECORD_BYTES)
                )
                continue
            if path.is_symlink() or not path.is_file():
                raise OSError("not a regular file")
            record = from_dict(canonical.load_untrusted(path.read_bytes()))
        except (OSError, ValueError) as exc:  # RecordError and JSON errors are ValueErrors
            findings.append(invalid.at(shown, 1, problem=str(exc)))
            continue
        if path.name != f"{record.id}.json":
            findings.append(invalid.at(shown, 1, variant="name", name=path.name, id=record.id))
        elif record.library != config.library:
            findings.append(
                invalid.at(
                    shown, 1, variant="library", library=record.library, expected=config.library
                )
            )
        else:
            found.append((shown, record))
    return found, findings


def review(
    config: Config, entries: Mapping[tuple[str, str | None], tuple[Doc, DocEntry]]
) -> Reviewed:
    """Verify the records and apply the policy. `entries` maps each doc's (id, lang) to
    the doc and its catalog entry (whose revision reviews name)."""
    assert config.reviews is not None
    settings = config.reviews
    reviewers = reviewers_of(settings)
    keys = {k: key for k, (_, key) in reviewers.items()}
    names = {k: name for k, (name, _) in reviewers.items()}
    result = Reviewed()
    files, result.findings = read_records(config)
    for shown, record in files:
        try:
            verify(record, keys)
        except RecordError as exc:
            variant = "unknown" if record.reviewer not in keys else "forged"
            finding = rules.REVIEW_UNVERIFIED.at(shown, 1, variant=variant, problem=str(exc))
            result.findings.append(finding)
            continue
        if isinstance(record, Review):
            unknown = _unknown(record, entries, shown)
            if unknown is not None:
                result.findings.append(unknown)
                continue
            doc = entries[(record.doc, record.lang)][0]
            owners = doc.meta.get("owners") or []
            if isinstance(owners, list) and names[record.reviewer] in owners:
                result.findings.append(
                    rules.SELF_REVIEW.at(shown, 1, reviewer=names[record.reviewer], doc=record.doc)
                )
        result.records.append(record)
    ledger = ledger_of(settings, result.records)
    outcome = {"error": "", "omit": "; it is left out of the bundle", "flag": "; it ships flagged"}
    for doc, entry in entries.values():
        required = ledger.policy.required_of(entry)
        if not required or is_retired(entry):  # a retired doc is not acted on: no approvals
            continue
        approvals = ledger.pedigree(entry, 0)["approvals"]
        if approvals < required:
            result.findings.append(
                rules.APPROVALS_MISSING.at(
                    doc.path,
                    1,
                    doc=entry.id,
                    approvals=approvals,
                    required=required,
                    outcome=outcome[settings.unapproved],
                )
            )
            if settings.unapproved == "omit":
                result.omitted.add(doc.path)
    return result


def _unknown(
    record: Review, entries: Mapping[tuple[str, str | None], tuple[Doc, DocEntry]], shown: str
) -> Finding | None:
    """The finding when the review names no doc (or section) of the library."""
    found = entries.get((record.doc, record.lang))
    if found is None:
        return rules.REVIEW_UNKNOWN_DOC.at(shown, 1, variant="doc", doc=record.doc)
    entry = found[1]
    if (
        record.section is not None
        and record.revision == entry.revision
        and record.section not in {s.anchor for s in entry.sections}
    ):
        return rules.REVIEW_UNKNOWN_DOC.at(
            shown, 1, variant="section", section=record.section, doc=record.doc
        )
    return None


def reviews_files(config: Config, records: Sequence[Record]) -> tuple[bytes, bytes]:
    """`reviews.json`: the reviewers (key id -> name), the policy and the verified
    records, canonical and sorted by id, so the same records give the same bytes; and
    `reviews-offsets.bin`, where each doc's records lie in it."""
    assert config.reviews is not None
    settings = config.reviews
    policy: dict[str, Any] = {
        "required_approvals": settings.required_approvals,
        "protected_kinds": list(settings.protected_kinds),
        "protected_keywords": list(settings.protected_keywords),
    }
    if settings.horizon is not None:
        policy["horizon"] = settings.horizon
    data = {
        "reviewers": {k: name for k, (name, _) in reviewers_of(settings).items()},
        "policy": policy,
        "records": [to_dict(r) for r in sorted(records, key=lambda r: r.id)],
    }
    return review_offsets.write(data)


def write_record(folder: Path, record: Record, below: Path | None = None) -> Path:
    """Keep `record` as `<folder>/<id>.json` (created if needed), through no link on the
    way from `below` (default: the folder's parent; `safe_paths.write_file`). Writing the
    same record twice is one file: its name is its content's hash."""
    path = folder / f"{record.id}.json"
    data = to_bytes(record)
    current = None if path.is_symlink() or not path.is_file() else path.read_bytes()
    if current != data:
        write_file(
            path, data, folder.parent if below is None else below, PublishError, before=current
        )
    return path
