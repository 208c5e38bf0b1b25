"""Searching the compact search file (``search.bin``) in place, with lunr's scores.

``index.json`` is for lunr.js; parsing it into lunr.py's structures takes lunr.py 10 s
on 10,000 docs. The search file (`handbook.search_format` describes and writes it)
holds the same terms and scores as flat little-endian arrays, used here in place
(memoryview casts), so opening it costs one read and one hash.

Scoring is lunr's: each field's query vector holds the boost of every expanded term,
an entry's score is the sum over fields of (query · field vector) / |query|. The
postings come in groups (the docs' entries, and those of attached markdown files when
the bundle has any); an entry's postings are all in one group, so its score sums the
same terms in the same order as lunr's.
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

from .errors import FormatError
from .fuzzy import fuzzy
from .layout import SEARCH
from .query import Clause
from .search_format import MAGIC, RESOURCE, VERSION

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
    """One group of postings (`handbook.search_format`): per row and field, where the row's
    postings start; a row per term, or per term listed in `rows`."""

    rows: memoryview | None
    offsets: memoryview
    entries: memoryview
    scores: memoryview

    def span(self, term: int, field: int, fields: int) -> tuple[int, int]:
        """Where the postings of `term` in `field` are ((0, 0) for none)."""
        row = term
        if self.rows is not None:
            row = bisect.bisect_left(self.rows, term)
            if row == len(self.rows) or self.rows[row] != term:
                return 0, 0
        i = row * fields + field
        return self.offsets[i], self.offsets[i + 1]


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
        )
        if len(group.offsets) != rows * len(self.fields) + 1 or len(group.entries) != len(
            group.scores
        ):
            raise ValueError("array sizes do not agree")
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
        scores, words, _ = self._score(clauses)
        return scores, words

    def _score(
        self, clauses: Sequence[Clause]
    ) -> tuple[dict[int, float], frozenset[str], list[tuple[int, int]]]:
        """Scores, expanded words, and the (term, field) postings in the order lunr walks
        them (clause, expanded term, field), which decides lunr's order among equal scores."""
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
        scores: dict[int, float] = {}
        for f, vector in enumerate(query):
            if not vector:
                continue
            magnitude = math.sqrt(sum(v * v for v in vector.values()))
            dots: dict[int, float] = {}
            for term in sorted(
                vector, key=self.term_lunr_index.__getitem__
            ):  # lunr's summation order
                for group in self.groups:
                    start, stop = group.span(term, f, nfields)
                    # weight * (score / 1000), computed in C; x * 1.0 and x / 1.0 are exactly x
                    values: Iterable[float] = map(_THOUSAND.__rtruediv__, group.scores[start:stop])
                    if vector[term] != 1.0:
                        values = map(float(vector[term]).__mul__, values)
                    _accumulate(dots, group.entries[start:stop], values)
            if magnitude != 1.0:
                dots = dict(
                    zip(dots.keys(), map(magnitude.__rtruediv__, dots.values()), strict=True)
                )  # dot / magnitude
            _accumulate(scores, dots.keys(), dots.values())
        if required:
            keep = set(scores).intersection(*required)
            scores = {e: v for e, v in scores.items() if e in keep}
        for entry in prohibited.intersection(scores) if prohibited else ():
            del scores[entry]
        return scores, frozenset(words), list(encounter)

    def search(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
    ) -> tuple[int, list[Hit]]:
        """(how many entries match, the best `limit` of them) in lunr's order: score
        descending; equal scores in the order lunr first meets the entries. With `docs`,
        only entries of those docs (catalog positions) count."""
        scores, words, encounter = self._score(clauses)
        if docs is not None:
            scores = {e: v for e, v in scores.items() if self.doc_of(e) in docs}
        if limit is None or limit >= len(scores):
            chosen = list(scores)
        else:
            # everything above the limit-th score, and every entry tied with it
            cutoff = heapq.nlargest(limit, scores.values())[-1]
            chosen = [e for e, v in scores.items() if v >= cutoff]
        same = Counter(scores[e] for e in chosen)
        order = self._first_met(encounter, {e for e in chosen if same[scores[e]] > 1})
        best = sorted(chosen, key=lambda e: (-scores[e], order.get(e, (0, e))))[:limit]
        return len(scores), [Hit(e, scores[e], words) for e in best]

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


def _accumulate(totals: dict[int, float], keys: Iterable[int], values: Iterable[float]) -> None:
    """totals[k] += v for each pair, in order. Into an empty dict that is one C-speed
    `update` (0.0 + v is exactly v), which is the common case of a one-word query."""
    if not totals:
        totals.update(zip(keys, values, strict=True))
        return
    get = totals.get
    for key, value in zip(keys, values, strict=True):
        totals[key] = get(key, 0.0) + value
