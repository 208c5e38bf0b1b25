"""`Library`: the agent-facing handlers over one verified bundle.

Every handler returns a JSON-serializable dict and never raises: an agent acts on
``found: false`` and ``error`` entries, not on tracebacks. Every response is bounded by
the operator's `max_response_chars` (hosts cap tool output; the cap must be the
operator's, not the model's) and says how large it is, whether anything was cut and
how to get the rest.

The bundle is verified when opened (signature, every listed file present as a plain
file, nothing unlisted); each file's size and hash are checked before its first use.
`reload` swaps in a newer bundle only once it verifies.
"""

from __future__ import annotations

import base64
import builtins
import inspect
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property, wraps
from typing import Any, TypeVar

from .bundle import Bundle, open_bundle
from .catalog import DocEntry
from .collect import DEFAULT_ASK_SOURCES, DEFAULT_COLLECT_BYTES, DEFAULT_COLLECT_LIMIT, ask, collect
from .errors import BundleError, LibraryMismatchError
from .layout import SEARCH, content_path
from .manifest import utc_time
from .query import QueryError, parse
from .search import Hit, SearchIndex
from .signing import PublicKey
from .stemmer import stem

DEFAULT_MAX_RESPONSE_CHARS = 40_000
"""About 10k tokens: a third of what one popular host accepts from a tool."""
DEFAULT_LIST_LIMIT = 20
DEFAULT_SEARCH_LIMIT = 10
MAX_LIMIT = 100
MAX_AVAILABLE_IDS = 50
EXCERPT_CHARS = 240

F = TypeVar("F", bound=Callable[..., dict[str, Any]])
_COMPACT = re.compile(r"[\W_]+")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"[0-9]{1,9}")


def _never_raise(handler: F) -> F:
    """Whatever the arguments, a dict comes back, and it says how large it is."""

    signature = inspect.signature(handler)

    @wraps(handler)
    def safe(*args: Any, **kwargs: Any) -> dict[str, Any]:  # `self` too may be a wrong keyword
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            out: dict[str, Any] = {
                "error": {"code": "bad_arguments", "message": _clip(f"{handler.__name__}(): {exc}")}
            }
        else:
            try:
                out = handler(*args, **kwargs)
            except Exception as exc:  # the contract: agents get a structured answer, always
                out = {
                    "error": {
                        "code": "internal_error",
                        "message": _clip(f"{type(exc).__name__}: {exc}"),
                    }
                }
        out.setdefault("truncated", False)
        return _with_size(out)

    return safe  # type: ignore[return-value]


def _clip(text: str, limit: int = 200) -> str:
    """User input echoed in a message: never long enough to blow the response budget."""
    return text if len(text) <= limit else text[:limit] + "…"


def _json_len(value: Any) -> int:
    """How many characters `value` takes as JSON (non-ASCII counted as one character)."""
    return len(json.dumps(value, ensure_ascii=False))


def _compact(text: str) -> str:
    """`AC-200`, `ac 200` and `AC200` all become `ac200`."""
    return _COMPACT.sub("", text.lower())


class _State:
    """Everything one verified bundle answers from; replaced whole on reload."""

    def __init__(self, bundle: Bundle, search: SearchIndex, loaded_at: str) -> None:
        self.bundle, self.search, self.loaded_at = bundle, search, loaded_at

    @property
    def catalog_docs(self) -> Sequence[DocEntry]:
        return self.bundle.catalog.docs

    @cached_property
    def by_id(self) -> dict[str, int]:
        """id -> catalog position of its doc in the default language (or, for an id that
        has no doc in it, in the first language by tag)."""
        default = self.bundle.catalog.library.default_lang or ""
        out: dict[str, int] = {}
        for n, doc in enumerate(self.catalog_docs):
            if doc.id not in out or doc_lang(doc, default) == default:
                out[doc.id] = n
        return out

    @cached_property
    def languages(self) -> dict[str, builtins.list[int]]:
        """language -> catalog positions of its docs (a doc without `lang` is in the
        library's default language, "" when there is none)."""
        default = self.bundle.catalog.library.default_lang or ""
        out: dict[str, builtins.list[int]] = {}
        for n, doc in enumerate(self.catalog_docs):
            out.setdefault(doc_lang(doc, default), []).append(n)
        return out

    @cached_property
    def identities(self) -> dict[str, builtins.list[int]]:
        """Compact id, title, keyword, alias or metadata value -> the docs that have it."""
        out: dict[str, builtins.list[int]] = {}
        for n, doc in enumerate(self.catalog_docs):
            for value in _identities(doc):
                out.setdefault(value, []).append(n)
        return out


