"""Measure `handbook check` throughput: docs per second, wall time and peak memory.

Each library is checked by a fresh interpreter, as a user or CI job runs it, so the
figures include interpreter start-up and imports, and no Python state carries over
from one run to the next (the files themselves are in the OS cache: they were just
written or unpacked). The libraries are synthetic ones of each `--sizes` (made by `synth.py`, which
must give zero errors) and, when it is present, the real msdocs-10k corpus.

Memory is reported two ways, because `check` parses large libraries in a process pool:

* ``main MB``: the check process's own peak RSS, from the kernel (`os.wait4`); exact.
* ``all MB``: the peak of the summed RSS of the check process and all its descendants
  (pool workers, the forkserver), sampled from /proc every 50 ms. Linux only; pages
  the processes share are counted once per process, so it errs high.

    python bench/check_throughput.py [--sizes 1000,10000] [--no-real] [--runs N]

Only the standard library is used; Handbook itself runs in the child processes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench"
"""Git-ignored; libraries are generated and unpacked here."""
MSDOCS = ROOT.parent / "shared" / "data" / "msdocs-10k" / "msdocs-10k.tar.gz"
CHECK = [sys.executable, "-c", "from handbook.cli import main; main()", "check", "--config"]
SUMMARY = re.compile(r"\d+ files? checked \((\d+) docs?\): (\d+) errors?, (\d+) warnings?")
SAMPLE_S = 0.05


@dataclass(frozen=True)
class Run:
    library: str
    docs: int
    megabytes: float
    """Size of the library's .md files on disk."""
    wall_s: float
    main_rss_mb: float
    tree_rss_mb: float | None
    errors: int
    warnings: int
    exit_code: int

    @property
    def docs_per_s(self) -> float:
        return self.docs / self.wall_s


# -- libraries -----------------------------------------------------------------------------


def synthetic(docs: int, seed: int) -> Path:
    """Regenerated on every run (a few seconds at 10,000 docs, and never timed), so the
    library always matches the current generator; by a child process, so this one stays
    small (a child's ru_maxrss starts from its parent's RSS at the fork)."""
    out = WORK / f"synth-{docs}-seed{seed}"
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("synth.py")),
            str(out),
            "--docs",
            str(docs),
            "--seed",
            str(seed),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return out / "mkdocs.yml"


def msdocs() -> Path | None:
    """The real corpus, unpacked once. Unpacking goes to a temporary folder renamed at
    the end, so an interrupted unpack is never mistaken for a finished one."""
    target = WORK / "msdocs-10k"
    if (target / "mkdocs.yml").exists():
        return target / "mkdocs.yml"
    if not MSDOCS.exists():
        return None
    print(f"unpacking {MSDOCS} into {target}", file=sys.stderr)
    partial = WORK / "msdocs-10k.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(MSDOCS) as archive:
        archive.extractall(partial, filter="data")
    (partial / "msdocs-10k").rename(target)
    partial.rmdir()
    return target / "mkdocs.yml"


def libraries(sizes: str, seed: int, real: bool) -> list[tuple[str, Path]]:
    """(label, mkdocs.yml) for each synthetic size in `sizes` ("1000,10000"), then the
    real corpus when `real` and its archive is present."""
    out = []
    for size in [int(s) for s in sizes.split(",") if s.strip()]:
        print(f"generating {size:,} synthetic docs", file=sys.stderr)
        out.append((f"synthetic-{size}", synthetic(size, seed)))
    if real:
        config = msdocs()
        if config is None:
            print(
                "note: the msdocs-10k archive was not found; real corpus skipped", file=sys.stderr
            )
        else:
            out.append(("msdocs-10k", config))
    return out


def megabytes(config: Path) -> float:
    return sum(p.stat().st_size for p in (config.parent / "docs").rglob("*.md")) / 1e6


# -- measuring -----------------------------------------------------------------------------


