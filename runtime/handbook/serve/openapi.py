"""The OpenAPI 3.1 document of the JSON API, generated from the tool table.

Every tool is a route ``/api/v1/<verb>`` that takes its arguments either as a query
string (GET; lists comma-separated or repeated) or as a JSON object (POST), and answers
the handler's dict exactly; so HTTP parameters and answers are described exactly as
agents' tools are.
"""

from __future__ import annotations

from typing import Any

from .._version import __version__
from ..tools import schemas
from ..tools.model import Tool, ToolContext
from ..tools.served import Served
from ..tools.table import served_tools

API = "/api/v1"

_OBJECT = {"application/json": {"schema": {"type": "object"}}}
_REFUSED = {
    "400": {
        "description": "Arguments or a query the handler refused (`error` says why).",
        "content": _OBJECT,
    },
    "404": {"description": "No such doc, section or tool (`error` says why).", "content": _OBJECT},
}


def openapi(served: Served) -> dict[str, Any]:
    context = served.tool_context()
    paths: dict[str, Any] = {
        f"{API}/": {
            "get": {
                "operationId": "index",
                "summary": "What this API serves: its routes, tools and libraries.",
                "responses": {"200": {"description": "The index.", "content": _OBJECT}},
            }
        },
        f"{API}/status": {
            "get": {
                "operationId": "status",
                "summary": "What is served: library, version, signature state, doc count, load time.",
                "responses": {
                    "200": {
                        "description": "Status.",
                        "content": {"application/json": {"schema": schemas.STATUS}},
                    }
                },
            }
        },
    }
    for tool in served_tools(context):
        paths[f"{API}/{tool.verb}"] = _operations(tool, context)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"{context.title} knowledge API",
            "version": __version__,
            "description": "Read access to verified Handbook bundles. Every answer is the "
            "Python handler's dict.",
        },
        "paths": paths,
    }


def _operations(tool: Tool, context: ToolContext) -> dict[str, Any]:
    definition = tool.definition(context, output_schemas=True)  # response schemas
    schema = tool.input_schema(context, every=True)  # every parameter the route takes
    responses = {
        "200": {
            "description": "The handler's answer.",
            "content": {"application/json": {"schema": definition["outputSchema"]}},
        },
        **_REFUSED,
    }
    required = [p.name for p in tool.params if p.required]
    body = {**schema, "required": required}
    common = {"summary": definition["title"], "description": definition["description"]}
    return {
        "get": {
            **common,
            "operationId": tool.name,
            "parameters": [
                _query_parameter(name, prop, name in required)
                for name, prop in schema["properties"].items()
            ],
            "responses": responses,
        },
        "post": {
            **common,
            "operationId": f"{tool.name}_post",
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": responses,
        },
    }


def _query_parameter(name: str, prop: dict[str, Any], required: bool) -> dict[str, Any]:
    kinds = prop.get("type") or []
    kinds = kinds if isinstance(kinds, list) else [kinds]
    # a filter field's meaning is said once in the tool's description; here, per parameter
    description = prop.get("description") or f"Only docs whose {name} is this value (any: all)."
    if "array" in kinds:  # lists travel comma-separated (or repeated) in a query string
        form = "id=revision pairs" if prop.get("items", {}).get("type") == "object" else "values"
        description += f" In the query string: comma-separated {form}."
        value: dict[str, Any] = {"type": "string"}
    else:
        value = {k: v for k, v in prop.items() if k != "description"}
        value["type"] = [k for k in kinds if k != "null"] or ["string"]
        if "enum" in value:
            value["enum"] = [v for v in value["enum"] if v is not None]
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": value,
    }
