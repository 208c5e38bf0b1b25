"""`Shelf`: several libraries, from several owners, answering as one — without silent
precedence.

Every item carries its qualified ref ``<library>:<id>``. An unqualified id works while
exactly one library owns it; an id owned by several is an ambiguity the caller resolves:
`get` answers with the qualified choices, `collect` reports ``ambiguous_identity``, and
an unfiltered `list` returns each qualified item and lists the id under `collisions`.
Handlers never raise, like the single library's.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .collect import (
    DEFAULT_ASK_SOURCES,
    DEFAULT_COLLECT_BYTES,
    DEFAULT_COLLECT_LIMIT,
    ask,
    collect,
    resolve,
)
from .library import DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, Library, _never_raise, bounded_list


class Shelf:
    """The same calls as `Library`, over several libraries with distinct names."""

    def __init__(self, libraries: Iterable[Library]) -> None:
        self.libraries = builtins.list(libraries)
        names = Counter(lib.name for lib in self.libraries)
        twice = sorted(name for name, count in names.items() if count > 1)
        if twice:
            raise ValueError(
                f"two libraries are named {', '.join(twice)}; a shelf needs distinct names to qualify refs"
            )
        self.max_response_chars = min(
            (lib.max_response_chars for lib in self.libraries), default=40_000
        )

    def _bounded_list(
        self,
        items: Sequence[dict[str, Any]],
        limit: int,
        key: str,
        hint: str,
        total: int | None = None,
    ) -> dict[str, Any]:
        return bounded_list(items, limit, key, hint, self.max_response_chars, total)

    @_never_raise
    def status(self) -> dict[str, Any]:
        return {"libraries": [lib.status() for lib in self.libraries]}

    @_never_raise
    def list(
        self, query: str | None = None, limit: int = DEFAULT_LIST_LIMIT, **filters: Any
    ) -> dict[str, Any]:
        answers = [(lib, lib.list(query=query, limit=100, **filters)) for lib in self.libraries]
        for _, answer in answers:
            if "error" in answer:
                return {"count": 0, "docs": [], "error": answer["error"]}
        docs = [
            {"ref": f"{lib.name}:{d['id']}", "library": lib.name, **d}
            for lib, answer in answers
            for d in answer["docs"]
        ]
        if query is None or not str(query).strip():
            docs.sort(key=lambda d: d["ref"])
        owners = Counter(d["id"] for d in docs)
        out = self._bounded_list(
            docs,
            limit
            if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
            else DEFAULT_LIST_LIMIT,
            "docs",
            "",
            total=sum(a["count"] for _, a in answers),
        )
        out["collisions"] = sorted(i for i, n in owners.items() if n > 1)
        hints = [a["hint"] for _, a in answers if a.get("hint") and not a["docs"]]
        if not docs and hints:
            out["hint"] = hints[0]
        return out

    @_never_raise
    def get(
        self, doc_id: str, section: str | None = None, offset: int = 0, revision: str | None = None
    ) -> dict[str, Any]:
        found = resolve(self.libraries, doc_id)
        if found.library is None or found.doc is None:
            out: dict[str, Any] = {
                "found": False,
                "code": found.reason,
                "error": f"{found.reason.replace('_', ' ')}: {found.detail}",
            }
            if found.choices:
                out["choices"] = found.choices
            return out
        answer = found.library.get(found.doc.id, section=section, offset=offset, revision=revision)
        return {
            "ref": f"{found.library.name}:{found.doc.id}",
            "library": found.library.name,
            **answer,
        }

    @_never_raise
    def search(self, query: str, limit: int = DEFAULT_SEARCH_LIMIT) -> dict[str, Any]:
        answers = [(lib, lib.search(query, limit=limit)) for lib in self.libraries]
        for _, answer in answers:
            if "error" in answer:
                return {"count": 0, "hits": [], "error": answer["error"]}
        hits = [
            {"ref": f"{lib.name}:{h['id']}", "library": lib.name, **h}
            for lib, answer in answers
            for h in answer["hits"]
        ]
        hits.sort(key=lambda h: (-h["score"], h["ref"], h.get("anchor") or ""))
        return self._bounded_list(
            hits, limit, "hits", "", total=sum(a["count"] for _, a in answers)
        )

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
        return collect(
            self.libraries,
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
        return ask(
            self.libraries,
            question,
            limit=limit,
            correlation_id=correlation_id,
            max_chars=self.max_response_chars,
        )
