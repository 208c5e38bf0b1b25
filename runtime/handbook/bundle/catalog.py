"""The catalog (``catalog.json``): library metadata and one entry per doc.

The build writes it with `Catalog.to_dict`; the runtime reads it with
`Catalog.from_dict` after the manifest has vouched for its bytes. Section offsets are
UTF-8 byte offsets into the doc's content file, so any language can slice the bytes it
verified without re-counting characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, TypeVar

from ..errors import FormatError
from .layout import CATALOG, content_sha, resource_path


class SectionEntry(NamedTuple):
    """A heading and the content it spans, up to the next heading of its level or higher
    (byte offsets; `chars` counts characters). `DocEntry.sections` holds the `##` ones,
    `DocEntry.subsections` the deeper ones."""

    title: str
    anchor: str
    level: int
    start: int
    end: int
    chars: int


class Resource(NamedTuple):
    """A file attached to a folder doc: its path relative to the doc's folder, and the
    content-addressed bundle file that holds its bytes. An attached markdown file lists
    its `##` sections and its subsections like a doc, as byte offsets into that file."""

    path: str
    sha256: str
    bytes: int
    media_type: str
    sections: tuple[SectionEntry, ...] = ()
    subsections: tuple[SectionEntry, ...] = ()

    @property
    def file(self) -> str:
        return resource_path(self.sha256)

    @property
    def headed(self) -> tuple[SectionEntry, ...]:
        """Every section a reader may ask for: the `##` ones first, then the deeper ones."""
        return self.sections + self.subsections


class DocEntry(NamedTuple):
    id: str
    kind: str
    title: str
    summary: str
    verified: str
    keywords: tuple[str, ...]
    aliases: tuple[str, ...]
    meta: Mapping[str, Any]
    revision: str
    content: str
    bytes: int
    chars: int
    url: str
    source: str
    sections: tuple[SectionEntry, ...] = ()
    resources: tuple[Resource, ...] = ()
    subsections: tuple[SectionEntry, ...] = ()
    """The `###` to `######` sections, in page order: a key of its own, added within
    handbook/v1, so that `sections` stays the `##` list every earlier reader expects."""

    @property
    def sha256(self) -> str:
        """The content file is named by the sha256 of its bytes."""
        return content_sha(self.content)

    @property
    def headed(self) -> tuple[SectionEntry, ...]:
        """Every section a reader may ask for: the `##` ones first, then the deeper ones."""
        return self.sections + self.subsections

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _DOC_FIELDS}
        out["keywords"], out["aliases"] = list(self.keywords), list(self.aliases)
        out["meta"] = dict(self.meta)
        out["sections"] = [
            {name: getattr(s, name) for name in _SECTION_FIELDS} for s in self.sections
        ]
        if self.resources:
            out["resources"] = [_resource_dict(r) for r in self.resources]
        else:
            del out["resources"]
        if self.subsections:
            out["subsections"] = [s._asdict() for s in self.subsections]
        else:
            del out["subsections"]
        return out


def _resource_dict(resource: Resource) -> dict[str, Any]:
    """An attached file's catalog entry; `sections` and `subsections` only when it has
    some, so the entries of other files read as they always did."""
    out = resource._asdict()
    for key in ("sections", "subsections"):
        if out[key]:
            out[key] = [s._asdict() for s in out[key]]
        else:
            del out[key]
    return out


_STRING_FIELDS = (
    "id",
    "kind",
    "title",
    "summary",
    "verified",
    "revision",
    "content",
    "url",
    "source",
)


def _typed(doc: DocEntry) -> DocEntry:
    """`doc`, if every field has its type (even a signed catalog is not trusted to):
    handlers slice, join and compare these values. Raises TypeError otherwise."""
    if not (
        all(type(getattr(doc, name)) is str for name in _STRING_FIELDS)
        and type(doc.bytes) is int
        and type(doc.chars) is int
        and type(doc.meta) is dict
        and all(type(word) is str for word in (*doc.keywords, *doc.aliases))
        and all(map(_typed_section, doc.headed))
        and all(
            type(r.path) is str
            and type(r.sha256) is str
            and type(r.bytes) is int
            and type(r.media_type) is str
            and all(map(_typed_section, r.headed))
            for r in doc.resources
        )
    ):
        raise TypeError(f"doc {str(doc.id)[:80]!r} has a field of the wrong type")
    return doc


def _typed_section(s: SectionEntry) -> bool:
    return (
        type(s.title) is str
        and type(s.anchor) is str
        and type(s.level) is int
        and type(s.start) is int
        and type(s.end) is int
        and type(s.chars) is int
    )


_DOC_FIELDS = DocEntry._fields
_SECTION_FIELDS = SectionEntry._fields


class LibraryInfo(NamedTuple):
    """What the catalog says about the library as a whole."""

    name: str
    version: str
    built_at: str
    title: str = ""
    description: str = ""
    vocab: Mapping[str, list[str]] = MappingProxyType({})
    filters: Mapping[str, Any] = MappingProxyType({})
    """Field -> {"docs": how many docs set it, "values": sorted known values or None
    when there are too many to list}."""
    list_fields: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    """The frontmatter fields every doc must have: part of the doc contract `diff` checks."""
    default_lang: str | None = None
    """The language of docs without `lang`, and the one `get` falls back to."""
    source_docs: Mapping[str, int] | None = None
    """Language -> the source docs the build found for this bundle's readers, whether
    shipped or left out (an unapproved doc under `unapproved: omit`): a figure the build
    reports, which no reader can check against the sources. None in a bundle built
    before it was recorded (an additive key of handbook/v1)."""

    def to_dict(self) -> dict[str, Any]:
        out = self._asdict()
        out["vocab"], out["filters"] = dict(self.vocab), dict(self.filters)
        out["list_fields"], out["required"] = list(self.list_fields), list(self.required)
        if self.source_docs is None:
            del out["source_docs"]
        else:
            out["source_docs"] = dict(self.source_docs)
        return out


class Catalog(NamedTuple):
    library: LibraryInfo
    docs: Sequence[DocEntry]

    def to_dict(self) -> dict[str, Any]:
        return {"library": self.library.to_dict(), "docs": [d.to_dict() for d in self.docs]}

    @classmethod
    def from_dict(cls, data: Any) -> Catalog:
        """The catalog of parsed JSON. `data["docs"]` is consumed: each doc's dicts are
        dropped once it is converted, so a large catalog never exists twice in memory.
        Keys this reader does not know are ignored (the format's version policy: a newer
        minor revision may add fields)."""
        try:
            library = library_from_dict(data["library"])
            raw = data["docs"]
            docs = []
            for n, item in enumerate(raw):
                raw[n] = None
                docs.append(doc_from_dict(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise FormatError(
                f"{CATALOG}: unexpected shape ({type(exc).__name__}: {exc})"
            ) from None
        return cls(library, tuple(docs))


def library_from_dict(data: Any) -> LibraryInfo:
    """The catalog's `library` object (raises KeyError, TypeError or ValueError when it
    has the wrong shape)."""
    lib = _known(data, LibraryInfo._fields)
    lib["list_fields"] = tuple(lib.get("list_fields", ()))
    lib["required"] = tuple(lib.get("required", ()))
    counts = lib.get("source_docs")
    if counts is not None and not (
        type(counts) is dict
        and all(type(k) is str and type(v) is int and v >= 0 for k, v in counts.items())
    ):
        raise TypeError("source_docs must map languages to counts")
    return LibraryInfo(**lib)


def doc_from_dict(item: Any) -> DocEntry:
    """One doc entry of the catalog, every field type-checked (raises KeyError,
    TypeError or ValueError when it has the wrong shape)."""
    entry = _known(item, _DOC_FIELDS)
    entry["keywords"], entry["aliases"] = tuple(entry["keywords"]), tuple(entry["aliases"])
    entry["sections"] = _sections(entry["sections"])
    entry["subsections"] = _sections(entry.get("subsections", ()))
    if "resources" in entry:
        entry["resources"] = tuple(map(_resource, entry["resources"]))
    return _typed(DocEntry(**entry))


def _sections(items: Any) -> tuple[SectionEntry, ...]:
    return tuple(SectionEntry(**_known(s, _SECTION_FIELDS)) for s in items)


def _resource(item: Any) -> Resource:
    fields = _known(item, Resource._fields)
    fields["sections"] = _sections(fields.get("sections", ()))
    fields["subsections"] = _sections(fields.get("subsections", ()))
    return Resource(**fields)


def _known(value: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The keys of `value` (an object) that a model has fields for."""
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, not {type(value).__name__}")
    return {k: v for k, v in value.items() if k in fields}


class _Span(Protocol):
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


S = TypeVar("S", bound=_Span)


def passages(
    sections: Sequence[S], subsections: Sequence[S], size: int
) -> tuple[int, list[tuple[int, int, S, S | None]]]:
    """The search passages of a text of `size` (offsets in the sections' units): where the
    text before its first heading ends, then, in page order, each heading's own text up to
    the next heading of any level, as (start, end, its section, the `##` section it lies
    in). A subsection's passage names its `##` section (None before the first one) and
    never runs past it: a reader that knows only `sections` reads that section for it (or
    the text before the first one), which holds the passage."""
    heads = [(s.start, 0, s) for s in sections] + [(s.start, 1, s) for s in subsections]
    heads.sort(key=lambda head: head[:2])
    bounds = [start for start, _, _ in heads] + [size]
    out: list[tuple[int, int, S, S | None]] = []
    enclosing: S | None = None
    for i, (start, deep, section) in enumerate(heads):
        end = min(section.end, bounds[i + 1])
        if not deep:
            enclosing = section
        elif enclosing is not None and start >= enclosing.end:
            enclosing = None
        out.append((start, min(end, enclosing.end) if enclosing else end, section, enclosing))
    return bounds[0], out
