"""MCP for the served libraries, with the official SDK's low-level server (explicit
schemas): `handbook mcp` over stdio, and the ``/mcp`` endpoint of `handbook serve` over
streamable HTTP.

- Every tool of the table (`handbook.tools.table`), with its input and output schemas and
  annotations, called through `handbook.tools.dispatch`; structured results: the handler's
  dict as ``structuredContent`` and as JSON text for hosts that read text. The output
  schemas are served here only: MCP clients check structured results against them (the
  official SDK's client does, on every call), and no other host reads them. A handler's
  own refusal (a bad query, a wrong argument) is a tool result with ``isError``; an
  unknown tool is a protocol error carrying the same structured error as ``data``.
- Each doc as a resource ``handbook://<library>/<id>`` (markdown), its attached files
  as ``handbook://<library>/<id>/<path>``, listed in pages.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp, Receive, Scope, Send

from .._version import __version__
from ..access.actor import Actor, ActorError, acting, from_headers, from_meta
from ..tools.dispatch import Dispatch, call, failure, refused
from ..tools.served import Served
from ..tools.table import definitions
from .request_log import RequestLog

SCHEME = "handbook://"
RESOURCE_NOT_FOUND = -32002
"""The MCP specification's error code for an unknown resource."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
PAGE = 100
MAX_PIECES = 1000
"""A doc read as a resource is fetched in at most this many answers (a bound, not a size)."""


def build_server(served: Served, dispatch: Dispatch = call) -> Server[Any]:
    """The MCP server for `served` (any transport); tools are called through `dispatch`."""
    handlers = _Handlers(served, dispatch)
    names = list(served.bundles()) or list(served.tool_context().libraries)
    exposed = getattr(served, "exposed_tools", None)  # `handbook.tools.exposed`
    how = (
        "Call knowledge_list or knowledge_search to find a doc, then knowledge_get to read it "
        "(or one section of it)."
        if exposed is None or {"knowledge_list", "knowledge_search", "knowledge_get"} <= {*exposed}
        else f"Its tools: {', '.join(exposed)}."
    )
    return Server(
        "handbook",
        version=__version__,
        instructions=f"Read-only knowledge from the libraries {', '.join(names)}. {how}",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
    )


class _Handlers:
    """The MCP requests over `served`: each read in a worker thread, on behalf of the
    caller the request names (`_caller`)."""

    def __init__(self, served: Served, dispatch: Dispatch) -> None:
        self.served, self.dispatch = served, dispatch

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        with acting(*_caller(ctx)):
            tools = await anyio.to_thread.run_sync(
                lambda: definitions(self.served.tool_context(), output_schemas=True)
            )
        return types.ListToolsResult(tools=[_tool(t) for t in tools])

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            actor, principal = _caller(ctx, params.meta)
        except ActorError as exc:
            answer = failure(exc.code, str(exc))
            text = types.TextContent(text=json.dumps(answer, ensure_ascii=False))
            return types.CallToolResult(content=[text], is_error=True)
        with acting(actor, principal):  # the worker thread runs in a copy of this context
            answer = await anyio.to_thread.run_sync(
                lambda: self.dispatch(self.served, params.name, arguments, principal)
            )
        error = answer.get("error")
        if isinstance(error, dict) and error.get("code") == "unknown_tool":
            raise MCPError(code=types.INVALID_PARAMS, message=error["message"], data=answer)
        failed = refused(answer)  # the handler's own structured refusal
        text = types.TextContent(text=json.dumps(answer, ensure_ascii=False))
        return types.CallToolResult(
            content=[text], structured_content=None if failed else answer, is_error=failed
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        start = int(params.cursor) if params and params.cursor and params.cursor.isdigit() else 0
        with acting(*_caller(ctx)):
            answer = await anyio.to_thread.run_sync(
                lambda: self.served.list(limit=PAGE, offset=start)
            )
        single = _single(self.served)
        resources = [
            types.Resource(
                uri=f"{SCHEME}{d.get('library', single)}/{d['id']}",
                name=d.get("ref", d["id"]),
                title=d.get("title"),
                description=d.get("summary"),
                mime_type="text/markdown",
            )
            for d in answer.get("docs", [])
        ]
        following = answer.get("next_offset")
        return types.ListResourcesResult(
            resources=resources, next_cursor=str(following) if following else None
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        with acting(*_caller(ctx)):
            names = await anyio.to_thread.run_sync(lambda: self.served.tool_context().libraries)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}{name}/{{id}}",
                    name=f"{name}-doc",
                    description=f"One doc of the {name} library as markdown, by id",
                    mime_type="text/markdown",
                )
                for name in names
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        with acting(*_caller(ctx)):
            found = await anyio.to_thread.run_sync(lambda: _read(self.served, uri))
        if found is None:
            message = (
                f"no resource {uri}; resources are {SCHEME}<library>/<doc id>[/<attached file>]"
            )
            raise MCPError(code=RESOURCE_NOT_FOUND, message=message, data={"uri": uri})
        return types.ReadResourceResult(contents=[found])


