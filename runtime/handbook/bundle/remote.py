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
  restarts, and is kept per set of trusted keys (`handbook.bundle.highwater`).

Files then come from `RemoteFiles`: each is downloaded when first needed through a
`handbook.bundle.fetcher.Fetcher`, which never reads more than the listed size + 1 byte
and ends within a deadline that bounds the whole exchange (``DownloadError``, and the
file's lock is free again). It is checked against the manifest's size and sha256
before use, and kept in the digest cache (`handbook.bundle.digest_cache`; a file
already there is re-hashed, not re-downloaded). A file is asked for at its immutable
address first, ``objects/<sha256>`` beside the manifest, and at its plain path when the
host does not publish objects. Under a plain layout a publisher may replace the bundle
while a reader is in it: a file that then fails its hash, while the server now
announces another manifest, raises ``BundleChangedError`` (reopen to read the new
version); nothing of the new version is ever served with the old manifest.

A file with chunk hashes in ``chunks.bin`` is read by HTTP ranges where the fetcher can
ask for them (`handbook.bundle.remote_chunks`): only the chunks a call needs, at the
same address as the whole file, each checked against its hash before use and only then
written to the file's chunk file in the digest cache. A host that ignores ``Range``
sends the whole file, checked whole as above, and is then asked for whole files only.

`open_lazy` returns the `Bundle` at once (only the manifest transferred) and accepts
its version as the new high-water mark. `fetch` reads every file now, assembles a
bundle folder under the cache, named by the manifest's hash, which `open_bundle` then
verifies like any local bundle (for offline use); only after that does the version
become the new high-water mark.
"""

from __future__ import annotations

import hashlib
import os
import threading
import urllib.parse
from pathlib import Path
from typing import cast

from ..errors import (
    BundleChangedError,
    BundleError,
    DownloadError,
    FormatError,
    HashMismatchError,
    MissingFileError,
)
from .chunks import Chunked
from .digest_cache import DigestCache, default_cache_dir
from .fetcher import (
    STALL_SECONDS,
    Deadline,
    Fetcher,
    HttpFetcher,
    NotFound,
    RangeFetcher,
    Span,
    TooLarge,
    WrongRange,
)
from .highwater import HighWater, default_state_dir
from .layout import MANIFEST, OBJECTS_DIR
from .local import Bundle, check_expiry, open_bundle
from .manifest import MAX_MANIFEST_BYTES, FileEntry, Manifest
from .remote_chunks import RemoteChunks
from .semver import Version
from .semver import parse as parse_version
from .trust import TrustPolicy
from .web import url_problem

DEFAULT_TIMEOUT = 120.0
"""Seconds for a whole fetch; a slow-retrieval attack is cut off here."""


def fetch(
    url: str,
    trust: TrustPolicy,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    fetcher: Fetcher | None = None,
) -> Path:
    """Download and check every file of the bundle at `url` under `trust`; the local
    folder to open. Raises a `BundleError` subclass naming the cause. `fetcher` gets
    the bytes (over the network, as `trust` allows, when None)."""
    remote = _Opened(url, trust, cache_dir, timeout, fetcher)
    files = remote.files(Deadline.after(timeout))
    listing = Bundle(files, remote.manifest, remote.signed_by, remote.raw).listing()
    for name, entry in sorted(listing.items()):  # the catalog, verified, names the content
        files.read_verified(name, entry)
    folder = files.cache.folder(remote.digest)
    try:  # a folder already assembled for this manifest is reused when it verifies
        if not (folder / MANIFEST).is_file() or (folder / MANIFEST).read_bytes() != remote.raw:
            raise MissingFileError(f"{folder}: not assembled for this manifest")
        open_bundle(folder, trust=trust, hash_all=True)
    except (BundleError, OSError):
        files.cache.assemble(remote.digest, remote.raw, listing)
        open_bundle(folder, trust=trust, hash_all=True)  # as any local bundle
    remote.accept()
    return folder


def open_lazy(
    url: str,
    trust: TrustPolicy,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    fetcher: Fetcher | None = None,
) -> Bundle:
    """The bundle at `url`, its manifest downloaded and checked under `trust` (every
    refusal `fetch` makes), its other files fetched only when a call reads them, each
    within `timeout` seconds. Raises a `BundleError` subclass naming the cause."""
    remote = _Opened(url, trust, cache_dir, timeout, fetcher)
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
        fetcher: Fetcher | None,
    ) -> None:
        self.url, self.trust, self.timeout = url, trust, timeout
        self.base = url.rstrip("/") + "/"
        problem = url_problem(self.base, trust.allow_http)
        if problem is not None:
            raise DownloadError(f"{url}: {problem}")
        self.fetcher = fetcher or HttpFetcher(trust.allow_http, trust.redirect_hosts)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.marks = HighWater(trust.state_dir or default_state_dir())
        self.raw = self.manifest_bytes(Deadline.after(timeout))
        self.manifest = Manifest.from_bytes(self.raw)
        self.signed_by = trust.check(self.manifest, url)
        check_expiry(self.manifest)
        self.digest = hashlib.sha256(self.raw).hexdigest()
        signed = self.manifest.signed
        self.version = _signed_version(signed.version, url)
        if self.signed_by and not trust.allow_rollback:
            self.marks.check(signed.identity, trust.keys, self.version, self.digest)

    def manifest_bytes(self, deadline: Deadline) -> bytes:
        """The manifest the server publishes now."""
        return self.fetcher.fetch(self.base + MANIFEST, MAX_MANIFEST_BYTES, deadline, MANIFEST)

    def files(self, deadline: Deadline | None) -> RemoteFiles:
        return RemoteFiles(self, DigestCache(self.cache_dir), deadline)

    def accept(self) -> None:
        if self.signed_by:
            signed = self.manifest.signed
            self.marks.accept(signed.identity, self.trust.keys, self.version, self.digest, self.url)


class RemoteFiles:
    """A remote bundle's files (a `handbook.bundle.sources.FileSource`): each downloaded when
    first read, verified against the manifest, kept in the digest cache and handed out
    from there next time (re-hashed). Safe to share between threads: two calls wanting
    one file download it once."""

    def __init__(self, remote: _Opened, cache: DigestCache, deadline: Deadline | None) -> None:
        self._remote, self.cache, self._deadline = remote, cache, deadline
        self._published: bool | None = None
        """Whether the host publishes `objects/<sha256>` (None until first asked)."""
        self._ranges = isinstance(remote.fetcher, RangeFetcher)
        """Whether to ask for ranges: until the host is seen to ignore them."""
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.cache.objects

    @property
    def url(self) -> str:
        """The bundle's URL, as opened."""
        return self._remote.url

    def read_verified(self, name: str, entry: FileEntry) -> bytes:
        with self._guard:
            lock = self._locks.setdefault(entry.sha256, threading.Lock())
        with lock:
            data = self.cache.read(entry)
            if data is None:
                data = self._download(name, entry)
                self.cache.store(entry.sha256, data)
        return data

    def _download(self, name: str, entry: FileEntry) -> bytes:
        remote = self._remote
        deadline = self._deadline or Deadline.after(remote.timeout)
        if self._published is not False:
            try:
                url = remote.base + f"{OBJECTS_DIR}/{entry.sha256}"
                data = remote.fetcher.fetch(url, entry.bytes, deadline, name)
            except NotFound:
                self._published = False  # a plain layout: files at their paths
            else:
                self._published = True
                _check(name, data, entry)  # an immutable address: a mismatch is no swap
                return data
        url = remote.base + urllib.parse.quote(name)
        try:
            data = remote.fetcher.fetch(url, entry.bytes, deadline, name)
            _check(name, data, entry)
        except (HashMismatchError, NotFound, TooLarge) as exc:
            raise self._changed(exc) from None
        return data

    def chunks(self, name: str, chunked: Chunked) -> RemoteChunks | None:
        """The file `name` read by HTTP ranges (`handbook.bundle.sources`), unless the
        fetcher cannot ask for them or the host ignored them before."""
        entry = self._remote.manifest.signed.files.get(name)
        if not self._ranges or entry is None:
            return None
        return RemoteChunks(self, name, entry, chunked)

    def fetch_span(self, name: str, entry: FileEntry, start: int, end: int) -> Span:
        """Bytes `start` to `end` of the listed file `name`, unverified, asked for where
        `_download` asks for the whole file; the whole file when the host ignores
        ``Range`` (from then on, files are asked for whole)."""
        remote = self._remote
        fetcher = cast("RangeFetcher", remote.fetcher)  # `chunks` made no source otherwise
        deadline = self._deadline or Deadline.after(remote.timeout)
        span = None
        if self._published is not False:
            url = remote.base + f"{OBJECTS_DIR}/{entry.sha256}"
            try:
                span = fetcher.fetch_range(url, start, end, entry.bytes, deadline, name)
                self._published = True
            except NotFound:
                self._published = False
        if span is None:
            url = remote.base + urllib.parse.quote(name)
            try:
                span = fetcher.fetch_range(url, start, end, entry.bytes, deadline, name)
            except (NotFound, TooLarge, WrongRange) as exc:
                raise self.refused(exc) from None
        if span.whole:
            self._ranges = False
        return span

    def check_whole(self, name: str, entry: FileEntry, data: bytes) -> None:
        """Check a whole file a host sent for a range, and keep it as `_download`'s."""
        try:
            _check(name, data, entry)
        except HashMismatchError as exc:
            raise self.refused(exc) from None
        self.cache.store(entry.sha256, data)

    def refused(self, exc: BundleError) -> BundleError:
        """What to raise for a file that is not the listed one: on a host that
        publishes `objects/<sha256>`, `exc` itself (an immutable address: no swap);
        on a plain one, `_changed`'s answer."""
        return exc if self._published else self._changed(exc)

    def _changed(self, exc: BundleError) -> BundleError:
        """A file at its path that is not the listed one (other bytes, too long, gone):
        the bundle was replaced on the server when the manifest there is now another
        one, else the file itself is wrong."""
        remote = self._remote
        try:
            now = remote.manifest_bytes(Deadline.after(min(remote.timeout, STALL_SECONDS)))
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
