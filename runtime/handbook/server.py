"""Running `handbook serve`: bind, watch for new bundles, serve until interrupted."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .http import create_app
from .library import Library
from .openapi import API
from .reloader import Reloader, is_url
from .served import Served

REMOTE_POLL_SECONDS = 60.0
"""A remote bundle is polled this often at most (each poll downloads its manifest)."""


def serve(
    served: Served,
    watched: Mapping[str, Library] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    site: Path | None = None,
    token: str | None = None,
    reload_interval: float = 2.0,
    allowed_hosts: Sequence[str] = (),
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until interrupted (Ctrl-C ends it quietly). `watched` maps each bundle's
    path or URL to its library, reloaded when a new bundle is published there. The
    socket is bound first, so the announced address is the real one even with port 0."""
    import socket

    import uvicorn

    from .mcp import http_app

    app = create_app(served, site=site, token=token, mcp=http_app(served, host, allowed_hosts))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    reloaders = [
        Reloader(
            library,
            path,
            max(reload_interval, REMOTE_POLL_SECONDS) if is_url(path) else reload_interval,
            on_reload=lambda answer: announce(describe_reload(answer)),
        )
        for path, library in (watched or {}).items()
    ]
    for reloader in reloaders:
        reloader.start()
    shown = f"[{host}]" if ":" in host else host
    announce(
        f"serving {describe(served)} at http://{shown}:{bound}/  API {API}/  MCP /mcp"
        + ("  (bearer token required)" if token else "")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
            server.run(sockets=[sock])
    finally:
        for reloader in reloaders:
            reloader.stop()
        sock.close()


def describe(served: Served) -> str:
    """What is served, from the manifests (the catalogs wait for the first request)."""
    bundles = served.bundles()
    if not bundles:
        return "a remote library"
    parts = []
    for bundle in bundles.values():
        signed = bundle.manifest.signed
        parts.append(
            f"{signed.library} {signed.version} ({signed.docs} docs, signature {bundle.signature_state})"
        )
    return ", ".join(parts)


def describe_reload(answer: Mapping[str, Any]) -> str:
    if answer.get("reloaded"):
        return f"reloaded: {answer['library']} {answer['version']}"
    return (
        f"kept {answer.get('library')} {answer.get('version')}: "
        f"the new bundle was refused ({answer.get('error')})"
    )
