"""The `audiences` setting: which audiences a library has, which reads which, and which
docs a reader of an audience may read.

A doc names its audience in frontmatter (`audience: staff`), else the library's default;
checking those names and the links between audiences is `handbook_build.checks.audiences`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AUDIENCE = re.compile(r"^[a-z][a-z0-9_-]*(:[a-z0-9][a-z0-9_.-]*)?$")
"""`public`, `staff`, `customer:acme`: a word, optionally qualified."""
FIELD = "audience"


@dataclass(frozen=True)
class AudienceSettings:
    """The `audiences` option."""

    includes: Mapping[str, tuple[str, ...]]
    """Audience -> the audiences whose docs its readers also read (directly)."""
    default: str
    """The audience of a doc that names none; its bundle is at `bundle_dir`."""
    site: str
    """The audience the site for people is built for."""
    bundles_dir: Path

    def reads(self, audience: str) -> frozenset[str]:
        """Every audience whose docs a reader of `audience` may read (itself included)."""
        seen: set[str] = set()
        todo = [audience]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.includes.get(name, ()))
        return frozenset(seen)

    def readers(self, audience: str) -> frozenset[str]:
        """Every audience whose readers may read docs of `audience`."""
        return frozenset(a for a in self.includes if audience in self.reads(a))

    def narrower(self, source: str, target: str) -> bool:
        """Whether some reader of `source` may not read `target` (a link would leak)."""
        return not self.readers(source) <= self.readers(target)

    def folder(self, audience: str) -> Path:
        """Where the bundle of an audience other than the default goes."""
        return self.bundles_dir / audience.replace(":", "-")


def audience_of(meta: Mapping[str, Any], settings: AudienceSettings) -> str:
    value = meta.get(FIELD)
    return value if isinstance(value, str) else settings.default


def visible(docs: Iterable[Any], audience: str, settings: AudienceSettings) -> list[Any]:
    """The docs a reader of `audience` may read (by each doc's `meta`)."""
    allowed = settings.reads(audience)
    return [doc for doc in docs if audience_of(doc.meta, settings) in allowed]
