"""`SnapshotTools`: the tools, written once for `Library` (one snapshot) and `Shelf`
(one per library).

Each call reads `snapshots()` once and hands them to its handler (`handbook.handlers`),
so a reload mid-call cannot mix versions. A shelf's answers are `qualified`: every item
names its library and its ref ``<library>:<id>``, and equal scores of several libraries
go by ref. `get` and `resource` read one doc, which each class finds its own way
(`_locate`): a library takes the id as given, a shelf resolves it to one library.

Each tool imports its handler when first called: a process that only searches (an
agent's short-lived tool call) does not import the other five.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ..answers import (
    AskAnswer,
    BriefAnswer,
    CollectAnswer,
    GetAnswer,
    ListAnswer,
    ResourceAnswer,
    SearchAnswer,
)
from ..bounds import (
    DEFAULT_ASK_SOURCES,
    DEFAULT_BRIEF_LIMIT,
    DEFAULT_COLLECT_BYTES,
    DEFAULT_COLLECT_LIMIT,
    DEFAULT_LIST_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    never_raise,
)
from ..handlers.citing import AllowedSources
from ..handlers.snapshot import Snapshot


class SnapshotTools(ABC):
    """The tools over `snapshots()`; `get` and `resource` read the doc `_locate` finds."""

    max_response_chars: int
    sources: AllowedSources | None = None
    """What `ask` and `collect` may cite (`handbook.handlers.citing`); anything when None."""
    qualified: bool = False
    """Answer as a shelf: items carry their library and ref (`handbook.libraries.shelf`)."""

    @abstractmethod
    def snapshots(self) -> builtins.list[Snapshot]:
        """The snapshot of each library served, read once per call."""

    @abstractmethod
    def _locate(self, doc_id: str) -> tuple[Snapshot, str] | GetAnswer:
        """The snapshot of the doc `doc_id` names and its id there, or the answer saying
        why there is none (for `get` and `resource`)."""

    @never_raise
    def list(
        self,
        query: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
        *,
        offset: int = 0,
        lang: str | None = None,
        reviewed: bool | None = None,
        suspect: bool | None = None,
        include_retired: bool | None = None,
        **filters: Any,
    ) -> ListAnswer:
        """Docs matching every filter (a frontmatter field, case-insensitive; list fields
        by membership; "any" for no filter), ranked by `query` when given (see
        `handbook.handlers.listing`)."""
        from ..handlers.listing import list_docs

        named = {"reviewed": reviewed, "suspect": suspect, "include_retired": include_retired}
        filters = {**filters, **named, "lang": lang}
        return list_docs(
            self.snapshots(), self.max_response_chars, query, limit, offset, filters, self.qualified
        )

    @never_raise
    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> GetAnswer:
        """One doc as markdown with its metadata and sections, or one section of it (see
        `handbook.handlers.reading`). With `lang`, the doc in that language; when there is
        none, the default language's is served and the answer says so."""
        from ..handlers.reading import get_doc

        located = self._locate(doc_id)
        if not isinstance(located, tuple):
            return located
        snap, local_id = located
        answer = get_doc(snap, self.max_response_chars, local_id, section, offset, revision, lang)
        if self.qualified:
            return {**answer, "ref": f"{snap.name}:{local_id}", "library": snap.name}
        return answer

    @never_raise
    def search(
        self,
        query: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        lang: str | None = None,
        offset: int = 0,
        retriever: str | None = None,
    ) -> SearchAnswer:
        """Section-level hits for `query` (lunr syntax), best first, with excerpts; with
        `lang`, only in docs of that language; `offset` continues a truncated answer."""
        from ..handlers.searching import search_passages

        return search_passages(
            self.snapshots(),
            self.max_response_chars,
            query,
            limit,
            lang,
            offset,
            retriever,
            self.qualified,
        )

    @never_raise
    def collect(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        revisions: Mapping[str, str] | None = None,
        limit: int = DEFAULT_COLLECT_LIMIT,
        max_bytes: int = DEFAULT_COLLECT_BYTES,
        *,
        lang: str | None = None,
        retriever: str | None = None,
        **filters: Any,
    ) -> CollectAnswer:
        """Several docs in one call within a byte budget, every omission explained
        (see `handbook.handlers.collect`)."""
        from ..handlers.collect import collect

        filters = {**filters, "lang": lang} if lang is not None else filters
        return collect(
            self.snapshots(),
            query=query,
            ids=ids,
            revisions=revisions,
            limit=limit,
            max_bytes=max_bytes,
            max_chars=self.max_response_chars,
            retriever=retriever,
            sources=self.sources,
            **filters,
        )

    @never_raise
    def ask(
        self,
        question: str,
        limit: int = DEFAULT_ASK_SOURCES,
        correlation_id: str | None = None,
        retriever: str | None = None,
    ) -> AskAnswer:
        """A grounded answer quoting the library's passages, or `insufficient` (see
        `handbook.handlers.ask`). Never generated text."""
        from ..handlers import ask as asking

        snapshots = self.snapshots()
        return asking.ask(
            snapshots,
            question,
            limit,
            correlation_id,
            self.max_response_chars,
            retriever,
            self.sources,
        )

    @never_raise
    def brief(
        self,
        task: str,
        refs: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        limit: int = DEFAULT_BRIEF_LIMIT,
        retriever: str | None = None,
    ) -> BriefAnswer:
        """What to read before `task`, ranked by relevance and trust (see
        `handbook.handlers.briefing`). Never generated text."""
        from ..handlers import briefing

        return briefing.brief(
            self.snapshots(), task, refs, topics, limit, self.max_response_chars, retriever
        )

    @never_raise
    def resource(
        self,
        doc_id: str,
        path: str,
        revision: str | None = None,
        section: str | None = None,
        offset: int | None = None,
    ) -> ResourceAnswer:
        """A file attached to a folder doc, as verified bytes, or one section or page of
        an attached markdown file's text (see `handbook.handlers.reading`)."""
        from ..handlers.reading import get_resource

        located = self._locate(doc_id)
        if not isinstance(located, tuple):
            return {"found": False, "error": located["error"]}
        snap, local_id = located
        bound = self.max_response_chars
        return get_resource(snap, bound, local_id, path, revision, section, offset)
