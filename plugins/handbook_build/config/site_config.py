"""Reading a site's configuration without its site generator: its settings, the options
of its `handbook` entry, and the place of every key, so that `config` reports a problem
at the line and column where it is written.

Where the entry is, by the file `find` chooses in a folder (first found):

- ``handbook.yml``: the entry on its own, for a site whose generator has no plugins
  (Zensical) or no configuration at all; its `site` key names the site's own
  configuration, which gives `docs_dir`, the nav and the Markdown extensions;
- ``mkdocs.yml`` (and ``zensical.yml``, which Zensical reads in the same format): the
  `handbook` entry under `plugins`, or a top-level `handbook` key;
- ``zensical.toml``: ``[project]`` holds the settings, the entry is
  ``[project.plugins.handbook]`` (or a top-level ``[handbook]`` table);
- a folder of Agent Skills (``SKILL.md`` files) and nothing else: a library named for the
  folder, version 0.1.0, whose docs are its skills.

YAML configurations use MkDocs' own tags (``!ENV``, ``!!python/name:…``); they are read
as opaque values, and nothing a tag names is ever imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from .. import rules
from ..findings import Finding

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
    site: Path | None = None
    """The site generator's own configuration file, whose settings these are."""
    site_places: dict[str, Place] | None = None
    """Its top-level keys' places (`setting_places` when it is this file)."""


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


CANDIDATES = ("handbook.yml", "mkdocs.yml", "zensical.yml", "zensical.toml")
"""The configuration files `find` looks for in a folder, in this order."""


def find(path: Path) -> Path:
    """The configuration file to read for `path`: `path` itself when it is a file (or
    names none that exists, for the error to say so), else the first of CANDIDATES in
    the folder `path` (or beside the missing file it names), else the folder itself when
    it holds Agent Skills."""
    folder = path if path.is_dir() else path.parent
    if path.is_file():
        return path
    for name in CANDIDATES:
        if (folder / name).is_file():
            return folder / name
    if next(folder.rglob("SKILL.md"), None) is not None:
        return folder
    return path if not path.is_dir() else path / "mkdocs.yml"


def read(path: Path, shown: str, entry_optional: bool = False) -> Entry | Finding:
    """The `handbook` entry that the file (or skills folder) at `path` gives, or the
    finding that says why there is none; `shown` is the path as findings print it. With
    `entry_optional`, a site configuration without an entry gives its settings and no
    options."""
    if path.is_dir():
        return _skills_folder(path)
    reader = _toml if path.suffix == ".toml" else _yaml
    entry = reader(path, shown, entry_optional)
    if isinstance(entry, Entry) and path.name == "handbook.yml":
        return _standalone(entry, path, shown)
    if isinstance(entry, Entry):
        return replace(entry, site=path, site_places=entry.setting_places)
    return entry


def site_dir(folder: Path) -> Path | None:
    """Where the site configured in `folder` is built: its `site_dir` (MkDocs' default
    `site`) beside the configuration; None when `folder` has no site configuration that
    reads. `handbook serve` serves the site from there."""
    chosen = find(folder)
    if not chosen.is_file():
        return None
    entry = read(chosen, str(chosen), entry_optional=True)
    if isinstance(entry, Finding):
        return None
    return chosen.parent / str(entry.settings.get("site_dir", "site"))


def _yaml(path: Path, shown: str, entry_optional: bool = False) -> Entry | Finding:
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
    if path.name == "handbook.yml":  # the whole file is the entry
        return Entry(data, dict(data), (1, 1), _key_places(root), _key_places(root))
    if entry is None and isinstance(data.get("handbook"), dict):  # a top-level entry
        return Entry(data, data["handbook"], (1, 1), {}, _key_places(root))
    if entry is None:
        if entry_optional:
            return Entry(data, {}, (1, 1), {}, _key_places(root))
        return invalid.at(shown, 1, variant="no_entry")
    name, options_node = entry
    return Entry(data, options, _place(name), _key_places(options_node), _key_places(root))


def _standalone(entry: Entry, path: Path, shown: str) -> Entry | Finding:
    """`handbook.yml`: its `site` key names the site configuration whose settings count
    (docs_dir, nav, Markdown extensions); its own `docs_dir` and `site_name` otherwise."""
    options = dict(entry.options)
    site = options.pop("site", None)
    settings = {k: options.pop(k) for k in SITE_KEYS if k in options}
    target, places = None, None
    if site is not None:
        target = path.parent / str(site)
        reader = _toml if target.suffix == ".toml" else _yaml
        read_site = reader(target, str(site), entry_optional=True)
        if isinstance(read_site, Finding):
            return read_site
        own = dict(read_site.settings)
        # MkDocs reads docs_dir beside its own file, wherever handbook.yml is.
        own["docs_dir"] = str((target.parent / str(own.get("docs_dir", "docs"))).resolve())
        settings = {**own, **settings}
        places = read_site.setting_places
    return Entry(
        settings, options, entry.where, entry.option_places, entry.setting_places, target, places
    )


SITE_KEYS = (
    "docs_dir",
    "site_name",
    "site_description",
    "site_url",
    "site_dir",
    "nav",
    "use_directory_urls",
)
"""Site settings a standalone `handbook.yml` may give itself when it names no site."""


def _toml(path: Path, shown: str, entry_optional: bool = False) -> Entry | Finding:
    import tomllib

    invalid = rules.CONFIG_INVALID
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return invalid.at(shown, 1, variant="no_file", path=shown)
    except (OSError, UnicodeDecodeError) as exc:
        return invalid.at(shown, 1, variant="unreadable", error=exc)
    except tomllib.TOMLDecodeError as exc:
        # The place is only in the message before Python 3.14 (which adds attributes).
        at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", str(exc))
        line, col = (int(at[1]), int(at[2])) if at else (1, 1)
        problem = str(exc)[: at.start()] if at else str(exc)
        return invalid.at(shown, line, col, variant="toml", problem=problem)
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    settings = dict(project)
    extensions = project.get("markdown_extensions")
    if isinstance(extensions, dict):  # TOML tables, name -> options: MkDocs' list form
        settings["markdown_extensions"] = [{name: opts} for name, opts in _extensions(extensions)]
    plugins = project.get("plugins")
    options = (plugins if isinstance(plugins, dict) else {}).get("handbook", data.get("handbook"))
    if options is None:
        if entry_optional:
            return Entry(settings, {}, (1, 1), {}, {})
        return invalid.at(shown, 1, variant="no_table")
    return Entry(settings, options, (1, 1), {}, {})


def _extensions(tables: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Extension name -> options from TOML's tables, where a dotted name is nested:
    `[project.markdown_extensions.pymdownx.snippets]` is `pymdownx` -> `snippets` -> its
    options. A table that holds only non-empty tables is a name's part, not options."""
    out: list[tuple[str, Any]] = []
    for key, value in tables.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            out += _extensions(value, f"{name}.")
        else:
            out.append((name, value or {}))
    return out


def _skills_folder(folder: Path) -> Entry:
    """A folder of Agent Skills and no configuration: a library of its skills."""
    name = re.sub(r"[^a-z0-9_-]+", "-", folder.resolve().name.lower()).strip("-_") or "skills"
    options = {
        "library": name,
        "version": "0.1.0",
        "layout": "skills",
        "adopt": {"default_kind": "skill"},
    }
    return Entry({"docs_dir": ".", "site_name": folder.resolve().name}, options, (1, 1), {}, {})


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
