"""`handbook serve`: one process serving the site for people and the library for agents.

Routes (an ASGI app, Starlette; uvicorn runs it):

- ``/api/v1/list``, ``/get``, ``/search``, ``/status``: GET with query parameters; the
  body is the handler's dict exactly. 200, or 404 for a doc or section that is not
  there, or 400 for arguments or a query the handler refused.
- ``/api/v1/openapi.json``: the OpenAPI 3.1 document of those endpoints, made from the
  library's tool definitions.
- ``/mcp``: MCP over streamable HTTP (`handbook.mcp`).
- ``/bundle/<file>``: the bundle's files, looked up by name in the verified manifest and
  served from memory as verified (ETag = their sha256; content files, named by their
  hash, are cacheable for good).
- anything else: the static site, from a map of its files made once at start.

No filesystem path is ever built from request data: the request path is only a key
looked up in maps that were built from the manifest and from one walk of the site
folder. With a token, the API and MCP need ``Authorization: Bearer <token>``; the site
and the bundle (public, verifiable by anyone) do not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import mimetypes
import os
import stat
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import BundleError
from .layout import MANIFEST, TOOLS, is_content
from .library import Library

API = "/api/v1"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
MAX_PARAM_CHARS = 4096
"""Longer query parameters are refused before they reach a handler (414-like, as 400)."""


class SiteFiles:
    """The site folder as a map from URL path to file, made by one walk that does not
    follow symlinks. Requests are answered by lookup in the map only, and a file is read
    only while it is still the regular file the walk saw (same device and inode, opened
    without following links or blocking): swapping it for a link or a FIFO after the
    start serves nothing."""

    def __init__(self, root: Path | None) -> None:
        self.files: dict[str, Path] = {}
        self.identity: dict[Path, tuple[int, int]] = {}
        if root is None:
            return
        for folder, dirs, names in os.walk(root, followlinks=False):
            rel = os.path.relpath(folder, root)
            if rel == "bundle" or rel.startswith("bundle" + os.sep):
                dirs.clear()  # the bundle is served from the verified copy in memory
                continue
            for name in names:
                path = Path(folder) / name
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                key = name if rel == "." else f"{Path(rel).as_posix()}/{name}"
                self.files[key] = path
                self.identity[path] = (info.st_dev, info.st_ino)

    def read(self, path: Path) -> bytes | None:
        """The bytes of a mapped file, or None when it is no longer the file the walk saw."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != self.identity.get(
                path
            ):
                return None
            parts = []
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            return b"".join(parts)
        except OSError:
            return None
        finally:
            os.close(fd)

    def find(self, url_path: str) -> tuple[Path | None, str | None]:
        """(file, redirect): the file for a URL path, or where a folder URL without its
        slash should go."""
        key = url_path.lstrip("/")
        if key == "" or key.endswith("/"):
            key += "index.html"
        if key in self.files:
            return self.files[key], None
        if f"{key}/index.html" in self.files:
            return None, "/" + key + "/"
        return None, None


