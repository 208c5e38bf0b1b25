"""The numpy path of `SearchIndex.search` (`handbook.search.array_scoring`, the `fast`
extra) answers exactly what the pure-Python paths answer: the same count, entries,
order, and scores to the last bit (compared as `float.hex`), on generated search files
and queries (fields, boosts, required and excluded words, wildcards, fuzzy words,
attached files, `docs` filters, limits that cut through ties) and on a real built index.
Numpy is imported only once a query is large enough, and `HANDBOOK_PURE_SEARCH=1` keeps
every search in Python.

The other ranking tests (lunr parity: `test_lunr_js.py`, `test_attached_search.py`) run
on the numpy path for every query with `HANDBOOK_TEST_ARRAYS=1`, on the pure path with
`HANDBOOK_PURE_SEARCH=1`."""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
from array import array
from collections.abc import Container, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, REAL_SITES, shared_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import handbook.search.index as search_index
import handbook.search.top_k as top_k
from handbook.search import array_loading
from handbook.search import file_format as fmt
from handbook.search.index import Hit, SearchIndex
from handbook.search.query import FIELDS, Clause, QueryError, parse
from handbook_build import load_config
from handbook_build.pipeline import build

pytest.importorskip("numpy")

Answer = tuple[int, list[tuple[int, str, frozenset[str]]]]
SKILLS = REAL_SITES / "agent-skills" / "skills"


def exact(answer: tuple[int, list[Hit]]) -> Answer:
    """An answer with each score as its exact bits."""
    count, hits = answer
    return count, [(h.entry, h.score.hex(), h.terms) for h in hits]


def every_path(
    index: SearchIndex,
    clauses: list[Clause],
    limit: int | None,
    docs: Container[int] | None = None,
) -> dict[str, Answer]:
    """The answer of each path: numpy for every query, the posting heads (top-k) for
    every query, every posting summed in Python."""
    out = {}
    assert search_index.load_arrays() is not None  # imported now, not in the background
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search_index, "ARRAYS", True)
        mp.setattr(search_index, "ARRAY_POSTINGS", 0)
        out["arrays"] = exact(index.search(clauses, limit, docs))
        mp.setattr(search_index, "ARRAYS", False)
        mp.setattr(top_k, "EXHAUSTIVE_POSTINGS", 0)
        out["top_k"] = exact(index.search(clauses, limit, docs))
        mp.setattr(top_k, "top", lambda *_: None)
        out["every posting"] = exact(index.search(clauses, limit, docs))
    return out


def assert_alike(
    index: SearchIndex,
    clauses: list[Clause],
    limit: int | None,
    docs: Container[int] | None = None,
) -> None:
    answers = every_path(index, clauses, limit, docs)
    assert answers["arrays"] == answers["every posting"], clauses
    assert answers["top_k"] == answers["every posting"], clauses


# -- generated search files --------------------------------------------------------------


@st.composite
def search_files(draw: st.DrawFn) -> tuple[SearchIndex, list[str]]:
    """A search file of a few docs' entries (and attached files' when drawn), each term's
    postings in each field a random sorted subset of the entries, scores including 0,
    ties and values above 65,535 (stored as 32 bits)."""
    words = draw(
        st.lists(st.text("abcde", min_size=1, max_size=4), min_size=1, max_size=10, unique=True)
    )
    terms = sorted(words)
    doc_entries = draw(st.integers(1, 30))
    docs = draw(st.integers(1, min(6, doc_entries)))
    attached_entries = draw(st.integers(0, 12))
    wide = draw(st.booleans())
    score = st.sampled_from([0, 1, 500, 1000, 1234]) | st.integers(0, 70_000 if wide else 9_999)

    def group(first: int, count: int, rows: list[int]) -> fmt.Postings:
        offsets, entries, scores = array("I", [0]), array("I"), array("I")
        for _ in rows:
            for _ in FIELDS:
                held = draw(st.sets(st.integers(first, first + count - 1), max_size=count))
                entries.extend(sorted(held))
                scores.extend(draw(score) for _ in held)
                offsets.append(len(entries))
        return fmt.Postings(None, offsets, entries, scores)

    own = group(0, doc_entries, list(range(len(terms))))
    rows = sorted(draw(st.sets(st.integers(0, len(terms) - 1)))) if attached_entries else []
    extra = group(doc_entries, attached_entries, rows)
    extra = extra._replace(rows=array("I", rows))
    lunr_order = draw(st.permutations(range(len(terms))))
    passages = fmt.Passages()
    for entry in range(doc_entries):
        passages.add(entry * docs // doc_entries, 0, 1, f"s{entry}", f"a{entry}")
    attached = None
    if attached_entries:
        files = fmt.Passages()
        for entry in range(attached_entries):
            files.add(entry % 2, 0, 1, f"r{entry}", "")
        attached = fmt.Attached(files, [0, docs - 1], ["a.md", "b.md"], [b"\1" * 32] * 2)
    index = fmt.SearchArrays(terms, array("I", lunr_order), own, extra)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fmt, "HEAD", 2)  # heads on most lists: the top-k path has work to do
        pieces = fmt.write(
            index,
            passages,
            doc_id=[f"d{d}" for d in range(docs)],
            doc_title=[f"D{d}" for d in range(docs)],
            doc_content=[bytes([d]) * 32 for d in range(docs)],
            attached=attached,
        )
        data = b"".join(pieces)
    return SearchIndex(data), terms


