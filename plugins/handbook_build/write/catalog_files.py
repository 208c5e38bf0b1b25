"""The catalog's three files, written from each doc's serialized entry as it comes:
``catalog.json`` streamed (a build of 100,000 docs never holds the whole catalog),
``catalog-offsets.bin`` (where each entry lies, by id) and ``ids.bin``, the ids squeezed
and ordered as an unknown id's suggestions search them (`handbook.bundle.id_table`), so
that no reader squeezes or sorts them on its first miss."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from handbook.bundle import catalog_offsets, id_table
from handbook.bundle.catalog import LibraryInfo
from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS, IDS

from .seal import BundleWriter


def write_catalog(
    writer: BundleWriter, library: LibraryInfo, entries: Iterable[tuple[str, bytes]]
) -> None:
    """catalog.json, streamed from each doc's (id, serialized entry) in catalog order,
    catalog-offsets.bin and ids.bin."""
    ids: list[str] = []

    def named() -> Iterator[tuple[str, bytes]]:
        for doc_id, entry in entries:
            ids.append(doc_id)
            yield doc_id, entry

    with writer.stream(CATALOG) as fh:
        offsets = catalog_offsets.write_to(
            fh.write, named(), catalog_offsets.dumps(library.to_dict())
        )
    writer.write(CATALOG_OFFSETS, offsets)
    writer.write(IDS, id_table.dumps(ids, bytes.fromhex(writer.files[CATALOG].sha256)))
