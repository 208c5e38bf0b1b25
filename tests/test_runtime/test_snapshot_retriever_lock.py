"""A named retriever (`retriever=semantic|hybrid`) is opened once per snapshot, however
many threads ask for it first at the same moment: it is opened under the lock the lexical
retriever uses, not once per racing caller (each would load the vectors again)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import handbook.handlers.snapshot as snapshot_module
from handbook.bundle.local import open_bundle
from handbook.handlers.snapshot import Snapshot

THREADS = 8


def test_concurrent_first_calls_open_a_named_retriever_once(
    plant_floor_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []

    def slow_open(bundle: Any, lexical: Any, name: object) -> object:
        time.sleep(0.05)  # long enough for every thread to find none opened yet
        made = object()
        opened.append(made)
        return made

    monkeypatch.setattr(snapshot_module, "open_named", slow_open)
    snap = Snapshot.of(open_bundle(plant_floor_bundle, allow_unsigned=True), "now")
    start = threading.Barrier(THREADS)
    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(snap.retriever_named("semantic"))

    threads = [threading.Thread(target=ask) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 1
    assert got == opened * THREADS
    assert snap.retriever_named("semantic") is opened[0]
