"""``vectors.bin`` at build time: one sentence embedding per search entry.

The passages are read back from what the build just wrote (the search file's entries
and the content files), so the vectors are numbered exactly as the runtime numbers
passages. Each passage is embedded as the agent would read it: its doc's title, its
section's title, then its text as plain words (a doc's own entry also has the summary).
Only builds with ``semantic: true`` import this module, and with it numpy.
"""

from __future__ import annotations

from pathlib import Path

from handbook.bundle.catalog import Catalog
from handbook.bundle.layout import SEARCH, VECTORS
from handbook.search.encoder import Encoder, model_dir
from handbook.search.index import SearchIndex
from handbook.search.retriever import LexicalRetriever
from handbook.search.vectors import write

from ..read.plain_text import plain_text
from .seal import BundleWriter


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


def write_vectors(writer: BundleWriter, catalog: Catalog) -> None:
    """Embed every passage with the installed model and write ``vectors.bin``."""
    encoder = Encoder(model_dir())
    vectors = encoder.encode(passage_texts(writer.root, catalog))
    writer.write(VECTORS, write(encoder.name, encoder.fingerprint, vectors))
