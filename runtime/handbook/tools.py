"""Agent tool definitions, generated from a library's catalog.

One definition per tool serves every transport: ``tools.json`` in the bundle, MCP, and
the RPC registration. Input schemas satisfy OpenAI's strict mode (every property listed
and required, optional ones nullable, no additional properties), which every other
host also accepts. Descriptions are written for agents and name this library's kinds,
filter fields and values, so an agent knows what it can ask before it asks.
"""

from __future__ import annotations

from typing import Any

from .catalog import Catalog

MAX_ENUM = 50
TOOL_NAMES = (
    "knowledge_list",
    "knowledge_get",
    "knowledge_search",
    "knowledge_collect",
    "knowledge_ask",
)

_NULLABLE_STRING = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"], "minimum": 1, "maximum": 100}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """An input schema in OpenAI strict mode's shape."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _filter_property(name: str, info: dict[str, Any]) -> dict[str, Any]:
    values = info.get("values")
    prop: dict[str, Any] = dict(_NULLABLE_STRING)
    if values and len(values) <= MAX_ENUM:
        prop["enum"] = [*values, "any", None]
        prop["description"] = (
            f'Only docs whose {name} is this value ({", ".join(values)}). null or "any": no filter.'
        )
    else:
        prop["description"] = f'Only docs whose {name} is this value. null or "any": no filter.'
    return prop


