"""The embedding cache: passage vectors kept between builds, so a rebuild embeds only the
passages that are new or changed.

A row is keyed by the model key (`Encoder.vector_key`: the model's files and the encoder
settings that change vectors) and the sha256 of the passage text as embedded, and holds
the vector as ``vectors.bin`` stores it (float16, so a vector served from here writes the
same bytes as a fresh one) with a digest of key and vector. A row whose digest or length
does not match is a miss: recomputed and overwritten, never served.

The store is one SQLite file, ``embeddings.sqlite3``, in the cache folder (`folder`). Each
build adds its new rows in one transaction and SQLite's locking orders builds that write
at once (a CI cache shared by parallel jobs): a reader sees every row of a build or none.
A file SQLite cannot read as a database is set aside and started afresh. It grows by
about 0.9 KB per distinct passage and is kept to `MAX_ROWS` rows (about 250 MB): past
that, the rows no build has read for longest are dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ENV = "HANDBOOK_CACHE_DIR"
FILE = "embeddings.sqlite3"
MAX_ROWS = 250_000
"""At most this many vectors are kept: 0.92 KB each on disk with the 384-wide model
(msdocs-10k: 134,805 passages in 124.6 MB)."""
TOUCH_AFTER = 86_400
"""A row read is marked as used again once a day at most, to keep reads cheap."""
_CHUNK = 500
"""Keys per SELECT (SQLite allows 999 parameters in old versions)."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model BLOB NOT NULL, text BLOB NOT NULL, vector BLOB NOT NULL, digest BLOB NOT NULL,
    used INTEGER NOT NULL, PRIMARY KEY (model, text)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used);
"""

log = logging.getLogger(__name__)


def folder(configured: Path | None = None) -> Path:
    """Where the cache lives: the `embedding_cache` option when given, else
    $HANDBOOK_CACHE_DIR, else $XDG_CACHE_HOME/handbook, else ~/.cache/handbook."""
    if configured is not None:
        return configured
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "handbook"


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _corrupt(exc: sqlite3.Error) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file is damaged, not merely busy."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (11, 26)


def _digest(model: bytes, text: bytes, vector: bytes) -> bytes:
    return hashlib.blake2b(model + text + vector, digest_size=8).digest()


class EmbeddingCache:
    """Vectors by (model key, text key), in the SQLite file of a cache folder."""

    def __init__(self, where: Path, model: str, dim: int) -> None:
        self.path = where / FILE
        self.model = bytes.fromhex(model)[:16]
        self.dim = dim
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc):
                raise
            self._set_aside(exc)
            return self._connect()

    def reset(self, exc: sqlite3.Error) -> None:
        """After an error while reading: a damaged file is set aside and started afresh
        (this build's vectors then go into the new one); any other error is reported."""
        if not _corrupt(exc):
            log.warning("embedding cache %s not read: %s", self.path, exc)
            return
        self.db.close()
        self._set_aside(exc)
        self.db = self._connect()

    def _set_aside(self, exc: sqlite3.Error) -> None:
        aside = self.path.with_name(FILE + ".unreadable")
        log.warning(
            "%s is not a readable embedding cache (%s): moved to %s, starting afresh",
            self.path,
            exc,
            aside.name,
        )
        with contextlib.suppress(FileNotFoundError):  # another build set it aside first
            os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            db.execute("SELECT count(*) FROM vectors").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def get(self, keys: list[bytes]) -> dict[bytes, NDArray[np.float16]]:
        """The vectors held for `keys` whose rows are whole; rows read are marked used."""
        found: dict[bytes, NDArray[np.float16]] = {}
        stale: list[bytes] = []
        now = int(time.time())
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            rows = self.db.execute(
                "SELECT text, vector, digest, used FROM vectors WHERE model = ? AND text IN "
                f"({','.join('?' * len(chunk))})",
                [self.model, *chunk],
            ).fetchall()
            for text, vector, digest, used in rows:
                if len(vector) != 2 * self.dim or digest != _digest(self.model, text, vector):
                    continue  # damaged: a miss, overwritten when it is computed again
                found[text] = np.frombuffer(vector, dtype="<f2")
                if used < now - TOUCH_AFTER:
                    stale.append(text)
        if stale:
            with self._transaction():
                self.db.executemany(
                    "UPDATE vectors SET used = ? WHERE model = ? AND text = ?",
                    [(now, self.model, text) for text in stale],
                )
        return found

    def put(self, items: Iterable[tuple[bytes, NDArray[np.float32]]]) -> None:
        """Store vectors (as float16) in one transaction, then keep to `MAX_ROWS`."""
        now = int(time.time())
        rows = []
        for text, vector in items:
            data = np.ascontiguousarray(vector, dtype="<f2").tobytes()
            rows.append((self.model, text, data, _digest(self.model, text, data), now))
        with self._transaction():
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
            (count,) = self.db.execute("SELECT count(*) FROM vectors").fetchone()
            if count > MAX_ROWS:
                self.db.execute(
                    "DELETE FROM vectors WHERE (model, text) IN "
                    "(SELECT model, text FROM vectors ORDER BY used LIMIT ?)",
                    (count - MAX_ROWS,),
                )

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)

    def close(self) -> None:
        self.db.close()


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error: a build's rows land whole."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")
