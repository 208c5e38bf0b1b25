"""Adopting pages that were not written for Handbook: the fields they lack, derived.

A site brought as it stands (the `adopt` option) and every Agent Skill (`SKILL.md`,
whose `name` and `description` the Skills specification defines) have pages without
Handbook's `id`, `title`, `summary` or `kind`. Each missing field is derived by a
documented rule and reported as a notice naming the rule, so nothing is guessed in
silence and `handbook adopt --write` can pin the values later:

- `id` from the path (`user-guide/installation.md` → `user-guide.installation`; a
  folder's `index.md`, `README.md` or `SKILL.md` → the folder; the root one → `index`),
  normalised to the id grammar; a skill's from its `name`;
- `title` from the first `# ` heading, else the site's nav, else the file name;
- `summary` from `description` (a skill's first sentence), else the first paragraph, cut
  at a sentence or a word within the limit, else the title;
- `kind` from the `adopt.kinds` patterns, else the default kind; a skill's is `skill`.

Two paths can give one id (`a-b.md` and `a_b.md`); `disambiguate` keeps the first in
path order and serves the others under a suffixed id, with a warning.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from markdown_it import MarkdownIt

from handbook.bundle.canonical import load_untrusted
from handbook.skills.skill_md import JSON_FIELDS_KEY, PREFIX

from .. import rules
from ..config.options import Adoption
from ..config.settings import Config
from ..findings import Finding
from ..read.parse import Doc
from ..read.plain_text import inline_text

FOLDER_PAGES = ("index", "readme", "skill")
SKILL = "SKILL.md"
_NOT_ID = re.compile(r"[^a-z0-9_-]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_NOT_PROSE = re.compile(
    r"(?:!!!|\?\?\?\+?|///|===\+?|:::|\[\^[^\]\s]+\]:|\*\[[^\]]+\]:|\{%|\[%|\{\{)"
)
"""How the paragraphs start that are not prose to a reader: admonitions (``!!! note``,
``??? tip``), pymdownx blocks (``/// warning``), content tabs (``=== "Tab"``),
directives (``::: module``), a footnote's text (``[^1]: …``), an abbreviation's
(``*[FAQ]: …``) and template tags. CommonMark
reads them as paragraphs; the site shows them otherwise, or not at all."""
_blocks = MarkdownIt("commonmark").disable("inline")


def is_skill(doc: Doc) -> bool:
    return posixpath.basename(doc.path) == SKILL


def derive(doc: Doc, config: Config) -> tuple[Doc, list[Finding]]:
    """The doc with its missing fields derived, and a notice for each; a doc that is
    neither adopted nor a skill is returned as it is."""
    skill = is_skill(doc)
    if config.adopt is None and not skill:
        return doc, []
    meta, found, path = exported_fields(doc.meta) if skill else dict(doc.meta), [], doc.path
    name = meta.get("name") if skill else None
    if "id" not in meta:
        if isinstance(name, str) and name:
            meta["id"] = id_from_text(name)
            at = doc.value_at("name")
            found.append(rules.ID_DERIVED.at(path, at.line, at.col, variant="skill", id=meta["id"]))
        else:
            meta["id"] = id_from_path(path)
            found.append(rules.ID_DERIVED.at(path, 1, variant="path", id=meta["id"]))
    if "title" not in meta:
        title, variant, line = _title(doc, config)
        meta["title"] = title
        found.append(rules.TITLE_DERIVED.at(path, line, variant=variant, title=title))
    if "summary" not in meta:
        summary, variant, line, cut = _summary(doc, meta, config.limits.summary_chars, skill)
        meta["summary"] = summary
        found.append(rules.SUMMARY_DERIVED.at(path, line, variant=variant, cut=cut))
    if "kind" not in meta:
        if skill:
            meta["kind"] = "skill"
            found.append(rules.KIND_DERIVED.at(path, 1, variant="skill"))
        else:
            adoption = config.adopt or Adoption()
            kind, pattern = adoption.kind_of(path)
            meta["kind"] = kind
            variant = "pattern" if pattern else "default"
            found.append(
                rules.KIND_DERIVED.at(path, 1, variant=variant, kind=kind, pattern=pattern)
            )
    return dataclasses.replace(doc, meta=meta), found


def exported_fields(meta: dict[str, Any]) -> dict[str, Any]:
    """A skill's fields, with those `handbook export skills` kept in its `metadata`
    (``handbook-<field>``, JSON where ``handbook-json-fields`` says) back in their
    places, so that a doc exported and read back is the doc it was. The `name` export
    gave the skill is not one of its fields; its description is its summary unless a
    ``handbook-summary`` says otherwise."""
    own = meta.get("metadata")
    if not isinstance(own, dict) or not isinstance(own.get(PREFIX + "id"), str):
        return dict(meta)
    try:
        as_json = set(load_untrusted(str(own.get(JSON_FIELDS_KEY, "[]"))))
        kept = {
            key.removeprefix(PREFIX): load_untrusted(v)
            if key.removeprefix(PREFIX) in as_json
            else v
            for key, v in own.items()
            if key.startswith(PREFIX) and key != JSON_FIELDS_KEY
        }
    except (TypeError, ValueError):  # not what export writes: left as the author wrote it
        return dict(meta)
    fields = {k: v for k, v in meta.items() if k not in ("name", "metadata")}
    if "summary" not in kept and "description" in fields:
        kept["summary"] = fields.pop("description")
    others = {k: v for k, v in own.items() if not k.startswith(PREFIX)}
    return {**fields, **kept, **({"metadata": others} if others else {})}


class IdLedger:
    """The ids given so far, docs arriving in path order: a doc whose derived id an
    earlier doc already has is served under `<id>-2`, `<id>-3` …, with a warning. (Ids
    must be settled as docs arrive: the search index is built from them meanwhile.)"""

    def __init__(self) -> None:
        self.taken: dict[tuple[str, str], str] = {}

    def admit(self, doc: Doc) -> tuple[Doc, list[Finding]]:
        lang = str(doc.meta.get("lang") or "")
        key, found = (doc.id, lang), []
        if key in self.taken and "id" not in doc.fields and doc.id:
            n = 2
            while (f"{doc.id}-{n}", lang) in self.taken:
                n += 1
            served = f"{doc.id}-{n}"
            first = self.taken[key]
            found.append(
                rules.ID_DERIVED_TWICE.at(doc.path, 1, id=doc.id, first=first, served=served)
            )
            doc = dataclasses.replace(doc, meta={**doc.meta, "id": served})
            key = (served, lang)
        self.taken.setdefault(key, doc.path)
        return doc, found


def id_from_path(path: str) -> str:
    """`user-guide/Install Guide.md` → `user-guide.install-guide`; a folder's index page
    names the folder; the root one is `index`."""
    parts = path.removesuffix(".md").split("/")
    if parts[-1].lower() in FOLDER_PAGES:
        parts = parts[:-1]
    return ".".join(_segment(p) for p in parts) if parts else "index"


def id_from_text(text: str) -> str:
    """A name written for people or another tool, as one id segment."""
    return _segment(text)


def _segment(text: str) -> str:
    segment = _NOT_ID.sub("-", text.lower()).strip("-_")
    return re.sub(r"-{2,}", "-", segment) or "page"


def _title(doc: Doc, config: Config) -> tuple[str, str, int]:
    heading = next((h for h in doc.headings if h.level == 1), None)
    if heading is not None and heading.title.strip():
        return heading.title.strip(), "heading", heading.line
    if doc.path in config.nav_titles:
        return config.nav_titles[doc.path], "nav", 1
    stem = posixpath.basename(doc.path).removesuffix(".md")
    if stem.lower() in FOLDER_PAGES and "/" in doc.path:
        stem = posixpath.basename(posixpath.dirname(doc.path))
    return re.sub(r"[-_]+", " ", stem).strip().capitalize() or "Untitled", "file", 1


def _summary(
    doc: Doc, meta: dict[str, object], limit: int, skill: bool
) -> tuple[str, str, int, str]:
    """(summary, rule variant, line, note on how it was cut)."""
    description = meta.get("description")
    if isinstance(description, str) and description.strip():
        text = " ".join(description.split())
        if skill:  # the Skills spec's description says what and when: its first sentence leads
            text = first_sentence(text)
        summary = shorten(text, limit)
        cut = "" if summary == " ".join(description.split()) else ", shortened"
        return summary, "description", doc.value_at("description").line, cut
    for line, paragraph in _paragraphs(doc):
        summary = shorten(paragraph, limit)
        return summary, "paragraph", line, "" if summary == paragraph else ", shortened"
    return str(meta["title"]), "title", 1, ""


def _paragraphs(doc: Doc) -> Iterator[tuple[int, str]]:
    """The body's paragraphs as the plain text a reader sees (`inline_text`: references
    resolved, no markup), with their file lines; ones that say nothing (badges, images, a
    lone link) and ones that are not prose (an admonition, what a pymdownx block holds, a
    footnote's text, a template tag) skipped."""
    env: dict[str, Any] = {}
    tokens = _blocks.parse(doc.body, env)  # the block parse collects the doc's references
    depth = 0  # how many pymdownx blocks (`/// note` … `///`) the paragraph is in
    for n, token in enumerate(tokens):
        if token.type == "paragraph_open" and token.map is not None and n + 1 < len(tokens):
            content, inside = tokens[n + 1].content, depth > 0
            for line in content.split("\n"):
                fence = line.strip()
                if fence.startswith("///"):
                    depth = max(depth + (1 if fence.strip("/") else -1), 0)
            if inside or _NOT_PROSE.match(content):
                continue
            text = inline_text(content, env)
            if len(re.findall(r"\w+", text)) >= 3:
                yield doc.body_line + token.map[0], text


def first_sentence(text: str) -> str:
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text


def shorten(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters; else cut after its last whole sentence
    that fits, else at a word, ending with an ellipsis."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    if ends and ends[-1] >= limit // 3:
        return window[: ends[-1]]
    cut = window[: limit - 1].rstrip()
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 3 else cut).rstrip(" ,;:") + "…"
