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
from handbook.tools.table import BY_NAME, READ_TOOLS

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
        assert "outputSchema" not in tool  # only where a client reads them: MCP, on request
        assert tool["annotations"]["readOnlyHint"] is True


def test_output_schemas_on_request(plant_floor_bundle: Path) -> None:
    """--output-schemas adds what MCP serves; shapes without a place for them refuse it."""
    run = run_cli(
        "tools", "--output-schemas", "--bundle", str(plant_floor_bundle), "--allow-unsigned"
    )
    assert run.exit_code == 0, run.stderr
    tools = {t["name"]: t for t in json.loads(run.stdout)["tools"]}
    for tool in READ_TOOLS:
        assert tools[tool.name]["outputSchema"] == tool.output
        jsonschema.Draft202012Validator.check_schema(tools[tool.name]["outputSchema"])
    as_yaml = run_cli(
        "tools", "--format", "yaml", "--output-schemas", "--bundle", str(plant_floor_bundle),
        "--allow-unsigned",
    )  # fmt: skip
    assert yaml.safe_load(as_yaml.stdout) == json.loads(run.stdout)
    for fmt in ("openai", "anthropic"):
        refused = run_cli(
            "tools", "--format", fmt, "--output-schemas", "--bundle", str(plant_floor_bundle),
            "--allow-unsigned",
        )  # fmt: skip
        assert refused.exit_code == 2
        assert f"the {fmt} shape has no place for output schemas" in refused.stderr


def test_openai_function_tools_are_strict(plant_floor_bundle: Path) -> None:
    tools = json.loads(printed(plant_floor_bundle, "openai"))
    assert [t["function"]["name"] for t in tools] == NAMES
    for tool in tools:
        assert tool["type"] == "function" and tool["function"]["strict"] is True
        strict_ok(tool["function"]["parameters"])


def test_anthropic_tools(plant_floor_bundle: Path) -> None:
    tools = json.loads(printed(plant_floor_bundle, "anthropic"))
    assert [t["name"] for t in tools] == NAMES
    strict = {
        t["name"]: t["inputSchema"]
        for t in json.loads((plant_floor_bundle / "tools.json").read_text())["tools"]
    }
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        # the plain form: the same properties; only the truly required ones required
        assert set(schema["properties"]) == set(strict[tool["name"]]["properties"])
        assert schema["required"] == [p.name for p in BY_NAME[tool["name"]].params if p.required]
        for prop in schema["properties"].values():
            assert "null" not in json.dumps(prop.get("type")) and None not in prop.get("enum", [])
    listing = {t["name"]: t["input_schema"] for t in tools}["knowledge_list"]
    assert listing["properties"]["protocol"] == {
        "type": "string",
        "enum": ["modbus", "mqtt", "any"],
    }
    jsonschema.validate({"kind": "device"}, listing)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "recipe"}, listing)


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
    good = {"doc_id": "device.acme.ac200", "section": None, "offset": None, "revision": None}
    jsonschema.validate(good, tools["knowledge_get"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "extra": 1}, tools["knowledge_get"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "x", "limit": 0}, tools["knowledge_search"])


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        convert([], "xml")
    assert set(FORMATS) == {"mcp", "openai", "anthropic", "yaml"}
