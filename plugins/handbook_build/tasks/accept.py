"""Accepting what an agent wrote back (`handbook inbox accept`), apart from the command
line: a contradiction or corroboration becomes a review of the revision the agent read
(signed and kept by the command, as `handbook review` does); a proposal becomes a
change to the docs tree (a section replaced, a body replaced, or a new doc), checked
and undone when the check finds an error in it.

A record that no longer fits the library raises `AcceptError`, before anything is
written."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from handbook.bundle.catalog import DocEntry
from handbook.inbox.store import Stored
from handbook.pedigree.records import Review

from .. import pipeline
from ..config.settings import Config
from ..errors import AcceptError, PublishError
from ..safe_paths import checked_from, remove_file, write_file

VERDICT_OF = {"contradiction": "contradict", "corroboration": "corroborate"}
"""The record kinds accepted as reviews, and the verdict each becomes."""

Entries = Mapping[str, Sequence[tuple[str, DocEntry]]]
"""Doc id -> (path, catalog entry), one per language, as the build would make them."""


def review_of(config: Config, record: Stored, entries: Entries, keyid: str, now: int) -> Review:
    """The accepted judgement as an unsigned review, by the reviewer `keyid`, of the
    revision the agent read; its basis says who reported it, from which record."""
    payload = record.payload
    if not entries.get(record.doc):
        raise AcceptError(f"the library no longer has {record.doc}; reject the record")
    by = record.principal.partition(":")[2]
    basis = f"{payload['basis']} (reported by {by}, inbox record {record.id[:12]})"
    return Review(
        "",
        config.library,
        record.doc,
        str(payload.get("revision", "")),
        VERDICT_OF[record.kind],  # type: ignore[arg-type]
        basis[:2000],
        keyid,
        now,
        payload.get("section"),
        None,
        tuple(payload.get("evidence", ())),
    )


class Applied(NamedTuple):
    path: Path
    """The file the proposal changed or created."""
    refused: str
    """Why the change was undone, "" when it was kept: the errors the check found in
    the file, or that a new file's id is not the record's doc."""


def apply_proposal(
    config: Config,
    record: Stored,
    entries: Entries,
    doc_path: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> Applied:
    """Write the proposal into the docs tree; checked (`progress` told as it goes), and
    undone if the check finds an error in the file it changed. Both writes go through
    `safe_paths.write_file`: no link on the way from the project folder is followed, nor
    one named like a temporary file."""
    target, before, after = _planned(config, record, entries, doc_path)
    below = checked_from(config.docs_dir, config.config_path.parent)
    write_file(target, after, below, PublishError, before=before)
    result = pipeline.check(config, progress)
    rel_path = target.relative_to(config.docs_dir).as_posix()
    errors = [f for f in result.findings if f.path == rel_path and f.severity.name == "ERROR"]
    ids = {doc.id for doc in result.docs if doc.path == rel_path}
    if not errors and (before is not None or record.doc in ids):
        return Applied(target, "")
    if before is None:
        remove_file(target, after, below, PublishError)
    else:
        write_file(target, before, below, PublishError, before=after)
    return Applied(
        target, "; ".join(str(f) for f in errors[:5]) or f"the file's id is not {record.doc}"
    )


def _planned(
    config: Config, record: Stored, entries: Entries, doc_path: str | None
) -> tuple[Path, bytes | None, bytes]:
    """(the file, its bytes now or None for a new doc, its bytes with the proposal)."""
    payload = record.payload
    markdown = str(payload["markdown"])
    found = entries.get(record.doc)
    if not found:
        rel = doc_path or record.doc.replace(".", "/") + ".md"
        target = Path(os.path.abspath(config.docs_dir / rel))
        if config.docs_dir not in target.parents or os.path.lexists(target):
            raise AcceptError(f"{rel} is outside the docs folder or exists; pass another --path")
        return target, None, (markdown if markdown.endswith("\n") else markdown + "\n").encode()
    path, entry = found[0]
    if payload.get("revision") != entry.revision:
        raise AcceptError(
            f"{record.doc} changed since the proposal was written (revision "
            f"{entry.revision[:12]}, the proposal read {str(payload.get('revision'))[:12]}): "
            "reject it, or ask for a new one"
        )
    target = config.docs_dir / path
    before = target.read_bytes()
    text = before.decode("utf-8").replace("\r\n", "\n")
    return target, before, _with_section(text, payload.get("section"), markdown, entry).encode()


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _with_section(text: str, section: Any, markdown: str, entry: DocEntry) -> str:
    """`text` with the body (after the frontmatter), or one `## ` section's text,
    replaced by `markdown`."""
    lines = text.split("\n")
    start = 0
    if lines and lines[0].strip() == "---":
        start = next((n + 1 for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), 0)
    new = markdown.rstrip("\n").split("\n")
    if not section:
        return "\n".join([*lines[:start], *new, ""])
    title = next((s.title for s in entry.sections if s.anchor == section), None)
    fence = ""
    for n in range(start, len(lines)):
        stripped = lines[n].lstrip()
        if stripped.startswith(("```", "~~~")):
            fence = "" if fence and stripped.startswith(fence) else fence or stripped[:3]
            continue
        match = None if fence else _HEADING.match(lines[n])
        if match and len(match[1]) == 2 and match[2] == title:
            end = next(
                (
                    m
                    for m in range(n + 1, len(lines))
                    if (h := _HEADING.match(lines[m])) and len(h[1]) <= 2
                ),
                len(lines),
            )
            body = new[1:] if new and _HEADING.match(new[0]) else new
            return "\n".join([*lines[: n + 1], "", *body, "", *lines[end:]]).rstrip("\n") + "\n"
    raise AcceptError(f"{entry.id} has no section {section!r} any more; reject the record")
