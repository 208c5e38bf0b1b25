"""MCP for the library, with the official SDK's low-level server (explicit schemas):
`handbook mcp` over stdio, and the ``/mcp`` endpoint of `handbook serve` over
streamable HTTP.

- Tools ``knowledge_list``, ``knowledge_get``, ``knowledge_search`` with the JSON
  Schemas of the bundle's ``tools.json`` (read from the bundle being served, so a
  reload brings new definitions), read-only annotations, and structured results: the
  handler's dict as ``structuredContent`` and as JSON text for hosts that read text.
- Each doc as a resource ``handbook://<library>/<id>`` (markdown), and the template.

Arguments are checked against the input schema, with one leniency real clients need:
a nullable argument may be left out (strict-mode schemas list every property as
required). A handler's own refusal (a bad query, a wrong argument) is a tool result
with ``isError``; a doc that is not there is an ordinary answer with suggestions.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp

from . import __version__
from .layout import TOOLS
from .library import Library

SCHEME = "handbook://"
RESOURCE_NOT_FOUND = -32002
"""The MCP specification's error code for an unknown resource."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _tools(library: Library) -> list[dict[str, Any]]:
    definitions: list[dict[str, Any]] = json.loads(library.bundle.read(TOOLS))["tools"]
    return definitions


def _call(library: Library, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The handler behind a tool; null arguments mean "not given"."""
    given = {k: v for k, v in arguments.items() if v is not None}
    if name == "knowledge_list":
        return library.list(**given)
    if name == "knowledge_get":
        return library.get(**given)
    if name == "knowledge_collect":
        if (
            "revisions" in given
        ):  # a list of {id, revision} in the schema (strict mode has no free maps)
            given["revisions"] = {r["id"]: r["revision"] for r in given["revisions"]}
        return library.collect(**given)
    if name == "knowledge_ask":
        return library.ask(**given)
    return library.search(**given)


def _check(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit `schema` (missing nullable properties count as null)."""
    filled = dict(arguments)
    for prop, spec in schema.get("properties", {}).items():
        kinds = spec.get("type")
        if prop not in filled and isinstance(kinds, list) and "null" in kinds:
            filled[prop] = None
    try:
        jsonschema.validate(filled, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"{where + ': ' if where else ''}{exc.message}"
    return None


def build_server(library: Library) -> Server[Any]:
    """The MCP server for `library` (any transport)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"],
                    title=t.get("title"),
                    description=t["description"],
                    input_schema=t["inputSchema"],
                    output_schema=t["outputSchema"],
                    annotations=types.ToolAnnotations(
                        read_only_hint=t["annotations"]["readOnlyHint"],
                        destructive_hint=t["annotations"]["destructiveHint"],
                        idempotent_hint=t["annotations"]["idempotentHint"],
                        open_world_hint=t["annotations"]["openWorldHint"],
                    ),
                )
                for t in _tools(library)
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = next((t for t in _tools(library) if t["name"] == params.name), None)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {params.name!r}; the tools are knowledge_list, knowledge_get, knowledge_search",
            )
        arguments = dict(params.arguments or {})
        problem = _check(arguments, tool["inputSchema"])
        if problem:
            return _failed(f"{params.name}: {problem}")
        answer = await anyio.to_thread.run_sync(lambda: _call(library, params.name, arguments))
        text = types.TextContent(text=json.dumps(answer, ensure_ascii=False))
        refused = isinstance(answer.get("error"), dict)  # the handler's own structured refusal
        return types.CallToolResult(
            content=[text], structured_content=None if refused else answer, is_error=refused
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        bundle = library.bundle
        name = bundle.manifest.signed.library
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=f"{SCHEME}{name}/{doc.id}",
                    name=doc.id,
                    title=doc.title,
                    description=doc.summary,
                    mime_type="text/markdown",
                    size=doc.bytes,
                )
                for doc in bundle.catalog.docs
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        name = library.bundle.manifest.signed.library
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}{name}/{{id}}",
                    name=f"{name}-doc",
                    description=f"One doc of the {name} library as markdown, by id",
                    mime_type="text/markdown",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        bundle = library.bundle
        prefix = f"{SCHEME}{bundle.manifest.signed.library}/"
        doc_id, _, attached = (uri[len(prefix) :] if uri.startswith(prefix) else "").partition("/")
        doc = library.doc(doc_id) if doc_id else None
        if doc is not None and attached:  # handbook://<library>/<id>/<path of an attached file>
            answer = library.resource(doc.id, attached)
            if answer.get("found"):
                if "content" in answer:
                    return types.ReadResourceResult(
                        contents=[
                            types.TextResourceContents(
                                uri=uri, text=answer["content"], mime_type=answer["media_type"]
                            )
                        ]
                    )
                return types.ReadResourceResult(
                    contents=[
                        types.BlobResourceContents(
                            uri=uri, blob=answer["content_base64"], mime_type=answer["media_type"]
                        )
                    ]
                )
            doc = None
        if doc is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"no resource {uri}; resources are {prefix}<doc id>[/<attached file>]",
                data={"uri": uri},
            )
        text = bundle.read(doc.content).decode("utf-8")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")]
        )

    signed = library.bundle.manifest.signed
    return Server(
        "handbook",
        version=__version__,
        instructions=(
            f"Read-only knowledge: the {signed.library} library, version {signed.version}. Call knowledge_list or "
            "knowledge_search to find a doc, then knowledge_get to read it (or one section of it)."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def run_stdio(library: Library) -> None:
    """Serve MCP on stdin/stdout until the client closes it. Nothing else may write to
    stdout: it is the protocol stream."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        server = build_server(library)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def http_app(
    library: Library, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = ()
) -> tuple[ASGIApp, Callable[[], Any]]:
    """(the streamable-HTTP endpoint, a factory of the lifespan it needs). Requests must
    come with a Host of the server and, from browsers, an Origin of the same hosts: the
    DNS-rebinding protection the MCP transport specification requires."""
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(
        dict.fromkeys(
            [
                *LOOPBACK_HOSTS,
                *([f"[{host}]" if ":" in host else host] if host not in ("0.0.0.0", "::") else []),
                *allowed_hosts,
            ]
        )
    )
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts] + hosts,
        allowed_origins=[
            f"{scheme}://{h}{port}"
            for h in hosts
            for scheme in ("http", "https")
            for port in (":*", "")
        ],
    )
    manager = StreamableHTTPSessionManager(
        app=build_server(library), stateless=True, json_response=True, security_settings=security
    )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return StreamableHTTPASGIApp(manager), lifespan
