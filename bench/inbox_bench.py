"""What the inbox store costs to write: throughput and add latency of SQLite and
PostgreSQL with 1 and 4 writer processes, then the 4-process mixed run of the
concurrency test with the delay until every process sees every record. One run.

    python bench/inbox_bench.py [--threads 4] [--ops 500] [--mixed-ops 157]

Each writer is tests/test_stores/store_worker.py in its own interpreter, each thread of
it adding new records as fast as it is answered (`--new-only`), no caps in the way.
PostgreSQL is a fresh server of tests/pg_server.py (its default settings, fsync on,
over loopback TCP); SQLite is a file in build/bench/inbox/ (WAL, synchronous=FULL).

- adds/s: acknowledged adds over the wall time from the first worker's start of writing
  to the last one's end (workers open their store before they start, not all at once);
- p50/p99 ms: of every add, as its worker timed it around `Store.add`;
- visible after: in the mixed run, the longest any process waited, once all had
  finished writing, until a full listing (`records`, pages of 1,000) held every record
  any of them acknowledged; it includes the listing itself, and how many listings (of
  all processes) missed a record is given beside it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench" / "inbox"
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "test_stores")]
from pg_server import PgServer, server_binaries  # noqa: E402
from store_helpers import Site, check_consistent, finish, start_worker  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=4, help="writer threads per process")
    parser.add_argument("--ops", type=int, default=500, help="adds per thread")
    parser.add_argument("--mixed-ops", type=int, default=157, help="per thread, 16 threads")
    args = parser.parse_args(argv)
    bindir = server_binaries()
    if bindir is None:
        print("no PostgreSQL server programs (initdb, pg_ctl): install Debian's postgresql")
        return 1
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    server = PgServer.start(bindir)
    rows: list[str] = []
    try:
        say(environment(server))
        runs = 0
        for kind in ("sqlite", "postgres"):
            for processes in (1, 4):
                runs += 1
                site = new_site(kind, server, runs)
                rows.append(writes(site, processes, args.threads, args.ops, WORK / f"acks{runs}"))
                say(rows[-1])
        for kind in ("sqlite", "postgres"):
            runs += 1
            rows.append(mixed(new_site(kind, server, runs), args.mixed_ops, WORK / f"acks{runs}"))
            say(rows[-1])
    finally:
        server.stop()
    print("\n| store | writer processes x threads | adds | adds/s | p50 ms | p99 ms |"
          " visible after s |\n|---|---|---|---|---|---|---|")  # fmt: skip
    print("\n".join(rows))
    return 0


def new_site(kind: str, server: PgServer, n: int) -> Site:
    if kind == "sqlite":
        return Site("sqlite", str(WORK / f"inbox{n}.sqlite"))
    return Site("postgres", server.create_database(f"bench_{n}"), server)


def writes(site: Site, processes: int, threads: int, ops: int, acks: Path) -> str:
    acks.mkdir()
    workers = [
        start_worker(site, f"w{n}", acks, threads, ops, extra=("--new-only",))
        for n in range(processes)
    ]
    summaries = [finish(w) for w in workers]
    began = min(float(s["began_at"]) for s in summaries)
    ended = max(float(s["began_at"]) + float(s["seconds"]) for s in summaries)
    latencies = sorted(
        float(line.split()[2]) * 1000
        for path in acks.glob("*.acks")
        for line in path.read_text(encoding="ascii").splitlines()
    )
    check(site, summaries, len(latencies))
    p50, p99 = statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]
    return (
        f"| {site.kind} | {processes} x {threads} | {len(latencies):,} | "
        f"{len(latencies) / (ended - began):,.0f} | {p50:.2f} | {p99:.2f} | |"
    )


def mixed(site: Site, ops: int, acks: Path) -> str:
    acks.mkdir()
    workers = [start_worker(site, f"w{n}", acks, 16, ops, peers=4) for n in range(4)]
    summaries = [finish(w) for w in workers]
    visible = [s["visible_after"] for s in summaries]
    if None in visible:
        raise SystemExit(f"{site.kind}: a record never became visible")
    adds = sum(int(s["adds"]) for s in summaries)
    missed = sum(int(s["polls"]) for s in summaries)
    check(site, summaries, None)
    return (
        f"| {site.kind}, mixed (65% new, 15% shared, 10% retried, 10% reads) | 4 x 16 | "
        f"{adds:,} | | | | {max(float(v) for v in visible):.2f} ({missed} listings missed some) |"
    )


def check(site: Site, summaries: list[dict[str, object]], adds: int | None) -> None:
    """A figure from a run that lost or duplicated anything would mean nothing."""
    errors = [e for s in summaries for e in s["errors"]]
    if errors:
        raise SystemExit(f"{site.kind}: a worker failed:\n{errors[0]}")
    store = site.open()
    stored = len(check_consistent(store))
    store.close()
    if adds is not None and stored != adds:
        raise SystemExit(f"{site.kind}: {adds} adds acknowledged, {stored} records stored")


def environment(server: PgServer) -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line), "")
    version = subprocess.run(
        [str(server.bindir / "postgres"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    return (
        f"{cpu}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}; {version}"
    )


def say(text: str) -> None:
    print(f"inbox_bench: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
