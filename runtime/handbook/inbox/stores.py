"""Opening the store an inbox spec names: PostgreSQL for a URL, SQLite for a path."""

from __future__ import annotations

from pathlib import Path

from .sqlite_store import SQLiteStore
from .store import Store, StoreUnavailable


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
