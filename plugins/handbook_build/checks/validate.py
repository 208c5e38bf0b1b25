"""All rules over a parsed library, split by what they need: one doc (run wherever the
doc was parsed, in parallel) or the whole library. Every finding is collected; nothing
stops at the first."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

from .. import rules
from ..config.settings import Config
from ..config.validators import Validator
from ..findings import Finding
from ..read.parse import Doc
from . import (
    credentials,
    field_names,
    personal_data,
    reviews,
    schema,
    skills,
    snippets,
    unsafe_html,
)


def check_doc(doc: Doc, config: Config, validators: Mapping[str, Validator]) -> list[Finding]:
    """The rules that need only this doc: fields, their names, its pedigree fields,
    snippets, script in the body, personal data and secrets in URLs (none looked for when
    the library switched its rule off: they read every paragraph)."""
    findings = (
        schema.check(doc, config)
        + list(
            field_names.check(doc, skills.SPEC_FIELDS if skills.claims_spec(doc, config) else ())
        )
        + list(reviews.check_fields(doc, config))
        + snippets.check(doc, validators)
    )
    if config.levels.get(rules.UNSAFE_HTML.code) != "off":
        findings += unsafe_html.check(doc)
    if config.levels.get(rules.PERSONAL_DATA.code) != "off":
        findings += personal_data.check(doc, config.pii)
    if config.levels.get(rules.CREDENTIALS_IN_URL.code) != "off":
        findings += credentials.check(doc)
    return findings


def check_comments(doc: Doc, config: Config) -> list[Finding]:
    """The rules about what the HTML comments taken out of the body say (personal data,
    secrets): the site's pages and the repository keep them. Their findings are at the
    file lines the comments are written at already (`Doc.located` is not for them)."""
    findings: list[Finding] = []
    if config.levels.get(rules.PERSONAL_DATA.code) != "off":
        findings += personal_data.check_comments(doc, config.pii)
    if config.levels.get(rules.CREDENTIALS_IN_URL.code) != "off":
        findings += credentials.check_comments(doc)
    return findings


def check_resources(config: Config, resources: Mapping[str, Sequence[str]]) -> Iterator[Finding]:
    """Attached files within the size limit (names, links and special files are checked
    by the walk)."""
    limit = config.limits.resource_bytes
    for files in resources.values():
        for rel in files:
            size = os.lstat(config.docs_dir / rel).st_size
            if size > limit:
                yield rules.RESOURCE_TOO_LARGE.at(rel, 1, size=size, limit=limit)


def check_library(docs: Sequence[Doc], default_lang: str | None = None) -> list[Finding]:
    """The rules that need every doc at once."""
    return [*duplicate_ids(docs, default_lang), *reviews.check_library(docs)]


def duplicate_ids(docs: Sequence[Doc], default_lang: str | None = None) -> Iterator[Finding]:
    """Every later holder of an id (in one language: an id may exist once per `lang`)
    names the first, in path order, with its line and column: the finding lands on the
    doc to fix, whichever order the docs come in."""
    first: dict[tuple[str, str], Doc] = {}
    for doc in sorted(docs, key=lambda d: d.path):
        if not doc.id:
            continue
        lang = doc.meta.get("lang") or default_lang or ""
        key = (doc.id, str(lang))
        if key in first:
            other, (line, col, _) = first[key], doc.value_at("id")
            where = f" in language {lang}" if lang else ""
            at = other.value_at("id")
            pointer = f"{other.path}:{at.line}:{at.col}"
            yield rules.ID_DUPLICATE.at(doc.path, line, col, id=doc.id, where=where, first=pointer)
        else:
            first[key] = doc
