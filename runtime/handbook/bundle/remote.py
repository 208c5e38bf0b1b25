"""Loading a bundle over HTTP(S) without being fooled, as update systems must.

`open_lazy(url, …)` and `fetch(url, …)` download the manifest first (at most its size
limit + 1 byte), verify its signature, then refuse, before any other download:

- a bundle signed for another library than expected (``LibraryMismatchError``);
- an expired manifest (``ExpiredError``), so a stale mirror cannot freeze readers;
- a version that is not a semantic version as the build writes them (``FormatError``:
  `1.0`, `1.x.0`, leading zeros, empty identifiers; `handbook.bundle.semver`);
- a version lower than the highest already accepted for this library and these trusted
  keys, or the same version with different bytes (``RollbackError``), unless rollback
  is allowed. Versions are ordered by SemVer precedence, so `1.0.0+b2` is the same
  version as `1.0.0`. The mark lives in a state file outside any bundle folder, survives
  restarts, and is kept per set of trusted keys: trusting other keys starts afresh.

Files then come from `RemoteFiles`: each is downloaded when first needed, never reading
more than its listed size + 1 byte and within a deadline that bounds the whole exchange,
status line and headers included (a stalled, slow or dripping server is cut off,
``DownloadError``, and the file's lock is free again; `handbook.bundle.web`); a server or CDN
may send it gzip-compressed, inflated here within the same bound. It is checked against
the manifest's size and sha256 before use, and kept in a cache of files named by their
sha256 (a file already there is re-hashed, not re-downloaded). A file is asked for at its immutable address first,
``objects/<sha256>`` beside the manifest, and at its plain path when the host does
not publish objects. Under a plain layout a publisher may replace the bundle while a
reader is in it: a file that then fails its hash, while the server now announces
another manifest, raises ``BundleChangedError`` (reopen to read the new version);
nothing of the new version is ever served with the old manifest.

`open_lazy` returns the `Bundle` at once (only the manifest transferred) and accepts
its version as the new high-water mark. `fetch` reads every file now, assembles a
bundle folder under the cache, named by the manifest's hash, which `open_bundle` then
verifies like any local bundle (for offline use); only after that does the version
become the new high-water mark.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import os
import shutil
import stat
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from .._version import __version__
from ..errors import (
    BundleChangedError,
    BundleError,
    DownloadError,
    FormatError,
    HashMismatchError,
    MissingFileError,
)
from .gzip_transfer import gzip_bound
from .highwater import HighWater
from .layout import MANIFEST, OBJECTS_DIR
from .local import Bundle, check_expiry, open_bundle
from .manifest import MAX_MANIFEST_BYTES, FileEntry, Manifest
from .semver import Version
from .semver import parse as parse_version
from .trust import TrustPolicy
from .web import opener, url_problem

DEFAULT_TIMEOUT = 120.0
"""Seconds for a whole fetch; a slow-retrieval attack is cut off here."""
STALL_SECONDS = 15.0
"""Longest wait for the next bytes of a response."""
_CHUNK = 64 * 1024


class _NotFound(DownloadError):
    """The server answered 404, 403 or 410 (an object the host does not publish)."""


class _TooLarge(DownloadError):
    """The server sent, or announced, more than the listed size."""


def is_url(location: str | os.PathLike[str]) -> bool:
    return isinstance(location, str) and location.startswith(("http://", "https://"))


def default_cache_dir() -> Path:
    base = os.environ.get("HANDBOOK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "handbook"
    )
    return Path(base)


def default_state_dir() -> Path:
    base = os.environ.get("HANDBOOK_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "handbook"
    )
    return Path(base)


def fetch(
    url: str,
    trust: TrustPolicy,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Path:
    """Download and check every file of the bundle at `url` under `trust`; the local
    folder to open. Raises a `BundleError` subclass naming the cause."""
    remote = _Opened(url, trust, cache_dir, timeout)
    signed = remote.manifest.signed
    files = remote.files(_Deadline.after(timeout))
    for name in sorted(signed.files):
        files.read_verified(remote.manifest, name)
    folder = remote.cache / "bundles" / remote.digest
    try:  # a folder already assembled for this manifest is reused when it verifies
        if not (folder / MANIFEST).is_file() or (folder / MANIFEST).read_bytes() != remote.raw:
            raise MissingFileError(f"{folder}: not assembled for this manifest")
        open_bundle(folder, trust=trust, hash_all=True)
    except (BundleError, OSError):
        _assemble(folder, files.objects, remote.raw, signed.files)
        open_bundle(folder, trust=trust, hash_all=True)  # as any local bundle
    remote.accept()
    return folder


def open_lazy(
    url: str,
    trust: TrustPolicy,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Bundle:
    """The bundle at `url`, its manifest downloaded and checked under `trust` (every
    refusal `fetch` makes), its other files fetched only when a call reads them, each
    within `timeout` seconds. Raises a `BundleError` subclass naming the cause."""
    remote = _Opened(url, trust, cache_dir, timeout)
    bundle = Bundle(remote.files(None), remote.manifest, remote.signed_by, remote.raw)
    remote.accept()  # all that can be checked before a file is needed has been
    return bundle


class _Opened:
    """A remote bundle's manifest, downloaded and checked in the fixed order: size cap,
    strict parse, signature, expiry, then the version mark (consulted only for a
    verified signature: an unsigned bundle accepted under allow_unsigned says nothing
    about what the signers published)."""

    def __init__(
        self,
        url: str,
        trust: TrustPolicy,
        cache_dir: str | os.PathLike[str] | None,
        timeout: float,
    ) -> None:
        self.url, self.trust, self.timeout = url, trust, timeout
        self.base = url.rstrip("/") + "/"
        problem = url_problem(self.base, trust.allow_http)
        if problem is not None:
            raise DownloadError(f"{url}: {problem}")
        self.cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.marks = HighWater(trust.state_dir or default_state_dir())
        deadline = _Deadline.after(timeout)
        self.raw = _download(trust, self.base + MANIFEST, MAX_MANIFEST_BYTES, deadline, MANIFEST)
        self.manifest = Manifest.from_bytes(self.raw)
        self.signed_by = trust.check(self.manifest, url)
        check_expiry(self.manifest)
        self.digest = hashlib.sha256(self.raw).hexdigest()
        signed = self.manifest.signed
        self.version = _signed_version(signed.version, url)
        if self.signed_by and not trust.allow_rollback:
            self.marks.check(signed.identity, trust.keys, self.version, self.digest)

    def files(self, deadline: _Deadline | None) -> RemoteFiles:
        objects = self.cache / "objects"
        objects.mkdir(parents=True, exist_ok=True)
        return RemoteFiles(self, objects, deadline)

    def accept(self) -> None:
        if self.signed_by:
            signed = self.manifest.signed
            self.marks.accept(signed.identity, self.trust.keys, self.version, self.digest, self.url)


class RemoteFiles:
    """A remote bundle's files (a `handbook.bundle.sources.FileSource`): each downloaded when
    first read, verified against the manifest, kept in the digest cache `objects` and
    handed out from there next time (re-hashed). Safe to share between threads: two
    calls wanting one file download it once."""

    def __init__(self, remote: _Opened, objects: Path, deadline: _Deadline | None) -> None:
        self._remote, self.objects, self._deadline = remote, objects, deadline
        self._published: bool | None = None
        """Whether the host publishes `objects/<sha256>` (None until first asked)."""
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.objects

    def read_verified(self, manifest: Manifest, name: str) -> bytes:
        entry = manifest.signed.files.get(name)
        if entry is None:
            raise MissingFileError(f"{name}: not listed in the manifest")
        with self._guard:
            lock = self._locks.setdefault(entry.sha256, threading.Lock())
        with lock:
            data = _cached_bytes(self.objects, entry)
            if data is None:
                data = self._download(name, entry)
                _store(self.objects, entry.sha256, data)
        return data

    def _download(self, name: str, entry: FileEntry) -> bytes:
        remote = self._remote
        deadline = self._deadline or _Deadline.after(remote.timeout)
        if self._published is not False:
            try:
                url = remote.base + f"{OBJECTS_DIR}/{entry.sha256}"
                data = _download(remote.trust, url, entry.bytes, deadline, name)
            except _NotFound:
                self._published = False  # a plain layout: files at their paths
            else:
                self._published = True
                _check(name, data, entry)  # an immutable address: a mismatch is no swap
                return data
        url = remote.base + urllib.parse.quote(name)
        try:
            data = _download(remote.trust, url, entry.bytes, deadline, name)
            _check(name, data, entry)
        except (HashMismatchError, _NotFound, _TooLarge) as exc:
            raise self._changed(exc) from None
        return data

    def _changed(self, exc: BundleError) -> BundleError:
        """A file at its path that is not the listed one (other bytes, too long, gone):
        the bundle was replaced on the server when the manifest there is now another
        one, else the file itself is wrong."""
        remote = self._remote
        try:
            deadline = _Deadline.after(min(remote.timeout, STALL_SECONDS))
            now = _download(
                remote.trust, remote.base + MANIFEST, MAX_MANIFEST_BYTES, deadline, MANIFEST
            )
        except DownloadError:
            return exc
        if now == remote.raw:
            return exc
        return BundleChangedError(
            f"{exc}: the bundle at {remote.url} changed on the server since it was opened "
            f"(version {remote.manifest.signed.version}); nothing of the new one was served, "
            "reopen it (reload) to read the new version"
        )


def _signed_version(text: str, url: str) -> Version:
    """The manifest's version, which must be one the build could have written: a
    version the update check cannot order is refused, not guessed at."""
    try:
        return parse_version(text)
    except ValueError as exc:
        raise FormatError(f"{url}: {MANIFEST}: signed.version {exc}") from None


class _Deadline(NamedTuple):
    """When a download must be done by (`time.monotonic()`), and the timeout it was
    set from, which the messages name."""

    at: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> _Deadline:
        return cls(time.monotonic() + seconds, seconds)


def _download(trust: TrustPolicy, url: str, limit: int, deadline: _Deadline, name: str) -> bytes:
    """At most `limit` bytes of `url`: one byte more and the transfer is abandoned. The
    whole exchange (connect, status line, headers, body, redirects) ends by `deadline`,
    and a host that sends nothing for `STALL_SECONDS` is given up on sooner."""
    if deadline.at <= time.monotonic():
        raise DownloadError(f"{name}: the fetch ran out of time before this file")
    late = functools.partial(_late, name, urllib.parse.urlsplit(url).netloc, deadline)
    request = urllib.request.Request(
        url, headers={"User-Agent": f"handbook/{__version__}", "Accept-Encoding": "gzip"}
    )
    fetcher = opener(trust.allow_http, trust.redirect_hosts, deadline.at)
    try:
        with fetcher.open(request, timeout=STALL_SECONDS) as response:
            return _read_body(response, url, limit, name, late)
    except zlib.error as exc:
        raise DownloadError(f"{name}: {url} sent a broken gzip stream ({exc})") from None
    except DownloadError:
        raise
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404, 410):  # object stores answer 403 for a missing key
            raise _NotFound(f"{name}: {url} answered 404 {exc.reason}") from None
        raise DownloadError(f"{name}: {url} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):  # connecting, or waiting for the headers
            raise late("response headers", "") from None
        raise DownloadError(f"{name}: cannot fetch {url} ({reason})") from None


def _read_body(
    response: http.client.HTTPResponse,
    url: str,
    limit: int,
    name: str,
    late: Callable[[str, str], DownloadError],
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
        raise _TooLarge(
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
            raise _TooLarge(f"{name}: more than the manifest allows; transfer abandoned")
        if inflate is not None:  # never more than limit + 1 bytes out (no bomb)
            chunk = inflate.decompress(chunk, limit + 1 - size)
            if inflate.unconsumed_tail:
                size = limit + 1
        size += len(chunk)
        parts.append(chunk)
        if size > limit:
            raise _TooLarge(
                f"{name}: more than the {limit:,} bytes the manifest lists; transfer abandoned"
            )
    if inflate is not None and (not inflate.eof or inflate.unused_data):
        raise DownloadError(f"{name}: {url} sent a gzip stream that is not one whole file")
    return b"".join(parts)


def _late(name: str, host: str, deadline: _Deadline, missing: str, arrived: str) -> DownloadError:
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


def _check(name: str, data: bytes, entry: FileEntry) -> None:
    if len(data) != entry.bytes:
        raise HashMismatchError(
            f"{name}: downloaded {len(data):,} bytes, the manifest lists {entry.bytes:,}"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise HashMismatchError(
            f"{name}: downloaded sha256 {digest}, the manifest lists {entry.sha256}"
        )


def _cached_bytes(objects: Path, entry: FileEntry) -> bytes | None:
    """The cached file for `entry` when it is there and still matches (re-hashed on every
    use: the cache is a folder anyone with access may change); None otherwise."""
    try:
        fd = os.open(objects / entry.sha256, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size != entry.bytes:
            return None
        data = fh.read(entry.bytes + 1)
    if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
        return None
    return data


def _store(objects: Path, sha256: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=objects, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, objects / sha256)


def _assemble(folder: Path, objects: Path, manifest: bytes, files: Mapping[str, FileEntry]) -> Path:
    """The bundle folder for this manifest, built beside and renamed into place. A folder
    already there (another reader may have it open) is moved aside, never emptied
    under a reader."""
    if folder.exists() or folder.is_symlink():
        os.replace(folder, folder.with_name(f".old-{uuid.uuid4().hex}"))
    tmp = folder.with_name(f".tmp-{uuid.uuid4().hex}")
    tmp.mkdir(parents=True)
    try:
        for name, entry in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(objects / entry.sha256, target)
        (tmp / MANIFEST).write_bytes(manifest)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
