"""`handbook inbox`: people decide what agents wrote back.

Accepting never touches a bundle. A contradiction or corroboration becomes a review
file signed by the deciding reviewer (`handbook review`'s format, in the reviews
folder); a proposal becomes a change to the docs tree (a section replaced, a body
replaced, or a new doc), checked by `handbook check` before it is kept — both go
through a normal pull request and the next build. The proposer never decides its own
record, and every decision is itself an event of the inbox's audit trail.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from handbook.bundle.manifest import utc_time
from handbook.inbox.store import STATES, Store, Stored, StoreError
from handbook.inbox.stores import open_store
from handbook.pedigree.records import Review
from handbook.terminal_text import for_terminal, json_for_terminal

from .. import pipeline
from ..checks.reviews import reviewers_of
from ..config.settings import Config
from ..errors import PublishError
from ..safe_paths import checked_from, remove_file, write_file
from .building import BuildCommand, config_option, progress_bar
from .review import (
    at_option,
    config_with_reviews,
    doc_entries,
    keep,
    key_option,
    reviewer_key,
    signed,
    time_of,
)

VERDICT_OF = {"contradiction": "contradict", "corroboration": "corroborate"}

store_option = click.option(
    "--inbox",
    "store_spec",
    envvar="HANDBOOK_INBOX",
    required=True,
    metavar="STORE",
    help="The inbox: a SQLite file or a postgresql:// URL (or $HANDBOOK_INBOX).",
)
as_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


class DecidingCommand(BuildCommand):
    """`accept` and `reject`: their refusals quote the record (its library, doc, what
    the check found in its text), so they are shown with control characters escaped."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.BadParameter:  # about an option the reviewer typed, not the record
            raise
        except click.UsageError as exc:
            raise click.UsageError(for_terminal(exc.message), exc.ctx) from None
        except click.ClickException as exc:
            raise click.ClickException(for_terminal(exc.message)) from None


@click.group(name="inbox")
def inbox_group() -> None:
    """List, show and decide what agents proposed, contradicted and corroborated."""


def _store(spec: str) -> Store:
    try:
        return open_store(spec)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None


def _shown(record: Stored) -> dict[str, Any]:
    return {
        "id": record.id,
        "kind": record.kind,
        "library": record.library,
        "doc": record.doc,
        "by": record.principal,
        "at": utc_time(record.created_at),
        "state": record.state,
        **({"decided_by": record.decided_by} if record.decided_by else {}),
        **({"decided_at": utc_time(record.decided_at)} if record.decided_at else {}),
        **({"reason": record.reason} if record.reason else {}),
        "record": record.payload,
    }


