"""The answers' `TypedDict`s and the tools' output schemas describe the same keys, and
what a handler returns fits both: the two descriptions of an answer cannot drift."""

from __future__ import annotations

import typing
from typing import Any

import jsonschema
import pytest
from conftest import ROOT

from handbook import Library
from handbook.tools.model import Tool
from handbook.tools.table import READ_TOOLS, TOOLS
from handbook_build import load_config
from handbook_build.pipeline import build


def _keys(typed: Any) -> dict[str, Any]:
    return typing.get_type_hints(typed)


def _item_type(annotation: Any) -> Any:
    """The TypedDict of a `list[TD]` (or `TD | None`) annotation, else None."""
    for arg in typing.get_args(annotation) or ():
        if typing.is_typeddict(arg):
            return arg
        inner = _item_type(arg)
        if inner is not None:
            return inner
    return None


def _compare(schema: dict[str, Any], typed: Any, where: str) -> None:
    hints = _keys(typed)
    properties = schema.get("properties", {})
    assert set(properties) <= set(hints), f"{where}: in the schema, not the TypedDict"
    assert set(schema.get("required", [])) <= set(properties), where
    for name, prop in properties.items():
        items = prop.get("items")
        inner = _item_type(hints[name])
        if isinstance(items, dict) and "properties" in items and inner is not None:
            _compare(items, inner, f"{where}.{name}[]")


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_output_schema_matches_the_typed_answer(tool: Tool) -> None:
    assert typing.is_typeddict(tool.answer)
    _compare(dict(tool.output), tool.answer, tool.name)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    out = tmp_path_factory.mktemp("shapes") / "bundle"
    build(load_config(ROOT / "examples" / "skills" / "mkdocs.yml"), out, None)
    return Library.open(out, allow_unsigned=True)


CALLS = {
    "knowledge_list": {"query": "modbus"},
    "knowledge_get": {"doc_id": "skill.modbus-scan"},
    "knowledge_search": {"query": "registers"},
    "knowledge_collect": {"query": "modbus"},
    "knowledge_ask": {"question": "How do I scan Modbus registers?"},
    "knowledge_brief": {"task": "scan the Modbus registers of a device", "refs": ["modbus"]},
    "knowledge_resource": {"doc_id": "device.acme.ac300", "path": "registers.csv"},
}


@pytest.mark.parametrize("tool", READ_TOOLS, ids=lambda t: t.name)
def test_answers_fit_their_schema_and_type(library: Library, tool: Tool) -> None:
    answer = getattr(library, tool.verb)(**CALLS[tool.name])
    jsonschema.validate(answer, dict(tool.output))
    assert set(answer) <= set(_keys(tool.answer)), tool.name


@pytest.mark.parametrize("chars", [0, 3, 4, 84, 85, 86, 979, 980, 981, 9976, 9977, 99_975])
def test_response_chars_counts_its_own_digits(chars: int) -> None:
    """At each length where the number gains a digit, the answer's size is exact."""
    from handbook.bounds import json_len, with_size

    answer = with_size({"text": "x" * chars, "note": "é"})
    assert answer["response_chars"] == json_len(answer)
