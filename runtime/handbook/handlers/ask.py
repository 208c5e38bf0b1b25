"""`ask`: a grounded answer that quotes the library, or an honest "insufficient".

It never writes text of its own. The question is read as plain words, never as query
syntax (`handbook.search.plain_words`); its key words (stop words dropped; a long
question shortened to the term cap by `handbook.search.query_terms`) rank the passages
with the retriever asked for, and each candidate is quoted by the sentences or lines
that hold the question's words (`handbook.handlers.quotes`). Key terms count by their IDF
in the library, so "before" or "work", which most passages hold, count little, a rare
technical word much, and a word the library never uses most (its absence is the best sign
the library does not cover the question). `handbook.handlers.grounding` weighs each
passage's quote, heading and closeness in meaning, puts sections titled with the
question's words first, and says whether the quoted passages ground an answer. Otherwise
the answer is `insufficient`: the closest passages are listed as leads and the missing
terms named, and no procedure is offered. `unavailable` when no verified library is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..access.actor import CURRENT_ACTOR, id_problem
from ..answers import AskAnswer, SearchHit, Source
from ..bounds import DEFAULT_ASK_SOURCES, json_len, refusal
from ..search import plain_words
from ..search.query import QueryError
from ..search.query_terms import Fitted, fit, idf
from ..search.retriever import Retriever
from ..search.stemmer import stem
from . import grounding
from .citing import AllowedSources
from .grounding import Evidence
from .searching import render_hit
from .snapshot import Snapshot

MAX_ASK_SOURCES = 10
CANDIDATES = 4
"""Passages ranked per quoted one: the choice among them reorders by heading and support."""
RESERVE_CHARS = 400
_ARROW = " \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "

CAUTION_STATES = ("suspect", "contested")
"""Pedigree states that make a grounded answer say so: its quote may no longer be true."""


def key_words(text: str, libraries: Sequence[Snapshot] = ()) -> list[str]:
    """The question's words that carry meaning, read as plain words (no query syntax):
    lowercased, stop words dropped; a token with inner punctuation ("h2a.z") stays whole
    where one of `libraries` indexes it so."""
    return plain_words.words(text, _indexed(libraries))


def key_terms(text: str, libraries: Sequence[Snapshot] = ()) -> list[str]:
    """The question's key words as the index holds them: stemmed."""
    return list(dict.fromkeys(stem(w) for w in key_words(text, libraries)))


def question_query(text: str, libraries: Sequence[Snapshot]) -> Fitted:
    """The question as plain clauses fitted to the term cap (QueryError when too long)."""
    lexical = [snap.retriever for snap in libraries]
    clauses = plain_words.clauses(text, _indexed(libraries))
    return fit(clauses, lambda term: sum(r.document_frequency(term) for r in lexical))


def _indexed(libraries: Sequence[Snapshot]) -> Callable[[str], bool]:
    return lambda term: any(snap.retriever.document_frequency(term) for snap in libraries)


def ask(
    libraries: Sequence[Snapshot],
    question: Any,
    limit: Any = DEFAULT_ASK_SOURCES,
    correlation_id: Any = None,
    max_chars: int | None = None,
    retriever: Any = None,
    sources: AllowedSources | None = None,
) -> AskAnswer:
    """See the module docstring. Only passages of `sources` are quoted (any when None).
    A `correlation_id` keeps to the actor values' grammar (`handbook.access.actor.id_problem`):
    it is echoed and logged, so anything else is refused (`bad_arguments`)."""
    import uuid  # on the first question: a process that only searches never loads it

    names = ", ".join(f"{snap.name} {snap.version}" for snap in libraries)
    bad_id = None if correlation_id is None else id_problem(correlation_id, "correlation_id")
    base: AskAnswer = {
        "library": names or None,
        "version": libraries[0].version if len(libraries) == 1 else None,
        # a refused id is never echoed: the answer (and its log line) gets a new one
        "correlation_id": uuid.uuid4().hex if bad_id or correlation_id is None else correlation_id,
    }
    actor = CURRENT_ACTOR.get()
    if actor is not None:  # whom the question was asked for, as the transport said
        base["actor"] = actor.info()
    refused: AskAnswer = {**base, "evidence_state": "insufficient", "sources": []}
    if bad_id:
        return {**refused, "answer": "", "error": refusal("bad_arguments", bad_id)}
    if not libraries:
        answer = "No verified library is loaded, so there is no evidence to answer from."
        return {**base, "answer": answer, "evidence_state": "unavailable", "sources": []}
    if not isinstance(question, str) or not question.strip():
        message = "question must be a non-empty string"
        error = refusal("bad_arguments", message)
        return {**refused, "answer": "Ask a question in words.", "error": error}
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ASK_SOURCES:
        message = f"limit must be a whole number from 1 to {MAX_ASK_SOURCES}"
        return {**refused, "answer": "", "error": refusal("bad_arguments", message)}
    try:
        fitted = question_query(question, libraries)
        if not fitted.clauses:
            answer = "The question has no words the library could match (only stop words)."
            return {**refused, "answer": answer, "key_terms": []}
        rankers = [snap.retriever_named(retriever) for snap in libraries]
    except QueryError as exc:
        return {**refused, "answer": "", "error": exc.to_dict()}
    out = _quoted(libraries, names, question, fitted, rankers, limit, max_chars, sources)
    return {**base, **out}


