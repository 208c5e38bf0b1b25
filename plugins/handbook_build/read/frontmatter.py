"""YAML frontmatter, read defensively into plain JSON values with the place of every key.

The frontmatter becomes catalog metadata that agents filter on, so it must mean the
same thing to every reader. PyYAML's safe loader is still too generous for that:

* anchors and aliases are refused before anything is built — a 300-byte alias bomb
  expands to 300 MB — by scanning parser events, which PyYAML produces iteratively;
* explicit tags are refused (``!!str`` aside), as is nesting beyond `MAX_DEPTH`, which
  also keeps PyYAML's recursive composer far from Python's recursion limit;
* floats are refused: ``version: 1.10`` silently becomes ``1.1``; quoting says what is
  meant;
* integers beyond ±(2^53-1) are refused: JavaScript readers would round them;
* dates become ISO 8601 strings, keys must be strings and may not repeat, and the
  YAML 1.1 words yes/no/on/off, which become booleans, are recorded: the field rules
  warn about them, or report them once as a wrong value where a string is expected.

A refusal of the whole block (no block, bad YAML, aliases, tags, size) raises
`FrontmatterError`. A refused value only drops its field: the other fields are read, so
every finding of the frontmatter is reported in one run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml
from yaml.constructor import SafeConstructor

from .. import rules
from ..errors import FrontmatterError
from ..findings import Finding

MAX_BYTES = 64 * 1024
MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_STR = "tag:yaml.org,2002:str"
_BOOL_WORDS = {"yes", "no", "on", "off"}
_FIRST_LINE = 2
"""The file line of the frontmatter's first line, after the opening `---`."""
_constructor = SafeConstructor()
# libyaml's parser is ~10x faster and resolves tags the same way; pure Python otherwise.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Mark(NamedTuple):
    """A place in the file: 1-based line and column, and the scalar written there."""

    line: int
    col: int
    text: str = ""
    """A scalar as written (`yes` where YAML reads true); "" for a list or mapping."""


class Field(NamedTuple):
    """Where a top-level field is written: its key, its value, the items of a list."""

    key: Mark
    value: Mark
    items: tuple[Mark, ...] = ()


class BoolWord(NamedTuple):
    """A YAML 1.1 word read as a boolean, under the top-level `field`."""

    field: str
    name: str
    """The key it is the value of (the list's key for a list item)."""
    mark: Mark


@dataclass
class Frontmatter:
    data: dict[str, Any]
    """The fields whose values were read; a refused value drops its field."""
    fields: dict[str, Field]
    """Every top-level field written, read or refused."""
    body_offset: int
    """Where the body starts in the file's text."""
    body_line: int
    """The 1-based file line of the body's first line."""
    findings: list[Finding]
    """The refused keys and values."""
    bool_words: list[BoolWord]


def parse(path: str, text: str, optional: bool = False) -> Frontmatter:
    """Split off and parse the frontmatter; raise `FrontmatterError` when it is unusable.
    With `optional` (a site being adopted), a file without one has no fields and is all
    body."""
    if not _OPEN.match(text):
        if optional:
            return Frontmatter({}, {}, 0, 1, [], [])
        raise FrontmatterError(rules.FRONTMATTER_MISSING.at(path, 1))
    start, close = _block(text)
    if close is None:
        raise FrontmatterError(rules.FRONTMATTER_UNCLOSED.at(path, 1))
    source = text[start : close.start()]
    if len(source) > MAX_BYTES // 4 and len(source.encode()) > MAX_BYTES:
        size = len(source.encode())
        raise FrontmatterError(
            rules.FRONTMATTER_TOO_LARGE.at(
                path, _FIRST_LINE, variant="size", size=size, limit=MAX_BYTES
            )
        )
    body_offset = min(close.end() + 1, len(text))
    body_line = text.count("\n", 0, body_offset) + 1
    node = _compose(path, source)
    if not isinstance(node, yaml.MappingNode):
        what = "empty" if node is None else f"a {_kind(node)}"
        mark = _mark(node, source) if node is not None else Mark(_FIRST_LINE, 1)
        raise FrontmatterError(
            rules.FRONTMATTER_NOT_MAPPING.at(path, mark.line, mark.col, what=what)
        )
    reader = _Reader(path, source)
    data, fields = reader.fields(node)
    return Frontmatter(data, fields, body_offset, body_line, reader.errors, reader.bool_words)


def body_offset(text: str) -> int:
    """Where the text after a leading frontmatter block begins, without reading the YAML
    (0 when the text opens no closed block): attached markdown may carry frontmatter
    (an agent's `name` and `description`) that is text to search, never metadata."""
    if not _OPEN.match(text):
        return 0
    _, close = _block(text)
    return 0 if close is None else min(close.end() + 1, len(text))


def _block(text: str) -> tuple[int, re.Match[str] | None]:
    """(where the block's YAML starts, the closing `---` line) of a text opening with `---`."""
    start = text.index("\n") + 1
    return start, _CLOSE.search(text, start)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "list" if isinstance(node, yaml.SequenceNode) else "single value"


def _mark(node: yaml.Node, source: str) -> Mark:
    text = node.value if isinstance(node, yaml.ScalarNode) else ""
    return Mark(*_place(source, node.start_mark), text)


