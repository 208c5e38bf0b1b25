"""`collect`: several docs in one budgeted call, over one library or several (a `Shelf`).

Identities. Every doc has a qualified ref ``<library>:<id>``. An unqualified id works
while exactly one library owns it; an id owned by several is never resolved by
precedence (the first library listed does not win): it is reported as ambiguous, with
the qualified choices.

`collect` returns ``{items, omissions, no_match, bytes_used, budget}``. Filters apply
before limits; explicit ids keep the caller's order, a query ranks (best doc score,
then ref). Items carry the whole doc, or, when it does not fit the byte budget, the
sections that matched the query. Everything left out is in `omissions` with a reason:

=====================  ==============================================================
``invalid_identity``   not a doc id (or ``library:id``) at all
``unknown_identity``   no library has it (`detail` suggests close ids)
``ambiguous_identity`` several libraries have it (`choices` are the qualified refs)
``duplicate_identity`` the same doc asked for twice
``unavailable_revision`` the doc's revision is not the one asked for; new bytes are never substituted
``filters``            the doc exists but does not match the filters
``query``              an explicit id whose doc does not match the query
``not_allowed_source`` the doc is not a source the operator lets `collect` cite (`handbook.handlers.citing`)
``output_limit``       beyond `limit`, or not fitting `max_bytes`
=====================  ==============================================================

`max_bytes` counts the UTF-8 bytes of returned content only, never the envelope. The
same call on the same bundles gives the same bytes.

"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..answers import CollectAnswer, CollectItem, Omission
from ..bounds import (
    DEFAULT_COLLECT_BYTES,
    DEFAULT_COLLECT_LIMIT,
    ENVELOPE_CHARS,
    json_len,
    refusal,
)
from ..bundle.catalog import DocEntry
from ..search.query import QueryError
from ..search.query_terms import parse_query
from .citing import AllowedSources
from .snapshot import Snapshot, active_filters

MAX_COLLECT_IDS = 100
MAX_LISTED_BEYOND_LIMIT = 50
"""Docs left out by `limit` are listed one by one up to this many, then counted."""

_NAME = r"[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*"
_ID = re.compile(rf"^(?:(?P<library>{_NAME}):)?(?P<id>{_NAME})$")

Found = tuple[Snapshot, DocEntry]
Matches = dict[str, tuple[float, list[str]]]
"""ref -> (best passage score, anchors of the sections that matched the query)."""


def ref(snap: Snapshot, doc: DocEntry) -> str:
    return f"{snap.name}:{doc.id}"


class Resolution:
    """A doc found for a caller's identity, or why none was."""

    def __init__(
        self,
        found: Found | None = None,
        reason: str = "",
        detail: str = "",
        choices: Sequence[str] = (),
    ) -> None:
        self.found, self.reason, self.detail, self.choices = found, reason, detail, list(choices)

    def omission(self, identity: Any) -> Omission:
        shown = identity if isinstance(identity, str) else repr(identity)[:200]
        out: Omission = {"id": shown, "reason": self.reason}
        if self.detail:
            out["detail"] = self.detail
        if self.choices:
            out["choices"] = self.choices
        return out


def resolve(libraries: Sequence[Snapshot], identity: Any) -> Resolution:
    """The doc an identity names across `libraries`, never by precedence."""
    if not isinstance(identity, str) or not (match := _ID.fullmatch(identity.strip())):
        detail = "a doc id looks like device.acme.ac200, or library:device.acme.ac200"
        return Resolution(reason="invalid_identity", detail=detail)
    wanted_library, doc_id = match["library"], match["id"]
    owners = [
        (snap, doc)
        for snap in libraries
        if wanted_library in (None, snap.name) and (doc := snap.doc(doc_id)) is not None
    ]
    if not owners:
        known = [snap.name for snap in libraries]
        if wanted_library is not None and wanted_library not in known:
            detail = f"no library {wanted_library!r}; the libraries are {', '.join(known)}"
            return Resolution(reason="unknown_identity", detail=detail)
        close = [s for snap in libraries for s in snap.suggest(doc_id)][:5]
        detail = ("did you mean " + ", ".join(close)) if close else "no library has this id"
        return Resolution(reason="unknown_identity", detail=detail)
    if len(owners) > 1:
        return Resolution(
            reason="ambiguous_identity",
            detail="several libraries have this id; ask for one of the qualified refs",
            choices=[ref(snap, doc) for snap, doc in owners],
        )
    return Resolution(owners[0])


