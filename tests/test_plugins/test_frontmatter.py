"""Frontmatter: plain JSON values with lines, and refusals that cost nothing."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml
from conftest import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

from handbook_build import rules
from handbook_build.read import frontmatter
from handbook_build.read.frontmatter import BoolWord, Field, FrontmatterError, Mark, parse

BOMB = FIXTURES / "hostile" / "docs" / "hb205-alias-bomb.md"


def refusal(text: str) -> list[str]:
    with pytest.raises(FrontmatterError) as info:
        parse("x.md", text)
    return [str(f) for f in info.value.findings]


def read(text: str) -> tuple[dict[str, object], list[str]]:
    """The values read and the findings about refused keys and values."""
    fm = parse("x.md", text)
    return fm.data, [str(f) for f in fm.findings]


def test_values_become_plain_json() -> None:
    text = (
        "---\nid: a.b\ncount: 3\nflag: true\nnone:\nwhen: 2026-03-01\n"
        "stamp: 2026-03-01 10:00:00+01:00\nlist: [a, 1]\nmap: {k: v}\nforced: !!str 1.5\n---\nbody\n"
    )
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
    assert {name: f.key.line for name, f in fm.fields.items()} == {
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


def test_every_field_knows_where_its_key_value_and_items_are() -> None:
    fm = parse("x.md", "---\nid:   a.b\ntags:\n  - one\n  - 2\nflow: [x,  y]\n---\n")
    assert fm.fields == {
        "id": Field(Mark(2, 1, "id"), Mark(2, 7, "a.b")),
        "tags": Field(Mark(3, 1, "tags"), Mark(4, 3), (Mark(4, 5, "one"), Mark(5, 5, "2"))),
        "flow": Field(Mark(6, 1, "flow"), Mark(6, 7), (Mark(6, 8, "x"), Mark(6, 12, "y"))),
    }


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
    assert lines == ["x.md:3:4: HB205 frontmatter uses a YAML anchor or alias; write the value out"]
    assert peak < 1_000_000, f"refusing the bomb allocated {peak:,} bytes"


def test_anchor_without_alias_is_refused() -> None:
    assert refusal("---\na: &x 1\n---\n") == [
        "x.md:2:4: HB205 frontmatter uses a YAML anchor or alias; write the value out"
    ]


@pytest.mark.parametrize(
    "tag", ["!!python/object:os.system", "!!binary", "!custom", "!!set", "!!float"]
)
def test_explicit_tags_are_refused(tag: str) -> None:
    [line] = refusal(f"---\na: {tag} x\n---\n")
    assert line.startswith("x.md:2:4: HB206 frontmatter uses the YAML tag")


def test_deep_nesting_is_refused_where_it_goes_too_deep() -> None:
    assert refusal("---\na: " + "[" * 40 + "]" * 40 + "\n---\n") == [
        "x.md:2:35: HB207 frontmatter is nested deeper than 32 levels"
    ]


def test_ten_thousand_deep_nesting_is_refused() -> None:
    """libyaml's own guard stops at 1,000 levels, before the event scan sees level 33."""
    assert refusal("---\na: " + "[" * 10_000 + "]" * 10_000 + "\n---\n") == [
        "x.md:2:1003: HB207 frontmatter is nested deeper than 32 levels"
    ]


def test_oversized_frontmatter_is_refused_before_parsing() -> None:
    text = "---\n" + "k: " + "x" * (64 * 1024) + "\n---\n"
    assert refusal(text) == [
        "x.md:2:1: HB207 frontmatter is 65,540 bytes; the limit is 65,536: move long content into the body"
    ]


def test_floats_are_refused_with_the_quoted_form() -> None:
    assert read("---\nversion: 1.10\nratio: 1.0e+3\nnan:  .nan\n---\n") == (
        {},
        [
            'x.md:2:10: HB209 `version: 1.10` is read as a float; quote it ("1.10") or use an integer',
            'x.md:3:8: HB209 `ratio: 1.0e+3` is read as a float; quote it ("1.0e+3") or use an integer',
            'x.md:4:7: HB209 `nan: .nan` is read as a float; quote it (".nan") or use an integer',
        ],
    )