def _caller(
    ctx: ServerRequestContext[Any], meta: Mapping[str, Any] | None = None
) -> tuple[Actor | None, str | None]:
    """(for whom, from the request's `_meta` or else its headers; who is asking, as the
    HTTP gate authenticated them). Both None over stdio: the process that started the
    server is its only client. Read from each request rather than trusted to the context
    the gate set: a session task inherits the context of the request that started it,
    which in a stateful session is the first request, not this one. Raises `ActorError`
    for an actor context that is not valid."""
    request = getattr(ctx, "request", None)
    principal = getattr(getattr(request, "state", None), "principal", None)
    actor = from_meta(meta)
    if actor is None and request is not None:
        actor = from_headers({k.lower(): v for k, v in request.headers.raw})
    return actor, (principal if isinstance(principal, str) else None)


def _tool(t: dict[str, Any]) -> types.Tool:
    hints = t["annotations"]
    return types.Tool(
        name=t["name"],
        title=t.get("title"),
        description=t["description"],
        input_schema=t["inputSchema"],
        output_schema=t["outputSchema"],
        annotations=types.ToolAnnotations(
            read_only_hint=hints.get("readOnlyHint"),
            destructive_hint=hints.get("destructiveHint"),
            idempotent_hint=hints.get("idempotentHint"),
            open_world_hint=hints.get("openWorldHint"),
        ),
    )


def _single(served: Served) -> str:
    names = served.tool_context().libraries
    return names[0] if names else ""


def _read(
    served: Served, uri: str
) -> types.TextResourceContents | types.BlobResourceContents | None:
    """A doc or an attached file, all of it, by its resource URI: a text too long for one
    answer is read page by page."""
    if not uri.startswith(SCHEME):
        return None
    library, _, rest = uri[len(SCHEME) :].partition("/")
    doc_id, _, attached = rest.partition("/")
    if not library or not doc_id:
        return None
    ref = f"{library}:{doc_id}"
    read: tuple[str, Mapping[str, Any]] | None
    if not attached:
        read = _pieces(lambda offset: served.get(ref, offset=offset))
    else:
        path = attached
        got = served.resource(ref, path)
        error = got.get("error")
        if "content_base64" in got:
            media = got.get("media_type")
            return types.BlobResourceContents(uri=uri, blob=got["content_base64"], mime_type=media)
        if isinstance(error, dict) and error.get("code") == "too_large":
            read = _pieces(lambda offset: served.resource(ref, path, offset=offset))
        else:
            read = (got.get("content", ""), got) if got.get("found") else None
    if read is None:
        return None
    text, first = read
    media = first.get("media_type", "text/markdown")
    return types.TextResourceContents(uri=uri, text=text, mime_type=media)


def _pieces(read: Callable[[int], Mapping[str, Any]]) -> tuple[str, Mapping[str, Any]] | None:
    """A text read answer by answer (`read(offset)`), following `next_offset`: (the text,
    its first answer), or None when it is not there."""
    pieces: list[str] = []
    offset: int | None = 0
    first: Mapping[str, Any] = {}
    while offset is not None and len(pieces) < MAX_PIECES:
        answer = read(offset)
        if not answer.get("found"):
            return None
        first = first or answer
        pieces.append(answer.get("content", ""))
        offset = answer.get("next_offset")
    return "".join(pieces), first


def http_app(
    served: Served,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    log: RequestLog | None = None,
) -> tuple[ASGIApp, Callable[[], Any]]:
    """(the streamable-HTTP endpoint, a factory of the lifespan it needs). Requests must
    come with a Host of the server and, from browsers, an Origin of the same hosts: the
    DNS-rebinding protection the MCP transport specification requires. With `log`, every
    tool call is written to it."""
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import (
        TransportSecurityMiddleware,
        TransportSecuritySettings,
    )

    named = [] if host in ("0.0.0.0", "::") else [f"[{host}]" if ":" in host else host]
    hosts = list(dict.fromkeys([*LOOPBACK_HOSTS, *named, *allowed_hosts]))
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
        app=build_server(served, log.caller("mcp") if log is not None else call),
        stateless=True,
        json_response=True,
        security_settings=security,
    )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return _Endpoint(
        StreamableHTTPASGIApp(manager), TransportSecurityMiddleware(security)
    ), lifespan


class _Endpoint:
    """POST and DELETE go to the SDK. GET would open an event stream, which a stateless
    server never uses: it is refused at once (after the same Host and Origin checks),
    never left hanging."""

    def __init__(self, endpoint: ASGIApp, guard: Any) -> None:
        self.endpoint, self.guard = endpoint, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        if scope["type"] != "http" or scope["method"] != "GET":
            await self.endpoint(scope, receive, send)
            return
        response = await self.guard.validate_request(Request(scope, receive), is_post=False)
        if response is None:
            message = (
                "this is an MCP endpoint (streamable HTTP, stateless): POST JSON-RPC messages "
                "with Accept: application/json, text/event-stream; it opens no stream on GET"
            )
            body = {"error": {"code": "method_not_allowed", "message": message}}
            response = JSONResponse(body, 405, headers={"Allow": "POST, DELETE"})
        await response(scope, receive, send)
