"""Whether a passage supports a question: by the words its quote carries, or by meaning.

Counting shared words refused paraphrases and grounded unrelated passages that share
common ones. A passage's evidence here is

- its coverage: the question's key terms (each weighed by its IDF in the library) that
  the passage's quote (`handbook.handlers.quotes`), its heading and its doc's title hold,
  also where they share a stem of at least PREFIX_CHARS letters ("config" and
  "configuration"), and for a doc's opening passage its keywords, aliases (the library's
  own synonyms) and summary;
- its closeness: the cosine of the question's embedding with the passage's, when the
  bundle has vectors and the semantic extra is installed (whichever retriever ranked it);
- its heading match: the weight its heading holds (with its doc's title when the
  heading holds a word of the question); a section titled with the question's words
  goes before one that only mentions them.

A passage supports the question when its coverage reaches GROUNDED_TOP_COVERAGE, or when
it is close in meaning (GROUNDED_SIMILARITY) and still holds SIMILAR_FLOOR of the weight.
The answer is grounded when its first passage supports it and the quoted passages
together hold GROUNDED_COVERAGE, or the first is close in meaning. The constants were
chosen on the development set (bench/ask_questions.json, `bench/ask_quality.py --sweep`)
and checked on the held-out set (bench/ask_heldout.json); bench/README.md has both.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from ..answers import SearchHit
from ..search.query import QueryError
from ..search.retriever import Retriever
from .quotes import Matcher, quote, stems
from .snapshot import Snapshot

GROUNDED_COVERAGE = 0.4
GROUNDED_TOP_COVERAGE = 0.4
GROUNDED_SIMILARITY = 0.5
SIMILAR_FLOOR = 0.0
HEADING_MATCH = 0.5
PREFIX_CHARS = 5


class Evidence(NamedTuple):
    score: float
    ref: str
    snap: Snapshot
    hit: SearchHit
    """The rendered hit; its excerpt is the quote (the search excerpt when the passage
    has no text under its heading: a lead, never quoted)."""
    quotable: bool
    covered: frozenset[str]
    coverage: float
    heading: float
    similarity: float | None

    @property
    def supports(self) -> bool:
        close = self.similarity is not None and self.similarity >= GROUNDED_SIMILARITY
        return self.quotable and (
            self.coverage >= GROUNDED_TOP_COVERAGE or (close and self.coverage >= SIMILAR_FLOOR)
        )


def matcher(terms: Collection[str]) -> Matcher:
    """The question's terms a set of stems holds: equal, or one a prefix of the other of
    at least PREFIX_CHARS letters."""
    wanted = frozenset(terms)
    long = [t for t in wanted if len(t) >= PREFIX_CHARS]

    def matched(held: Collection[str]) -> set[str]:
        found = set(wanted & set(held))
        for term in long:
            if term not in found and any(
                len(s) >= PREFIX_CHARS and (s.startswith(term) or term.startswith(s)) for s in held
            ):
                found.add(term)
        return found

    return matched


def weighed(covered: Collection[str], weights: Mapping[str, float]) -> float:
    """The share of the question's weight that `covered` holds."""
    total = sum(weights.values()) or 1.0
    return sum(weights.get(t, 0.0) for t in covered) / total


def evidence(
    snap: Snapshot,
    hit: SearchHit,
    entry: int,
    weights: Mapping[str, float],
    matched: Matcher,
    similarity: float | None,
) -> Evidence:
    """One passage's quote and evidence (the hit comes back with the quote as excerpt)."""
    passage = snap.retriever.passage(entry)
    doc = snap.doc_at(passage.doc)  # its verified entry vouches for the content file read next
    text = snap.bundle.read(passage.content)[passage.start : passage.end].decode("utf-8", "replace")
    quoted, covered = quote(text, weights, matched)
    names = [passage.title, doc.title, passage.resource]
    if not passage.anchor and not passage.resource:  # a doc's opening passage
        names += [*doc.keywords, *doc.aliases, doc.summary]
    covered |= matched(stems("\n".join(names)))
    heading = matched(stems(passage.title))  # with the doc's title when it holds a word
    if heading or not (passage.anchor or passage.resource):
        heading |= matched(stems(doc.title))
    return Evidence(
        hit["score"],
        f"{snap.name}:{hit['id']}",
        snap,
        {**hit, "excerpt": quoted or hit["excerpt"]},
        bool(quoted),
        frozenset(covered),
        weighed(covered, weights),
        weighed(heading, weights),
        similarity,
    )


def closeness(
    snap: Snapshot, ranker: Retriever, question: str, entries: Sequence[int]
) -> list[float] | None:
    """Each entry's cosine with the question when the bundle's vectors can be read here
    (the ranker's own, or a semantic retriever opened for it), else None."""
    close = ranker.closeness(question, entries)
    if close is not None:
        return close
    try:
        semantic = snap.retriever_named("semantic")
    except QueryError:  # no vectors, no semantic extra, or another model: words only
        return None
    return semantic.closeness(question, entries)


def ordered(found: list[Evidence]) -> list[Evidence]:
    """Passages whose heading holds HEADING_MATCH of the question's weight first (the more
    the earlier), then those that support it, each group in the retriever's order (the
    sort is stable)."""
    return sorted(
        found, key=lambda e: (-e.heading if e.heading >= HEADING_MATCH else 0.0, not e.supports)
    )


def grounded(quoted: Sequence[Evidence], weights: Mapping[str, float]) -> bool:
    """Whether the quoted passages (the best first) ground an answer."""
    if not quoted or not quoted[0].supports:
        return False
    first = quoted[0]
    if first.similarity is not None and first.similarity >= GROUNDED_SIMILARITY:
        return True
    return weighed(frozenset().union(*(e.covered for e in quoted)), weights) >= GROUNDED_COVERAGE
