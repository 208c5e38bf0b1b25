"""The field rules of the doc format (DESIGN §4), applied to one parsed doc.

Rules that need the whole library (duplicate ids) live in `validate`. A missing field is
reported once, as missing, not again as the wrong type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .config import LANG, Config
from .findings import Finding, finding
from .parse import Doc

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

STRING_FIELDS = ("id", "title", "kind", "summary", "verified", "version", "lang", "effective_date")
LIST_FIELDS = ("keywords", "aliases")


def is_empty(value: Any) -> bool:
    return (
        value is None
        or value == []
        or value == {}
        or (isinstance(value, str) and not value.strip())
    )


def check(doc: Doc, config: Config) -> list[Finding]:
    return list(_check(doc, config))


def _check(doc: Doc, config: Config) -> Iterator[Finding]:
    meta, path = doc.meta, doc.path
    for name in config.required_fields:
        if name not in meta:
            yield finding(
                path,
                1,
                "HB301",
                f"required field `{name}` is missing; add `{name}:` to the frontmatter",
            )
        elif is_empty(meta[name]):
            yield finding(path, doc.line_of(name), "HB301", f"required field `{name}` is empty")
    for name in STRING_FIELDS:
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            yield finding(
                path,
                doc.line_of(name),
                "HB302",
                f"`{name}` must be a string, not {_type(value)}; quote it",
            )
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            yield finding(
                path,
                doc.line_of(name),
                "HB302",
                f"`{name}` must be a list of strings, like `{name}: [a, b]`",
            )
    lang = meta.get("lang")
    if isinstance(lang, str) and not LANG.fullmatch(lang):
        yield finding(
            path,
            doc.line_of("lang"),
            "HB302",
            f"`lang` must be a language tag like en, de or pt-BR, not {lang!r}",
        )
    date = meta.get("effective_date")
    if isinstance(date, str) and not ISO_DATE.fullmatch(date):
        yield finding(
            path,
            doc.line_of("effective_date"),
            "HB302",
            f"`effective_date` must be a date like 2026-01-31, not {date!r}",
        )
    doc_id = meta.get("id")
    if isinstance(doc_id, str) and doc_id and not ID_PATTERN.fullmatch(doc_id):
        yield finding(
            path,
            doc.line_of("id"),
            "HB303",
            f"id {doc_id!r} must be lowercase dotted words like `device.acme.c100` (letters, digits, `_`, `-`)",
        )
    for name, allowed in config.vocabularies.items():
        yield from _vocab(doc, name, allowed)
    summary = meta.get("summary")
    if isinstance(summary, str) and len(summary) > config.limits.summary_chars:
        yield finding(
            path,
            doc.line_of("summary"),
            "HB306",
            f"summary has {len(summary):,} characters; the limit is {config.limits.summary_chars:,}: shorten it",
        )
    chars = len(doc.body)
    if chars > config.limits.body_max_chars:
        yield finding(
            path,
            doc.body_line,
            "HB402",
            f"body has {chars:,} characters; the limit is {config.limits.body_max_chars:,}: split the doc",
        )
    elif chars > config.limits.body_warn_chars:
        yield finding(
            path,
            doc.body_line,
            "HB401",
            f"body has {chars:,} characters, over the {config.limits.body_warn_chars:,} warning limit: consider splitting it",
        )


def _vocab(doc: Doc, name: str, allowed: tuple[str, ...]) -> Iterator[Finding]:
    value = doc.meta.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str):
            yield finding(
                doc.path,
                doc.line_of(name),
                "HB302",
                f"`{name}` values must be strings from its vocabulary, not {_type(item)}",
            )
        elif item not in allowed:
            yield finding(
                doc.path,
                doc.line_of(name),
                "HB305",
                f"`{name}: {item}` is not in the vocabulary; allowed: {', '.join(allowed)}",
            )


def _type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", list: "a list", dict: "a mapping", str: "a string"}
    return names.get(type(value), type(value).__name__)
