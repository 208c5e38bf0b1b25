"""The top-k path of `SearchIndex.search` (`handbook.search.top_k`: posting heads,
bounds, early termination) gives exactly what scoring every posting gives: the same
count, entries, order and float scores, on many generated queries over a real built
index (the Agent Skills tree, whose attached references are entries of their own). The
exhaustive scores are lunr's (`test_lunr_js.py`, `test_attached_search.py`), so the top
k are lunr's too.

The index is built with heads of 8 postings, not 64, and every query may take the top-k
path, so that short lists, long ones, tails and entries at no head all occur."""

from __future__ import annotations

import json
import random
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEY, REAL_SITES, shared_data

import handbook.search.index as search_index
import handbook.search.top_k as top_k
from handbook import FormatError
from handbook.search import file_format as fmt
from handbook.search.index import SearchIndex
from handbook.search.query import QueryError, parse
from handbook_build import load_config
from handbook_build.pipeline import build

SKILLS = REAL_SITES / "agent-skills" / "skills"
CONFIG = """\
site_name: skills
docs_dir: docs
plugins:
  - handbook:
      library: skills
      version: 1.0.0
      rules: {HB402: warn, HB702: warn}
"""
QUERIES = 400


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared_data(SKILLS)
    root = tmp_path_factory.mktemp("skills")
    shutil.copytree(SKILLS, root / "docs")
    (root / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fmt, "HEAD", 8)
        build(load_config(root / "mkdocs.yml"), root / "bundle", KEY)
    return root / "bundle" / "search.bin"


@pytest.fixture(autouse=True)
def pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """The top-k path is the pure-Python one: numpy's (`handbook.search.array_scoring`)
    would answer large queries before it (`test_search_arrays.py` compares them)."""
    monkeypatch.setattr(search_index, "ARRAYS", False)


@pytest.fixture
def index(built: Path, monkeypatch: pytest.MonkeyPatch) -> SearchIndex:
    monkeypatch.setattr(top_k, "EXHAUSTIVE_POSTINGS", 0)
    return SearchIndex(built.read_bytes())


def exhaustive(index: SearchIndex, *args: object) -> object:
    """The answer with every posting scored."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(top_k, "top", lambda *_: None)
        return index.search(*args)  # type: ignore[arg-type]


def generated_queries(index: SearchIndex, seed: int) -> Iterator[str]:
    """Queries in lunr's syntax over the index's own words, common ones most: plain,
    required, excluded, per field, boosted, wildcard and fuzzy words."""
    rng = random.Random(seed)
    words = [t for t in index.terms if t.isascii() and t.isalpha() and len(t) > 2]
    common = sorted(words, key=index.document_frequency, reverse=True)[:150]
    for _ in range(QUERIES):
        parts, wildcards = [], 0
        for _ in range(rng.randint(1, 4)):
            word = rng.choice(common if rng.random() < 0.8 else words)
            kind = rng.random()
            if kind < 0.1 and wildcards < 2:
                wildcards += 1
                word = word[: rng.randint(2, 4)] + "*"
            elif kind < 0.18:
                word += "~1"
            elif kind < 0.3:
                word += f"^{rng.choice([2, 3, 0.5, 10])}"
            if rng.random() < 0.15:
                word = rng.choice(["title", "keywords", "body"]) + ":" + word
            presence = rng.random()
            if presence < 0.12:
                word = "+" + word
            elif presence < 0.2:
                word = "-" + word
            parts.append(word)
        yield " ".join(parts)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_top_k_are_the_exhaustive_ranking_s(
    index: SearchIndex, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    docs = len(index.entry_doc and set(index.entry_doc))
    took = 0
    top = top_k.top

    def counted(*args: object) -> object:
        nonlocal took
        answer = top(*args)  # type: ignore[arg-type]
        took += answer is not None
        return answer

    monkeypatch.setattr(top_k, "top", counted)
    for text in generated_queries(index, seed):
        try:
            clauses = parse(text)
        except QueryError:
            continue
        limit = rng.choice([1, 3, 10, 10, 25])
        only = None
        if rng.random() < 0.3:  # what `lang` filters to: some docs' entries only
            only = set(rng.sample(range(docs), docs // 3))
        fast = index.search(clauses, limit, docs=only)
        assert fast == exhaustive(index, clauses, limit, only), text
    assert took > QUERIES // 4  # the heads answered often enough to be tested


def test_ties_at_the_kth_score_are_ordered_as_lunr_meets_them(index: SearchIndex) -> None:
    """Many entries share a score when a word is in their titles only: the limit cuts
    through the tie, and the fast path must keep lunr's order there too."""
    for word in ("skill", "the", "file", "pdf", "test"):
        clauses = parse(f"title:{word} {word}")
        for limit in (1, 2, 5, 9):
            assert index.search(clauses, limit) == exhaustive(index, clauses, limit)


def header_and_body(data: bytes) -> tuple[dict[str, object], bytes]:
    length = int.from_bytes(data[12:16], "little")
    return json.loads(data[16 : 16 + length]), data[16 + length :]


def with_header(data: bytes, header: dict[str, object]) -> bytes:
    _, body = header_and_body(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-(len(fmt.MAGIC) + 8 + len(text)) % 8)
    return data[:12] + len(text).to_bytes(4, "little") + text + body


def test_a_file_without_heads_is_read_and_ranked_exhaustively(built: Path) -> None:
    """What a build before the heads wrote: the same answers, every posting scored."""
    data = built.read_bytes()
    header, _ = header_and_body(data)
    arrays = header["arrays"]
    assert isinstance(arrays, dict)
    old = {k: v for k, v in arrays.items() if "post_head" not in k}
    assert len(old) == len(arrays) - 4  # the docs' heads and the attached files'
    before, after = SearchIndex(data), SearchIndex(with_header(data, {**header, "arrays": old}))
    assert all(g.head is None for g in after.groups)
    for text in ("skill file", "+pdf -form", "create* document", "tests~1 title:skill"):
        clauses = parse(text)
        assert after.search(clauses, 5) == before.search(clauses, 5)


def test_heads_that_do_not_agree_are_refused(built: Path) -> None:
    data = built.read_bytes()
    header, _ = header_and_body(data)
    arrays = header["arrays"]
    assert isinstance(arrays, dict)
    offset, count, typecode = arrays["resource_post_head"]
    short = {**arrays, "resource_post_head": [offset, count - 1, typecode]}
    with pytest.raises(FormatError, match="the posting heads do not agree"):
        SearchIndex(with_header(data, {**header, "arrays": short}))


def test_a_head_outside_its_list_is_refused(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(top_k, "EXHAUSTIVE_POSTINGS", 0)
    data = bytearray(built.read_bytes())
    header, _ = header_and_body(bytes(data))
    arrays = header["arrays"]
    assert isinstance(arrays, dict)
    base = 16 + int.from_bytes(data[12:16], "little")
    offset, count, _ = arrays["resource_post_head"]
    for i in range(count):  # every head points far past its list
        struct.pack_into("<I", data, base + offset + 4 * i, 0xFFFFFF)
    index = SearchIndex(bytes(data))
    attached = index.groups[1]
    word = next(
        index.terms[term]
        for row, term in enumerate(attached.rows or [])
        if attached.head_of(row * 3 + 2) is not None and index.terms[term].isalpha()
    )
    with pytest.raises(FormatError, match="a posting head lies outside its list"):
        index.search(parse(f"body:{word}"), 3)
