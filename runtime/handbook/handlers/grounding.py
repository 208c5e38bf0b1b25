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
together hold GROUNDED_COVERAGE, or the first is close in meaning, and in either case
when the quoted passages carry every name the question uses (`names`: a word with a
digit, or capitalised where a sentence does not put a capital: "1.7.0", "EM3",
"Netlify", "PlantUML"). A name cannot be said in other words, so a paraphrase keeps it,
and a passage that does not hold it exactly (no stem prefix: "graph" is not "Graphviz")
is about something else: near-topic questions about a release, product or option the
library never names were grounded on neighbouring passages before. The constants were
chosen on the development set (bench/ask_questions.json, `bench/ask_quality.py --sweep`)
and checked on the held-out set (bench/ask_heldout.json); bench/README.md has both.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from lunr.stop_word_filter import WORDS as STOP_WORDS

from ..answers import SearchHit
from ..search.query import QueryError
from ..search.retriever import Retriever
from ..search.stemmer import stem
from .quotes import Matcher, quote, stems
from .snapshot import Snapshot

GROUNDED_COVERAGE = 0.55
GROUNDED_TOP_COVERAGE = 0.4
GROUNDED_SIMILARITY = 0.575
SIMILAR_FLOOR = 0.0
HEADING_MATCH = 0.5
PREFIX_CHARS = 5
SHOUTED = 0.5
"""Share of a question's stop words written with a capital above which capitals name
nothing (a title-cased or shouted question): then only words with a digit are names."""
_TOKEN = re.compile(r"[^\s\-]+")
_EDGE = re.compile(r"^\W+|\W+$")
_PARTS = re.compile(r"\w+")
_VERSION = re.compile(r"(?=.*\d)\w+(?:\.\w+)+")


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
    shown: str
    """What the answer shows of the passage, lowercased: the quote, its heading and its
    doc's title (and, for a doc's opening passage, its keywords, aliases and summary)."""

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
    labels = "\n".join(names)
    covered |= matched(stems(labels))
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
        f"{quoted}\n{labels}".lower() if quoted else "",
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


def grounded(
    quoted: Sequence[Evidence], weights: Mapping[str, float], named: Collection[str] = ()
) -> bool:
    """Whether the quoted passages (the best first) ground an answer to a question whose
    key terms weigh `weights` and which uses the names `named` (`names`)."""
    if not quoted or not quoted[0].supports or unheld(quoted, named):
        return False
    first = quoted[0]
    if first.similarity is not None and first.similarity >= GROUNDED_SIMILARITY:
        return True
    return weighed(frozenset().union(*(e.covered for e in quoted)), weights) >= GROUNDED_COVERAGE


def names(question: str, terms: Collection[str]) -> list[str]:
    """The question's words that name something, lowercased and trimmed: those with a
    digit, and those with a capital that is not a sentence's first letter ("Netlify",
    "PDF", "JavaScript"; not "Which" or "How"). Only words whose stems are key `terms`
    count ("I" is a stop word). When more than SHOUTED of its stop words ("the", "on")
    have capitals where a sentence puts none (a title-cased or shouted question), the
    capitals say nothing and only words with a digit are names."""
    tokens = [(m.group(), _sentence_start(question, m.start())) for m in _TOKEN.finditer(question)]
    styled = [w for t, first in tokens if not first and (w := _EDGE.sub("", t)) != "I"]
    small = [w for w in styled if w.lower() in STOP_WORDS]  # never names: their capitals are style
    shouted = sum(w[:1].isupper() for w in small) > SHOUTED * len(small)
    found: list[str] = []
    for token, first in tokens:
        word = _EDGE.sub("", token)
        digit = any(c.isdigit() for c in word)
        capital = any(c.isupper() for c in word[1:]) or (word[:1].isupper() and not first)
        if not (digit or (capital and not shouted)):
            continue
        parts = [p.lower() for p in _PARTS.findall(word)]  # a dotted name may be one term
        if any(stem(p) in terms for p in [word.lower(), *parts] if p not in STOP_WORDS):
            found.append(word.lower())
    return list(dict.fromkeys(found))


def _sentence_start(text: str, at: int) -> bool:
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?:;\n" or text[at - 1 : at] == "\n"


def unheld(quoted: Sequence[Evidence], named: Collection[str]) -> list[str]:
    """The names no quoted passage shows exactly: a plain word by its stem, a version or
    dotted name with a digit ("1.7.0", "p5.js") as written, any other ("Node.js",
    "Ctrl+Alt+Delete") by each of its words."""
    held = [(e.shown, stems(e.shown)) for e in quoted]
    return [n for n in named if not any(_holds(n, text, words) for text, words in held)]


def _holds(name: str, text: str, words: frozenset[str]) -> bool:
    if _VERSION.fullmatch(name):
        return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w]|\.\w)", text) is not None
    return all(stem(p) in words for p in _PARTS.findall(name))
