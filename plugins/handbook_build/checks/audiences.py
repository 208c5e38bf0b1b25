"""Audiences: which readers may read which docs, decided by what is shipped.

A library declares its audiences and which include which (`staff` reads what `public`
reads); a doc names its audience in frontmatter (`audience: staff`), else the library's
default. One build emits one bundle per audience holding only the docs its readers may
read — not a filter at query time, so a restricted doc is never in a bundle, a site or
an answer a reader is not entitled to. The default audience's bundle is where a bundle
always was; the others go to `bundles_dir/<audience>/`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt

from .. import rules
from ..config.audiences import FIELD, AudienceSettings, audience_of
from ..findings import Finding
from ..read.parse import Doc


def used_vocabularies(
    vocab: Mapping[str, Sequence[str]], docs: Iterable[Any]
) -> dict[str, tuple[str, ...]]:
    """Each vocabulary cut to the values `docs` use (by each doc's `meta`), in its declared
    order; one none of them uses is left out. An audience's bundle is built from its docs
    only, and so is its vocabulary: a kind (or any declared value) that only a narrower
    audience's docs have would otherwise be named in the wider one's catalog, tools and
    served schemas."""
    used: dict[str, set[str]] = {name: set() for name in vocab}
    for doc in docs:
        for name, seen in used.items():
            value = doc.meta.get(name)
            seen.update(
                v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)
            )
    cut = {name: tuple(v for v in allowed if v in used[name]) for name, allowed in vocab.items()}
    return {name: values for name, values in cut.items() if values}


def used_fields(names: Sequence[str], docs: Iterable[Any]) -> tuple[str, ...]:
    """The field `names` some doc of `docs` has: an audience's bundle names no field only
    another audience's docs have (the list fields default to the vocabularies' fields)."""
    held = {name for doc in docs for name in doc.meta}
    return tuple(name for name in names if name in held)


def check(docs: Sequence[Doc], settings: AudienceSettings | None) -> Iterator[Finding]:
    """An undeclared audience (HB901), and a link to a doc some readers of the linking
    doc may not read (HB902)."""
    if settings is None:
        for doc in docs:
            if FIELD in doc.meta or FIELD in doc.fields:
                line, col, _ = doc.value_at(FIELD)
                yield rules.AUDIENCE_UNKNOWN.at(doc.path, line, col, variant="undeclared")
        return
    by_path = {doc.path: doc for doc in docs}
    for doc in docs:
        value = doc.meta.get(FIELD, settings.default)
        if value not in settings.includes:
            line, col, _ = doc.value_at(FIELD)
            declared = ", ".join(settings.includes)
            yield rules.AUDIENCE_UNKNOWN.at(doc.path, line, col, value=value, declared=declared)
            continue
        for line, target in links(doc):
            other = by_path.get(target)
            if other is None:
                continue
            narrower = audience_of(other.meta, settings)
            if narrower in settings.includes and settings.narrower(value, narrower):
                yield rules.AUDIENCE_LINK.at(
                    doc.path, line, 1, target=other.id or other.path, narrower=narrower,
                    audience=value,
                )  # fmt: skip


_md = MarkdownIt("commonmark")


def links(doc: Doc) -> Iterator[tuple[int, str]]:
    """(line, target path in the docs root) of each relative link to a markdown file."""
    for token in _md.parse(doc.body):
        for child in token.children or ():
            if child.type != "link_open":
                continue
            href = str(child.attrGet("href") or "")
            path = urlsplit(href).path
            if not path or "://" in href or href.startswith(("/", "#", "mailto:")):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), unquote(path)))
            if target.endswith("/"):
                target += "index.md"
            line = doc.body_line + (token.map[0] if token.map else 0)
            yield line, target if target.endswith(".md") else f"{target}.md"
