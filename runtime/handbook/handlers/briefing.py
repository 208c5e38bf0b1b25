"""`brief`: what to read before a task, ranked by relevance and by how far to trust it.

A search answers "where are these words"; a briefing answers "what should I read, and
believe, before I do this". Each item is the best passage of one doc, scored

    score = relevance * confidence * freshness * (1 + REF_BONUS if about a given ref)

- relevance: the passage's retrieval score over the best score of this call, in (0, 1];
- confidence: the doc's pedigree confidence, (S+1)/(S+2C+2) (`handbook.pedigree.derived`); a
  doc nobody reviewed, or a library without reviewers, has the prior 0.5;
- freshness: H / (H + staleness), H the library's staleness horizon (DEFAULT_HORIZON_DAYS
  when it sets none) and staleness the days since the current revision was last vouched
  for; never vouched for counts as one horizon old (0.5). Freshness halves at one
  horizon and never reaches 0: old knowledge ranks lower, it does not vanish;
- the ref bonus: when the doc is one of `refs` (an id or library:id) or is about one (an
  alias, keyword or `about:` URI equal to it, ignoring case and punctuation).

Retired and superseded docs are left out: a briefing points at current knowledge. Items
carry the doc's pedigree, and `verify_first` with its reason when the doc is suspect,
contested, stale or under-approved. Nothing is generated: a briefing
is assembled from verified passages, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..answers import BriefAnswer, BriefItem, Pedigree
from ..bounds import DEFAULT_BRIEF_LIMIT, ENVELOPE_CHARS, fit_items, json_len, refusal
from ..bundle.catalog import DocEntry
from ..pedigree.derived import DAY, is_retired
from ..search.query import QueryError
from .ask import question_query
from .hit_pages import shrink_excerpts
from .searching import render_hit
from .snapshot import Snapshot, compact

MAX_BRIEF_LIMIT = 50
MAX_REFS = 20
DEFAULT_HORIZON_DAYS = 180
PRIOR_CONFIDENCE = 0.5
"""The confidence of a doc with no reviews: (0 + 1) / (0 + 0 + 2)."""
REF_BONUS = 0.5
CANDIDATES = 100
"""Passages ranked per library before one per doc is kept."""


def brief(
    libraries: Sequence[Snapshot],
    task: Any,
    refs: Any = None,
    topics: Any = None,
    limit: Any = DEFAULT_BRIEF_LIMIT,
    max_chars: int | None = None,
    retriever: Any = None,
) -> BriefAnswer:
    """See the module docstring."""
    empty: BriefAnswer = {"count": 0, "items": [], "returned": 0}
    problem = _argument_problem(task, refs, topics, limit)
    if problem:
        return {**empty, "error": refusal("bad_arguments", problem)}
    try:  # the task is read as plain words: no character in it is query syntax
        fitted = question_query(" ".join([task, *(topics or ())]), libraries)
        if not fitted.clauses:
            return {**empty, "hint": "The task has no words the library could match."}
        rankers = [snap.retriever_named(retriever) for snap in libraries]
    except QueryError as exc:
        return {**empty, "error": exc.to_dict()}
    wanted = {compact(str(r)) for r in refs or ()}
    qualified = len(libraries) > 1
    best: dict[str, BriefItem] = {}
    for snap, ranker in zip(libraries, rankers, strict=True):
        _, hits = ranker.rank(fitted.clauses, CANDIDATES, text=task)
        for hit in hits:
            rendered = render_hit(snap, hit)
            doc = snap.doc_at(snap.retriever.passage(hit.entry).doc)
            ref = f"{snap.name}:{doc.id}"
            if ref in best or is_retired(doc):
                continue
            item: BriefItem = {**rendered}  # type: ignore[typeddict-item]
            item["about_ref"] = _about(doc, ref, wanted)
            if qualified:
                item["ref"], item["library"] = ref, snap.name
            best[ref] = _scored(item, snap, hit.score)
    if not best:
        return {**empty, "hint": "No passage matches the task. Try other words, or list()."}
    top = max(item["relevance"] for item in best.values())
    items = [_final(item, top) for item in best.values()]
    items.sort(key=lambda i: (-i["score"], i.get("ref", i["id"])))
    out: BriefAnswer = {"count": len(items), "items": items[:limit]}
    out = _bounded(out, max_chars)
    if fitted.note:
        out["note"] = fitted.note
    return out


def _argument_problem(task: Any, refs: Any, topics: Any, limit: Any) -> str:
    if not isinstance(task, str) or not task.strip():
        return "task must be a non-empty string: what you are about to do"
    for name, value in (("refs", refs), ("topics", topics)):
        if value is not None and (
            not isinstance(value, list | tuple)
            or len(value) > MAX_REFS
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            return f"{name} must be a list of at most {MAX_REFS} non-empty strings"
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_BRIEF_LIMIT:
        return f"limit must be a whole number from 1 to {MAX_BRIEF_LIMIT}"
    return ""


def _about(doc: DocEntry, ref: str, wanted: set[str]) -> bool:
    """Whether the doc is, or is about, one of the refs the caller named."""
    if not wanted:
        return False
    about = doc.meta.get("about")
    names = [doc.id, ref, *doc.aliases, *doc.keywords]
    names += about if isinstance(about, list) else [about] if isinstance(about, str) else []
    return any(compact(str(name)) in wanted for name in names)


def _scored(item: BriefItem, snap: Snapshot, relevance: float) -> BriefItem:
    """The item with its raw score: retrieval score * confidence * freshness * bonus
    (divided by the call's best retrieval score once every library has ranked)."""
    pedigree: Pedigree = item.get("pedigree") or {}
    confidence = float(pedigree.get("confidence", PRIOR_CONFIDENCE))
    horizon = float(DEFAULT_HORIZON_DAYS)
    if snap.ledger is not None and snap.ledger.policy.horizon:
        horizon = snap.ledger.policy.horizon / DAY
    staleness = pedigree.get("staleness_days")
    freshness = horizon / (horizon + (horizon if staleness is None else staleness))
    bonus = 1 + REF_BONUS if item["about_ref"] else 1
    item["relevance"] = relevance
    item["confidence"] = round(confidence, 2)
    item["freshness"] = round(freshness, 3)
    item["score"] = relevance * confidence * freshness * bonus
    if "verify_first" in pedigree:
        item["verify_first"] = str(pedigree["verify_first"])
    return item


def _final(item: BriefItem, top: float) -> BriefItem:
    """Relevance relative to the call's best retrieval score, and the score with it."""
    scale = 1 / top if top > 0 else 0.0
    relevance, score = item["relevance"] * scale, item["score"] * scale
    return {**item, "relevance": round(relevance, 4), "score": round(score, 4)}


def _bounded(out: BriefAnswer, max_chars: int | None) -> BriefAnswer:
    """The answer within `max_chars`: excerpts shrink first, then items are left out."""
    items = out["items"]
    if not max_chars:
        return {**out, "returned": len(items)}
    room = max_chars - json_len({**out, "items": []}) - ENVELOPE_CHARS
    kept = fit_items(shrink_excerpts(items, room), len(items), room)
    out = {**out, "items": kept, "returned": len(kept)}
    if len(kept) < len(items):
        out["truncated"] = True
        out["hint"] = (
            f"{len(items) - len(kept)} item(s) did not fit in one answer (max_response_chars); "
            "ask with a smaller limit or a narrower task."
        )
    return out