class Library:
    """One verified knowledge bundle and the handlers agents call on it."""

    def __init__(
        self, state: _State, path: str, opener: Callable[[], Bundle], max_response_chars: int
    ) -> None:
        self._state = state
        self._path = path
        self._opener = opener
        self.max_response_chars = max_response_chars
        self.last_reload_error: str | None = None
        self._reload_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        trusted_keys: Iterable[str | PublicKey] = (),
        *,
        allow_unsigned: bool = False,
        threshold: int = 1,
        max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
        expect_library: str | None = None,
        allow_rollback: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
    ) -> Library:
        """Verify and load the bundle at `path` (a folder, or an http(s) URL of a published
        bundle folder); raises a `BundleError` subclass naming the cause when it is
        refused. Keys also come from $HANDBOOK_TRUSTED_KEYS.

        For a URL (see `handbook.remote`): `expect_library` pins the library name the
        signature must cover, `allow_rollback` accepts a version below the highest already
        accepted, `cache_dir` and `state_dir` place the download cache and the version
        high-water file, and `timeout` bounds each whole download (seconds)."""
        keys = list(trusted_keys)

        def opener(hash_all: bool = True) -> Bundle:
            location: str | os.PathLike[str] = path
            if isinstance(path, str) and path.startswith(("http://", "https://")):
                from . import remote  # urllib is not needed, nor imported, for local bundles

                location = remote.fetch(
                    path,
                    keys,
                    allow_unsigned=allow_unsigned,
                    threshold=threshold,
                    expect_library=expect_library,
                    allow_rollback=allow_rollback,
                    cache_dir=cache_dir,
                    state_dir=state_dir,
                    timeout=timeout if timeout is not None else remote.DEFAULT_TIMEOUT,
                )
                hash_all = False  # fetch has just hashed every byte
            bundle = open_bundle(
                location,
                keys,
                allow_unsigned=allow_unsigned,
                threshold=threshold,
                hash_all=hash_all,
            )
            if expect_library is not None and bundle.manifest.signed.library != expect_library:
                raise LibraryMismatchError(
                    f"{path}: signed for library {bundle.manifest.signed.library!r}, not {expect_library!r}"
                )
            return bundle

        return cls(
            _load(opener(hash_all=False)),
            os.fspath(path),
            opener,
            max(1000, int(max_response_chars)),
        )

    @property
    def name(self) -> str:
        """The library's name, as signed."""
        return self._state.bundle.manifest.signed.library

    @property
    def version(self) -> str:
        return self._state.bundle.manifest.signed.version

    @property
    def search_index(self) -> SearchIndex:
        return self._state.search

    def doc(self, doc_id: str) -> DocEntry | None:
        """The catalog entry of `doc_id`, or None."""
        state = self._state
        index = self._index_of(state).get(doc_id)
        return None if index is None else state.catalog_docs[index]

    def suggest(self, doc_id: str) -> builtins.list[str]:
        """Ids close to `doc_id` (similarity, substrings, aliases)."""
        return builtins.list(self._unknown_id(self._state, doc_id)["suggestions"])

    def filter_problem(self, name: str, value: Any) -> str | None:
        """Why `name=value` can match no doc of this library (an unknown field or value), or None."""
        return _state_filter_problem(self._state, name, value)

    def matches(self, doc: DocEntry, filters: Mapping[str, Any]) -> bool:
        """Whether `doc` passes every filter, as `list` applies them."""
        return _state_matches(self._state, doc, filters)

    def passage_terms(self, doc_id: str, anchor: str | None) -> frozenset[str]:
        """The stemmed words of one section (or of a doc's overview when `anchor` is
        empty), as `ask` compares them with a question."""
        doc = self.doc(doc_id)
        if doc is None:
            return frozenset()
        content = self._state.bundle.read(doc.content)
        section = next((s for s in doc.sections if s.anchor == anchor), None) if anchor else None
        if section is not None:  # what the section's entry indexes: its text, and the doc's title
            text = (
                doc.title + "\n" + content[section.start : section.end].decode("utf-8", "replace")
            )
        else:  # the doc's own entry: title, keywords, aliases, summary and overview
            overview = content[: doc.sections[0].start] if doc.sections else content
            text = "\n".join(
                [
                    doc.title,
                    *doc.keywords,
                    *doc.aliases,
                    doc.summary,
                    overview.decode("utf-8", "replace"),
                ]
            )
        return frozenset(stem(w.lower()) for w in _WORD.findall(text))

    @property
    def bundle(self) -> Bundle:
        """The verified bundle being served; a reload replaces it. Transports read its
        files (catalog, tools.json, content) from here, never from the disk."""
        return self._state.bundle

    # -- lifecycle -------------------------------------------------------------------------

    def reload(self) -> dict[str, Any]:
        """Swap to the bundle now at the same path if it verifies; otherwise keep serving
        the current one and say why. Unlike the first open, a reload hashes every file
        before it swaps: a server that is already answering can afford it, and a bad
        file is then refused up front instead of failing one request later."""
        with self._reload_lock:
            try:
                state = _load(self._opener())
            except Exception as exc:  # whatever is wrong with the new one, the old one serves
                self.last_reload_error = (
                    f"{type(exc).__name__}: {exc}" if not isinstance(exc, BundleError) else str(exc)
                )
                return {"reloaded": False, "error": str(exc), **self._identity()}
            changed = state.bundle.manifest != self._state.bundle.manifest
            self._state, self.last_reload_error = (
                state,
                None,
            )  # one assignment: every map travels with its bundle
            return {"reloaded": True, "changed": changed, **self._identity()}

    def _identity(self) -> dict[str, Any]:
        signed = self._state.bundle.manifest.signed
        return {"library": signed.library, "version": signed.version}

    @_never_raise
    def status(self) -> dict[str, Any]:
        state = self._state
        signed = state.bundle.manifest.signed
        return {
            "library": signed.library,
            "version": signed.version,
            "built_at": signed.built_at,
            "docs": signed.docs,
            "signature": state.bundle.signature_state,
            "signed_by": list(state.bundle.signed_by),
            "loaded_at": state.loaded_at,
            "path": self._path,
            "last_reload_error": self.last_reload_error,
            "languages": self._language_counts(state),
        }

    def _language_counts(self, state: _State) -> dict[str, dict[str, int]]:
        """Per language, kept apart: docs in the catalog (the sources), docs the search
        file indexes (counted from it, not assumed), and docs whose authors marked them
        verified."""
        indexed_docs = set(state.search.entry_doc)
        return {
            lang: {
                "documents": len(positions),
                "indexed": sum(1 for n in positions if n in indexed_docs),
                "verified": sum(
                    1 for n in positions if state.catalog_docs[n].verified == "verified"
                ),
            }
            for lang, positions in sorted(state.languages.items())
        }

    # -- list ---------------------------------------------------------------------------------

    @_never_raise
    def list(
        self, query: str | None = None, limit: int = DEFAULT_LIST_LIMIT, **filters: Any
    ) -> dict[str, Any]:
        """Docs matching every filter (a frontmatter field, case-insensitive; list fields
        by membership; "any" for no filter), ranked by `query` when given."""
        state = self._state
        checked = _limit(limit, DEFAULT_LIST_LIMIT)
        if isinstance(checked, dict):
            return {"count": 0, "docs": [], **checked}
        docs = state.catalog_docs
        library = state.bundle.catalog.library
        active = {k: v for k, v in filters.items() if v is not None and str(v).lower() != "any"}
        for name, value in active.items():
            problem = _state_filter_problem(state, name, value)
            if problem:
                return {"count": 0, "docs": [], "returned": 0, "hint": problem}
        selected = [n for n, doc in enumerate(docs) if _state_matches(state, doc, active)]
        if query is not None and str(query).strip():
            try:
                ranked = self._rank_docs(state, str(query), set(selected))
            except QueryError as exc:
                return {"count": 0, "docs": [], "error": exc.to_dict()}
            selected = ranked
        entries = [self._summary(docs[n], library.list_fields) for n in selected[:checked]]
        hint = _list_hint(len(selected), checked, bool(active), query)
        return self._bounded_list(entries, checked, "docs", hint, total=len(selected))

    def _rank_docs(self, state: _State, query: str, allowed: set[int]) -> builtins.list[int]:
        """Docs by their best entry's search score, with an exact id, alias, keyword or
        model-number match (ignoring case, spaces and punctuation) ranked first."""
        best: dict[int, float] = {}
        try:
            scores, _ = state.search.scores(parse(query))
        except QueryError:
            if not _compact(query):
                raise
            scores = {}
        entry_doc = state.search.entry_doc
        for entry, score in scores.items():
            doc = entry_doc[entry]
            if doc in allowed and score > best.get(doc, 0.0):
                best[doc] = score
        for n in state.identities.get(_compact(query), ()):
            if n in allowed:
                best[n] = best.get(n, 0.0) + 1_000_000
        return sorted(best, key=lambda n: (-best[n], state.catalog_docs[n].id))

    @staticmethod
    def _summary(doc: DocEntry, list_fields: Sequence[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": doc.id,
            "kind": doc.kind,
            "title": doc.title,
            "summary": doc.summary,
            "verified": doc.verified,
            "chars": doc.chars,
        }
        for name in list_fields:
            value = _field(doc, name)
            if value is not None:
                entry[name] = value
        entry["sections"] = [
            {"title": s.title, "anchor": s.anchor, "chars": s.chars} for s in doc.sections
        ]
        return entry

    # -- get ----------------------------------------------------------------------------------

    @_never_raise
    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> dict[str, Any]:
        """One doc as markdown with its metadata and sections, or one section of it.
        Content beyond the response budget is cut; `next_offset` fetches the rest. With
        `revision`, only that exact revision is served: a doc that changed since is
        refused (`unavailable_revision`), never replaced by its new bytes. With `lang`,
        the doc in that language; when there is none, the library's default language is
        served and the answer says so (`lang`, `requested_lang`, `fallback`)."""
        state = self._state
        if not isinstance(doc_id, str) or not doc_id.strip():
            return {"found": False, "error": "doc_id must be a doc id string, as listed by list()"}
        wanted = doc_id.strip()
        if wanted.startswith(f"{self.name}:"):
            wanted = wanted[len(self.name) + 1 :]  # a qualified ref of this library
        index = self._index_of(state).get(wanted)
        if index is None:
            return self._unknown_id(state, doc_id)
        default = state.bundle.catalog.library.default_lang or ""
        fallback = None
        if lang is not None:
            in_lang = next(
                (
                    n
                    for n in state.languages.get(str(lang), [])
                    if state.catalog_docs[n].id == wanted
                ),
                None,
            )
            if in_lang is not None:
                index = in_lang
            else:
                fallback = {
                    "requested_lang": str(lang)[:20],
                    "fallback": True,
                    "hint": f"no {str(lang)[:20]} version of {wanted}; served the {doc_lang(state.catalog_docs[index], default) or 'default'} one",
                }
        doc = state.catalog_docs[index]
        if revision is not None and revision != doc.revision:
            return {
                "found": False,
                "id": doc.id,
                "code": "unavailable_revision",
                "revision": doc.revision,
                "error": f"doc {doc.id} is now at revision {doc.revision}, not {_clip(str(revision), 80)}; the old bytes are not available",
                "hint": "Fetch the current revision without `revision`, or ask the library's owner for the old version's bundle.",
            }
        content = state.bundle.read(doc.content)
        sections = [{"title": s.title, "anchor": s.anchor, "chars": s.chars} for s in doc.sections]
        out: dict[str, Any] = {
            "found": True,
            "id": doc.id,
            "title": doc.title,
            "metadata": {
                "kind": doc.kind,
                "summary": doc.summary,
                "verified": doc.verified,
                "keywords": list(doc.keywords),
                "aliases": list(doc.aliases),
                **doc.meta,
            },
            "revision": doc.revision,
            "url": doc.url,
            "sections": sections,
        }
        language = doc_lang(doc, default)
        if language:
            out["lang"] = language
        if doc.resources:
            out["resources"] = [
                {"path": r.path, "bytes": r.bytes, "media_type": r.media_type}
                for r in doc.resources
            ]
        if fallback:
            out.update(fallback)
        start, end = 0, len(content)
        if section is not None:
            chosen = _find_section(doc, str(section))
            if chosen is None:
                wanted = str(section).strip().lower()
                containing = [s.title for s in doc.sections if wanted and wanted in s.title.lower()]
                titles = [s.title for s in doc.sections] + [s.anchor for s in doc.sections]
                close = list(
                    dict.fromkeys(
                        [*containing, *_close_matches(str(section), titles, n=5, cutoff=0.4)]
                    )
                )[:5]
                return {
                    "found": False,
                    "id": doc.id,
                    "title": doc.title,
                    "error": f"doc {doc.id} has no section {_clip(str(section))!r}",
                    "suggestions": close,
                    "sections": sections,
                }
            out["section"] = {"title": chosen.title, "anchor": chosen.anchor}
            start, end = chosen.start, chosen.end
        text = content[start:end].decode("utf-8")
        return self._bounded_text(out, text, offset, doc, section is None)

    def _bounded_text(
        self, out: dict[str, Any], text: str, offset: Any, doc: DocEntry, whole: bool
    ) -> dict[str, Any]:
        """Put as much of `text` from `offset` into `out` as the budget allows, measured as
        JSON (escapes count), and say how to get the rest."""
        try:
            offset = int(offset)
        except (TypeError, ValueError, OverflowError):
            offset = -1
        if offset < 0:
            return {
                "found": False,
                "id": doc.id,
                "error": "offset must be a whole number, 0 or more (a next_offset from an earlier answer)",
            }
        reserve = 400  # content, offset, truncated, hint, next_offset, response_chars
        while _json_len(out) + reserve > self.max_response_chars and out["sections"]:
            out["sections"] = out["sections"][: len(out["sections"]) // 2]
            out["sections_omitted"] = len(doc.sections) - len(out["sections"])
        budget = max(0, self.max_response_chars - _json_len(out) - reserve)
        rest = text[offset:]
        if whole and offset == 0 and doc.sections and _json_len(rest) > budget:
            rest = doc_text_prefix(text, doc)
            out["hint"] = (
                f"The doc has {len(text):,} characters, more than fit in one answer; here is its overview. Fetch a section by title or anchor."
            )
            out["truncated"] = True
        if _json_len(rest) > budget:
            cut = _fit(rest, budget)
            rest = rest[:cut]
            out["truncated"] = True
            out["next_offset"] = offset + cut
            out["hint"] = (
                f"Cut at {cut:,} of {len(text) - offset:,} characters; call again with offset={offset + cut} for the rest."
            )
        out["content"] = rest
        out["offset"] = offset
        return out

    def _index_of(self, state: _State) -> dict[str, int]:
        return state.by_id

    def languages(self) -> dict[str, builtins.list[int]]:
        """language -> catalog positions of its docs."""
        return self._state.languages

    def _unknown_id(self, state: _State, doc_id: str) -> dict[str, Any]:
        ids = [d.id for d in state.catalog_docs]
        wanted = doc_id.strip().lower()
        close = _close_matches(wanted, ids, n=5, cutoff=0.5)
        compact = _compact(wanted)
        contains = [
            i for i in ids if compact and (compact in _compact(i) or _compact(i) in compact)
        ]
        aliases = [state.catalog_docs[n].id for n in state.identities.get(compact, ())]
        suggestions = list(dict.fromkeys([*aliases, *close, *contains]))[:10]
        return {
            "found": False,
            "error": f"no doc with id {_clip(doc_id)!r}",
            "suggestions": suggestions,
            "available_ids": ids[:MAX_AVAILABLE_IDS],
            "available_ids_truncated": len(ids) > MAX_AVAILABLE_IDS,
            "hint": "Use one of the suggestions, or list() to find the right id.",
        }

    # -- search -------------------------------------------------------------------------------

    @_never_raise
    def search(
        self, query: str, limit: int = DEFAULT_SEARCH_LIMIT, lang: str | None = None
    ) -> dict[str, Any]:
        """Section-level hits for `query` (lunr syntax), best first, with excerpts; with
        `lang`, only in docs of that language."""
        state = self._state
        checked = _limit(limit, DEFAULT_SEARCH_LIMIT)
        if isinstance(checked, dict):
            return {"count": 0, "hits": [], **checked}
        docs = None
        if lang is not None and str(lang).lower() != "any":
            problem = _state_filter_problem(state, "lang", lang)
            if problem:
                return {"count": 0, "hits": [], "returned": 0, "hint": problem}
            docs = set(state.languages[str(lang)])
        try:
            total, hits = state.search.search(parse(query), checked, docs=docs)
        except QueryError as exc:
            return {"count": 0, "hits": [], "error": exc.to_dict()}
        rendered = [self._hit(state, hit) for hit in hits]
        hint = (
            "" if hits else "No section matches. Try other words, fewer words, or list() to browse."
        )
        return self._bounded_list(rendered, checked, "hits", hint, total=total)

    def _hit(self, state: _State, hit: Hit) -> dict[str, Any]:
        index = state.search
        doc = index.entry_doc[hit.entry]
        anchor = index.strings("entry_anchor")[hit.entry]
        return {
            "id": index.strings("doc_id")[doc],
            "title": index.strings("doc_title")[doc],
            "section": index.strings("entry_title")[hit.entry] or None,
            "anchor": anchor or None,
            "score": round(hit.score, 4),
            "excerpt": self._excerpt(state, hit, doc),
        }

    def _excerpt(self, state: _State, hit: Hit, doc: int) -> str:
        index = state.search
        content = state.bundle.read(content_path(index.content_sha(doc)))
        text = content[index.entry_start[hit.entry] : index.entry_end[hit.entry]].decode(
            "utf-8", "replace"
        )
        text = text.split("\n", 1)[1] if text.startswith("#") and "\n" in text else text
        position = 0
        for m in _WORD.finditer(text):
            if stem(m.group().lower()) in hit.terms:
                position = m.start()
                break
        start = max(0, position - EXCERPT_CHARS // 3)
        window = " ".join(text[start : start + EXCERPT_CHARS].split())
        return ("…" if start else "") + window + ("…" if start + EXCERPT_CHARS < len(text) else "")

    # -- resources ---------------------------------------------------------------------------

    @_never_raise
    def resource(self, doc_id: str, path: str, revision: str | None = None) -> dict[str, Any]:
        """A file attached to a folder doc, by its path in the doc's folder, as verified
        bytes: `content` when it is UTF-8 text, else `content_base64`. With `revision`,
        only while the doc is at that revision. The path is only looked up in the doc's
        verified list: nothing is ever read from a path the caller builds, or run."""
        got = (
            self.get(doc_id, revision=revision)
            if isinstance(doc_id, str)
            else {"found": False, "error": "doc_id must be a string"}
        )
        if not got.get("found"):
            return {
                key: got[key]
                for key in ("found", "error", "code", "revision", "suggestions", "hint")
                if key in got
            }
        doc = self.doc(got["id"])
        wanted = str(path).strip().removeprefix("./") if isinstance(path, str) else ""
        match = (
            next((r for r in doc.resources if r.path == wanted), None) if doc is not None else None
        )
        if doc is None or match is None:
            listed = [r.path for r in doc.resources] if doc is not None else []
            return {
                "found": False,
                "id": got["id"],
                "error": f"doc {got['id']} has no attached file {_clip(str(path))!r}",
                "resources": listed[:MAX_AVAILABLE_IDS],
            }
        data = self._state.bundle.read(match.file)
        out: dict[str, Any] = {
            "found": True,
            "id": doc.id,
            "ref": f"{self.name}:{doc.id}",
            "revision": doc.revision,
            "path": match.path,
            "bytes": match.bytes,
            "sha256": match.sha256,
            "media_type": match.media_type,
        }
        try:
            out["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            out["content_base64"] = base64.b64encode(data).decode("ascii")
        if _json_len(out) > self.max_response_chars:
            return {
                "found": False,
                "id": doc.id,
                "path": match.path,
                "bytes": match.bytes,
                "error": f"{match.path} is {match.bytes:,} bytes, more than one answer may hold ({self.max_response_chars:,} characters)",
                "hint": "Read it through the Python API with a larger max_response_chars, or from the bundle file "
                + match.file,
            }
        return out

    # -- collect and ask -------------------------------------------------------------------

    @_never_raise
    def collect(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        revisions: Mapping[str, str] | None = None,
        limit: int = DEFAULT_COLLECT_LIMIT,
        max_bytes: int = DEFAULT_COLLECT_BYTES,
        **filters: Any,
    ) -> dict[str, Any]:
        """Several docs in one call within a byte budget, every omission explained
        (see `handbook.collect`)."""
        return collect(
            [self],
            query=query,
            ids=ids,
            revisions=revisions,
            limit=limit,
            max_bytes=max_bytes,
            max_chars=self.max_response_chars,
            **filters,
        )

    @_never_raise
    def ask(
        self, question: str, limit: int = DEFAULT_ASK_SOURCES, correlation_id: str | None = None
    ) -> dict[str, Any]:
        """A grounded answer quoting the library's passages, or `insufficient` (see
        `handbook.collect.ask`). Never generated text."""
        return ask(
            [self],
            question,
            limit=limit,
            correlation_id=correlation_id,
            max_chars=self.max_response_chars,
        )

    # -- shared -------------------------------------------------------------------------------

    def _bounded_list(
        self,
        items: Sequence[dict[str, Any]],
        limit: int,
        key: str,
        hint: str,
        total: int | None = None,
    ) -> dict[str, Any]:
        return bounded_list(items, limit, key, hint, self.max_response_chars, total)


def bounded_list(
    items: Sequence[dict[str, Any]],
    limit: int,
    key: str,
    hint: str,
    max_chars: int,
    total: int | None = None,
) -> dict[str, Any]:
    """`{count, <key>: the first `limit` items that fit in `max_chars` of JSON, returned,
    truncated, hint}`."""
    count = len(items) if total is None else total
    kept: builtins.list[dict[str, Any]] = []
    out: dict[str, Any] = {"count": count, key: kept}
    used = len(json.dumps(out, ensure_ascii=False)) + len(hint) + 200
    for item in items[:limit]:
        size = len(json.dumps(item, ensure_ascii=False)) + 1
        if used + size > max_chars:
            out["truncated"] = True
            hint = (
                (hint + " " if hint else "")
                + f"Only {len(kept)} of {min(count, limit)} fit in one answer; narrow the query or filters, or lower limit."
            )
            break
        kept.append(item)
        used += size
    else:
        out["truncated"] = False
    out["returned"] = len(kept)
    if hint:
        out["hint"] = hint
    return out


def _fit(text: str, budget: int) -> int:
    """The longest prefix of `text` whose JSON takes at most `budget` characters."""
    n = min(len(text), budget)
    while n > 0 and (size := _json_len(text[:n])) > budget:
        n = min(n - 1, n * budget // size)
    return max(n, 0)


def doc_text_prefix(text: str, doc: DocEntry) -> str:
    """The overview: the content before the first section."""
    if not doc.sections:
        return text
    return text.encode("utf-8")[: doc.sections[0].start].decode("utf-8", "replace")


def _load(bundle: Bundle) -> _State:
    if SEARCH not in bundle.manifest.signed.files:
        raise BundleError(
            f"{SEARCH}: missing from the manifest; rebuild the bundle with this version of Handbook"
        )
    search = SearchIndex(bundle.read(SEARCH))
    return _State(bundle, search, utc_time(time.time()))


def _limit(value: Any, default: int) -> int | dict[str, Any]:
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or not _DIGITS.fullmatch(str(value).strip())
    ):
        return {
            "error": {
                "code": "invalid_limit",
                "message": f"limit must be a whole number from 1 to {MAX_LIMIT}",
            }
        }
    return min(max(int(value), 1), MAX_LIMIT)


def _field(doc: DocEntry, name: str) -> Any:
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


def _filter_problem(name: str, value: Any, filters: Mapping[str, Any]) -> str | None:
    if name not in filters:
        known = ", ".join(sorted(filters))
        return f"No field {_clip(name)!r} to filter on. Known fields: {known}."
    known_values = filters[name].get("values")
    if known_values is not None and str(value).strip().lower() not in {
        v.lower() for v in known_values
    }:
        return f"No doc has {name} = {_clip(str(value))!r}. Known values of {name}: {', '.join(known_values)}."
    return None


def _list_hint(count: int, limit: int, filtered: bool, query: Any) -> str:
    if count == 0:
        return (
            "Nothing matches. "
            + ("Loosen the filters or " if filtered else "")
            + "try other words, or list() without arguments."
        )
    if count > limit:
        return f"{count} docs match; showing {limit}. Narrow with filters or a query, or raise limit (at most {MAX_LIMIT})."
    return "Fetch a doc with get(id), or one section with get(id, section)."


def _state_filter_problem(state: _State, name: str, value: Any) -> str | None:
    """Why `name=value` matches no doc of this state's bundle, or None. `lang` is every
    doc's language, its own or the library's default."""
    if name == "lang":
        if str(value) in state.languages:
            return None
        return f"No docs in language {_clip(str(value))!r}; the languages are {', '.join(sorted(state.languages))}."
    return _filter_problem(name, value, state.bundle.catalog.library.filters)


def _state_matches(state: _State, doc: DocEntry, filters: Mapping[str, Any]) -> bool:
    default = state.bundle.catalog.library.default_lang or ""
    return all(
        doc_lang(doc, default) == str(v) if k == "lang" else _matches(_field(doc, k), v)
        for k, v in filters.items()
    )


def doc_lang(doc: DocEntry, default: str) -> str:
    """A doc's language: its `lang`, else the library's default ("" when neither)."""
    return str(doc.meta.get("lang") or default)


def _identities(doc: DocEntry) -> set[str]:
    values = [doc.id, doc.title, *doc.keywords, *doc.aliases]
    values += [v for v in doc.meta.values() if isinstance(v, str)]
    return {_compact(v) for v in values if v}


def _find_section(doc: DocEntry, wanted: str) -> Any:
    """By title or anchor, in any case; "## Title" as written in markdown works too;
    else the one section whose title or anchor starts with `wanted` (a rule code names
    its section, "HB201", without the rest of the heading)."""
    key = wanted.strip().lower()
    for candidate in (key, key.lstrip("#").strip()):
        for section in doc.sections:
            if candidate in (section.title.lower(), section.anchor.lower()):
                return section
    key = key.lstrip("#").strip()
    starting = [
        s
        for s in doc.sections
        if key and (s.title.lower().startswith(key) or s.anchor.lower().startswith(key))
    ]
    return starting[0] if len(starting) == 1 else None


def _close_matches(
    word: str, candidates: Sequence[str], n: int, cutoff: float
) -> builtins.list[str]:
    """difflib's close matches; imported on the first miss, not at every start."""
    import difflib

    return difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff)


def _with_size(out: dict[str, Any]) -> dict[str, Any]:
    """Every answer says how large it is, in characters of JSON, itself included."""
    out["response_chars"] = 0
    size = _json_len(out)
    while out["response_chars"] != size:  # the number's own digits count too
        out["response_chars"] = size
        size = _json_len(out)
    return out
