"""The field rules of the doc format (DESIGN §4), applied to one parsed doc.

Rules that need the whole library (duplicate ids) live in `validate`. A missing field is
reported once, as missing, not again as the wrong type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from . import rules
from .config import LANG, Config
from .findings import Finding
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
            yield rules.FIELD_MISSING.at(path, 1, variant="missing", field=name)
        elif is_empty(meta[name]):
            yield rules.FIELD_MISSING.at(path, doc.line_of(name), variant="empty", field=name)
    for name in STRING_FIELDS:
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            yield rules.FIELD_TYPE.at(
                path, doc.line_of(name), variant="string", field=name, type=_type(value)
            )
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            yield rules.FIELD_TYPE.at(path, doc.line_of(name), variant="strings", field=name)
    lang = meta.get("lang")
    if isinstance(lang, str) and not LANG.fullmatch(lang):
        yield rules.FIELD_TYPE.at(path, doc.line_of("lang"), variant="lang", value=lang)
    date = meta.get("effective_date")
    if isinstance(date, str) and not ISO_DATE.fullmatch(date):
        yield rules.FIELD_TYPE.at(path, doc.line_of("effective_date"), variant="date", value=date)
    doc_id = meta.get("id")
    if isinstance(doc_id, str) and doc_id and not ID_PATTERN.fullmatch(doc_id):
        yield rules.ID_PATTERN.at(path, doc.line_of("id"), id=doc_id)
    for name, allowed in config.vocabularies.items():
        yield from _vocab(doc, name, allowed)
    summary = meta.get("summary")
    if isinstance(summary, str) and len(summary) > config.limits.summary_chars:
        limit = config.limits.summary_chars
        yield rules.SUMMARY_LENGTH.at(path, doc.line_of("summary"), chars=len(summary), limit=limit)
    chars = len(doc.body)
    if chars > config.limits.body_max_chars:
        limit = config.limits.body_max_chars
        yield rules.BODY_TOO_LONG.at(path, doc.body_line, chars=chars, limit=limit)
    elif chars > config.limits.body_warn_chars:
        limit = config.limits.body_warn_chars
        yield rules.BODY_LONG.at(path, doc.body_line, chars=chars, limit=limit)


def _vocab(doc: Doc, name: str, allowed: tuple[str, ...]) -> Iterator[Finding]:
    value = doc.meta.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str):
            yield rules.FIELD_TYPE.at(
                doc.path, doc.line_of(name), variant="vocab_type", field=name, type=_type(item)
            )
        elif item not in allowed:
            yield rules.VOCAB.at(
                doc.path, doc.line_of(name), field=name, text=item, allowed=", ".join(allowed)
            )


def _type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", list: "a list", dict: "a mapping", str: "a string"}
    return names.get(type(value), type(value).__name__)
