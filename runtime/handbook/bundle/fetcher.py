"""Fetching one URL's bytes within a deadline and a size bound: the seam between the
remote reader (`handbook.bundle.remote`) and the network.

The reader asks a `Fetcher` for each file, giving the most bytes it may take and when
it must be done; everything it then checks (size, sha256, signature, version mark)
works on the bytes returned. `HttpFetcher` is the real one: it never reads more than
the bound + 1 byte, and the whole exchange, status line and headers included, ends by
the deadline (a stalled, slow or dripping server is cut off, `handbook.bundle.web`); a
server or CDN may send a file gzip-compressed, inflated here within the same bound.
Tests fake the seam, as python-tuf's tests fake its ``FetcherInterface``: a class with
one `fetch` method serving bytes from a dict runs the reader's checks without a server.

A `RangeFetcher` can also fetch one byte range of a file (`fetch_range`, an HTTP
``Range`` request), for files read chunk by chunk (`handbook.bundle.remote_chunks`). It
accepts a 206 only with exactly the range asked for (``Content-Range`` naming its first
and last byte and the file's listed size, no content encoding, a body of exactly that
length), and takes a 200 as a server that ignores ``Range``: the whole file then, within
its listed size, for the reader to verify whole.
"""

from __future__ import annotations

import functools
import http.client
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Collection
from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

from .._version import __version__
from ..errors import DownloadError
from .gzip_transfer import gzip_bound
from .web import timed, timed_opener

STALL_SECONDS = 15.0
"""Longest wait for the next bytes of a response."""
_CHUNK = 64 * 1024


class NotFound(DownloadError):
    """The server answered 404, 403 or 410 (an object the host does not publish)."""


class TooLarge(DownloadError):
    """The server sent, or announced, more than the bound."""


class WrongRange(DownloadError):
    """The server answered a range request with another range, another file size, or
    416: the file there is not the listed one."""


class Span(NamedTuple):
    """What a range request got: the range's bytes, or (`whole`) the whole file, from a
    server that ignores ``Range``."""

    data: bytes
    whole: bool


class Deadline(NamedTuple):
    """When a download must be done by (`time.monotonic()`), and the timeout it was
    set from, which the messages name."""

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)


class Fetcher(Protocol):
    """Gets the bytes at a URL for the remote reader, which verifies them."""

    def fetch(self, url: str, limit: int, deadline: Deadline, name: str) -> bytes:
        """At most `limit` bytes at `url`, all of them by `deadline`. Raises `NotFound`
        when the host does not have it, `TooLarge` when it sends or announces more than
        `limit`, `DownloadError` for any other failure; messages start with `name`, the
        file as the reader knows it."""


@runtime_checkable
class RangeFetcher(Fetcher, Protocol):
    """A `Fetcher` that can also get one byte range of a file."""

    def fetch_range(
        self, url: str, start: int, end: int, size: int, deadline: Deadline, name: str
    ) -> Span:
        """Bytes `start` to `end` (excluded) of the file at `url`, listed at `size`
        bytes, by `deadline`; the whole file (at most `size` bytes) when the server
        ignores the range. Raises `WrongRange` for any other range, size or a 416,
        `NotFound`, `TooLarge` and `DownloadError` as `fetch`; messages start with
        `name` and the byte range."""


_T = TypeVar("_T")
_Late = Callable[[str, str], DownloadError]
"""Makes the error for a wait that timed out (`_late`, bound to one download)."""
_CONTENT_RANGE = re.compile(r"bytes (\d{1,19})-(\d{1,19})/(\d{1,19})")


