"""The docs are part of the product: every rule code, configuration key and command has
its own heading, so an agent can fetch exactly that section."""

from __future__ import annotations

import re

import click
from conftest import ROOT
from generate_docs import CONFIGURATION, generated_part, options_markdown

from handbook.cli import main
from handbook_build.config.options import OPTIONS
from handbook_build.read.parse import parse
from handbook_build.read.source import Text
from handbook_build.rules import RULES


def headings(path: str) -> set[str]:
    text = (ROOT / "docs" / path).read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^## (.+)$", text, re.MULTILINE)}


def test_every_rule_code_is_documented() -> None:
    documented = headings("reference/rules.md")
    assert documented == {f"{rule.code} {rule.name}" for rule in RULES.values()}


def test_every_rule_anchor_is_a_section_of_the_rule_reference() -> None:
    path = "reference/rules.md"
    doc, findings = parse(Text(path, (ROOT / "docs" / path).read_text(encoding="utf-8")))
    assert doc is not None, findings
    assert [s.anchor for s in doc.sections] == [rule.anchor for rule in RULES.values()]


def test_the_configuration_reference_shows_the_table_of_options() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    assert generated_part(page) == options_markdown(), (
        "docs/reference/configuration.md differs from handbook_build.config.options.OPTIONS; "
        "regenerate it with: python tests/generate_docs.py"
    )


def test_every_configuration_key_is_documented() -> None:
    assert {option.name for option in OPTIONS} <= headings("reference/configuration.md")


def test_every_command_is_documented() -> None:
    ctx = click.Context(main)
    commands = {f"handbook {name}" for name in main.list_commands(ctx)}
    assert commands <= headings("reference/commands.md") | headings("reference/serving.md")


def test_rule_names_are_unique_and_codes_well_formed() -> None:
    assert len({r.name for r in RULES.values()}) == len(RULES)
    assert all(re.fullmatch(r"HB\d{3}", code) for code in RULES)
