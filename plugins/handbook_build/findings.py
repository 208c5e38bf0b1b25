"""Findings and the three ways to print them: text for people, JSON for tools, GitHub
workflow annotations for pull requests.

A finding is where (path relative to the docs root, 1-based line and column), what (a
rule code; findings are made by the rules in `rules`) and how bad (its severity after
the configuration has spoken). Findings sort by path, then line, column and code, so
output is stable across runs and machines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Literal


class Severity(StrEnum):
    """How much a finding matters, most severe first. The value is what JSON output and
    the `rules` key of the configuration say. A notice reports what the build did for the
    author (a name it normalised, a value it derived): it never fails a build, not even
    under --strict, unless the configuration raises its rule's level."""

    ERROR = "error"
    WARN = "warn"
    NOTICE = "notice"

    @property
    def noun(self) -> str:
        """The word people read in text output and summaries; also GitHub's name for
        the annotation (error, warning, notice)."""
        return "warning" if self is Severity.WARN else self.value


Level = Severity | Literal["off"]
"""What the configuration may set a rule to."""
LEVELS: tuple[Level, ...] = (*Severity, "off")


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    message: str
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        label = "" if self.severity is Severity.ERROR else f"({self.severity.noun}) "
        return f"{self.path}:{self.line}:{self.col}: {self.code} {label}{self.message}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def apply_levels(findings: Iterable[Finding], levels: Mapping[str, Level]) -> list[Finding]:
    """Set each finding's severity from the configured rule levels, drop `off` ones, sort."""
    out = []
    for f in findings:
        level = levels.get(f.code, f.severity)
        if level != "off":
            out.append(replace(f, severity=Severity(level)))
    return sorted(out)


def count(findings: Sequence[Finding]) -> tuple[int, int]:
    """(errors, warnings); notices do not count."""
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = sum(1 for f in findings if f.severity is Severity.WARN)
    return errors, warnings


def render_text(findings: Sequence[Finding]) -> str:
    return "".join(f"{f}\n" for f in findings)


def render_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_dict() for f in findings], indent=2, ensure_ascii=False) + "\n"


def render_github(findings: Sequence[Finding], prefix: str = "") -> str:
    """Workflow commands; `prefix` turns docs-root paths into repository paths."""
    lines = []
    for f in findings:
        props = f"file={_escape_property(prefix + f.path)},line={f.line},col={f.col},title={f.code}"
        lines.append(f"::{f.severity.noun} {props}::{_escape_data(f.message)}\n")
    return "".join(lines)


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")