@inbox_group.command(name="list")
@click.option(
    "--state",
    type=click.Choice([*STATES, "all"]),
    default="open",
    show_default=True,
    help="Which records.",
)
@click.option("--doc", help="Only records about this doc id.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@as_json_option
@store_option
def list_command(state: str, doc: str | None, limit: int, as_json: bool, store_spec: str) -> None:
    """The records, oldest first: id, kind, doc, who, when and the basis."""
    found = _store(store_spec).records(None if state == "all" else state, doc, limit)
    if as_json:
        click.echo(json_for_terminal([_shown(r) for r in found], indent=2))
        return
    for r in found:
        basis = " ".join(str(r.payload.get("basis", "")).split())[:80]
        _say(f"{r.id[:12]}  {r.state:<8} {r.kind:<13} {r.doc}  {r.principal}  {basis}")
    click.echo(f"{len(found)} record(s)", err=True)


@inbox_group.command(name="show")
@click.argument("record_id", metavar="ID")
@as_json_option
@store_option
def show_command(record_id: str, as_json: bool, store_spec: str) -> None:
    """One record whole (an id prefix of 8 characters or more will do)."""
    record = _find(_store(store_spec), record_id)
    shown = _shown(record)
    if as_json:
        click.echo(json_for_terminal(shown, indent=2))
        return
    for key in ("id", "kind", "library", "doc", "by", "at", "state", "decided_by", "reason"):
        if key in shown:
            _say(f"{key + ':':<11} {shown[key]}")
    payload = record.payload
    for key in ("revision", "section", "basis", "evidence"):
        if key in payload:
            _say(f"{key + ':':<11} {payload[key]}")
    if "markdown" in payload:
        _say(f"markdown:\n{payload['markdown']}")


def _say(text: str) -> None:
    """Print `text`, which holds what agents wrote, with its control characters shown as
    escapes (`handbook.terminal_text`): a record never acts on the reviewer's terminal."""
    click.echo(for_terminal(text))


def _find(store: Store, record_id: str) -> Stored:
    record = store.get(record_id)
    if record is None and len(record_id) >= 8:
        matches = [
            r for r in store.records(state=None, limit=100_000) if r.id.startswith(record_id)
        ]
        if len(matches) == 1:
            record = matches[0]
        elif len(matches) > 1:
            raise click.UsageError(f"{record_id} names {len(matches)} records; give more of it")
    if record is None:
        raise click.UsageError(f"the inbox has no record {record_id}")
    return record


@inbox_group.command(name="reject", cls=DecidingCommand)
@click.argument("record_id", metavar="ID")
@click.option("--reason", required=True, help="Why, for the agent and the audit trail.")
@key_option
@config_option
@store_option
def reject_command(
    record_id: str, reason: str, key_file: str | None, config_path: str, store_spec: str
) -> None:
    """Reject an open record, with a reason; a declared reviewer decides (--key)."""
    config = config_with_reviews(config_path)
    _, keyid = reviewer_key(config, key_file)
    store = _store(store_spec)
    record = _find(store, record_id)
    name = _decider(config, keyid, record)
    decided = _decide(store, record, "rejected", name, reason)
    _say(f"rejected {decided.id[:12]} ({decided.kind} of {decided.doc}) by {name}")


@inbox_group.command(name="accept", cls=DecidingCommand)
@click.argument("record_id", metavar="ID")
@click.option("--reason", default="", help="Why, for the audit trail.")
@click.option(
    "--path",
    "doc_path",
    metavar="FILE",
    help="Where a proposed new doc goes, in the docs folder [default: its id, dots as folders].",
)
@key_option
@at_option
@config_option
@store_option
def accept_command(
    record_id: str,
    reason: str,
    doc_path: str | None,
    key_file: str | None,
    at: str | None,
    config_path: str,
    store_spec: str,
) -> None:
    """Accept an open record: a contradiction or corroboration becomes a review file
    signed with --key; a proposal becomes a change in the docs tree. Commit either
    through a pull request: the next build carries it."""
    config = config_with_reviews(config_path)
    private, keyid = reviewer_key(config, key_file)
    store = _store(store_spec)
    record = _find(store, record_id)
    if record.state != "open":
        raise click.UsageError(
            f"{record.id[:12]} was already {record.state} by {record.decided_by}"
        )
    if record.library.partition("@")[0] != config.library:  # library@audience
        raise click.UsageError(
            f"{record.id[:12]} is about library {record.library}, not {config.library}"
        )
    name = _decider(config, keyid, record)
    entries = doc_entries(config)
    if record.kind in VERDICT_OF:
        written = _review_of(config, record, entries, private, keyid, time_of(at), name)
    else:
        written = _apply_proposal(config, record, entries, doc_path)
    decided = _decide(
        store, record, "accepted", name, reason or f"accepted: {os.path.relpath(written)}"
    )
    _say(
        f"accepted {decided.id[:12]} ({decided.kind} of {decided.doc}) -> {os.path.relpath(written)}"
    )
    click.echo("commit it through a pull request; the next build carries it", err=True)


@inbox_group.command(name="export")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="A file [default: stdout].",
)
@store_option
def export_command(output: str | None, store_spec: str) -> None:
    """The audit trail as JSON lines: every event (submitted, accepted, rejected) with
    who, when, why and the record it changed."""
    store = _store(store_spec)
    records: dict[str, Stored] = {}
    lines = []
    for event in store.events():
        record = records.get(event.record) or store.get(event.record)
        if record is not None:
            records[event.record] = record
        line = {
            "seq": event.seq,
            "action": event.action,
            "by": event.by,
            "at": utc_time(event.at),
            "record": event.record,
            **({"reason": event.reason} if event.reason else {}),
            **(
                {"kind": record.kind, "doc": record.doc, "payload": record.payload}
                if record
                else {}
            ),
        }
        lines.append(json_for_terminal(line, sort_keys=True))
    text = "".join(f"{line}\n" for line in lines)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {len(lines)} event(s) to {output}", err=True)
    else:
        sys.stdout.write(text)