def _place(source: str, mark: Any) -> tuple[int, int]:
    """Line and column in the file of a YAML mark. YAML also breaks lines at NEL, LS and
    PS, which editors and our findings do not, so the place is counted from the mark's
    character index, not taken from its line."""
    if mark is None:
        return _FIRST_LINE, 1
    index = min(mark.index, len(source))
    line_start = source.rfind("\n", 0, index) + 1
    return source.count("\n", 0, index) + _FIRST_LINE, index - line_start + 1


def _compose(path: str, source: str) -> yaml.Node | None:
    """The node tree, after an event scan has ruled out aliases, tags and deep nesting."""
    depth = 0
    try:
        for event in yaml.parse(source, Loader=_Loader):
            line, col = _place(source, event.start_mark)
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise FrontmatterError(rules.YAML_ALIAS.at(path, line, col))
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in (_STR, "!"):
                raise FrontmatterError(rules.YAML_TAG.at(path, line, col, variant="tag", tag=tag))
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise FrontmatterError(_too_deep(path, line, col))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.compose(source, Loader=_Loader)
    except yaml.YAMLError as exc:
        line, col = _place(
            source, getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        )
        problem = getattr(exc, "problem", None) or str(exc)
        if "nesting depth" in problem:  # libyaml's own depth guard fired before ours
            raise FrontmatterError(_too_deep(path, line, col)) from None
        raise FrontmatterError(rules.YAML_SYNTAX.at(path, line, col, problem=problem)) from None


def _too_deep(path: str, line: int, col: int) -> Finding:
    return rules.FRONTMATTER_TOO_LARGE.at(path, line, col, variant="depth", depth=MAX_DEPTH)


class _Reader:
    """Turns a node tree into JSON values, collecting what it refuses (`errors`) and the
    YAML 1.1 words it reads as booleans."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self.errors: list[Finding] = []
        self.bool_words: list[BoolWord] = []
        self.field = ""

    def fields(self, node: yaml.MappingNode) -> tuple[dict[str, Any], dict[str, Field]]:
        """The top level: the values read, and the place of every field written."""
        data: dict[str, Any] = {}
        fields: dict[str, Field] = {}
        for key, value in self._pairs(node):
            self.field = key.value
            refused = len(self.errors)
            read = self.value(value, key.value)
            items = (
                tuple(_mark(item, self.source) for item in value.value)
                if isinstance(value, yaml.SequenceNode)
                else ()
            )
            fields[key.value] = Field(_mark(key, self.source), _mark(value, self.source), items)
            if len(self.errors) == refused:
                data[key.value] = read
        return data, fields

    def value(self, node: yaml.Node, name: str) -> Any:
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, name) for item in node.value]
        assert isinstance(node, yaml.ScalarNode)
        return self.scalar(node, name)

    def mapping(self, node: yaml.MappingNode) -> dict[str, Any]:
        return {key.value: self.value(value, key.value) for key, value in self._pairs(node)}

    def _pairs(self, node: yaml.MappingNode) -> Iterator[tuple[yaml.ScalarNode, yaml.Node]]:
        """The pairs whose keys are strings, each key once; the others are refused."""
        seen: set[str] = set()
        for key, value in node.value:
            line, col, _ = _mark(key, self.source)
            if not isinstance(key, yaml.ScalarNode):
                self._refuse(line, col, rules.YAML_KEY, "collection", kind=_kind(key))
            elif key.tag != _STR:
                self._refuse(line, col, rules.YAML_KEY, "not_string", key=key.value)
            elif key.value in seen:
                self._refuse(line, col, rules.YAML_KEY, "twice", key=key.value)
            else:
                seen.add(key.value)
                yield key, value

    def _refuse(
        self, line: int, col: int, rule: rules.Rule, variant: str = "", **fields: object
    ) -> None:
        self.errors.append(rule.at(self.path, line, col, variant=variant, **fields))

    def scalar(self, node: yaml.ScalarNode, name: str) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        mark = _mark(node, self.source)
        line, col, text = mark
        if tag.endswith(":bool"):
            if text.lower() in _BOOL_WORDS:
                self.bool_words.append(BoolWord(self.field, name, mark))
            return _constructor.construct_yaml_bool(node)
        if tag.endswith(":int"):
            try:
                number = _constructor.construct_yaml_int(node)
            except ValueError:
                self._refuse(line, col, rules.YAML_TAG, "number", name=name, text=text)
                return None
            if abs(number) > MAX_SAFE_INTEGER:
                self._refuse(line, col, rules.YAML_INT_RANGE, name=name, text=text)
            return number
        if tag.endswith(":null"):
            return None
        if tag.endswith(":timestamp"):
            try:
                return _constructor.construct_yaml_timestamp(node).isoformat()
            except ValueError as exc:  # 2026-02-30: shaped like a date, but none
                self._refuse(
                    line, col, rules.FIELD_TYPE, "no_such_date", name=name, text=text, error=exc
                )
                return None
        if tag.endswith(":float"):
            self._refuse(line, col, rules.YAML_FLOAT, name=name, text=text)
            return None
        self._refuse(line, col, rules.YAML_TAG, "type", name=name, tag=tag)
        return None
