"""The `handbook` entry of `mkdocs.yml`, read and validated.

The CLI and the MkDocs plugin read the same entry, so a library has one configuration
whichever tool builds it. Every problem is collected (not just the first) and reported
as an ``HB001`` finding at the line of the offending key, then raised together as one
`ConfigError`: a configuration error is a usage error (exit 2), never a finding that a
rule level could silence.

``mkdocs.yml`` files use MkDocs' own YAML tags (``!ENV``, ``!!python/name:…``); they are
read as opaque values here, since Handbook needs none of them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from handbook.manifest import utc_seconds

from .errors import ConfigError
from .findings import Finding, finding
from .rules import LEVELS, RULES, Level
from .snippets import load as load_validator

SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
VALIDATOR_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

BUILTIN_FIELDS = ("id", "title", "kind", "summary")
DEFAULT_BUNDLE_DIR = "build/bundle"
LANG = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
"""A language tag, as `lang` and `default_lang` take it: en, de, pt-BR."""
VERIFIED_STATES = ("verified", "field_tested", "unverified")


@dataclass(frozen=True)
class Limits:
    summary_chars: int = 250
    body_warn_chars: int = 12_000
    body_max_chars: int = 16_000
    resource_bytes: int = 5 * 1024 * 1024


@dataclass(frozen=True)
class Config:
    """A validated configuration. Paths are absolute."""

    library: str
    version: str
    docs_dir: Path
    config_path: Path
    site_dir: Path
    use_directory_urls: bool = True
    vocab: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    limits: Limits = Limits()
    snippet_validators: Mapping[str, str] = field(default_factory=dict)
    rules: Mapping[str, Level] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    list_fields: tuple[str, ...] | None = None
    site_name: str = ""
    site_description: str = ""
    site_url: str = ""
    bundle_dir: Path | None = None
    """Where `handbook build` and `mkdocs build` publish the bundle (absolute)."""
    signing_key: Path | None = None
    """A private key file to sign with when no other key is given (absolute)."""
    default_lang: str | None = None
    """The language of docs without a `lang` field, and the one `get` falls back to."""
    expires: str | None = None
    """When readers must stop accepting the bundle: a UTC time, or a duration after the
    build such as "90d" or "12h"."""

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
    def vocabularies(self) -> dict[str, tuple[str, ...]]:
        """The configured vocabularies plus the fixed one for `verified`."""
        return {**self.vocab, "verified": VERIFIED_STATES}


# -- reading mkdocs.yml -------------------------------------------------------------------


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


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    """Top-level key -> 1-based line, for a mapping node."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)
    }


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


