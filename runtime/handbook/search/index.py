"""Searching the compact search file (``search.bin``) in place, with lunr's scores.

``index.json`` is for lunr.js; parsing it into lunr.py's structures takes lunr.py 10 s
on 10,000 docs. The search file (`handbook.search.file_format` describes and writes it)
holds the same terms and scores as flat little-endian arrays, used here in place
(`handbook.search.postings`), so opening it costs one read and one hash.

Scoring is lunr's (`handbook.search.scoring`): a query's words are expanded to the
index's terms and planned into the posting lists lunr would read, in its order. The
postings come in groups (the docs' entries, and those of attached markdown files when
the bundle has any); an entry's postings are all in one group, so its score sums the
same terms in the same order as lunr's.

`SearchIndex.search` finds the best k without summing every posting when it can
(`handbook.search.top_k`): it answers exactly what scoring every posting answers, the
same count, hits, order and floats.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
import re
from array import array
from collections import Counter
from collections.abc import Container, Sequence, Sized
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..bundle.layout import SEARCH
from ..bundle.ranged import Ranged, Whole
from ..errors import FormatError
from . import array_loading, hit_texts, top_k
from .array_loading import ARRAYS, load_arrays
from .file_format import MAGIC, RESOURCE, VERSION
from .fuzzy import fuzzy
from .hit_texts import HitTexts
from .postings import CheckedStrings, Strings, read_arrays, read_group
from .query import Clause
from .scoring import Plan, PostingList, entries_with, exhaustive, first_met

LAZY_STRINGS = ("entry_title", "entry_anchor", "entry_sub_title", "entry_sub_anchor")
"""The per-entry string tables, verified by the items a hit reads (`CheckedStrings`)."""
LAZY_ARRAYS = (
    "post_entry",
    "post_score",
    "entry_text",
    "excerpt_text",
    *LAZY_STRINGS,
    *(f"{name}_offsets" for name in LAZY_STRINGS),
)
"""The arrays verified by the ranges a query or a hit reads (`SearchIndex.need_postings`,
the excerpt texts, the hits' titles and anchors), with their ``resource_`` twins, and the
term table (`TERM_TABLE`): most of the file at any size. Every other array is verified
whole when the index is opened."""
TERM_TABLE = ("terms", "terms_offsets")
"""The term table, verified by the items a word's bisection reads (whole for the first
wildcard or fuzzy word). It has no ``resource_`` twin: ``resource_terms`` numbers the
terms an attached file's postings have, and is verified at open."""

if TYPE_CHECKING:
    from .array_scoring import ArrayPostings

ARRAY_POSTINGS = 200
"""Queries reading fewer postings are summed in Python, and do not import numpy: below
this, numpy's cost per call outweighs its speed per posting (msdocs-10k's bench queries)."""
MAX_EXPANSIONS = 1000
"""Terms one wildcard or fuzzy word may expand to; beyond, the first ones in order."""
STRING_TABLES = ("terms", "entry_title", "entry_anchor", "doc_id", "doc_title")


class Hit(NamedTuple):
    entry: int
    score: float
    terms: frozenset[str]
    """The index terms the query expanded to (for excerpts)."""


