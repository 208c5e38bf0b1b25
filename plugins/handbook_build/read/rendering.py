"""A page's markdown as the site makes it: the site's own MkDocs plugins run over it, its
include extensions expand it, and the text made at render time takes the place of the
blocks that make it. The one build-side module besides `mkdocs_plugin` that imports
MkDocs, and lazily: a site without plugins never loads it.

`mkdocs build` hands each page's markdown to the plugins' `on_page_markdown` (the
mkdocs-include-markdown plugin with the tags its configuration names, mkdocs-macros'
Jinja), then renders it with the configured Markdown extensions. Here MkDocs' own
machinery does the same from the site's configuration, once per build in each process
that parses docs (`Renderer`): MkDocs validates the configuration, the plugins'
`on_startup`, `on_config`, `on_pre_build`, `on_files` and `on_nav` run as in a build,
then each page gets `on_pre_page` and `on_page_markdown`. Only the plugins the
configuration enables run, never `handbook` itself.

What is not as in a build is reported, never silent:

- a plugin or Markdown extension that is not installed (or refuses its options) is left
  out: HB512 at the configuration, and at each line only it would have changed;
- inventories (mkdocstrings' `import`/`inventories`) are not fetched, as a build is
  offline: HB513 (cross-references to them are plain text);
- a plugin that raises on a page leaves the whole page as written, HB512 at its first
  line: nothing half-made reaches agents.

Text made at render time (`generated`): each block is rendered alone with the site's
Markdown extensions (with those the plugins added: mkdocstrings' autodoc), and its HTML
as markdown replaces it. A block that raises or logs an error keeps its lines (HB512).

Plugins and scripts run in the site's folder, where `mkdocs build` runs (markdown-exec's
scripts open files relative to it). What they log is kept out of MkDocs' log (a
`--strict` build counts its warnings) and out of Handbook's output.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import rules
from ..findings import Finding
from . import generated
from .generated import Kinds, extension_entries, plugin_entries
from .quiet import said

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

IDLE = frozenset({"handbook", "search"})
"""Plugins that never change a page's markdown: a site with no others needs no MkDocs."""
FETCHED = ("import", "inventories")
"""mkdocstrings handler options naming inventories to download."""
TAKES_OBJECTS = frozenset({"format", "validator", "emoji_index", "emoji_generator"})
"""Options that Zensical's TOML gives as dotted names, where MkDocs' YAML has objects."""


@dataclass(frozen=True)
class Site:
    """The site generator's configuration, as Handbook read it."""

    path: Path
    """The file: mkdocs.yml, zensical.yml or zensical.toml."""
    settings: Mapping[str, Any]
    """Its settings in MkDocs' form (a TOML file's `[project]`; YAML tags left opaque)."""
    places: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Top-level key -> its line and column (YAML only)."""

    @property
    def shown(self) -> str:
        return self.path.name

    def at(self, key: str) -> tuple[int, int]:
        return self.places.get(key, (1, 1))

    @property
    def plugins(self) -> set[str]:
        return set(plugin_entries(self.settings.get("plugins"))) - IDLE

    @property
    def kinds(self) -> Kinds:
        extensions = dict(extension_entries(self.settings.get("markdown_extensions")))
        return generated.kinds_of(self.plugins, extensions)


def wanted(site: Site | None) -> bool:
    """Whether pages need the site's machinery: plugins beyond `IDLE`, hooks, or
    extensions that make text at render time."""
    return site is not None and bool(site.plugins or site.settings.get("hooks") or site.kinds)


class Machinery:
    """The site's MkDocs configuration, its plugins past `on_nav`, and its files."""

    def __init__(self, site: Site, findings: list[Finding]) -> None:
        from mkdocs.config.defaults import MkDocsConfig
        from mkdocs.structure.files import get_files
        from mkdocs.structure.nav import get_navigation

        self.missing: dict[str, str] = {}
        """Plugins the configuration enables that cannot run -> why."""
        config = MkDocsConfig(config_file_path=str(site.path))
        config.load_dict(_runnable(_raw(site, config), site, findings, self.missing))
        errors, _ = config.validate()
        if errors:
            raise ValueError("; ".join(f"{key}: {error}" for key, error in errors))
        config.plugins.on_startup(command="build", dirty=False)
        config = config.plugins.on_config(config)
        config.plugins.on_pre_build(config=config)
        files = get_files(config)
        files = config.plugins.on_files(files, config=config)
        config.plugins.on_nav(get_navigation(files, config), config=config, files=files)
        self.config: MkDocsConfig = config
        self.files: Files = files
        mdx = {name: (config.mdx_configs or {}).get(name, {}) for name in _names(config)}
        self.kinds = generated.kinds_of(set(config.plugins), mdx)
        self.names = {id(plugin): name for name, plugin in config.plugins.items()}

    def page_markdown(self, path: str, body: str) -> tuple[str, str]:
        """`body` (the page at `path`) after the plugins' `on_pre_page` and
        `on_page_markdown`, and "" ; or `body` and what the plugin that raised said."""
        from mkdocs.structure.files import File
        from mkdocs.structure.pages import Page
        from mkdocs.utils.meta import get_data

        config, files = self.config, self.files
        file = files.get_file_from_path(path) or File(
            path, config.docs_dir, config.site_dir, config.use_directory_urls
        )
        page = file.page or Page(None, file, config)
        config._current_page = page  # as MkDocs sets it (macros and !relative read it)
        markdown = body
        try:
            for event in config.plugins.events["pre_page"]:
                page = event(page, config=config, files=files) or page
            page.markdown, page.meta = body, get_data(file.content_string)[1]
            for event in config.plugins.events["page_markdown"]:
                markdown = self._run(event, markdown, page)
        except _PluginFailed as failed:
            return body, str(failed)
        except Exception as exc:  # reading the page (a file that changed meanwhile)
            return body, said(exc)
        return markdown, ""

    def _run(self, event: Callable[..., Any], markdown: str, page: Any) -> str:
        try:
            made = event(markdown, page=page, config=self.config, files=self.files)
        except Exception as exc:  # a plugin may raise anything
            owner = getattr(event, "__self__", event)
            name = self.names.get(id(owner), getattr(owner, "__name__", type(owner).__name__))
            raise _PluginFailed(f"the plugin {name} raised {said(exc)}") from exc
        return markdown if made is None else str(made)

    def render(self, text: str) -> tuple[str, str]:
        """`text` as the site renders it, and ""; or "" and what the extensions raised."""
        import markdown

        try:
            md = markdown.Markdown(
                extensions=self.config.markdown_extensions,
                extension_configs=self.config.mdx_configs or {},
            )
            return md.convert(text), ""
        except Exception as exc:  # mkdocstrings raises when it cannot collect an identifier
            return "", said(exc)


