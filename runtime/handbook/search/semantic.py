"""The semantic and hybrid retrievers: passages ranked by meaning, alone or fused.

Lexical matching misses answers phrased in other words than the question. A bundle
built with ``semantic: true`` carries ``vectors.bin``, one embedding per search entry
(`handbook.search.vectors`); at query time the question is embedded with the same model
(`handbook.search.encoder`, checked by the weights' sha256) and passages rank by cosine
similarity. `hybrid` fuses that ranking with the lexical one by reciprocal rank fusion
(each passage scores the sum of 1 / (RRF_K + its rank) in each list), which was chosen
over fused normalised scores on a dev split of Cranfield (bench/README.md).

Importing this module imports numpy and the model's libraries: only `retriever=` does,
on first use, so the lexical path and a lexical-only install never pay for it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Container, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..bundle.layout import VECTORS
from ..bundle.local import Bundle
from .encoder import Encoder, ModelMissingError, model_dir
from .index import Hit
from .query import Clause, QueryError
from .retriever import LexicalRetriever, Passage
from .stemmer import stem
from .threads import blas_threads
from .vectors import read

DEPTH = 100
"""Passages the semantic ranking offers (at least `limit`): its `count` of matches."""
RRF_K = 60
"""Reciprocal rank fusion's constant, as in Cormack et al. (2009)."""

_lock = threading.Lock()
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=2)
def _encoder(folder: Path) -> Encoder:
    return Encoder(folder)


def open_semantic(bundle: Bundle, lexical: LexicalRetriever, hybrid: bool) -> SemanticRetriever:
    """The semantic (or hybrid) retriever over a verified bundle that has vectors; raises
    QueryError when the model is missing or is not the one the vectors were made with."""
    try:
        with _lock:
            encoder = _encoder(model_dir())
    except (ModelMissingError, OSError) as exc:
        raise QueryError(
            "semantic_not_installed", f"retriever=semantic cannot run: {exc}"
        ) from None
    stored = read(bundle.read(VECTORS), lexical.passage_count())
    if stored.model_sha256 != encoder.fingerprint:
        raise QueryError(
            "model_mismatch",
            f"{VECTORS} was computed with {stored.model} (weights sha256 "
            f"{stored.model_sha256[:12]}…), but the installed model is {encoder.name} "
            f"({encoder.fingerprint[:12]}…): install the bundle's model, or use retriever=lexical",
        )
    return SemanticRetriever(lexical, encoder, stored.vectors.astype(np.float32), hybrid)


class SemanticRetriever:
    """Cosine similarity of the query's embedding with every passage's; with `hybrid`,
    fused with the lexical ranking. Passages and term statistics are the lexical
    retriever's: both number the same search entries."""

    def __init__(
        self,
        lexical: LexicalRetriever,
        encoder: Encoder,
        vectors: NDArray[np.float32],
        hybrid: bool,
    ) -> None:
        self.lexical, self.encoder, self.vectors, self.hybrid = lexical, encoder, vectors, hybrid
        index = lexical.index  # every entry's doc, attached files' sections included
        self.entry_doc = np.fromiter(map(index.doc_of, range(index.entries)), dtype=np.int64)
        self._last: tuple[str, NDArray[np.float32]] | None = None

    def rank(
        self,
        clauses: Sequence[Clause],
        limit: int | None = None,
        docs: Container[int] | None = None,
        text: str = "",
    ) -> tuple[int, list[Hit]]:
        scores = self._scores(clauses, text, docs, max(DEPTH, limit or 0))
        best = sorted(scores, key=lambda e: (-scores[e], e))[:limit]
        terms = frozenset(stem(w.lower()) for w in _WORD.findall(text))  # for excerpts
        return len(scores), [Hit(e, scores[e], terms) for e in best]

    def scores(self, clauses: Sequence[Clause], text: str = "") -> dict[int, float]:
        return self._scores(clauses, text, None, DEPTH)

    def _scores(
        self, clauses: Sequence[Clause], text: str, docs: Container[int] | None, depth: int
    ) -> dict[int, float]:
        similar = self._similar(text, docs, depth)
        if not self.hybrid:
            return similar
        lexical = self.lexical.index.scores(clauses)[0] if clauses else {}
        if docs is not None:
            lexical = {e: v for e, v in lexical.items() if int(self.entry_doc[e]) in docs}
        fused: dict[int, float] = {}
        for ranking in (lexical, similar):
            ordered = sorted(ranking, key=lambda e: (-ranking[e], e))
            for rank, entry in enumerate(ordered, 1):
                fused[entry] = fused.get(entry, 0.0) + 1.0 / (RRF_K + rank)
        return fused

    def _similar(self, text: str, docs: Container[int] | None, depth: int) -> dict[int, float]:
        """The `depth` passages most similar to `text`, with their cosine similarity."""
        if not text.strip() or not len(self.vectors):
            return {}
        query = self._embedded(text)
        with blas_threads(self.encoder.threads):  # as measured for the encoder
            similarity = self.vectors @ query
        if docs is not None:
            allowed = np.fromiter((int(d) in docs for d in self.entry_doc), dtype=bool)
            similarity = np.where(allowed, similarity, -np.inf)
        depth = min(depth, int(np.isfinite(similarity).sum()))
        if not depth:
            return {}
        top = np.argpartition(-similarity, depth - 1)[:depth]
        return {int(e): float(similarity[e]) for e in top}

    def _embedded(self, text: str) -> NDArray[np.float32]:
        """The query's embedding; the last one is kept, as `ask` ranks and then grounds
        with the same question."""
        last = self._last
        if last is not None and last[0] == text:
            return last[1]
        query = self.encoder.encode_query(text)
        self._last = (text, query)
        return query

    def closeness(self, text: str, entries: Sequence[int]) -> list[float] | None:
        if not text.strip() or not entries:
            return [0.0] * len(entries)
        query = self._embedded(text)
        return [float(v) for v in self.vectors[list(entries)] @ query]

    def passage(self, entry: int) -> Passage:
        return self.lexical.passage(entry)

    def indexed_docs(self) -> frozenset[int]:
        return self.lexical.indexed_docs()

    def document_frequency(self, term: str) -> int:
        return self.lexical.document_frequency(term)

    def passage_count(self) -> int:
        return self.lexical.passage_count()
