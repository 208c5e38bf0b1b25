"""The pedigree commands: `review` and `invalidate` write signed records beside the docs
(for a pull request, like any edit), and `reviews` lists what needs a reviewer now."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from handbook.bundle.catalog import DocEntry
from handbook.bundle.manifest import utc_seconds
from handbook.bundle.signing import load_private_key, public_key_of
from handbook.errors import KeyFormatError
from handbook.pedigree.records import VERDICTS, Invalidation, Record, RecordError, Review, sign

from .. import pipeline
from ..checks.reviews import ledger_of, reviewers_of, write_record
from ..config.settings import Config, load_config
from ..safe_paths import checked_from
from ..write.emit import entry_of
from ..write.pedigree_view import queue, reason, state_name, summary
from .building import BuildCommand, config_option, progress_bar

REVIEW_KEY_ENV = "HANDBOOK_REVIEW_KEY"

key_option = click.option(
    "--key",
    "key_file",
    type=click.Path(dir_okay=False),
    metavar="KEYFILE",
    help=f"The reviewer's private key (from `handbook keygen`) [default: ${REVIEW_KEY_ENV}, "
    "the key file's contents].",
)
at_option = click.option(
    "--at",
    metavar="TIME",
    help="The time to record, a UTC time like 2026-12-01T09:30:00Z [default: now].",
)


def config_with_reviews(config_path: str) -> Config:
    config = load_config(config_path)
    if config.reviews is None:
        raise click.UsageError(
            "the library declares no reviewers: add `reviews:` with `reviewers` to its "
            "configuration (see the configuration reference)"
        )
    return config


def reviewer_key(config: Config, key_file: str | None) -> tuple[Any, str]:
    """The reviewer's private key and key id; refused unless declared."""
    assert config.reviews is not None
    if key_file is not None:
        data, what = Path(key_file).read_bytes(), key_file
    elif os.environ.get(REVIEW_KEY_ENV):
        data, what = os.environ[REVIEW_KEY_ENV].encode(), f"${REVIEW_KEY_ENV}"
    else:
        raise click.UsageError(f"pass --key KEYFILE or set ${REVIEW_KEY_ENV}: a review is signed")
    try:
        private = load_private_key(data, what=what)
    except KeyFormatError as exc:
        raise click.UsageError(str(exc)) from None
    keyid = public_key_of(private).keyid
    if keyid not in reviewers_of(config.reviews):
        raise click.UsageError(
            f"{what} (key id {keyid[:16]}) is not a declared reviewer; add its public key "
            f"{public_key_of(private)} under reviews.reviewers"
        )
    return private, keyid


def time_of(at: str | None) -> int:
    if at is None:
        return int(time.time())
    seconds = utc_seconds(at)
    if seconds is None:
        raise click.BadParameter(
            f"{at!r} is not a UTC time like 2026-12-01T09:30:00Z", param_hint="--at"
        )
    return seconds


def doc_entries(config: Config) -> dict[str, list[tuple[str, DocEntry]]]:
    """Doc id -> [(path, catalog entry)], one per language, as the build would make them."""
    with progress_bar("Reading") as progress:
        result = pipeline.check(config, progress)
    out: dict[str, list[tuple[str, DocEntry]]] = {}
    for doc in result.docs:
        out.setdefault(doc.id, []).append((doc.path, entry_of(doc, config, result.resources)))
    return out


@click.command(name="review", cls=BuildCommand)
@click.argument("doc_id", metavar="DOC")
@click.option("--verdict", type=click.Choice(VERDICTS), required=True, help="What the review says.")
@click.option("--basis", required=True, help="Why: what was checked, against what (short).")
@click.option(
    "--section", help="Review one section (its anchor or title) instead of the whole doc."
)
@click.option("--lang", help="The doc's language, where the id exists in several.")
@click.option(
    "--evidence", multiple=True, metavar="REF", help="A reference to evidence (repeatable)."
)
@key_option
@at_option
@config_option
def review_command(
    doc_id: str,
    verdict: str,
    basis: str,
    section: str | None,
    lang: str | None,
    evidence: tuple[str, ...],
    key_file: str | None,
    at: str | None,
    config_path: str,
) -> None:
    """Sign a review of DOC's current revision and keep it in the reviews folder.

    The file is named by the review's id (the hash of what it says), so it goes through
    a pull request like any edit, and the same review written twice is one file."""
    config = config_with_reviews(config_path)
    private, keyid = reviewer_key(config, key_file)
    found = doc_entries(config).get(doc_id)
    if not found:
        raise click.UsageError(f"the library has no doc {doc_id!r}")
    chosen = [(p, e) for p, e in found if lang is None or e.meta.get("lang") == lang]
    if len(chosen) != 1:
        langs = ", ".join(sorted(str(e.meta.get("lang")) for _, e in found))
        raise click.UsageError(f"{doc_id} exists in several languages ({langs}); pass --lang")
    _, entry = chosen[0]
    anchor = None
    if section is not None:
        anchor = next(
            (s.anchor for s in entry.sections if section in (s.anchor, s.title)),
            None,
        )
        if anchor is None:
            shown = ", ".join(s.anchor for s in entry.sections)
            raise click.UsageError(f"{doc_id} has no section {section!r}; its sections: {shown}")
    doc_lang = entry.meta.get("lang")
    record = signed(
        Review(
            "",
            config.library,
            doc_id,
            entry.revision,
            verdict,  # type: ignore[arg-type]
            basis,
            keyid,
            time_of(at),
            anchor,
            doc_lang if isinstance(doc_lang, str) else None,
            evidence,
        ),
        private,
    )
    path = keep(config, record)
    click.echo(f"{verdict} of {doc_id} (revision {entry.revision[:12]}) -> {os.path.relpath(path)}")


