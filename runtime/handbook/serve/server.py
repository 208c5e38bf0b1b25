"""Running `handbook serve`: bind, watch for new bundles, serve until interrupted."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..access.principals import Principals
from ..bundle.locations import is_url
from ..libraries.library import Library
from ..libraries.reloader import Reloader
from ..search.array_loading import for_a_server
from ..tools.served import Served
from .connections import Limits, guarded_protocol, raise_file_limit
from .gate import DEFAULT_BURST, DEFAULT_RATE, host_names
from .http import create_app
from .openapi import API
from .request_log import RequestLog

DEFAULT_LIMITS = Limits()
BACKLOG = 128
"""Connections the kernel queues, and the most the server accepts in one go."""
RESERVED_FILES = 100
"""Open files kept for the bundles, the site and the process itself."""
REMOTE_POLL_SECONDS = 60.0
"""A remote bundle is polled this often at most (each poll downloads its manifest)."""


def serve(
    served: Served,
    watched: Mapping[str, Library] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    site: Path | None = None,
    principals: Principals | None = None,
    protect_site: bool = False,
    reload_interval: float = 2.0,
    allowed_hosts: Sequence[str] = (),
    rate: float = DEFAULT_RATE,
    burst: int = DEFAULT_BURST,
    limits: Limits = DEFAULT_LIMITS,
    announce: Callable[[str], None] = print,
    log: RequestLog | None = None,
) -> None:
    """Serve until interrupted (Ctrl-C ends it quietly). `watched` maps each bundle's
    path or URL to its library, reloaded when a new bundle is published there. The
    socket is bound first, so the announced address is the real one even with port 0.
    Who may ask is `principals` (and the host names); `rate`, `burst` and `limits` keep
    one client from starving the others (`handbook.serve.gate`, `handbook.serve.connections`). Every
    tool call, over the API and MCP, is written to `log` (`handbook.serve.request_log`)."""
    import uvicorn

    from .mcp import http_app

    for_a_server()
    limits = within_file_limit(limits)
    app = create_app(
        served,
        site=site,
        principals=principals,
        mcp=http_app(served, host, allowed_hosts, log),
        hosts=host_names(host, allowed_hosts),
        protect_site=protect_site,
        rate=rate,
        burst=burst,
        log=log,
    )
    sock = listening(host, port)
    reloaders = reloaders_of(watched or {}, reload_interval, announce)
    for reloader in reloaders:
        reloader.start()
    announce(announcement(served, watched, host, sock.getsockname()[1], principals))
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", http=guarded_protocol(limits), backlog=BACKLOG
    )
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        for reloader in reloaders:
            reloader.stop()
        sock.close()


def reloaders_of(
    watched: Mapping[str, Library], interval: float, announce: Callable[[str], None]
) -> list[Reloader]:
    """A reloader per watched bundle, each announcing what it reloads or refuses; a remote
    one polls every REMOTE_POLL_SECONDS at most, since each poll downloads its manifest."""
    return [
        Reloader(
            library,
            path,
            max(interval, REMOTE_POLL_SECONDS) if is_url(path) else interval,
            on_reload=lambda answer: announce(describe_reload(answer)),
        )
        for path, library in watched.items()
    ]


def within_file_limit(limits: Limits) -> Limits:
    """`limits`, with fewer connections where the process may open too few files: the
    cap, not the system, must decide. Room is kept for the bundles, and for a batch of
    accepts (up to BACKLOG at once) made before the oldest are closed."""
    files = raise_file_limit()
    if files <= 0:
        return limits
    room = max(files - RESERVED_FILES - 2 * BACKLOG, 16)
    return limits._replace(max_connections=min(limits.max_connections, room))


def announcement(
    served: Served,
    watched: Mapping[str, Library] | None,
    host: str,
    port: int,
    principals: Principals | None,
) -> str:
    """The line `handbook serve` starts with: what it serves, and where."""
    shown = f"[{host}]" if ":" in host else host
    tokens = (
        f"  (bearer tokens of {len(principals.names)} principal(s) required)" if principals else ""
    )
    return (
        f"serving {describe(served, watched)} at http://{shown}:{port}/  API {API}/  MCP /mcp"
        + tokens
    )


def listening(host: str, port: int) -> socket.socket:
    """A socket bound and already listening: a client that connects as soon as the address
    is announced waits in the kernel's queue until the server accepts, never refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    return sock


def describe(served: Served, watched: Mapping[str, Library] | None = None) -> str:
    """What is served, from the manifests (the catalogs wait for the first request):
    each watched library's bundle, named with its audience when it has one (a server of
    several audiences serves each a bundle of the same library), else what `served`
    lists."""
    bundles = [lib.bundle for lib in (watched or {}).values()] or list(served.bundles().values())
    if not bundles:
        return "a remote library"
    parts = []
    for bundle in bundles:
        signed = bundle.manifest.signed
        parts.append(
            f"{signed.identity} {signed.version} ({signed.docs} docs, signature {bundle.signature_state})"
        )
    return ", ".join(parts)


def describe_reload(answer: Mapping[str, Any]) -> str:
    if answer.get("reloaded"):
        return f"reloaded: {answer['library']} {answer['version']}"
    return (
        f"kept {answer.get('library')} {answer.get('version')}: "
        f"the new bundle was refused ({answer.get('error')})"
    )