@st.composite
def queries(draw: st.DrawFn, terms: list[str]) -> list[Clause]:
    """Clauses over `terms` (and words not in them): plain, wildcard and fuzzy words, in
    every field or some, boosted, required or excluded."""
    clauses = []
    for _ in range(draw(st.integers(1, 5))):
        term = draw(st.sampled_from(terms))
        kind = draw(st.sampled_from(["plain", "plain", "wildcard", "fuzzy", "absent"]))
        edit = 0
        if kind == "wildcard":
            term = term[:1] + "*"
        elif kind == "fuzzy":
            edit = draw(st.integers(1, 2))
        elif kind == "absent":
            term = "zz" + term
        fields = draw(st.sampled_from([FIELDS, ("title",), ("body",), ("keywords", "body")]))
        presence = draw(st.sampled_from(["optional"] * 4 + ["required", "prohibited"]))
        boost = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5, 3.0, 10.0, 0.3]))
        clauses.append(Clause(term, fields, presence, boost, edit))
    return clauses


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_path_ranks_generated_files_alike(data: st.DataObject) -> None:
    index, terms = data.draw(search_files())
    for _ in range(4):
        clauses = data.draw(queries(terms))
        limit = data.draw(st.sampled_from([None, 1, 2, 3, 5, 10, 100]))
        docs = data.draw(st.none() | st.sets(st.integers(0, 5)))
        assert_alike(index, clauses, limit, docs)


class OnlyContains:
    """A `docs` filter that answers membership and nothing else (not iterable)."""

    def __init__(self, docs: set[int]) -> None:
        self.docs = docs

    def __contains__(self, doc: object) -> bool:
        return doc in self.docs


@settings(max_examples=50, deadline=None)
@given(search_files(), st.sets(st.integers(0, 5)))
def test_a_docs_filter_that_only_answers_membership(
    drawn: tuple[SearchIndex, list[str]], docs: set[int]
) -> None:
    index, terms = drawn
    clauses = [Clause(t) for t in terms]
    answers = every_path(index, clauses, 3, OnlyContains(docs))
    assert answers["arrays"] == answers["every posting"] == exact(index.search(clauses, 3, docs))


def test_sums_in_lunr_order_where_another_order_rounds_differently() -> None:
    """0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1 in floats: an entry in three terms' lists
    must be summed term by term in lunr's order (`term_lunr_index`), not in the file's."""
    for lunr_order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        offsets = array("I", [0])
        entries, scores = array("I"), array("I")
        for stored in (100, 200, 300):  # 0.1, 0.2, 0.3 in the body of entry 0
            offsets.extend([len(entries), len(entries)])
            entries.append(0)
            scores.append(stored)
            offsets.append(len(entries))
        passages = fmt.Passages()
        passages.add(0, 0, 1, "", "")
        data = b"".join(
            fmt.write(
                fmt.SearchArrays(
                    ["a", "b", "c"],
                    array("I", lunr_order),
                    fmt.Postings(None, offsets, entries, scores),
                    fmt.Postings(array("I"), array("I", [0]), array("I"), array("I")),
                ),
                passages,
                doc_id=["d"],
                doc_title=["D"],
                doc_content=[b"\0" * 32],
            )
        )
        index = SearchIndex(data)
        clauses = [Clause("a"), Clause("b"), Clause("c")]
        answers = every_path(index, clauses, 1)
        assert answers["arrays"] == answers["every posting"] == answers["top_k"]
        values = [(100, 200, 300)[i] / 1000 for i in sorted(range(3), key=lunr_order.__getitem__)]
        expected = (values[0] + values[1] + values[2]) / math.sqrt(3)
        assert answers["arrays"][1][0][1] == expected.hex()


def test_concurrent_searches_do_not_share_their_work_arrays() -> None:
    """Searches in several threads at once: each answer is the one it gets alone."""
    rng = random.Random(3)
    rows, entries_count = 40, 3000
    offsets, entries, scores = array("I", [0]), array("I"), array("I")
    for _ in range(rows * len(FIELDS)):
        held = sorted(rng.sample(range(entries_count), rng.randint(0, 800)))
        entries.extend(held)
        scores.extend(rng.randint(0, 20_000) for _ in held)
        offsets.append(len(entries))
    passages = fmt.Passages()
    for entry in range(entries_count):
        passages.add(entry // 10, 0, 1, "", "")
    terms = [f"t{n:02}" for n in range(rows)]
    data = b"".join(
        fmt.write(
            fmt.SearchArrays(
                terms,
                array("I", range(rows)),
                fmt.Postings(None, offsets, entries, scores),
                fmt.Postings(array("I"), array("I", [0]), array("I"), array("I")),
            ),
            passages,
            doc_id=[f"d{n}" for n in range(300)],
            doc_title=["D"] * 300,
            doc_content=[b"\0" * 32] * 300,
        )
    )
    index = SearchIndex(data)
    queries = [[Clause(t) for t in rng.sample(terms, 3)] for _ in range(60)]
    alone = [every_path(index, q, 10)["every posting"] for q in queries]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search_index, "ARRAY_POSTINGS", 0)
        mp.setattr(search_index, "ARRAYS", True)
        with ThreadPoolExecutor(8) as pool:
            together = list(pool.map(lambda q: exact(index.search(q, 10)), queries * 4))
    assert together == alone * 4


