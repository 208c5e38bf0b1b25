"""The `handbook` entry of `mkdocs.yml`, read and validated.

The CLI and the MkDocs plugin read the same entry, so a library has one configuration
whichever tool builds it. Its options are written once, in `options.OPTIONS`:
`from_options` checks and converts them into a `Config`.

Every problem is collected (not just the first) and reported as a config-invalid
finding (``HB001``) at the place of the offending key, then raised together as one
`ConfigError`: a configuration error is a usage error (exit 2), never a finding that a
rule level could silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import rules
from ..errors import ConfigError
from ..findings import Finding, Level, Severity
from ..read.includes import Configured, configured
from ..read.rendering import Site
from ..rules import RULES
from . import site_config
from .audiences import AudienceSettings
from .options import (
    BUILTIN_FIELDS,
    OPTIONS,
    VERIFIED_STATES,
    Adoption,
    Limits,
    Problems,
    ReviewSettings,
)
from .pii import Allowed


@dataclass(frozen=True)
class Config:
    """A validated configuration: one attribute per option of `OPTIONS` (with the values
    `from_options` gives them), then what Handbook takes from MkDocs' own settings.
    Paths are absolute."""

    library: str
    version: str
    vocab: Mapping[str, tuple[str, ...]]
    required: tuple[str, ...]
    limits: Limits
    snippet_validators: Mapping[str, str]
    rules: Mapping[str, Level]
    exclude: tuple[str, ...]
    list_fields: tuple[str, ...] | None
    bundle_dir: Path
    signing_key: Path | None
    expires: str | None
    """A UTC time, or a duration after the build such as "90d" or "12h"."""
    default_lang: str | None
    semantic: bool
    """Write sentence embeddings (`vectors.bin`) for the semantic retriever."""
    embedding_cache: Path | bool | None
    """The embedding cache's folder; False: no cache; None: the user's cache folder."""
    pii: Allowed
    """The personal data that is meant to be published (HB404)."""
    lunr_index: str
    """`gzip` (index.json.gz), `json` (index.json) or `none`."""
    layout: str
    """`site` (every page a doc) or `skills` (only SKILL.md folders)."""
    adopt: Adoption | None
    """Set for a site whose pages were not written for Handbook."""
    reviews: ReviewSettings | None
    """Set for a library that declares reviewers (pedigree)."""
    audiences: AudienceSettings | None
    """Set for a library whose docs are not all for everyone."""
    signing: str | None
    """`required` or `optional`; None: as `signing_required` derives it."""
    strict: bool | None
    """Whether `mkdocs build --strict` fails on Handbook's warnings; None: derived."""
    docs_dir: Path
    config_path: Path
    site_dir: Path
    use_directory_urls: bool
    site_name: str
    site_description: str
    site_url: str
    nav_titles: Mapping[str, str] = field(default_factory=dict)
    """Page path -> its title in the site's nav (for titles adoption derives)."""
    includes: tuple[Configured, ...] = ()
    """The include extensions among `markdown_extensions`, with their options."""
    site: Site | None = None
    """The site generator's configuration, whose plugins make pages' text (`rendering`)."""

    @property
    def required_fields(self) -> tuple[str, ...]:
        return BUILTIN_FIELDS + tuple(f for f in self.required if f not in BUILTIN_FIELDS)

    @property
    def summary_fields(self) -> tuple[str, ...]:
        """The app-specific fields shown in list results and page header cards: the
        configured `list_fields`, or else every field with a vocabulary but `kind`."""
        if self.list_fields is not None:
            return self.list_fields
        return tuple(name for name in self.vocab if name != "kind")

    @property
    def levels(self) -> dict[str, Level]:
        """Each rule's level: as configured, else, for an adopted site, every error a
        warning (its content is never refused as it stands), and a protected doc short of
        approvals as `reviews.unapproved` says; else the rule's default."""
        levels: dict[str, Level] = {}
        if self.adopt is not None:
            levels = {
                code: Severity.WARN
                for code, rule in RULES.items()
                if rule.configurable and rule.severity is Severity.ERROR
            }
        if self.reviews is not None:
            outcome = {"error": Severity.ERROR, "omit": Severity.WARN, "flag": Severity.NOTICE}
            levels[rules.APPROVALS_MISSING.code] = outcome[self.reviews.unapproved]
        return {**levels, **self.rules}

    @property
    def signing_required(self) -> bool:
        """Whether a build under `--strict` or in CI refuses to be unsigned: as
        configured, else yes, but not for an adopted site (its builds worked without a
        key before it was adopted)."""
        return self.signing == "required" if self.signing is not None else self.adopt is None

    @property
    def strict_warnings(self) -> bool:
        """Whether a site build under `--strict` fails on Handbook's warnings (and logs
        them as warnings): as configured, else yes, but not for an adopted site."""
        return self.strict if self.strict is not None else self.adopt is None

    @property
    def vocabularies(self) -> dict[str, tuple[str, ...]]:
        """The configured vocabularies plus the fixed one for `verified`."""
        return {**self.vocab, "verified": VERIFIED_STATES}


