"""The best k entries of a query from the heads of its posting lists, without summing
every posting when that can be proved unnecessary.

The search file keeps the best postings of each long list (its head,
`handbook.search.file_format`), and the last score of a head bounds every other posting
of the list (its tail). `top` scores entries best bound first until no bound left can
reach the k-th score. It answers exactly what scoring every posting answers
(`handbook.search.scoring.exhaustive`): the same count, hits, order and floats; when it
cannot prove the top k cheaply it says so, and every posting is scored.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import Counter
from collections.abc import Container, Iterable, Sequence
from typing import NamedTuple

from ..bundle.layout import SEARCH
from ..errors import FormatError
from .postings import Postings
from .scoring import THOUSAND, Corpus, Plan, PostingList

EXHAUSTIVE_POSTINGS = 1000
"""Queries reading at most this many postings score them all: as fast as the heads."""
POSTINGS_PER_LOOKUP = 2
"""The top-k path gives up (and every posting is scored) once it would score one entry,
a bisection per list, for every this many postings the query reads per list: measured
on msdocs-10k's bench queries, 2 beat 1, 4 and 8 in total time and at p99."""

_Recipe = list[tuple[float, list[tuple[dict[int, int], bool, int, int, float]]]]
"""How `_exact` sums one group's entries: see `_recipe`."""


class _OverBudget(Exception):
    """The top-k path scored as many entries as scoring every posting would cost."""


class _Heads(NamedTuple):
    """What the heads and the short lists of a query's posting lists hold, per list in
    the plan's order and per entry."""

    known: list[dict[int, int]]
    """Per list, the postings at hand: entry -> stored score."""
    complete: list[bool]
    """Per list, whether that is all of it (a short list, which has no head)."""
    tail_of: list[float | None]
    """Per list, its tail's bound (None: no tail)."""
    tails: list[float]
    """Every tail bound."""
    in_long: Counter[int]
    """How many long lists hold each entry (counted in C)."""
    in_short: set[int]
    """The entries of the short lists."""
    bounds: dict[int, float]
    """Per entry at hand, the sum of its postings at hand."""
    at_heads: dict[int, list[float]]
    """Per entry at a head, the tail bounds of the lists it heads."""


