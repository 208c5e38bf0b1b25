"""Frontmatter: plain JSON values with lines, and refusals that cost nothing."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml
from conftest import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

from handbook_build import frontmatter
from handbook_build.frontmatter import FrontmatterError, parse

BOMB = FIXTURES / "hostile" / "docs" / "hb205-alias-bomb.md"


def refusal(text: str) -> list[str]:
    with pytest.raises(FrontmatterError) as info:
        parse("x.md", text)
    return [str(f) for f in info.value.findings]


def test_values_become_plain_json() -> None:
    text = "---\nid: a.b\ncount: 3\nflag: true\nnone:\nwhen: 2026-03-01\nstamp: 2026-03-01 10:00:00+01:00\nlist: [a, 1]\nmap: {k: v}\nforced: !!str 1.5\n---\nbody\n"
    fm = parse("x.md", text)
    assert fm.data == {
        "id": "a.b",
        "count": 3,
        "flag": True,
        "none": None,
        "when": "2026-03-01",
        "stamp": "2026-03-01T10:00:00+01:00",
        "list": ["a", 1],
        "map": {"k": "v"},
        "forced": "1.5",
    }
    assert fm.lines == {
        "id": 2,
        "count": 3,
        "flag": 4,
        "none": 5,
        "when": 6,
        "stamp": 7,
        "list": 8,
        "map": 9,
        "forced": 10,
    }
    assert (text[fm.body_offset :], fm.body_line) == ("body\n", 12)


def test_closing_dots_and_trailing_spaces_are_accepted() -> None:
    assert parse("x.md", "---  \nid: a\n...\nbody").data == {"id": "a"}


def test_alias_bomb_is_refused_without_expanding() -> None:
    text = BOMB.read_text(encoding="utf-8")
    tracemalloc.start()
    try:
        lines = refusal(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == ["x.md:3:1: HB205 frontmatter uses a YAML anchor or alias; write the value out"]
    assert peak < 1_000_000, f"refusing the bomb allocated {peak:,} bytes"


def test_anchor_without_alias_is_refused() -> None:
    assert refusal("---\na: &x 1\n---\n") == [
        "x.md:2:1: HB205 frontmatter uses a YAML anchor or alias; write the value out"
    ]


@pytest.mark.parametrize(
    "tag", ["!!python/object:os.system", "!!binary", "!custom", "!!set", "!!float"]
)
def test_explicit_tags_are_refused(tag: str) -> None:
    [line] = refusal(f"---\na: {tag} x\n---\n")
    assert line.startswith("x.md:2:1: HB206 frontmatter uses the YAML tag")


def test_ten_thousand_deep_nesting_is_refused() -> None:
    assert refusal("---\na: " + "[" * 10_000 + "]" * 10_000 + "\n---\n") == [
        "x.md:2:1: HB207 frontmatter is nested deeper than 32 levels"
    ]


def test_oversized_frontmatter_is_refused_before_parsing() -> None:
    text = "---\n" + "k: " + "x" * (64 * 1024) + "\n---\n"
    assert refusal(text) == [
        "x.md:2:1: HB207 frontmatter is 65,540 bytes; the limit is 65,536: move long content into the body"
    ]


def test_floats_are_refused_with_the_quoted_form() -> None:
    assert refusal("---\nversion: 1.10\nratio: 1.0e+3\nnan: .nan\n---\n") == [
        'x.md:2:1: HB209 `version: 1.10` is read as a float; quote it ("1.10") or use an integer',
        'x.md:3:1: HB209 `ratio: 1.0e+3` is read as a float; quote it ("1.0e+3") or use an integer',
        'x.md:4:1: HB209 `nan: .nan` is read as a float; quote it (".nan") or use an integer',
    ]


def test_keys_must_be_strings_and_unique_at_every_level() -> None:
    assert refusal("---\n1: a\nm:\n  ? [x]\n  : y\n  k: 1\n  k: 2\n---\n") == [
        "x.md:2:1: HB208 key '1' is not a string; quote it",
        "x.md:4:5: HB208 a key is a list; keys must be strings",
        "x.md:7:3: HB208 key `k` appears twice; keep one",
    ]


def test_yaml11_bool_words_warn_but_parse() -> None:
    fm = parse("x.md", "---\na: yes\nb: Off\nc: true\nd: 'no'\n---\n")
    assert fm.data == {"a": True, "b": False, "c": True, "d": "no"}
    assert [str(w) for w in fm.warnings] == [
        "x.md:2:1: HB210 (warning) `a: yes` is read as true; write true/false, or quote it for the word",
        "x.md:3:1: HB210 (warning) `b: Off` is read as false; write true/false, or quote it for the word",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "no frontmatter\n",
            "x.md:1:1: HB201 has no frontmatter; start the file with a `---` line, the fields, and a closing `---`",
        ),
        (
            "----\nid: a\n---\n",
            "x.md:1:1: HB201 has no frontmatter; start the file with a `---` line, the fields, and a closing `---`",
        ),
        (
            "---\nid: a\n",
            "x.md:1:1: HB202 frontmatter is never closed; add a `---` line after the last field",
        ),
        (
            "---\n---\n",
            "x.md:2:1: HB204 frontmatter is empty, not a mapping of fields like `id: ...`",
        ),
        (
            "---\njust a string\n---\n",
            "x.md:2:1: HB204 frontmatter is a single value, not a mapping of fields like `id: ...`",
        ),
    ],
)
def test_structural_refusals(text: str, expected: str) -> None:
    assert refusal(text) == [expected]


def test_libyaml_and_pure_python_read_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "---\nid: a\nn: 0x1F\nd: 2026-01-02\nb: on\nl: [x, {y: z}]\ns: 'q'\n---\n"
    fast = parse("x.md", text)
    monkeypatch.setattr(frontmatter, "_Loader", yaml.SafeLoader)
    slow = parse("x.md", text)
    assert (fast.data, fast.lines, [str(w) for w in fast.warnings]) == (
        slow.data,
        slow.lines,
        [str(w) for w in slow.warnings],
    )


@given(st.text(max_size=300))
def test_any_text_parses_or_is_refused_with_findings(body: str) -> None:
    try:
        fm = parse("x.md", "---\n" + body + "\n---\n")
    except FrontmatterError as exc:
        assert exc.findings and all(f.code.startswith("HB2") for f in exc.findings)
    else:
        assert isinstance(fm.data, dict)
