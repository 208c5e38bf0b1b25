"""The built site, served from a map of its files made by one walk at start.

No filesystem path is ever built from request data: the request path is only a key in
the map, and a file is read only while it is still the regular file the walk saw.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class SiteFiles:
    """The site folder as a map from URL path to file, made by one walk that does not
    follow symlinks. Requests are answered by lookup in the map only, and a file is read
    only while it is still the regular file the walk saw (same device and inode, opened
    without following links or blocking): swapping it for a link or a FIFO after the
    start serves nothing."""

    def __init__(self, root: Path | None) -> None:
        self.files: dict[str, Path] = {}
        self.identity: dict[Path, tuple[int, int]] = {}
        if root is None:
            return
        for folder, dirs, names in os.walk(root, followlinks=False):
            rel = os.path.relpath(folder, root)
            if rel == "bundle" or rel.startswith("bundle" + os.sep):
                dirs.clear()  # the bundle is served from the verified copy in memory
                continue
            for name in names:
                path = Path(folder) / name
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                key = name if rel == "." else f"{Path(rel).as_posix()}/{name}"
                self.files[key] = path
                self.identity[path] = (info.st_dev, info.st_ino)

    def read(self, path: Path) -> bytes | None:
        """The bytes of a mapped file, or None when it is no longer the file the walk saw."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != self.identity.get(
                path
            ):
                return None
            parts = []
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            return b"".join(parts)
        except OSError:
            return None
        finally:
            os.close(fd)

    def find(self, url_path: str) -> tuple[Path | None, str | None]:
        """(file, redirect): the file for a URL path, or where a folder URL without its
        slash should go."""
        key = url_path.lstrip("/")
        if key == "" or key.endswith("/"):
            key += "index.html"
        if key in self.files:
            return self.files[key], None
        if f"{key}/index.html" in self.files:
            return None, "/" + key + "/"
        return None, None