@click.command(name="invalidate", cls=BuildCommand)
@click.argument("uri")
@key_option
@click.option(
    "--at",
    metavar="TIME",
    help="When the artifact changed, a UTC time like 2026-12-01T09:30:00Z [default: now].",
)
@click.option(
    "--signed-at",
    metavar="TIME",
    help="The time to record as the record's issue time [default: now]; for reproducible "
    "records, as in examples.",
)
@config_option
def invalidate_command(
    uri: str, key_file: str | None, at: str | None, signed_at: str | None, config_path: str
) -> None:
    """Record that the artifact at URI changed (at --at, default now): every doc `about`
    it is suspect until a review issued after that time."""
    config = config_with_reviews(config_path)
    private, keyid = reviewer_key(config, key_file)
    changed, issued = time_of(at), time_of(signed_at)
    if changed > issued:
        raise click.BadParameter(
            "the change cannot be after the record is signed", param_hint="--at"
        )
    record = signed(Invalidation("", config.library, uri, changed, keyid, issued), private)
    about = [
        doc_id
        for doc_id, found in doc_entries(config).items()
        if any(uri in _about(entry) for _, entry in found)
    ]
    path = keep(config, record)
    click.echo(f"{uri} changed -> {os.path.relpath(path)}")
    click.echo(
        f"suspect until reviewed again: {', '.join(about)}"
        if about
        else f"note: no doc is about {uri} yet (docs name it in `about:`)"
    )


@click.command(name="reviews", cls=BuildCommand)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text: a table; json: a list; github: workflow annotations on the docs.",
)
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option(
    "--at",
    metavar="TIME",
    help="Work the queue out as of this UTC time, like 2026-12-01T09:30:00Z [default: now].",
)
@config_option
def reviews_command(fmt: str, as_json: bool, at: str | None, config_path: str) -> None:
    """List the review queue: contested, suspect, under approved, stale and unreviewed
    docs, most urgent first, each with the reason."""
    config = config_with_reviews(config_path)
    assert config.reviews is not None
    with progress_bar("Reading") as progress:
        result = pipeline.check(config, progress)
    ledger = ledger_of(config.reviews, result.records)
    now = time_of(at)
    entries = [(doc.path, entry_of(doc, config, result.resources)) for doc in result.docs]
    queued = queue((entry.id, path, ledger.pedigree(entry, now)) for path, entry in entries)
    prefix = os.path.relpath(config.docs_dir) + "/"
    if as_json or fmt == "json":
        click.echo(json.dumps(queued, indent=2, ensure_ascii=False))
    elif fmt == "github":
        for item in queued:
            click.echo(
                f"::warning file={prefix}{item['path']},line=1::{item['id']}: "
                f"{state_name(item['state'])}: {reason(item)}"
            )
    else:
        for item in queued:
            click.echo(f"{state_name(item['state']):<15} {item['id']}  {reason(item)}")
    click.echo(summary(queued, len(result.docs)), err=fmt != "text" or as_json)


def signed(record: Record, private: Any) -> Record:
    """The record signed; refused (nothing written) when the build would refuse it."""
    try:
        return sign(record, private)
    except RecordError as exc:
        raise click.UsageError(f"the record would be refused by the build: {exc}") from None


def keep(config: Config, record: Record) -> Path:
    """Write `record` into the reviews folder, through no link from the project folder
    down (a `reviews` link committed to the repository is refused, not followed)."""
    assert config.reviews is not None
    folder = config.reviews.folder
    return write_record(folder, record, checked_from(folder, config.config_path.parent))


def _about(entry: DocEntry) -> list[str]:
    about = entry.meta.get("about")
    return [str(a) for a in about] if isinstance(about, list) else [str(about)] if about else []
