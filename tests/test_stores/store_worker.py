"""One writer process of the store concurrency and fault tests (and bench/inbox_bench.py).

    python store_worker.py STORE NAME --threads 16 --ops 160 --acks DIR [--peers 4]

STORE is `sqlite:PATH` or `postgres:DSN`. Each of the threads does `--ops` operations,
drawn from a generator seeded by NAME and the thread's number, so a restarted worker
replays the same ones:

- 65%: add a new record `NAME-THREAD-OP` (its own principal, one of 40 docs);
- 15%: add one of 50 records `shared-K` that every worker adds alike (only one add of
  each, over all workers, may be new);
- 10%: add again a record this thread was told was stored (must be not new, the same);
- 10%: read back a record this thread was told was stored (must be there);

or, with `--new-only` (bench/inbox_bench.py's write throughput), only the first kind.

Every acknowledged add is appended, as `ID NEW SECONDS`, to `DIR/NAME.acks` as soon as
`add` returns, before the next operation: what a killed worker acknowledged is on file.
With `--peers N`, the worker then writes `DIR/NAME.done`, waits for N such files, and
polls its own store until every record acknowledged by any of them is visible. It prints
one JSON line: counts, errors, and the seconds that visibility took.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # store_helpers, and pg_server beside tests/
from store_helpers import T0, all_records, open_store  # noqa: E402

from handbook.inbox.store import Caps, Store, Stored  # noqa: E402

NO_CAPS = Caps(per_principal_per_hour=10**9, open_per_doc=10**9)


def shared(k: int) -> Stored:
    return Stored(
        f"shared-{k}",
        "corroboration",
        "plant-floor",
        f"doc-{k % 40}",
        "many",
        {"basis": "seen by everyone", "k": k},
        T0,
    )


def own(name: str, thread: int, op: int, doc: int) -> Stored:
    return Stored(
        f"{name}-{thread}-{op}",
        "contradiction",
        "plant-floor",
        f"doc-{doc}",
        f"{name}-{thread}",
        {"basis": f"op {op}", "thread": thread},
        T0 + op,
    )


class Worker:
    def __init__(self, store: Store, name: str, acks: Path, new_only: bool = False) -> None:
        self.store, self.name, self.new_only = store, name, new_only
        self.fd = os.open(acks / f"{name}.acks", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.lock = threading.Lock()
        self.counts = {"adds": 0, "new": 0, "retried": 0, "reads": 0, "polls": 0}
        self.errors: list[str] = []

    def ack(self, stored: Stored, new: bool, seconds: float) -> None:
        with self.lock:
            os.write(self.fd, f"{stored.id} {int(new)} {seconds:.6f}\n".encode())
            self.counts["adds"] += 1
            self.counts["new"] += new

    def add(self, stored: Stored) -> bool:
        began = time.perf_counter()
        kept, new = self.store.add(stored, NO_CAPS)
        self.ack(stored, new, time.perf_counter() - began)
        if kept.id != stored.id or kept.payload != stored.payload:
            raise AssertionError(f"added {stored.id}, the store answered {kept}")
        return new

    def run(self, thread: int, ops: int) -> None:
        rng = random.Random(f"{self.name}-{thread}")
        mine: list[Stored] = []
        try:
            for op in range(ops):
                roll = 1.0 if self.new_only else rng.random()
                if roll < 0.10 and mine:
                    again = rng.choice(mine)
                    if self.add(again):
                        raise AssertionError(f"{again.id} was new when added again")
                    self.counts["retried"] += 1
                elif roll < 0.20 and mine:
                    wanted = rng.choice(mine).id
                    if self.store.get(wanted) is None:
                        raise AssertionError(f"{wanted} was acknowledged but cannot be read")
                    self.counts["reads"] += 1
                elif roll < 0.35:
                    self.add(shared(rng.randrange(50)))
                else:
                    stored = own(self.name, thread, op, rng.randrange(40))
                    self.add(stored)
                    mine.append(stored)
        except Exception:
            self.errors.append(traceback.format_exc(limit=3))

    def await_peers(self, acks: Path, peers: int, deadline: float) -> float | None:
        """Seconds until every record any peer acknowledged is visible here, or None;
        `polls` counts the listings that missed some."""
        (acks / f"{self.name}.done").touch()
        while len(list(acks.glob("*.done"))) < peers:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        acked = {
            line.split()[0]
            for path in acks.glob("*.acks")
            for line in path.read_text(encoding="ascii").splitlines()
        }
        began = time.monotonic()
        while acked - {r.id for r in all_records(self.store)}:
            self.counts["polls"] += 1
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
        return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store")
    parser.add_argument("name")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--acks", type=Path, required=True)
    parser.add_argument("--peers", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=120.0)
    parser.add_argument("--new-only", action="store_true", help="only adds of new records")
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline
    store = open_store(args.store)
    worker = Worker(store, args.name, args.acks, args.new_only)
    began_at, began = time.time(), time.perf_counter()
    threads = [threading.Thread(target=worker.run, args=(n, args.ops)) for n in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - began
    visible = worker.await_peers(args.acks, args.peers, deadline) if args.peers else 0.0
    store.close()
    print(
        json.dumps(
            {
                "name": args.name,
                **worker.counts,
                "errors": worker.errors,
                "seconds": seconds,
                "began_at": began_at,
                "visible_after": visible,
            }
        )
    )


if __name__ == "__main__":
    main()
