"""A throwaway PostgreSQL server for the store tests and bench/inbox_bench.py.

`PgServer.start()` runs `initdb` and `pg_ctl` from PATH or /usr/lib/postgresql/*/bin
(Debian's `postgresql` package, which .ci/run installs) in a new folder under /tmp,
listening on a free loopback port with trust authentication. `initdb` and `postgres`
refuse to run as root, and CI runs as root: then every server command runs as the
`postgres` user (`runuser -u postgres --`) and the folder is made theirs.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def server_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres, or None where there is none."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    candidates += sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for folder in candidates:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class PgServer:
    bindir: Path
    root: Path
    port: int
    as_user: list[str]
    """The prefix that runs a server command as a user other than root."""

    @classmethod
    def start(cls, bindir: Path, settings: dict[str, str] | None = None) -> PgServer:
        as_user: list[str] = []
        root = Path(tempfile.mkdtemp(prefix="handbook-pg-"))
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")  # Debian's package creates it
            os.chown(root, user.pw_uid, user.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        server = cls(bindir, root, _free_port(), as_user)
        server._run(
            "initdb",
            "-D",
            str(root / "data"),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(server.port),
            "unix_socket_directories": str(root),
            "max_connections": "200",
            **(settings or {}),
        }
        with open(root / "data" / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.writelines(f"{key} = '{value}'\n" for key, value in options.items())
        server.resume()
        return server

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def create_database(self, name: str) -> str:
        """A new empty database; its connection string."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def pause(self) -> None:
        """Stop the server (fast shutdown: open sessions are cut), keeping its data."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.root / "data"),
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        try:
            self.pause()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        path = self.root / "log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bindir / program), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} {' '.join(args)} exited {done.returncode}:\n{done.stdout}"
                f"{done.stderr}\n{self.log()}"
            )