class _PluginFailed(Exception):
    pass


def _names(config: MkDocsConfig) -> list[str]:
    return [e for e in config.markdown_extensions if isinstance(e, str)]


def _raw(site: Site, config: MkDocsConfig) -> dict[str, Any]:
    """The configuration as MkDocs reads it: a YAML file by MkDocs' own loader (tags,
    `INHERIT`, `!ENV`); Zensical's TOML from the MkDocs form Handbook derived."""
    if site.path.suffix != ".toml":
        from mkdocs.utils.yaml import get_yaml_loader, yaml_load

        with site.path.open("rb") as fd:
            return dict(yaml_load(fd, get_yaml_loader(config=config)))
    raw = {k: v for k, v in site.settings.items() if k != "theme"}  # Zensical's own theme
    return raw


def _runnable(
    raw: dict[str, Any], site: Site, findings: list[Finding], missing: dict[str, str]
) -> dict[str, Any]:
    """`raw` with what cannot run here left out, each omission a finding: `handbook`
    itself, plugins not installed, extensions that fail to load, inventories."""
    installed = {ep.name for ep in entry_points(group="mkdocs.plugins")}
    kept: list[dict[str, Any]] = []
    for name, options in plugin_entries(raw.get("plugins")).items():
        if name == "handbook":
            continue
        if _resolved(name, raw.get("theme"), installed) is None:
            missing[name] = "it is not installed"
            line, col = site.at("plugins")
            findings.append(
                rules.RENDER_FAILED.at(site.shown, line, col, variant="missing_plugin", plugin=name)
            )
            continue
        if name == "mkdocstrings":
            options = _offline(options, site, findings)
        kept.append({name: options})
    extensions = []
    for name, options in extension_entries(raw.get("markdown_extensions")):
        error = _loads(name, options, from_toml=site.path.suffix == ".toml")
        if isinstance(error, str):
            line, col = site.at("markdown_extensions")
            findings.append(
                rules.RENDER_FAILED.at(
                    site.shown, line, col, variant="extension", extension=name, error=error
                )
            )
        else:
            extensions.append({name: error})
    # `watch` is for `mkdocs serve` alone, and names folders a docs-only copy lacks
    rest = {k: v for k, v in raw.items() if k != "watch"}
    return {**rest, "plugins": kept, "markdown_extensions": extensions}


def _resolved(name: str, theme: Any, installed: set[str]) -> str | None:
    """The installed plugin `name` stands for, found as MkDocs finds it: a name without a
    namespace is first tried under the theme's (`blog` is `material/blog` on Material),
    and a leading `/` asks for the name as written; None when nothing is installed."""
    if "/" in name:
        name = name.removeprefix("/")
    else:
        theme_name = theme.get("name") if isinstance(theme, dict) else theme
        if isinstance(theme_name, str) and f"{theme_name}/{name}" in installed:
            return f"{theme_name}/{name}"
    return name if name in installed else None


def _offline(options: Any, site: Site, findings: list[Finding]) -> Any:
    """mkdocstrings' options without the inventories its handlers would download."""
    if not isinstance(options, dict) or not isinstance(options.get("handlers"), dict):
        return options
    handlers, dropped = {}, 0
    for name, handler in options["handlers"].items():
        if isinstance(handler, dict):
            dropped += sum(len(handler.get(k) or ()) for k in FETCHED)
            handler = {k: v for k, v in handler.items() if k not in FETCHED}
        handlers[name] = handler
    if dropped:
        line, col = site.at("plugins")
        findings.append(rules.INVENTORIES_SKIPPED.at(site.shown, line, col, count=dropped))
    return {**options, "handlers": handlers}


def _loads(name: str, options: Any, *, from_toml: bool) -> Any:
    """The extension's options as MkDocs will pass them (dotted names in TOML made the
    objects they name), or, when it cannot load with them, why (a string)."""
    import markdown

    try:
        resolved = _objects(options) if from_toml else options
        markdown.Markdown(extensions=[name], extension_configs={name: resolved or {}})
    except Exception as exc:  # ImportError when it (or a name it is given) is missing
        return said(exc)
    return resolved


_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


def _objects(value: Any, key: str = "") -> Any:
    """`value` with the dotted names under `TAKES_OBJECTS` keys imported."""
    if isinstance(value, dict):
        return {k: _objects(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_objects(v, key) for v in value]
    if key in TAKES_OBJECTS and isinstance(value, str) and _DOTTED.match(value):
        module, _, attribute = value.rpartition(".")
        return getattr(importlib.import_module(module), attribute)
    return value
