"""YAML frontmatter, read defensively into plain JSON values with a line for every key.

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
  YAML 1.1 words yes/no/on/off, which become booleans, draw a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from .errors import FrontmatterError
from .findings import Finding, finding

MAX_BYTES = 64 * 1024
MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_STR = "tag:yaml.org,2002:str"
_BOOL_WORDS = {"yes", "no", "on", "off"}
_constructor = SafeConstructor()
# libyaml's parser is ~10x faster and resolves tags the same way; pure Python otherwise.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Frontmatter:
    data: dict[str, Any]
    lines: dict[str, int]
    """Top-level key -> 1-based line in the file."""
    body_offset: int
    """Where the body starts in the file's text."""
    body_line: int
    """The 1-based file line of the body's first line."""
    warnings: list[Finding] = field(default_factory=list)


def parse(path: str, text: str) -> Frontmatter:
    """Split off and parse the frontmatter; raise `FrontmatterError` when it is unusable."""
    if not _OPEN.match(text):
        raise FrontmatterError(
            finding(
                path,
                1,
                "HB201",
                "has no frontmatter; start the file with a `---` line, the fields, and a closing `---`",
            )
        )
    start = text.index("\n") + 1
    close = _CLOSE.search(text, start)
    if close is None:
        raise FrontmatterError(
            finding(
                path,
                1,
                "HB202",
                "frontmatter is never closed; add a `---` line after the last field",
            )
        )
    source = text[start : close.start()]
    if len(source) > MAX_BYTES // 4 and len(source.encode()) > MAX_BYTES:
        raise FrontmatterError(
            finding(
                path,
                2,
                "HB207",
                f"frontmatter is {len(source.encode()):,} bytes; the limit is {MAX_BYTES:,}: move long content into the body",
            )
        )
    body_offset = min(close.end() + 1, len(text))
    body_line = text.count("\n", 0, body_offset) + 1
    node = _compose(path, source)
    if not isinstance(node, yaml.MappingNode):
        what = "empty" if node is None else f"a {_kind(node)}"
        raise FrontmatterError(
            finding(
                path, 2, "HB204", f"frontmatter is {what}, not a mapping of fields like `id: ...`"
            )
        )
    reader = _Reader(path)
    data = reader.mapping(node)
    lines = {str(k.value): k.start_mark.line + 2 for k, _ in node.value}
    if reader.errors:
        raise FrontmatterError(*reader.errors)
    return Frontmatter(data, lines, body_offset, body_line, reader.warnings)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "list" if isinstance(node, yaml.SequenceNode) else "single value"


def _compose(path: str, source: str) -> yaml.Node | None:
    """The node tree, after an event scan has ruled out aliases, tags and deep nesting."""
    depth = 0
    try:
        for event in yaml.parse(source, Loader=_Loader):
            line = event.start_mark.line + 2 if event.start_mark else 2
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise FrontmatterError(
                    finding(
                        path,
                        line,
                        "HB205",
                        "frontmatter uses a YAML anchor or alias; write the value out",
                    )
                )
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in (_STR, "!"):
                raise FrontmatterError(
                    finding(
                        path,
                        line,
                        "HB206",
                        f"frontmatter uses the YAML tag {tag}; remove it (quote strings instead)",
                    )
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise FrontmatterError(
                        finding(
                            path,
                            line,
                            "HB207",
                            f"frontmatter is nested deeper than {MAX_DEPTH} levels",
                        )
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.compose(source, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark else 2
        col = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc)
        if "nesting depth" in problem:  # libyaml's own depth guard fired before ours
            raise FrontmatterError(
                finding(
                    path, line, "HB207", f"frontmatter is nested deeper than {MAX_DEPTH} levels"
                )
            ) from None
        raise FrontmatterError(
            finding(path, line, "HB203", f"frontmatter is not valid YAML: {problem}", col=col)
        ) from None


class _Reader:
    """Turns a node tree into JSON values, collecting what it refuses or warns about."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []

    def value(self, node: yaml.Node, name: str) -> Any:
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, name) for item in node.value]
        assert isinstance(node, yaml.ScalarNode)
        return self.scalar(node, name)

    def mapping(self, node: yaml.MappingNode) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.value:
            line, col = key.start_mark.line + 2, key.start_mark.column + 1
            if not isinstance(key, yaml.ScalarNode):
                self.errors.append(
                    finding(
                        self.path,
                        line,
                        "HB208",
                        f"a key is a {_kind(key)}; keys must be strings",
                        col,
                    )
                )
                continue
            if key.tag != _STR:
                self.errors.append(
                    finding(
                        self.path,
                        line,
                        "HB208",
                        f"key {key.value!r} is not a string; quote it",
                        col,
                    )
                )
                continue
            if key.value in out:
                self.errors.append(
                    finding(
                        self.path, line, "HB208", f"key `{key.value}` appears twice; keep one", col
                    )
                )
                continue
            out[key.value] = self.value(value, key.value)
        return out

    def scalar(self, node: yaml.ScalarNode, name: str) -> Any:
        tag, line = node.tag, node.start_mark.line + 2
        if tag == _STR:
            return node.value
        if tag.endswith(":bool"):
            if node.value.lower() in _BOOL_WORDS:
                self.warnings.append(
                    finding(
                        self.path,
                        line,
                        "HB210",
                        f"`{name}: {node.value}` is read as {str(node.value.lower() in ('yes', 'on')).lower()}; write true/false, or quote it for the word",
                    )
                )
            return _constructor.construct_yaml_bool(node)
        if tag.endswith(":int"):
            try:
                number = _constructor.construct_yaml_int(node)
            except ValueError:
                self.errors.append(
                    finding(
                        self.path,
                        line,
                        "HB206",
                        f"`{name}: {node.value}` is not a number YAML can read; quote it",
                    )
                )
                return None
            if abs(number) > MAX_SAFE_INTEGER:
                self.errors.append(
                    finding(
                        self.path,
                        line,
                        "HB211",
                        f"`{name}: {node.value}` is too large for JSON readers to hold exactly; quote it",
                    )
                )
            return number
        if tag.endswith(":null"):
            return None
        if tag.endswith(":timestamp"):
            try:
                return _constructor.construct_yaml_timestamp(node).isoformat()
            except ValueError as exc:  # 2026-02-30: shaped like a date, but none
                self.errors.append(
                    finding(
                        self.path,
                        line,
                        "HB302",
                        f"`{name}: {node.value}` is not a real date ({exc}); fix it or quote it",
                    )
                )
                return None
        if tag.endswith(":float"):
            self.errors.append(
                finding(
                    self.path,
                    line,
                    "HB209",
                    f'`{name}: {node.value}` is read as a float; quote it ("{node.value}") or use an integer',
                )
            )
            return None
        self.errors.append(
            finding(self.path, line, "HB206", f"`{name}` has a value of type {tag}; use a string")
        )
        return None
