"""`Shelf`: several libraries, from several owners, answering as one — without silent
precedence.

Every item carries its qualified ref ``<library>:<id>`` and its library, set by the
runtime after the doc's own fields, so a doc cannot claim another library. An
unqualified id works while exactly one library owns it; an id owned by several is an
ambiguity the caller resolves: `get` answers with the qualified choices, `collect`
reports ``ambiguous_identity``, and `list` lists the id under `collisions`. Results of
several libraries merge by score, then by ref. Each call reads every library's current
snapshot once, so a reload of one library mid-call cannot mix versions. Tools never
raise, like the single library's: they are its own code over several snapshots
(`handbook.libraries.snapshot_tools`); only how an id finds its doc is the shelf's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ..answers import GetAnswer, StatusAnswer
from ..bounds import never_raise, refusal
from ..bundle.local import Bundle
from ..handlers.citing import AllowedSources
from ..handlers.collect import resolve
from ..handlers.snapshot import Snapshot
from ..handlers.statistics import weakest
from ..tools.model import ToolContext
from ..tools.table import context_of
from .library import Library
from .snapshot_tools import SnapshotTools


class Shelf(SnapshotTools):
    """The same tools as `Library`, over several libraries with distinct names."""

    qualified = True

    def __init__(self, libraries: Iterable[Library], sources: AllowedSources | None = None) -> None:
        """`sources` restricts what `ask` and `collect` cite (`handbook.handlers.citing`): kinds,
        and which of these libraries."""
        self.libraries = list(libraries)
        self.sources = sources
        names = Counter(lib.name for lib in self.libraries)
        twice = sorted(name for name, count in names.items() if count > 1)
        if twice:
            raise ValueError(
                f"two libraries are named {', '.join(twice)}; a shelf needs distinct names to qualify refs"
            )
        self.max_response_chars = min(
            (lib.max_response_chars for lib in self.libraries), default=40_000
        )

    def snapshots(self) -> list[Snapshot]:
        return [lib.snapshot for lib in self.libraries]

    def bundles(self) -> dict[str, Bundle]:
        return {lib.name: lib.bundle for lib in self.libraries}

    def tool_context(self) -> ToolContext:
        return context_of([snap.bundle.catalog for snap in self.snapshots()])

    @never_raise
    def status(self) -> StatusAnswer:
        answers = [lib.status() for lib in self.libraries]
        state = weakest(answer.get("statistics_state", "not_reported") for answer in answers)
        out: StatusAnswer = {"libraries": answers, "statistics_state": state}
        if self.sources is not None:
            out["sources"] = self.sources.describe()
        return out

    def _locate(self, doc_id: str) -> tuple[Snapshot, str] | GetAnswer:
        """The library that owns the id, never by precedence (`handbook.handlers.collect`
        resolves it), and the doc's id there; or the answer saying why none does."""
        found = resolve(self.snapshots(), doc_id)
        if found.found is None:
            return _unresolved(found.reason, found.detail, found.choices)
        snap, doc = found.found
        return snap, doc.id


def _unresolved(reason: str, detail: str, choices: Sequence[str]) -> GetAnswer:
    out: GetAnswer = {
        "found": False,
        "error": refusal(reason, f"{reason.replace('_', ' ')}: {detail}"),
    }
    if choices:
        out["choices"] = list(choices)
    return out