def load_config(path: str | Path = "mkdocs.yml") -> Config:
    """Read `path` and validate its `handbook` plugin entry."""
    config_path = Path(path)
    shown = str(path)
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            [finding(shown, 1, "HB001", f"no such file; pass --config PATH or create {shown}")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([finding(shown, 1, "HB001", f"cannot read: {exc}")]) from None
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
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([finding(shown, line, "HB001", f"invalid YAML: {problem}")]) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError([finding(shown, 1, "HB001", "mkdocs.yml must be a mapping of settings")])
    if entry is None:
        raise ConfigError(
            [
                finding(
                    shown,
                    1,
                    "HB001",
                    "no `handbook` entry under `plugins:`; add `- handbook:` with `library` and `version`",
                )
            ]
        )
    name_node, options_node = entry
    return from_options(
        options,
        config_path=config_path,
        shown=shown,
        lines=_key_lines(options_node),
        plugin_line=name_node.start_mark.line + 1,
        mkdocs=data,
        mkdocs_lines=_key_lines(root),
    )


# -- validating the handbook entry -----------------------------------------------------------


class _Errors:
    def __init__(self, shown: str, lines: dict[str, int], default_line: int) -> None:
        self.shown, self.lines, self.default_line = shown, lines, default_line
        self.findings: list[Finding] = []

    def add(self, key: str, message: str) -> None:
        line = self.lines.get(key.split(".")[0], self.default_line)
        self.findings.append(finding(self.shown, line, "HB001", f"handbook.{key}: {message}"))


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _level(value: Any) -> Any:
    """YAML 1.1 reads a bare `off` as False; take it as meant."""
    return "off" if value is False else value


def from_options(
    options: Any,
    *,
    config_path: Path,
    shown: str | None = None,
    lines: dict[str, int] | None = None,
    plugin_line: int = 1,
    mkdocs: Mapping[str, Any] | None = None,
    mkdocs_lines: dict[str, int] | None = None,
) -> Config:
    """Validate the plugin options (a mapping) and the MkDocs settings Handbook needs."""
    mkdocs = mkdocs or {}
    errors = _Errors(shown or str(config_path), lines or {}, plugin_line)
    if not isinstance(options, dict):
        errors.findings.append(
            finding(errors.shown, plugin_line, "HB001", "handbook: must be a mapping of options")
        )
        raise ConfigError(errors.findings)
    for key in sorted(set(options) - set(_CHECKS), key=str):
        errors.add(str(key), f"unknown key; expected one of: {', '.join(_CHECKS)}")
    values: dict[str, Any] = {}
    for key, check in _CHECKS.items():
        if key not in options:
            if key in ("library", "version"):
                errors.add(key, "is required")
            continue
        values[key] = check(options[key], key, errors)
    base = config_path.resolve().parent
    docs_dir = base / str(mkdocs.get("docs_dir", "docs"))
    if not docs_dir.is_dir():
        line = (mkdocs_lines or {}).get("docs_dir", 1)
        message = f"docs_dir: {docs_dir} is not a directory"
        errors.findings.append(finding(errors.shown, line, "HB001", message))
    for lang, ref in values.get("snippet_validators", {}).items():
        if ref == "off":
            continue
        try:
            load_validator(ref, base)
        except ImportError as exc:
            line = errors.lines.get("snippet_validators", plugin_line)
            message = (
                f"handbook.snippet_validators.{lang}: {exc}; install the module or fix the name"
            )
            errors.findings.append(finding(errors.shown, line, "HB002", message))
    if errors.findings:
        raise ConfigError(errors.findings)
    # Absolute, but not resolved: the bundle folder is a symlink that each build swaps.
    for key in ("bundle_dir", "signing_key"):
        if key in values:
            values[key] = Path(os.path.normpath(base / values[key]))
    values.setdefault("bundle_dir", Path(os.path.normpath(base / DEFAULT_BUNDLE_DIR)))
    return Config(
        config_path=config_path.resolve(),
        docs_dir=docs_dir.resolve(),
        site_dir=(base / str(mkdocs.get("site_dir", "site"))).resolve(),
        use_directory_urls=bool(mkdocs.get("use_directory_urls", True)),
        site_name=_text(mkdocs.get("site_name")),
        site_description=_text(mkdocs.get("site_description")),
        site_url=_text(mkdocs.get("site_url")),
        **values,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _check_library(value: Any, key: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        errors.add(
            key,
            f"{value!r} is not a library name (lowercase letters, digits, `_`, `-`, dots between parts)",
        )
    return str(value)


def _check_version(value: Any, key: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not SEMVER.fullmatch(value):
        errors.add(key, f"{value!r} is not a semantic version like 1.2.0 (quote it in YAML)")
    return str(value)


def _check_vocab(value: Any, key: str, errors: _Errors) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        errors.add(key, "must map a field name to its list of allowed values")
        return {}
    vocab = {}
    for name, allowed in value.items():
        if name == "verified":
            errors.add(
                f"{key}.verified", f"is fixed by the doc format: {', '.join(VERIFIED_STATES)}"
            )
        elif not isinstance(name, str) or not _str_list(allowed) or not allowed:
            errors.add(f"{key}.{name}", "must be a non-empty list of strings")
        else:
            vocab[name] = tuple(allowed)
    return vocab


def _check_field_names(value: Any, key: str, errors: _Errors) -> tuple[str, ...]:
    if not _str_list(value):
        errors.add(key, "must be a list of field names")
        return ()
    return tuple(value)


def _check_limits(value: Any, key: str, errors: _Errors) -> Limits:
    if not isinstance(value, dict):
        errors.add(key, f"must be a mapping with keys {', '.join(Limits.__dataclass_fields__)}")
        return Limits()
    known = Limits.__dataclass_fields__
    for name in value:
        if name not in known:
            errors.add(f"{key}.{name}", f"unknown limit; expected one of: {', '.join(known)}")
    for name, number in value.items():
        if name in known and (
            not isinstance(number, int) or isinstance(number, bool) or number < 1
        ):
            errors.add(f"{key}.{name}", f"must be a positive integer, not {number!r}")
    try:
        limits = Limits(**{k: v for k, v in value.items() if k in known and isinstance(v, int)})
    except TypeError:
        return Limits()
    if limits.body_warn_chars > limits.body_max_chars:
        errors.add(f"{key}.body_warn_chars", "must not exceed body_max_chars")
    return limits


def _check_validators(value: Any, key: str, errors: _Errors) -> dict[str, str]:
    if not isinstance(value, dict):
        errors.add(key, 'must map a fence language to "module:function" or "off"')
        return {}
    validators = {}
    for lang, ref in value.items():
        ref = _level(ref)
        if (
            not isinstance(lang, str)
            or not isinstance(ref, str)
            or not (ref == "off" or VALIDATOR_REF.fullmatch(ref))
        ):
            errors.add(f"{key}.{lang}", f'must be "module:function" or "off", not {ref!r}')
        else:
            validators[lang.lower()] = ref
    return validators


def _check_rules(value: Any, key: str, errors: _Errors) -> dict[str, Level]:
    if not isinstance(value, dict):
        errors.add(key, "must map a rule code to error, warn or off")
        return {}
    levels: dict[str, Level] = {}
    for code, level in value.items():
        level = _level(level)
        rule = RULES.get(str(code))
        if rule is None:
            errors.add(f"{key}.{code}", "unknown rule code; see the rule reference in the docs")
        elif not rule.configurable:
            errors.add(f"{key}.{code}", "configuration errors cannot be switched off")
        elif level not in LEVELS:
            errors.add(f"{key}.{code}", f"must be error, warn or off, not {level!r}")
        else:
            levels[rule.code] = level
    return levels


def _check_path(value: Any, key: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        errors.add(key, "must be a path (relative to mkdocs.yml)")
        return ""
    return value


EXPIRES = re.compile(
    r"^(?:[1-9][0-9]{0,5}[dh]|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)$"
)


def _check_expires(value: Any, key: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not EXPIRES.fullmatch(value):
        errors.add(
            key,
            f"{value!r} is not a duration like 90d or 12h, or a UTC time like 2027-01-31T00:00:00Z (quote it)",
        )
        return str(value)
    seconds = utc_seconds(value) if value.endswith("Z") else None
    if value.endswith("Z") and seconds is None:
        errors.add(key, f"{value} is not a real time (check the month, day and hour)")
    elif seconds is not None and seconds <= time.time():
        errors.add(
            key,
            f"{value} is in the past: readers would refuse the bundle; give a later time or a duration",
        )
    return value


def _check_lang(value: Any, key: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not LANG.fullmatch(value):
        errors.add(key, f"{value!r} is not a language tag like en, de or pt-BR")
    return str(value)


def _check_exclude(value: Any, key: str, errors: _Errors) -> tuple[str, ...]:
    if not _str_list(value):
        errors.add(key, "must be a list of glob patterns")
        return ()
    return tuple(value)


_CHECKS: dict[str, Callable[[Any, str, _Errors], Any]] = {
    "library": _check_library,
    "version": _check_version,
    "vocab": _check_vocab,
    "required": _check_field_names,
    "limits": _check_limits,
    "snippet_validators": _check_validators,
    "rules": _check_rules,
    "exclude": _check_exclude,
    "list_fields": _check_field_names,
    "bundle_dir": _check_path,
    "signing_key": _check_path,
    "expires": _check_expires,
    "default_lang": _check_lang,
}
