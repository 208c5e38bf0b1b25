"""``vectors.bin`` at build time: one sentence embedding per search entry.

The passages are read back from what the build just wrote (the search file's entries
and the content files), so the vectors are numbered exactly as the runtime numbers
passages. Each passage is embedded as the agent would read it: its doc's title, its
section's title, then its text as plain words (a doc's own entry also has the summary).
Only builds with ``semantic: true`` import this module, and with it numpy.
"""

from __future__ import annotations

from pathlib import Path

from handbook.catalog import Catalog
from handbook.encoder import Encoder, model_dir
from handbook.layout import SEARCH, VECTORS
from handbook.search import SearchIndex
from handbook.vectors import write

from .emit import plain_text
from .seal import BundleWriter


def passage_texts(root: Path, catalog: Catalog) -> list[str]:
    """The text of every search entry of the bundle being written in `root`."""
    index = SearchIndex((root / SEARCH).read_bytes())
    titles = index.strings("entry_title")
    contents: dict[int, bytes] = {}
    texts = []
    for entry in range(index.entries):
        doc = index.entry_doc[entry]
        if doc not in contents:
            contents[doc] = (root / catalog.docs[doc].content).read_bytes()
        body = contents[doc][index.entry_start[entry] : index.entry_end[entry]].decode("utf-8")
        info = catalog.docs[doc]
        head = [info.title, titles[entry]] if titles[entry] else [info.title, info.summary]
        texts.append("\n".join([*head, plain_text(body)]))
    return texts


def write_vectors(writer: BundleWriter, catalog: Catalog) -> None:
    """Embed every passage with the installed model and write ``vectors.bin``."""
    encoder = Encoder(model_dir())
    vectors = encoder.encode(passage_texts(writer.root, catalog))
    writer.write(VECTORS, write(encoder.name, encoder.fingerprint, vectors))
