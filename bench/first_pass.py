"""Where a fresh process's slowest searches go: the bench queries asked once each, in a
new process, with numpy imported in the background as the runtime does (from the second
large query on) or imported before the first search.

runtime_bench.py's warm loop is such a first pass, so its p99 includes the numpy import
(about 100 ms of CPU in a background thread, sharing the interpreter with the searches).
This script shows how much of the p99 that is; each mode runs `--rounds` times,
alternating, and prints per-query CPU and wall p50 / p99.

    python bench/first_pass.py --bundle build/bench/bundles/msdocs-10k \\
        --key build/bench/bench.key --queries build/bench/runtime/msdocs-10k/queries.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time
if sys.argv[3] == "numpy first":
    import numpy  # noqa: F401
    from handbook.search.array_loading import load_arrays
    load_arrays(wait=True)
from handbook import Library
lib = Library.open(sys.argv[1], trusted_keys=[sys.argv[2]])
queries = json.load(open(sys.argv[4], encoding="utf-8"))
cpu, wall = [], []
for q in queries:
    c, w = time.process_time(), time.perf_counter()
    lib.search(q, limit=10)
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - w)
print(json.dumps([cpu, wall]))
"""
MODES = ("numpy in the background", "numpy first")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--key", required=True, help="signing key file or ed25519: public key")
    parser.add_argument("--queries", required=True, help="a JSON list of queries")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(__file__))
    from cold_open import public_key

    key = public_key(args.key)
    results: dict[str, list[list[float]]] = {mode: [[], []] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, args.bundle, key, mode, args.queries],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            cpu, wall = json.loads(out)
            results[mode][0] += cpu
            results[mode][1] += wall
    print(f"{args.rounds} fresh processes per mode, interleaved; ms per query\n")
    print("| mode | CPU p50 | CPU p99 | wall p50 | wall p99 |")
    print("|---|--:|--:|--:|--:|")
    for mode, (cpu, wall) in results.items():
        cells = [_p(cpu, 50), _p(cpu, 99), _p(wall, 50), _p(wall, 99)]
        print(f"| {mode} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return 0


def _p(values: list[float], pct: int) -> float:
    return 1000 * statistics.quantiles(values, n=100)[pct - 1] if pct < 100 else max(values)


if __name__ == "__main__":
    raise SystemExit(main())
