"""A high-water mark that cannot be written leaves the old mark and no temporary file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handbook.bundle.highwater import HighWater
from handbook.bundle.semver import parse as parse_version


def test_failed_write_keeps_the_old_mark_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = HighWater(tmp_path)
    marks.accept("fleet", [], parse_version("1.0.0"), "a" * 64, "https://example.test/b")
    before = marks.path.read_bytes()

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        marks.accept("fleet", [], parse_version("1.1.0"), "b" * 64, "https://example.test/b")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["highwater.json"]
    assert marks.path.read_bytes() == before
