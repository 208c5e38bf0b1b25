"""Writes ``ids.bin`` beside the catalog: the ids squeezed and ordered as an unknown id's
suggestions search them (`handbook.bundle.id_table`), so that no reader squeezes or
sorts them on its first miss."""

from __future__ import annotations

import hashlib

from handbook.bundle import id_table
from handbook.bundle.catalog import Catalog
from handbook.bundle.layout import IDS

from .seal import BundleWriter


def write_ids(writer: BundleWriter, catalog: Catalog, catalog_bytes: bytes) -> None:
    """Write ``ids.bin`` for `catalog`, whose catalog.json is `catalog_bytes`."""
    ids = [doc.id for doc in catalog.docs]
    writer.write(IDS, id_table.dumps(ids, hashlib.sha256(catalog_bytes).digest()))
