"""`search`: the best passages for a query, with the words that matched in an excerpt.

Queries use lunr's syntax (`handbook.search.query`); the ranking is the retriever's
(`handbook.search.retriever`). A hit names its doc and section, so the agent can read exactly
that part with `get(id, section)`; a hit in a markdown file attached to the doc also
names the file, read with `resource(id, path, section)`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..answers import SearchAnswer, SearchHit
from ..bounds import check_limit, check_offset, refusal
from ..search.index import Hit
from ..search.query import QueryError
from ..search.query_terms import parse_query
from ..search.stemmer import stem
from .hit_pages import page_of_hits
from .listing import OFFSET_MESSAGE
from .snapshot import WORD, Snapshot

DEFAULT_SEARCH_LIMIT = 10
EXCERPT_CHARS = 240
NO_MATCH_HINT = "No section matches. Try other words, fewer words, or list() to browse."


def search_passages(
    snap: Snapshot,
    max_chars: int,
    query: Any,
    limit: Any,
    lang: Any = None,
    offset: Any = 0,
    retriever: Any = None,
) -> SearchAnswer:
    checked = check_limit(limit, DEFAULT_SEARCH_LIMIT)
    if isinstance(checked, dict):
        return {"count": 0, "hits": [], "error": checked}
    start = check_offset(offset)
    if start is None:
        return {"count": 0, "hits": [], "error": refusal("invalid_offset", OFFSET_MESSAGE)}
    docs = None
    if lang is not None and str(lang).lower() != "any":
        problem = snap.filter_problem("lang", lang)
        if problem:
            return {"count": 0, "hits": [], "returned": 0, "hint": problem}
        docs = set(snap.languages[str(lang)])
    try:
        ranker = snap.retriever_named(retriever)
        fitted = parse_query(query, [snap.retriever])
        total, found = ranker.rank(fitted.clauses, start + checked, docs=docs, text=query)
    except QueryError as exc:
        return {"count": 0, "hits": [], "error": exc.to_dict()}
    hits = [render_hit(snap, hit) for hit in found[start:]]
    return bounded_hits(hits, total, start, fitted.note, max_chars)


def bounded_hits(
    hits: list[SearchHit], count: int, offset: int, note: str, max_chars: int
) -> SearchAnswer:
    """One page of hits within `max_chars` (`handbook.handlers.hit_pages`), with the note of a
    shortened query."""
    hint = "" if hits or count else NO_MATCH_HINT
    return page_of_hits(hits, count, offset, hint, max_chars, note)


def render_hit(snap: Snapshot, hit: Hit) -> SearchHit:
    passage = snap.retriever.passage(hit.entry)
    rendered: SearchHit = {
        "id": passage.doc_id,
        "title": passage.doc_title,
        "section": passage.title or None,
        "anchor": passage.anchor or None,
        "score": round(hit.score, 4),
        "excerpt": excerpt(snap, hit),
    }
    if passage.resource:
        rendered["resource"] = passage.resource
    if (pedigree := snap.pedigree(snap.doc_at(passage.doc))) is not None:
        rendered["pedigree"] = pedigree
    return rendered


def excerpt(snap: Snapshot, hit: Hit) -> str:
    """About EXCERPT_CHARS of the passage, from just before the first word that matched."""
    passage = snap.retriever.passage(hit.entry)
    content = snap.bundle.read(passage.content)
    text = content[passage.start : passage.end].decode("utf-8", "replace")
    text = text.split("\n", 1)[1] if text.startswith("#") and "\n" in text else text
    position = 0
    starts = _word_starts(hit.terms)
    for candidate in starts.finditer(text) if starts is not None else ():
        word = WORD.match(text, candidate.start())
        if word is not None and stem(word.group().lower()) in hit.terms:
            position = candidate.start()
            break
    start = max(0, position - EXCERPT_CHARS // 3)
    window = " ".join(text[start : start + EXCERPT_CHARS].split())
    return ("…" if start else "") + window + ("…" if start + EXCERPT_CHARS < len(text) else "")


@lru_cache(maxsize=1024)
def _word_starts(terms: frozenset[str]) -> re.Pattern[str] | None:
    """Where a word whose stem is one of `terms` may begin. Porter's stemmer keeps a
    prefix of the word and changes at most its last letter (y to i, an e added), so such
    a word starts with the stem less its last letter: the regex finds the candidates in
    C, and only those are stemmed (a long section was stemmed word by word before)."""
    prefixes = sorted({t[:-1] if len(t) > 1 else t for t in terms if t}, key=len, reverse=True)
    if not prefixes:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, prefixes)) + ")", re.IGNORECASE)
