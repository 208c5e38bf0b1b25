"""Where the inbox keeps what agents write: the small `Store` protocol, its schema and the
rules every store applies the same way (caps, decisions).

The bundle is read-only and signed; what agents propose, contradict or corroborate is
kept beside it, in a store several `handbook serve` replicas can share. The protocol is
small on purpose, so that each store is easy to check against the same suite
(tests/test_stores/): SQLite (`handbook.inbox.sqlite_store`: the standard library's
`sqlite3`, WAL, the embedded default) and PostgreSQL (`handbook.inbox.pg_store`, psycopg 3
and a pool); `handbook.inbox.stores.open_store` picks one.

Every change is an event in the same transaction as the change itself, so the audit
trail is the data structure: a record and its history never disagree. Caps (records per
principal per hour, open records per doc) are checked inside the transaction that adds
the record, so concurrent writers cannot overshoot them. A record's id is derived from
its content (`handbook.inbox.records`), so adding it twice stores it once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from ..errors import HandbookError

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
    """The record's own fields (`handbook.inbox.records`), as signed or attributed."""
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


class Dialect(NamedTuple):
    """What each store's SQL spells its own way; the statements are written once, here,
    with ``?`` for each parameter."""

    auto_key: str
    """The column type of the events' sequence number."""
    mark: str
    """The parameter placeholder of the store's driver."""
    lock_row: str
    """What locks a row read in a transaction until it ends ('' where a transaction
    already holds the whole store)."""

    def sql(self, statement: str) -> str:
        """`statement` with this driver's placeholders."""
        return statement.replace("?", self.mark)


SQLITE = Dialect("INTEGER PRIMARY KEY AUTOINCREMENT", "?", "")
POSTGRES = Dialect("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "%s", " FOR UPDATE")


class Rows(Protocol):
    def fetchone(self) -> Any: ...


class Transaction(Protocol):
    """A connection inside a transaction: sqlite3's and psycopg's alike."""

    def execute(self, sql: str, args: Sequence[Any] = (), /) -> Rows: ...


def migrate_in(db: Transaction, dialect: Dialect) -> None:
    """Apply the MIGRATIONS not yet applied (`schema_version`), in the transaction `db`."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = db.execute("SELECT max(version) FROM schema_version").fetchone()
    current = (row[0] if row else None) or 0
    for version, script in enumerate(MIGRATIONS, 1):
        if version > current:
            script = script.replace("{auto_key}", dialect.auto_key)
            for statement in filter(str.strip, script.split(";")):
                db.execute(statement)
            db.execute(dialect.sql("INSERT INTO schema_version VALUES (?)"), (version,))


COLUMNS = "id, kind, library, doc, principal, payload, created_at, state, decided_by, " + (
    "decided_at, reason"
)


def row_to_stored(row: Sequence[Any]) -> Stored:
    payload = row[5] if isinstance(row[5], dict) else json.loads(row[5])
    return Stored(row[0], row[1], row[2], row[3], row[4], payload, *row[6:])


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


def decide_in(
    db: Transaction, dialect: Dialect, record_id: str, state: str, by: str, at: int, reason: str
) -> Stored:
    """`Store.decide` in the transaction `db`, for every store: the record's row is read
    (and locked), checked, changed, and the decision added to the audit trail, all or
    nothing. Raises StoreError `bad_arguments`, `not_found` or `decided`."""
    select = f"SELECT {COLUMNS} FROM records WHERE id = ?{dialect.lock_row}"
    row = db.execute(dialect.sql(select), (record_id,)).fetchone()
    stored = _decidable(row_to_stored(row) if row else None, record_id, state)
    db.execute(
        dialect.sql(
            "UPDATE records SET state = ?, decided_by = ?, decided_at = ?, reason = ? WHERE id = ?"
        ),
        (state, by, at, reason, record_id),
    )
    db.execute(
        dialect.sql(
            "INSERT INTO events (record, action, by_whom, at, reason) VALUES (?, ?, ?, ?, ?)"
        ),
        (record_id, state, by, at, reason),
    )
    return stored._replace(state=state, decided_by=by, decided_at=at, reason=reason)


def _decidable(stored: Stored | None, record_id: str, state: str) -> Stored:
    """The record to decide, or the refusal."""
    if state not in ("accepted", "rejected"):
        raise StoreError("bad_arguments", f"a decision is accepted or rejected, not {state!r}")
    if stored is None:
        raise StoreError("not_found", f"the inbox has no record {record_id}")
    if stored.state != "open":
        raise StoreError(
            "decided", f"{record_id} was already {stored.state} by {stored.decided_by}"
        )
    return stored
