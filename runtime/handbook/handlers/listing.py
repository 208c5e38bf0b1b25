"""`list`: docs matching filters, ranked by a query, one page at a time.

Filters match frontmatter fields (case-insensitive; list fields by membership; "any"
for no filter). A query ranks docs by their best passage's score, and an exact id,
alias, keyword or model number (ignoring case, spaces and punctuation) ranks first, so
`ac 200` finds the AC-200 doc whatever its text says. Pages are cut from one ranked
selection with `offset`, and every answer fits the operator's bound. Over several
libraries (a `Shelf`) the same code lists them all as one, each entry qualified.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ..answers import DocSummary, ListAnswer, Pedigree
from ..bounds import (
    DEFAULT_LIST_LIMIT,
    ENVELOPE_CHARS,
    MAX_LIMIT,
    check_limit,
    check_offset,
    fit_items,
    json_len,
    refusal,
)
from ..bundle.catalog import DocEntry
from ..pedigree.derived import is_retired
from ..search.query import QueryError
from ..search.query_terms import parse_query
from .snapshot import Snapshot, active_filters, compact, field, truth

EXACT_MATCH_BONUS = 1_000_000
T = TypeVar("T")


def list_docs(
    snaps: Sequence[Snapshot],
    max_chars: int,
    query: str | None,
    limit: Any,
    offset: Any,
    filters: Mapping[str, Any],
    qualified: bool = False,
) -> ListAnswer:
    """One page of the docs of `snaps` passing every filter, ranked by `query` when it
    has words. `qualified` is a shelf's answer (`handbook.libraries.shelf`): every entry
    carries its ref and library, ties between libraries go by ref, and ids that several
    libraries hold are listed under `collisions`."""
    checked = check_limit(limit, DEFAULT_LIST_LIMIT)
    if isinstance(checked, dict):
        return {"count": 0, "docs": [], "error": checked}
    start = check_offset(offset)
    if start is None:
        return {"count": 0, "docs": [], "error": refusal("invalid_offset", OFFSET_MESSAGE)}
    active = active_filters(filters)
    usable, problem = applicable(snaps, active)
    if problem:
        return {"count": 0, "docs": [], "returned": 0, "hint": problem}
    try:
        found = [(snap, n, score) for snap in usable for n, score in scored(snap, query, active)]
    except QueryError as exc:
        return {"count": 0, "docs": [], "error": exc.to_dict()}
    # Best first. The sort is stable: equal scores keep one library's own order, and on a
    # shelf they go by ref.
    found.sort(key=lambda f: (-f[2], f"{f[0].name}:{f[0].docs[f[1]].id}" if qualified else ""))
    entries = [_entry(snap, n, qualified) for snap, n, _ in found[start : start + checked]]
    hint = list_hint(len(found), checked, bool(active), start)
    out = page(entries, len(found), checked, start, hint, max_chars)
    if qualified:
        owners = Counter(snap.docs[n].id for snap, n, _ in found)
        out["collisions"] = sorted(i for i, count in owners.items() if count > 1)
    return out


OFFSET_MESSAGE = "offset must be a whole number, 0 or more (a next_offset from an earlier answer)"


def applicable(
    snaps: Sequence[Snapshot], active: Mapping[str, Any]
) -> tuple[list[Snapshot], str | None]:
    """The libraries where every filter can match, or, when none is, why the first is not
    (an unknown field or value): that is the hint of an empty answer."""
    problems = [
        next(filter(None, (s.filter_problem(k, v) for k, v in active.items())), None) for s in snaps
    ]
    usable = [snap for snap, problem in zip(snaps, problems, strict=True) if problem is None]
    if snaps and not usable:
        return [], problems[0]
    return usable, None


def _entry(snap: Snapshot, n: int, qualified: bool) -> DocSummary:
    doc = snap.docs[n]
    entry = summary(doc, snap.bundle.catalog.library.list_fields, snap.pedigree(doc))
    if qualified:
        return {**entry, "ref": f"{snap.name}:{doc.id}", "library": snap.name}
    return entry


def scored(snap: Snapshot, query: str | None, active: Mapping[str, Any]) -> list[tuple[int, float]]:
    """(catalog position, score) of the docs passing `active`, best first; every score
    is 0 without a query. Raises QueryError for a query the retriever refuses."""
    retired = truth(active.get("include_retired")) is True
    selected = [
        n
        for n, doc in enumerate(snap.docs)
        if snap.matches(doc, active) and (retired or not is_retired(doc))
    ]
    if query is None or not str(query).strip():
        return [(n, 0.0) for n in selected]
    return rank_docs(snap, str(query), set(selected))


def rank_docs(snap: Snapshot, query: str, allowed: set[int]) -> list[tuple[int, float]]:
    """Docs by their best passage's score, with exact identity matches first."""
    best: dict[int, float] = {}
    try:
        scores = snap.retriever.scores(parse_query(query, [snap.retriever]).clauses)
    except QueryError:
        if not compact(query):
            raise
        scores = {}  # "AC-200!!" is no query, but it may still name a doc
    for entry, score in scores.items():
        doc = snap.retriever.passage(entry).doc
        if doc in allowed and score > best.get(doc, 0.0):
            best[doc] = score
    for n in snap.identities.get(compact(query), ()):
        if n in allowed:
            best[n] = best.get(n, 0.0) + EXACT_MATCH_BONUS
    return sorted(best.items(), key=lambda item: (-item[1], snap.docs[item[0]].id))


