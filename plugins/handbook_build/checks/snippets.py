"""Fenced snippets, checked by their validators; the built-in validators.

A validator is any importable function ``(text: str) -> list`` whose items are error
messages: a string, a ``(line, message)`` pair with a 1-based line inside the snippet,
or a ``(line, column, message)`` triple that also names the 1-based column. The
finding points at that place in the file. The registry is `handbook_build.config.validators`;
the built-ins (here) register exactly like a library's own
(``"handbook_build.checks.snippets:check_json"``), so ``snippet_validators: {json: off}``
switches one off and ``{yaml: "myapp.config:check_snippet"}`` replaces it with the
application's real parser.

Snippets are parsed, never executed. A validator that raises is reported (HB502) and
the run goes on: one broken validator must not hide the other findings.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping

import yaml

from .. import rules
from ..config.validators import Problem, Validator
from ..findings import Finding
from ..read.parse import Doc, Fence

# libyaml when PyYAML has it: the pure-Python composer costs ~1 ms per snippet.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_json(text: str) -> list[Problem]:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return [(exc.lineno, exc.colno, f"invalid JSON: {exc.msg}")]
    except RecursionError:
        return ["invalid JSON: nested too deeply"]
    return []


def check_yaml(text: str) -> list[Problem]:
    """Composes the node graph without constructing values: aliases stay references,
    so an alias bomb costs nothing, and anchors, which real configs use, are fine."""
    try:
        for _ in yaml.compose_all(text, Loader=_Loader):
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None:
            return [f"invalid YAML: {problem}"]
        return [(mark.line + 1, mark.column + 1, f"invalid YAML: {problem}")]
    except RecursionError:
        return ["invalid YAML: nested too deeply"]
    return []


_TOML_PLACE = re.compile(r" \(at line (\d+), column (\d+)\)$")


def check_toml(text: str) -> list[Problem]:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_PLACE.search(message)
        if m is None:  # "(at end of document)"
            return [f"invalid TOML: {message}"]
        return [(int(m.group(1)), int(m.group(2)), f"invalid TOML: {message[: m.start()]}")]
    except RecursionError:
        return ["invalid TOML: nested too deeply"]
    return []


def check(doc: Doc, validators: Mapping[str, Validator]) -> list[Finding]:
    findings: list[Finding] = []
    for fence in doc.fences:
        validator = validators.get(fence.lang)
        if validator is None:
            continue
        lines = fence.text.removesuffix("\n").split("\n")
        try:
            problems = validator(fence.text)
            if not isinstance(problems, (list, tuple)):
                raise TypeError(f"returned {type(problems).__name__}, expected a list of errors")
            findings.extend(_finding(doc.path, fence, lines, p) for p in problems)
        except (Exception, SystemExit) as exc:  # a validator's sys.exit must not end the run
            line, col = _place(fence, lines, 1, 1)
            error = f"{type(exc).__name__}: {exc}"
            findings.append(
                rules.SNIPPET_VALIDATOR_CRASH.at(doc.path, line, col, lang=fence.lang, error=error)
            )
    return findings


def _finding(path: str, fence: Fence, lines: list[str], problem: Problem) -> Finding:
    """`problem` at its place in the file; a message without a place is at the snippet's
    start."""
    if isinstance(problem, tuple) and len(problem) == 3:
        line, col, message = problem
    elif isinstance(problem, tuple):
        (line, message), col = problem, 1  # any other length is the validator's bug: HB502
    else:
        line, col, message = 1, 1, str(problem)
    line, col = _place(fence, lines, max(int(line), 1), max(int(col), 1))
    return rules.SNIPPET_INVALID.at(path, line, col, lang=fence.lang, problem=message)


def _place(fence: Fence, lines: list[str], line: int, col: int) -> tuple[int, int]:
    """A place in the snippet (1-based, from a validator) as a place in the file. A line
    past the snippet's end (the parser reached the end of its input) is the end of its
    last line; an empty snippet is at its opening fence."""
    if not fence.text:
        return fence.line - 1, fence.col
    if line > len(lines):
        line, col = len(lines), len(lines[-1]) + 1
    return fence.line + line - 1, fence.col + col - 1
