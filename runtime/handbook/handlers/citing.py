"""Which sources `ask` and `collect` may cite: a source allow-list set by the operator.

A deployment answering operators' questions may want answers to come from procedures and
reference docs only, never from drafts, notes or a library shelved beside them for
browsing. `AllowedSources(kinds=..., libraries=...)` names what may be cited (None: anything);
`list`, `search` and `get` still show everything the audience may read, while `ask`
quotes only allowed passages and `collect` gathers only allowed docs (an explicit id of
another source is an omission, `not_allowed_source`). `status` reports the list.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..bundle.catalog import DocEntry
    from .snapshot import Snapshot


@dataclass(frozen=True)
class AllowedSources:
    kinds: frozenset[str] | None = None
    """Doc kinds that may be cited; None for any."""
    libraries: frozenset[str] | None = None
    """Libraries (of a shelf) that may be cited; None for any."""
    _positions: weakref.WeakKeyDictionary[Snapshot, frozenset[int]] = field(
        default_factory=weakref.WeakKeyDictionary, compare=False, repr=False
    )

    @classmethod
    def of(
        cls, kinds: Iterable[str] | None = None, libraries: Iterable[str] | None = None
    ) -> AllowedSources | None:
        """The allow-list, or None when it allows everything (nothing given). Each name
        may be a comma-separated list, as on a command line."""
        kinds, libraries = _names(kinds), _names(libraries)
        return None if kinds is None and libraries is None else cls(kinds, libraries)

    def admits(self, snap: Snapshot, doc: DocEntry) -> bool:
        if self.libraries is not None and snap.name not in self.libraries:
            return False
        return self.kinds is None or doc.kind in self.kinds

    def positions(self, snap: Snapshot) -> Collection[int] | None:
        """The catalog positions of the docs of `snap` that may be cited (computed once
        per snapshot); None when all may."""
        if self.libraries is not None and snap.name not in self.libraries:
            return frozenset()
        if self.kinds is None:
            return None
        found = self._positions.get(snap)
        if found is None:
            found = frozenset(n for n, doc in enumerate(snap.docs) if doc.kind in self.kinds)
            self._positions[snap] = found
        return found

    def describe(self) -> dict[str, list[str]]:
        """The allow-list as `status` reports it."""
        out: dict[str, list[str]] = {}
        if self.kinds is not None:
            out["kinds"] = sorted(self.kinds)
        if self.libraries is not None:
            out["libraries"] = sorted(self.libraries)
        return out


def _names(values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    items = [values] if isinstance(values, str) else values
    names = frozenset(n.strip() for item in items for n in item.split(",") if n.strip())
    return names or None
