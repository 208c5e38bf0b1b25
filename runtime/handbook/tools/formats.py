"""The tool definitions in each ecosystem's shape.

The table's definitions (`handbook.tools.table`) are in the MCP shape, as ``tools.json``
holds them, with input schemas in OpenAI's strict form (every property required, the
optional ones nullable). OpenAI takes them as they are, under other keys. Anthropic
needs no strict form: its input schemas say what is optional by leaving it out of
`required`, which is the same contract in about half the characters on every turn.
"""

from __future__ import annotations

import json
from typing import Any

FORMATS = ("mcp", "openai", "anthropic", "yaml")
SCHEMA_FORMATS = ("mcp", "yaml")
"""The shapes with a place for output schemas (MCP's `outputSchema`)."""


def for_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions function tools, strict mode (the input schemas are built for it)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["inputSchema"],
                "strict": True,
            },
        }
        for t in tools
    ]


def for_anthropic(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic Messages API tools, their input schemas in the plain form (`plain`)."""
    return [
        {
            "name": t["name"],
            "description": t["description"],
            "input_schema": plain(t["inputSchema"]),
        }
        for t in tools
    ]


def plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A strict input schema in the plain form: a nullable property is optional (the
    table makes exactly the optional ones nullable; null means "not given"), so it
    leaves `required` and loses its null; the others stay required as they were."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, prop in schema["properties"].items():
        kinds = prop.get("type")
        if not (isinstance(kinds, list) and "null" in kinds):
            properties[name] = prop
            required.append(name)
            continue
        kept = [k for k in kinds if k != "null"]
        loose = {**prop, "type": kept[0] if len(kept) == 1 else kept}
        if "enum" in prop:
            loose["enum"] = [v for v in prop["enum"] if v is not None]
        properties[name] = loose
    return {**schema, "properties": properties, "required": required}


def convert(tools: list[dict[str, Any]], fmt: str) -> Any:
    """`tools` (MCP shape) in format `fmt`; YAML is the MCP shape as a document (text),
    the others are JSON-ready values."""
    if fmt == "mcp":
        return {"tools": tools}
    if fmt == "openai":
        return for_openai(tools)
    if fmt == "anthropic":
        return for_anthropic(tools)
    if fmt == "yaml":
        return as_yaml({"tools": tools})
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def as_yaml(document: dict[str, Any]) -> str:
    """`document` as YAML, each map or list of plain values on one line (a parameter's
    schema, an enum), everything else in blocks: readable, and about as long as JSON."""
    import yaml  # a dependency of the distribution, not of `import handbook`

    class Dumper(yaml.SafeDumper):
        def represent_dict(self, data: Any) -> Any:
            flat = all(_plain(v) for v in data.values())
            return self.represent_mapping("tag:yaml.org,2002:map", data.items(), flat)

        def represent_list(self, data: Any) -> Any:
            flat = all(not isinstance(v, (dict, list)) for v in data)
            return self.represent_sequence("tag:yaml.org,2002:seq", data, flat)

    Dumper.add_representer(dict, Dumper.represent_dict)
    Dumper.add_representer(list, Dumper.represent_list)
    text: str = yaml.dump(document, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120)
    return text


def _plain(value: Any) -> bool:
    """A scalar, or a list of scalars."""
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return not isinstance(value, dict)


def dumps(shaped: Any) -> str:
    """What `convert` made, as text: YAML as it is; JSON with one tool a line, each as
    compact as an API receives it, so the size printed is about what an agent carries."""
    if isinstance(shaped, str):
        return shaped.rstrip("\n")
    tools = shaped["tools"] if isinstance(shaped, dict) else shaped
    lines = ",\n".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in tools)
    listed = f"[\n{lines}\n]" if tools else "[]"
    return '{"tools": ' + listed + "}" if isinstance(shaped, dict) else listed
