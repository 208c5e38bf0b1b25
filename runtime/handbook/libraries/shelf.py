"""`Shelf`: several libraries, from several owners, answering as one — without silent
precedence.

Every item carries its qualified ref ``<library>:<id>`` and its library, set by the
runtime after the doc's own fields, so a doc cannot claim another library. An
unqualified id works while exactly one library owns it; an id owned by several is an
ambiguity the caller resolves: `get` answers with the qualified choices, `collect`
reports ``ambiguous_identity``, and `list` lists the id under `collisions`. Results of
several libraries merge by score, then by ref. Each call reads every library's current
snapshot once, so a reload of one library mid-call cannot mix versions. Tools never
raise, like the single library's.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..answers import (
    DocSummary,
    GetAnswer,
    ListAnswer,
    ResourceAnswer,
    SearchAnswer,
    SearchHit,
    StatusAnswer,
)
from ..bounds import check_limit, check_offset, never_raise, refusal
from ..bundle.local import Bundle
from ..handlers.citing import AllowedSources
from ..handlers.collect import resolve
from ..handlers.listing import DEFAULT_LIST_LIMIT, OFFSET_MESSAGE, list_hint, page, scored, summary
from ..handlers.reading import get_doc, get_resource
from ..handlers.searching import DEFAULT_SEARCH_LIMIT, bounded_hits, render_hit
from ..handlers.snapshot import Snapshot, active_filters
from ..handlers.statistics import weakest
from ..search.query import QueryError
from ..search.query_terms import parse_query
from ..tools.model import ToolContext
from ..tools.table import context_of
from .library import Library, SnapshotTools


class Shelf(SnapshotTools):
    """The same tools as `Library`, over several libraries with distinct names."""

    def __init__(self, libraries: Iterable[Library], sources: AllowedSources | None = None) -> None:
        """`sources` restricts what `ask` and `collect` cite (`handbook.handlers.citing`): kinds,
        and which of these libraries."""
        self.libraries = builtins.list(libraries)
        self.sources = sources
        names = Counter(lib.name for lib in self.libraries)
        twice = sorted(name for name, count in names.items() if count > 1)
        if twice:
            raise ValueError(
                f"two libraries are named {', '.join(twice)}; a shelf needs distinct names to qualify refs"
            )
        self.max_response_chars = min(
            (lib.max_response_chars for lib in self.libraries), default=40_000
        )

    def snapshots(self) -> builtins.list[Snapshot]:
        return [lib.snapshot for lib in self.libraries]

    def bundles(self) -> dict[str, Bundle]:
        return {lib.name: lib.bundle for lib in self.libraries}

    def tool_context(self) -> ToolContext:
        return context_of([snap.bundle.catalog for snap in self.snapshots()])

    @never_raise
    def status(self) -> StatusAnswer:
        answers = [lib.status() for lib in self.libraries]
        state = weakest(answer.get("statistics_state", "not_reported") for answer in answers)
        out: StatusAnswer = {"libraries": answers, "statistics_state": state}
        if self.sources is not None:
            out["sources"] = self.sources.describe()
        return out

    @never_raise
    def list(
        self,
        query: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
        *,
        offset: int = 0,
        lang: str | None = None,
        **filters: Any,
    ) -> ListAnswer:
        checked, start = check_limit(limit, DEFAULT_LIST_LIMIT), check_offset(offset)
        if isinstance(checked, dict):
            return {"count": 0, "docs": [], "error": checked}
        if start is None:
            return {"count": 0, "docs": [], "error": refusal("invalid_offset", OFFSET_MESSAGE)}
        active = active_filters({**filters, "lang": lang})
        snaps, problem = _applicable(self.snapshots(), active)
        if problem:
            return {"count": 0, "docs": [], "returned": 0, "hint": problem}
        try:
            ranked = [
                (score, snap, n) for snap in snaps for n, score in scored(snap, query, active)
            ]
        except QueryError as exc:
            return {"count": 0, "docs": [], "error": exc.to_dict()}
        ranked.sort(key=lambda item: (-item[0], f"{item[1].name}:{item[1].docs[item[2]].id}"))
        owners = Counter(snap.docs[n].id for _, snap, n in ranked)
        entries: builtins.list[DocSummary] = []
        for _, snap, n in ranked[start : start + checked]:
            doc = snap.docs[n]
            fields = snap.bundle.catalog.library.list_fields
            entries.append(
                {
                    **summary(doc, fields, snap.pedigree(doc)),
                    "ref": f"{snap.name}:{doc.id}",
                    "library": snap.name,
                }
            )
        hint = list_hint(len(ranked), checked, bool(active), start)
        out = page(entries, len(ranked), checked, start, hint, self.max_response_chars)
        out["collisions"] = sorted(i for i, count in owners.items() if count > 1)
        return out

    @never_raise
    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> GetAnswer:
        found = resolve(self.snapshots(), doc_id)
        if found.found is None:
            return _unresolved(found.reason, found.detail, found.choices)
        snap, doc = found.found
        answer = get_doc(snap, self.max_response_chars, doc.id, section, offset, revision, lang)
        return {**answer, "ref": f"{snap.name}:{doc.id}", "library": snap.name}

    @never_raise
    def search(
        self,
        query: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        lang: str | None = None,
        offset: int = 0,
        retriever: str | None = None,
    ) -> SearchAnswer:
        checked = check_limit(limit, DEFAULT_SEARCH_LIMIT)
        if isinstance(checked, dict):
            return {"count": 0, "hits": [], "error": checked}
        start = check_offset(offset)
        if start is None:
            return {"count": 0, "hits": [], "error": refusal("invalid_offset", OFFSET_MESSAGE)}
        active = active_filters({"lang": lang})
        snaps, problem = _applicable(self.snapshots(), active)
        if problem:
            return {"count": 0, "hits": [], "returned": 0, "hint": problem}
        hits: builtins.list[SearchHit] = []
        total = 0
        try:
            fitted = parse_query(query, [snap.retriever for snap in snaps])
            for snap in snaps:
                docs = set(snap.languages[str(lang)]) if active else None
                ranker = snap.retriever_named(retriever)
                count, found = ranker.rank(fitted.clauses, start + checked, docs=docs, text=query)
                total += count
                for hit in found:
                    rendered = render_hit(snap, hit)
                    hits.append(
                        {**rendered, "ref": f"{snap.name}:{rendered['id']}", "library": snap.name}
                    )
        except QueryError as exc:
            return {"count": 0, "hits": [], "error": exc.to_dict()}
        hits.sort(
            key=lambda h: (-h["score"], h["ref"], h.get("resource", ""), h.get("anchor") or "")
        )
        page = hits[start : start + checked]
        return bounded_hits(page, total, start, fitted.note, self.max_response_chars)

    @never_raise
    def resource(
        self,
        doc_id: str,
        path: str,
        revision: str | None = None,
        section: str | None = None,
        offset: int | None = None,
    ) -> ResourceAnswer:
        found = resolve(self.snapshots(), doc_id)
        if found.found is None:
            unresolved = _unresolved(found.reason, found.detail, found.choices)
            return {"found": False, "error": unresolved["error"]}
        snap, doc = found.found
        return get_resource(snap, self.max_response_chars, doc.id, path, revision, section, offset)


def _applicable(
    snaps: Sequence[Snapshot], active: Mapping[str, Any]
) -> tuple[builtins.list[Snapshot], str | None]:
    """The libraries where every filter can match, or, when there is none, why."""
    problems = [
        next(filter(None, (s.filter_problem(k, v) for k, v in active.items())), None) for s in snaps
    ]
    usable = [snap for snap, problem in zip(snaps, problems, strict=True) if problem is None]
    if snaps and not usable:
        return [], problems[0]
    return usable, None


def _unresolved(reason: str, detail: str, choices: Sequence[str]) -> GetAnswer:
    out: GetAnswer = {
        "found": False,
        "error": refusal(reason, f"{reason.replace('_', ' ')}: {detail}"),
    }
    if choices:
        out["choices"] = builtins.list(choices)
    return out
