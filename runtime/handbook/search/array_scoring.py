"""lunr's scores summed over numpy arrays: the same floats as `scoring.exhaustive`, in C.

The `fast` extra (numpy). Summing a query's postings one by one in Python costs about
0.3 µs a posting; a common word on msdocs-10k reads 10,000 to 60,000 of them. Here the
posting arrays of the search file are used in place (`numpy.frombuffer` over the same
memory `handbook.search.postings` reads) and each posting list is added to a dense
array of entry scores in one vectorised pass.

The floats are the same as the pure path's, to the last bit, because the same IEEE
operations run in the same order for each entry: a posting's value is its stored score
/ 1000 (an integer below 2**53, so exact in float64, then one correctly rounded
division, as Python's int / int), times the term's boost when it is not 1; per field
the lists are added in the plan's order (lunr's: by term, then group), and a list holds
an entry at most once, so `a[e] += v` adds each value once, in order; the field's dot
product is divided by the query vector's length when that is not 1, then added to the
entry's score, field after field. Entries no list holds are never read.

Importing this module imports numpy (about 100 ms): `handbook.search.index` imports it
in a background thread from the second query that reads `ARRAY_POSTINGS` postings or
more, and sums in Python until it is there. Small queries, and a process that asks one
large one, never import numpy. Each concurrent search takes its own work arrays (about
25 bytes per entry) from a pool.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Container, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from .postings import Postings
from .scoring import THOUSAND, Plan, PostingList

_Index = NDArray[np.intp]


class Corpus(Protocol):
    """What array scoring reads of a search file (`handbook.search.index.SearchIndex`)."""

    groups: list[Postings]
    entry_doc: memoryview
    """Per doc entry (numbered before the attached files'), its doc."""

    @property
    def entries(self) -> int: ...

    def doc_of(self, entry: int) -> int: ...


class _Buffers(NamedTuple):
    """Per-entry work arrays of one search, reused by the next (only the entries a
    query touches are written, then read)."""

    scores: NDArray[np.float64]
    dots: NDArray[np.float64]
    owner: _Index
    flags: NDArray[np.bool_]
    """All False between searches."""


class ArrayPostings:
    """A search file's posting groups as numpy arrays over the same memory, and a pool of
    work arrays (one in use per concurrent search; they are not shared)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.size = corpus.entries
        self.entries = [_view(g.entries) for g in corpus.groups]
        self.scores = [_view(g.scores) for g in corpus.groups]
        self._docs: _Index | None = None
        self._free: list[_Buffers] = []

    def best(
        self, plan: Plan, limit: int | None, docs: Container[int] | None
    ) -> tuple[int, dict[int, float]]:
        """(how many entries match, the exact scores of the matching entries at or above
        the `limit`-th best score): every entry of `limit` ties included, as
        `SearchIndex.search` orders them; all matching entries when `limit` is None."""
        if not plan.lists:
            return 0, {}
        try:
            buffers = self._free.pop()  # atomic under the GIL
        except IndexError:
            buffers = _Buffers(
                np.empty(self.size),
                np.empty(self.size),
                np.empty(self.size, dtype=np.intp),
                np.zeros(self.size, dtype=np.bool_),
            )
        try:
            every = self._sum(plan.lists, buffers)
            matched = self._matched(every, plan, docs, buffers)
            values = buffers.scores[matched]  # a copy: the buffers go back to the pool
        finally:
            self._free.append(buffers)
        count = len(matched)
        if limit is not None and 0 < limit < count:
            cutoff = np.partition(values, count - limit)[count - limit]
            keep = values >= cutoff
            matched, values = matched[keep], values[keep]
        return count, dict(zip(matched.tolist(), values.tolist(), strict=True))

    def _sum(self, lists: list[PostingList], buffers: _Buffers) -> _Index:
        """Sum every list into `buffers.scores` (lunr's order, see the module docstring);
        answer the entries of every list, concatenated (an entry once per list)."""
        scores, dots = buffers.scores, buffers.dots
        per_field = [list(x) for _, x in itertools.groupby(lists, key=lambda x: x.field)]
        every = self._concatenated(lists)
        scores[every] = 0.0
        for field in per_field:
            magnitude = field[-1].magnitude
            if len(field) == 1:  # the entries are distinct: no dot products to gather
                x = field[0]
                value = self._values(x)
                if magnitude != 1.0:
                    value /= magnitude
                scores[self.entries[x.group][x.start : x.stop]] += value
                continue
            touched = self._concatenated(field)
            dots[touched] = 0.0
            for x in field:
                dots[self.entries[x.group][x.start : x.stop]] += self._values(x)
            value = dots[touched]
            if magnitude != 1.0:
                value /= magnitude
            # an entry held by several lists is written the same sum each time: added once
            scores[touched] += value
        return every

    def _values(self, x: PostingList) -> NDArray[np.float64]:
        """weight * (stored score / 1000) per posting of list `x`, as Python computes it."""
        value = self.scores[x.group][x.start : x.stop] / float(THOUSAND)
        if x.weight != 1.0:
            value *= x.weight
        return value

    def _concatenated(self, lists: Sequence[PostingList]) -> _Index:
        parts = [self.entries[x.group][x.start : x.stop] for x in lists]
        return np.concatenate(parts).astype(np.intp, copy=False)

    def _matched(
        self, every: _Index, plan: Plan, docs: Container[int] | None, buffers: _Buffers
    ) -> _Index:
        """The distinct entries of `every` that pass the query's filters and `docs`."""
        owner, flags = buffers.owner, buffers.flags
        positions = np.arange(len(every))
        owner[every] = positions
        matched: _Index = every[owner[every] == positions]  # each entry at its last position
        for required in plan.required:
            matched = matched[_within(matched, required, flags)]
        if plan.prohibited:
            matched = matched[~_within(matched, plan.prohibited, flags)]
        if docs is not None:
            matched = matched[self._of_docs(matched, docs)]
        return matched

    def _of_docs(self, matched: _Index, docs: Container[int]) -> NDArray[np.bool_]:
        """Whether each entry of `matched` belongs to one of `docs` (catalog positions)."""
        if self._docs is None:  # the attached files' entries (few) ask `doc_of`
            own = _view(self.corpus.entry_doc).astype(np.intp)
            rest = range(len(own), self.size)
            attached = np.fromiter(map(self.corpus.doc_of, rest), dtype=np.intp, count=len(rest))
            self._docs = np.concatenate([own, attached])
        of = self._docs[matched]
        if isinstance(docs, Collection):
            wanted = np.fromiter(docs, dtype=np.intp, count=len(docs))
            return np.isin(of, wanted)
        return np.fromiter(map(docs.__contains__, of.tolist()), dtype=np.bool_, count=len(of))


def _within(
    entries: _Index, members: Collection[int], flags: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Whether each of `entries` is one of `members`, by a dense table of flags (left
    all False again)."""
    chosen = np.fromiter(members, dtype=np.intp, count=len(members))
    flags[chosen] = True
    inside: NDArray[np.bool_] = flags[entries]
    flags[chosen] = False
    return inside


def _view(array: memoryview) -> NDArray[Any]:
    """A posting array where it lies: native byte order (`handbook.search.postings`
    swapped it on a big-endian machine), its own item type."""
    return np.frombuffer(array, dtype=np.dtype(array.format))