# -- reading --------------------------------------------------------------------------------


def load_config(path: str | Path = "mkdocs.yml") -> Config:
    """Read and validate the `handbook` entry of the configuration at `path` (a file, or
    a folder where `site_config.find` looks for one)."""
    chosen = site_config.find(Path(path))
    shown = str(chosen) if chosen != Path(path) else str(path)
    entry = site_config.read(chosen, shown)
    if isinstance(entry, Finding):
        raise ConfigError([entry])
    return from_options(
        entry.options,
        config_path=chosen / "handbook.yml" if chosen.is_dir() else chosen,  # a skills folder
        shown=shown,
        places={"": entry.where, **entry.option_places},
        mkdocs=entry.settings,
        mkdocs_places=entry.setting_places,
        site=None
        if entry.site is None
        else Site(entry.site.resolve(), entry.settings, entry.site_places or {}),
    )


def from_options(
    options: Any,
    *,
    config_path: Path,
    shown: str | None = None,
    places: dict[str, tuple[int, int]] | None = None,
    mkdocs: Mapping[str, Any] | None = None,
    mkdocs_places: dict[str, tuple[int, int]] | None = None,
    site: Site | None = None,
) -> Config:
    """Validate the plugin options (a mapping) and the MkDocs settings Handbook needs.
    `places` gives each option key's (line, column), and "" the entry's own."""
    mkdocs = mkdocs or {}
    base = config_path.resolve().parent
    errors = Problems(shown or str(config_path), places or {}, base)
    if not isinstance(options, dict):
        line, col = errors.place("")
        errors.findings.append(
            rules.CONFIG_INVALID.at(errors.shown, line, col, variant="entry_not_mapping")
        )
        raise ConfigError(errors.findings)
    names = [option.name for option in OPTIONS]
    for key in sorted(set(options) - set(names), key=str):
        errors.add(str(key), f"unknown key; expected one of: {', '.join(names)}")
    values: dict[str, Any] = {}
    for option in OPTIONS:
        if option.name in options:
            values[option.name] = option.check(options[option.name], option.name, errors)
        elif option.required:
            errors.add(option.name, "is required")
        elif option.default is None:
            values[option.name] = None
        else:
            values[option.name] = option.check(option.default, option.name, errors)
    docs_dir = base / str(mkdocs.get("docs_dir", "docs"))
    if not docs_dir.is_dir():
        line, col = (mkdocs_places or {}).get("docs_dir", (1, 1))
        errors.findings.append(
            rules.CONFIG_INVALID.at(errors.shown, line, col, variant="docs_dir", path=docs_dir)
        )
    if errors.findings:
        raise ConfigError(errors.findings)
    return Config(
        **values,
        config_path=config_path.resolve(),
        docs_dir=docs_dir.resolve(),
        site_dir=(base / str(mkdocs.get("site_dir", "site"))).resolve(),
        use_directory_urls=bool(mkdocs.get("use_directory_urls", True)),
        site_name=_text(mkdocs.get("site_name")),
        site_description=_text(mkdocs.get("site_description")),
        site_url=_text(mkdocs.get("site_url")),
        nav_titles=nav_titles(mkdocs.get("nav")),
        includes=configured(mkdocs.get("markdown_extensions")),
        site=site,
    )


def nav_titles(nav: Any) -> dict[str, str]:
    """Page path -> its title, from MkDocs' `nav` setting (titled entries only)."""
    out: dict[str, str] = {}
    items = nav if isinstance(nav, list) else []
    for item in items:
        if not isinstance(item, dict):
            continue
        for title, target in item.items():
            if isinstance(target, str) and isinstance(title, str) and target.endswith(".md"):
                out.setdefault(target, title)
            elif isinstance(target, list):
                for path, inner in nav_titles(target).items():
                    out.setdefault(path, inner)
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
