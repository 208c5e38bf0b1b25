"""`Served`: what every transport serves, whatever stands behind it.

A `Library` (one verified bundle), a `Shelf` (several), a `RemoteLibrary` (a
`handbook serve` elsewhere) all satisfy it, and so will anything else that answers the
tools of `handbook.tools.table` with their signatures. Transports (CLI, HTTP, MCP, RPC) take a
`Served` and call it only through `handbook.tools.dispatch`, so they cannot drift apart.

Each method's parameters are its tool's, in the table's order, with the table's defaults
(`Param.default`); a filtering tool takes the library's fields as `**filters` too. The
signatures are written out because they are the typed Python API;
tests/test_runtime/test_served_signatures.py holds this protocol and every served class
to the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..answers import (
    AskAnswer,
    BriefAnswer,
    CollectAnswer,
    GetAnswer,
    ListAnswer,
    ResourceAnswer,
    SearchAnswer,
    StatusAnswer,
)
from .model import ToolContext

if TYPE_CHECKING:
    from ..bundle.local import Bundle


@runtime_checkable
class Served(Protocol):
    """The tools, status, and what the tool definitions and `/bundle/` routes need."""

    def tool_context(self) -> ToolContext: ...

    def bundles(self) -> Mapping[str, Bundle]:
        """Verified bundles to publish, by library name ({} when there are none here)."""
        ...

    def status(self) -> StatusAnswer: ...

    def list(
        self,
        query: str | None = None,
        limit: int = 20,
        *,
        offset: int = 0,
        lang: str | None = None,
        reviewed: bool | None = None,
        suspect: bool | None = None,
        include_retired: bool | None = None,
        **filters: Any,
    ) -> ListAnswer: ...

    def get(
        self,
        doc_id: str,
        section: str | None = None,
        offset: int = 0,
        revision: str | None = None,
        lang: str | None = None,
    ) -> GetAnswer: ...

    def search(
        self,
        query: str,
        limit: int = 10,
        lang: str | None = None,
        offset: int = 0,
        retriever: str | None = None,
    ) -> SearchAnswer: ...

    def collect(
        self,
        query: str | None = None,
        ids: Sequence[str] | None = None,
        revisions: Mapping[str, str] | None = None,
        limit: int = 10,
        max_bytes: int = 32_000,
        *,
        lang: str | None = None,
        retriever: str | None = None,
        **filters: Any,
    ) -> CollectAnswer: ...

    def ask(
        self,
        question: str,
        limit: int = 3,
        correlation_id: str | None = None,
        retriever: str | None = None,
    ) -> AskAnswer: ...

    def brief(
        self,
        task: str,
        refs: Sequence[str] | None = None,
        topics: Sequence[str] | None = None,
        limit: int = 8,
        retriever: str | None = None,
    ) -> BriefAnswer: ...

    def resource(
        self,
        doc_id: str,
        path: str,
        revision: str | None = None,
        section: str | None = None,
        offset: int | None = None,
    ) -> ResourceAnswer: ...
