"""Four writer processes on one database, many threads each, adding and reading at
once (store_worker.py): nothing acknowledged is lost, nothing is stored twice, and every
process sees every record any of them was told was stored.

Both stores alike: 4 processes x 16 threads x 157 operations (10,048). Only correctness
is asserted; how long each process took and its visibility delay are printed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from store_helpers import Site, acknowledged, check_consistent, finish, start_worker

pytest_plugins = ["store_fixtures"]

THREADS, OPS = 16, 157
"""Per process, and per thread."""


def test_four_processes_lose_nothing_duplicate_nothing_and_all_see_all(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workers = [start_worker(site, f"w{n}", tmp_path, THREADS, OPS, peers=4) for n in range(4)]
    summaries = [finish(w) for w in workers]
    assert [s["errors"] for s in summaries] == [[]] * 4
    assert None not in [s["visible_after"] for s in summaries], "a record never became visible"
    done = sum(int(s["adds"]) + int(s["reads"]) for s in summaries)  # type: ignore[call-overload]
    assert done == 4 * THREADS * OPS

    acks = acknowledged(tmp_path)
    store = site.open()
    stored = {r.id for r in check_consistent(store)}
    store.close()
    assert {id for id, _ in acks} == stored  # nothing lost, nothing unacknowledged
    new = Counter(id for id, is_new in acks if is_new)
    assert set(new) == stored and set(new.values()) == {1}  # each stored by one add only
    assert any(id.startswith("shared-") for id in stored)
    with capsys.disabled():
        print(
            f"\n{site.kind}: {done} operations, {len(acks)} acknowledged adds, "
            f"{len(stored)} records; seconds, visible after: "
            + ", ".join(f"{s['seconds']:.1f} {s['visible_after']:.2f}" for s in summaries)
        )
