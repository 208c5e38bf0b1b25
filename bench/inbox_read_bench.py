"""What showing open inbox records costs on the read path: cold start (open + first get,
in a fresh process) and `get` p50/p99, for a library served plain and served with a
SQLite inbox holding open records about its docs. One run, ratios.

    python bench/inbox_read_bench.py [--docs 10000] [--records 20000] [--gets 2000]

Gets pick docs at random, so most miss the inbox's one-second cache: the figure is the
cost of one indexed SQLite query per answer, not of a warm cache.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from synth import generate

from handbook import Library
from handbook.inbox.intake import Inbox
from handbook.inbox.records import payload, record_id
from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.store import Caps, Stored
from handbook.inbox.writable import Writable
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench" / "inbox-read"

CHILD = """
import sys, time, json
started = time.perf_counter()
from handbook import Library
library = Library.open(sys.argv[1], allow_unsigned=True)
if sys.argv[2]:
    from handbook.inbox.intake import Inbox
    from handbook.inbox.writable import Writable
    from handbook.inbox.sqlite_store import SQLiteStore
    library = Writable(library, Inbox(SQLiteStore(sys.argv[2])))
library.get(sys.argv[3])
print(json.dumps((time.perf_counter() - started) * 1000))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--gets", type=int, default=2_000)
    args = parser.parse_args(argv)
    config = generate(WORK / "library", args.docs)
    out = WORK / "bundle"
    shutil.rmtree(out, ignore_errors=True)
    build(load_config(config), out, None)
    library = Library.open(out, allow_unsigned=True)
    ids = [d.id for d in library.snapshot.docs]
    store_path = WORK / "inbox.sqlite3"
    store_path.unlink(missing_ok=True)
    fill(SQLiteStore(store_path), library, ids, args.records)
    print(f"[inbox-read] {args.docs} docs, {args.records} open records", file=sys.stderr)
    served = Writable(library, Inbox(SQLiteStore(store_path), Caps(10**9, 10**9)))
    rng = random.Random(2)
    picks = [rng.choice(ids) for _ in range(args.gets)]
    rows = {
        "plain": (cold(out, "", ids[0]), gets(library, picks)),
        "with an inbox": (cold(out, str(store_path), ids[0]), gets(served, picks)),
    }
    (base_cold, (base_p50, base_p99)), (in_cold, (in_p50, in_p99)) = rows.values()
    print(f"{args.docs} docs, {args.records} open records, {args.gets} gets\n")
    print("| measure | plain | with an inbox | ratio |\n|---|--:|--:|--:|")
    for label, a, b in (
        ("cold start: open + first get (ms)", base_cold, in_cold),
        ("get p50 (ms)", base_p50, in_p50),
        ("get p99 (ms)", base_p99, in_p99),
    ):
        print(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")
    return 0


def fill(store: SQLiteStore, library: Library, ids: list[str], count: int) -> None:
    """`count` open records (contradictions and corroborations) over random docs."""
    rng = random.Random(1)
    caps = Caps(10**9, 10**9)
    for n in range(count):
        doc = rng.choice(ids)
        kind = rng.choice(["contradiction", "corroboration"])
        fields = payload(
            kind, library.name, doc, f"principal:bot-{n % 50}",
            revision=library.snapshot.doc(doc).revision, basis=f"field observation {n}",  # type: ignore[union-attr]
        )  # fmt: skip
        store.add(
            Stored(record_id(kind, fields), kind, library.name, doc, fields["by"], fields, n),
            caps,
        )


def cold(out: Path, store: str, doc: str) -> float:
    runs = []
    for _ in range(3):
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(out), store, doc],
            check=True,
            capture_output=True,
            text=True,
        )
        runs.append(json.loads(child.stdout))
    return statistics.median(runs)


def gets(served: object, picks: list[str]) -> tuple[float, float]:
    times = []
    for doc in picks:
        started = time.perf_counter()
        served.get(doc)  # type: ignore[attr-defined]
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99)]


if __name__ == "__main__":
    sys.exit(main())
