"""`search`: the best passages for a query, with the words that matched in an excerpt.

Queries use lunr's syntax (`handbook.search.query`), and the answer's `note` says when an
operator changed what was asked (`handbook.search.plain_words.syntax_note`); the ranking is the retriever's
(`handbook.search.retriever`). A hit names its doc and section, so the agent can read exactly
that part with `get(id, section)`; a hit in a markdown file attached to the doc also
names the file, read with `resource(id, path, section)`. Over several libraries (a
`Shelf`) the same code searches them all as one, each hit qualified.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..answers import Pedigree, SearchAnswer, SearchHit
from ..bounds import DEFAULT_SEARCH_LIMIT, check_limit, check_offset, refusal
from ..search.hit_texts import excerpt_text
from ..search.index import Hit
from ..search.plain_words import syntax_note
from ..search.query import QueryError, parse
from ..search.query_terms import parse_query
from ..search.stemmer import stem
from .hit_pages import page_of_hits
from .listing import OFFSET_MESSAGE, applicable
from .snapshot import WORD, Snapshot, active_filters

EXCERPT_CHARS = 240
NO_MATCH_HINT = "No section matches. Try other words, fewer words, or list() to browse."


def search_passages(
    snaps: Sequence[Snapshot],
    max_chars: int,
    query: Any,
    limit: Any,
    lang: Any = None,
    offset: Any = 0,
    retriever: Any = None,
    qualified: bool = False,
) -> SearchAnswer:
    """One page of the best passages of `snaps` for `query`; with `lang`, only in docs of
    that language. `qualified` is a shelf's answer (`handbook.libraries.shelf`): every hit
    carries its ref and library, and ties between libraries go by ref."""
    checked = check_limit(limit, DEFAULT_SEARCH_LIMIT)
    if isinstance(checked, dict):
        return {"count": 0, "hits": [], "error": checked}
    start = check_offset(offset)
    if start is None:
        return {"count": 0, "hits": [], "error": refusal("invalid_offset", OFFSET_MESSAGE)}
    active = active_filters({"lang": lang})
    usable, problem = applicable(snaps, active)
    if problem:
        return {"count": 0, "hits": [], "returned": 0, "hint": problem}
    found: list[tuple[Snapshot, Hit]] = []  # every library's best, merged below
    total = 0
    try:
        rankers = [snap.retriever_named(retriever) for snap in usable]
        fitted = parse_query(query, [snap.retriever for snap in usable])
        for snap, ranker in zip(usable, rankers, strict=True):
            docs = set(snap.languages[str(lang)]) if active else None
            count, hits = ranker.rank(fitted.clauses, start + checked, docs=docs, text=query)
            total += count
            found += [(snap, hit) for hit in hits]
    except QueryError as exc:
        return {"count": 0, "hits": [], "error": exc.to_dict()}
    found.sort(key=lambda f: _order(f[0], f[1], qualified))
    page = [_rendered(snap, hit, qualified) for snap, hit in found[start : start + checked]]
    hint = "" if page or total else NO_MATCH_HINT
    # an unshortened query's clauses are those it was parsed to: not parsed again
    parsed = parse(query) if fitted.note else fitted.clauses
    note = " ".join(n for n in (syntax_note(parsed), fitted.note) if n)
    return page_of_hits(page, total, start, hint, max_chars, note)


def _order(snap: Snapshot, hit: Hit, qualified: bool) -> tuple[float, str, str, str]:
    """Best first, by the score a hit shows. The sort is stable: equal scores keep one
    library's own order (its retriever's), and on a shelf they go by ref, attached file
    and anchor."""
    if not qualified:
        return (-round(hit.score, 4), "", "", "")
    passage = snap.retriever.passage(hit.entry)
    ref = f"{snap.name}:{passage.doc_id}"
    return (-round(hit.score, 4), ref, passage.resource or "", passage.anchor or "")


def _rendered(snap: Snapshot, hit: Hit, qualified: bool) -> SearchHit:
    rendered = render_hit(snap, hit)
    if qualified:
        return {**rendered, "ref": f"{snap.name}:{rendered['id']}", "library": snap.name}
    return rendered


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
    if (pedigree := hit_pedigree(snap, passage.doc)) is not None:
        rendered["pedigree"] = pedigree
    return rendered


def hit_pedigree(snap: Snapshot, doc: int) -> Pedigree | None:
    """The pedigree a hit of doc `doc` shows. Without reviewers only a retired doc has
    one, and the search file says which docs are (`doc_retired`): the catalog entry of
    a current doc is then never parsed."""
    retired = snap.retriever.index.doc_retired
    if retired is not None and not retired[doc] and snap.ledger is None:
        return None
    return snap.pedigree(snap.doc_at(doc))


def excerpt(snap: Snapshot, hit: Hit) -> str:
    """About EXCERPT_CHARS of the passage, from just before the first word that matched."""
    return excerpt_of(passage_text(snap, hit.entry), hit.terms)


def passage_text(snap: Snapshot, entry: int) -> str:
    """The text an entry's excerpt is cut from: stored in the search file when it was
    built with it (no content file is read), else cut from the verified content file."""
    texts = snap.retriever.index.texts
    if texts is not None and entry < len(texts):
        return texts[entry]
    passage = snap.retriever.passage(entry)
    snap.doc_at(passage.doc)  # its verified entry vouches for the content file read next
    return excerpt_text(snap.bundle.read(passage.content), passage.start, passage.end)


def excerpt_of(text: str, terms: frozenset[str]) -> str:
    """About EXCERPT_CHARS of `text`, from just before the first word whose stem is one
    of `terms` (from its start when none is)."""
    position = 0
    starts = _word_starts(terms)
    for candidate in starts.finditer(text) if starts is not None else ():
        word = WORD.match(text, candidate.start())
        if word is not None and stem(word.group().lower()) in terms:
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