class SearchIndex:
    """Read-only view over a verified ``search.bin``."""

    def __init__(self, data: bytes | Ranged) -> None:
        self.file = Whole(data) if isinstance(data, bytes) else data
        """The verified file; its large arrays are verified by the ranges read
        (`LAZY_ARRAYS`), every other one when the index is opened."""
        self.file.need(0, 16)
        if data[:8] != MAGIC or int.from_bytes(data[8:12], "little") != VERSION:
            raise FormatError(f"{SEARCH}: not a version {VERSION} search file")
        try:
            self.file.need(16, 16 + int.from_bytes(data[12:16], "little"))
            self._load(cast(bytes, self.file.buffer))  # bytes, or a map of verified chunks
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
        header, self._arrays = read_arrays(data)
        self._spans = _verify_arrays(self.file, header)
        self._strings: dict[str, Strings] = {}
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
        self._array_postings: ArrayPostings | None = None
        self._large_queries = 0
        for table in STRING_TABLES:  # present, whatever is asked first
            self.strings(table)
        self.groups = [read_group(a, "", len(self.term_table), len(self.fields))]
        self.subsections = self._subsections("", len(self.entry_doc))
        """Whether the docs' entries name the subsection (``###`` or deeper) whose text
        they are (``entry_sub_title``, ``entry_sub_anchor``)."""
        self.texts: HitTexts | None = hit_texts.read(a, len(self.entry_doc), self._need_in)
        """Each doc entry's excerpt text (`handbook.search.hit_texts`), in files built
        with them; None: excerpts are cut from the content files."""
        self.doc_retired: memoryview | None = a.get("doc_retired")
        """Per doc, 1 when it is retired (None in files written before it): a hit of a
        current doc in a library without reviewers has no pedigree to look up."""
        if self.doc_retired is not None and len(self.doc_retired) != len(self.doc_content) // 32:
            raise ValueError("doc_retired does not have one flag per doc")
        self.attached = f"{RESOURCE}post_entry" in a
        """Whether attached markdown files have entries (numbered after the docs')."""
        if self.attached:
            self._load_attached()

    def _load_attached(self) -> None:
        """The attached markdown files' arrays, each checked against the others."""
        a = self._arrays
        self.groups.append(read_group(a, RESOURCE, len(a[f"{RESOURCE}terms"]), len(self.fields)))
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
        self.resource_subsections = self._subsections(RESOURCE, len(per_entry[0]))
        """The same for the attached files' entries (``resource_entry_sub_…``)."""
        files = len(self.resource_doc)
        if (
            len({len(x) for x in per_entry}) != 1
            or len(self.strings(f"{RESOURCE}path")) != files
            or len(self.resource_content) != 32 * files
        ):
            raise ValueError("the attached files' arrays do not agree")

    def _subsections(self, group: str, entries: int) -> bool:
        """Whether a group's entries name their subsections (arrays added within version
        1), checked to have one string per entry."""
        if f"{group}entry_sub_anchor" not in self._arrays:
            return False
        titles, anchors = (self.strings(f"{group}entry_sub_{n}") for n in ("title", "anchor"))
        if not len(titles) == len(anchors) == entries:
            raise ValueError("the subsection arrays do not agree with the entries")
        return True

    def need_postings(self, group: int, start: int, stop: int) -> None:
        """Verify postings `start` to `stop` of group `group` (entries and scores) before
        they are read: a query reads its terms' posting lists, not the whole file."""
        prefix = RESOURCE if group else ""
        for name in (f"{prefix}post_entry", f"{prefix}post_score"):
            size = self._spans[name][1]
            self._need_in(name, start * size, stop * size)

    def _need_in(self, name: str, start: int, end: int) -> None:
        """Verify bytes `start` to `end` of array `name` before they are read."""
        at = self._spans[name][0]
        self.file.need(at + start, at + end)

    def _need_terms(self, terms: Sequence[int], fields: Sequence[int]) -> None:
        """Verify the posting lists of `terms` in `fields`, in every group."""
        nfields = len(self.fields)
        for g, group in enumerate(self.groups):
            for term in terms:
                for f in fields:
                    start, stop = group.span(term, f, nfields)
                    if stop > start:
                        self.need_postings(g, start, stop)

    def strings(self, name: str) -> Strings:
        """A string table, made once; one of the `LAZY_STRINGS` verifies each item as it
        is first read."""
        if name in self._strings:
            return self._strings[name]
        blob, offsets = self._arrays[name], self._arrays[f"{name}_offsets"]
        table = Strings(blob, offsets)
        if name in self._spans:
            need_blob = functools.partial(self._need_in, name)
            table = CheckedStrings(
                blob, offsets, need_blob, functools.partial(self._need_in, f"{name}_offsets")
            )
        self._strings[name] = table
        return table

    @property
    def terms(self) -> list[str]:
        """Every term, decoded: wildcard and fuzzy words need to scan them (built on the
        first such query; exact words are found in the blob by bisection)."""
        if self._terms is None:
            table = self.term_table
            self._need_in("terms", 0, len(table.blob))
            self._need_in("terms_offsets", 0, table.offsets.nbytes)
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
        return exhaustive(self.groups, plan), plan.words

    def _plan(self, clauses: Sequence[Clause]) -> Plan:
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
            self._need_terms(expanded, fields)
            if clause.presence == "prohibited":
                prohibited |= entries_with(self.groups, nfields, expanded, fields)
                continue
            if clause.presence == "required":
                required.append(entries_with(self.groups, nfields, expanded, fields))
            for term in expanded:
                words.add(self.term_table[term])
                for f in fields:
                    query[f][term] = query[f].get(term, 0.0) + clause.boost
                    encounter[(term, f)] = None
        lists: list[PostingList] = []
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
                        lists.append(PostingList(f, g, number, start, stop, weight, magnitude))
        return Plan(lists, required, prohibited, frozenset(words), list(encounter))

    def _array_scorer(self, plan: Plan) -> ArrayPostings | None:
        """The numpy view of the postings when the query reads enough of them to gain
        from it and numpy is imported, else None. The second such query starts the
        import (`load_arrays`): the first answer of a fresh process never waits for it
        nor shares the interpreter with it."""
        if not ARRAYS or sum(x.stop - x.start for x in plan.lists) < ARRAY_POSTINGS:
            return None
        if self._array_postings is None:
            self._large_queries += 1
            if self._large_queries == 1 and array_loading.imported() is None:
                return None  # a process that asks one large query never imports numpy
            array_scoring = load_arrays(wait=False)
            if array_scoring is None:
                return None  # numpy is being imported: this query is summed in Python
            self._array_postings = array_scoring.ArrayPostings(self)
        return self._array_postings

    def search(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
    ) -> tuple[int, list[Hit]]:
        """(how many entries match, the best `limit` of them) in lunr's order: score
        descending; equal scores in the order lunr first meets the entries. With `docs`,
        only entries of those docs (catalog positions) count.

        A large query is summed over numpy arrays when numpy is installed
        (`handbook.search.array_scoring`); otherwise the best ones come from the heads of
        the posting lists when those prove them (`handbook.search.top_k`), or every
        posting is scored. Every way gives the same hits, order and scores."""
        plan = self._plan(clauses)
        arrays = self._array_scorer(plan)
        top = top_k.top(self, plan, limit, docs) if limit and arrays is None else None
        if arrays is not None:
            count, scores = arrays.best(plan, limit, docs)
        elif top is not None:
            count, scores = top
        else:
            scores = exhaustive(self.groups, plan)
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
        tied = {e for e in chosen if same[scores[e]] > 1}
        order = first_met(self.groups, len(self.fields), plan.encounter, tied)
        best = sorted(chosen, key=lambda e: (-scores[e], order.get(e, (0, e))))[:limit]
        return count, [Hit(e, scores[e], plan.words) for e in best]


def _verify_arrays(file: Ranged, header: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Verify every array of the search file but the `LAZY_ARRAYS`; (where each of those
    starts in the file, its item size), for the ranges read later."""
    base = 16 + int.from_bytes(file[12:16], "little")
    lazy = {*LAZY_ARRAYS, *(RESOURCE + name for name in LAZY_ARRAYS), *TERM_TABLE}
    spans = {}
    for name, (offset, count, typecode) in header["arrays"].items():
        size = array(typecode).itemsize
        if name in lazy:
            spans[name] = (base + offset, size)
        else:
            file.need(base + offset, base + offset + count * size)
    return spans
