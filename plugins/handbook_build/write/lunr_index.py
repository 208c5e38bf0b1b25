"""Writing a lunr 2.3 index (``index.json``) without lunr.py's builder.

lunr.py is the reference for what the index holds: the same tokenizer split, its own
pipeline functions (trimmer, stop-word filter, Porter stemmer — called, not copied),
the same BM25 field vectors computed with the same float operations in the same order,
and the same serialized layout. What differs is how: each distinct token runs through
the pipeline once (tokens are independent, so a cache is exact), postings are kept as
plain lists, and the JSON is streamed rather than built as millions of small dicts.
That turns lunr.py's 61 s and 1.1 GB on 10,000 real docs into a few seconds.

Terms are written in UTF-16 code-unit order, which is how lunr.js compares strings;
lunr.js refuses an index in lunr.py's code-point order as soon as one term holds a
character outside the Basic Multilingual Plane ("Out of order word insertion").
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import multiprocessing
import os
import re
import threading
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from lunr import __TARGET_JS_VERSION__, get_default_builder

from handbook.search.file_format import Postings, SearchArrays

from .deflate_parts import Deflated, Writable, deflated, write_gzip

FIELDS: tuple[tuple[str, int], ...] = (("title", 1), ("keywords", 1), ("body", 1))
"""Field names and boosts. Equal: BM25's length normalization already weighs a hit in a
short field (a title) far above one in a long body, and on Cranfield any extra title
boost lowered nDCG@10 (10: 0.350, 3: 0.376, 2: 0.382, 1: 0.387; docs/spec/search-index.md)."""
K1 = 1.2
B = 0.75

# lunr.py's tokenizer splits on exactly these characters after lowercasing.
_SEPARATORS = re.compile("[ \t\n\r\f\v\xa0-]+")
_pipeline = get_default_builder().pipeline


_terms: dict[str, str | None] = {}


def term(token: str) -> str | None:
    """The indexed term for one lowercased token, or None for a stop word. Tokens are
    processed independently by every pipeline function, so caching is exact."""
    if token not in _terms:
        out = _pipeline.run_string(token)
        _terms[token] = out[0] if out else None
    return _terms[token]


FieldTerms = tuple[int, dict[str, int]]
"""A field's length in terms, and term -> frequency."""


def term_counts(text: str) -> FieldTerms:
    """Raw tokens are counted in C first, so the pipeline runs once per distinct token
    of the text, and the cache answers after the first time it sees a token."""
    counts: dict[str, int] = {}
    length = 0
    cache = _terms
    for token, n in Counter(_SEPARATORS.split(text.lower())).items():
        t = cache[token] if token in cache else term(token)
        if t is not None and token:
            counts[t] = counts.get(t, 0) + n
            length += n
    return length, counts


@dataclass(frozen=True)
class Entry:
    """One indexed unit: a doc or a section. Field texts are plain text."""

    ref: str
    fields: Sequence[str]
    """Texts in the order of `FIELDS`."""


def utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


