"""From checked docs to the bundle's files: catalog, content, attached files, lunr index,
search file, tools, llms.txt (made in `llms`).

Everything here is a pure function of the docs, the configuration and the build time,
so the same sources and `SOURCE_DATE_EPOCH` give the same bytes. The manifest that
lists and signs these files is made in `seal`.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import posixpath
import re
import stat
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from handbook.bundle import canonical, catalog_offsets
from handbook.bundle.catalog import Catalog, DocEntry, LibraryInfo, Resource, passages
from handbook.bundle.layout import (
    INDEX,
    INDEX_GZ,
    LLMS,
    REVIEW_OFFSETS,
    REVIEWS,
    SEARCH,
    TOOLS,
    content_path,
)
from handbook.pedigree.records import Record
from handbook.tools.table import context_of, definitions

from ..checks.audiences import used_fields, used_vocabularies
from ..checks.field_names import catalog_meta, filter_name, is_filter_value
from ..checks.reviews import reviews_files
from ..config.options import VERIFIED_STATES
from ..config.settings import Config
from ..read.parse import Doc
from ..read.plain_text import plain_text
from .catalog_files import write_catalog
from .llms import llms_txt
from .lunr_index import Entry, LunrIndex
from .pages import page_url
from .pedigree_view import records_pedigrees
from .seal import BundleWriter
from .search_file import Body, search_file
from .sections import (
    MARKDOWN,
    attached_sections,
    attached_subsections,
    doc_subsections,
    markdown_text,
    section_entries,
)

CORE_FIELDS = ("id", "title", "kind", "summary", "verified", "keywords", "aliases")
INDEX_GZ_LEVEL = 4
"""zlib level of index.json.gz. Its parts are compressed by the processes that render
them (`deflate_parts`), in parallel: on msdocs-10k level 4 makes the index 13 % smaller
than level 1 for about 1.35x the CPU time; level 6 saves 18 % for 4x the time."""
MAX_FILTER_VALUES = 50
"""A field with more distinct values than this is still filterable, but its values
are not listed (a field like `source`, unique per doc, would bloat every tool schema)."""


def emit(
    docs_by_path: Sequence[Doc],
    config: Config,
    built_at: str,
    writer: BundleWriter,
    index: LunrIndex,
    resources: Mapping[str, Sequence[str]] | None = None,
    records: Sequence[Record] = (),
    source_docs: Mapping[str, int] | None = None,
) -> Catalog:
    """Write every file of the bundle but the manifest; return the catalog. `index` holds
    the docs' `index_entries`, added while they were parsed (in path order); the entries
    of attached markdown files follow them here. `resources` are the attached files of
    folder docs (doc path -> paths in the docs root); `records` the verified reviews and
    invalidations, for a library that declares reviewers; `source_docs` the source docs
    found for this bundle's readers, per language (`LibraryInfo.source_docs`)."""
    docs = sorted(docs_by_path, key=catalog_order)
    texts: dict[str, str] = {}  # sha256 -> text, of every attached markdown file
    entries = [
        write_doc(doc, config, writer, (resources or {}).get(doc.path, ()), texts) for doc in docs
    ]
    library = library_info(docs, config, built_at)._replace(source_docs=source_docs)
    catalog = Catalog(library, tuple(entries))
    position = {doc_key(entry.id, entry.meta): n for n, entry in enumerate(entries)}
    order = [position[doc_key(doc.id, doc.meta)] for doc in docs_by_path]
    owners = [(n, entries[n]) for n in order]  # the markdown files follow in index order
    markdown = index_attached(
        index, texts, ((n, doc_key(e.id, e.meta), e.title, e.resources) for n, e in owners)
    )
    write_catalog(writer, library, ((d.id, catalog_offsets.dumps(d.to_dict())) for d in entries))
    bodies = [doc.body for doc in docs_by_path]  # in index order, as `order`
    finish(config, writer, catalog, index, order, markdown, bodies, records)
    return catalog


def catalog_order(doc: Doc) -> tuple[str, str]:
    """Docs are listed in the catalog by id, then language."""
    return doc.id, str(doc.meta.get("lang") or "")