def create_app(
    library: Library,
    *,
    site: Path | None = None,
    token: str | None = None,
    mcp: tuple[ASGIApp, Callable[[], Any]] | None = None,
) -> Starlette:
    """The app. `mcp` is (ASGI app to mount at /mcp, its lifespan context factory)."""
    files = SiteFiles(site)

    async def api(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "openapi.json":
            try:
                return JSONResponse(openapi(library))
            except BundleError as exc:
                return _json({"error": {"code": "bundle_unavailable", "message": str(exc)}}, 503)
        params = dict(request.query_params)
        if any(len(k) > MAX_PARAM_CHARS or len(v) > MAX_PARAM_CHARS for k, v in params.items()):
            return _json(
                {
                    "error": {
                        "code": "too_long",
                        "message": f"query parameters are limited to {MAX_PARAM_CHARS} characters",
                    }
                },
                400,
            )
        answer = _call(library, name, params)
        if answer is None:
            return _json(
                {
                    "error": {
                        "code": "not_found",
                        "message": f"no endpoint {API}/{name}; see {API}/openapi.json",
                    }
                },
                404,
            )
        return _json(answer, _status(answer))

    async def bundle_file(request: Request) -> Response:
        try:
            return _bundle_file(request)
        except (
            BundleError
        ) as exc:  # a file changed on disk since the bundle was opened: never served
            return _json({"error": {"code": "bundle_unavailable", "message": str(exc)}}, 503)

    def _bundle_file(request: Request) -> Response:
        name = request.path_params["name"]
        bundle = library.bundle
        if name == MANIFEST:
            data = bundle.read(MANIFEST)
            digest = hashlib.sha256(data).hexdigest()
        else:
            entry = bundle.manifest.signed.files.get(name)
            if entry is None:
                return Response("not in this bundle\n", 404, media_type="text/plain")
            digest = entry.sha256
            data = bundle.read(name)
        etag = f'"{digest}"'
        headers = {"ETag": etag, "Cache-Control": IMMUTABLE if is_content(name) else REVALIDATE}
        if etag in _etags(request.headers.get("if-none-match", "")):
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=_media_type(name), headers=headers)

    async def site_file(request: Request) -> Response:
        path, redirect = files.find(request.url.path)
        if redirect is not None:
            return RedirectResponse(redirect, status_code=301)
        data = files.read(path) if path is not None else None
        if path is None or data is None:
            missing = files.files.get("404.html")
            page = files.read(missing) if missing is not None else None
            return Response(
                page or b"not found\n", 404, media_type="text/html" if page else "text/plain"
            )
        return Response(
            data, media_type=_media_type(path.name), headers={"Cache-Control": REVALIDATE}
        )

    routes: list[Route] = [
        Route(API + "/{name}", api, methods=["GET"]),
        Route("/bundle/{name:path}", bundle_file, methods=["GET", "HEAD"]),
    ]
    lifespan = None
    if mcp is not None:
        mcp_app, mcp_lifespan = mcp
        routes.append(
            Route("/mcp", endpoint=mcp_app)
        )  # a Route: a Mount would redirect POST /mcp to /mcp/

        def lifespan(app: Starlette) -> Any:
            return mcp_lifespan()

    routes.append(Route("/{path:path}", site_file, methods=["GET", "HEAD"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    if token:
        return _BearerToken(app, token, protected=(API, "/mcp"))  # type: ignore[return-value]
    return app


class _BearerToken:
    """Requires `Authorization: Bearer <token>` on the protected path prefixes."""

    def __init__(self, app: ASGIApp, token: str, protected: tuple[str, ...]) -> None:
        self.app, self.token, self.protected = app, token.encode(), protected

    def __getattr__(self, name: str) -> Any:  # the wrapped app's router, state, …
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.protected):
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                response = JSONResponse(
                    {
                        "error": {
                            "code": "unauthorized",
                            "message": "send Authorization: Bearer <token>",
                        }
                    },
                    401,
                    headers={"WWW-Authenticate": 'Bearer realm="handbook"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


ENDPOINT_PARAMS = {
    "status": (),
    "search": ("query", "limit", "lang"),
    "get": ("id", "doc_id", "section", "offset", "revision", "lang"),
    "ask": ("question", "limit"),
    "resource": ("id", "doc_id", "path", "revision"),
}
"""The parameters each endpoint takes; `list` also takes any frontmatter field as a filter."""


def _call(library: Library, name: str, params: Mapping[str, str]) -> dict[str, Any] | None:
    """The handler's answer for `name` with the query parameters (strings; the handlers
    check and convert them)."""
    params = dict(params)
    known = ENDPOINT_PARAMS.get(name)
    unknown = sorted(set(params) - set(known)) if known is not None else []
    if unknown:
        takes = ", ".join(known) if known else "no parameters"
        return {
            "error": {
                "code": "bad_parameter",
                "message": f"unknown parameter(s) {', '.join(unknown)}; this endpoint takes {takes}",
            }
        }
    if name == "status":
        return library.status()
    if name == "search":
        return library.search(
            params.get("query", ""), limit=_number(params.get("limit"), 10), lang=params.get("lang")
        )
    if name == "get":
        doc_id = params.get("id", params.get("doc_id", ""))
        return library.get(
            doc_id,
            section=params.get("section"),
            offset=_number(params.get("offset"), 0),
            revision=params.get("revision"),
            lang=params.get("lang"),
        )
    if name == "list":
        return library.list(
            query=params.pop("query", None), limit=_number(params.pop("limit", None), 20), **params
        )
    if name == "resource":
        return library.resource(
            params.get("id", params.get("doc_id", "")),
            params.get("path", ""),
            revision=params.get("revision"),
        )
    if name == "ask":
        return library.ask(params.get("question", ""), limit=_number(params.get("limit"), 3))
    if name == "collect":
        ids = [i for i in params.pop("ids").split(",") if i.strip()] if "ids" in params else None
        pairs = [p.partition("=") for p in params.pop("revisions", "").split(",") if p.strip()]
        return library.collect(
            query=params.pop("query", None),
            ids=ids,
            revisions={k.strip(): v.strip() for k, _, v in pairs} or None,
            limit=_number(params.pop("limit", None), 10),
            max_bytes=_number(params.pop("max_bytes", None), 32_000),
            **params,
        )
    return None


def _number(value: str | None, default: int) -> Any:
    """A whole-number parameter as an int; anything else as given, for the handler to
    refuse with its own message."""
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        return value


def _status(answer: Mapping[str, Any]) -> int:
    if answer.get("found") is False:
        return 404
    if answer.get("error"):
        code = answer["error"].get("code") if isinstance(answer["error"], dict) else None
        return 500 if code == "internal_error" else 400
    return 200


def _json(answer: Mapping[str, Any], status: int = 200) -> Response:
    body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status, media_type="application/json")


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def _media_type(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown; charset=utf-8"
    if name.endswith((".json", ".txt")):
        return ("application/json" if name.endswith(".json") else "text/plain") + "; charset=utf-8"
    guessed, _ = mimetypes.guess_type(name)
    return guessed or "application/octet-stream"


# -- OpenAPI ----------------------------------------------------------------------------------


def openapi(library: Library) -> dict[str, Any]:
    """OpenAPI 3.1 for the JSON API, from the library's tool definitions (so the HTTP
    parameters and answers are described exactly as agents' tools are)."""
    tools = {t["name"]: t for t in json.loads(library.bundle.read(TOOLS))["tools"]}
    signed = library.bundle.manifest.signed
    paths: dict[str, Any] = {}
    for endpoint, tool, rename in (
        ("list", "knowledge_list", {}),
        ("get", "knowledge_get", {"doc_id": "id"}),
        ("search", "knowledge_search", {}),
        ("collect", "knowledge_collect", {}),
        ("ask", "knowledge_ask", {}),
    ):
        if tool not in tools:  # a bundle built before the tool existed
            continue
        definition = tools[tool]
        schema = definition["inputSchema"]
        parameters = []
        for prop, prop_schema in schema["properties"].items():
            nullable = "null" in (prop_schema.get("type") or [])
            if "array" in (
                prop_schema.get("type") or []
            ):  # lists travel comma-separated in a query string
                described = (
                    "comma-separated ids" if prop == "ids" else "comma-separated id=revision pairs"
                )
                prop_schema = {
                    "type": "string",
                    "description": f"{prop_schema.get('description', '')} In the query string: {described}.",
                }
            parameters.append(
                {
                    "name": rename.get(prop, prop),
                    "in": "query",
                    "required": not nullable,
                    "description": prop_schema.get("description", ""),
                    "schema": {k: v for k, v in prop_schema.items() if k != "description"},
                }
            )
        if endpoint == "get":
            parameters.append(
                {
                    "name": "offset",
                    "in": "query",
                    "required": False,
                    "description": "Continue a long doc from a next_offset.",
                    "schema": {"type": "integer", "minimum": 0},
                }
            )
            parameters.append(
                {
                    "name": "revision",
                    "in": "query",
                    "required": False,
                    "description": "Serve only this exact revision; a changed doc answers 404 unavailable_revision.",
                    "schema": {"type": "string"},
                }
            )
        paths[f"{API}/{endpoint}"] = {
            "get": {
                "operationId": tool,
                "summary": definition.get("title", tool),
                "description": definition["description"],
                "parameters": parameters,
                "responses": {
                    "200": {
                        "description": "The handler's answer.",
                        "content": {"application/json": {"schema": definition["outputSchema"]}},
                    },
                    "400": {
                        "description": "Arguments or a query the handler refused (`error` says why).",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "404": {
                        "description": "No such doc or section (`suggestions` lists close ones).",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                },
            }
        }
    paths[f"{API}/status"] = {
        "get": {
            "operationId": "status",
            "summary": "What is served: library, version, signature state, doc count, load time.",
            "responses": {
                "200": {
                    "description": "Status.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "library": {"type": "string"},
                                    "version": {"type": "string"},
                                    "docs": {"type": "integer"},
                                    "signature": {"type": "string"},
                                    "loaded_at": {"type": "string"},
                                },
                                "required": [
                                    "library",
                                    "version",
                                    "docs",
                                    "signature",
                                    "loaded_at",
                                ],
                            }
                        }
                    },
                }
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"{signed.library} knowledge API",
            "version": signed.version,
            "description": "Read-only access to a verified Handbook bundle. Every answer is the Python handler's dict.",
        },
        "paths": paths,
    }


# -- watching for a new bundle -------------------------------------------------------------


class Reloader:
    """Swaps in a new bundle when the one at the library's path changes (a new build
    publishes by swapping a symlink). The library's reload verifies first and keeps the
    old bundle serving when the new one is refused; requests in flight finish on the
    bundle they started with."""

    def __init__(
        self,
        library: Library,
        path: str | os.PathLike[str],
        interval: float = 2.0,
        on_reload: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
    ) -> None:
        self.library, self.path, self.interval, self.on_reload = (
            library,
            Path(path),
            interval,
            on_reload,
        )
        self._stop = threading.Event()
        self._seen = self.fingerprint()
        self._thread = threading.Thread(target=self._run, name="handbook-reloader", daemon=True)

    def fingerprint(self) -> tuple[Any, ...]:
        try:
            target = os.path.realpath(self.path)
            info = os.stat(Path(target) / MANIFEST)
        except OSError:
            return ("missing",)
        return (target, info.st_ino, info.st_size, info.st_mtime_ns)

    def check(self) -> dict[str, Any] | None:
        """Reload if the bundle changed; the reload's answer, or None when unchanged."""
        now = self.fingerprint()
        if now == self._seen:
            return None
        self._seen = now
        answer = self.library.reload()
        if self.on_reload is not None:
            self.on_reload(answer)
        return answer

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:  # a watcher must outlive any one bad bundle
                continue


# -- running it --------------------------------------------------------------------------------


def serve(
    library: Library,
    bundle_path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    site: Path | None = None,
    token: str | None = None,
    reload_interval: float = 2.0,
    allowed_hosts: Sequence[str] = (),
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until interrupted. The socket is bound first, so the announced address is
    the real one even with port 0."""
    import socket

    import uvicorn

    app = create_app(library, site=site, token=token, mcp=_mcp(library, host, allowed_hosts))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    reloader = Reloader(
        library,
        bundle_path,
        reload_interval,
        on_reload=lambda answer: announce(_describe_reload(answer)),
    )
    reloader.start()
    signed = (
        library.bundle.manifest.signed
    )  # the manifest says it all; the catalog waits for the first request
    announce(
        f"serving {signed.library} {signed.version} ({signed.docs} docs, signature {library.bundle.signature_state}) "
        f"at http://{shown}:{bound}/  API {API}/  MCP /mcp"
        + ("  (bearer token required)" if token else "")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        reloader.stop()
        sock.close()


def _describe_reload(answer: Mapping[str, Any]) -> str:
    if answer.get("reloaded"):
        return f"reloaded: {answer['library']} {answer['version']}"
    return f"kept {answer.get('library')} {answer.get('version')}: the new bundle was refused ({answer.get('error')})"


def _mcp(
    library: Library, host: str, allowed_hosts: Sequence[str]
) -> tuple[ASGIApp, Callable[[], Any]]:
    from .mcp import http_app

    return http_app(library, host=host, allowed_hosts=allowed_hosts)
