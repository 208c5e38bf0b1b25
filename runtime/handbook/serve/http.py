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
from ..bundle.manifest import utc_time
from ..errors import BundleError, HandbookError, SkillsError
from ..skills.export import WELL_KNOWN, Published
from ..tools.dispatch import call, failure, from_text
from ..tools.served import Served
from ..tools.table import BY_NAME, BY_VERB, served_tools
from .gate import Gate, host_names
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
    files = SiteFiles(site)
    dispatch = log.caller("http") if log is not None else call
    published = Published()

    async def index(request: Request) -> Response:
        principal = getattr(request.state, "principal", None)
        return _json({**api_index(served), "principal": principal})

    async def api(request: Request) -> Response:
        name = request.path_params["name"]
        tool = BY_VERB.get(name) or BY_NAME.get(name)
        if request.method == "POST" and name in ("status", "openapi.json"):
            return _json(
                failure("method_not_allowed", f"{API}/{name} answers GET only"),
                405,
                {"Allow": "GET"},
            )
        try:
            if name == "openapi.json":
                return JSONResponse(openapi(served))
            if name == "status":
                return _json(dict(served.status()))
        except BundleError as exc:
            return _json(failure("bundle_unavailable", str(exc)), 503)
        principal = getattr(request.state, "principal", None)
        if tool is None:  # the table's own refusal of an unknown tool
            return _json(dispatch(served, name, None, principal), 404)
        if request.method == "POST":
            arguments = await _body(request)
            if isinstance(arguments, Response):
                return arguments
        else:
            pairs = request.query_params.multi_items()
            if any(len(k) > MAX_PARAM_CHARS or len(v) > MAX_PARAM_CHARS for k, v in pairs):
                message = f"query parameters are limited to {MAX_PARAM_CHARS} characters"
                return _json(failure("too_long", message), 400)
            arguments, problem = from_text(tool, pairs)
            if problem:
                return _json(failure("bad_arguments", problem), 400)
        answer = dispatch(served, tool.name, arguments, principal)
        return _json(answer, status_of(answer))

    async def bundle_file(request: Request) -> Response:
        try:  # in a thread: the first gzip of a big file takes a moment
            return await anyio.to_thread.run_sync(
                lambda: _bundle_file(request, served.bundles(), request.path_params["name"])
            )
        except BundleError as exc:  # a file changed on disk since it was opened: never served
            return _json(failure("bundle_unavailable", str(exc)), 503)

    async def skills_file(request: Request) -> Response:
        try:  # in a thread: making an audience's skills and their index reads every doc
            bundles, path = served.bundles(), request.path_params["path"]
            found = await anyio.to_thread.run_sync(published.file, bundles, path)
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

    async def site_file(request: Request) -> Response:
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

    routes: list[Route] = [
        Route(API, index, methods=["GET"]),
        Route(API + "/", index, methods=["GET"]),
        Route(API + "/{name}", api, methods=["GET", "POST"]),
        Route("/bundle/{name:path}", bundle_file, methods=["GET", "HEAD"]),
        Route(f"/{WELL_KNOWN}/{{path:path}}", skills_file, methods=["GET", "HEAD"]),
    ]
    lifespan = None
    if mcp is not None:
        mcp_app, mcp_lifespan = mcp
        routes.append(Route("/mcp", endpoint=mcp_app))  # a Route: a Mount would redirect /mcp

        def lifespan(app: Starlette) -> Any:
            return mcp_lifespan()

    inbox = getattr(served, "inbox", None)
    if inbox is not None and (principals is not None or token):

        async def inbox_page(request: Request) -> Response:
            filed = {b.manifest.signed.identity for b in served.bundles().values()}
            return await anyio.to_thread.run_sync(lambda: _inbox_page(inbox, filed))

        routes.append(Route(INBOX, inbox_page, methods=["GET"]))
    routes.append(Route("/{path:path}", site_file, methods=["GET", "HEAD"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    if token and principals is None:
        principals = Principals.single(token)
    protected = (API, "/mcp", "/bundle", f"/{WELL_KNOWN}", INBOX) + (("/",) if protect_site else ())
    return Gate(
        app,
        hosts=hosts if hosts is not None else host_names("127.0.0.1"),
        principals=principals or None,
        protected=protected,
        rate=rate,
        burst=burst,
        admits=getattr(served, "admits", None),  # an AudienceRouter's, or a Writable's over one
    )


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


INBOX = "/inbox"
"""The operators' read-only page of open inbox records: served only behind tokens."""
MAX_INBOX_PAGE = 500
"""Open records the page shows: the newest of the asking principal's audience."""
MAX_INBOX_SCAN = 20_000
"""Open records read to find them (the caps keep a real inbox far below this)."""


def _inbox_page(inbox: Any, filed: set[str]) -> Response:
    """The open records filed under the asking principal's bundles (`filed`: each audience
    sees its own records only; all of them when nothing local is served), newest first;
    every value escaped (agents wrote them)."""
    from html import escape

    records: list[Any] = []
    try:  # oldest first, in pages: the newest MAX_INBOX_PAGE of this audience's are kept
        for offset in range(0, MAX_INBOX_SCAN, MAX_INBOX_PAGE):
            page = inbox.store.records(state="open", limit=MAX_INBOX_PAGE, offset=offset)
            records += [r for r in page if not filed or r.library in filed]
            records = records[-MAX_INBOX_PAGE:]
            if len(page) < MAX_INBOX_PAGE:
                break
    except HandbookError as exc:
        return Response(f"inbox unavailable: {exc}\n", 503, media_type="text/plain")
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(v))}</td>"
            for v in (
                r.id[:12], r.kind, f"{r.library}:{r.doc}", inbox.name_of(r.principal),
                utc_time(r.created_at), r.payload.get("section") or "",
                r.payload.get("basis", ""),
            )
        )
        + "</tr>"
        for r in reversed(records)
    )  # fmt: skip
    page = (
        "<!doctype html><meta charset=utf-8><title>Handbook inbox</title>"
        "<style>body{font:14px system-ui;margin:2rem}td,th{border-bottom:1px solid #ddd;"
        "padding:.3rem .5rem;text-align:left;vertical-align:top}</style>"
        f"<h1>Inbox: {len(records)} open record(s)</h1>"
        "<p>Read-only. Decide with <code>handbook inbox accept|reject ID</code>.</p>"
        "<table><tr><th>id</th><th>kind</th><th>doc</th><th>by</th><th>at</th>"
        f"<th>section</th><th>basis</th></tr>{rows}</table>"
    )
    return Response(
        page,
        media_type="text/html",
        headers={
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


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
    digest = (
        hashlib.sha256(data).hexdigest()
        if path == MANIFEST
        else bundle.manifest.signed.files[path].sha256
    )
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
    return path == MANIFEST or path in bundle.manifest.signed.files


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
