"""`handbook adopt`: pin what adoption derives into the pages' frontmatter.

A derived id changes when its file moves; pinned, it stays. Pinning inserts the derived
`id`, `title`, `kind` and `summary` a page lacks — into its frontmatter before the closing
`---`, or as a new frontmatter at the top — and changes no other byte (line endings and
a byte-order mark are kept). It is planned in full first and shown as a diff; files are
written only when asked, each through a new file and a rename, and only if unchanged
since it was read. A file that does not parse is never touched, and a planned text that
would not read back with the same values is not written. Pinning twice changes nothing:
a pinned field is no longer derived.

Skills keep the frontmatter the Agent Skills specification defines (other tools refuse
fields it does not name); their derived fields come from `name` and `description`, which
are stable already.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from .. import pipeline
from ..checks.skills import claims_spec
from ..config.settings import Config
from ..errors import FrontmatterError, PublishError
from ..read.frontmatter import parse as parse_frontmatter
from ..safe_paths import checked_from, write_file

PINNED = ("id", "title", "kind", "summary")
"""The fields adoption derives, in the order they are written."""

_OPEN = re.compile(r"---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Change:
    path: str
    """Relative to the docs folder."""
    before: bytes
    after: bytes
    fields: tuple[str, ...]

    def diff(self) -> str:
        old = self.before.decode("utf-8").splitlines(keepends=True)
        new = self.after.decode("utf-8").splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, f"a/{self.path}", f"b/{self.path}", n=1)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class Plan:
    changes: list[Change]
    skipped: list[tuple[str, str]]
    """(path, why it is left alone)."""
    skills: int
    """Skills left as the specification has them."""


def plan(config: Config, progress: Callable[[int, int], None] | None = None) -> Plan:
    """Every page's derived fields as a planned change; nothing is written."""
    result = pipeline.check(config, progress)
    parsed = {doc.path for doc in result.docs}
    why: dict[str, str] = {}
    for f in result.findings:  # sorted: the first finding about a file says why it failed
        if f.path not in parsed and f.path.endswith(".md"):
            why.setdefault(f.path, f"{f.code} {f.message}")
    skipped = sorted(why.items())
    changes, skills = [], 0
    for doc in result.docs:
        if claims_spec(doc, config):
            skills += 1
            continue
        missing = tuple(name for name in PINNED if name not in doc.fields and name in doc.meta)
        if not missing:
            continue
        before = (config.docs_dir / doc.path).read_bytes()
        values = {name: doc.meta[name] for name in missing}
        after = pinned(before, values)
        if after is None:
            skipped.append(
                (doc.path, "its frontmatter would not read back the same; pin it by hand")
            )
        else:
            changes.append(Change(doc.path, before, after, missing))
    return Plan(changes, skipped, skills)


def write(config: Config, changes: list[Change]) -> None:
    """Each change over its file, if the file still holds what was planned from; through
    no link from the project folder down (`safe_paths.write_file`)."""
    below = checked_from(config.docs_dir, config.config_path.parent)
    for change in changes:
        path = config.docs_dir / change.path
        write_file(path, change.after, below, PublishError, before=change.before)


def pinned(data: bytes, values: dict[str, Any]) -> bytes | None:
    """`data` with `values` added to its frontmatter (made when there is none), or None
    when the result would not read back with exactly these values."""
    text = data.decode("utf-8")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text.removeprefix(bom)
    newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
    block = "".join(
        yaml.safe_dump({k: v}, allow_unicode=True, width=10_000, sort_keys=False)
        for k, v in values.items()
    ).replace("\n", newline)
    opening = _OPEN.match(text)
    close = _CLOSE.search(text, opening.end()) if opening else None
    if opening and close:
        new = text[: close.start()] + block + text[close.start() :]
    else:
        new = f"---{newline}{block}---{newline}{text}"
    normalised = new.replace("\r\n", "\n")
    try:
        read = parse_frontmatter("", normalised).data
    except FrontmatterError:
        return None
    if any(read.get(k) != v for k, v in values.items()):
        return None
    return (bom + new).encode("utf-8")
