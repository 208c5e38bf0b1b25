"""Watching for a newly published bundle, and swapping it in.

`handbook build` publishes by swapping a symlink; the reloader notices the bundle's
manifest change (a local folder) or polls (a remote bundle), and asks each library to
reload. A library verifies the new bundle first and keeps the old one serving when it is
refused; requests in flight finish on the bundle they started with. A check that fails
outright (the announcement of a reload, say) does not stop the watching: it is logged
(``handbook.reloader``, at warning) and shown as the library's `last_reload_error` in
its status, like a refused bundle.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..bundle.layout import MANIFEST
from ..bundle.locations import is_url
from ..terminal_text import for_terminal
from .library import Library

log = logging.getLogger("handbook.reloader")


class Reloader:
    """Swaps in a new bundle when the one at a library's path changes. A folder is
    watched by its manifest's identity (a new build publishes by swapping a symlink); a
    URL is polled, each poll downloading only the manifest unless it changed. Only a
    change or a refusal is reported."""

    def __init__(
        self,
        library: Library,
        path: str | os.PathLike[str],
        interval: float = 2.0,
        on_reload: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
    ) -> None:
        self.library, self.interval, self.on_reload = library, interval, on_reload
        self.url = path if is_url(path) else None
        self.path = Path(path)
        self._stop = threading.Event()
        self._seen = self.fingerprint()
        self._thread = threading.Thread(target=self._run, name="handbook-reloader", daemon=True)

    def fingerprint(self) -> tuple[Any, ...]:
        if self.url is not None:
            return ("poll", time.monotonic())  # never the same: every check asks the server
        try:
            target = os.path.realpath(self.path)
            info = os.stat(Path(target) / MANIFEST)
        except OSError:
            return ("missing",)
        return (target, info.st_ino, info.st_size, info.st_mtime_ns)

    def check(self) -> dict[str, Any] | None:
        """Reload if the bundle changed; the reload's answer, or None when unchanged."""
        now = self.fingerprint()
        if now == self._seen:
            return None
        self._seen = now
        answer = self.library.reload()
        if answer.get("reloaded") and not answer.get("changed") and self.url is not None:
            return None  # the server still has the same bundle
        if self.on_reload is not None:
            self.on_reload(answer)
        return answer

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def poll(self) -> None:
        """One `check`, whose failure is logged and reported in the library's status
        instead of raised: a watcher must outlive any one bad bundle or announcement."""
        try:
            self.check()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            where = for_terminal(self.url if self.url is not None else os.fspath(self.path))
            log.warning("checking %s for a new bundle failed: %s", where, for_terminal(error))
            self.library.last_reload_error = f"the reloader failed: {error}"

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()
