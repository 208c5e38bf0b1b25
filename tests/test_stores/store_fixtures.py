"""The fixtures of the store tests: one real PostgreSQL server for the session, and
`site`, a fresh database of each store kind (SQLite file, PostgreSQL database) per test.

A test module loads them with ``pytest_plugins = ["store_fixtures"]``. Helpers the tests
import are in `store_helpers`, which pytest does not load itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_server import PgServer, server_binaries
from store_helpers import Site


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bindir = server_binaries()
    if bindir is None:
        reason = (
            "NO POSTGRESQL SERVER BINARIES (initdb, pg_ctl, postgres on PATH or under "
            "/usr/lib/postgresql/*/bin): the PostgreSQL store is NOT TESTED; install "
            "Debian's 'postgresql' package (.ci/run does)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason + " — and CI is set, so this is a failure")
        pytest.skip(reason)
    server = PgServer.start(bindir)
    yield server
    server.stop()


_databases = iter(range(1, 1_000_000))


@pytest.fixture(params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Site:
    """A new, empty database of one store kind."""
    if request.param == "sqlite":
        return Site("sqlite", str(tmp_path / "inbox.sqlite"))
    server: PgServer = request.getfixturevalue("pg_server")
    return Site("postgres", server.create_database(f"inbox_{next(_databases)}"), server)