def top(
    index: Corpus, plan: Plan, limit: int, docs: Container[int] | None
) -> tuple[int, dict[int, float]] | None:
    """(how many entries match, the exact scores of matching entries among which are
    all those at or above the `limit`-th best score), or None when the posting heads
    cannot prove that cheaply and every posting must be scored.

    An entry's bound is what the heads and short lists give it, plus the largest tail
    bounds, as many as the long lists whose tails may hold it. Entries are scored
    exactly (in lunr's order, so to the same float) best bound first, until the
    `limit`-th best exact score is above every bound left; then the entries at no head
    whose count alone could reach it. Nothing that could tie is pruned."""
    lists = plan.lists
    postings = sum(x.stop - x.start for x in lists)
    if postings <= EXHAUSTIVE_POSTINGS:
        return None  # as fast to score them all
    # entries scored one by one (a bisection per list each) before it is cheaper to
    # score every posting
    budget = max(4 * limit, postings // (POSTINGS_PER_LOOKUP * len(lists)))
    if any(index.groups[x.group].head is None for x in lists):
        return None  # a file written before the heads
    heads = _read_heads(index.groups, lists)
    best = _Best(index, plan, docs, limit, budget, _recipe(index, heads, plan))
    floor = -math.inf  # at most the limit-th best score: of the scores at hand alone
    if not best.filtered and len(heads.bounds) >= limit:
        floor = heapq.nlargest(limit, heads.bounds.values())[-1]
    largest = _add_tails(heads)
    if sum(map((floor - _slack(floor)).__le__, heads.bounds.values())) > budget:
        return None  # more entries than the budget may beat the floor: near-ties
    try:
        best.score_in_order(heads.bounds, heads.bounds)
    except _OverBudget:
        return None  # too many ties or near-ties: cheaper to score every posting
    # entries at no head: bounded by the tails that hold them
    need = bisect.bisect_left(largest, best.cut)
    if need < len(largest):
        outside = _outside(index.groups, lists, heads, need, budget)
        if outside is None:
            return None  # too many entries at no head may reach the best: score all
        ahead = [e for e, bound in outside.items() if bound >= best.cut]
        if len(best.found) + len(ahead) > budget:
            return None  # cheaper to score every posting
        best.score_in_order(outside, ahead)
    count = _count(index, plan, docs, heads.in_long, heads.in_short)
    if len(best.heap) < limit and len(best.found) < count:
        return None  # fewer than `limit` found, and some match unscored
    return count, best.found


def _read_heads(groups: Sequence[Postings], lists: list[PostingList]) -> _Heads:
    """The postings at hand of every list (a long list's head, a short list whole), and
    each entry's bound from them alone."""
    heads = _Heads([], [], [], [], Counter(), set(), {}, {})
    bounds, at_heads = heads.bounds, heads.at_heads
    for x in lists:
        group = groups[x.group]
        entries = group.entries[x.start : x.stop]
        head = group.head_of(x.number)
        scale = x.weight / THOUSAND / x.magnitude
        if head is None:
            at_hand = dict(zip(entries, group.scores[x.start : x.stop], strict=True))
            heads.in_short.update(at_hand)
        else:
            positions = head.tolist()
            if min(positions) < x.start or max(positions) >= x.stop:
                raise FormatError(f"{SEARCH}: a posting head lies outside its list")
            at_hand = dict(
                zip(
                    map(group.entries.__getitem__, positions),
                    map(group.scores.__getitem__, positions),
                    strict=True,
                )
            )
            tail = group.scores[positions[-1]] * scale
            heads.tails.append(tail)
            heads.in_long.update(entries)  # C: how many long lists hold each entry
            for entry in at_hand:
                at_heads.setdefault(entry, []).append(tail)
        heads.known.append(at_hand)
        heads.complete.append(head is None)
        heads.tail_of.append(None if head is None else tail)
        get = bounds.get
        for entry, stored in at_hand.items():
            bounds[entry] = get(entry, 0.0) + stored * scale
    return heads


def _add_tails(heads: _Heads) -> list[float]:
    """Add to each entry's bound what the tails of the long lists holding it may give
    (sorting the tails, largest first); answer `largest`, where `largest[n]` is the sum
    of the n largest tail bounds, which bounds an entry in n tails."""
    tails = heads.tails
    tails.sort(reverse=True)
    largest = list(itertools.accumulate(tails, initial=0.0))
    for entry in heads.bounds:
        own = heads.at_heads.get(entry)
        if own is None:
            heads.bounds[entry] += largest[heads.in_long[entry]]
        else:  # in the tails of the other lists that hold it: the largest of theirs
            heads.bounds[entry] += _largest(tails, own, heads.in_long[entry] - len(own))
    return largest


class _Best:
    """The entries scored exactly so far, and `theta`: the `limit`-th best of their
    scores, once there are `limit` of them. Entries the query or `docs` filter out are
    never scored."""

    def __init__(
        self,
        index: Corpus,
        plan: Plan,
        docs: Container[int] | None,
        limit: int,
        budget: int,
        recipe: list[_Recipe],
    ) -> None:
        self.index, self.plan, self.docs, self.recipe = index, plan, docs, recipe
        self.filtered = bool(plan.required or plan.prohibited or docs is not None)
        self.limit, self.budget = limit, budget
        self.found: dict[int, float] = {}
        self.heap: list[float] = []
        self.theta = -math.inf

    @property
    def cut(self) -> float:
        """A bound below this cannot reach the best scores (rounding allowed for)."""
        return self.theta - _slack(self.theta)

    def score_in_order(self, bounds: dict[int, float], entries: Iterable[int]) -> None:
        """Score `entries` best bound first, until no bound left reaches the best."""
        for entry in sorted(entries, key=bounds.__getitem__, reverse=True):
            if bounds[entry] < self.cut:
                break
            self.score(entry)

    def score(self, entry: int) -> None:
        if self.filtered and not _allowed(self.index, entry, self.plan, self.docs):
            return
        if len(self.found) == self.budget:
            raise _OverBudget
        value = self.found[entry] = _exact(self.index, entry, self.recipe)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, value)
        elif value > self.heap[0]:
            heapq.heapreplace(self.heap, value)
        if len(self.heap) == self.limit:
            self.theta = self.heap[0]


