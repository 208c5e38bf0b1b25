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
import sys
from pathlib import Path
from typing import Any

import click

from handbook.bundle.manifest import utc_time
from handbook.inbox.store import STATES, Store, Stored, StoreError
from handbook.inbox.stores import open_store
from handbook.terminal_text import for_terminal, json_for_terminal

from ..checks.reviews import reviewers_of
from ..config.settings import Config
from ..errors import AcceptError
from ..tasks.accept import VERDICT_OF, apply_proposal, review_of
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
    written = _accepted(config, record, private, keyid, at, doc_path)
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


def _accepted(
    config: Config, record: Stored, private: Any, keyid: str, at: str | None, doc_path: str | None
) -> Path:
    """The file accepting `record` wrote (`tasks.accept`): a signed review file, or the
    doc the proposal changed. A record that no longer fits is a usage error."""
    entries = doc_entries(config)
    try:
        if record.kind in VERDICT_OF:
            review = review_of(config, record, entries, keyid, time_of(at))
            return keep(config, signed(review, private))
        with progress_bar("Checking") as progress:
            written, refused = apply_proposal(config, record, entries, doc_path, progress)
    except AcceptError as exc:
        raise click.UsageError(str(exc)) from None
    if refused:
        raise click.ClickException(f"the proposal does not check, nothing was kept: {refused}")
    return written


def _decide(store: Store, record: Stored, state: str, name: str, reason: str) -> Stored:
    try:
        return store.decide(record.id, state, name, time_of(None), reason)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
