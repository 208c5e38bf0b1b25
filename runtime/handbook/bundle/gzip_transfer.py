"""Bundle files over the wire gzip-compressed, both ways, within the manifest's bounds.

A remote reader asks for gzip (`handbook.bundle.remote`): the search file of a 10k-doc bundle
travels at 40 % of its size, the catalog at 20 %. It inflates what it gets to at most
the listed size + 1 bytes whatever the stream claims (`gzip_bound` caps what it reads),
then checks size and sha256 as for any download. `handbook serve` sends bundle files
gzipped to clients that accept it (`GZIPPED`), as CDNs and precompressed uploads do.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict


def gzip_bound(size: int) -> int:
    """The most a gzip stream of `size` bytes can take: stored blocks add 5 bytes per
    16 KiB, the header and trailer a few more (and a name, which servers do not send)."""
    return size + 5 * (size // 16_384 + 1) + 1024


class Gzipped:
    """Bundle files gzip-compressed for clients that accept it (a remote reader sends
    `Accept-Encoding: gzip`: a 10k-doc search file travels at 40 % of its size), made
    once per file and kept in a bounded cache by digest. Files that do not shrink by a
    tenth (already compressed, vectors) are sent as they are."""

    def __init__(self, budget: int = 64 << 20) -> None:
        self.budget, self.used = budget, 0
        self._kept: OrderedDict[str, bytes | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str, data: bytes, path: str) -> bytes | None:
        if len(data) < 1024 or path.endswith(".gz"):
            return None
        with self._lock:
            if digest in self._kept:
                self._kept.move_to_end(digest)
                return self._kept[digest]
        made = gzip.compress(data, compresslevel=6, mtime=0)
        packed = made if len(made) <= len(data) * 0.9 else None
        with self._lock:
            if digest not in self._kept:
                self._kept[digest] = packed
                self.used += len(packed or b"")
            while self.used > self.budget and len(self._kept) > 1:
                _, dropped = self._kept.popitem(last=False)
                self.used -= len(dropped or b"")
        return packed


GZIPPED = Gzipped()


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding value takes gzip (named, or `*`, with no q=0)."""
    for item in header.lower().split(","):
        coding, _, params = item.partition(";")
        if coding.strip() in ("gzip", "*"):
            q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False