def collect(
    libraries: Sequence[Snapshot],
    query: str | None = None,
    ids: Sequence[str] | None = None,
    revisions: Mapping[str, str] | None = None,
    limit: int = DEFAULT_COLLECT_LIMIT,
    max_bytes: int = DEFAULT_COLLECT_BYTES,
    max_chars: int | None = None,
    retriever: Any = None,
    sources: AllowedSources | None = None,
    **filters: Any,
) -> CollectAnswer:
    """See the module docstring. `max_chars` is the operator's bound on the whole answer
    (`max_response_chars`): items that would pass it are left out as `output_limit`;
    `retriever` names what ranks the query (lexical by default); `sources`, what may be
    gathered (anything when None)."""
    if ids is not None and not isinstance(ids, (str, bytes)) and isinstance(ids, Iterable):
        ids = list(ids)  # an iterator is read once, here
    empty: CollectAnswer = {"items": [], "omissions": [], "no_match": True, "bytes_used": 0}
    problem = _check_args(ids, revisions, limit, max_bytes)
    if problem:
        budget = max_bytes if isinstance(max_bytes, int) else None
        return {**empty, "budget": budget, "error": refusal("bad_arguments", problem)}
    active = active_filters(filters)
    for name, value in active.items():
        problems = [snap.filter_problem(name, value) for snap in libraries]
        if libraries and all(problems):
            return {**empty, "budget": max_bytes, "hint": problems[0] or ""}
    note = ""
    try:
        if query and str(query).strip():
            matches, note = _query_matches(libraries, query, retriever)
        else:
            matches = None
    except QueryError as exc:
        return {**empty, "budget": max_bytes, "error": exc.to_dict()}
    omissions: list[Omission] = []
    chosen = _choose(libraries, ids, matches, omissions, sources)
    selected = _screen(chosen, dict(revisions or {}), active, ids, query, matches, omissions)
    items, used = _fill(selected, limit, max_bytes, matches, omissions)
    out: CollectAnswer = {
        "items": items,
        "omissions": omissions,
        "no_match": not chosen,
        "bytes_used": used,
        "budget": max_bytes,
    }
    if note:
        out["note"] = note
    return _within(out, max_chars) if max_chars else out


def _choose(
    libraries: Sequence[Snapshot],
    ids: Sequence[str] | None,
    matches: Matches | None,
    omissions: list[Omission],
    sources: AllowedSources | None,
) -> list[Found]:
    """The explicit ids in the caller's order, or every doc ranked by the query (by ref
    without one); only allowed sources, explicit ids of others as omissions."""
    if ids is None:
        pool = [
            (snap, doc)
            for snap in libraries
            for doc in snap.docs
            if sources is None or sources.admits(snap, doc)
        ]
        if matches is None:
            return sorted(pool, key=lambda p: ref(*p))
        pool = [p for p in pool if ref(*p) in matches]
        return sorted(pool, key=lambda p: (-matches[ref(*p)][0], ref(*p)))
    chosen: list[Found] = []
    seen: set[str] = set()
    for identity in ids:
        resolution = resolve(libraries, identity)
        if resolution.found is None:
            omissions.append(resolution.omission(identity))
            continue
        qualified = ref(*resolution.found)
        if qualified in seen:
            detail = f"{qualified} is already in this call"
            omissions.append({"id": identity, "reason": "duplicate_identity", "detail": detail})
            continue
        seen.add(qualified)
        if sources is not None and not sources.admits(*resolution.found):
            detail = f"{qualified} is not a source this server cites ({sources.describe()})"
            omissions.append({"id": identity, "reason": "not_allowed_source", "detail": detail})
            continue
        chosen.append(resolution.found)
    return chosen


def _screen(
    chosen: list[Found],
    revisions: dict[str, str],
    active: Mapping[str, Any],
    ids: Sequence[str] | None,
    query: str | None,
    matches: Matches | None,
    omissions: list[Omission],
) -> list[Found]:
    """The chosen docs at the wanted revision that pass the filters (and, for explicit
    ids, the query); the others become omissions."""
    selected: list[Found] = []
    for snap, doc in chosen:
        qualified = ref(snap, doc)
        wanted = revisions.get(qualified, revisions.get(doc.id))
        if wanted is not None and wanted != doc.revision:
            detail = (
                f"asked for revision {str(wanted)[:64]}, the library has {doc.revision}; "
                "its old bytes are not available"
            )
            omissions.append({"id": qualified, "reason": "unavailable_revision", "detail": detail})
        elif active and not snap.matches(doc, active):
            detail = "does not match " + ", ".join(f"{k}={v}" for k, v in active.items())
            omissions.append({"id": qualified, "reason": "filters", "detail": detail})
        elif ids is not None and matches is not None and qualified not in matches:
            detail = f"does not match the query {str(query)[:100]!r}"
            omissions.append({"id": qualified, "reason": "query", "detail": detail})
        else:
            selected.append((snap, doc))
    return selected


