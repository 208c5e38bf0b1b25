"""`ask`: a grounded answer that quotes the library, or an honest "insufficient".

It never writes text of its own. The question's key words (stop words dropped; a long
question shortened to the term cap by `handbook.search.query_terms`) are searched as plain
words, and the best passages are quoted with their sources when they cover the
question. Coverage is weighed: each key term (stemmed) counts by its IDF in the library,
so "before" or "work", which most passages hold, count little and a model number or a
rare technical word counts much, and a word the library never uses counts most (its
absence is the best sign the library does not cover the question). Grounded means at
least GROUNDED_COVERAGE of the question's weight over the quoted passages and
GROUNDED_TOP_COVERAGE in the best one alone (evidence must be concentrated, not a word
here and a word there); bench/README.md says how these were calibrated. Otherwise the
answer is `insufficient`: the closest passages are listed and the missing terms named,
and no procedure is offered. `unavailable` when no verified library is loaded.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from lunr.stop_word_filter import WORDS as STOP_WORDS

from ..access.actor import CURRENT_ACTOR, id_problem
from ..answers import AskAnswer, SearchHit, Source
from ..bounds import json_len, refusal
from ..search.query import Clause, QueryError
from ..search.query_terms import Fitted, idf, parse_query
from ..search.retriever import Retriever
from ..search.stemmer import stem
from .citing import AllowedSources
from .searching import render_hit
from .snapshot import Snapshot

DEFAULT_ASK_SOURCES = 3
MAX_ASK_SOURCES = 10
GROUNDED_COVERAGE = 0.5
GROUNDED_TOP_COVERAGE = 0.4
RESERVE_CHARS = 400
_WORDS = re.compile(r"\w+")
_ARROW = " \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "

Passage = tuple[float, str, Snapshot, SearchHit]
"""(score, ref, library, hit)"""


CAUTION_STATES = ("suspect", "contested")
"""Pedigree states that make a grounded answer say so: its quote may no longer be true."""


def key_words(text: str) -> list[str]:
    """The question's words that carry meaning: lowercased, stop words dropped."""
    words = [w.lower() for w in _WORDS.findall(text)]
    meaningful = (w for w in words if w not in STOP_WORDS and (not w.isdigit() or len(w) > 1))
    return list(dict.fromkeys(meaningful))


def key_terms(text: str) -> list[str]:
    """The question's key words as the index holds them: stemmed."""
    return list(dict.fromkeys(stem(w) for w in key_words(text)))


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
    words = key_words(question)
    if not words:
        answer = "The question has no words the library could match (only stop words)."
        return {**refused, "answer": answer, "key_terms": []}
    lexical = [snap.retriever for snap in libraries]
    try:  # the words, not the stems: parsing stems them
        fitted = parse_query(" ".join(words), lexical)
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
    best = _passages(libraries, rankers, fitted.clauses, question, limit * 2, sources)
    while True:
        out = _answer(best[:limit], weights, names, len(libraries) > 1)
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
    clauses: Sequence[Clause],
    question: str,
    limit: int,
    sources: AllowedSources | None,
) -> list[Passage]:
    """The best passages of every library that may be cited, best first."""
    passages: list[Passage] = []
    for snap, ranker in zip(libraries, rankers, strict=True):
        allowed = sources.positions(snap) if sources is not None else None
        if allowed is not None and not allowed:
            continue
        _, hits = ranker.rank(clauses, limit, docs=allowed, text=question)
        for hit in hits:
            rendered = render_hit(snap, hit)
            passages.append((rendered["score"], f"{snap.name}:{rendered['id']}", snap, rendered))
    passages.sort(key=lambda p: (-p[0], p[1], p[3].get("resource", ""), p[3].get("anchor") or ""))
    return passages


def _answer(
    best: list[Passage], weights: dict[str, float], names: str, qualified: bool
) -> AskAnswer:
    """Quotes when `best` covers enough of the key terms' weight (IDF), else the refusal."""
    terms = list(weights)
    covered = [
        set(terms) & snap.passage_terms(hit["id"], hit.get("anchor"), hit.get("resource"))
        for _, _, snap, hit in best
    ]
    union = set().union(*covered) if covered else set()
    total = sum(weights.values()) or 1.0
    coverage = sum(weights[t] for t in union) / total
    top = max((sum(weights[t] for t in c) for c in covered[:1]), default=0.0) / total
    sources = [_source(snap, hit) for _, _, snap, hit in best]
    grounded = bool(best) and coverage >= GROUNDED_COVERAGE and top >= GROUNDED_TOP_COVERAGE
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
