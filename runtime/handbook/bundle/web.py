"""Where the runtime may go on the network, and where a server may send it.

A remote bundle and a `handbook serve` are reached over https, or over plain http only
on the loopback interface, unless the caller allows plain http on purpose: a bundle's
signature protects its bytes, but not who learns what an agent reads, nor a bearer
token sent along. A redirect is followed only to https (or to plain http where that is
allowed) on the same host, or on a host the caller names: a mirror cannot send a reader
to a file on its own disk, to another scheme, or to someone else's server.

A fetch may also be given a deadline: every wait of the exchange (connect, TLS
handshake, status line, headers, body, and the same for each redirect) then ends by
it, DNS resolution aside. A socket timeout alone bounds each read, not the exchange:
a host sending one byte a second would hold a reader for as long as it liked. An opener
costs about 2 ms to build, so one that makes many requests (a remote reader's range
requests) builds a `timed_opener` once and gives each request its own deadline
(`timed`).
"""

from __future__ import annotations

import functools
import http.client
import io
import ipaddress
import math
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection
from http.client import HTTPMessage
from typing import IO, Any, cast

from .locations import scheme_problem


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_problem(url: str, allow_http: bool = False) -> str | None:
    """Why the runtime will not fetch `url`, or None."""
    parts = urllib.parse.urlsplit(url)
    problem = scheme_problem(parts.scheme)
    if problem is not None:
        return problem
    if not parts.hostname:
        return "not an http(s) URL: it names no host"
    if parts.scheme == "http" and not (allow_http or is_loopback(parts.hostname)):
        return (
            "plain http to a host that is not loopback; use https (or allow plain http on purpose)"
        )
    return None


class _Redirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, allow_http: bool, hosts: Collection[str]) -> None:
        super().__init__()
        self.allow_http, self.hosts = allow_http, {h.lower() for h in hosts}

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        origin = (urllib.parse.urlsplit(req.full_url).hostname or "").lower()
        target = urllib.parse.urlsplit(newurl)
        problem = url_problem(newurl, self.allow_http)
        if problem is None and (target.hostname or "").lower() not in {origin, *self.hosts}:
            problem = "another host; a redirect is followed only within the same host"
        if problem is not None:
            reason = f"redirect to {newurl[:200]} refused: {problem}"
            raise urllib.error.HTTPError(req.full_url, code, reason, headers, fp)
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and hasattr(req, _DEADLINE):  # the redirect ends by it too
            timed(new, getattr(req, _DEADLINE))
        return new


def opener(
    allow_http: bool = False, redirect_hosts: Collection[str] = (), deadline: float | None = None
) -> urllib.request.OpenerDirector:
    """An opener that keeps these rules on every redirect (and opens nothing but http(s)).
    With a `deadline` (a `time.monotonic()` value) every wait ends by then, each also
    within the `timeout` given to `open`; a wait cut short raises `TimeoutError`."""
    handlers: list[Any] = [_Redirects(allow_http, redirect_hosts)]
    if deadline is not None:
        handlers += [_InTimeHTTP(deadline), _InTimeHTTPS(deadline)]
    return urllib.request.build_opener(*handlers)


def timed_opener(
    allow_http: bool = False, redirect_hosts: Collection[str] = ()
) -> urllib.request.OpenerDirector:
    """An opener as `opener` makes, for many requests: each ends by the deadline `timed`
    gave it (a request without one has none but its `timeout` per wait)."""
    redirects = _Redirects(allow_http, redirect_hosts)
    return urllib.request.build_opener(redirects, _InTimeHTTP(None), _InTimeHTTPS(None))


_DEADLINE = "handbook_deadline"


def timed(request: urllib.request.Request, deadline: float) -> urllib.request.Request:
    """`request`, to end by `deadline` (a `time.monotonic()` value) in a `timed_opener`."""
    setattr(request, _DEADLINE, deadline)
    return request


def _deadline_of(request: urllib.request.Request, fixed: float | None) -> float:
    """The deadline an opener's handler applies: the request's own, else the opener's."""
    own = getattr(request, _DEADLINE, None)
    return own if own is not None else (fixed if fixed is not None else math.inf)


def _wait(deadline: float, per_wait: float) -> float:
    """The longest the next wait may take: what is left before `deadline`, at most
    `per_wait`; a `TimeoutError` once the deadline has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return min(left, per_wait)


class _InTimeReader(io.RawIOBase):
    """A response's socket, each read of it waiting only for what is left before the
    deadline (the buffered reader above may read many times for one header line)."""

    def __init__(
        self, raw: io.RawIOBase, sock: socket.socket, deadline: float, per_wait: float
    ) -> None:
        super().__init__()
        self._raw, self._sock, self._deadline, self._per_wait = raw, sock, deadline, per_wait

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_wait(self._deadline, self._per_wait))
        return self._raw.readinto(buffer)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()
        super().close()


class _InTimeResponse(http.client.HTTPResponse):
    def __init__(
        self, sock: socket.socket, *args: Any, deadline: float, per_wait: float, **kwargs: Any
    ) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_InTimeReader(self.fp.detach(), sock, deadline, per_wait))


class _InTimeConnection(http.client.HTTPConnection):
    """A connection whose connect, handshake and response reads all end by `deadline`."""

    def __init__(self, host: str, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(host, *args, **kwargs)
        per_wait = self.timeout if isinstance(self.timeout, (int, float)) else math.inf
        self.deadline, self.per_wait = deadline, float(per_wait)
        self._create_connection = self._connect  # http.client's hook for making the socket
        response = functools.partial(_InTimeResponse, deadline=deadline, per_wait=self.per_wait)
        self.response_class = cast("type[http.client.HTTPResponse]", response)

    def _connect(
        self, address: tuple[str, int], timeout: object, source: tuple[str, int] | None = None
    ) -> socket.socket:
        sock = socket.create_connection(address, _wait(self.deadline, self.per_wait), source)
        try:  # what is left is all the TLS handshake that follows may take
            sock.settimeout(_wait(self.deadline, self.per_wait))
        except TimeoutError:
            sock.close()
            raise
        return sock


class _InTimeTLSConnection(_InTimeConnection, http.client.HTTPSConnection):
    pass


class _InTimeHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: float | None) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        deadline = _deadline_of(req, self.deadline)
        return self.do_open(functools.partial(_InTimeConnection, deadline=deadline), req)


class _InTimeHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: float | None) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        deadline = _deadline_of(req, self.deadline)
        connection = functools.partial(_InTimeTLSConnection, deadline=deadline)
        return self.do_open(connection, req)
