"""A writer killed mid-stream (SIGKILL, so no cleanup of any kind) and restarted: every
add it acknowledged is stored, and nothing half-written is visible, before the restart
and after it: no record without its 'submitted' event, no event without its record.

The worker is killed three times, at growing counts of acknowledged adds, with eight
threads writing, so most kills land inside a transaction; each restart replays the same
operations (store_worker.py seeds them by name), as a client retrying would. A final run
completes, after which the store holds exactly what was acknowledged.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from store_helpers import Site, acknowledged, check_consistent, finish, start_worker

pytest_plugins = ["store_fixtures"]

THREADS, OPS = 8, 250


def test_a_killed_writer_loses_nothing_acknowledged_and_leaves_nothing_half_written(
    site: Site, tmp_path: Path
) -> None:
    for kill_at in (100, 400, 800):
        worker = start_worker(site, "w0", tmp_path, THREADS, OPS)
        deadline = time.monotonic() + 120
        while len(acknowledged(tmp_path)) < kill_at:
            assert worker.poll() is None, worker.communicate()[1]
            assert time.monotonic() < deadline, "the worker acknowledged too little"
            time.sleep(0.005)
        os.kill(worker.pid, signal.SIGKILL)
        worker.communicate()
        assert worker.returncode == -signal.SIGKILL
        settle(site)
        assert_acknowledged_are_stored(site, tmp_path)

    if site.server is not None:  # what the kills interrupted, for whoever reads -s output
        cut = site.server.log().count(
            "unexpected EOF on client connection with an open transaction"
        )
        print(f"\nconnections cut with a transaction open so far (server log): {cut}")
    summary = finish(start_worker(site, "w0", tmp_path, THREADS, OPS))
    assert summary["errors"] == []
    assert assert_acknowledged_are_stored(site, tmp_path) == {i for i, _ in acknowledged(tmp_path)}


def settle(site: Site) -> None:
    """Wait until PostgreSQL has finished with the killed client's connections. A COMMIT
    the client sent before it died still completes on the server; read while it does,
    page by page, the records would shift under the pages (the same id on two of them)."""
    if site.kind != "postgres":
        return  # SQLite's writer died with its process
    import psycopg

    deadline = time.monotonic() + 60
    with psycopg.connect(site.location, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            assert time.monotonic() < deadline, "the killed client's connections stay open"
            time.sleep(0.05)


def assert_acknowledged_are_stored(site: Site, acks: Path) -> set[str]:
    store = site.open()
    try:
        stored = {r.id for r in check_consistent(store)}
    finally:
        store.close()
    lost = {i for i, _ in acknowledged(acks)} - stored
    assert not lost, f"acknowledged but not stored: {sorted(lost)[:5]}"
    return stored
