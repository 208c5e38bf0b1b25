"""The gate every request of `handbook serve` passes first: who may ask, and how often.

- **Host.** A request must name one of the server's own hosts (loopback, the bound
  address, `--allow-host` names); any other answers 421. A web page that rebinds its own
  name to 127.0.0.1 (DNS rebinding) therefore reads nothing, on any route.
- **Origin.** A browser's `Origin`, when sent, must be one of the same hosts (403
  otherwise); ``null`` and other schemes are refused.
- **Who.** With principals (a token, or a tokens file), the protected paths (the API,
  MCP, the bundles, and the site with `--protect-site`) need `Authorization: Bearer` with
  a known token (401 otherwise); the principal's name is put in the request's state.
- **For whom.** An actor context in the `X-Handbook-*` headers (`handbook.access.actor`) is
  validated (400 otherwise) and set, with the principal, for the request.
- **Once.** `Host`, `Origin` and `Authorization` sent twice answer 400
  (`duplicate_header`), the `X-Handbook-*` headers 400 (`bad_actor`): a component
  that reads the first and one that reads the last must never judge different values.
- **How often.** Each client address has a token bucket: `rate` requests a second on
  average, bursts up to `burst`; beyond, 429 with `Retry-After`.

Every refusal is the API's JSON error shape.
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..access.actor import ActorError, acting, from_headers
from ..access.principals import Principals

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
DEFAULT_RATE = 100.0
"""Requests a second each client may make on average…"""
DEFAULT_BURST = 200
"""…and in a burst."""
MAX_TRACKED_CLIENTS = 10_000
"""Client buckets kept; the least recently seen are forgotten beyond this."""
SINGLE_HEADERS = (b"host", b"origin", b"authorization")
"""Headers a request may send once only: which of two credentials, or hosts, was meant?"""


def host_names(bound: str, allowed: Iterable[str] = ()) -> frozenset[str]:
    """The names a request may use for this server: loopback, the address it is bound to
    (unless it is a wildcard) and the operator's extra names."""
    names = {*LOOPBACK_NAMES, *(n.strip().lower().strip("[]") for n in allowed if n.strip())}
    if bound not in ("0.0.0.0", "::", ""):
        names.add(bound.lower().strip("[]"))
    return frozenset(names)


def _name_of(host: str) -> str:
    """The name part of a Host header value (`[::1]:8000` -> `::1`)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class Gate:
    """ASGI middleware: host, origin, principal and rate checks before `app`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: frozenset[str],
        principals: Principals | None = None,
        protected: tuple[str, ...] = (),
        rate: float = 0.0,
        burst: int = 0,
        admits: Callable[[str | None], bool] | None = None,
    ) -> None:
        self.app, self.hosts, self.principals, self.protected = app, hosts, principals, protected
        self.admits = admits
        """With audiences: whether a principal's audience is served (403 otherwise)."""
        self.rate, self.burst = rate, max(burst, 1)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __getattr__(self, name: str) -> Any:  # the wrapped app's router, state, …
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers", [])
        twice = _repeated(raw, SINGLE_HEADERS)
        if twice is not None:
            message = f"the {twice} header is sent more than once; send it once"
            await _refuse(send, 400, "duplicate_header", message)
            return
        headers = dict(raw)
        host = headers.get(b"host", b"").decode("latin-1")
        if _name_of(host) not in self.hosts:
            message = "this server does not answer to that host name; add it with --allow-host"
            await _refuse(send, 421, "misdirected", message)
            return
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            await _refuse(send, 403, "forbidden_origin", "requests from other origins are refused")
            return
        client = (scope.get("client") or ("", 0))[0]
        wait = self._take(client) if self.rate else 0.0
        if wait:
            message = f"too many requests from {client}; slow down"
            extra = [(b"retry-after", str(math.ceil(wait)).encode())]
            await _refuse(send, 429, "rate_limited", message, extra)
            return
        try:
            actor = from_headers(raw)
        except ActorError as exc:
            await _refuse(send, 400, exc.code, str(exc))
            return
        principal: str | None = None
        if self.principals is not None and scope["path"].startswith(self.protected):
            scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
            principal = self.principals.who(token.strip()) if scheme.lower() == b"bearer" else None
            if principal is None:
                extra = [(b"www-authenticate", b'Bearer realm="handbook"')]
                await _refuse(
                    send, 401, "unauthorized", "send Authorization: Bearer <token>", extra
                )
                return
            scope.setdefault("state", {})["principal"] = principal
            if self.admits is not None and not self.admits(principal):
                message = f"principal {principal!r} has no audience served here"
                await _refuse(send, 403, "forbidden", message)
                return
        elif (
            self.admits is not None
            and not self.admits(None)
            and scope["path"].startswith(self.protected)
        ):
            await _refuse(send, 401, "unauthorized", "send Authorization: Bearer <token>")
            return
        with acting(actor, principal):
            await self.app(scope, receive, send)

    def _origin_ok(self, origin: str) -> bool:
        parts = urllib.parse.urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self.hosts

    def _take(self, client: str) -> float:
        """Take a token from the client's bucket: 0.0, or the seconds until one is there."""
        now = time.monotonic()
        tokens, seen = self._buckets.pop(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - seen) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > MAX_TRACKED_CLIENTS:
            self._buckets.popitem(last=False)
        return wait


def _repeated(headers: Iterable[tuple[bytes, bytes]], names: Iterable[bytes]) -> str | None:
    """The first of `names` that `headers` (ASGI pairs) hold more than once, or None."""
    seen = Counter(name.lower() for name, _ in headers)
    return next((name.decode().title() for name in names if seen[name] > 1), None)


async def _refuse(
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
