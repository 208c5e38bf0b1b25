"""Where the runtime may go on the network, and where a server may send it.

A remote bundle and a `handbook serve` are reached over https, or over plain http only
on the loopback interface, unless the caller allows plain http on purpose: a bundle's
signature protects its bytes, but not who learns what an agent reads, nor a bearer
token sent along. A redirect is followed only to https (or to plain http where that is
allowed) on the same host, or on a host the caller names: a mirror cannot send a reader
to a file on its own disk, to another scheme, or to someone else's server.
"""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection
from http.client import HTTPMessage
from typing import IO, Any


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
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname:
        if allow_http or is_loopback(parts.hostname):
            return None
        return (
            "plain http to a host that is not loopback; use https (or allow plain http on purpose)"
        )
    return "not an http(s) URL"


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
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def opener(
    allow_http: bool = False, redirect_hosts: Collection[str] = ()
) -> urllib.request.OpenerDirector:
    """An opener that keeps these rules on every redirect (and opens nothing but http(s))."""
    handlers: list[Any] = [_Redirects(allow_http, redirect_hosts)]
    return urllib.request.build_opener(*handlers)
