"""`handbook diff`: what changed for agents between two versions of a library, and the
version bump that says so.

Agents depend on ids (of docs and of sections) and on the doc contract (the fields
every doc has and the values a vocabulary allows). So:

- ``major`` when a doc or a section disappears, or the contract tightens (a field
  becomes required, a vocabulary loses a value);
- ``minor`` when docs or sections are added, or the contract loosens;
- ``patch`` when only content or metadata changes;
- ``none`` when no doc changed revision and the contract is the same.

Sections are compared by anchor, docs by id and revision (the sha256 of metadata and
body). Both sides are verified bundles (folders or archives).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handbook.bundle.catalog import Catalog, DocEntry

BUMPS = ("none", "patch", "minor", "major")


def diff(old: Catalog, new: Catalog) -> dict[str, Any]:
    """`{bump, reasons, added, removed, changed, contract, old, new}`, JSON-ready."""
    before = {d.id: d for d in old.docs}
    after = {d.id: d for d in new.docs}
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = [
        _doc_change(before[i], after[i])
        for i in sorted(before.keys() & after.keys())
        if before[i].revision != after[i].revision
    ]
    contract = _contract(old, new)
    reasons: list[tuple[str, str]] = []
    if removed:
        reasons.append(("major", f"{len(removed)} doc(s) removed: {_some(removed)}"))
    gone = [f"{c['id']}#{a}" for c in changed for a in c["sections_removed"]]
    if gone:
        reasons.append(("major", f"{len(gone)} section(s) removed: {_some(gone)}"))
    for field in contract["required_added"]:
        reasons.append(("major", f"field {field!r} became required"))
    for field, values in contract["vocab_removed"].items():
        reasons.append(("major", f"vocabulary {field!r} no longer allows {_some(values)}"))
    if added:
        reasons.append(("minor", f"{len(added)} doc(s) added: {_some(added)}"))
    new_sections = [f"{c['id']}#{a}" for c in changed for a in c["sections_added"]]
    if new_sections:
        reasons.append(("minor", f"{len(new_sections)} section(s) added: {_some(new_sections)}"))
    for field in contract["required_removed"]:
        reasons.append(("minor", f"field {field!r} is no longer required"))
    for field, values in contract["vocab_added"].items():
        reasons.append(("minor", f"vocabulary {field!r} now also allows {_some(values)}"))
    edited = [c["id"] for c in changed if not (c["sections_added"] or c["sections_removed"])]
    if edited:
        reasons.append(("patch", f"{len(edited)} doc(s) changed: {_some(edited)}"))
    bump = max((level for level, _ in reasons), key=BUMPS.index, default="none")
    return {
        "bump": bump,
        "reasons": [text for _, text in sorted(reasons, key=lambda r: -BUMPS.index(r[0]))],
        "added": added,
        "removed": removed,
        "changed": changed,
        "contract": contract,
        "old": {"library": old.library.name, "version": old.library.version},
        "new": {"library": new.library.name, "version": new.library.version},
    }


def _doc_change(old: DocEntry, new: DocEntry) -> dict[str, Any]:
    old_meta, new_meta = _metadata(old), _metadata(new)
    metadata = {
        k: [old_meta.get(k), new_meta.get(k)]
        for k in sorted(old_meta.keys() | new_meta.keys())
        if old_meta.get(k) != new_meta.get(k)
    }
    old_sections = {s.anchor for s in old.sections}
    new_sections = {s.anchor for s in new.sections}
    return {
        "id": new.id,
        "old_revision": old.revision,
        "new_revision": new.revision,
        "metadata": metadata,
        "sections_added": sorted(new_sections - old_sections),
        "sections_removed": sorted(old_sections - new_sections),
        "content_changed": old.sha256 != new.sha256,
    }


def _metadata(doc: DocEntry) -> dict[str, Any]:
    return {
        "kind": doc.kind,
        "title": doc.title,
        "summary": doc.summary,
        "verified": doc.verified,
        "keywords": list(doc.keywords),
        "aliases": list(doc.aliases),
        **doc.meta,
    }


def _contract(old: Catalog, new: Catalog) -> dict[str, Any]:
    old_vocab: Mapping[str, list[str]] = old.library.vocab
    new_vocab: Mapping[str, list[str]] = new.library.vocab
    removed: dict[str, list[str]] = {}
    added: dict[str, list[str]] = {}
    for field in sorted(old_vocab.keys() | new_vocab.keys()):
        if field not in new_vocab:  # no vocabulary any more: every value allowed
            added[field] = ["any value (the vocabulary was dropped)"]
            continue
        if field not in old_vocab:  # a new vocabulary restricts what was free
            removed[field] = ["any value outside " + ", ".join(new_vocab[field])]
            continue
        gone = sorted(set(old_vocab[field]) - set(new_vocab[field]))
        more = sorted(set(new_vocab[field]) - set(old_vocab[field]))
        if gone:
            removed[field] = gone
        if more:
            added[field] = more
    return {
        "required_added": sorted(set(new.library.required) - set(old.library.required)),
        "required_removed": sorted(set(old.library.required) - set(new.library.required)),
        "vocab_removed": removed,
        "vocab_added": added,
    }


def _some(items: list[str], shown: int = 5) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more