def finish(
    config: Config,
    writer: BundleWriter,
    catalog: Catalog,
    index: LunrIndex,
    order: Sequence[int],
    markdown: Sequence[tuple[int, Resource]],
    bodies: Sequence[Body],
    records: Sequence[Record] = (),
) -> None:
    """The files written once the catalog is: reviews, the lunr index, the search file
    (`bodies`: each doc's markdown or content file, in index order), tools.json and
    llms.txt."""
    if config.reviews is not None:
        reviews, offsets = reviews_files(config, records)
        writer.write(REVIEWS, reviews)
        writer.write(REVIEW_OFFSETS, offsets)
    _write_lunr(config, writer, index)
    with writer.stream(SEARCH) as fh:
        for piece in search_file(order, markdown, catalog, index, bodies):
            fh.write(piece)
    tools = {"tools": definitions(context_of([catalog]))}
    writer.write(
        TOOLS, (json.dumps(tools, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode()
    )
    pedigrees = records_pedigrees(config.reviews, records, catalog)
    writer.write(LLMS, llms_txt(catalog, config, pedigrees).encode("utf-8"))


def write_doc(
    doc: Doc, config: Config, writer: BundleWriter, files: Sequence[str], texts: dict[str, str]
) -> DocEntry:
    """Write one doc's content (two docs with the same body share one file) and its
    attached `files`; return its catalog entry."""
    body = doc.body.encode("utf-8")
    sha = hashlib.sha256(body).hexdigest()
    path = content_path(sha)
    if path not in writer.files:
        writer.write(path, body)
    attached = tuple(_resource(config, doc.path, rel, writer, texts) for rel in files)
    return _entry(doc, config, body, sha, attached)


def index_attached(
    index: LunrIndex,
    texts: Mapping[str, str],
    owners: Iterable[tuple[int, str, str, Sequence[Resource]]],
) -> list[tuple[int, Resource]]:
    """Add the entries of the attached markdown files (those whose text is in `texts`, by
    sha256) of `owners` (each doc's catalog position, index ref, title and attached
    files, in index order) to `index`; return them as (catalog position, file)."""
    markdown = []
    for n, key, title, resources in owners:
        for resource in resources:
            if resource.sha256 in texts:
                markdown.append((n, resource))
                index.extend(attached_entries(key, title, resource, texts[resource.sha256]))
    return markdown


def _write_lunr(config: Config, writer: BundleWriter, index: LunrIndex) -> None:
    """The lunr.js index as `lunr_index` asks: JSON, gzipped JSON, or none."""
    if config.lunr_index == "json":
        with writer.stream(INDEX) as fh:
            index.write(fh)
    elif config.lunr_index == "gzip":
        with writer.stream(INDEX_GZ) as fh:
            index.write_gzip(fh, INDEX_GZ_LEVEL)


def revision(doc: Doc, resources: Sequence[Resource] = ()) -> str:
    """Changes whenever the doc's metadata, body or attached files do, and only then."""
    payload: dict[str, Any] = {"metadata": doc.meta, "body": doc.body}
    if resources:
        payload["resources"] = {r.path: r.sha256 for r in resources}
    return hashlib.sha256(canonical.dumps(payload)).hexdigest()


_MEDIA_TYPES = {
    ".md": MARKDOWN,
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".json": "application/json",
    ".txt": "text/plain",
}
"""Types the platform's table may lack or name differently, fixed so bundles agree."""


def attached(config: Config, doc_path: str, rel: str) -> tuple[Resource, bytes, str | None]:
    """One attached file, its bytes, and its text when it is markdown (read without
    following links; never executed). A markdown file's resource lists its sections."""
    fd = os.open(config.docs_dir / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{rel}: not a regular file")
        data = fh.read(config.limits.resource_bytes + 1)
    if len(data) > config.limits.resource_bytes:
        raise OSError(f"{rel}: grew past limits.resource_bytes during the build")
    sha = hashlib.sha256(data).hexdigest()
    suffix = posixpath.splitext(rel)[1].lower()
    media_type = (
        _MEDIA_TYPES.get(suffix) or mimetypes.guess_type(rel)[0] or "application/octet-stream"
    )
    text = markdown_text(media_type, data)
    resource = Resource(
        posixpath.relpath(rel, posixpath.dirname(doc_path)),
        sha,
        len(data),
        media_type,
        attached_sections(text) if text is not None else (),
        attached_subsections(text) if text is not None else (),
    )
    return resource, data, text


def entry_of(
    doc: Doc, config: Config, resources: Mapping[str, Sequence[str]] | None = None
) -> DocEntry:
    """The doc's catalog entry, its attached files hashed but not written (what reviews
    are checked against at check time)."""
    body = doc.body.encode("utf-8")
    files = tuple(attached(config, doc.path, rel)[0] for rel in (resources or {}).get(doc.path, ()))
    return _entry(doc, config, body, hashlib.sha256(body).hexdigest(), files)


def _resource(
    config: Config, doc_path: str, rel: str, writer: BundleWriter, texts: dict[str, str]
) -> Resource:
    """Copy one attached file into the bundle, named by its sha256; a markdown file's text
    goes into `texts` (by sha256) to be indexed."""
    resource, data, text = attached(config, doc_path, rel)
    if text is not None:
        texts[resource.sha256] = text
    if resource.file not in writer.files:
        writer.write(resource.file, data)
    return resource


def _entry(
    doc: Doc, config: Config, body: bytes, sha: str, resources: tuple[Resource, ...] = ()
) -> DocEntry:
    meta = doc.meta
    return DocEntry(
        id=doc.id,
        kind=str(meta["kind"]),
        title=str(meta["title"]),
        summary=str(meta["summary"]),
        verified=str(meta.get("verified") or "unverified"),
        keywords=tuple(meta.get("keywords") or ()),
        aliases=tuple(meta.get("aliases") or ()),
        meta=catalog_meta(meta, leave_out=CORE_FIELDS),
        revision=revision(doc, resources),
        content=content_path(sha),
        bytes=len(body),
        chars=len(doc.body),
        url=page_url(doc.path, config.use_directory_urls),
        source=doc.path,
        sections=section_entries(doc.body, doc.sections),
        resources=resources,
        subsections=section_entries(doc.body, doc_subsections(doc)),
    )


def library_info(docs: Sequence[Doc], config: Config, built_at: str) -> LibraryInfo:
    values: dict[str, Counter[str]] = defaultdict(Counter)
    holders: Counter[str] = Counter()
    maps: set[str] = set()  # kept and shown, never filters
    for doc in docs:
        for field, value in doc.meta.items():
            name = filter_name(field)
            if name is None or name in ("id", "title", "summary"):
                continue
            holders[name] += 1
            if not is_filter_value(value):
                maps.add(name)
                continue
            for item in value if isinstance(value, list) else [value]:
                values[name][str(item).lower() if isinstance(item, bool) else str(item)] += 1
    filters = {
        name: {
            "docs": holders[name],
            "values": sorted(seen) if len(seen) <= MAX_FILTER_VALUES else None,
        }
        for name, seen in sorted(values.items())
        if name not in maps
    }
    return LibraryInfo(
        name=config.library,
        version=config.version,
        built_at=built_at,
        title=config.site_name,
        description=config.site_description,
        vocab={
            name: list(allowed) for name, allowed in sorted(_vocabularies(docs, config).items())
        },
        filters=filters,
        list_fields=_list_fields(docs, config),
        required=config.required_fields,
        default_lang=config.default_lang,
    )


def _vocabularies(docs: Sequence[Doc], config: Config) -> dict[str, tuple[str, ...]]:
    """The declared vocabularies, a library's contract (`handbook diff` compares them);
    in one audience's bundle, only the values its docs use (`used_vocabularies`), as its
    filters are. `verified`'s states are the format's, not the author's: always all."""
    if config.audiences is None:
        return config.vocabularies
    return {**used_vocabularies(config.vocab, docs), "verified": VERIFIED_STATES}


def _list_fields(docs: Sequence[Doc], config: Config) -> tuple[str, ...]:
    """The fields list results show; in one audience's bundle, those its docs have."""
    fields = config.summary_fields
    return fields if config.audiences is None else used_fields(fields, docs)


# -- search entries -------------------------------------------------------------------------

_COMPACT = re.compile(r"[\s_.\-/]+")
_PATH_WORDS = re.compile(r"[/_.]+")
"""What separates the words of a file's path (the tokenizer splits only at spaces and `-`)."""


def _variants(values: Sequence[str]) -> list[str]:
    """Each value and its compact form, so `AC-200`, `AC 200` and `ac200` all hit."""
    out = []
    for value in values:
        out.append(value)
        compact = _COMPACT.sub("", value)
        if compact and compact.lower() != value.lower():
            out.append(compact)
    return out


def doc_key(doc_id: str, meta: Mapping[str, Any]) -> str:
    """A doc's ref in index.json: its id, with `@lang` when it names its language (an id
    may exist once per language, and lunr's refs must be unique)."""
    lang = meta.get("lang")
    return f"{doc_id}@{lang}" if lang else doc_id


def index_entries(docs: Sequence[Doc]) -> Iterator[Entry]:
    """One entry per doc (title; keywords, aliases and id with their variants; summary
    and overview) and one per heading, `##` or deeper (its title; the doc title as
    keyword; its text up to the next heading, as `passages` cuts it)."""
    for doc in docs:
        meta = doc.meta
        title = str(meta.get("title", ""))
        names = [*(meta.get("keywords") or []), *(meta.get("aliases") or []), doc.id]
        first, parts = passages(doc.sections, doc_subsections(doc), len(doc.body))
        overview = f"{meta.get('summary', '')}\n{doc.body[:first]}"
        key = doc_key(doc.id, meta)
        yield Entry(key, (title, " ".join(_variants(names)), plain_text(overview)))
        for start, end, section, _ in parts:
            text = doc.body[start:end].partition("\n")[2]
            yield Entry(f"{key}#{section.anchor}", (section.title, title, plain_text(text)))


def attached_entries(key: str, title: str, resource: Resource, text: str) -> Iterator[Entry]:
    """The entries of an attached markdown file, refs `<doc ref>/<path>#<anchor>` (an
    empty anchor for the text before its first section; no doc id holds a `/`): that
    text (the file's path as title, the doc title as keyword), then each heading's text
    as `passages` cuts it (its title; the doc title and the path as keywords; its text)."""
    data = text.encode("utf-8")
    words = _PATH_WORDS.sub(" ", resource.path)
    first, parts = passages(resource.sections, resource.subsections, len(data))
    overview = data[:first].decode("utf-8")
    yield Entry(f"{key}/{resource.path}#", (words, title, plain_text(overview)))
    for start, end, section, _ in parts:
        body = data[start:end].decode("utf-8").partition("\n")[2]
        ref = f"{key}/{resource.path}#{section.anchor}"
        yield Entry(ref, (section.title, f"{title} {words}", plain_text(body)))
