"""`handbook serve`: one process serving the site for people and the libraries for agents.

Routes (an ASGI app, Starlette; uvicorn runs it):

- ``/api/v1/``: an index of the API (routes, tools, libraries).
- ``/api/v1/<verb>`` (or ``/api/v1/<tool name>``) for every tool of the table
  (`handbook.tools.table`): GET with a query
  string or POST with a JSON object; the body is the handler's dict exactly. 200, or
  404 for a doc, section or tool that is not there, or 400 for arguments or a query the
  handler refused. ``/api/v1/status`` says what is served; ``/api/v1/openapi.json``
  describes all of it.
- ``/mcp``: MCP over streamable HTTP (`handbook.serve.mcp`), POST only.
- ``/inbox``: the operators' page of open inbox records (`handbook.serve.inbox_page`),
  for a served library with an inbox, behind tokens only.
- ``/bundle/<file>``: the bundle's files, looked up by name in the verified manifest
  and served from memory as verified (ETag = their sha256; content files, named by
  their hash, are cacheable for good). With several libraries, each is also under
  ``/bundle/<library>/``; ``/bundle/<file>`` is the first library's.
- anything else: the static site, from a map of its files made once at start.

No filesystem path is ever built from request data. Every request passes the `Gate`
first (`handbook.serve.gate`): its Host and Origin must be the server's own, protected paths
need a known bearer token, and each client's request rate is capped.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from ..access.principals import Principals
from ..bundle.canonical import NestingError, load_untrusted
from ..bundle.gzip_transfer import GZIPPED, accepts_gzip
from ..bundle.layout import MANIFEST, is_content
from ..bundle.local import Bundle
from ..errors import BundleError, SkillsError
from ..skills.export import WELL_KNOWN, Published
from ..tools.dispatch import Dispatch, call, failure, from_text
from ..tools.model import Tool
from ..tools.served import Served
from ..tools.table import BY_NAME, BY_VERB, served_tools
from .gate import Gate, host_names
from .inbox_page import INBOX, inbox_page
from .openapi import API, openapi
from .request_log import RequestLog
from .site import SiteFiles

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
MAX_PARAM_CHARS = 4096
"""Longer query parameters are refused before they reach a handler (414-like, as 400)."""
MAX_BODY_BYTES = 256 * 1024
"""A POSTed argument object larger than this is refused unread."""


def create_app(
    served: Served,
    *,
    site: Path | None = None,
    token: str | None = None,
    principals: Principals | None = None,
    mcp: tuple[ASGIApp, Callable[[], Any]] | None = None,
    hosts: frozenset[str] | None = None,
    protect_site: bool = False,
    rate: float = 0.0,
    burst: int = 0,
    log: RequestLog | None = None,
) -> ASGIApp:
    """The app for `served` (a `Library`, a `Shelf`, a `RemoteLibrary`, …), behind the
    `Gate`: requests must name one of `hosts` (loopback by default); with `principals`
    (or one `token`) the API, MCP and the bundles — and the site with `protect_site` —
    need a known bearer token; `rate` and `burst` cap each client's requests. `mcp` is
    (the ASGI app to mount at /mcp, its lifespan context factory). With `log`, every
    tool call of the API is written to it."""
    if token and principals is None:
        principals = Principals.single(token)
    endpoints = _Endpoints(served, log.caller("http") if log is not None else call, site)
    routes: list[Route] = [
        Route(API, endpoints.index, methods=["GET"]),
        Route(API + "/", endpoints.index, methods=["GET"]),
        Route(API + "/{name}", endpoints.api, methods=["GET", "POST"]),
        Route("/bundle/{name:path}", endpoints.bundle_file, methods=["GET", "HEAD"]),
        Route(f"/{WELL_KNOWN}/{{path:path}}", endpoints.skills_file, methods=["GET", "HEAD"]),
    ]
    lifespan = None
    if mcp is not None:
        mcp_app, mcp_lifespan = mcp
        routes.append(Route("/mcp", endpoint=mcp_app))  # a Route: a Mount would redirect /mcp

        def lifespan(app: Starlette) -> Any:
            return mcp_lifespan()

    if endpoints.inbox is not None and principals is not None:
        routes.append(Route(INBOX, endpoints.inbox_page, methods=["GET"]))
    routes.append(Route("/{path:path}", endpoints.site_file, methods=["GET", "HEAD"]))
    protected = (API, "/mcp", "/bundle", f"/{WELL_KNOWN}", INBOX) + (("/",) if protect_site else ())
    return Gate(
        Starlette(routes=routes, lifespan=lifespan),
        hosts=hosts if hosts is not None else host_names("127.0.0.1"),
        principals=principals or None,
        protected=protected,
        rate=rate,
        burst=burst,
        admits=getattr(served, "admits", None),  # an AudienceRouter's, or a Writable's over one
    )


class _Endpoints:
    """The app's request handlers, over what it serves. Reading the bundles or the skills
    runs in a worker thread: the first gzip of a big file, or making an audience's skills,
    takes a moment."""

    def __init__(self, served: Served, dispatch: Dispatch, site: Path | None) -> None:
        self.served, self.dispatch = served, dispatch
        self.files = SiteFiles(site)
        self.published = Published()
        self.inbox = getattr(served, "inbox", None)
        """A `Writable`'s inbox: its open records are shown at ``/inbox``."""

    async def index(self, request: Request) -> Response:
        principal = getattr(request.state, "principal", None)
        return _json({**api_index(self.served), "principal": principal})

    async def api(self, request: Request) -> Response:
        """A tool by verb or name, or the API's own `status` and `openapi.json`."""
        name = request.path_params["name"]
        if name in ("status", "openapi.json"):
            return self._about(request, name)
        principal = getattr(request.state, "principal", None)
        tool = BY_VERB.get(name) or BY_NAME.get(name)
        if tool is None:  # the table's own refusal of an unknown tool
            return _json(self.dispatch(self.served, name, None, principal), 404)
        arguments = await _arguments(request, tool)
        if isinstance(arguments, Response):
            return arguments
        answer = self.dispatch(self.served, tool.name, arguments, principal)
        return _json(answer, status_of(answer))

    def _about(self, request: Request, name: str) -> Response:
        if request.method == "POST":
            message = f"{API}/{name} answers GET only"
            return _json(failure("method_not_allowed", message), 405, {"Allow": "GET"})
        try:
            if name == "openapi.json":
                return JSONResponse(openapi(self.served))
            return _json(dict(self.served.status()))
        except BundleError as exc:
            return _json(failure("bundle_unavailable", str(exc)), 503)

    async def bundle_file(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            return await anyio.to_thread.run_sync(
                lambda: _bundle_file(request, self.served.bundles(), name)
            )
        except BundleError as exc:  # a file changed on disk since it was opened: never served
            return _json(failure("bundle_unavailable", str(exc)), 503)

    async def skills_file(self, request: Request) -> Response:
        try:
            bundles, path = self.served.bundles(), request.path_params["path"]
            found = await anyio.to_thread.run_sync(self.published.file, bundles, path)
        except SkillsError as exc:
            return _json(failure("skills_unavailable", str(exc)), 500)
        except BundleError as exc:
            return _json(failure("bundle_unavailable", str(exc)), 503)
        if found is None:
            return Response("no such skill or file\n", 404, media_type="text/plain")
        data, media = found
        etag = f'"{hashlib.sha256(data).hexdigest()}"'
        return _conditional(
            request, data, media, etag, REVALIDATE, {"X-Content-Type-Options": "nosniff"}
        )

    async def site_file(self, request: Request) -> Response:
        files = self.files
        path, redirect = files.find(request.url.path)
        if redirect is not None:
            return RedirectResponse(redirect, status_code=301)
        data = files.read(path) if path is not None else None
        if path is None or data is None:
            missing = files.files.get("404.html")
            page = files.read(missing) if missing is not None else None
            media = "text/html" if page else "text/plain"
            return Response(page or b"not found\n", 404, media_type=media)
        return Response(
            data, media_type=_media_type(path.name), headers={"Cache-Control": REVALIDATE}
        )

    async def inbox_page(self, request: Request) -> Response:
        """Served only when `served` has an inbox and the app has principals."""
        filed = {b.manifest.signed.identity for b in self.served.bundles().values()}
        return await anyio.to_thread.run_sync(lambda: inbox_page(self.inbox, filed))


def api_index(served: Served) -> dict[str, Any]:
    """What `GET /api/v1/` answers: where everything is, and what the tools say about
    the libraries (a `RemoteLibrary` reads its tool context from here)."""
    context = served.tool_context()
    return {
        "api": API,
        "openapi": f"{API}/openapi.json",
        "status": f"{API}/status",
        "mcp": "/mcp",
        "bundles": {name: f"/bundle/{name}/" for name in served.bundles()},
        "tools": [
            {
                "name": t.name,
                "route": f"{API}/{t.verb}",
                "methods": ["GET", "POST"],
                "summary": t.summary,
            }
            for t in served_tools(context)
        ],
        "context": context._asdict(),
    }


async def _arguments(request: Request, tool: Tool) -> dict[str, Any] | Response:
    """The tool's arguments: a POST's JSON object, or a GET's query string read as text
    (`handbook.tools.dispatch.from_text`); or the 400 or 413 that refuses them."""
    if request.method == "POST":
        return await _body(request)
    pairs = request.query_params.multi_items()
    if any(len(k) > MAX_PARAM_CHARS or len(v) > MAX_PARAM_CHARS for k, v in pairs):
        message = f"query parameters are limited to {MAX_PARAM_CHARS} characters"
        return _json(failure("too_long", message), 400)
    arguments, problem = from_text(tool, pairs)
    if problem:
        return _json(failure("bad_arguments", problem), 400)
    return arguments


async def _body(request: Request) -> dict[str, Any] | Response:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _json(failure("too_long", f"the body is limited to {MAX_BODY_BYTES:,} bytes"), 413)
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            return _json(
                failure("too_long", f"the body is limited to {MAX_BODY_BYTES:,} bytes"), 413
            )
    try:  # bounded: a few thousand nested brackets would exhaust the parser's recursion
        arguments = load_untrusted(data or b"{}")
    except NestingError as exc:
        return _json(failure("bad_arguments", f"the body is {exc}"), 400)
    except ValueError:
        return _json(failure("bad_arguments", "the body must be a JSON object of arguments"), 400)
    if not isinstance(arguments, dict):
        return _json(failure("bad_arguments", "the body must be a JSON object of arguments"), 400)
    return arguments


def _bundle_file(request: Request, bundles: Mapping[str, Bundle], name: str) -> Response:
    """`name` in the first library's bundle, or `<library>/<name>` in that library's."""
    found: tuple[Bundle, str] | None = None
    library, _, rest = name.partition("/")
    if library in bundles and rest and _listed(bundles[library], rest):
        found = (bundles[library], rest)
    elif bundles:
        first = next(iter(bundles.values()))
        if _listed(first, name):
            found = (first, name)
    if found is None:
        return Response("not in this bundle\n", 404, media_type="text/plain")
    bundle, path = found
    data = bundle.read(path)
    entry = bundle.entry(path)
    digest = hashlib.sha256(data).hexdigest() if entry is None else entry.sha256
    cache = IMMUTABLE if is_content(path) else REVALIDATE
    if accepts_gzip(request.headers.get("accept-encoding", "")) and (
        packed := GZIPPED.get(digest, data, path)
    ):
        extra = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        return _conditional(request, packed, _media_type(path), f'"{digest}-gz"', cache, extra)
    extra = {"Vary": "Accept-Encoding"}
    return _conditional(request, data, _media_type(path), f'"{digest}"', cache, extra)


def _conditional(
    request: Request,
    data: bytes,
    media_type: str,
    etag: str,
    cache: str,
    extra: Mapping[str, str] | None = None,
) -> Response:
    """`data`, or 304 when the request already holds it (`If-None-Match`)."""
    headers = {"ETag": etag, "Cache-Control": cache, **(extra or {})}
    if etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


def _listed(bundle: Bundle, path: str) -> bool:
    """The manifest, a file it lists, or a content file the catalog refers to."""
    return path == MANIFEST or bundle.entry(path) is not None


def status_of(answer: Mapping[str, Any]) -> int:
    """The HTTP status of a handler's answer."""
    error = answer.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if code in ("internal_error", "integrity_error"):  # the server's fault, not the caller's
        return 500
    if answer.get("found") is False or code in ("unknown_tool", "unknown_id"):
        return 404
    return 400 if error else 200


def _json(
    answer: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status, media_type="application/json", headers=dict(headers or {}))


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def _media_type(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown; charset=utf-8"
    if name.endswith((".json", ".txt")):
        return ("application/json" if name.endswith(".json") else "text/plain") + "; charset=utf-8"
    if name.endswith(".gz"):  # sent as stored: guess_type would call index.json.gz JSON
        return "application/gzip"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"
