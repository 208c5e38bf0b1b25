"""`Snapshot`: one verified bundle and everything derived from it, replaced whole on reload.

A call reads one snapshot from start to end, so a reload in the middle of it can never
mix two bundles: lookups by id, languages, filters and the retriever all travel with
the bundle they were made from. The maps are built on first use (a process that only
searches never parses the catalog, and one that only gets docs by id parses their entries
alone where the bundle has catalog-offsets.bin).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from ..answers import GetAnswer, Pedigree
from ..bounds import clip
from ..bundle.catalog import DocEntry, SectionEntry, passages
from ..bundle.id_table import BundleIds
from ..bundle.layout import SEARCH
from ..bundle.local import Bundle
from ..pedigree.derived import Ledger, retirement
from ..pedigree.indexed import open_ledger
from ..search.retriever import LexicalRetriever, Retriever, open_retriever
from ..search.retriever_choice import open_named
from ..search.stemmer import stem
from .suggestions import IdIndex

if TYPE_CHECKING:
    from ..tools.model import ToolContext

MAX_AVAILABLE_IDS = 50
_COMPACT = re.compile(r"[\W_]+")
WORD = re.compile(r"\w+")


def compact(text: str) -> str:
    """`AC-200`, `ac 200` and `AC200` all become `ac200`."""
    return _COMPACT.sub("", text.lower())


class Snapshot:
    """What one verified bundle answers from."""

    def __init__(
        self,
        bundle: Bundle,
        retriever: LexicalRetriever | None,
        loaded_at: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bundle, self._retriever, self.loaded_at = bundle, retriever, loaded_at
        self._retriever_lock = threading.Lock()
        self.clock = clock
        """Now, in seconds since the epoch: pedigrees are derived at the time of the call."""
        self._named: dict[str, Retriever] = {}
        self.id_files = BundleIds(bundle.manifest.signed, bundle.read)
        """The ids of catalog-offsets.bin and ids.bin, each file read when first needed."""

    def retriever_named(self, name: object) -> Retriever:
        """The retriever a call names (`retriever=`; None is the lexical default), opened
        on first use and kept with this bundle; QueryError when it cannot run here. Opened
        under the lock the lexical one uses: concurrent first calls open it once."""
        if name is None or name == "lexical":
            return self.retriever
        key = str(name)
        if key not in self._named:
            lexical = self.retriever  # outside the lock, which opening it takes too
            with self._retriever_lock:
                if key not in self._named:
                    self._named[key] = open_named(self.bundle, lexical, name)
        return self._named[key]

    @property
    def retriever(self) -> LexicalRetriever:
        """The lexical retriever over the bundle's search file (opened on first use when
        the snapshot was made with `defer`)."""
        if self._retriever is None:
            with self._retriever_lock:
                if self._retriever is None:
                    self._retriever = open_retriever(self.bundle)
        return self._retriever

    @property
    def search_loaded(self) -> bool:
        """Whether the search file has been read (and verified) yet: a deferred one is
        read by the first call that searches."""
        return self._retriever is not None

    @classmethod
    def of(
        cls,
        bundle: Bundle,
        loaded_at: str,
        clock: Callable[[], float] = time.time,
        defer: bool = False,
    ) -> Snapshot:
        """The snapshot of `bundle`; its search file is read now unless `defer` (a remote
        bundle read lazily: opening it should not download the search file)."""
        if defer and SEARCH in bundle.manifest.signed.files:
            return cls(bundle, None, loaded_at, clock)
        return cls(bundle, open_retriever(bundle), loaded_at, clock)

    @cached_property
    def ledger(self) -> Ledger | None:
        """The verified reviews, for a library that declares reviewers: read per doc where
        the bundle has reviews-offsets.bin (`handbook.pedigree.indexed`)."""
        return open_ledger(self.bundle)

    def pedigree(self, doc: DocEntry) -> Pedigree | None:
        """The doc's pedigree now (`handbook.pedigree.derived`); for a library without reviewers,
        only a retired doc has one."""
        if self.ledger is None:
            return cast(Pedigree, retirement(doc)) or None
        return cast(Pedigree, self.ledger.pedigree(doc, self.clock()))

    @property
    def name(self) -> str:
        """The library's name, as signed."""
        return self.bundle.manifest.signed.library

    @property
    def version(self) -> str:
        return self.bundle.manifest.signed.version

    @property
    def docs(self) -> Sequence[DocEntry]:
        return self.bundle.catalog.docs

    @property
    def default_lang(self) -> str:
        return self.bundle.library_info.default_lang or ""

    def lang_of(self, doc: DocEntry) -> str:
        """A doc's language: its `lang`, else the library's default ("" when neither)."""
        return str(doc.meta.get("lang") or self.default_lang)

    @cached_property
    def tool_context(self) -> ToolContext:
        """What the tool definitions say about this library (the tool table is imported
        here, by the transports that define tools, not by every process that searches)."""
        from ..tools.table import context_of

        return context_of([self.bundle.catalog])

    @cached_property
    def by_id(self) -> dict[str, int]:
        """id -> catalog position of its doc in the default language (or, for an id that
        has no doc in it, in the first language by tag)."""
        default = self.default_lang
        out: dict[str, int] = {}
        for n, doc in enumerate(self.docs):
            if doc.id not in out or self.lang_of(doc) == default:
                out[doc.id] = n
        return out

    @cached_property
    def languages(self) -> dict[str, list[int]]:
        """language -> catalog positions of its docs ("" for no language at all)."""
        out: dict[str, list[int]] = {}
        for n, doc in enumerate(self.docs):
            out.setdefault(self.lang_of(doc), []).append(n)
        return out

    @cached_property
    def answerable(self) -> frozenset[int]:
        """Catalog positions of the docs the search file can answer: it names the doc at
        the same position under the same id and holds at least one passage of it.
        Counted from the verified files, once per bundle (`handbook.handlers.statistics`)."""
        ids = self.retriever.index.strings("doc_id")
        indexed = self.retriever.indexed_docs()
        return frozenset(
            n
            for n, doc in enumerate(self.docs)
            if n in indexed and n < len(ids) and ids[n] == doc.id
        )

    @cached_property
    def identities(self) -> dict[str, list[int]]:
        """Compact id, title, keyword, alias or metadata value -> the docs that have it."""
        out: dict[str, list[int]] = {}
        for n, doc in enumerate(self.docs):
            values = [doc.id, doc.title, *doc.keywords, *doc.aliases]
            values += [v for v in doc.meta.values() if isinstance(v, str)]
            for value in {compact(v) for v in values if v}:
                out.setdefault(value, []).append(n)
        return out

    # -- lookups -----------------------------------------------------------------------------

    def doc(self, doc_id: str) -> DocEntry | None:
        """The entry of `doc_id` (or `<this library>:<id>`) in the default language, or None."""
        wanted = doc_id.strip().removeprefix(f"{self.name}:")
        if "by_id" not in self.__dict__ and self.id_files.absent(wanted):
            return None  # from catalog-offsets.bin's bytes: its ids are not even cut
        if "by_id" not in self.__dict__ and (alone := self.bundle.docs_with_id(wanted)) is not None:
            chosen = None  # as `by_id` chooses: the one in the default language, or the first
            for doc in alone:
                if chosen is None or self.lang_of(doc) == self.default_lang:
                    chosen = doc
            return chosen
        index = self.by_id.get(wanted)
        return None if index is None else self.docs[index]

    def doc_at(self, position: int) -> DocEntry:
        """The doc at `position` in the catalog (a search hit's), without parsing the whole
        catalog where the bundle has catalog-offsets.bin."""
        doc = self.bundle.doc_at(position)  # None once the catalog is parsed whole
        return self.docs[position] if doc is None else doc

    def in_lang(self, doc_id: str, lang: str) -> DocEntry | None:
        """`doc_id`'s doc in language `lang`, or None."""
        if "languages" not in self.__dict__ and (alone := self.bundle.docs_with_id(doc_id)):
            return next((doc for doc in alone if self.lang_of(doc) == lang), None)
        positions = self.languages.get(lang, [])
        return next((self.docs[n] for n in positions if self.docs[n].id == doc_id), None)

    def read(self, doc: DocEntry) -> bytes:
        """The doc's verified content."""
        return self.bundle.read(doc.content)

    @cached_property
    def id_index(self) -> IdIndex:
        """The ids suggestions come from: ids.bin, else the ids of catalog-offsets.bin
        where the bundle has it (the catalog is not parsed)."""
        return IdIndex(self.id_files.table() or self.bundle.doc_ids())

    def suggest(self, doc_id: str) -> list[str]:
        """Ids close to `doc_id`: the same but for case and punctuation, similar
        spellings, ids that hold it (`handbook.handlers.suggestions`)."""
        return self.id_index.suggest(doc_id)

    def unknown_id(self, doc_id: str) -> GetAnswer:
        ids = self.id_index.ids
        return {
            "found": False,
            "error": {"code": "unknown_id", "message": f"no doc with id {clip(doc_id)!r}"},
            "suggestions": self.suggest(doc_id),
            "available_ids": list(ids[:MAX_AVAILABLE_IDS]),
            "available_ids_truncated": len(ids) > MAX_AVAILABLE_IDS,
            "hint": "Use one of the suggestions, or list() to find the right id.",
        }

    # -- filters -------------------------------------------------------------------------------

    def filter_problem(self, name: str, value: Any) -> str | None:
        """Why `name=value` matches no doc of this bundle (an unknown field or value), or
        None. `lang` is every doc's language, its own or the library's default."""
        if name in PEDIGREE_FILTERS:
            if truth(value) is None:
                return f"{name} takes true or false, not {clip(str(value))!r}."
            if name != "include_retired" and self.ledger is None:
                return f"The library has no reviews, so no doc is {name}: leave {name} out."
            return None
        if name == "lang":
            if str(value) in self.languages:
                return None
            known = ", ".join(sorted(self.languages))
            return f"No docs in language {clip(str(value))!r}; the languages are {known}."
        filters = self.bundle.catalog.library.filters
        if name not in filters:
            return (
                f"No field {clip(name)!r} to filter on. Known fields: {', '.join(sorted(filters))}."
            )
        known_values = filters[name].get("values")
        if known_values is not None and str(value).strip().lower() not in {
            v.lower() for v in known_values
        }:
            return (
                f"No doc has {name} = {clip(str(value))!r}. "
                f"Known values of {name}: {', '.join(known_values)}."
            )
        return None

    def matches(self, doc: DocEntry, filters: Mapping[str, Any]) -> bool:
        """Whether `doc` passes every filter: case-insensitive, list fields by membership;
        `reviewed` and `suspect` by its pedigree now (`include_retired` is `select`'s)."""
        for name, value in filters.items():
            if name == "lang":
                passed = self.lang_of(doc) == str(value)
            elif name in PEDIGREE_FILTERS:
                passed = name == "include_retired" or self._pedigree_is(doc, name) == truth(value)
            else:
                passed = _matches(field(doc, name), value)
            if not passed:
                return False
        return True

    def _pedigree_is(self, doc: DocEntry, name: str) -> bool:
        if self.ledger is None:
            return False
        if name == "suspect":
            return bool(self.ledger.suspect(doc))
        return bool(self.ledger.pedigree(doc, self.clock()).get("reviews"))

    # -- passages --------------------------------------------------------------------------------

    def passage_terms(
        self, doc_id: str, anchor: str | None, resource: str | None = None
    ) -> frozenset[str]:
        """The stemmed words of one passage (a heading's text up to the next heading, or the
        text before the first heading when `anchor` is empty) of a doc, or of the markdown
        file attached to it at path `resource`, as `ask` compares them with a question:
        what its entry indexes."""
        doc = self.doc(doc_id)
        if doc is None:
            return frozenset()
        names = [doc.title]  # what a section's entry holds besides its text
        if resource:
            attached = next((r for r in doc.resources if r.path == resource), None)
            if attached is None:
                return frozenset()
            content, sections = self.bundle.read(attached.file), attached.sections
            deeper = attached.subsections
            names.append(attached.path)
        else:
            content, sections, deeper = self.read(doc), doc.sections, doc.subsections
        first, parts = passages(sections, deeper, len(content))
        part = (
            next(((a, b) for a, b, s, _ in parts if s.anchor == anchor), None) if anchor else None
        )
        if part is not None:
            text = content[part[0] : part[1]]
        else:  # the entry of the text before the first section
            text = content[:first]
            if not resource:
                names += [*doc.keywords, *doc.aliases, doc.summary]
        words = "\n".join([*names, text.decode("utf-8", "replace")])
        return frozenset(stem(w.lower()) for w in WORD.findall(words))