class HttpFetcher:
    """The network `Fetcher`: https, or plain http where `allow_http` or on loopback;
    redirects only within the host or to `redirect_hosts` (`handbook.bundle.web`)."""

    def __init__(self, allow_http: bool = False, redirect_hosts: Collection[str] = ()) -> None:
        self.allow_http, self.redirect_hosts = allow_http, redirect_hosts
        self._web = timed_opener(allow_http, redirect_hosts)
        """Built once (about 2 ms each): every request carries its own deadline."""

    def fetch(self, url: str, limit: int, deadline: Deadline, name: str) -> bytes:
        """At most `limit` bytes of `url`: one byte more and the transfer is abandoned.
        The whole exchange (connect, status line, headers, body, redirects) ends by
        `deadline`, and a host that sends nothing for `STALL_SECONDS` is given up on
        sooner."""
        headers = {"Accept-Encoding": "gzip"}
        return self._exchange(
            url, headers, deadline, name, lambda r, late: _read_body(r, url, limit, name, late)
        )

    def fetch_range(
        self, url: str, start: int, end: int, size: int, deadline: Deadline, name: str
    ) -> Span:
        """One ``Range`` request, in the same bounds as `fetch` (`RangeFetcher`)."""
        asked = f"{name} (bytes {start:,} to {end:,})"
        headers = {"Accept-Encoding": "identity", "Range": f"bytes={start}-{end - 1}"}

        def answer(response: http.client.HTTPResponse, late: _Late) -> Span:
            if response.status == 200:  # Range ignored: the whole file
                return Span(_read_body(response, url, size, name, late), True)
            if response.status != 206:
                raise DownloadError(f"{asked}: {url} answered {response.status} to a range")
            _check_range(response, url, asked, start, end, size)
            data = _read_body(response, url, end - start, asked, late)
            if len(data) != end - start:
                raise WrongRange(f"{asked}: {url} sent {len(data):,} bytes of the range")
            return Span(data, False)

        return self._exchange(url, headers, deadline, asked, answer)

    def _exchange(
        self,
        url: str,
        headers: dict[str, str],
        deadline: Deadline,
        name: str,
        answer: Callable[[http.client.HTTPResponse, _Late], _T],
    ) -> _T:
        """One request to `url` by `deadline`, its response read by `answer`; every
        failure a `DownloadError` whose message starts with `name`."""
        if deadline.at <= time.monotonic():
            raise DownloadError(f"{name}: the fetch ran out of time before this file")
        late = functools.partial(_late, name, urllib.parse.urlsplit(url).netloc, deadline)
        request = urllib.request.Request(
            url, headers={"User-Agent": f"handbook/{__version__}", **headers}
        )
        try:
            with self._web.open(timed(request, deadline.at), timeout=STALL_SECONDS) as response:
                return answer(response, late)
        except zlib.error as exc:
            raise DownloadError(f"{name}: {url} sent a broken gzip stream ({exc})") from None
        except DownloadError:
            raise
        except urllib.error.HTTPError as exc:
            exc.close()  # the response it holds (a refused redirect's, a 416's)
            if exc.code in (403, 404, 410):  # object stores answer 403 for a missing key
                raise NotFound(f"{name}: {url} answered 404 {exc.reason}") from None
            if exc.code == 416:  # the range lies past the end of the server's file
                raise WrongRange(f"{name}: {url} answered 416 {exc.reason}") from None
            raise DownloadError(f"{name}: {url} answered {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):  # connecting, or waiting for the headers
                raise late("response headers", "") from None
            raise DownloadError(f"{name}: cannot fetch {url} ({reason})") from None


def _check_range(
    response: http.client.HTTPResponse, url: str, asked: str, start: int, end: int, size: int
) -> None:
    """Refuse a 206 that is not exactly bytes `start` to `end` of a `size`-byte file,
    sent without a content encoding (a range of a compressed body is not a range of the
    file)."""
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding != "identity":
        raise WrongRange(f"{asked}: {url} sent a range with Content-Encoding {encoding[:40]!r}")
    sent = (response.headers.get("Content-Range") or "").strip()
    match = _CONTENT_RANGE.fullmatch(sent)
    if match is None or tuple(map(int, match.groups())) != (start, end - 1, size):
        raise WrongRange(
            f"{asked}: {url} answered 206 with Content-Range {sent[:80]!r}, not "
            f"'bytes {start}-{end - 1}/{size}'"
        )


def _read_body(
    response: http.client.HTTPResponse,
    url: str,
    limit: int,
    name: str,
    late: _Late,
) -> bytes:
    """The body, inflated when gzip-encoded, never more than `limit` bytes out nor more
    than a gzip stream of that size can take in."""
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise DownloadError(f"{name}: {url} sent Content-Encoding {encoding[:40]!r}")
    inflate = zlib.decompressobj(wbits=31) if encoding == "gzip" else None
    sent_limit = limit if inflate is None else gzip_bound(limit)
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > sent_limit:
        raise TooLarge(
            f"{name}: the server announces {int(declared):,} bytes, the manifest allows {limit:,}"
        )
    parts: list[bytes] = []
    size = sent = 0
    while True:
        try:
            chunk = response.read1(min(_CHUNK, sent_limit + 1 - sent))
        except TimeoutError:
            raise late("body", f"; {sent:,} bytes of it had arrived") from None
        if not chunk:
            break
        sent += len(chunk)
        if sent > sent_limit:
            raise TooLarge(f"{name}: more than the manifest allows; transfer abandoned")
        if inflate is not None:  # never more than limit + 1 bytes out (no bomb)
            chunk = inflate.decompress(chunk, limit + 1 - size)
            if inflate.unconsumed_tail:
                size = limit + 1
        size += len(chunk)
        parts.append(chunk)
        if size > limit:
            raise TooLarge(
                f"{name}: more than the {limit:,} bytes the manifest lists; transfer abandoned"
            )
    if inflate is not None and (not inflate.eof or inflate.unused_data):
        raise DownloadError(f"{name}: {url} sent a gzip stream that is not one whole file")
    return b"".join(parts)


def _late(name: str, host: str, deadline: Deadline, missing: str, arrived: str) -> DownloadError:
    """What a wait that ended in a timeout means: the download's deadline passed, or
    the host fell silent for `STALL_SECONDS` before it."""
    if time.monotonic() >= deadline.at:  # a wait armed with what was left ends no earlier
        return DownloadError(
            f"{name}: too slow; no complete {missing} from {host} within {deadline.seconds:g} s "
            f"(the deadline of this download){arrived}"
        )
    return DownloadError(
        f"{name}: {host} sent nothing for {STALL_SECONDS:g} s before complete {missing}{arrived}"
    )