def _fill(
    selected: list[Found],
    limit: int,
    max_bytes: int,
    matches: Matches | None,
    omissions: list[Omission],
) -> tuple[list[CollectItem], int]:
    """Items in order until `limit`: whole docs, or their matched sections when the
    whole does not fit the byte budget. (items, bytes used)"""
    items: list[CollectItem] = []
    used = 0
    beyond = len(selected) - limit
    for position, (snap, doc) in enumerate(selected):
        qualified = ref(snap, doc)
        if position >= limit:
            _omit_beyond(omissions, qualified, position, limit, beyond)
            continue
        content = snap.read(doc)
        item: CollectItem = {
            "ref": qualified,
            "id": doc.id,
            "library": snap.name,
            "revision": doc.revision,
            "title": doc.title,
        }
        if (pedigree := snap.pedigree(doc)) is not None:
            item["pedigree"] = pedigree
        if used + len(content) <= max_bytes:
            item.update({"content": content.decode("utf-8"), "whole": True, "bytes": len(content)})
        else:
            anchors = matches.get(qualified, (0.0, []))[1] if matches else []
            part, names = _matched_sections(doc, content, anchors, max_bytes - used)
            if not part:
                detail = (
                    f"needs {len(content):,} bytes, {max_bytes - used:,} of max_bytes left; "
                    "get it alone, or by section"
                )
                omissions.append({"id": qualified, "reason": "output_limit", "detail": detail})
                continue
            item.update(
                {
                    "content": part.decode("utf-8"),
                    "whole": False,
                    "bytes": len(part),
                    "sections": names,
                }
            )
        used += item["bytes"]
        items.append(item)
    return items, used


def _omit_beyond(
    omissions: list[Omission], qualified: str, position: int, limit: int, beyond: int
) -> None:
    """Say why the doc at `position` (past `limit`; `beyond` docs are) is left out: one by
    one for the first MAX_LISTED_BEYOND_LIMIT, then once, counting the rest."""
    if position < limit + MAX_LISTED_BEYOND_LIMIT:
        detail = f"beyond limit={limit}"
        omissions.append({"id": qualified, "reason": "output_limit", "detail": detail})
    elif position == limit + MAX_LISTED_BEYOND_LIMIT:
        count = beyond - MAX_LISTED_BEYOND_LIMIT
        detail = (
            f"{count:,} more docs beyond limit={limit}, not listed one by one; "
            "narrow the query or filters"
        )
        omissions.append({"id": None, "reason": "output_limit", "count": count, "detail": detail})


def _within(out: CollectAnswer, max_chars: int) -> CollectAnswer:
    """`out` cut to the operator's response bound: items from the end become
    `output_limit` omissions, then listed omissions are counted instead."""

    def size() -> int:
        return json_len(out) + ENVELOPE_CHARS

    items, omissions = out["items"], out["omissions"]
    cut = False
    while size() > max_chars and items:
        item = items.pop()
        out["bytes_used"] -= item["bytes"]
        detail = "does not fit the response size the operator allows; ask for it alone"
        omissions.insert(0, {"id": item["ref"], "reason": "output_limit", "detail": detail})
        cut = True
    while size() > max_chars and len(omissions) > 1:
        dropped = omissions.pop()
        count = dropped.get("count", 1)
        last = omissions[-1]
        if last.get("id") is None and last.get("count"):
            last["count"] = last.get("count", 0) + count
        else:
            detail = "more omissions, not listed"
            omissions.append(
                {"id": None, "reason": "output_limit", "count": count, "detail": detail}
            )
            if size() > max_chars:
                omissions.pop(-2)
        cut = True
    if cut:
        out["truncated"] = True
        out["hint"] = (
            "The answer was cut to the response size the operator allows; "
            "collect fewer docs or lower max_bytes."
        )
    return out


def _check_args(ids: Any, revisions: Any, limit: Any, max_bytes: Any) -> str | None:
    if ids is not None and (isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable)):
        return "ids must be a list of doc ids"
    if ids is not None and len(list(ids)) > MAX_COLLECT_IDS:
        return f"at most {MAX_COLLECT_IDS} ids per call"
    if revisions is not None and not isinstance(revisions, Mapping):
        return "revisions must map doc ids to revisions"
    for name, value in (("limit", limit), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a whole number, 1 or more"
    return None


def _query_matches(
    libraries: Sequence[Snapshot], query: str, retriever: Any
) -> tuple[Matches, str]:
    """The matches of every library, and the note of a shortened query."""
    fitted = parse_query(query, [snap.retriever for snap in libraries])
    out: Matches = {}
    for snap in libraries:
        ranker = snap.retriever_named(retriever)
        for entry, score in ranker.scores(fitted.clauses, text=query).items():
            passage = snap.retriever.passage(entry)
            qualified = f"{snap.name}:{passage.doc_id}"
            best, matched = out.get(qualified, (0.0, []))
            in_content = passage.anchor and not passage.resource  # an attached file's is not
            anchors = [*matched, passage.anchor] if in_content else matched
            out[qualified] = (max(best, score), anchors)
    return out, fitted.note


def _matched_sections(
    doc: DocEntry, content: bytes, anchors: Sequence[str], room: int
) -> tuple[bytes, list[str]]:
    """The matched sections and subsections, in doc order, that fit in `room` bytes; a
    subsection inside a section already taken is not taken twice."""
    wanted = set(anchors)
    parts, names, size, taken = [], [], 0, -1
    for section in sorted(doc.headed, key=lambda s: s.start):
        if section.anchor not in wanted or section.start < taken:
            continue
        piece = content[section.start : section.end]
        if size + len(piece) > room:
            continue
        parts.append(piece)
        names.append(section.title)
        size += len(piece)
        taken = section.end
    return b"".join(parts), names