PEDIGREE_FILTERS = ("reviewed", "suspect", "include_retired")
"""Filters on a doc's pedigree rather than its fields."""


def truth(value: Any) -> bool | None:
    """A filter's true or false (`true`, `false`, as JSON or as text), or None."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower())


def active_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filters that filter: None and "any" mean no filter."""
    return {k: v for k, v in filters.items() if v is not None and str(v).lower() != "any"}


def field(doc: DocEntry, name: str) -> Any:
    """A doc's value for a filterable field (core fields, or frontmatter metadata)."""
    if name in ("id", "kind", "title", "summary", "verified"):
        return getattr(doc, name)
    if name in ("keywords", "aliases"):
        return list(getattr(doc, name))
    return doc.meta.get(name)


def _matches(value: Any, wanted: Any) -> bool:
    wanted_text = str(wanted).strip().lower()
    if isinstance(value, list):
        return any(_scalar(v) == wanted_text for v in value)
    return value is not None and _scalar(value) == wanted_text


def _scalar(value: Any) -> str:
    return str(value).lower() if not isinstance(value, bool) else ("true" if value else "false")


def find_section(sections: Sequence[SectionEntry], wanted: str) -> SectionEntry | None:
    """Of a doc's (or an attached markdown file's) sections, `##` ones first, then its
    subsections in page order: the first whose title or anchor is `wanted`, in any case
    ("## Title" as written in markdown works too: a `##` section comes before a deeper
    heading of the same title); else the one section whose title or anchor starts with
    `wanted` (a rule code names its section without the rest of the heading), among the
    `##` ones first, then among all."""
    key = wanted.strip().lower()
    for candidate in (key, key.lstrip("#").strip()):
        for section in sections:
            if candidate in (section.title.lower(), section.anchor.lower()):
                return section
    key = key.lstrip("#").strip()
    starting = [
        s
        for s in sections
        if key and (s.title.lower().startswith(key) or s.anchor.lower().startswith(key))
    ]
    for group in ([s for s in starting if s.level <= 2], starting):
        if len(group) == 1:
            return group[0]
    return None


def close_matches(word: str, candidates: Sequence[str], n: int, cutoff: float) -> list[str]:
    """difflib's close matches; imported on the first miss, not at every start."""
    import difflib

    return difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff)
