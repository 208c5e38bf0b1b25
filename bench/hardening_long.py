"""Long runs of the hardening tests, with the figures for the README.

* **crash**: `handbook build` of a small library (two versions of the sources in
  turn) SIGKILLed `--runs` times after seeded random delays within a typical build;
  after each kill the published bundle must be absent (only before any build
  completed), the previous version or the new one, whole (every byte hashed by
  `open_bundle`); leftovers of killed builds must be removed by the next completed
  build. The code is `crash_campaign` in tests/test_hardening/test_crash_publish.py,
  which CI runs with 25 kills.
* **reload**: `--clients` threads hammer /api/v1/status, /get and /search of a served
  library while its bundle is swapped `--swaps` times between two versions and
  `Library.reload()` follows; every answer must be 200 and exactly one version's. Then
  a tampered third version must be refused while the second keeps serving. With
  `--add-doc` the second version also adds a doc that moves every catalog position
  (see the tests marked BUG in tests/test_hardening/test_reload_consistency.py, whose
  `reload_campaign` this runs; CI runs 60 swaps).

    python bench/hardening_long.py crash --runs 200 [--seed 20261129] [--verbose]
    python bench/hardening_long.py reload --swaps 500 --clients 16 [--add-doc]

Unlike the other scripts here, the reload run serves the library in this process
(uvicorn in a thread), so run it with the project's environment (/tmp/venv) and its
test dependencies. Work files go to build/bench/hardening/ (emptied first). Exits 1
when any check failed.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench" / "hardening"


def _tests(name: str) -> ModuleType:
    """A module of tests/test_hardening, importable as pytest imports it."""
    for folder in (ROOT / "tests", ROOT / "tests" / "test_hardening"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def _work(name: str) -> Path:
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def crash(runs: int, seed: int, verbose: bool) -> int:
    module = _tests("test_crash_publish")
    print(
        f"crash: {runs} SIGKILLed builds of {module.EXAMPLE.relative_to(ROOT)} (seed {seed})",
        flush=True,
    )
    figures = module.crash_campaign(_work("crash"), runs, seed, log=print if verbose else None)
    for line in figures.lines():
        print("  " + line)
    for violation in figures.violations[:20]:
        print("  VIOLATION " + violation)
    print(
        f"| crash | {figures.runs} runs | {figures.kills} killed ({figures.mid_publish} mid-publish) | "
        f"complete bundles {figures.complete}/{figures.checks} | leftovers cleaned "
        f"{figures.leftovers_cleaned}/{figures.leftovers_left} | {figures.seconds:.0f} s |"
    )
    ok = not figures.violations and figures.leftovers_cleaned == figures.leftovers_left
    return 0 if ok else 1


def reload(swaps: int, clients: int, add_doc: bool) -> int:
    module = _tests("test_reload_consistency")
    what = "the second version adding a doc" if add_doc else "the same docs in both versions"
    print(f"reload: {swaps} swaps under {clients} clients ({what})", flush=True)
    figures = module.reload_campaign(_work("reload"), swaps, clients, add_doc=add_doc, log=print)
    for line in figures.lines():
        print("  " + line)
    for example in figures.examples[:10]:
        print("  EXAMPLE " + example)
    for failure in figures.reload_failures[:10]:
        print("  RELOAD " + failure)
    print(
        f"| reload{' (+doc)' if add_doc else ''} | {figures.swaps} swaps | {clients} clients | "
        f"{figures.requests} requests | {figures.errors} errors | {figures.mixed} mixed | "
        f"tampered refused: {'yes' if figures.corrupt_refused else 'NO'} | {figures.seconds:.0f} s |"
    )
    ok = (
        not (figures.errors or figures.mixed or figures.reload_failures) and figures.corrupt_refused
    )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("crash", help="SIGKILL builds at random moments")
    one.add_argument("--runs", type=int, default=200)
    one.add_argument("--seed", type=int, default=20261129)
    one.add_argument("--verbose", action="store_true", help="one line per run")
    two = commands.add_parser("reload", help="swap bundles under concurrent requests")
    two.add_argument("--swaps", type=int, default=500)
    two.add_argument("--clients", type=int, default=16)
    two.add_argument(
        "--add-doc", action="store_true", help="the second version adds a doc before the others"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.command == "crash":
        code = crash(args.runs, args.seed, args.verbose)
    else:
        code = reload(args.swaps, args.clients, args.add_doc)
    print(
        f"{args.command}: {'ok' if code == 0 else 'FAILED'} in {time.perf_counter() - started:.1f} s"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
