"""Which frontmatter fields agents may filter on, and under what name.

A doc's own fields become filter parameters of the agent tools (`list(vendor=…)`), so an
author must not be able to shadow a tool's parameter (`ids`, `limit`, `query` …) or put
odd names into the schemas agents read. A field is offered as a filter under a plain
identifier: its name, or the name with dashes, dots and spaces turned into `_`
(``allowed-tools`` → ``allowed_tools``, with a notice). A name that is a tool's
parameter, or cannot become an identifier, or collides with another once normalised, is
a finding. Only scalar and list-of-scalar values filter; a mapping is kept (`get` shows
it) but never filters.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from handbook.tools.table import RESERVED

from .. import rules
from ..findings import Finding
from ..read.parse import Doc

CORE_FIELDS = frozenset(
    {
        "id",
        "title",
        "kind",
        "summary",
        "verified",
        "keywords",
        "aliases",
        "version",
        "lang",
        "effective_date",
    }
)
"""The format's own fields: always known to the tools, never renamed."""
_SEPARATORS = re.compile(r"[-. ]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}", re.ASCII)


def filter_name(name: str) -> str | None:
    """The identifier a field is offered under, or None when it can have none (it is
    then kept as metadata, never a filter)."""
    if name in CORE_FIELDS:
        return name
    candidate = _SEPARATORS.sub("_", name.strip())
    if not _IDENTIFIER.fullmatch(candidate) or candidate in RESERVED:
        return None
    return candidate


def catalog_meta(meta: Mapping[str, Any], leave_out: Collection[str] = ()) -> dict[str, Any]:
    """A doc's metadata as the catalog keeps it, but the fields in `leave_out`: app
    fields under their filter names (those that have one), the others as written."""
    return {filter_name(k) or k: v for k, v in meta.items() if k not in leave_out}


MAX_FILTER_CHARS = 120
"""A longer string is prose (a skill's `description`), shown with the doc, never matched."""


def is_filter_value(value: Any) -> bool:
    """A short scalar, or a list of them: what a filter can match."""
    if isinstance(value, list):
        return all(not isinstance(v, list) and is_filter_value(v) for v in value)
    if isinstance(value, str):
        return len(value) <= MAX_FILTER_CHARS and "\n" not in value
    return isinstance(value, (int, bool))


def check(doc: Doc, standard: Collection[str] = ()) -> Iterator[Finding]:
    """The findings about the names of a doc's app fields; a name in `standard` is
    spelled by a specification the author follows (a skill's `allowed-tools`), so its
    filter name goes without a notice."""
    taken: dict[str, str] = {}
    for name in doc.fields:
        if name in CORE_FIELDS:
            continue
        at = doc.key_at(name)
        normalised = _SEPARATORS.sub("_", name.strip())
        if name in RESERVED or normalised in RESERVED:
            reserved = ", ".join(sorted(p for p in RESERVED if p not in CORE_FIELDS))
            yield rules.FIELD_NAME.at(
                doc.path, at.line, at.col, variant="reserved", name=name, reserved=reserved
            )
        elif not _IDENTIFIER.fullmatch(normalised):
            yield rules.FIELD_NAME.at(
                doc.path, at.line, at.col, variant="not_identifier", name=name
            )
        elif normalised in taken or normalised in CORE_FIELDS:
            other = taken.get(normalised, normalised)
            yield rules.FIELD_NAME.at(
                doc.path,
                at.line,
                at.col,
                variant="collision",
                name=name,
                other=other,
                normalised=normalised,
            )
        else:
            taken[normalised] = name
            if normalised != name and name not in standard:
                yield rules.FIELD_NAME_NORMALISED.at(
                    doc.path, at.line, at.col, name=name, normalised=normalised
                )
