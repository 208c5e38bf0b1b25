"""Searching the compact search file (``search.bin``) in place, with lunr's scores.

``index.json`` is for lunr.js; parsing it into lunr.py's structures takes lunr.py 10 s
on 10,000 docs. The search file (`handbook.search.file_format` describes and writes it)
holds the same terms and scores as flat little-endian arrays, used here in place
(memoryview casts), so opening it costs one read and one hash.

Scoring is lunr's: each field's query vector holds the boost of every expanded term,
an entry's score is the sum over fields of (query · field vector) / |query|. The
postings come in groups (the docs' entries, and those of attached markdown files when
the bundle has any); an entry's postings are all in one group, so its score sums the
same terms in the same order as lunr's.

`SearchIndex.search` finds the best k without summing every posting when it can: the
file keeps the best postings of each long list (its head), which bound the rest, and
`_top` scores entries best bound first until no bound left can reach the k-th score.
It answers exactly what scoring every posting answers (`_exhaustive`): the same count,
hits, order and floats; when it cannot prove the top k cheaply, that is what it does.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import math
import re
import sys
from array import array
from collections import Counter
from collections.abc import Container, Iterable, Sequence, Sized
from typing import NamedTuple

from ..bundle.layout import SEARCH
from ..errors import FormatError
from .file_format import MAGIC, RESOURCE, VERSION
from .fuzzy import fuzzy
from .query import Clause

EXHAUSTIVE_POSTINGS = 1000
"""Queries reading at most this many postings score them all: as fast as the heads."""
POSTINGS_PER_LOOKUP = 2
"""The top-k path gives up (and every posting is scored) once it would score one entry,
a bisection per list, for every this many postings the query reads per list: measured
on msdocs-10k's bench queries, 2 beat 1, 4 and 8 in total time and at p99."""
MAX_EXPANSIONS = 1000
"""Terms one wildcard or fuzzy word may expand to; beyond, the first ones in order."""


_ITEM_SIZE = {"I": 4, "H": 2, "B": 1}
STRING_TABLES = ("terms", "entry_title", "entry_anchor", "doc_id", "doc_title")


def _swapped(data: bytes, typecode: str) -> bytes:
    a = array(typecode, data)
    a.byteswap()
    return a.tobytes()


class Strings:
    """A string table: UTF-8 blob plus offsets; items decoded on demand."""

    def __init__(self, blob: memoryview, offsets: memoryview) -> None:
        self.blob, self.offsets = blob, offsets

    def __getitem__(self, i: int) -> str:
        return bytes(self.blob[self.offsets[i] : self.offsets[i + 1]]).decode("utf-8")

    def raw(self, i: int) -> bytes:
        return bytes(self.blob[self.offsets[i] : self.offsets[i + 1]])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def find(self, value: str) -> int | None:
        """The index of `value` in a table sorted by code point (= UTF-8 byte order)."""
        target = value.encode("utf-8")
        i = bisect.bisect_left(range(len(self)), target, key=self.raw)
        return i if i < len(self) and self.raw(i) == target else None


class Postings(NamedTuple):
    """One group of postings (`handbook.search.file_format`): per row and field, where the row's
    postings start; a row per term, or per term listed in `rows`. `head_lists` and `head`
    (None in files written before them) give the best postings of each long list."""

    rows: memoryview | None
    offsets: memoryview
    entries: memoryview
    scores: memoryview
    head_lists: memoryview | None = None
    head: memoryview | None = None

    def list_of(self, term: int, field: int, fields: int) -> int | None:
        """The number of the posting list of `term` in `field` (None: no postings)."""
        row = term
        if self.rows is not None:
            row = bisect.bisect_left(self.rows, term)
            if row == len(self.rows) or self.rows[row] != term:
                return None
        return row * fields + field

    def span(self, term: int, field: int, fields: int) -> tuple[int, int]:
        """Where the postings of `term` in `field` are ((0, 0) for none)."""
        i = self.list_of(term, field, fields)
        return (0, 0) if i is None else (self.offsets[i], self.offsets[i + 1])

    def head_of(self, i: int) -> memoryview | None:
        """The positions of list `i`'s best postings, by score descending (None when the
        list is short, which means all of it is at hand, or the file has no heads)."""
        if self.head_lists is None or self.head is None or not self.head_lists:
            return None
        at = bisect.bisect_left(self.head_lists, i)
        if at == len(self.head_lists) or self.head_lists[at] != i:
            return None
        size = len(self.head) // len(self.head_lists)
        return self.head[at * size : (at + 1) * size]