class TreeSampler(threading.Thread):
    """Polls /proc for the summed RSS of a process and its descendants; `peak_mb` is
    None where /proc is missing (not Linux)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self.available = Path("/proc/self/stat").exists()
        self.stopped = threading.Event()
        self.page_kb = os.sysconf("SC_PAGE_SIZE") // 1024 if self.available else 0

    @property
    def peak_mb(self) -> float | None:
        return self.peak_kb / 1024 if self.available else None

    def run(self) -> None:
        while self.available and not self.stopped.is_set():
            self.peak_kb = max(self.peak_kb, self._tree_kb())
            self.stopped.wait(SAMPLE_S)

    def _tree_kb(self) -> int:
        parents: dict[int, int] = {}
        rss: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue  # the process ended while we looked
            pid = int(entry.name)
            parents[pid], rss[pid] = int(fields[1]), int(fields[21]) * self.page_kb
        total, stack = 0, [self.pid]
        children: dict[int, list[int]] = {}
        for pid, ppid in parents.items():
            children.setdefault(ppid, []).append(pid)
        while stack:
            pid = stack.pop()
            total += rss.get(pid, 0)
            stack += children.get(pid, [])
        return total


def measure(label: str, config: Path) -> Run:
    """Check one library in a fresh child process; output goes to build/bench/logs."""
    logs = WORK / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{label}.out", "wb") as out, open(logs / f"{label}.err", "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen([*CHECK, str(config)], stdout=out, stderr=err, cwd=ROOT)
        sampler = TreeSampler(child.pid)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    sampler.stopped.set()
    sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    main_kb = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # bytes on macOS
    text = (logs / f"{label}.out").read_text(encoding="utf-8", errors="replace")
    match = SUMMARY.search(text)
    if match is None:
        raise RuntimeError(
            f"{label}: no summary line from `handbook check` (exit {child.returncode}); see {logs}"
        )
    docs, errors, warnings = map(int, match.groups())
    return Run(
        label,
        docs,
        megabytes(config),
        wall,
        main_kb / 1024,
        sampler.peak_mb,
        errors,
        warnings,
        child.returncode,
    )


def measure_median(label: str, config: Path, runs: int) -> Run:
    """The run with the median wall time, so one slow or lucky run does not decide."""
    results = sorted((measure(label, config) for _ in range(runs)), key=lambda r: r.wall_s)
    return results[(len(results) - 1) // 2]


# -- reporting -----------------------------------------------------------------------------


def table(runs: list[Run]) -> str:
    lines = [
        "| library | docs | MB | wall s | docs/s | main MB | all MB | errors | warnings | exit |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in runs:
        tree = f"{r.tree_rss_mb:,.0f}" if r.tree_rss_mb is not None else "n/a"
        lines.append(
            f"| {r.library} | {r.docs:,} | {r.megabytes:.1f} | {r.wall_s:.2f} | **{r.docs_per_s:,.0f}** "
            f"| {r.main_rss_mb:,.0f} | {tree} | {r.errors} | {r.warnings} | {r.exit_code} |"
        )
    return "\n".join(lines)


def environment() -> str:
    try:
        from importlib.metadata import version

        handbook = version("handbook")
    except Exception:
        handbook = "?"
    return (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, handbook {handbook}, {platform.platform()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="synthetic library sizes, comma-separated (default: %(default)s)",
    )
    parser.add_argument("--no-real", action="store_true", help="skip the msdocs-10k corpus")
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs per library; the median is reported (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic libraries (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    libraries: list[tuple[str, Path, int | None]] = []
    for size in sizes:
        print(f"generating {size:,} synthetic docs", file=sys.stderr)
        libraries.append((f"synthetic-{size}", synthetic(size, args.seed), size))
    if not args.no_real:
        config = msdocs()
        if config is None:
            print(f"note: {MSDOCS} not found; real corpus skipped", file=sys.stderr)
        else:
            libraries.append(("msdocs-10k", config, None))

    results, problems = [], []
    for label, config, expected in libraries:
        print(f"checking {label}", file=sys.stderr)
        run = measure_median(label, config, max(args.runs, 1))
        results.append(run)
        # The synthetic libraries are valid by construction; anything else is a bug in
        # the generator or the checker, and would make the timing meaningless.
        if expected is not None and (run.errors or run.exit_code or run.docs != expected):
            problems.append(
                f"{label}: expected {expected} docs and 0 errors, got {run.docs} docs, "
                f"{run.errors} errors (exit {run.exit_code}); see {WORK / 'logs'}"
            )

    print(
        f"`handbook check`, fresh process per library, median of {max(args.runs, 1)} run(s); {environment()}\n"
    )
    print(table(results))
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
