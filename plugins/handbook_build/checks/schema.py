"""The field rules of the doc format (DESIGN §4), applied to one parsed doc.

Rules that need the whole library (duplicate ids) live in `validate`. Each field is
reported once, by its most specific rule: a missing field as missing, not again as the
wrong type; a value outside a vocabulary as such, with the allowed values, whatever YAML
read it as (``verified: yes`` is one finding, not a boolean warning, a type error and a
vocabulary error); a value the frontmatter reader refused not again at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import repeat
from typing import Any

from .. import rules
from ..config.options import LANG
from ..config.settings import Config
from ..findings import Finding
from ..read.frontmatter import Mark
from ..read.parse import Doc

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
    required = config.required_fields
    for name in required:
        if name not in doc.fields and name not in doc.meta:  # derived fields are in meta only
            yield rules.FIELD_MISSING.at(doc.path, 1, variant="missing", field=name)
        elif name in doc.meta and is_empty(doc.meta[name]):
            key = doc.key_at(name)
            yield rules.FIELD_MISSING.at(doc.path, key.line, key.col, variant="empty", field=name)
    for name, value in doc.meta.items():
        if not (name in required and is_empty(value)):
            yield from _field(doc, name, value, config)
    typed = {*STRING_FIELDS, *LIST_FIELDS, *config.vocabularies}
    for word in doc.bool_words:
        if word.field not in typed:  # where a string is expected, the field's rule says so
            value = str(word.mark.text.lower() in ("yes", "on")).lower()
            line, col, text = word.mark
            yield rules.YAML_BOOL_WORD.at(
                doc.path, line, col, name=word.name, text=text, value=value
            )
    yield from _body(doc, config)


def _field(doc: Doc, name: str, value: Any, config: Config) -> Iterator[Finding]:
    """The one finding about a field, or one per value outside its vocabulary. A field
    written without a value (`version:`) is only wrong when it is required."""
    if value is None:
        return
    path, (line, col, _) = doc.path, doc.value_at(name)
    allowed = config.vocabularies.get(name)
    if name in STRING_FIELDS and isinstance(value, (list, dict)):
        yield rules.FIELD_TYPE.at(path, line, col, variant="string", field=name, type=_type(value))
    elif name in LIST_FIELDS and not (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        yield rules.FIELD_TYPE.at(path, line, col, variant="strings", field=name)
    elif allowed is not None:
        yield from _vocab(doc, name, value, allowed)
    elif name in STRING_FIELDS and not isinstance(value, str):
        yield rules.FIELD_TYPE.at(path, line, col, variant="string", field=name, type=_type(value))
    elif name == "lang" and not LANG.fullmatch(value):
        yield rules.FIELD_TYPE.at(path, line, col, variant="lang", value=value)
    elif name == "effective_date" and not ISO_DATE.fullmatch(value):
        yield rules.FIELD_TYPE.at(path, line, col, variant="date", value=value)
    elif name == "id" and not ID_PATTERN.fullmatch(value):
        yield rules.ID_PATTERN.at(path, line, col, id=value)
    elif name == "summary" and len(value) > config.limits.summary_chars:
        limit = config.limits.summary_chars
        yield rules.SUMMARY_LENGTH.at(path, line, col, chars=len(value), limit=limit)


def _vocab(doc: Doc, name: str, value: Any, allowed: tuple[str, ...]) -> Iterator[Finding]:
    if isinstance(value, str) and not value.strip():
        return
    field = doc.fields.get(name)
    if field is None:  # derived by adoption: reported where the doc starts
        written = zip(
            value if isinstance(value, list) else [value], repeat(Mark(1, 1)), strict=False
        )
    elif isinstance(value, list):
        written = zip(value, field.items, strict=True)
    else:
        written = zip([value], [field.value], strict=True)
    for item, mark in written:
        if item not in allowed:
            text = item if isinstance(item, str) else _as_written(item, mark)
            yield rules.VOCAB.at(
                doc.path, mark.line, mark.col, field=name, text=text, allowed=", ".join(allowed)
            )


def _body(doc: Doc, config: Config) -> Iterator[Finding]:
    chars, limits = len(doc.body), config.limits
    if chars > limits.body_max_chars:
        yield rules.BODY_TOO_LONG.at(
            doc.path, doc.body_line, chars=chars, limit=limits.body_max_chars
        )
    elif chars > limits.body_warn_chars:
        yield rules.BODY_LONG.at(doc.path, doc.body_line, chars=chars, limit=limits.body_warn_chars)


def _as_written(value: Any, mark: Mark) -> str:
    """A scalar as the author wrote it (`yes`, not true); a collection as JSON."""
    return mark.text or json.dumps(value, ensure_ascii=False)


def _type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", list: "a list", dict: "a mapping", str: "a string"}
    return names.get(type(value), type(value).__name__)
