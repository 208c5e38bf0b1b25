"""Long queries shortened, never refused: what an agent's pasted question becomes.

Agents send whole questions and paragraphs. A query of at most MAX_TERMS terms runs as
written, so ranking stays exactly lunr's. Over the cap, plain words (no ``+``/``-``,
``field:``, ``^``, ``~`` or ``*``) give way, in this order, until the query fits:

1. stop words (lunr's list; they are not in the index, so no score changes);
2. repeated words, merged into one term weighted by their count (lunr adds a
   repeated word's boost, so scores stay the same);
3. words found nowhere in the library (they cannot match), then the least informative
   words: the ones most passages hold (lowest IDF).

The answer's `note` says what was dropped or merged. Words with syntax are the agent's
deliberate choices and are never dropped: a query holding more of them than the cap
stays the structured error `too_many_terms`.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from lunr.stop_word_filter import WORDS as STOP_WORDS

from .query import MAX_TERMS, Clause, QueryError, parse
from .stemmer import stem

NOTE_TERMS = 12
"""Terms named per step in a note; the rest are counted."""


@functools.cache
def stop_terms() -> frozenset[str]:
    """Stop words as a parsed query holds them (stemmed): made for the first query over
    the cap, not at import (stemming them is about 3 ms of every cold start)."""
    return frozenset(stem(word) for word in STOP_WORDS)


class Frequencies(Protocol):
    """What the shortening needs to know of an index (every `Retriever` has it)."""

    def document_frequency(self, term: str) -> int: ...

    def passage_count(self) -> int: ...


class Fitted(NamedTuple):
    clauses: list[Clause]
    note: str
    """What was dropped or merged; "" when the query ran as written."""


def idf(frequency: int, passages: int) -> float:
    """lunr's inverse document frequency of a term held by `frequency` of `passages`."""
    return math.log(1 + abs((passages - frequency + 0.5) / (frequency + 0.5)))


def parse_query(text: object, indexes: Sequence[Frequencies]) -> Fitted:
    """`text` parsed (`handbook.search.query.parse`) and fitted to the term cap, with document
    frequencies summed over `indexes` (the libraries the query runs on)."""
    return fit(parse(text), lambda term: sum(i.document_frequency(term) for i in indexes))


def fit(clauses: Sequence[Clause], frequency: Callable[[str], int]) -> Fitted:
    """At most MAX_TERMS clauses (see the module docstring); raises QueryError
    `too_many_terms` when the words with syntax alone are over the cap."""
    if len(clauses) <= MAX_TERMS:
        return Fitted(list(clauses), "")
    syntax = sum(1 for c in clauses if not c.plain)
    if syntax > MAX_TERMS:
        raise QueryError(
            "too_many_terms",
            f"the query has {syntax} terms with syntax (+, -, field:, ^, ~ or *), which are "
            f"never dropped; the limit is {MAX_TERMS}: remove some, or write them as plain words",
        )
    notes: list[str] = []
    # (clause, droppable): a merged word keeps its place and stays droppable
    kept = [(c, c.plain) for c in clauses]
    stop = stop_terms()
    stops = [c.term for c, plain in kept if plain and c.term in stop]
    if stops:
        kept = [(c, plain) for c, plain in kept if not (plain and c.term in stop)]
        notes.append(f"dropped stop words ({_named(stops)})")
    if len(kept) > MAX_TERMS:
        kept, merged = _merge(kept)
        if merged:
            notes.append(f"merged repeated words ({_named(merged)})")
    if len(kept) > MAX_TERMS:
        frequencies = {c.term: frequency(c.term) for c, plain in kept if plain}
        droppable = [n for n, (_, plain) in enumerate(kept) if plain]
        # absent words first, then the most frequent; among equals the later word
        droppable.sort(
            key=lambda n: (frequencies[kept[n][0].term] > 0, -frequencies[kept[n][0].term], -n)
        )
        dropped = sorted(droppable[: len(kept) - MAX_TERMS])
        absent = [kept[n][0].term for n in dropped if not frequencies[kept[n][0].term]]
        common = [kept[n][0].term for n in dropped if frequencies[kept[n][0].term]]
        if absent:
            notes.append(f"dropped words found nowhere in the library ({_named(absent)})")
        if common:
            notes.append(f"dropped the least informative words ({_named(common)})")
        gone = set(dropped)
        kept = [pair for n, pair in enumerate(kept) if n not in gone]
    note = (
        f"The query had {len(clauses)} terms, over the limit of {MAX_TERMS}, so it ran "
        f"with {len(kept)}: " + "; ".join(notes) + "."
    )
    return Fitted([c for c, _ in kept], note)


def _merge(kept: list[tuple[Clause, bool]]) -> tuple[list[tuple[Clause, bool]], list[str]]:
    """Each repeated plain word once, at its first place, boosted by its count."""
    counts = Counter(c.term for c, plain in kept if plain)
    seen: set[str] = set()
    out: list[tuple[Clause, bool]] = []
    for clause, plain in kept:
        if plain:
            if clause.term in seen:
                continue
            seen.add(clause.term)
            if counts[clause.term] > 1:
                clause = clause._replace(boost=float(counts[clause.term]))
        out.append((clause, plain))
    return out, [f"{t} x{n}" for t, n in counts.items() if n > 1]


def _named(terms: Sequence[str]) -> str:
    shown = ", ".join(terms[:NOTE_TERMS])
    return shown + (f" and {len(terms) - NOTE_TERMS} more" if len(terms) > NOTE_TERMS else "")
