"""The embedded store: one SQLite file (the standard library's `sqlite3`), WAL, safe for
several processes on one machine."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .store import (
    COLUMNS,
    HOUR,
    SQLITE,
    Caps,
    Event,
    Stored,
    StoreUnavailable,
    check_caps,
    decide_in,
    migrate_in,
    row_to_stored,
)


class SQLiteStore:
    """The embedded store: one file, WAL, safe for several processes on one machine."""

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._timeout = timeout
        with self._transaction() as db:
            migrate_in(db, SQLITE)

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
                self._wal(db)
                db.execute("PRAGMA synchronous=FULL")  # acknowledged means on disk
                db.execute("PRAGMA foreign_keys=ON")
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"the inbox {self.path} cannot be opened: {exc}") from None
            self._local.db = db
        return db

    def _wal(self, db: sqlite3.Connection) -> None:
        """Switch to WAL. The switch takes the file's lock without waiting on the busy
        handler, so replicas opening one file at once would see `database is locked`:
        try again until the store's timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")  # one writer at a time: caps hold
            return self.db

        def __exit__(self, kind: object, *_: object) -> None:
            self.db.execute("ROLLBACK" if kind else "COMMIT")

    def _transaction(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self._connection())

    def add(self, record: Stored, caps: Caps) -> tuple[Stored, bool]:
        try:
            with self._transaction() as db:
                found = db.execute(
                    f"SELECT {COLUMNS} FROM records WHERE id = ?", (record.id,)
                ).fetchone()
                if found:
                    return row_to_stored(found), False
                check_caps(
                    caps,
                    record,
                    db.execute(
                        "SELECT count(*) FROM records WHERE principal = ? AND created_at > ?",
                        (record.principal, record.created_at - HOUR),
                    ).fetchone()[0],
                    db.execute(
                        "SELECT count(*) FROM records WHERE library = ? AND doc = ? "
                        "AND state = 'open'",
                        (record.library, record.doc),
                    ).fetchone()[0],
                )
                db.execute(
                    f"INSERT INTO records ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*record[:5], json.dumps(record.payload, sort_keys=True), *record[6:]),
                )
                db.execute(
                    "INSERT INTO events (record, action, by_whom, at) VALUES (?, 'submitted', ?, ?)",
                    (record.id, record.principal, record.created_at),
                )
                return record, True
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"the inbox {self.path} is unavailable: {exc}") from None

    def get(self, record_id: str) -> Stored | None:
        row = self._query(f"SELECT {COLUMNS} FROM records WHERE id = ?", (record_id,))
        return row_to_stored(row[0]) if row else None

    def records(
        self, state: str | None = None, doc: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[Stored]:
        where, args = _where(state, doc)
        rows = self._query(
            f"SELECT {COLUMNS} FROM records{where} ORDER BY created_at, id LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [row_to_stored(r) for r in rows]

    def open_for(self, library: str, docs: Sequence[str]) -> dict[str, list[Stored]]:
        out: dict[str, list[Stored]] = {}
        wanted = list(dict.fromkeys(docs))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._query(
                f"SELECT {COLUMNS} FROM records WHERE state = 'open' AND library = ? "
                f"AND doc IN ({', '.join('?' * len(chunk))}) ORDER BY created_at, id",
                (library, *chunk),
            )
            for row in rows:
                stored = row_to_stored(row)
                out.setdefault(stored.doc, []).append(stored)
        return out

    def decide(self, record_id: str, state: str, by: str, at: int, reason: str) -> Stored:
        try:
            with self._transaction() as db:  # BEGIN IMMEDIATE: the row needs no lock of its own
                return decide_in(db, SQLITE, record_id, state, by, at, reason)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"the inbox {self.path} is unavailable: {exc}") from None

    def events(self) -> Iterator[Event]:
        rows = self._query(
            "SELECT seq, record, action, by_whom, at, reason FROM events ORDER BY seq"
        )
        return (Event(*row) for row in rows)

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._connection().execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"the inbox {self.path} is unavailable: {exc}") from None


def _where(state: str | None, doc: str | None) -> tuple[str, tuple[Any, ...]]:
    clauses, args = [], []
    if state is not None:
        clauses.append("state = ?")
        args.append(state)
    if doc is not None:
        clauses.append("doc = ?")
        args.append(doc)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(args)
