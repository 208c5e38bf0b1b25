"""Loading a bundle over HTTP(S) without being fooled, as update systems must.

`fetch(url, …)` downloads the manifest first (at most its size limit + 1 byte), verifies
its signature, then refuses, before any other download:

- a bundle signed for another library than expected (``LibraryMismatchError``);
- an expired manifest (``ExpiredError``), so a stale mirror cannot freeze readers;
- a version lower than the highest already accepted for this library and these trusted
  keys, or the same version with different bytes (``RollbackError``), unless rollback
  is allowed. The mark lives in a state file outside any bundle folder, survives
  restarts, and is kept per set of trusted keys: trusting other keys starts afresh.

Every listed file is then fetched into a cache of files named by their sha256 (a file
already there is re-hashed, not re-downloaded), each download never reading more than
the listed size + 1 byte and the whole fetch bounded by a deadline; a stalled or slow
server is cut off (``DownloadError``). The files are assembled into a bundle folder
under the cache, named by the manifest's hash, which `open_bundle` then verifies like
any local bundle. Only after that does the version become the new high-water mark.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .bundle import check_expiry, open_bundle
from .errors import (
    BundleError,
    DownloadError,
    HashMismatchError,
    MissingFileError,
    RollbackError,
)
from .layout import MANIFEST
from .manifest import MAX_MANIFEST_BYTES, FileEntry, Manifest, utc_time
from .signing import PublicKey
from .trust import TrustPolicy
from .web import opener, url_problem

DEFAULT_TIMEOUT = 120.0
"""Seconds for a whole fetch; a slow-retrieval attack is cut off here."""
STALL_SECONDS = 15.0
"""Longest wait for the next bytes of a response."""
_CHUNK = 64 * 1024


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
    """Download and check the bundle at `url` under `trust`; the local folder to open.
    Raises a `BundleError` subclass naming the cause."""
    base = url.rstrip("/") + "/"
    problem = url_problem(base, trust.allow_http)
    if problem is not None:
        raise DownloadError(f"{url}: {problem}")
    fetcher = opener(trust.allow_http, trust.redirect_hosts)
    deadline = time.monotonic() + timeout
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    marks = HighWater(trust.state_dir or default_state_dir())

    raw = _download(fetcher, base + MANIFEST, MAX_MANIFEST_BYTES, deadline, MANIFEST)
    manifest = Manifest.from_bytes(raw)
    signed = manifest.signed
    signed_by = trust.check(manifest, url)
    check_expiry(manifest)
    digest = hashlib.sha256(raw).hexdigest()
    # Only a verified signature moves or consults the version mark: an unsigned bundle
    # accepted under allow_unsigned says nothing about what the signers published.
    if signed_by and not trust.allow_rollback:
        marks.check(signed.identity, trust.keys, signed.version, digest)

    objects = cache / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    for name, entry in sorted(signed.files.items()):
        if not _cached(objects, entry):
            data = _download(fetcher, base + urllib.parse.quote(name), entry.bytes, deadline, name)
            _check(name, data, entry)
            _store(objects, entry.sha256, data)
    folder = cache / "bundles" / digest
    try:  # a folder already assembled for this manifest is reused when it verifies
        if not (folder / MANIFEST).is_file() or (folder / MANIFEST).read_bytes() != raw:
            raise MissingFileError(f"{folder}: not assembled for this manifest")
        open_bundle(folder, trust=trust, hash_all=True)
    except (BundleError, OSError):
        _assemble(folder, objects, raw, signed.files)
        open_bundle(folder, trust=trust, hash_all=True)  # as any local bundle
    if signed_by:
        marks.accept(signed.identity, trust.keys, signed.version, digest, url)
    return folder


class HighWater:
    """The highest version accepted per (library, set of trusted keys), with the hash
    of its manifest, in `state_dir/highwater.json` (written atomically)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "highwater.json"

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RollbackError(
                f"{self.path}: the version high-water file is unreadable ({exc}); "
                "repair or remove it deliberately, knowing that removing it allows rollbacks"
            ) from None
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _key(library: str, keys: Sequence[PublicKey]) -> str:
        keyset = ",".join(sorted(k.keyid for k in keys)) or "unsigned"
        return f"{library}|{hashlib.sha256(keyset.encode()).hexdigest()[:32]}"

    def check(self, library: str, keys: Sequence[PublicKey], version: str, digest: str) -> None:
        mark = self._load().get(self._key(library, keys))
        if not mark:
            return
        if _version_key(version) < _version_key(mark["version"]):
            raise RollbackError(
                f"{library} {version} is older than {mark['version']}, already accepted with these keys; "
                "refused as a rollback (allow_rollback to accept it on purpose)"
            )
        if version == mark["version"] and digest != mark["manifest_sha256"]:
            raise RollbackError(
                f"{library} {version} was already accepted with other contents; "
                "one version must always be the same bundle"
            )

    def accept(
        self, library: str, keys: Sequence[PublicKey], version: str, digest: str, source: str
    ) -> None:
        data = self._load()
        key = self._key(library, keys)
        mark = data.get(key)
        if mark and _version_key(version) < _version_key(mark["version"]):
            return  # an allowed rollback does not lower the mark
        data[key] = {
            "version": version,
            "manifest_sha256": digest,
            "source": source,
            "accepted_at": utc_time(time.time()),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)


def _version_key(version: str) -> tuple[Any, ...]:
    """Semantic-version precedence (a pre-release before its release)."""
    core, _, pre = version.partition("+")[0].partition("-")
    numbers = tuple(int(p) if p.isdigit() else 0 for p in core.split("."))
    extra = (
        tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")) if pre else ()
    )
    return (*numbers, 0 if pre else 1, extra)


def _download(
    fetcher: urllib.request.OpenerDirector, url: str, limit: int, deadline: float, name: str
) -> bytes:
    """At most `limit` bytes of `url`: one byte more and the transfer is abandoned, as is
    one that is not finished by `deadline` or stalls."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DownloadError(f"{name}: the fetch ran out of time before this file")
    request = urllib.request.Request(
        url, headers={"User-Agent": f"handbook/{__version__}", "Accept-Encoding": "identity"}
    )
    try:
        with fetcher.open(request, timeout=min(remaining, STALL_SECONDS)) as response:
            declared = response.headers.get("Content-Length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise DownloadError(
                    f"{name}: the server announces {int(declared):,} bytes, the manifest allows {limit:,}"
                )
            parts: list[bytes] = []
            size = 0
            while True:
                if time.monotonic() > deadline:
                    raise DownloadError(
                        f"{name}: too slow; the fetch's deadline passed after {size:,} bytes"
                    )
                chunk = response.read1(min(_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                size += len(chunk)
                parts.append(chunk)
                if size > limit:
                    raise DownloadError(
                        f"{name}: more than the {limit:,} bytes the manifest lists; transfer abandoned"
                    )
    except DownloadError:
        raise
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{name}: {url} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{name}: cannot fetch {url} ({reason})") from None
    return b"".join(parts)


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


def _cached(objects: Path, entry: FileEntry) -> bool:
    path = objects / entry.sha256
    try:
        if path.is_symlink() or path.stat().st_size != entry.bytes:
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256
    except OSError:
        return False


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
