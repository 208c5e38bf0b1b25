"""Running a site's own code as `mkdocs build` runs it: in the site's folder, and with
what it logs kept for Handbook to judge rather than printed.

A site's plugins and scripts read files relative to the working directory, which is the
configuration's folder when `mkdocs build` runs there (`within`). What they log goes to
one handler while they run (`captured`): MkDocs counts warnings on its logger to fail a
`--strict` build, and a build of the bundle must add none of its own there, nor print a
plugin's chatter through Handbook's output.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_cwd = threading.RLock()


@contextmanager
def within(folder: Path) -> Iterator[None]:
    """The working directory is `folder` meanwhile (one thread at a time may move it)."""
    with _cwd:
        before = os.getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(before)


class Logged(logging.Handler):
    """What was logged on one thread at WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.thread

    def failures(self, warnings_from: str = "") -> list[str]:
        """Errors, and warnings of the loggers whose name holds `warnings_from`
        (markdown-exec logs a script that raised as a warning and shows the traceback)."""
        return [
            record.getMessage()
            for record in self.records
            if record.levelno >= logging.ERROR or (warnings_from and warnings_from in record.name)
        ]


class _Others(logging.Filter):
    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextmanager
def captured() -> Iterator[Logged]:
    """Records logged on this thread meanwhile reach the yielded handler alone: every
    other handler of the root and MkDocs' loggers (and Python's last resort) passes them
    over. Other loggers that do not propagate keep their own handlers."""
    logged = Logged()
    others = _Others(logged.thread)
    handlers = {h for name in ("", "mkdocs") for h in logging.getLogger(name).handlers}
    if logging.lastResort is not None:
        handlers.add(logging.lastResort)
    for handler in handlers:
        handler.addFilter(others)
    mkdocs = logging.getLogger("mkdocs")  # its command line stops it propagating
    listening = [logging.getLogger()] + ([] if mkdocs.propagate else [mkdocs])
    for logger in listening:
        logger.addHandler(logged)
    try:
        yield logged
    finally:
        for logger in listening:
            logger.removeHandler(logged)
        for handler in handlers:
            handler.removeFilter(others)


def said(exc: BaseException) -> str:
    """An exception as a finding quotes it."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
