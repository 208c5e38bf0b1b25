"""`Library`: one verified knowledge bundle and the tools agents call on it.

Every tool returns a JSON-ready dict (`handbook.answers`) and never raises: an agent
acts on ``found: false`` and ``error`` entries, not on tracebacks. Every answer is
bounded by the operator's `max_response_chars` and says how large it is, whether
anything was cut and how to get the rest. The work is done by one module per tool
(`listing`, `reading`, `searching`, `collect`, `ask`) over a `Snapshot`; the tools that
work alike over several libraries are written once in `SnapshotTools`
(`handbook.libraries.snapshot_tools`). This class opens, verifies and reloads, and hands
each call the snapshot it started from.

The bundle is verified when opened (signature, every listed file present as a plain
file, nothing unlisted); each file's size and hash are checked before its first use. A
bundle opened by URL is read lazily by default (`handbook.bundle.remote`): the manifest is
checked at open, each other file downloaded and checked when a call first needs it.
`reload` swaps in a newer bundle only once it verifies.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Unpack

from ..answers import StatisticsRow, StatusAnswer
from ..bounds import DEFAULT_MAX_RESPONSE_CHARS, never_raise
from ..bundle.catalog import DocEntry
from ..bundle.local import Bundle
from ..bundle.manifest import utc_time
from ..bundle.opening import BundleAt
from ..bundle.signing import PublicKey
from ..bundle.trust import TrustOptions, TrustPolicy
from ..errors import BundleError
from ..handlers.citing import AllowedSources
from ..handlers.snapshot import Snapshot
from ..handlers.statistics import publish_status, statistics_rows, unlocated, weakest
from .snapshot_tools import SnapshotTools

if TYPE_CHECKING:
    from ..tools.model import ToolContext


class Library(SnapshotTools):
    """One verified knowledge bundle and the tools agents call on it."""

    def __init__(
        self,
        snapshot: Snapshot,
        path: str,
        opener: Callable[[], Bundle],
        max_response_chars: int,
        lazy: bool = False,
    ) -> None:
        self._snapshot = snapshot
        self._path = path
        self._opener = opener
        self.max_response_chars = max_response_chars
        self.last_reload_error: str | None = None
        self.publish_report: str | None = None
        """A publish report file (`handbook.bundle.publish_report`) that `status` shows, read at
        each call and labelled `reported`; None for none."""
        self._reload_lock = threading.Lock()
        self._lazy = lazy
        """A remote bundle opened lazily: a reload that finds the same manifest keeps
        the snapshot (and what it has fetched)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        trusted_keys: Iterable[str | PublicKey] | None = None,
        *,
        trust: TrustPolicy | None = None,
        max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
        cache_dir: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        clock: Callable[[], float] = time.time,
        sources: AllowedSources | None = None,
        lazy: bool = True,
        publish_report: str | os.PathLike[str] | None = None,
        **trust_options: Unpack[TrustOptions],
    ) -> Library:
        """Verify and load the bundle at `path` (a folder, or an http(s) URL of a published
        bundle folder); raises a `BundleError` subclass naming the cause when it is
        refused (a URL of another scheme too, never read as a folder). Whom to trust is
        `trust`, or the `TrustPolicy` made from `trusted_keys` and `trust_options` (the
        keywords of `TrustPolicy.of`: `threshold`, `allow_unsigned`, `expect_library`,
        `allow_rollback`, `state_dir`, `allow_http`, `redirect_hosts`, `expect_audience`),
        never both (`TypeError`); keys also come from $HANDBOOK_TRUSTED_KEYS.

        For a URL (see `handbook.bundle.remote`): `expect_library` pins the library name the
        signature must cover, `allow_rollback` accepts a version below the highest already
        accepted, `cache_dir` and `state_dir` place the download cache and the version
        high-water file, `timeout` bounds each whole download (seconds), and `allow_http`
        permits plain http to a host that is not loopback (`handbook.bundle.web`). `clock`
        gives the time pedigrees are derived at (tests pass a fixed one). `expect_audience`
        pins the audience the signature must cover (a library with audiences). `sources`
        restricts what `ask` and `collect` cite (`handbook.handlers.citing`).
        `publish_report` names the release pipeline's report of its last publish, which
        `status` shows as reported, never as verified (`handbook.bundle.publish_report`).

        A URL opens `lazy` by default: only the manifest is downloaded now, and each other
        file when a call first needs it, verified before use and cached by digest; a
        reload downloads the manifest again. `lazy=False` downloads and verifies every
        file first (for offline use afterwards)."""
        policy = TrustPolicy.chosen(trust, trusted_keys, trust_options)
        opener = BundleAt(path, policy, lazy, cache_dir, timeout)
        # A lazy remote bundle reads its search file at the first search, not now.
        first = Snapshot.of(
            opener(hash_all=False), utc_time(time.time()), clock, opener.lazy_remote
        )
        bound = max(1000, int(max_response_chars))
        library = cls(first, os.fspath(path), opener, bound, opener.lazy_remote)
        library.sources = sources
        library.publish_report = None if publish_report is None else os.fspath(publish_report)
        return library

    # -- what is served ---------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        """The bundle being served and what is derived from it; a reload replaces it whole."""
        return self._snapshot

    @property
    def name(self) -> str:
        """The library's name, as signed."""
        return self._snapshot.name

    @property
    def version(self) -> str:
        return self._snapshot.version

    @property
    def bundle(self) -> Bundle:
        """The verified bundle being served. Transports read its files from here, never
        from the disk."""
        return self._snapshot.bundle

    def doc(self, doc_id: str) -> DocEntry | None:
        """The catalog entry of `doc_id`, or None."""
        return self._snapshot.doc(doc_id)

    def snapshots(self) -> list[Snapshot]:
        return [self._snapshot]

    def bundles(self) -> dict[str, Bundle]:
        """The verified bundles served, by library name (for `/bundle/` routes)."""
        return {self.name: self.bundle}

    def tool_context(self) -> ToolContext:
        """What the tool definitions say about this library (kinds, filters, languages)."""
        return self._snapshot.tool_context

    # -- lifecycle ---------------------------------------------------------------------------

    def reload(self) -> dict[str, Any]:
        """Swap to the bundle now at the same path if it verifies; otherwise keep serving
        the current one and say why. Unlike the first open, a reload of a local bundle
        hashes every file before it swaps: a server that is already answering can afford
        it, and a bad file is then refused up front instead of failing one request later.
        A remote bundle opened lazily downloads the manifest again, and its files when
        calls need them (after `BundleChangedError`, a reload reads the new version)."""
        with self._reload_lock:
            try:
                bundle = self._opener()
                if self._lazy and bundle.manifest == self._snapshot.bundle.manifest:
                    self.last_reload_error = None
                    return {"reloaded": True, "changed": False, **self._identity()}
                now = utc_time(time.time())
                snapshot = Snapshot.of(bundle, now, self._snapshot.clock, self._lazy)
            except Exception as exc:  # whatever is wrong with the new one, the old one serves
                if isinstance(exc, BundleError):
                    self.last_reload_error = str(exc)
                else:
                    self.last_reload_error = f"{type(exc).__name__}: {exc}"
                return {"reloaded": False, "error": str(exc), **self._identity()}
            changed = snapshot.bundle.manifest != self._snapshot.bundle.manifest
            self._snapshot, self.last_reload_error = snapshot, None  # one assignment
            return {"reloaded": True, "changed": changed, **self._identity()}

    def _identity(self) -> dict[str, Any]:
        return {"library": self.name, "version": self.version}

    @never_raise
    def status(self) -> StatusAnswer:
        """What is served and since when, and what it counts per audience and language,
        each figure labelled verified or reported (`handbook.handlers.statistics`), with the last
        publish the release pipeline reported. It answers even when a file of the bundle
        failed its lazy verification: `integrity_error` then names it."""
        snap = self._snapshot
        signed = snap.bundle.manifest.signed
        try:
            rows = statistics_rows(snap)
            languages = language_counts(snap, rows)
        except BundleError:  # the catalog did not verify; the bundle records which file
            languages, rows = {}, []
        out: StatusAnswer = {
            "library": signed.library,
            "version": signed.version,
            "built_at": signed.built_at,
            "docs": signed.docs,
            "signature": snap.bundle.signature_state,
            "signed_by": list(snap.bundle.signed_by),
            "loaded_at": snap.loaded_at,
            "last_reload_error": self.last_reload_error
            and unlocated(self.last_reload_error, [self._path], signed.identity),
            "languages": languages,
            "audience": signed.audience,
            "statistics": rows,
            "statistics_state": weakest(row["statistics_state"] for row in rows),
            "publish": publish_status(
                self.publish_report, signed.library, signed.version, signed.audience
            ),
        }
        if snap.bundle.integrity_error:
            out["integrity_error"] = unlocated(
                snap.bundle.integrity_error, [self._path], signed.identity
            )
        if self.sources is not None:
            out["sources"] = self.sources.describe()
        return out

    def _locate(self, doc_id: str) -> tuple[Snapshot, str]:
        """The one snapshot, and the id as given: `get_doc` answers an unknown id itself,
        with the closest ids."""
        return self._snapshot, doc_id


def language_counts(snap: Snapshot, rows: list[StatisticsRow]) -> dict[str, dict[str, int]]:
    """Per language of the bundle: its docs and the docs answerable from it, as the
    statistics rows counted them (answerable only once the search file was read: status
    never reads it for this), and the docs their authors marked verified."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        positions = snap.languages.get(row["lang"])
        if not positions:  # a language only the build reported
            continue
        counts = {"documents": row["bundle_docs"]}
        if row["indexed_docs"] is not None:
            counts["indexed"] = row["indexed_docs"]
        counts["verified"] = sum(1 for n in positions if snap.docs[n].verified == "verified")
        out[row["lang"]] = counts
    return out