# -- deciding -----------------------------------------------------------------------------


def _decider(config: Config, keyid: str, record: Stored) -> str:
    """The deciding reviewer's name; refused when the record is theirs."""
    assert config.reviews is not None
    name = reviewers_of(config.reviews)[keyid][0]
    by_kind, _, by = record.principal.partition(":")
    if by == name or (by_kind == "key" and by == keyid):
        raise click.UsageError(f"{record.id[:12]} is {name}'s own: another reviewer decides it")
    return name


def _decide(store: Store, record: Stored, state: str, name: str, reason: str) -> Stored:
    try:
        return store.decide(record.id, state, name, time_of(None), reason)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None


def _review_of(
    config: Config,
    record: Stored,
    entries: dict[str, list[tuple[str, Any]]],
    private: Any,
    keyid: str,
    now: int,
    name: str,
) -> Path:
    """The accepted judgement as a review file of the revision the agent read."""
    payload = record.payload
    found = entries.get(record.doc)
    if not found:
        raise click.UsageError(f"the library no longer has {record.doc}; reject the record")
    by = record.principal.partition(":")[2]
    basis = f"{payload['basis']} (reported by {by}, inbox record {record.id[:12]})"
    review = signed(
        Review(
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
        ),
        private,
    )
    return keep(config, review)


def _apply_proposal(
    config: Config, record: Stored, entries: dict[str, list[tuple[str, Any]]], doc_path: str | None
) -> Path:
    """Write the proposal into the docs tree; checked, and undone if the check finds an
    error in the file it changed. Both writes go through `safe_paths.write_file`: no link
    on the way from the project folder is followed, nor one named like a temporary file."""
    target, before, after = _planned(config, record, entries, doc_path)
    below = checked_from(config.docs_dir, config.config_path.parent)
    write_file(target, after, below, PublishError, before=before)
    with progress_bar("Checking") as progress:
        result = pipeline.check(config, progress)
    rel_path = target.relative_to(config.docs_dir).as_posix()
    errors = [f for f in result.findings if f.path == rel_path and f.severity.name == "ERROR"]
    ids = {doc.id for doc in result.docs if doc.path == rel_path}
    if errors or (before is None and record.doc not in ids):
        if before is None:
            remove_file(target, after, below, PublishError)
        else:
            write_file(target, before, below, PublishError, before=after)
        shown = "; ".join(str(f) for f in errors[:5]) or f"the file's id is not {record.doc}"
        raise click.ClickException(f"the proposal does not check, nothing was kept: {shown}")
    return target


def _planned(
    config: Config, record: Stored, entries: dict[str, list[tuple[str, Any]]], doc_path: str | None
) -> tuple[Path, bytes | None, bytes]:
    """(the file, its bytes now or None for a new doc, its bytes with the proposal)."""
    payload = record.payload
    markdown = str(payload["markdown"])
    found = entries.get(record.doc)
    if not found:
        rel = doc_path or record.doc.replace(".", "/") + ".md"
        target = Path(os.path.abspath(config.docs_dir / rel))
        if config.docs_dir not in target.parents or os.path.lexists(target):
            raise click.UsageError(
                f"{rel} is outside the docs folder or exists; pass another --path"
            )
        return target, None, (markdown if markdown.endswith("\n") else markdown + "\n").encode()
    path, entry = found[0]
    if payload.get("revision") != entry.revision:
        raise click.UsageError(
            f"{record.doc} changed since the proposal was written (revision "
            f"{entry.revision[:12]}, the proposal read {str(payload.get('revision'))[:12]}): "
            "reject it, or ask for a new one"
        )
    target = config.docs_dir / path
    before = target.read_bytes()
    text = before.decode("utf-8").replace("\r\n", "\n")
    return target, before, _with_section(text, payload.get("section"), markdown, entry).encode()


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _with_section(text: str, section: Any, markdown: str, entry: Any) -> str:
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
    raise click.UsageError(f"{entry.id} has no section {section!r} any more; reject the record")