class _List(NamedTuple):
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


class _Plan(NamedTuple):
    lists: list[_List]
    """In lunr's summation order: by field, then term (`term_lunr_index`), then group."""
    required: list[set[int]]
    prohibited: set[int]
    words: frozenset[str]
    encounter: list[tuple[int, int]]


class _OverBudget(Exception):
    """The top-k path scored as many entries as scoring every posting would cost."""


_Recipe = list[tuple[float, list[tuple[dict[int, int], bool, int, int, float]]]]
"""How `SearchIndex._exact` sums one group's entries: see `SearchIndex._recipe`."""


class Hit(NamedTuple):
    entry: int
    score: float
    terms: frozenset[str]
    """The index terms the query expanded to (for excerpts)."""


class SearchIndex:
    """Read-only view over a verified ``search.bin``."""

    def __init__(self, data: bytes) -> None:
        if data[:8] != MAGIC or int.from_bytes(data[8:12], "little") != VERSION:
            raise FormatError(f"{SEARCH}: not a version {VERSION} search file")
        try:
            self._load(data)
        except (
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            IndexError,
            OverflowError,
            RecursionError,
        ) as exc:
            raise FormatError(f"{SEARCH}: malformed ({type(exc).__name__}: {exc})") from None

    def _load(self, data: bytes) -> None:
        header_len = int.from_bytes(data[12:16], "little")
        header = json.loads(data[16 : 16 + header_len])
        base = 16 + header_len
        view = memoryview(data)
        self._arrays: dict[str, memoryview] = {}
        for name, (offset, count, typecode) in header["arrays"].items():
            size = count * _ITEM_SIZE[typecode]
            if offset < 0 or count < 0:
                raise ValueError(f"array {name} has a negative offset or count")
            chunk = view[base + offset : base + offset + size]
            if len(chunk) != size:
                raise ValueError(f"array {name} runs past the end")
            if typecode != "B" and sys.byteorder == "big":
                chunk = memoryview(_swapped(bytes(chunk), typecode))
            self._arrays[name] = chunk.cast(typecode) if typecode != "B" else chunk
        self.fields: list[str] = list(header["fields"])
        if not all(isinstance(f, str) for f in self.fields):
            raise TypeError("fields must be names")
        self.term_table = self.strings("terms")
        a = self._arrays
        self.term_lunr_index = a["term_lunr_index"]
        self.entry_doc, self.entry_start, self.entry_end = (
            a["entry_doc"],
            a["entry_start"],
            a["entry_end"],
        )
        self.doc_content = a["doc_content"]
        self._terms: list[str] | None = None
        for table in STRING_TABLES:  # present, whatever is asked first
            self.strings(table)
        self.groups = [self._group("", len(self.term_table))]
        self.attached = f"{RESOURCE}post_entry" in a
        """Whether attached markdown files have entries (numbered after the docs')."""
        if self.attached:
            self._load_attached()

    def _load_attached(self) -> None:
        """The attached markdown files' arrays, each checked against the others."""
        a = self._arrays
        self.groups.append(self._group(RESOURCE, len(a[f"{RESOURCE}terms"])))
        self.resource_doc, self.resource_content = a[f"{RESOURCE}doc"], a[f"{RESOURCE}content"]
        self.resource_entry_file = a[f"{RESOURCE}entry_file"]
        self.resource_entry_start = a[f"{RESOURCE}entry_start"]
        self.resource_entry_end = a[f"{RESOURCE}entry_end"]
        per_entry: list[Sized] = [
            self.resource_entry_file,
            self.resource_entry_start,
            self.resource_entry_end,
            self.strings(f"{RESOURCE}entry_title"),
            self.strings(f"{RESOURCE}entry_anchor"),
        ]
        files = len(self.resource_doc)
        if (
            len({len(x) for x in per_entry}) != 1
            or len(self.strings(f"{RESOURCE}path")) != files
            or len(self.resource_content) != 32 * files
        ):
            raise ValueError("the attached files' arrays do not agree")

    def _group(self, prefix: str, rows: int) -> Postings:
        a = self._arrays
        group = Postings(
            a[f"{prefix}terms"] if prefix else None,
            a[f"{prefix}postings"],
            a[f"{prefix}post_entry"],
            a[f"{prefix}post_score"],
            a.get(f"{prefix}post_head_lists"),
            a.get(f"{prefix}post_head"),
        )
        if len(group.offsets) != rows * len(self.fields) + 1 or len(group.entries) != len(
            group.scores
        ):
            raise ValueError("array sizes do not agree")
        if (group.head_lists is None) != (group.head is None) or (
            group.head_lists is not None
            and group.head is not None
            and (
                len(group.head) % max(1, len(group.head_lists))
                or (len(group.head_lists) == 0) != (len(group.head) == 0)
            )
        ):
            raise ValueError("the posting heads do not agree")
        return group

    def strings(self, name: str) -> Strings:
        return Strings(self._arrays[name], self._arrays[f"{name}_offsets"])

    @property
    def terms(self) -> list[str]:
        """Every term, decoded: wildcard and fuzzy words need to scan them (built on the
        first such query; exact words are found in the blob by bisection)."""
        if self._terms is None:
            table = self.term_table
            blob = bytes(table.blob)
            self._terms = [
                blob[table.offsets[i] : table.offsets[i + 1]].decode("utf-8")
                for i in range(len(table))
            ]
        return self._terms

    @property
    def entries(self) -> int:
        return len(self.entry_doc) + (len(self.resource_entry_file) if self.attached else 0)

    def doc_of(self, entry: int) -> int:
        """The doc (catalog position) an entry belongs to, whether in its content or in
        one of its attached files."""
        docs = len(self.entry_doc)
        if entry < docs:
            return self.entry_doc[entry]
        return self.resource_doc[self.resource_entry_file[entry - docs]]

    def content_sha(self, doc: int) -> str:
        return bytes(self.doc_content[doc * 32 : doc * 32 + 32]).hex()

    def resource_sha(self, file: int) -> str:
        return bytes(self.resource_content[file * 32 : file * 32 + 32]).hex()

    # -- term expansion ------------------------------------------------------------------

    def expand(self, clause: Clause) -> list[int]:
        """Term numbers a clause matches: exact, wildcard or within its edit distance."""
        if clause.edit_distance:
            return list(
                itertools.islice(
                    fuzzy(self.terms, clause.term, clause.edit_distance), MAX_EXPANSIONS
                )
            )
        if clause.wildcard:
            terms = self.terms
            prefix = clause.term.split("*", 1)[0]
            pattern = re.compile(
                ".*".join(map(re.escape, clause.term.split("*"))) + r"\Z", re.DOTALL
            )
            lo = bisect.bisect_left(terms, prefix)
            hi = bisect.bisect_left(terms, prefix + "\U0010ffff")
            return [i for i in range(lo, hi) if pattern.match(terms[i])][:MAX_EXPANSIONS]
        found = self.term_table.find(clause.term)
        return [] if found is None else [found]

    def document_frequency(self, term: str) -> int:
        """Postings of `term` summed over the fields (lunr's `documentsWithTerm`)."""
        found = self.term_table.find(term)
        if found is None:
            return 0
        nfields = len(self.fields)
        spans = (g.span(found, f, nfields) for g in self.groups for f in range(nfields))
        return sum(hi - lo for lo, hi in spans)

    # -- scoring --------------------------------------------------------------------------

    def scores(self, clauses: Sequence[Clause]) -> tuple[dict[int, float], frozenset[str]]:
        """Every matching entry's lunr score, and the index terms the query expanded to."""
        plan = self._plan(clauses)
        return self._exhaustive(plan), plan.words

    def _plan(self, clauses: Sequence[Clause]) -> _Plan:
        """The query vectors, filters and expanded words of a query, and the (term, field)
        postings in the order lunr walks them (clause, expanded term, field), which decides
        lunr's order among equal scores."""
        encounter: dict[tuple[int, int], None] = {}
        nfields = len(self.fields)
        field_no = {name: f for f, name in enumerate(self.fields)}
        query: list[dict[int, float]] = [{} for _ in range(nfields)]
        required: list[set[int]] = []
        prohibited: set[int] = set()
        words: set[str] = set()
        for clause in clauses:
            expanded = self.expand(clause)
            fields = [field_no[f] for f in clause.fields if f in field_no]
            if clause.presence == "prohibited":
                prohibited |= self._entries_with(expanded, fields)
                continue
            if clause.presence == "required":
                required.append(self._entries_with(expanded, fields))
            for term in expanded:
                words.add(self.term_table[term])
                for f in fields:
                    query[f][term] = query[f].get(term, 0.0) + clause.boost
                    encounter[(term, f)] = None
        lists = []
        for f, vector in enumerate(query):
            if not vector:
                continue
            magnitude = math.sqrt(sum(v * v for v in vector.values()))
            for term in sorted(vector, key=self.term_lunr_index.__getitem__):  # lunr's order
                for g, group in enumerate(self.groups):
                    number = group.list_of(term, f, nfields)
                    if number is not None:
                        start, stop = group.offsets[number], group.offsets[number + 1]
                        weight = float(vector[term])
                        lists.append(_List(f, g, number, start, stop, weight, magnitude))
        return _Plan(lists, required, prohibited, frozenset(words), list(encounter))

    def _exhaustive(self, plan: _Plan) -> dict[int, float]:
        """Every matching entry's score, summed posting by posting in lunr's order."""
        scores: dict[int, float] = {}
        for _, lists in itertools.groupby(plan.lists, key=lambda x: x.field):
            dots: dict[int, float] = {}
            magnitude = 1.0
            for posting_list in lists:
                group = self.groups[posting_list.group]
                start, stop, magnitude = (
                    posting_list.start,
                    posting_list.stop,
                    posting_list.magnitude,
                )
                # weight * (score / 1000), computed in C; x * 1.0 and x / 1.0 are exactly x
                values: Iterable[float] = map(_THOUSAND.__rtruediv__, group.scores[start:stop])
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

    def search(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
    ) -> tuple[int, list[Hit]]:
        """(how many entries match, the best `limit` of them) in lunr's order: score
        descending; equal scores in the order lunr first meets the entries. With `docs`,
        only entries of those docs (catalog positions) count.

        The best ones come from the heads of the posting lists when those prove them
        (`_top`); otherwise every posting is scored. Either way the hits, their order and
        their scores are the same."""
        plan = self._plan(clauses)
        top = self._top(plan, limit, docs) if limit else None
        if top is not None:
            count, scores = top
        else:
            scores = self._exhaustive(plan)
            if docs is not None:
                scores = {e: v for e, v in scores.items() if self.doc_of(e) in docs}
            count = len(scores)
        if limit is None or limit >= len(scores):
            chosen = list(scores)
        else:
            # everything above the limit-th score, and every entry tied with it
            cutoff = heapq.nlargest(limit, scores.values())[-1]
            chosen = list(itertools.compress(scores, map(cutoff.__le__, scores.values())))
        same = Counter(scores[e] for e in chosen)
        order = self._first_met(plan.encounter, {e for e in chosen if same[scores[e]] > 1})
        best = sorted(chosen, key=lambda e: (-scores[e], order.get(e, (0, e))))[:limit]
        return count, [Hit(e, scores[e], plan.words) for e in best]

    def _top(
        self, plan: _Plan, limit: int, docs: Container[int] | None
    ) -> tuple[int, dict[int, float]] | None:
        """(how many entries match, the exact scores of matching entries among which are
        all those at or above the `limit`-th best score), or None when the posting heads
        cannot prove that cheaply and every posting must be scored.

        A long list's head holds its best postings, and its last score bounds every other
        posting of the list (its tail). In C, every list's entries are counted: how many
        long lists hold each entry. An entry's bound is what the heads and short lists
        give it, plus the largest tail bounds, as many as the long lists whose tails may
        hold it. Entries are scored exactly (in lunr's order, so to the same float) best
        bound first, until the `limit`-th best exact score is above every bound left;
        then the entries at no head whose count alone could reach it. Nothing that could
        tie is pruned."""
        lists = plan.lists
        postings = sum(x.stop - x.start for x in lists)
        if postings <= EXHAUSTIVE_POSTINGS:
            return None  # as fast to score them all
        # entries scored one by one (a bisection per list each) before it is cheaper to
        # score every posting
        budget = max(4 * limit, postings // (POSTINGS_PER_LOOKUP * len(lists)))
        if any(self.groups[x.group].head is None for x in lists):
            return None  # a file written before the heads
        known: list[dict[int, int]] = []
        complete: list[bool] = []
        tail_of: list[float | None] = []  # per list, its tail's bound (None: no tail)
        tails: list[float] = []
        in_long: Counter[int] = Counter()
        in_short: set[int] = set()
        bounds: dict[int, float] = {}
        at_heads: dict[int, list[float]] = {}  # entry: the tail bounds of lists it heads
        for x in lists:
            group = self.groups[x.group]
            entries = group.entries[x.start : x.stop]
            head = group.head_of(x.number)
            scale = x.weight / _THOUSAND / x.magnitude
            if head is None:
                at_hand = dict(zip(entries, group.scores[x.start : x.stop], strict=True))
                in_short.update(at_hand)
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
                tails.append(tail)
                in_long.update(entries)  # C: how many long lists hold each entry
                for entry in at_hand:
                    at_heads.setdefault(entry, []).append(tail)
            known.append(at_hand)
            complete.append(head is None)
            tail_of.append(None if head is None else tail)
            get = bounds.get
            for entry, stored in at_hand.items():
                bounds[entry] = get(entry, 0.0) + stored * scale
        filtered = bool(plan.required or plan.prohibited or docs is not None)
        floor = -math.inf  # at most the limit-th best score: of the scores at hand alone
        if not filtered and len(bounds) >= limit:
            floor = heapq.nlargest(limit, bounds.values())[-1]
        tails.sort(reverse=True)
        # largest[n]: the sum of the n largest tail bounds, which bounds an entry in n tails
        largest = list(itertools.accumulate(tails, initial=0.0))
        for entry in bounds:
            own = at_heads.get(entry)
            if own is None:
                bounds[entry] += largest[in_long[entry]]
            else:  # in the tails of the other lists that hold it: the largest of theirs
                bounds[entry] += _largest(tails, own, in_long[entry] - len(own))
        if sum(map((floor - _slack(floor)).__le__, bounds.values())) > budget:
            return None  # more entries than the budget may beat the floor: near-ties
        recipe = self._recipe(plan, known, complete)
        best: list[float] = []
        found: dict[int, float] = {}
        theta = -math.inf

        def score(entry: int) -> None:
            nonlocal theta
            if filtered and not self._allowed(entry, plan, docs):
                return
            if len(found) == budget:
                raise _OverBudget
            value = found[entry] = self._exact(entry, recipe)
            if len(best) < limit:
                heapq.heappush(best, value)
            elif value > best[0]:
                heapq.heapreplace(best, value)
            if len(best) == limit:
                theta = best[0]

        try:
            for entry in sorted(bounds, key=bounds.__getitem__, reverse=True):
                if bounds[entry] < theta - _slack(theta):
                    break
                score(entry)
        except _OverBudget:
            return None  # too many ties or near-ties: cheaper to score every posting
        # entries at no head: bounded by the tails that hold them
        need = bisect.bisect_left(largest, theta - _slack(theta))
        if need < len(largest):
            outside = self._outside(lists, tail_of, in_long, need, bounds, budget)
            if outside is None:
                return None  # too many entries at no head may reach the best: score all
            cut = theta - _slack(theta)
            ahead = [e for e, bound in outside.items() if bound >= cut]
            if len(found) + len(ahead) > budget:
                return None  # cheaper to score every posting
            for entry in sorted(ahead, key=outside.__getitem__, reverse=True):
                if outside[entry] < theta - _slack(theta):
                    break
                score(entry)
        count = self._count(plan, docs, in_long, in_short)
        if len(best) < limit and len(found) < count:
            return None  # fewer than `limit` found, and some match unscored
        return count, found

    def _outside(
        self,
        lists: list[_List],
        tail_of: list[float | None],
        counts: Counter[int],
        need: int,
        known: dict[int, float],
        budget: int,
    ) -> dict[int, float] | None:
        """The entries not `known` that `need` or more long lists hold (`counts`), each
        with a bound on the sum of those lists' tail bounds. Each such entry is in one of
        the lists left once the `need - 1` longest are set aside: only those are read
        (filtered in C). An entry counted in more lists than they hold it in is in as
        many of the longest, bounded by their largest tails. None when there are more
        than `budget`."""
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
            entries = self.groups[x.group].entries[x.start : x.stop]
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
            entries = self.groups[x.group].entries[x.start : x.stop]
            for entry in itertools.compress(entries, map(ahead.__contains__, entries)):
                bounds[entry] = bounds.get(entry, 0.0) + tail
                held[entry] += 1
        # largest[m]: the sum of the m largest tails of the lists set aside
        largest = list(
            itertools.accumulate(
                sorted((tail_of[n] or 0.0 for n in aside), reverse=True), initial=0.0
            )
        )
        for entry in bounds:
            bounds[entry] += largest[counts[entry] - held[entry]]
        return bounds

    def _recipe(
        self, plan: _Plan, known: list[dict[int, int]], complete: list[bool]
    ) -> list[_Recipe]:
        """Per group, per field in order: the query vector's length and, in lunr's order,
        each list's postings at hand, whether that is all of it, its span and weight."""
        recipe: list[_Recipe] = [[] for _ in self.groups]
        for g, fields in enumerate(recipe):
            field = -1
            for n, x in enumerate(plan.lists):
                if x.group != g:
                    continue
                if x.field != field:
                    field = x.field
                    fields.append((x.magnitude, []))
                fields[-1][1].append((known[n], complete[n], x.start, x.stop, x.weight))
        return recipe

    def _allowed(self, entry: int, plan: _Plan, docs: Container[int] | None) -> bool:
        return (
            entry not in plan.prohibited
            and all(entry in r for r in plan.required)
            and (docs is None or self.doc_of(entry) in docs)
        )

    def _exact(self, entry: int, recipe: list[_Recipe]) -> float:
        """An entry's score, summed as `_exhaustive` sums it (the same floats, in the same
        order), from the postings at hand or found by bisection."""
        g = 0 if entry < len(self.entry_doc) else len(self.groups) - 1
        entries, scores = self.groups[g].entries, self.groups[g].scores
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
                value = stored / _THOUSAND
                dot += weight * value if weight != 1.0 else value
                hit = True
            if hit:
                score += dot / magnitude if magnitude != 1.0 else dot
        return score

    def _count(
        self, plan: _Plan, docs: Container[int] | None, counted: Counter[int], rest: set[int]
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
        return sum(1 for e in matched if self.doc_of(e) in docs)

    def _first_met(
        self, encounter: list[tuple[int, int]], entries: set[int]
    ) -> dict[int, tuple[int, int]]:
        """For each entry, (position in `encounter` of the first posting holding it, the
        entry): lunr's insertion order, by bisection in the entry-ordered postings."""
        nfields = len(self.fields)
        order: dict[int, tuple[int, int]] = {}
        left = set(entries)
        for i, (term, f) in enumerate(encounter):
            if not left:
                break
            for group in self.groups:
                start, stop = group.span(term, f, nfields)
                members = group.entries[start:stop]
                for entry in list(left):
                    j = bisect.bisect_left(members, entry)
                    if j < len(members) and members[j] == entry:
                        order[entry] = (i, entry)
                        left.discard(entry)
        return order

    def _entries_with(self, terms: list[int], fields: list[int]) -> set[int]:
        nfields = len(self.fields)
        out: set[int] = set()
        for term in terms:
            for f in fields:
                for group in self.groups:
                    start, stop = group.span(term, f, nfields)
                    out.update(group.entries[start:stop])
        return out


_THOUSAND = 1000


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


def _accumulate(totals: dict[int, float], keys: Iterable[int], values: Iterable[float]) -> None:
    """totals[k] += v for each pair, in order. Into an empty dict that is one C-speed
    `update` (0.0 + v is exactly v), which is the common case of a one-word query."""
    if not totals:
        totals.update(zip(keys, values, strict=True))
        return
    get = totals.get
    for key, value in zip(keys, values, strict=True):
        totals[key] = get(key, 0.0) + value