def _result(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Output schemas name what is always there and allow more: results grow."""
    return {"type": "object", "properties": properties, "required": required}


_DOC_SUMMARY = _result(
    {
        "id": {"type": "string"},
        "kind": {"type": "string"},
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "verified": {"type": "string"},
        "chars": {"type": "integer"},
    },
    ["id", "title", "summary"],
)


def definitions(catalog: Catalog) -> list[dict[str, Any]]:
    """The tool definitions (MCP shape: name, description, inputSchema, outputSchema,
    annotations) for this library."""
    lib = catalog.library
    title = lib.title or lib.name
    kinds = ", ".join(lib.vocab.get("kind", ())) or ", ".join(
        sorted({d.kind for d in catalog.docs})
    )
    filters = {
        name: info for name, info in sorted(lib.filters.items()) if name not in ("query", "limit")
    }
    filter_props = {name: _filter_property(name, info) for name, info in filters.items()}
    read_only = {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    return [
        {
            "name": "knowledge_list",
            "title": f"List {title} docs",
            "description": (
                f"Lists the docs of the {title} knowledge library ({len(catalog.docs)} docs; kinds: {kinds}). "
                "Call it before answering questions this library may cover, then fetch the matching doc with "
                "knowledge_get. Filter by any field"
                + (f" ({', '.join(filters)})" if filters else "")
                + ", or pass a free-text query that matches titles, summaries, keywords, aliases and model numbers. "
                "Returns compact entries: id, kind, title, summary, verified state and size; no content."
            ),
            "inputSchema": _object(
                {
                    "query": {
                        **_NULLABLE_STRING,
                        "description": "Free-text query; null lists everything (filtered).",
                    },
                    "limit": {
                        **_NULLABLE_INT,
                        "description": "Most entries to return (default 20).",
                    },
                    **filter_props,
                }
            ),
            "outputSchema": _result(
                {
                    "count": {"type": "integer"},
                    "docs": {"type": "array", "items": _DOC_SUMMARY},
                    "hint": {"type": "string"},
                },
                ["count", "docs"],
            ),
            "annotations": read_only,
        },
        {
            "name": "knowledge_get",
            "title": f"Read a {title} doc",
            "description": (
                "Fetches one doc by id (from knowledge_list or knowledge_search) as markdown, with its metadata, "
                "revision and section list. For long docs pass `section` (a `## ` heading title or anchor) to "
                "read just that part. Prefer the doc's content over your own memory, and repeat its caveats: "
                "a doc marked unverified must be quoted as such. Unknown ids return the closest matches."
            ),
            "inputSchema": _object(
                {
                    "doc_id": {
                        "type": "string",
                        "description": "A doc id, e.g. from knowledge_list.",
                    },
                    "section": {
                        **_NULLABLE_STRING,
                        "description": "A section title or anchor; null for the whole doc.",
                    },
                }
            ),
            "outputSchema": _result(
                {
                    "found": {"type": "boolean"},
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "metadata": {"type": "object"},
                    "revision": {"type": "string"},
                    "sections": {"type": "array", "items": {"type": "object"}},
                    "content": {"type": "string"},
                    "truncated": {"type": "boolean"},
                    "error": {"type": "string"},
                    "suggestions": {"type": "array", "items": {"type": "string"}},
                },
                ["found"],
            ),
            "annotations": read_only,
        },
        {
            "name": "knowledge_search",
            "title": f"Search {title}",
            "description": (
                f"Searches the text of every section of the {title} library and returns the best-matching "
                "sections with doc id, section anchor, score and a short excerpt. Use it when knowledge_list "
                "finds no obvious doc; then read the hit with knowledge_get(doc_id, section)."
            ),
            "inputSchema": _object(
                {
                    "query": {"type": "string", "description": "Words to search for."},
                    "limit": {**_NULLABLE_INT, "description": "Most hits to return (default 10)."},
                }
            ),
            "outputSchema": _result(
                {
                    "count": {"type": "integer"},
                    "hits": {
                        "type": "array",
                        "items": _result(
                            {
                                "id": {"type": "string"},
                                "title": {"type": "string"},
                                "section": {"type": ["string", "null"]},
                                "anchor": {"type": ["string", "null"]},
                                "score": {"type": "number"},
                                "excerpt": {"type": "string"},
                            },
                            ["id", "title", "score"],
                        ),
                    },
                },
                ["count", "hits"],
            ),
            "annotations": read_only,
        },
        {
            "name": "knowledge_collect",
            "title": f"Collect {title} docs",
            "description": (
                f"Reads several docs of the {title} library in one call, within a byte budget: by explicit ids "
                "(kept in your order) or by a query (best first), filtered like knowledge_list. Docs that do not fit "
                "whole come as the sections that matched. Everything left out is listed under omissions with a reason "
                "(unknown_identity, ambiguous_identity, invalid_identity, duplicate_identity, unavailable_revision, "
                "filters, query, output_limit). Pass revisions to insist on exact doc revisions."
            ),
            "inputSchema": _object(
                {
                    "query": {
                        **_NULLABLE_STRING,
                        "description": "Free-text query that selects and ranks docs; null for none.",
                    },
                    "ids": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "maxItems": 100,
                        "description": "Doc ids (or library:id refs) to read, in this order; null to select by query and filters.",
                    },
                    "revisions": {
                        "type": ["array", "null"],
                        "description": "Exact revisions required, per doc; a changed doc is omitted.",
                        "items": _object(
                            {"id": {"type": "string"}, "revision": {"type": "string"}}
                        ),
                    },
                    "limit": {**_NULLABLE_INT, "description": "Most docs to return (default 10)."},
                    "max_bytes": {
                        "type": ["integer", "null"],
                        "minimum": 1,
                        "maximum": 1_000_000,
                        "description": "Budget for the returned content in UTF-8 bytes (default 32000).",
                    },
                    **filter_props,
                }
            ),
            "outputSchema": _result(
                {
                    "items": {
                        "type": "array",
                        "items": _result(
                            {
                                "ref": {"type": "string"},
                                "id": {"type": "string"},
                                "revision": {"type": "string"},
                                "title": {"type": "string"},
                                "content": {"type": "string"},
                                "whole": {"type": "boolean"},
                            },
                            ["ref", "id", "revision", "title", "content"],
                        ),
                    },
                    "omissions": {
                        "type": "array",
                        "items": _result(
                            {
                                "id": {"type": ["string", "null"]},
                                "reason": {"type": "string"},
                                "detail": {"type": "string"},
                            },
                            ["reason"],
                        ),
                    },
                    "no_match": {"type": "boolean"},
                    "bytes_used": {"type": "integer"},
                    "budget": {"type": ["integer", "null"]},
                },
                ["items", "omissions", "no_match", "bytes_used"],
            ),
            "annotations": read_only,
        },
        {
            "name": "knowledge_ask",
            "title": f"Ask {title}",
            "description": (
                f"Answers a question from the {title} library by quoting its passages, with sources (doc id, title, "
                "version, section, excerpt). evidence_state is grounded when the passages cover the question's key "
                "terms, insufficient when they do not (then no answer is given: say so, do not guess), unavailable when "
                "no library is loaded. It never generates text; read the cited sections with knowledge_get for detail."
            ),
            "inputSchema": _object(
                {
                    "question": {"type": "string", "description": "The question, in words."},
                    "limit": {
                        "type": ["integer", "null"],
                        "minimum": 1,
                        "maximum": 10,
                        "description": "Most passages to quote (default 3).",
                    },
                }
            ),
            "outputSchema": _result(
                {
                    "answer": {"type": "string"},
                    "evidence_state": {
                        "type": "string",
                        "enum": ["grounded", "insufficient", "unavailable"],
                    },
                    "sources": {
                        "type": "array",
                        "items": _result(
                            {
                                "document_id": {"type": "string"},
                                "title": {"type": "string"},
                                "version": {"type": ["string", "null"]},
                                "section": {"type": ["string", "null"]},
                                "excerpt": {"type": "string"},
                            },
                            ["document_id", "title", "excerpt"],
                        ),
                    },
                    "library": {"type": ["string", "null"]},
                    "version": {"type": ["string", "null"]},
                    "correlation_id": {"type": "string"},
                },
                ["answer", "evidence_state", "sources", "correlation_id"],
            ),
            "annotations": read_only,
        },
    ]


# -- the same definitions in each ecosystem's shape ----------------------------------------

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
    """`tools` (MCP shape, as in tools.json) in format `fmt`; YAML is the MCP shape as
    a document (text), the others are JSON-ready values."""
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
