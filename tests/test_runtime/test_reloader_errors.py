"""A reloader check that fails outright (here, announcing the reload) used to vanish in
``except Exception: continue``: no log, nothing in status. It is logged at warning with
the exception's type and message, escaped for a terminal, and shown as the library's
`last_reload_error` in its status, while the watching goes on."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import PUBLIC

from handbook import Library
from handbook.bundle.layout import MANIFEST
from handbook.libraries.reloader import Reloader


def test_a_failing_check_is_logged_and_shown_in_status(
    plant_floor_bundle: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "bundle"
    shutil.copytree(plant_floor_bundle, folder)
    library = Library.open(folder, [PUBLIC])
    calls: list[dict[str, Any]] = []

    def announce(answer: dict[str, Any]) -> None:
        calls.append(answer)
        raise ValueError("the log is gone \x1b[2J")

    reloader = Reloader(library, folder, interval=3600, on_reload=announce)
    manifest = folder / MANIFEST
    os.utime(manifest, ns=(manifest.stat().st_atime_ns, manifest.stat().st_mtime_ns + 10**9))
    with caplog.at_level(logging.WARNING, logger="handbook.reloader"):
        reloader.poll()  # does not raise
    assert calls and calls[0]["reloaded"] is True
    [record] = [r for r in caplog.records if r.name == "handbook.reloader"]
    assert record.levelno == logging.WARNING
    logged = record.getMessage()
    assert "ValueError: the log is gone \\x1b[2J" in logged and "\x1b" not in logged, logged
    assert str(folder) in logged
    error = library.status()["last_reload_error"]
    assert error is not None and "ValueError: the log is gone" in error, error
    assert reloader.check() is None  # nothing new since: no second reload
