"""lunr's scores, summed posting by posting, over the search file's posting groups.

Each field's query vector holds the boost of every expanded term; an entry's score is
the sum over fields of (query · field vector) / |query|. A query's `Plan` lists the
posting lists it reads in lunr's summation order (by field, then term, then group), so
`exhaustive` adds the same floats in the same order as lunr and gets its scores to the
last bit. Among equal scores lunr keeps the order in which it first met the entries
(`first_met`). The top-k path (`handbook.search.top_k`) answers the same from fewer
postings.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from .postings import Postings

THOUSAND = 1000
"""Scores are stored as lunr's field-vector scores x 1000 (lunr rounds to 3 decimals)."""


class PostingList(NamedTuple):
    """One posting list a query reads: a term in a field, in one group."""

    field: int
    group: int
    number: int
    start: int
    stop: int
    weight: float
    """The term's boost in the field's query vector."""
    magnitude: float
    """The length of the field's query vector."""


class Plan(NamedTuple):
    lists: list[PostingList]
    """In lunr's summation order: by field, then term (`term_lunr_index`), then group."""
    required: list[set[int]]
    prohibited: set[int]
    words: frozenset[str]
    encounter: list[tuple[int, int]]
    """The (term, field) postings in the order lunr walks them."""


class Corpus(Protocol):
    """What scoring reads of a search file (`handbook.search.index.SearchIndex`)."""

    groups: list[Postings]
    """The docs' postings, then those of attached markdown files when there are any."""
    entry_doc: memoryview
    """Per doc entry (numbered before the attached files'), its doc."""

    def doc_of(self, entry: int) -> int: ...


def exhaustive(groups: Sequence[Postings], plan: Plan) -> dict[int, float]:
    """Every matching entry's score, summed posting by posting in lunr's order."""
    scores: dict[int, float] = {}
    for _, lists in itertools.groupby(plan.lists, key=lambda x: x.field):
        dots: dict[int, float] = {}
        magnitude = 1.0
        for posting_list in lists:
            group = groups[posting_list.group]
            start, stop, magnitude = (
                posting_list.start,
                posting_list.stop,
                posting_list.magnitude,
            )
            # weight * (score / 1000), computed in C; x * 1.0 and x / 1.0 are exactly x
            values: Iterable[float] = map(THOUSAND.__rtruediv__, group.scores[start:stop])
            if posting_list.weight != 1.0:
                values = map(posting_list.weight.__mul__, values)
            _accumulate(dots, group.entries[start:stop], values)
        if magnitude != 1.0:
            dots = dict(
                zip(dots.keys(), map(magnitude.__rtruediv__, dots.values()), strict=True)
            )  # dot / magnitude
        _accumulate(scores, dots.keys(), dots.values())
    if plan.required:
        keep = set(scores).intersection(*plan.required)
        scores = {e: v for e, v in scores.items() if e in keep}
    for entry in plan.prohibited.intersection(scores) if plan.prohibited else ():
        del scores[entry]
    return scores


def first_met(
    groups: Sequence[Postings], fields: int, encounter: list[tuple[int, int]], entries: set[int]
) -> dict[int, tuple[int, int]]:
    """For each entry, (position in `encounter` of the first posting holding it, the
    entry): lunr's insertion order, by bisection in the entry-ordered postings."""
    order: dict[int, tuple[int, int]] = {}
    left = set(entries)
    for i, (term, f) in enumerate(encounter):
        if not left:
            break
        for group in groups:
            start, stop = group.span(term, f, fields)
            members = group.entries[start:stop]
            for entry in list(left):
                j = bisect.bisect_left(members, entry)
                if j < len(members) and members[j] == entry:
                    order[entry] = (i, entry)
                    left.discard(entry)
    return order


def entries_with(
    groups: Sequence[Postings], fields: int, terms: list[int], wanted: list[int]
) -> set[int]:
    """The entries holding any of `terms` in any of the `wanted` fields."""
    out: set[int] = set()
    for term in terms:
        for f in wanted:
            for group in groups:
                start, stop = group.span(term, f, fields)
                out.update(group.entries[start:stop])
    return out


def _accumulate(totals: dict[int, float], keys: Iterable[int], values: Iterable[float]) -> None:
    """totals[k] += v for each pair, in order. Into an empty dict that is one C-speed
    `update` (0.0 + v is exactly v), which is the common case of a one-word query."""
    if not totals:
        totals.update(zip(keys, values, strict=True))
        return
    get = totals.get
    for key, value in zip(keys, values, strict=True):
        totals[key] = get(key, 0.0) + value
