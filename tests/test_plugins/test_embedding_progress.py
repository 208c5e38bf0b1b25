"""Embedding's progress: the time left, said on a terminal or every half minute in a log,
and nothing at all from a short embedding (so tests and small builds stay quiet)."""

from __future__ import annotations

import pytest

from handbook_build.commands import progress


def test_the_line_gives_rate_and_time_left() -> None:
    assert progress.line("Embedding", 1_200, 40_000, 120.0) == (
        "Embedding: 1,200 of 40,000 passages (10.0/s), about 1 h 5 min left"
    )
    assert progress.line("Embedding", 30, 90, 30.0) == (
        "Embedding: 30 of 90 passages (1.0/s), about 60 s left"
    )
    assert progress.line("Embedding", 500, 500, 400.0).endswith("done in 7 min")
    assert progress.line("Embedding", 0, 500, 0.0) == "Embedding: 0 of 500 passages (0.0/s)"


def test_a_log_gets_a_line_every_half_minute_and_a_short_run_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with progress.embedding_progress() as update:
        for done in range(0, 101, 10):
            clock[0] += 1.0
            update(done, 100)
    assert capsys.readouterr().err == ""  # 11 s in all: quiet
    with progress.embedding_progress() as update:
        for done in range(0, 101, 10):
            clock[0] += 10.0
            update(done, 100)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "Embedding: 20 of 100 passages (0.7/s), about 2 min left",
        "Embedding: 50 of 100 passages (0.8/s), about 60 s left",
        "Embedding: 80 of 100 passages (0.9/s), about 22 s left",
        "Embedding: 100 of 100 passages (0.9/s), done in 2 min",
    ]