def test_a_refused_value_drops_its_field_and_nothing_else() -> None:
    text = "---\nid: a\nversion: 1.10\nserial: 12345678901234567890\nwhen: 2026-02-30\n"
    text += "tags: [x, 2.5]\ntitle: T\n---\nbody\n"
    fm = parse("x.md", text)
    assert fm.data == {"id": "a", "title": "T"}
    assert list(fm.fields) == ["id", "version", "serial", "when", "tags", "title"]
    assert [str(f) for f in fm.findings] == [
        'x.md:3:10: HB209 `version: 1.10` is read as a float; quote it ("1.10") or use an integer',
        "x.md:4:9: HB211 `serial: 12345678901234567890` is too large for JSON readers to hold exactly; quote it",
        "x.md:5:7: HB302 `when: 2026-02-30` is not a real date (day is out of range for month); fix it or quote it",
        'x.md:6:11: HB209 `tags: 2.5` is read as a float; quote it ("2.5") or use an integer',
    ]


def test_keys_must_be_strings_and_unique_at_every_level() -> None:
    assert read("---\n1: a\nm:\n  ? [x]\n  : y\n  k: 1\n  k: 2\n---\n") == (
        {},
        [
            "x.md:2:1: HB208 key '1' is not a string; quote it",
            "x.md:4:5: HB208 a key is a list; keys must be strings",
            "x.md:7:3: HB208 key `k` appears twice; keep one",
        ],
    )


def test_a_key_written_twice_keeps_the_first_value() -> None:
    assert read("---\ntitle: One\ntitle: Two\n---\n") == (
        {"title": "One"},
        ["x.md:3:1: HB208 key `title` appears twice; keep one"],
    )


def test_yaml11_bool_words_parse_and_are_recorded_for_the_field_rules() -> None:
    fm = parse("x.md", "---\na: yes\nb: Off\nc: true\nd: 'no'\ne: {f: on}\n---\n")
    assert fm.data == {"a": True, "b": False, "c": True, "d": "no", "e": {"f": True}}
    assert fm.findings == []
    assert fm.bool_words == [
        BoolWord("a", "a", Mark(2, 4, "yes")),
        BoolWord("b", "b", Mark(3, 4, "Off")),
        BoolWord("e", "f", Mark(6, 8, "on")),
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
        (
            "---\n\n  - a list\n---\n",
            "x.md:3:3: HB204 frontmatter is a list, not a mapping of fields like `id: ...`",
        ),
        (
            "---\nid: [a, b\n---\n",
            "x.md:3:1: HB203 frontmatter is not valid YAML: did not find expected ',' or ']'",
        ),
    ],
)
def test_structural_refusals(text: str, expected: str) -> None:
    assert refusal(text) == [expected]


def test_libyaml_and_pure_python_read_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "---\nid: a\nn: 0x1F\nd: 2026-01-02\nb: on\nl: [x, {y: z}]\ns: 'q'\nf: 1.5\n---\n"
    fast = parse("x.md", text)
    monkeypatch.setattr(frontmatter, "_Loader", yaml.SafeLoader)
    slow = parse("x.md", text)
    assert fast == slow
    assert fast.bool_words and fast.findings


@given(st.text(max_size=300))
def test_any_text_parses_or_is_refused_with_findings(body: str) -> None:
    try:
        fm = parse("x.md", "---\n" + body + "\n---\n")
    except FrontmatterError as exc:
        assert exc.findings and all(f.code.startswith("HB2") for f in exc.findings)
    else:
        assert isinstance(fm.data, dict)
        assert set(fm.data) <= set(fm.fields)
        refusals = {rules.YAML_TAG, rules.YAML_KEY, rules.YAML_FLOAT, rules.YAML_INT_RANGE}
        allowed = {rule.code for rule in refusals} | {rules.FIELD_TYPE.code}
        assert {f.code for f in fm.findings} <= allowed


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029"])
def test_places_count_only_newlines_as_line_breaks(brk: str) -> None:
    """YAML also breaks lines at NEL, LS and PS; a finding's place must be in the file as
    editors number it, so a break character inside a value moves nothing."""
    text = f"---\nsummary: 'a{brk}b'\nkeywords: [x, [y]]\n---\n"
    fm = parse("x.md", text)
    assert fm.fields["keywords"].value[:2] == (3, 11)
    with pytest.raises(FrontmatterError) as info:
        parse("x.md", f"---\nsummary: 'a{brk}b'\nkeywords: [x\n---\n")
    (finding,) = info.value.findings
    assert finding.line == 4 and finding.col == 1
