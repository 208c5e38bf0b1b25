"""Reading `mkdocs.yml` without MkDocs: its settings, the options of its `handbook`
plugin entry, and the place of every key, so that `config` reports a problem at the
line and column where it is written.

``mkdocs.yml`` files use MkDocs' own YAML tags (``!ENV``, ``!!python/name:…``); they are
read as opaque values here, since Handbook needs none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import rules
from .findings import Finding

Place = tuple[int, int]
"""1-based line and column."""


@dataclass(frozen=True)
class Entry:
    settings: dict[str, Any]
    """The whole file."""
    options: Any
    """The `handbook` entry's options: a mapping when well formed ({} for a bare
    ``- handbook``)."""
    where: Place
    """Where `handbook` is written."""
    option_places: dict[str, Place]
    setting_places: dict[str, Place]


class _Opaque:
    """A value behind a tag Handbook does not interpret (``!ENV``, ``!!python/name``)."""

    def __init__(self, tag: str, value: Any) -> None:
        self.tag, self.value = tag, value

    def __repr__(self) -> str:
        return f"{self.tag} {self.value!r}"


class _MkDocsLoader(yaml.SafeLoader):
    pass


def _opaque(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Opaque:
    if isinstance(node, yaml.ScalarNode):
        return _Opaque(node.tag, loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return _Opaque(node.tag, loader.construct_sequence(node))
    return _Opaque(node.tag, loader.construct_mapping(node))  # type: ignore[arg-type]


_MkDocsLoader.add_multi_constructor("!", _opaque)
_MkDocsLoader.add_multi_constructor("tag:yaml.org,2002:python/", _opaque)


def read(path: Path, shown: str) -> Entry | Finding:
    """The file's `handbook` entry, or the finding that says why there is none; `shown`
    is the path as findings print it."""
    invalid = rules.CONFIG_INVALID
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return invalid.at(shown, 1, variant="no_file", path=shown)
    except (OSError, UnicodeDecodeError) as exc:
        return invalid.at(shown, 1, variant="unreadable", error=exc)
    loader = _MkDocsLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
        entry = _find_plugin_entry(root) if root is not None else None
        options = {}
        if entry is not None and entry[1] is not None:
            options = loader.construct_object(entry[1], deep=True)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = getattr(exc, "problem", None) or str(exc)
        return invalid.at(shown, line, col, variant="yaml", problem=problem)
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        return invalid.at(shown, 1, variant="not_mapping")
    if entry is None:
        return invalid.at(shown, 1, variant="no_entry")
    name, options_node = entry
    return Entry(data, options, _place(name), _key_places(options_node), _key_places(root))


def _place(node: yaml.Node) -> Place:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _key_places(node: yaml.Node | None) -> dict[str, Place]:
    """Top-level key -> its place, for a mapping node."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): _place(k) for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def _find_plugin_entry(root: yaml.Node) -> tuple[yaml.Node, yaml.Node | None] | None:
    """The `handbook` entry's name node and options node (None for a bare `- handbook`)."""
    if not isinstance(root, yaml.MappingNode):
        return None
    for key, value in root.value:
        if getattr(key, "value", None) != "plugins":
            continue
        entries: list[tuple[yaml.Node, yaml.Node | None]] = []
        if isinstance(value, yaml.SequenceNode):
            for item in value.value:
                if isinstance(item, yaml.ScalarNode):
                    entries.append((item, None))
                elif isinstance(item, yaml.MappingNode) and len(item.value) == 1:
                    entries.append(item.value[0])
        elif isinstance(value, yaml.MappingNode):
            entries = list(value.value)
        for name, options in entries:
            if getattr(name, "value", None) == "handbook":
                if isinstance(options, yaml.ScalarNode) and options.tag.endswith(":null"):
                    options = None
                return name, options
    return None
