"""Where the inbox keeps what agents write: a small `Store` protocol and its SQLite store.

The bundle is read-only and signed; what agents propose, contradict or corroborate is
kept beside it, in a store several `handbook serve` replicas can share. The protocol is
small on purpose, so that each store is easy to check against the same suite
(tests/test_stores/): SQLite here (the standard library's `sqlite3`,
WAL, the embedded default) and PostgreSQL (`handbook.pg_store`, psycopg 3 and a pool).

Every change is an event in the same transaction as the change itself, so the audit
trail is the data structure: a record and its history never disagree. Caps (records per
principal per hour, open records per doc) are checked inside the transaction that adds
the record, so concurrent writers cannot overshoot them. A record's id is derived from
its content (`handbook.inbox_records`), so adding it twice stores it once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from .errors import HandbookError

HOUR = 3_600
STATES = ("open", "accepted", "rejected")


class StoreError(HandbookError):
    """The store refused a change; `code` is the structured error's code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class StoreUnavailable(StoreError):
    """The store cannot be reached: writes answer `unavailable`, reads of the bundle go on."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


class Caps(NamedTuple):
    """What one principal and one doc may hold (`handbook serve --inbox` options)."""

    per_principal_per_hour: int = 60
    open_per_doc: int = 20


class Stored(NamedTuple):
    """One agent record as the store keeps it, with its state."""

    id: str
    kind: str
    """proposal | contradiction | corroboration"""
    library: str
    doc: str
    principal: str
    """Who it is attributed to: the agent's declared key name, or the request's principal."""
    payload: dict[str, Any]
    """The record's own fields (`handbook.inbox_records`), as signed or attributed."""
    created_at: int
    state: str = "open"
    decided_by: str | None = None
    decided_at: int | None = None
    reason: str | None = None


class Event(NamedTuple):
    """One line of the audit trail."""

    seq: int
    record: str
    action: str
    """submitted | accepted | rejected"""
    by: str
    at: int
    reason: str = ""