def _quoted(
    libraries: Sequence[Snapshot],
    names: str,
    question: str,
    fitted: Fitted,
    rankers: Sequence[Retriever],
    limit: int,
    max_chars: int | None,
    sources: AllowedSources | None,
) -> AskAnswer:
    """The answer from the passages `rankers` find best for the question's key terms
    (`fitted`): grounded or insufficient, with as many sources (up to `limit`) as the
    response bound takes."""
    lexical = [snap.retriever for snap in libraries]
    terms = list(dict.fromkeys(c.term for c in fitted.clauses))
    passages = sum(r.passage_count() for r in lexical)
    weights = {t: idf(sum(r.document_frequency(t) for r in lexical), passages) for t in terms}
    found = _passages(libraries, rankers, fitted, question, weights, limit, sources)
    named = grounding.names(question, weights)
    while True:
        out = _answer(found, limit, weights, named, names, len(libraries) > 1)
        if not max_chars or limit == 1 or json_len(out) + RESERVE_CHARS <= max_chars:
            break
        limit -= 1  # fewer quoted passages, to stay within the operator's response bound
    if fitted.note:
        out["note"] = fitted.note
    caution = _caution(out)
    if caution:
        out["caution"] = caution
        out["answer"] = f"Caution: {caution}\n\n{out['answer']}"
    return out


def _caution(out: AskAnswer) -> str:
    """For a grounded answer whose top source is suspect or contested: which and why."""
    if out.get("evidence_state") != "grounded" or not out.get("sources"):
        return ""
    top = out["sources"][0]
    pedigree = top.get("pedigree") or {}
    state = pedigree.get("state")
    if state not in CAUTION_STATES:
        return ""
    why = pedigree.get("verify_first") or state
    return f"the top source, {top['ref']}, is {state} ({why}); verify it before acting on it."


def _passages(
    libraries: Sequence[Snapshot],
    rankers: Sequence[Retriever],
    fitted: Fitted,
    question: str,
    weights: dict[str, float],
    limit: int,
    sources: AllowedSources | None,
) -> list[Evidence]:
    """The best passages of every library that may be cited, each quoted and weighed
    (`handbook.handlers.grounding`), in the order ask quotes them."""
    matched = grounding.matcher(weights)
    found: list[Evidence] = []
    for snap, ranker in zip(libraries, rankers, strict=True):
        allowed = sources.positions(snap) if sources is not None else None
        if allowed is not None and not allowed:
            continue
        _, hits = ranker.rank(fitted.clauses, limit * CANDIDATES, docs=allowed, text=question)
        close = grounding.closeness(snap, ranker, question, [h.entry for h in hits])
        for n, hit in enumerate(hits):
            similarity = close[n] if close is not None else None
            rendered = render_hit(snap, hit)
            found.append(
                grounding.evidence(snap, rendered, hit.entry, weights, matched, similarity)
            )
    found.sort(
        key=lambda e: (-e.score, e.ref, e.hit.get("resource", ""), e.hit.get("anchor") or "")
    )
    return grounding.ordered(found)


def _answer(
    found: list[Evidence],
    limit: int,
    weights: dict[str, float],
    named: list[str],
    names: str,
    qualified: bool,
) -> AskAnswer:
    """Quotes the passages that support the question when they ground it
    (`handbook.handlers.grounding.grounded`), else the refusal with the best as leads.
    A name of the question (`named`) that the shown passages do not hold exactly is
    missing even where a stem prefix covered it."""
    terms = list(weights)
    supporting = [e for e in found if e.supports][:limit]
    grounded = grounding.grounded(supporting, weights, named)
    shown = supporting if grounded else found[:limit]
    absent = {stem(w) for n in grounding.unheld(shown, named) for w in key_words(n)}
    union = frozenset().union(*(e.covered for e in shown)) - absent
    coverage = grounding.weighed(union, weights)
    sources = [_source(e.snap, e.hit) for e in shown]
    missing = [t for t in terms if t not in union]
    if grounded:
        lines = [f"From {len(sources)} passage(s) of {names}:"]
        for n, s in enumerate(sources, 1):
            parts = [s["title"], s.get("resource"), s.get("section")]
            where = _ARROW.join(part for part in parts if part)
            cited = s["ref"] if qualified else s["document_id"]
            lines.append(f"{n}. {where} [{cited}]: \u201c{s['excerpt']}\u201d")
        answer = "\n".join(lines)
    else:
        answer = (
            "The library does not cover this question well enough: its best passages match "
            f"{len(union)} of {len(terms)} key terms ({coverage:.0%} of their weight)"
            + (f" (missing: {', '.join(missing)})" if missing else "")
            + ". No answer is given; the closest passages are listed as sources."
        )
    return {
        "answer": answer,
        "evidence_state": "grounded" if grounded else "insufficient",
        "sources": sources,
        "coverage": round(coverage, 3),
        "key_terms": terms,
        "missing_terms": missing,
    }


def _source(snap: Snapshot, hit: SearchHit) -> Source:
    doc = snap.doc(hit["id"])
    version = doc.meta.get("version") if doc is not None else None
    return {
        "document_id": hit["id"],
        "ref": f"{snap.name}:{hit['id']}",
        "title": hit["title"],
        "version": str(version) if version is not None else snap.version,
        "section": hit.get("section"),
        "anchor": hit.get("anchor"),
        "excerpt": hit.get("excerpt", ""),
        "score": hit["score"],
        **({"pedigree": hit["pedigree"]} if "pedigree" in hit else {}),
        **({"resource": hit["resource"]} if "resource" in hit else {}),
    }