def summary(
    doc: DocEntry, list_fields: Sequence[str], pedigree: Pedigree | None = None
) -> DocSummary:
    """A doc as `list` shows it: no content, its fields, its pedigree and its sections'
    sizes."""
    entry: dict[str, Any] = {
        "id": doc.id,
        "kind": doc.kind,
        "title": doc.title,
        "summary": doc.summary,
        "verified": doc.verified,
        "chars": doc.chars,
    }
    for name in list_fields:
        value = field(doc, name)
        if value is not None:
            entry.setdefault(name, value)
    if pedigree is not None:
        entry["pedigree"] = pedigree
    entry["sections"] = [
        {"title": s.title, "anchor": s.anchor, "chars": s.chars} for s in doc.sections
    ]
    return entry  # type: ignore[return-value]  # list fields are the library's own keys


def list_hint(count: int, limit: int, filtered: bool, offset: int = 0) -> str:
    if count == 0:
        loosen = "Loosen the filters or " if filtered else ""
        return f"Nothing matches. {loosen}try other words, or list() without arguments."
    if count > offset + limit:
        return (
            f"{count} docs match; showing {limit} from {offset}. Narrow with filters or a query, "
            f"raise limit (at most {MAX_LIMIT}), or call again with offset={offset + limit}."
        )
    return "Fetch a doc with get(id), or one section with get(id, section)."


def page(
    entries: list[DocSummary], count: int, limit: int, offset: int, hint: str, max_chars: int
) -> ListAnswer:
    """The answer holding as many of `entries` (one page, at most `limit`) as fit."""
    kept, truncated, hint = cut(entries, count, limit, hint, max_chars, {"count": count})
    out: ListAnswer = {"count": count, "docs": kept, "truncated": truncated, "returned": len(kept)}
    if offset:
        out["offset"] = offset
    if offset + len(kept) < count:
        out["next_offset"] = offset + len(kept)
    if hint:
        out["hint"] = hint
    return out


def cut(
    items: list[T], count: int, limit: int, hint: str, max_chars: int, envelope: Mapping[str, Any]
) -> tuple[list[T], bool, str]:
    """(the first items that fit in `max_chars` beside `envelope` and `hint`, whether
    any was left out, the hint saying so)."""
    room = max_chars - json_len(envelope) - len(hint) - ENVELOPE_CHARS
    kept = fit_items(items, limit, room)
    if len(kept) == min(len(items), limit):
        return kept, False, hint
    more = (
        f"Only {len(kept)} of {min(count, limit)} fit in one answer; "
        "narrow the query or filters, or lower limit."
    )
    return kept, True, (hint + " " if hint else "") + more