def _outside(
    groups: Sequence[Postings], lists: list[PostingList], heads: _Heads, need: int, budget: int
) -> dict[int, float] | None:
    """The entries at no head nor short list that `need` or more long lists hold, each
    with a bound on the sum of those lists' tail bounds. Each such entry is in one of
    the lists left once the `need - 1` longest are set aside: only those are read
    (filtered in C). An entry counted in more lists than they hold it in is in as many
    of the longest, bounded by their largest tails. None when there are more than
    `budget`."""
    tail_of, counts, known = heads.tail_of, heads.in_long, heads.bounds
    long = [n for n, tail in enumerate(tail_of) if tail is not None]
    if need <= 1:
        if len(counts) > len(known) + budget:
            return None
        everything = sum(t for t in tail_of if t is not None)
        return {e: everything for e in counts if e not in known}
    long.sort(key=lambda n: lists[n].stop - lists[n].start, reverse=True)
    aside, read = long[: need - 1], long[need - 1 :]
    ahead: set[int] = set()
    for n in read:
        x = lists[n]
        entries = groups[x.group].entries[x.start : x.stop]
        ahead.update(
            itertools.compress(entries, map(need.__le__, map(counts.__getitem__, entries)))
        )
    ahead.difference_update(known)
    if len(ahead) > budget:
        return None
    bounds: dict[int, float] = {}
    held: Counter[int] = Counter()
    for n in read:
        x, tail = lists[n], tail_of[n] or 0.0
        entries = groups[x.group].entries[x.start : x.stop]
        for entry in itertools.compress(entries, map(ahead.__contains__, entries)):
            bounds[entry] = bounds.get(entry, 0.0) + tail
            held[entry] += 1
    # largest[m]: the sum of the m largest tails of the lists set aside
    largest = list(
        itertools.accumulate(sorted((tail_of[n] or 0.0 for n in aside), reverse=True), initial=0.0)
    )
    for entry in bounds:
        bounds[entry] += largest[counts[entry] - held[entry]]
    return bounds


def _recipe(index: Corpus, heads: _Heads, plan: Plan) -> list[_Recipe]:
    """Per group, per field in order: the query vector's length and, in lunr's order,
    each list's postings at hand, whether that is all of it, its span and weight."""
    recipe: list[_Recipe] = [[] for _ in index.groups]
    for g, fields in enumerate(recipe):
        field = -1
        for n, x in enumerate(plan.lists):
            if x.group != g:
                continue
            if x.field != field:
                field = x.field
                fields.append((x.magnitude, []))
            fields[-1][1].append((heads.known[n], heads.complete[n], x.start, x.stop, x.weight))
    return recipe


def _allowed(index: Corpus, entry: int, plan: Plan, docs: Container[int] | None) -> bool:
    return (
        entry not in plan.prohibited
        and all(entry in r for r in plan.required)
        and (docs is None or index.doc_of(entry) in docs)
    )


def _exact(index: Corpus, entry: int, recipe: list[_Recipe]) -> float:
    """An entry's score, summed as `exhaustive` sums it (the same floats, in the same
    order), from the postings at hand or found by bisection."""
    g = 0 if entry < len(index.entry_doc) else len(index.groups) - 1
    entries, scores = index.groups[g].entries, index.groups[g].scores
    score = 0.0
    for magnitude, parts in recipe[g]:
        dot = 0.0
        hit = False
        for at_hand, whole, start, stop, weight in parts:
            stored = at_hand.get(entry)
            if stored is None:
                if whole:
                    continue
                i = bisect.bisect_left(entries, entry, start, stop)
                if i == stop or entries[i] != entry:
                    continue
                stored = scores[i]
            value = stored / THOUSAND
            dot += weight * value if weight != 1.0 else value
            hit = True
        if hit:
            score += dot / magnitude if magnitude != 1.0 else dot
    return score


def _count(
    index: Corpus, plan: Plan, docs: Container[int] | None, counted: Counter[int], rest: set[int]
) -> int:
    """How many entries match: those of every list read (`counted` and `rest`) that
    pass the filters, by set operations in C; no score summed."""
    if not plan.required and not plan.prohibited and docs is None:
        return len(counted) + len(rest) - sum(map(counted.__contains__, rest))
    matched = rest.union(counted)
    if plan.required:
        matched.intersection_update(*plan.required)
    matched -= plan.prohibited
    if docs is None:
        return len(matched)
    return sum(1 for e in matched if index.doc_of(e) in docs)


def _largest(tails: list[float], skip: list[float], n: int) -> float:
    """The sum of the `n` largest of `tails` (sorted, largest first) once each value in
    `skip` is taken out of them."""
    left = list(skip)
    total = 0.0
    for tail in tails:
        if n <= 0:
            break
        if tail in left:
            left.remove(tail)
            continue
        total += tail
        n -= 1
    return total


def _slack(theta: float) -> float:
    """Room for rounding: bounds are summed in another order than the scores."""
    return 1e-9 * (1.0 + abs(theta))