# -- a real built index ------------------------------------------------------------------


@pytest.fixture(scope="module")
def skills(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """The Agent Skills tree, whose attached references are entries of their own."""
    shared_data(SKILLS)
    root = tmp_path_factory.mktemp("skills")
    shutil.copytree(SKILLS, root / "docs")
    (root / "mkdocs.yml").write_text(
        "site_name: skills\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: skills\n"
        "      version: 1.0.0\n      rules: {HB402: warn, HB702: warn}\n",
        encoding="utf-8",
    )
    build(load_config(root / "mkdocs.yml"), root / "bundle", KEY)
    return SearchIndex((root / "bundle" / "search.bin").read_bytes())


def skills_queries(index: SearchIndex, rng: random.Random) -> Iterator[str]:
    words = [t for t in index.terms if t.isascii() and t.isalpha() and len(t) > 2]
    common = sorted(words, key=index.document_frequency, reverse=True)[:100]
    for _ in range(150):
        parts: list[str] = []
        for _ in range(rng.randint(1, 4)):
            word = rng.choice(common if rng.random() < 0.8 else words)
            word = rng.choice(["", "", "", "+", "-", "title:", "body:"]) + word
            word += rng.choice(["", "", "", "^2", "~1", "*"]) if "*" not in " ".join(parts) else ""
            parts.append(word)
        yield " ".join(parts)


def test_every_path_ranks_a_real_index_alike(skills: SearchIndex) -> None:
    rng = random.Random(7)
    docs = len(set(skills.entry_doc))
    checked = 0
    for text in skills_queries(skills, rng):
        try:
            clauses = parse(text)
        except QueryError:
            continue
        only = set(rng.sample(range(docs), docs // 3)) if rng.random() < 0.3 else None
        assert_alike(skills, clauses, rng.choice([1, 5, 10, 10, 25, None]), only)
        checked += 1
    assert checked > 100


# -- when numpy is imported ------------------------------------------------------------


def run_python(code: str, **env: str) -> str:
    paths = os.pathsep.join(p for p in sys.path if p)
    environment = {**os.environ, "PYTHONPATH": paths}
    environment.pop(array_loading.PURE_SEARCH, None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**environment, **env},
        check=True,
    )
    return done.stdout.strip()


def test_numpy_is_imported_from_the_second_large_query_on(plant_floor_bundle: Path) -> None:
    code = f"""
import sys, threading, time
from handbook import Library
import handbook.search.index as ix
lib = Library.open({str(plant_floor_bundle)!r}, trusted_keys=[{PUBLIC!r}])
first = lib.search("modbus timeout", limit=10)
small = "numpy" in sys.modules
ix.ARRAY_POSTINGS = 1
large = lib.search("modbus timeout", limit=10)  # the first large query: no numpy
alone = "numpy" in sys.modules or threading.active_count() > 1
lib.search("modbus timeout", limit=10)  # the second: summed in Python, numpy on its way
while ix.load_arrays(wait=False) is None:
    time.sleep(0.01)
arrays = lib.search("modbus timeout", limit=10)
path = lib.snapshot.retriever.index._array_postings is not None
same = first["hits"] == large["hits"] == arrays["hits"] and first["count"] == arrays["count"]
print(ix.ARRAYS, small, alone, "numpy" in sys.modules, path, same)
"""
    assert run_python(code) == "True False False True True True"


def test_pure_search_is_forced_by_the_environment(plant_floor_bundle: Path) -> None:
    code = f"""
import sys
from handbook import Library
import handbook.search.index as ix
lib = Library.open({str(plant_floor_bundle)!r}, trusted_keys=[{PUBLIC!r}])
ix.ARRAY_POSTINGS = 0
answer = lib.search("modbus timeout", limit=10)
print(ix.ARRAYS, ix.load_arrays(), "numpy" in sys.modules, answer["count"] > 0)
"""
    assert run_python(code, HANDBOOK_PURE_SEARCH="1") == "False None False True"


def test_a_server_imports_the_array_path_before_its_first_query() -> None:
    """`serve` and `mcp` import numpy's path at start (`for_a_server`), so their first
    queries do not share the interpreter with its import; the environment still wins."""
    code = """
import sys
from handbook.search import array_loading
before = "numpy" in sys.modules
array_loading.for_a_server()
print(before, array_loading.imported() is not None, "numpy" in sys.modules)
"""
    assert run_python(code) == "False True True"
    assert run_python(code, HANDBOOK_PURE_SEARCH="1") == "False False False"