class Store(Protocol):
    def add(self, record: Stored, caps: Caps) -> tuple[Stored, bool]:
        """Keep `record` (open) unless one with its id exists; return what is stored and
        whether it is new. Raises StoreError `rate_limited` or `too_many_open` over a cap
        (nothing stored), StoreUnavailable when the store cannot be reached."""
        ...

    def get(self, record_id: str) -> Stored | None: ...

    def records(
        self, state: str | None = None, doc: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[Stored]:
        """Records, oldest first, optionally of one state and one doc."""
        ...

    def open_for(self, library: str, docs: Sequence[str]) -> dict[str, list[Stored]]:
        """The open records of each of `docs` (those with none are left out)."""
        ...

    def decide(self, record_id: str, state: str, by: str, at: int, reason: str) -> Stored:
        """Accept or reject an open record. Raises StoreError `not_found` or `decided`."""
        ...

    def events(self) -> Iterator[Event]:
        """The audit trail, in order."""
        ...

    def close(self) -> None: ...


MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE records (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        library TEXT NOT NULL,
        doc TEXT NOT NULL,
        principal TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        state TEXT NOT NULL DEFAULT 'open',
        decided_by TEXT,
        decided_at BIGINT,
        reason TEXT
    );
    CREATE INDEX records_open ON records (library, doc, state);
    CREATE INDEX records_by_principal ON records (principal, created_at);
    CREATE TABLE events (
        seq {auto_key},
        record TEXT NOT NULL REFERENCES records (id),
        action TEXT NOT NULL,
        by_whom TEXT NOT NULL,
        at BIGINT NOT NULL,
        reason TEXT NOT NULL DEFAULT ''
    );
    """,
)
"""Schema versions, applied in order on open; each is applied once (`schema_version`).
Written once for every store: `{auto_key}` is the one phrase their dialects spell apart."""

AUTO_KEY = {
    "sqlite": "INTEGER PRIMARY KEY AUTOINCREMENT",
    "postgres": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
}


def migration_statements(script: str, dialect: str) -> list[str]:
    """The statements of one of MIGRATIONS in a store's dialect (a key of AUTO_KEY)."""
    return [s for s in script.replace("{auto_key}", AUTO_KEY[dialect]).split(";") if s.strip()]


_COLUMNS = "id, kind, library, doc, principal, payload, created_at, state, decided_by, " + (
    "decided_at, reason"
)


def row_to_stored(row: Sequence[Any]) -> Stored:
    payload = row[5] if isinstance(row[5], dict) else json.loads(row[5])
    return Stored(row[0], row[1], row[2], row[3], row[4], payload, *row[6:])


class SQLiteStore:
    """The embedded store: one file, WAL, safe for several processes on one machine."""

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._timeout = timeout
        with self._transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT max(version) FROM schema_version").fetchone()
            current = row[0] or 0
            for version, script in enumerate(MIGRATIONS, 1):
                if version > current:
                    for statement in migration_statements(script, "sqlite"):
                        db.execute(statement)
                    db.execute("INSERT INTO schema_version VALUES (?)", (version,))

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
                    f"SELECT {_COLUMNS} FROM records WHERE id = ?", (record.id,)
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
                    f"INSERT INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        row = self._query(f"SELECT {_COLUMNS} FROM records WHERE id = ?", (record_id,))
        return row_to_stored(row[0]) if row else None

    def records(
        self, state: str | None = None, doc: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[Stored]:
        where, args = _where(state, doc)
        rows = self._query(
            f"SELECT {_COLUMNS} FROM records{where} ORDER BY created_at, id LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [row_to_stored(r) for r in rows]

    def open_for(self, library: str, docs: Sequence[str]) -> dict[str, list[Stored]]:
        out: dict[str, list[Stored]] = {}
        wanted = list(dict.fromkeys(docs))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._query(
                f"SELECT {_COLUMNS} FROM records WHERE state = 'open' AND library = ? "
                f"AND doc IN ({', '.join('?' * len(chunk))}) ORDER BY created_at, id",
                (library, *chunk),
            )
            for row in rows:
                stored = row_to_stored(row)
                out.setdefault(stored.doc, []).append(stored)
        return out

    def decide(self, record_id: str, state: str, by: str, at: int, reason: str) -> Stored:
        try:
            with self._transaction() as db:
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM records WHERE id = ?", (record_id,)
                ).fetchone()
                stored = decided(row_to_stored(row) if row else None, record_id, state)
                db.execute(
                    "UPDATE records SET state = ?, decided_by = ?, decided_at = ?, reason = ? "
                    "WHERE id = ?",
                    (state, by, at, reason, record_id),
                )
                db.execute(
                    "INSERT INTO events (record, action, by_whom, at, reason) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (record_id, state, by, at, reason),
                )
                return stored._replace(state=state, decided_by=by, decided_at=at, reason=reason)
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


def check_caps(caps: Caps, record: Stored, last_hour: int, open_on_doc: int) -> None:
    """Raise the structured refusal of a record over a cap (shared by every store)."""
    if last_hour >= caps.per_principal_per_hour:
        raise StoreError(
            "rate_limited",
            f"{record.principal} wrote {last_hour} records in the last hour; the limit is "
            f"{caps.per_principal_per_hour}: try again later",
        )
    if open_on_doc >= caps.open_per_doc:
        raise StoreError(
            "too_many_open",
            f"{record.doc} has {open_on_doc} open records; the limit is {caps.open_per_doc}: "
            "wait until people decide them",
        )


def decided(stored: Stored | None, record_id: str, state: str) -> Stored:
    """The record to decide, or the refusal (shared by every store)."""
    if state not in ("accepted", "rejected"):
        raise StoreError("bad_arguments", f"a decision is accepted or rejected, not {state!r}")
    if stored is None:
        raise StoreError("not_found", f"the inbox has no record {record_id}")
    if stored.state != "open":
        raise StoreError(
            "decided", f"{record_id} was already {stored.state} by {stored.decided_by}"
        )
    return stored


def _where(state: str | None, doc: str | None) -> tuple[str, tuple[Any, ...]]:
    clauses, args = [], []
    if state is not None:
        clauses.append("state = ?")
        args.append(state)
    if doc is not None:
        clauses.append("doc = ?")
        args.append(doc)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(args)


def open_store(spec: str) -> Store:
    """The store `spec` names: a ``postgresql://`` URL (the `postgres` extra), else the
    path of a SQLite file (created with its folder if missing)."""
    if spec.startswith(("postgresql://", "postgres://")):
        try:
            from .pg_store import PostgresStore
        except ImportError as exc:
            raise StoreUnavailable(
                f"a PostgreSQL inbox needs the postgres extra ({exc}): "
                "pip install 'handbook[postgres]'"
            ) from None
        store: Store = PostgresStore(spec)
        return store
    path = Path(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(path)
