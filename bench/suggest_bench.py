"""What an unknown id's suggestions cost: the first `get` of a near-miss id in fresh
processes (open excluded), and `get` p50/p99 over many near-miss and hostile ids in one
process, on a synthetic library of N docs. One run; compare only figures of one run.

    python bench/suggest_bench.py [--docs 10000] [--processes 30] [--calls 1000]
                                  [--bundle PATH]

The near misses are made from the library's ids: a letter swapped, left out, added or
wrong; upper case; the kind left out; a suffix added; and hostile ids (10,000
characters, control characters, Cyrillic). Without --bundle the library is generated
(bench/synth.py) and built unsigned into build/bench/suggest/.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from synth import generate

from handbook import Library
from handbook.bundle.catalog_offsets import CatalogOffsets
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench" / "suggest"

CHILD = """
import sys, time, json
from handbook import Library
library = Library.open(sys.argv[1], allow_unsigned=True)
wanted = json.loads(sys.stdin.read())
started, cpu = time.perf_counter(), time.process_time()
answer = library.get(wanted)
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
assert answer["found"] is False, answer
print(json.dumps([wall * 1000, cpu * 1000, answer["suggestions"][:3]]))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=30)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--bundle", type=Path)
    args = parser.parse_args(argv)
    bundle = args.bundle or built(args.docs)
    ids = CatalogOffsets((bundle / "catalog-offsets.bin").read_bytes(), 1 << 32).ids
    rng = random.Random(29)
    misses = [m for m in (near_miss(rng, rng.choice(ids)) for _ in range(args.calls)) if m]
    misses = [m for m in misses if m not in set(ids)]
    first: list[float] = []
    first_cpu: list[float] = []
    shown: list[str] = []
    for wanted in misses[: args.processes]:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(bundle)],
            input=json.dumps(wanted),
            check=True,
            capture_output=True,
            text=True,
        )
        ms, cpu, shown = json.loads(child.stdout)
        first.append(ms)
        first_cpu.append(cpu)
    library = Library.open(bundle, allow_unsigned=True)
    times, cpu_times = [], []
    for wanted in misses:
        started, cpu = time.perf_counter(), time.process_time()
        library.get(wanted)
        times.append((time.perf_counter() - started) * 1000)
        cpu_times.append((time.process_time() - cpu) * 1000)
    rows = {
        "first get of a near miss in a fresh process": first,
        "the same, CPU time": first_cpu,
        "get of a near miss, one process": times,
        "the same, CPU time ": cpu_times,
    }
    print(report(len(ids), rows, shown))
    return 0


def built(docs: int) -> Path:
    out = WORK / f"out-{docs}"
    if not (out / "manifest.json").exists():
        config = generate(WORK / "src", docs)
        build(load_config(config), out, None)
    return out


def near_miss(rng: random.Random, wanted: str) -> str:
    at = rng.randrange(1, len(wanted) - 1)
    letter = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return rng.choice(
        [
            wanted[:at] + wanted[at + 1] + wanted[at] + wanted[at + 2 :],
            wanted[:at] + wanted[at + 1 :],
            wanted[:at] + letter + wanted[at:],
            wanted[:at] + letter + wanted[at + 1 :],
            wanted.upper(),
            wanted.split(".", 1)[-1],
            wanted + "-manual",
            wanted * 600,
            "\x00\x07\n" * 3000 + wanted,
            "дев." * 2500,
        ]
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def report(docs: int, rows: dict[str, list[float]], shown: list[str]) -> str:
    first, times = rows["first get of a near miss in a fresh process"], rows["the same, CPU time "]
    lines = [
        f"{docs} docs; {len(first)} fresh processes; {len(times)} calls in one process",
        "",
        "| measure | p50 (ms) | p99 (ms) | max (ms) |",
        "|---|--:|--:|--:|",
    ]
    for label, values in rows.items():
        lines.append(
            f"| {label.strip()} | {statistics.median(values):.2f} "
            f"| {percentile(values, 0.99):.2f} | {max(values):.2f} |"
        )
    return "\n".join([*lines, "", f"last fresh process suggested: {', '.join(shown)}"])


if __name__ == "__main__":
    sys.exit(main())
