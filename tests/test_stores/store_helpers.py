"""What the store tests share: a database of one kind (`Site`), records made to order,
the writer processes (store_worker.py) and what they acknowledged, and the consistency
check of a whole store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pg_server import PgServer

from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.store import Store, Stored

T0 = 1_700_000_000
WORKER = Path(__file__).resolve().parent / "store_worker.py"


def start_worker(
    site: Site,
    name: str,
    acks: Path,
    threads: int,
    ops: int,
    peers: int = 0,
    extra: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    options = {"--threads": threads, "--ops": ops, "--acks": acks, "--peers": peers}
    command = [sys.executable, str(WORKER), site.spec, name]
    command += [str(part) for option in options.items() for part in option] + list(extra)
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(worker: subprocess.Popen[str]) -> dict[str, object]:
    out, err = worker.communicate(timeout=600)
    assert worker.returncode == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary


def acknowledged(acks: Path) -> list[tuple[str, bool]]:
    """Every acknowledged add of every worker: (id, whether it was new)."""
    return [
        (line.split()[0], line.split()[1] == "1")
        for path in sorted(acks.glob("*.acks"))
        for line in path.read_text(encoding="ascii").splitlines()
    ]


@dataclass
class Site:
    """One database: a SQLite file, or a PostgreSQL database on the test server."""

    kind: str
    location: str
    """The SQLite file's path, or the PostgreSQL connection string."""
    server: PgServer | None = None

    @property
    def spec(self) -> str:
        """How store_worker.py is told where the store is."""
        return f"{self.kind}:{self.location}"

    def open(self, timeout: float = 30.0) -> Store:
        return open_store(self.spec, timeout)

    def schema_versions(self) -> list[int]:
        return [row[0] for row in self.sql("SELECT version FROM schema_version ORDER BY 1")]

    def sql(self, query: str) -> list[tuple[Any, ...]]:
        """Run `query` outside any store, on a connection of its own."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.location) as db:
                return db.execute(query).fetchall()
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as pg:
            return pg.execute(query.encode()).fetchall()

    @contextmanager
    def unreachable(self) -> Iterator[None]:
        """While inside, writes cannot reach the database: SQLite's file is held by an
        exclusive lock of another connection; the PostgreSQL server is stopped."""
        if self.kind == "sqlite":
            holder = sqlite3.connect(self.location, isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")
            try:
                yield
            finally:
                holder.execute("ROLLBACK")
                holder.close()
        else:
            assert self.server is not None
            self.server.pause()
            try:
                yield
            finally:
                self.server.resume()


def open_store(spec: str, timeout: float = 30.0) -> Store:
    kind, _, location = spec.partition(":")
    if kind == "sqlite":
        return SQLiteStore(location, timeout=timeout)
    from handbook.inbox.pg_store import PostgresStore

    return PostgresStore(location, max_size=16, timeout=timeout)


def record(
    id: str,
    principal: str = "agent-a",
    doc: str = "pump-101",
    created_at: int = T0,
    library: str = "plant-floor",
    kind: str = "contradiction",
) -> Stored:
    return Stored(
        id, kind, library, doc, principal, {"basis": f"basis of {id}", "n": [1, 2]}, created_at
    )


def all_records(store: Store, page: int = 1000) -> list[Stored]:
    out: list[Stored] = []
    while batch := store.records(limit=page, offset=len(out)):
        out += batch
    return out


def check_consistent(store: Store) -> list[Stored]:
    """Assert that the store holds no duplicate, that every record has exactly one
    'submitted' event and every event a record; return the records."""
    records = all_records(store)
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record id is stored twice"
    events = list(store.events())
    submitted = Counter(e.record for e in events if e.action == "submitted")
    assert set(submitted) == set(ids), (
        f"records without their event: {sorted(set(ids) - set(submitted))[:5]}; "
        f"events without their record: {sorted(set(submitted) - set(ids))[:5]}"
    )
    assert max(submitted.values(), default=1) == 1, "a record was submitted twice"
    return records
