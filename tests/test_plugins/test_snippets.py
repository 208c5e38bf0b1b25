"""Snippet validators: built-ins with lines, replacement, switching off, and crashes that
never stop the run."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from conftest import MakeLibrary, run_cli

from handbook_build.checks.snippets import check_json, check_toml, check_yaml

DOC = """\
---
id: s
title: Snippets
kind: guide
summary: Snippets.
---
```{lang}
{text}
```
"""


def lines_for(
    make_library: MakeLibrary, lang: str, text: str, **options: object
) -> tuple[int, list[str]]:
    config = make_library({"s.md": DOC.format(lang=lang, text=text)}, **options)
    run = run_cli("check", "--config", str(config))
    return run.exit_code, run.lines[:-1]


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        (
            "json",
            '{"a": 1,\n "b": }',
            "s.md:9:7: HB501 json snippet: invalid JSON: Expecting value",
        ),
        (
            "yaml",
            "a: 1\nb: [\nc: 2",
            "s.md:10:5: HB501 yaml snippet: invalid YAML: did not find expected ',' or ']'",
        ),
        (
            "yml",
            "a: b: c",
            "s.md:8:5: HB501 yml snippet: invalid YAML: mapping values are not allowed in this context",
        ),
        (
            "toml",
            'a = 1\nb = "x\n',
            "s.md:9:7: HB501 toml snippet: invalid TOML: Illegal character '\\n'",
        ),
        (
            "JSON",
            "[1, 2",
            # the parser stops at the end of the input: the end of the snippet's last line
            "s.md:8:6: HB501 json snippet: invalid JSON: Expecting ',' delimiter",
        ),
    ],
)
def test_builtin_validators_point_at_the_line_and_column(
    make_library: MakeLibrary, lang: str, text: str, expected: str
) -> None:
    code, lines = lines_for(make_library, lang, text)
    assert code == 1
    assert len(lines) == 1
    assert lines == [expected]


def test_valid_snippets_and_unknown_languages_pass(make_library: MakeLibrary) -> None:
    for lang, text in [
        ("json", '{"a": [1, 2]}'),
        ("yaml", "a: &x 1\nb: *x"),
        ("toml", "[t]\nk = 1"),
        ("python", "def (:"),
        ("", "{"),
    ]:
        assert lines_for(make_library, lang, text) == (0, []), lang


def test_off_switches_a_builtin_off(make_library: MakeLibrary) -> None:
    assert lines_for(make_library, "json", "{partial", snippet_validators={"json": "off"}) == (
        0,
        [],
    )


def test_a_library_validator_replaces_a_builtin(make_library: MakeLibrary, tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "my_checks.py").write_text(
        "def strict_yaml(text):\n    return [(2, 'port must be a number')] if 'port: x' in text else []\n"
    )
    code, lines = lines_for(
        make_library,
        "yaml",
        "host: a\nport: x",
        snippet_validators={"yaml": "my_checks:strict_yaml"},
    )
    assert code == 1
    assert lines == ["s.md:9:1: HB501 yaml snippet: port must be a number"]


def test_a_validator_may_name_the_column_and_indented_fences_shift_it(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "col_checks.py").write_text(
        "def check(text):\n    return [(2, 3, 'bad value'), (1, 'no column'), 'nowhere']\n"
    )
    doc = DOC.replace("```{lang}\n{text}\n```", "- item:\n\n  ```{lang}\n  a = 1\n  b = ?\n  ```")
    config = make_library(
        {"s.md": doc.format(lang="ini", text="")}, snippet_validators={"ini": "col_checks:check"}
    )
    run = run_cli("check", "--config", str(config))
    assert run.lines[:-1] == [
        "s.md:10:3: HB501 ini snippet: no column",
        "s.md:10:3: HB501 ini snippet: nowhere",
        "s.md:11:5: HB501 ini snippet: bad value",
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("raise RuntimeError('boom')", "s.md:8:1: HB502 ini validator crashed: RuntimeError: boom"),
        (
            "return 'not a list'",
            "s.md:8:1: HB502 ini validator crashed: TypeError: returned str, expected a list of errors",
        ),
        ("return [(99, 'line past the end')]", "s.md:8:2: HB501 ini snippet: line past the end"),
        (
            "return [(1, 2, 3, 4)]",
            "s.md:8:1: HB502 ini validator crashed: ValueError: too many values to unpack (expected 2)",
        ),
    ],
)
def test_misbehaving_validators_are_reported_not_fatal(
    make_library: MakeLibrary, tmp_path: Path, body: str, expected: str
) -> None:
    (tmp_path / "lib").mkdir()
    module = f"bad_checks_{abs(hash(body))}"  # a fresh module per case: imports are cached
    (tmp_path / "lib" / f"{module}.py").write_text(f"def check(text):\n    {body}\n")
    code, lines = lines_for(make_library, "ini", "x", snippet_validators={"ini": f"{module}:check"})
    assert code == 1
    assert lines == [expected]


@pytest.mark.parametrize("check", [check_json, check_yaml, check_toml])
def test_builtins_survive_deep_nesting(check) -> None:
    deep = "[" * 100_000 if check is not check_toml else "a = " + "[" * 100_000
    assert check(deep)


def test_yaml_alias_bomb_in_a_snippet_is_not_expanded() -> None:
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    tracemalloc.start()
    try:
        assert check_yaml(bomb) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"validating the bomb allocated {peak:,} bytes"  # expanded: ~GBs