class LunrIndex:
    """An index ready to serialize, built one entry at a time (the build adds each doc's
    entries while the worker processes are still parsing the rest).

    Memory stays proportional to the postings: per entry and field, the term ids and
    frequencies are kept in one flat `array`, and each term's postings are arrays of
    entry numbers. Scores are computed while serializing, never stored."""

    def __init__(
        self, entries: Iterable[Entry] = (), fields: Sequence[tuple[str, int]] = FIELDS
    ) -> None:
        self.fields = [name for name, _ in fields]
        self.boosts = [boost for _, boost in fields]
        self.refs: list[str] = []
        self.term_index: dict[str, int] = {}
        self.postings: list[dict[int, array[int]]] = [{} for _ in fields]
        self.posting_tf: list[dict[int, array[int]]] = [{} for _ in fields]
        """Aligned with `postings`: the term's frequency in each of those entries."""
        self.lengths: list[array[int]] = [array("I") for _ in fields]
        self.frequencies = array("I")
        """Per entry and field (entry-major): term id, frequency, term id, frequency, …,
        all in one array (an array per entry and field cost 4 million objects at 100k)."""
        self.frequency_starts = array("Q", [0])
        """Where each entry and field's pairs start in `frequencies` (one final end)."""
        # set when serializing starts: (idf per term, average length per field), etc.
        self._scoring: tuple[list[float], list[float]] = ([], [])
        self._sorted_terms: list[tuple[str, int]] = []
        self._member_json: list[str] = []
        self._code_point_terms: list[tuple[str, int]] = []
        self._split = 0
        """Entries from this one on are an attached file's: their postings go apart."""
        self.extend(entries)

    def extend(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> None:
        n = len(self.refs)
        self.refs.append(entry.ref)
        term_index = self.term_index
        flat = self.frequencies
        for f, text in enumerate(entry.fields):
            length, counts = term_counts(text)
            postings, posting_tf = self.postings[f], self.posting_tf[f]
            for t, tf in counts.items():
                index = term_index.get(t)
                if index is None:
                    index = term_index[t] = len(term_index)
                flat.append(index)
                flat.append(tf)
                members = postings.get(index)
                if members is None:
                    members = postings[index] = array("I")
                    posting_tf[index] = array("I")
                members.append(n)
                posting_tf[index].append(tf)
            self.lengths[f].append(length)
            self.frequency_starts.append(len(flat))

    def _idf(self) -> list[float]:
        """lunr counts a term once per field it occurs in, per entry."""
        documents = len(self.refs)
        out = []
        for index in range(len(self.term_index)):
            with_term = sum(len(p.get(index, ())) for p in self.postings)
            x = (documents - with_term + 0.5) / (with_term + 0.5)
            out.append(math.log(1 + abs(x)))
        return out

    def _vector_text(self, start: int, stop: int) -> str:
        """The `fieldVectors` elements of entries [start, stop), comma-joined."""
        idf, average = self._scoring
        width = len(self.fields)
        k1_plus_1 = K1 + 1
        out = []
        for n in range(start, stop):
            ref = self.refs[n]
            for f, name in enumerate(self.fields):
                at = n * width + f
                flat = self.frequencies[self.frequency_starts[at] : self.frequency_starts[at + 1]]
                length, boost, avg = self.lengths[f][n], self.boosts[f], average[f]
                norm = K1 * (1 - B + B * (length / avg)) if avg else 0.0
                parts = []
                for index, tf in sorted(zip(flat[::2], flat[1::2], strict=True)):
                    # lunr.py's expression, operation for operation, so scores match bit for bit
                    score = idf[index] * (k1_plus_1 * tf) / (norm + tf) * boost
                    text = repr(round(score, 3))
                    parts.append(f"{index},{text[:-2] if text.endswith('.0') else text}")
                out.append("[" + _json_string(f"{name}/{ref}") + ",[" + ",".join(parts) + "]]")
        return ",".join(out)

    def _postings_text(self, start: int, stop: int) -> str:
        """The `invertedIndex` elements of sorted terms [start, stop), comma-joined."""
        members_json, names = self._member_json, [_json_string(name) for name in self.fields]
        out = []
        for t, index in self._sorted_terms[start:stop]:
            parts = [f'"_index":{index}']
            for f, name in enumerate(names):
                members = self.postings[f].get(index, ())
                parts.append(name + ":{" + ",".join(map(members_json.__getitem__, members)) + "}")
            out.append("[" + _json_string(t) + ",{" + ",".join(parts) + "}]")
        return ",".join(out)

    def _prepare(self, rendering: bool = True) -> None:
        """What scoring, and with `rendering` index.json, need, computed once before any
        worker forks. index.json's tables are dropped once it is written (a tenth of a
        gigabyte at 100,000 docs, beside the search file's arrays), made again if asked."""
        if self.refs and not self._scoring[1]:
            self._scoring = (
                self._idf(),
                [sum(lengths) / len(self.refs) for lengths in self.lengths],
            )
        if rendering and not self._member_json and self.refs:
            self._sorted_terms = sorted(
                self.term_index.items(), key=lambda item: utf16_key(item[0])
            )
            self._member_json = [_json_string(r) + ":{}" for r in self.refs]

    def _search_part(self, start: int, stop: int) -> tuple[bytes, ...]:
        """For terms [start, stop) in code-point order, each field's postings with lunr's
        scores x 1000, as uint32 arrays: (posting counts, entries, scores) of the entries
        before `_split`, then the same of the entries from `_split` on."""
        idf, average = self._scoring
        k1_plus_1 = K1 + 1
        split = self._split
        parts = [array("I") for _ in range(6)]
        for _, index in self._code_point_terms[start:stop]:
            for f in range(len(self.fields)):
                members = self.postings[f].get(index, array("I"))
                tfs = self.posting_tf[f].get(index, array("I"))
                lengths, boost, avg = self.lengths[f], self.boosts[f], average[f]
                scores = []
                for n, tf in zip(members, tfs, strict=True):
                    norm = K1 * (1 - B + B * (lengths[n] / avg))
                    score = idf[index] * (k1_plus_1 * tf) / (norm + tf) * boost
                    scores.append(round(round(score, 3) * 1000))
                cut = bisect.bisect_left(members, split)  # entries ascend in a posting list
                parts[0].append(cut)
                parts[1].extend(members[:cut])
                parts[2].extend(scores[:cut])
                parts[3].append(len(members) - cut)
                parts[4].extend(members[cut:])
                parts[5].extend(scores[cut:])
        return tuple(part.tobytes() for part in parts)

    def search_arrays(self, split: int | None = None) -> SearchArrays:
        """The search file's view of the index: terms in code-point order, their lunr
        `_index`, and the postings of the entries before `split` (a row per term) apart
        from those of the entries from `split` on (a row per term that has any)."""
        self._prepare(rendering=False)
        self._split = len(self.refs) if split is None else split
        self._code_point_terms = sorted(self.term_index.items())
        total = len(self._code_point_terms)
        step = max(1, -(-total // _PARTS))
        docs = Postings(None, array("I", [0]), array("I"), array("I"))
        attached = Postings(array("I"), array("I", [0]), array("I"), array("I"))
        first = 0
        for part in _render_all(
            self,
            [("_search_part", i, min(i + step, total), "", None) for i in range(0, total, step)],
        ):
            for group, (counts, entries, scores) in ((docs, part[:3]), (attached, part[3:])):
                _add_rows(group, array("I", counts), first, len(self.fields))
                group.entries.frombytes(entries)
                group.scores.frombytes(scores)
            first += len(part[0]) // (4 * len(self.fields))
        terms = [t for t, _ in self._code_point_terms]
        lunr_index = array("I", [i for _, i in self._code_point_terms])
        return SearchArrays(terms, lunr_index, docs, attached)

    def release(self) -> None:
        """Drop the postings, frequencies and refs: the search file is the last thing
        written from an index, and at 100,000 docs they are most of a gigabyte that its
        excerpt texts and arrays would otherwise be made beside. Used up after this."""
        for group in (*self.postings, *self.posting_tf):
            group.clear()
        self.lengths = [array("I") for _ in self.fields]
        self.frequencies, self.frequency_starts = array("I"), array("Q", [0])
        self.refs, self.term_index = [], {}
        self._sorted_terms, self._member_json, self._code_point_terms = [], [], []
        self._scoring = ([], [])

    def chunks(self) -> Iterator[str]:
        """The serialized index as JSON text, in pieces (lunr 2.3 / lunr-schema layout).
        The pieces are rendered in parallel where the process can fork."""
        return self._pieces(None)

    def _pieces(self, level: int | None) -> Iterator[Any]:
        """`chunks`, or with a `level` each piece deflated apart (`deflate_parts`), by the
        process that rendered it."""
        self._prepare()
        dump = _json_string
        pieces: list[tuple[str, int, int, str]] = []
        for render, total, opening in (
            ("_vector_text", len(self.refs), ',"fieldVectors":['),
            ("_postings_text", len(self._sorted_terms), '],"invertedIndex":['),
        ):
            step = max(1, -(-total // _PARTS))
            pieces.append(("", 0, 0, opening))
            pieces += [
                (render, i, min(i + step, total), "," if i else "") for i in range(0, total, step)
            ]
        pieces.append(("", 0, 0, '],"pipeline":["stemmer"]}'))
        head = '{"version":' + dump(__TARGET_JS_VERSION__) + ',"fields":['
        yield _encoded(head + ",".join(map(dump, self.fields)) + "]", level)
        jobs = [
            (render, start, stop, lead, level) for render, start, stop, lead in pieces if render
        ]
        rendered = _render_all(self, jobs)
        for render, _, _, lead in pieces:
            yield next(rendered) if render else _encoded(lead, level)
        self._sorted_terms, self._member_json = [], []  # index.json's own tables: written

    def write(self, fh: Writable) -> None:
        """Stream the serialized index to a binary file."""
        buffer: list[str] = []
        size = 0
        for chunk in self.chunks():
            buffer.append(chunk)
            size += len(chunk)
            if size > 1 << 20:
                fh.write("".join(buffer).encode("utf-8"))
                buffer, size = [], 0
        fh.write("".join(buffer).encode("utf-8"))

    def write_gzip(self, fh: Writable, level: int) -> None:
        """Stream the serialized index to a binary file as gzip; each part is compressed
        where it is rendered (by the forked workers of a large index)."""
        write_gzip(fh, self._pieces(level), level)

    def to_bytes(self) -> bytes:
        return "".join(self.chunks()).encode("utf-8")


_PARTS = 256
_PARALLEL_MIN_ENTRIES = 20_000
_rendering: LunrIndex | None = None


Job = tuple[str, int, int, str, int | None]
"""A part to render: (method, start, stop, text put before it, deflate level or None)."""


def _run(index: LunrIndex, job: Job) -> Any:
    """One part, rendered and, with a level, deflated here (in the worker that rendered it)."""
    method, start, stop, lead, level = job
    out = getattr(index, method)(start, stop)
    return out if level is None and not lead else _encoded(lead + out, level)


def _encoded(text: str, level: int | None) -> str | Deflated:
    return text if level is None else deflated(text.encode("utf-8"), level)


def _render_part(job: Job) -> Any:
    assert _rendering is not None
    return _run(_rendering, job)


def _render_all(index: LunrIndex, jobs: list[Job]) -> Iterator[Any]:
    """Render parts in order. Large indexes are rendered by forked workers, which share
    the index with this process copy-on-write instead of receiving it; where forking is
    unsafe (threads running) or unavailable, parts are rendered here. At most two parts
    per worker are in flight, so finished parts never pile up in memory."""
    global _rendering
    workers = min(os.cpu_count() or 1, 8)
    can_fork = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if len(index.refs) < _PARALLEL_MIN_ENTRIES or workers < 2 or not can_fork:
        for job in jobs:
            yield _run(index, job)
        return
    _rendering = index
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            pending: deque[Future[Any]] = deque()
            for job in jobs:
                pending.append(pool.submit(_render_part, job))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    finally:
        _rendering = None


def _add_rows(group: Postings, counts: array[int], first: int, width: int) -> None:
    """Append the posting offsets of terms `first`, `first + 1`, … (`width` counts per
    term) to `group`: every term's, or, when the group lists its rows, those of the terms
    that have postings there."""
    if group.rows is None:
        ends = itertools.accumulate(counts, initial=group.offsets[-1])
        next(ends)
        group.offsets.extend(ends)
        return
    for row in range(0, len(counts), width):
        row_counts = counts[row : row + width]
        if any(row_counts):
            group.rows.append(first + row // width)
            for count in row_counts:
                group.offsets.append(group.offsets[-1] + count)


def _json_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)
