"""The rule registry: the one place a rule code is written, and the one way findings
are made."""

from __future__ import annotations

import ast
import re

import pytest
from conftest import ROOT, MakeLibrary, run_cli

from handbook_build import rules
from handbook_build.findings import LEVELS, Finding, Severity, apply_levels, count, render_github
from handbook_build.rules import RULES, Rule

CODE = re.compile(r"^HB\d{3}$")
REGISTRY = ROOT / "plugins" / "handbook_build" / "rules.py"


def bare_codes(source: str, name: str) -> list[str]:
    """`name:line: code` for every string constant in `source` that is a rule code."""
    return sorted(
        f"{name}:{node.lineno}: {node.value}"
        for node in ast.walk(ast.parse(source, name))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if CODE.fullmatch(node.value)
    )


def test_no_module_but_the_registry_writes_a_rule_code() -> None:
    modules = sorted((ROOT / "plugins").rglob("*.py")) + sorted((ROOT / "runtime").rglob("*.py"))
    assert REGISTRY in modules
    found = [
        line
        for path in modules
        if path != REGISTRY
        for line in bare_codes(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == [], "make findings with the rule objects of handbook_build.rules"


def test_the_walk_finds_codes_in_strings_and_f_strings_but_not_in_prose() -> None:
    source = 'y("HB201", f"{x}HB202")\nz = f"HB203{x}"\n"""HB204"""\nw = "see HB205"\n'
    assert bare_codes(source, "m.py") == [
        "m.py:1: HB201",
        "m.py:1: HB202",
        "m.py:2: HB203",
        "m.py:3: HB204",
    ]


def test_each_rule_is_a_constant_named_for_it() -> None:
    constants = {name: value for name, value in vars(rules).items() if isinstance(value, Rule)}
    assert {rule.name.upper().replace("-", "_") for rule in RULES.values()} == set(constants)
    assert all(RULES[rule.code] is rule for rule in constants.values())
    assert list(RULES) == sorted(RULES)


def test_a_rule_makes_its_finding_from_a_template() -> None:
    found = rules.ID_DUPLICATE.at("b.md", 3, 5, id="x", where="", first="a.md:2:5")
    assert found == Finding(
        "b.md",
        3,
        5,
        "HB304",
        "id `x` is already used by a.md:2:5; ids must be unique per language",
        Severity.ERROR,
    )
    assert rules.FIELD_MISSING.at("a.md", 0, 0, variant="empty", field="title").line == 1
    assert rules.BODY_LONG.at("a.md", 7, chars=3, limit=2).severity is Severity.WARN
    with pytest.raises(KeyError):
        rules.FIELD_MISSING.at("a.md", 1, field="title")  # a rule of variants needs one
    with pytest.raises(KeyError):
        rules.BODY_LONG.at("a.md", 7)  # every field of the template is given


def test_anchors_and_configurability() -> None:
    assert rules.FRONTMATTER_MISSING.anchor == "hb201-frontmatter-missing"
    assert not rules.CONFIG_INVALID.configurable
    assert rules.BODY_LONG.configurable


def test_severities_order_the_levels_and_name_the_output() -> None:
    assert LEVELS == ("error", "warn", "notice", "off")
    assert [s.noun for s in Severity] == ["error", "warning", "notice"]
    warning = rules.BODY_LONG.at("a.md", 7, chars=3, limit=2)
    assert str(warning) == (
        "a.md:7:1: HB401 (warning) body has 3 characters, over the 2 warning limit: "
        "consider splitting it"
    )
    assert render_github([warning]).startswith("::warning file=a.md,line=7,col=1,title=HB401::")
    error = rules.SYMLINK.at("b.md", 1)
    levels = apply_levels([warning, error], {"HB401": Severity.ERROR, "HB102": "off"})
    assert levels == [Finding(warning.path, 7, 1, "HB401", warning.message, Severity.ERROR)]
    assert count([warning, error, error]) == (2, 1)
    notice = rules.FIELD_NAME_NORMALISED.at("c.md", 6, 1, name="a-b", normalised="a_b")
    assert notice.severity is Severity.NOTICE and count([notice]) == (0, 0)
    assert str(notice).startswith("c.md:6:1: HB308 (notice) field `a-b` is filtered as `a_b`")
    assert render_github([notice]).startswith("::notice file=c.md,line=6,col=1,title=HB308::")


CONTENT_FM = "---\nid: a\ntitle: A\nkind: guide\nsummary: A doc.\n---\n"
CONTENT_CASES = {
    "HB403": ("<b onclick=x>b</b>\n", "onclick=x"),
    "HB404": ("Mail jane@acme-corp.com.\n", "jane@"),
    "HB405": ("Use https://ci:hunter2@ci.acme.com/hook.\n", "hunter2"),
}


@pytest.mark.parametrize("code", list(CONTENT_CASES))
@pytest.mark.parametrize(
    ("level", "exit_code", "last"),
    [
        ("error", 1, "1 file checked (1 doc): 1 error, 0 warnings"),
        ("warn", 0, "1 file checked (1 doc): 0 errors, 1 warning"),
        ("off", 0, "1 file checked (1 doc): 0 errors, 0 warnings"),
    ],
)
def test_a_content_rule_s_level_is_configurable(
    make_library: MakeLibrary, code: str, level: str, exit_code: int, last: str
) -> None:
    """`rules: {CODE: level}` sets the severity; what a finding quotes of a secret is
    masked at every level (HB403 quotes no secret: its attribute is the finding)."""
    body, secret = CONTENT_CASES[code]
    run = run_cli(
        "check", "--config", str(make_library({"a.md": CONTENT_FM + body}, rules={code: level}))
    )
    assert run.exit_code == exit_code
    assert run.lines[-1] == last
    if level == "warn":
        assert run.lines[0].startswith("a.md:7:") and f" {code} (warning) " in run.lines[0]
    if code != "HB403":
        assert secret not in run.stdout + run.stderr
