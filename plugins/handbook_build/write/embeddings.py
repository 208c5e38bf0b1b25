"""``vectors.bin`` at build time: one sentence embedding per search entry.

The passages are read back from what the build just wrote (the search file's entries
and the content files), so the vectors are numbered exactly as the runtime numbers
passages. Each passage is embedded as the agent would read it: its doc's title, its
section's title, then its text as plain words (a doc's own entry also has the summary).
Only builds with ``semantic: true`` import this module, and with it numpy.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from handbook.bundle.catalog import Catalog
from handbook.bundle.layout import SEARCH, VECTORS
from handbook.search.encoder import Encoder, model_dir
from handbook.search.index import SearchIndex
from handbook.search.retriever import LexicalRetriever
from handbook.search.vectors import write

from ..read.plain_text import plain_text
from .embedding_cache import EmbeddingCache, text_key
from .seal import BundleWriter

log = logging.getLogger(__name__)


def passage_texts(root: Path, catalog: Catalog) -> list[str]:
    """The text of every search entry of the bundle being written in `root`: the docs'
    sections, then the sections of their attached markdown files, numbered as the
    runtime numbers them (`LexicalRetriever.passage`)."""
    retriever = LexicalRetriever(SearchIndex((root / SEARCH).read_bytes()))
    files: dict[str, bytes] = {}
    texts = []
    for entry in range(retriever.index.entries):
        passage = retriever.passage(entry)
        if passage.content not in files:
            files[passage.content] = (root / passage.content).read_bytes()
        body = files[passage.content][passage.start : passage.end].decode("utf-8")
        info = catalog.docs[passage.doc]
        head = [info.title, *([passage.resource] if passage.resource else [])]
        head.append(passage.title or ("" if passage.resource else info.summary))
        texts.append("\n".join([*filter(None, head), plain_text(body)]))
    return texts


def write_vectors(
    writer: BundleWriter,
    catalog: Catalog,
    cache: Path | None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed every passage with the installed model and write ``vectors.bin``, taking the
    vectors of passages embedded before from the embedding cache in folder `cache` (None:
    no cache). `progress(done, total)` is told as passages are embedded. Returns how many
    passages were embedded (the rest came from the cache)."""
    encoder = Encoder(model_dir())
    texts = passage_texts(writer.root, catalog)
    keys = [text_key(text) for text in texts]
    store = _open(cache, encoder)
    known = _get(store, keys)
    missing = sorted({key: i for i, key in enumerate(keys) if key not in known}.values())
    done = 0

    def step(count: int) -> None:
        nonlocal done
        done += count
        if progress:
            progress(done, len(missing))

    fresh = encoder.encode([texts[i] for i in missing], step if missing else None)
    computed = {keys[i]: vector for i, vector in zip(missing, fresh, strict=True)}
    vectors = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    for row, key in enumerate(keys):
        vectors[row] = computed[key] if key in computed else known[key]
    writer.write(VECTORS, write(encoder.name, encoder.fingerprint, vectors))
    if store is not None:
        _put(store, computed)
    return len(missing)


def _open(cache: Path | None, encoder: Encoder) -> EmbeddingCache | None:
    if cache is None:
        return None
    try:
        return EmbeddingCache(cache, encoder.vector_key, encoder.dim)
    except (OSError, sqlite3.Error) as exc:
        log.warning("embedding cache %s not used: %s", cache, exc)
        return None


def _get(store: EmbeddingCache | None, keys: list[bytes]) -> dict[bytes, NDArray[np.float16]]:
    if store is None:
        return {}
    try:
        return store.get(keys)
    except sqlite3.Error as exc:
        store.reset(exc)
        return {}


def _put(store: EmbeddingCache, computed: dict[bytes, NDArray[np.float32]]) -> None:
    """Keep the new vectors; a cache that cannot take them costs the next build time, so
    it is reported, not fatal."""
    try:
        store.put(computed.items())
    except sqlite3.Error as exc:
        log.warning("embedding cache %s: new vectors not kept: %s", store.path, exc)
    finally:
        store.close()
