"""`ask`: a grounded answer that quotes the library, or an honest "insufficient".

It never writes text of its own. The question's key words (stop words dropped) are
searched as plain words, and the best passages are quoted with their sources when they
cover the question: at least GROUNDED_COVERAGE of its key terms over the quoted
passages, and GROUNDED_TOP_COVERAGE in the best one alone (evidence must be
concentrated, not a word here and a word there). Otherwise the answer is
`insufficient`: the closest passages are listed and the missing terms named, and no
procedure is offered. `unavailable` when no verified library is loaded.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from lunr.stop_word_filter import WORDS as STOP_WORDS

from .answers import AskAnswer, SearchHit, Source
from .bounds import json_len, refusal
from .query import QueryError, parse
from .searching import render_hit
from .snapshot import Snapshot
from .stemmer import stem

DEFAULT_ASK_SOURCES = 3
MAX_ASK_SOURCES = 10
MAX_KEY_WORDS = 32
GROUNDED_COVERAGE = 0.75
GROUNDED_TOP_COVERAGE = 0.5
RESERVE_CHARS = 400
_WORDS = re.compile(r"\w+")
_ARROW = " \N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "

Passage = tuple[float, str, Snapshot, SearchHit]
"""(score, ref, library, hit)"""


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
    correlation_id: str | None = None,
    max_chars: int | None = None,
) -> AskAnswer:
    """See the module docstring."""
    names = ", ".join(f"{snap.name} {snap.version}" for snap in libraries)
    base: AskAnswer = {
        "library": names or None,
        "version": libraries[0].version if len(libraries) == 1 else None,
        "correlation_id": correlation_id or uuid.uuid4().hex,
    }
    if not libraries:
        answer = "No verified library is loaded, so there is no evidence to answer from."
        return {**base, "answer": answer, "evidence_state": "unavailable", "sources": []}
    refused: AskAnswer = {**base, "evidence_state": "insufficient", "sources": []}
    if not isinstance(question, str) or not question.strip():
        message = "question must be a non-empty string"
        error = refusal("bad_arguments", message)
        return {**refused, "answer": "Ask a question in words.", "error": error}
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ASK_SOURCES:
        message = f"limit must be a whole number from 1 to {MAX_ASK_SOURCES}"
        return {**refused, "answer": "", "error": refusal("bad_arguments", message)}
    words = key_words(question)[:MAX_KEY_WORDS]
    terms = list(dict.fromkeys(stem(w) for w in words))
    if not terms:
        answer = "The question has no words the library could match (only stop words)."
        return {**refused, "answer": answer, "key_terms": []}
    passages = _passages(libraries, words, limit * 2)
    while True:
        out = _answer(passages[:limit], terms, names, len(libraries) > 1)
        if not max_chars or limit == 1 or json_len(out) + RESERVE_CHARS <= max_chars:
            break
        limit -= 1  # fewer quoted passages, to stay within the operator's response bound
    return {**base, **out}


def _passages(libraries: Sequence[Snapshot], words: list[str], limit: int) -> list[Passage]:
    """The best passages of every library for the words (not the stems: parsing stems
    them), best first."""
    passages: list[Passage] = []
    try:
        clauses = parse(" ".join(words))
    except QueryError:
        return passages
    for snap in libraries:
        _, hits = snap.retriever.rank(clauses, limit)
        for hit in hits:
            rendered = render_hit(snap, hit)
            passages.append((rendered["score"], f"{snap.name}:{rendered['id']}", snap, rendered))
    passages.sort(key=lambda p: (-p[0], p[1], p[3].get("resource", ""), p[3].get("anchor") or ""))
    return passages


def _answer(best: list[Passage], terms: list[str], names: str, qualified: bool) -> AskAnswer:
    covered = [
        set(terms) & snap.passage_terms(hit["id"], hit.get("anchor"), hit.get("resource"))
        for _, _, snap, hit in best
    ]
    union = set().union(*covered) if covered else set()
    coverage = len(union) / len(terms)
    top = len(covered[0]) / len(terms) if covered else 0.0
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
            f"{len(union)} of {len(terms)} key terms"
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
        **({"resource": hit["resource"]} if "resource" in hit else {}),
    }
