"""The Agent Skills specification's rules, for every `SKILL.md` doc.

A skill is read by other agents' tools as well as by Handbook, so its frontmatter is held
to the specification (agentskills.io): `name` is 1-64 characters of `a-z`, `0-9` and
single inner hyphens and equals its folder's name; `description` is 1-1,024 characters;
`compatibility`, when given, 1-500; `metadata` maps text to text; `allowed-tools`
(experimental) is one line of space-separated names; and the body stays under about 500
lines and 5,000 tokens, because an agent loads all of it when the skill is chosen.

The rules apply to a `SKILL.md` in a library of skills (`layout: skills`) and to one that
gives a `name` or a `description`: a Handbook folder doc is also written as `SKILL.md`
(with its attached files), and it is not held to a format it does not claim. Handbook's
own fields (`id`, `kind`, `verified` …) may sit beside the specification's: other tools
ignore what they do not know.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import Any

from .. import rules
from ..config.settings import Config
from ..findings import Finding
from ..read.parse import Doc
from .adopt import id_from_text, is_skill

NAME_CHARS = 64
DESCRIPTION_CHARS = 1024
COMPATIBILITY_CHARS = 500
BODY_LINES = 500
BODY_TOKENS = 5000
CHARS_PER_TOKEN = 4
"""The usual estimate for English text; the specification names no tokenizer."""

SPEC_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
"""The frontmatter fields the specification defines."""

_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def claims_spec(doc: Doc, config: Config) -> bool:
    """Whether the doc is an Agent Skill, held to the specification."""
    return is_skill(doc) and (
        config.layout == "skills" or "name" in doc.fields or "description" in doc.fields
    )


def check(doc: Doc, config: Config) -> Iterator[Finding]:
    """The findings about one doc, if it is an Agent Skill."""
    if not claims_spec(doc, config):
        return
    yield from _name(doc)
    yield from _text(doc, "description", rules.SKILL_DESCRIPTION, DESCRIPTION_CHARS, True)
    yield from _text(doc, "compatibility", rules.SKILL_COMPATIBILITY, COMPATIBILITY_CHARS, False)
    yield from _metadata(doc)
    yield from _allowed_tools(doc)
    lines, tokens = len(doc.body.splitlines()), len(doc.body) // CHARS_PER_TOKEN
    if lines > BODY_LINES or tokens > BODY_TOKENS:
        yield rules.SKILL_BODY_LONG.at(doc.path, doc.body_line, lines=lines, tokens=tokens)


def _name(doc: Doc) -> Iterator[Finding]:
    rule, folder = rules.SKILL_NAME, posixpath.basename(posixpath.dirname(doc.path))
    name, at = doc.meta.get("name"), doc.value_at("name")
    if name is None:
        yield rule.at(doc.path, 1, variant="missing", folder=folder or "<the folder>")
    elif not isinstance(name, str):
        yield rule.at(doc.path, at.line, at.col, variant="not_text", type=_type(name))
    elif len(name) > NAME_CHARS:
        yield rule.at(doc.path, at.line, at.col, variant="long", chars=len(name))
    elif not _NAME.fullmatch(name):
        suggest = id_from_text(name).replace("_", "-")[:NAME_CHARS].strip("-")
        yield rule.at(doc.path, at.line, at.col, variant="grammar", name=name, suggest=suggest)
    elif folder and name != folder:
        yield rule.at(doc.path, at.line, at.col, variant="folder", name=name, folder=folder)


def _text(doc: Doc, name: str, rule: rules.Rule, limit: int, required: bool) -> Iterator[Finding]:
    """A text field of at most `limit` characters (`description`, `compatibility`)."""
    at, value = doc.value_at(name), doc.meta.get(name)
    if value is None:
        if required:
            yield rule.at(doc.path, at.line, at.col, variant="missing")
    elif not isinstance(value, str):
        yield rule.at(doc.path, at.line, at.col, variant="not_text", type=_type(value))
    elif not value.strip():
        yield rule.at(doc.path, at.line, at.col, variant="empty")
    elif len(value) > limit:
        yield rule.at(doc.path, at.line, at.col, variant="long", chars=len(value))


def _metadata(doc: Doc) -> Iterator[Finding]:
    if "metadata" not in doc.meta:
        return
    rule, at = rules.SKILL_METADATA, doc.value_at("metadata")
    value = doc.meta["metadata"]
    if not isinstance(value, dict):
        yield rule.at(doc.path, at.line, at.col, variant="not_map", type=_type(value))
        return
    for key, item in value.items():  # keys are text: the frontmatter reader sees to it
        if not isinstance(item, str):
            yield rule.at(doc.path, at.line, at.col, variant="value", key=key, type=_type(item))


def _allowed_tools(doc: Doc) -> Iterator[Finding]:
    value = doc.meta.get("allowed-tools")
    if value is not None and (not isinstance(value, str) or "\n" in value.strip()):
        at = doc.value_at("allowed-tools")
        yield rules.SKILL_ALLOWED_TOOLS.at(doc.path, at.line, at.col, type=_type(value))


def _type(value: Any) -> str:
    """How YAML read a value, in the words a skill's author would use."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, str):
        return "several lines"
    return type(value).__name__
