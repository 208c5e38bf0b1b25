"""Opening the bundle at a location, a folder or a URL, the same way at every reload.

A folder is verified in place (`handbook.bundle.local`); a URL (`handbook.bundle.locations`)
is opened lazily or fetched whole (`handbook.bundle.remote`), and one whose scheme is not
read is refused there, naming it. The network stack is imported with the first URL,
never for a local bundle.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .local import Bundle, open_bundle
from .locations import is_url
from .trust import TrustPolicy


@dataclass(frozen=True)
class BundleAt:
    """The bundle at `path` under `trust`, opened anew at each call. A URL opens `lazy`
    (only the manifest now, each other file when first read) or is fetched whole into
    `cache_dir`; `timeout` bounds each download (seconds; the remote default when None)."""

    path: str | os.PathLike[str]
    trust: TrustPolicy
    lazy: bool = True
    cache_dir: str | os.PathLike[str] | None = None
    timeout: float | None = None

    @property
    def lazy_remote(self) -> bool:
        """Whether the bundle is read lazily from a URL (files fetched when first read)."""
        return self.lazy and is_url(self.path)

    def __call__(self, hash_all: bool = True) -> Bundle:
        """The bundle, verified; a local one has every file hashed first when `hash_all`."""
        path, trust = self.path, self.trust
        if not is_url(path):
            return open_bundle(path, trust=trust, hash_all=hash_all)
        from . import remote  # urllib is not needed, nor imported, for local bundles

        wait = self.timeout if self.timeout is not None else remote.DEFAULT_TIMEOUT
        if self.lazy:
            return remote.open_lazy(path, trust, cache_dir=self.cache_dir, timeout=wait)
        folder = remote.fetch(path, trust, cache_dir=self.cache_dir, timeout=wait)
        return open_bundle(folder, trust=trust, hash_all=False)  # fetch hashed every byte
