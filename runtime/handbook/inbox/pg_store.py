"""The inbox in PostgreSQL, for several `handbook serve` replicas behind one load balancer.

The same `Store` protocol and the same MIGRATIONS as the embedded SQLite store
(`handbook.inbox.store`), over psycopg 3 and its connection pool (`pip install
'handbook[postgres]'`). What SQLite gets from one writer at a time (BEGIN IMMEDIATE),
this store gets from transaction-scoped advisory locks:

- adding a record takes the lock of its principal, then the lock of its doc, always in
  that order, so two replicas cannot both pass a cap with the last free place, and two
  adds cannot wait on each other in a cycle;
- migrating takes one lock for the whole schema, so replicas started at once apply each
  migration once;
- deciding locks the record's row (`FOR UPDATE`), so a record is decided once.

A lost connection, a server that is down, or a pool with no connection to give within
`timeout` seconds raises StoreUnavailable: writes answer `unavailable`, and a retried
add is safe because a record's id is derived from its content.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from .store import (
    COLUMNS,
    HOUR,
    POSTGRES,
    Caps,
    Event,
    Stored,
    StoreUnavailable,
    check_caps,
    decide_in,
    migrate_in,
    row_to_stored,
)

# Advisory lock classes (the first key of pg_advisory_xact_lock(int, int)); the second
# key is the hash of a principal or a doc, so a collision only makes two adds wait.
_LOCK_SCHEMA, _LOCK_PRINCIPAL, _LOCK_DOC = 0x4842_0000, 0x4842_0001, 0x4842_0002

# Ties on created_at are broken by id in byte order, as SQLite does, whatever the
# database's collation.
_ORDER = 'ORDER BY created_at, id COLLATE "C"'


class PostgresStore:
    """The shared store: one PostgreSQL database, a pool of `min_size` to `max_size`
    connections per replica. `dsn` is a libpq connection string or URI."""

    def __init__(self, dsn: str, min_size: int = 1, max_size: int = 10, timeout: float = 30.0):
        self.dsn = dsn
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": True},  # transactions are explicit: conn.transaction()
            check=ConnectionPool.check_connection,  # a restarted server's dead connections
            name="handbook-inbox",
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreUnavailable(f"the inbox database cannot be reached: {exc}") from None
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    def _migrate(self) -> None:
        with self._connection(transaction=True) as db:
            db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_SCHEMA,))
            migrate_in(db, POSTGRES)

    @contextmanager
    def _connection(self, transaction: bool) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        try:
            with self._pool.connection() as db:
                if transaction:
                    with db.transaction():
                        yield db
                else:
                    yield db
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StoreUnavailable(f"the inbox database is unavailable: {exc}") from None

    def add(self, record: Stored, caps: Caps) -> tuple[Stored, bool]:
        with self._connection(transaction=True) as db:
            # Locks first: every statement after them sees what the adds before committed.
            db.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                (_LOCK_PRINCIPAL, record.principal),
            )
            db.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                (_LOCK_DOC, json.dumps([record.library, record.doc])),
            )
            found = db.execute(
                f"SELECT {COLUMNS} FROM records WHERE id = %s", (record.id,)
            ).fetchone()
            if found:
                return row_to_stored(found), False
            counts = db.execute(
                "SELECT (SELECT count(*) FROM records WHERE principal = %s AND created_at > %s), "
                "(SELECT count(*) FROM records WHERE library = %s AND doc = %s "
                "AND state = 'open')",
                (record.principal, record.created_at - HOUR, record.library, record.doc),
            ).fetchone()
            assert counts is not None
            check_caps(caps, record, counts[0], counts[1])
            inserted = db.execute(
                f"WITH added AS (INSERT INTO records ({COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING id) "
                "INSERT INTO events (record, action, by_whom, at) "
                "SELECT id, 'submitted', %s, %s FROM added RETURNING seq",
                (
                    *record[:5],
                    json.dumps(record.payload, sort_keys=True),
                    *record[6:],
                    record.principal,
                    record.created_at,
                ),
            ).fetchone()
            if inserted is None:  # the same id added by another principal or doc, just now
                found = db.execute(
                    f"SELECT {COLUMNS} FROM records WHERE id = %s", (record.id,)
                ).fetchone()
                assert found is not None
                return row_to_stored(found), False
            return record, True

    def get(self, record_id: str) -> Stored | None:
        rows = self._query(f"SELECT {COLUMNS} FROM records WHERE id = %s", (record_id,))
        return row_to_stored(rows[0]) if rows else None

    def records(
        self, state: str | None = None, doc: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[Stored]:
        given = [
            (name, value) for name, value in (("state", state), ("doc", doc)) if value is not None
        ]
        where = " AND ".join(f"{name} = %s" for name, _ in given)
        rows = self._query(
            f"SELECT {COLUMNS} FROM records {'WHERE ' + where if where else ''} "
            f"{_ORDER} LIMIT %s OFFSET %s",
            (*(value for _, value in given), limit, offset),
        )
        return [row_to_stored(r) for r in rows]

    def open_for(self, library: str, docs: Sequence[str]) -> dict[str, list[Stored]]:
        out: dict[str, list[Stored]] = {}
        rows = self._query(
            f"SELECT {COLUMNS} FROM records WHERE state = 'open' AND library = %s "
            f"AND doc = ANY(%s) {_ORDER}",
            (library, list(dict.fromkeys(docs))),
        )
        for row in rows:
            stored = row_to_stored(row)
            out.setdefault(stored.doc, []).append(stored)
        return out

    def decide(self, record_id: str, state: str, by: str, at: int, reason: str) -> Stored:
        with self._connection(transaction=True) as db:
            return decide_in(db, POSTGRES, record_id, state, by, at, reason)

    def events(self) -> Iterator[Event]:
        rows = self._query(
            "SELECT seq, record, action, by_whom, at, reason FROM events ORDER BY seq"
        )
        return (Event(*row) for row in rows)

    def close(self) -> None:
        self._pool.close()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection(transaction=False) as db:
            return db.execute(sql, args).fetchall()
