"""`handbook tools --format …`: the bundle's tool definitions in each ecosystem's shape,
every schema valid JSON Schema, OpenAI's strict-mode rules kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import run_cli

from handbook.tools.formats import FORMATS, convert
from handbook.tools.table import READ_TOOLS

NAMES = [tool.name for tool in READ_TOOLS]


def printed(bundle: Path, fmt: str) -> str:
    run = run_cli("tools", "--format", fmt, "--bundle", str(bundle), "--allow-unsigned")
    assert run.exit_code == 0, run.stderr
    return run.stdout


def strict_ok(schema: dict[str, Any]) -> None:
    """OpenAI strict mode: objects list every property as required and allow no others."""
    jsonschema.Draft202012Validator.check_schema(schema)
    if schema.get("type") == "object" or "properties" in schema:
        assert schema.get("additionalProperties") is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
        for prop in schema["properties"].values():
            strict_ok(prop)


def test_mcp_is_tools_json(plant_floor_bundle: Path) -> None:
    tools = json.loads(printed(plant_floor_bundle, "mcp"))["tools"]
    assert tools == json.loads((plant_floor_bundle / "tools.json").read_text())["tools"]
    assert [t["name"] for t in tools] == NAMES
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
        assert tool["annotations"]["readOnlyHint"] is True


def test_openai_function_tools_are_strict(plant_floor_bundle: Path) -> None:
    tools = json.loads(printed(plant_floor_bundle, "openai"))
    assert [t["function"]["name"] for t in tools] == NAMES
    for tool in tools:
        assert tool["type"] == "function" and tool["function"]["strict"] is True
        strict_ok(tool["function"]["parameters"])


def test_anthropic_tools(plant_floor_bundle: Path) -> None:
    tools = json.loads(printed(plant_floor_bundle, "anthropic"))
    assert [t["name"] for t in tools] == NAMES
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        jsonschema.Draft202012Validator.check_schema(tool["input_schema"])


def test_yaml_is_the_mcp_shape(plant_floor_bundle: Path) -> None:
    assert yaml.safe_load(printed(plant_floor_bundle, "yaml")) == json.loads(
        printed(plant_floor_bundle, "mcp")
    )


def test_inputs_validate_against_the_schemas(plant_floor_bundle: Path) -> None:
    """What an agent sends in strict mode passes; what it must not send fails."""
    tools = {
        t["name"]: t["inputSchema"]
        for t in json.loads((plant_floor_bundle / "tools.json").read_text())["tools"]
    }
    good = {
        "doc_id": "device.acme.ac200",
        "section": None,
        "offset": None,
        "revision": None,
        "lang": None,
    }
    jsonschema.validate(good, tools["knowledge_get"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "extra": 1}, tools["knowledge_get"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "x", "limit": 0}, tools["knowledge_search"])


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        convert([], "xml")
    assert set(FORMATS) == {"mcp", "openai", "anthropic", "yaml"}
