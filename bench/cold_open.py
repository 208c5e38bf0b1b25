"""Cold starts of one bundle with two checkouts of the runtime, interleaved: the fairest
comparison on a shared, noisy machine (runtime_bench.py runs each checkout's engines a
few minutes apart, and the load moves in between).

Each round spawns a fresh process per checkout, in turn, that imports Handbook, opens the
bundle with its key (signature verified) and answers one search; the child reports its
import, open and first-search times, the parent the wall time from spawn to answer.
Medians and 90th percentiles per checkout, and the ratio of the medians.

    python bench/cold_open.py --bundle build/bench/bundles/synthetic-10000 \\
        --key build/bench/bench.key --other /work/main/runtime:/work/main/plugins

`--key` is a signing key file (its public key is derived) or an `ed25519:` public key.
This checkout is the one on the current PYTHONPATH. `--other-bundle` gives the other
checkout the bundle its own build wrote (a change to the build's output, such as the
chunk size, is then measured with the runtime that reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import time
T0 = time.perf_counter()
import json, sys
from handbook import Library
T1 = time.perf_counter()
lib = Library.open(sys.argv[1], trusted_keys=[sys.argv[2]])
T2 = time.perf_counter()
hits = lib.search(sys.argv[3], limit=10)["hits"]
T3 = time.perf_counter()
print(json.dumps([T1 - T0, T2 - T1, T3 - T2, len(hits)]))
"""
PHASES = ("import", "open", "first search", "cold start")


def public_key(key: str) -> str:
    if key.startswith("ed25519:"):
        return key
    from handbook.bundle.signing import load_private_key, public_key_of

    return str(public_key_of(load_private_key(Path(key).read_bytes())))


def cold(pythonpath: str, bundle: str, key: str, query: str) -> list[float]:
    """One fresh process: import, open and first search (ms, inside), and the whole wall
    time from spawn to the answer read."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, bundle, key, query],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    wall = time.perf_counter() - started
    *inside, hits = json.loads(out)
    if not hits:
        raise SystemExit(f"no hits for {query!r} with PYTHONPATH={pythonpath}")
    return [1000 * t for t in (*inside, wall)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--other", required=True, help="PYTHONPATH of the other checkout")
    parser.add_argument("--other-bundle", help="the other checkout's bundle (default: --bundle)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--query", default="pressure valve")
    args = parser.parse_args(argv)
    key = public_key(args.key)
    paths = {"this": os.environ.get("PYTHONPATH", ""), "other": args.other}
    bundles = {"this": args.bundle, "other": args.other_bundle or args.bundle}
    times: dict[str, list[list[float]]] = {name: [] for name in paths}
    for _ in range(args.runs):
        for name, path in paths.items():
            times[name].append(cold(path, bundles[name], key, args.query))
    print(f"{args.runs} rounds, interleaved; ms, median (p90)\n")
    print("| checkout | " + " | ".join(PHASES) + " |")
    print("|---|" + "--:|" * len(PHASES))
    medians = {}
    for name, rows in times.items():
        columns = list(zip(*rows, strict=True))
        medians[name] = [statistics.median(c) for c in columns]
        cells = [
            f"{m:.1f} ({sorted(c)[int(0.9 * (len(c) - 1))]:.1f})"
            for m, c in zip(medians[name], columns, strict=True)
        ]
        print(f"| {name} ({paths[name] or 'default'}) | " + " | ".join(cells) + " |")
    ratios = [o / t for o, t in zip(medians["other"], medians["this"], strict=True)]
    print("| other / this | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
