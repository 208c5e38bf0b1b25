"""The tool definitions in each ecosystem's shape.

The table's definitions (`handbook.tools.table`) are in the MCP shape, as ``tools.json``
holds them; OpenAI and Anthropic want the same schemas under other keys.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("mcp", "openai", "anthropic", "yaml")


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
    """Anthropic Messages API tools."""
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
        for t in tools
    ]


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
        import yaml  # a dependency of the distribution, not of `import handbook`

        return yaml.safe_dump({"tools": tools}, sort_keys=False, allow_unicode=True, width=100)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
