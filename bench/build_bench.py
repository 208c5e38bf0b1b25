"""Measure `handbook build` against a plain lunr.py index of the same entries.

For each library (synthetic ones of each `--sizes`, made by `synth.py`, and the real
msdocs-10k corpus when present) three fresh interpreters run one after the other:

* **handbook build**: `handbook build --config … --out … --key …`, as a user or CI job
  runs it: check every doc, write catalog, content, the lunr index, tools.json and
  llms.txt, sign, verify and publish. Timed from outside like `check_throughput.py`:
  wall seconds, the process's peak RSS (`os.wait4`) and the peak summed RSS and PSS of
  its process tree (sampled from /proc). Then the published bundle's size, its lunr
  index alone (`index.json.gz` by default, `index.json` with `lunr_index: json`), and
  the size table: the bytes of every file the manifest lists against those of
  `content/` (issue 20's goal: at most 3x).
* **index part**: a child that checks the library with analysis on (as the build does),
  then times Handbook's index writer twice: assembling and writing the entries the
  pool analyzed (the part of the build that runs after the check), and the whole index
  from the raw entries in one process (analysis included; the like of what lunr.py does).
  Both files must equal the bundle's `index.json` byte for byte (`index.json.gz`
  decompressed).
* **lunr.py anchor** (unless `--no-lunr`): a child that loads the config, runs the check,
  builds `lunr.lunr(...)` over the same entries (`emit.index_entries`, docs in id order,
  fields and boosts of `lunr_index.FIELDS`) and writes `json.dumps(idx.serialize())`.
  Only the index build and serialization are timed as the anchor (with perf_counter,
  inside the child; the check is reported beside it), and its peak is the child's exact
  peak RSS up to the end of that part (`getrusage`), loaded docs included.

The comparison is conservative: the handbook figure is the whole build, parsing and
checking included, while the lunr.py figure is its index alone.

    python bench/build_bench.py [--sizes 1000,10000] [--no-real] [--no-lunr]

Only the standard library is used here; Handbook and lunr.py run in the child processes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_throughput import ROOT, WORK, TreeSampler, environment, libraries

HANDBOOK = [sys.executable, "-c", "from handbook.cli import main; main()"]
CHILD = [sys.executable, str(Path(__file__).resolve()), "--child"]
KEY = WORK / "bench.key"
"""A throwaway signing key, made once with `handbook keygen`."""
BUILT = re.compile(r"built \S+ \S+: (\d+) docs, (\d+) files, ([\d.]+) MB in ([\d.]+) s")
GOAL_DOCS, GOAL_S, GOAL_MB = 10_000, 20.0, 500.0
"""The whole `handbook build` of 10,000 docs in at most 20 s and under 500 MB."""


@dataclass(frozen=True)
class Proc:
    """One child process: wall time from start to reaping, peak RSS, its stdout."""

    wall_s: float
    main_mb: float
    tree_mb: float | None
    """Peak summed RSS of the process tree (shared pages once per process)."""
    pss_mb: float | None
    """Peak summed PSS of the process tree (shared pages split between their sharers)."""
    stdout: str


@dataclass(frozen=True)
class Result:
    library: str
    docs: int
    build: Proc
    build_inner_s: float
    """The build's own figure ("… in N s"): from after the key is loaded to publishing."""
    bundle_mb: float
    index_mb: float
    """The lunr index as shipped (index.json, or index.json.gz by default)."""
    part: dict[str, Any]
    """From the index-part child: check_s, assemble_s, serial_s, entries, terms, vectors."""
    index_identical: bool
    lunr: Proc | None
    anchor: dict[str, Any] | None
    """From the lunr.py child: check_s, entries_s, index_s, serialize_s, sizes, counts."""
    size: dict[str, int] | None = None
    """`bundle_sizes` of the published bundle."""

    @property
    def anchor_s(self) -> float | None:
        return self.anchor["index_s"] + self.anchor["serialize_s"] if self.anchor else None


# -- children ------------------------------------------------------------------------------


class PssSampler(TreeSampler):
    """Like `TreeSampler`, but sums each process's proportional set size (PSS, from
    /proc/PID/smaps_rollup): a page shared by n processes counts 1/n in each. RSS
    counts it in full in each, which overstates forked workers: they share most of
    their parent's memory copy-on-write. Needs Linux 4.14 or later."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.available = self.available and Path("/proc/self/smaps_rollup").exists()

    def _tree_kb(self) -> int:
        parents: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    with open(f"/proc/{entry.name}/stat", "rb") as fh:
                        parents[int(entry.name)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, IndexError):
                    continue  # the process ended while we looked
        children: dict[int, list[int]] = {}
        for pid, ppid in parents.items():
            children.setdefault(ppid, []).append(pid)
        total, stack = 0, [self.pid]
        while stack:
            pid = stack.pop()
            stack += children.get(pid, [])
            try:
                with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                    for line in fh:
                        if line.startswith(b"Pss:"):
                            total += int(line.split()[1])
                            break
            except OSError:
                continue
        return total


def run(label: str, cmd: list[str]) -> Proc:
    """Run `cmd` in a fresh process and measure it as `check_throughput.measure` does;
    output goes to build/bench/logs/<label>.out and .err."""
    logs = WORK / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{label}.out", "wb") as out, open(logs / f"{label}.err", "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        samplers = [TreeSampler(child.pid), PssSampler(child.pid)]
        for sampler in samplers:
            sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    for sampler in samplers:
        sampler.stopped.set()
        sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    if child.returncode:
        raise RuntimeError(f"{label}: exit {child.returncode}; see {logs / label}.err")
    main_kb = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # bytes on macOS
    # The tree's RSS is never below the main process's exact peak, which sampling can miss.
    rss, pss = (s.peak_mb for s in samplers)
    return Proc(
        wall,
        main_kb / 1024,
        None if rss is None else max(rss, main_kb / 1024),
        pss,
        (logs / f"{label}.out").read_text(encoding="utf-8", errors="replace"),
    )


def last_json(proc: Proc) -> dict[str, Any]:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_lunr(config_path: str, out: str) -> dict[str, Any]:
    """The anchor: lunr.py's own builder over the same entries as the bundle's index."""
    import resource

    import lunr

    from handbook_build import check, load_config
    from handbook_build.write.emit import index_entries
    from handbook_build.write.lunr_index import FIELDS

    t0 = time.perf_counter()
    result = check(load_config(config_path))
    t1 = time.perf_counter()
    names = [name for name, _ in FIELDS]
    docs = result.docs  # path order, as the build indexes them
    documents = [
        {"ref": e.ref, **dict(zip(names, e.fields, strict=True))} for e in index_entries(docs)
    ]
    t2 = time.perf_counter()
    idx = lunr.lunr(
        ref="ref", fields=[{"field_name": n, "boost": b} for n, b in FIELDS], documents=documents
    )
    t3 = time.perf_counter()
    serialized = idx.serialize()
    text = json.dumps(serialized)
    Path(out).write_text(text, encoding="utf-8")
    t4 = time.perf_counter()
    # The exact peak up to the end of the timed part (ru_maxrss: KiB on Linux, bytes on macOS).
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (
        1024 ** (2 if sys.platform == "darwin" else 1)
    )
    size = len(text)  # ASCII: json.dumps escapes everything else
    del text
    # Untimed: the same index in index.json's own notation (no spaces, UTF-8), so the
    # sizes compare like for like; made after the first text is freed, to add no peak.
    compact = json.dumps(serialized, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return {
        "docs": len(docs),
        "entries": len(documents),
        "check_s": t1 - t0,
        "entries_s": t2 - t1,
        "index_s": t3 - t2,
        "serialize_s": t4 - t3,
        "peak_mb": peak_mb,
        "bytes": size,
        "compact_bytes": len(compact),
        "terms": len(serialized["invertedIndex"]),
        "vectors": len(serialized["fieldVectors"]),
    }


def child_index(config_path: str, out: str) -> dict[str, Any]:
    """Handbook's index writer alone: indexing as docs arrive during the check (as the
    build does), then writing; and from scratch in one process."""
    from handbook_build import check, load_config
    from handbook_build.write import lunr_index
    from handbook_build.write.emit import index_entries

    t0 = time.perf_counter()
    index = lunr_index.LunrIndex()
    result = check(
        load_config(config_path), on_doc=lambda doc, _: index.extend(index_entries([doc]))
    )
    t1 = time.perf_counter()
    with open(f"{out}.assembled", "wb") as fh:
        index.write(fh)
    t2 = time.perf_counter()
    lunr_index._terms.clear()  # the pipeline cache: a cold start, as for lunr.py
    t3 = time.perf_counter()
    with open(f"{out}.serial", "wb") as fh:
        index = lunr_index.LunrIndex(index_entries(result.docs))
        index.write(fh)
    t4 = time.perf_counter()
    return {
        "docs": len(result.docs),
        "entries": len(index.refs),
        "check_s": t1 - t0,
        "assemble_s": t2 - t1,
        "serial_s": t4 - t3,
        "terms": len(index.term_index),
        "vectors": len(index.refs) * len(index.fields),
    }


# -- one library ---------------------------------------------------------------------------


def keyfile() -> Path:
    if not KEY.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [*HANDBOOK, "keygen", "--out", str(KEY)],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
    return KEY


def sha256(path: Path) -> str:
    """The file's sha256; for a .gz file, of its decompressed bytes (index.json.gz is
    compared with the index written apart, which is plain JSON)."""
    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def lunr_index_file(published: Path) -> Path:
    """The bundle's lunr index: index.json (`lunr_index: json`) or index.json.gz."""
    plain = published / "index.json"
    return plain if plain.exists() else published / "index.json.gz"


def bundle_sizes(published: Path) -> dict[str, int]:
    """Bytes of every file of the bundle (those the manifest lists, and the content and
    attached files it does not list since handbook/v2), of its content/ files, and of the
    larger files, as the size goal counts them (the manifest itself is not listed)."""
    files = dict(json.loads((published / "manifest.json").read_bytes())["signed"]["files"])
    for folder in ("content", "resources"):  # handbook/v2: the catalog vouches for these
        for path in sorted((published / folder).iterdir()) if (published / folder).is_dir() else ():
            files[f"{folder}/{path.name}"] = {"bytes": path.stat().st_size}
    out = {
        "listed": sum(f["bytes"] for f in files.values()),
        "content": sum(f["bytes"] for name, f in files.items() if name.startswith("content/")),
        "manifest": (published / "manifest.json").stat().st_size,
    }
    for name in (
        "index.json",
        "index.json.gz",
        "search.bin",
        "catalog.json",
        "catalog-offsets.bin",
        "llms.txt",
        "tools.json",
    ):
        if name in files:
            out[name] = files[name]["bytes"]
    index = lunr_index_file(published)
    if index.suffix == ".gz":
        with gzip.open(index, "rb") as fh:
            out["index raw"] = sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))
    return out


def measure(label: str, config: Path, lunr: bool) -> Result:
    out = WORK / "bundles" / label
    scratch = WORK / "index" / label
    # A fresh start, untimed: no earlier versions to prune, nothing to reuse.
    for old in (out, out.parent / f"{out.name}.versions"):
        if old.is_symlink() or old.is_file():
            old.unlink()
        elif old.exists():
            shutil.rmtree(old)
    scratch.mkdir(parents=True, exist_ok=True)

    print(f"{label}: handbook build", file=sys.stderr)
    build = run(
        f"build-{label}",
        [*HANDBOOK, "build", "--config", str(config), "--out", str(out), "--key", str(keyfile())],
    )
    match = BUILT.search(build.stdout)
    if match is None:
        raise RuntimeError(f"{label}: no summary line from `handbook build`; see {WORK / 'logs'}")
    published = out.resolve()
    files = [p for p in published.rglob("*") if p.is_file()]
    index_file = lunr_index_file(published)

    print(f"{label}: index part", file=sys.stderr)
    part = last_json(
        run(f"index-{label}", [*CHILD, "index", str(config), str(scratch / "handbook")])
    )
    want = sha256(index_file)
    identical = all(
        sha256(scratch / f"handbook.{kind}") == want for kind in ("assembled", "serial")
    )

    proc, anchor = None, None
    if lunr:
        print(f"{label}: lunr.py anchor", file=sys.stderr)
        proc = run(f"lunr-{label}", [*CHILD, "lunr", str(config), str(scratch / "lunr.json")])
        anchor = last_json(proc)
    return Result(
        label,
        int(match.group(1)),
        build,
        float(match.group(4)),
        sum(p.stat().st_size for p in files) / 1e6,
        index_file.stat().st_size / 1e6,
        part,
        identical,
        proc,
        anchor,
        bundle_sizes(published),
    )


# -- reporting -----------------------------------------------------------------------------


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def build_peak_mb(r: Result) -> float:
    """The build's memory: its process tree's PSS, never below the main process's peak."""
    return max(r.build.main_mb, r.build.pss_mb or 0.0)


def _raw_index_mb(r: Result) -> float:
    """The lunr index uncompressed, to compare with lunr.py's own JSON."""
    return (r.size or {}).get("index raw", 0) / 1e6 or r.index_mb


GOAL_SIZE_X = 3.0
"""Bytes of every listed file at most this many times the bytes of content/ (issue 20)."""


def size_table(results: list[Result]) -> str:
    lines = [
        "| library | content MB | listed MB | listed / content | lunr index MB as shipped "
        "| uncompressed | search.bin MB | catalog.json MB | catalog-offsets.bin MB | manifest MB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        z = r.size or {}
        index = z.get("index.json.gz", z.get("index.json", 0))
        lines.append(
            f"| {r.library} | {z['content'] / 1e6:.1f} | {z['listed'] / 1e6:.1f} "
            f"| **{z['listed'] / z['content']:.2f}** | {index / 1e6:.1f} "
            f"| {z.get('index raw', index) / 1e6:.1f} | {z.get('search.bin', 0) / 1e6:.1f} "
            f"| {z.get('catalog.json', 0) / 1e6:.1f} | {z.get('catalog-offsets.bin', 0) / 1e6:.2f} "
            f"| {z['manifest'] / 1e6:.1f} |"
        )
    return "\n".join(lines)


def table(results: list[Result]) -> str:
    lines = [
        "| library | docs | build s | index part s | peak MB | bundle MB | index MB "
        "| lunr.py index s | lunr.py peak MB | lunr.py index MB | time x | peak x | index MB x |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        b, a = r.build, r.anchor
        row = (
            f"| {r.library} | {r.docs:,} | **{b.wall_s:.2f}** | {r.part['assemble_s']:.2f} "
            f"| {_mb(b.main_mb)} / {_mb(build_peak_mb(r))} | {r.bundle_mb:.1f} | {r.index_mb:.1f} "
        )
        if a is None or r.anchor_s is None:
            row += "| n/a | n/a | n/a | n/a | n/a | n/a |"
        else:
            lunr_mb = a["bytes"] / 1e6
            row += (
                f"| {r.anchor_s:.2f} | {_mb(a['peak_mb'])} | {lunr_mb:.1f} "
                f"| **{r.anchor_s / b.wall_s:.1f}** | {a['peak_mb'] / build_peak_mb(r):.1f} "
                f"| {lunr_mb / _raw_index_mb(r):.1f} |"
            )
        lines.append(row)
    return "\n".join(lines)


def details(results: list[Result]) -> str:
    lines = [
        "| library | entries | terms | build's own s | build tree RSS MB | index check s | index serial s "
        "| = index.json | lunr.py check s | entries s | lunr() s | serialize s | child MB main / RSS / PSS "
        "| compact MB | same terms |",
        "|---|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|--:|--:|--:|:-:|",
    ]
    for r in results:
        p, a, c = r.part, r.anchor, r.lunr
        row = (
            f"| {r.library} | {p['entries']:,} | {p['terms']:,} | {r.build_inner_s:.1f} | {_mb(r.build.tree_mb)} "
            f"| {p['check_s']:.2f} | {p['serial_s']:.2f} | {'yes' if r.index_identical else '**no**'} "
        )
        if a is None or c is None:
            row += "| n/a | n/a | n/a | n/a | n/a | n/a | n/a |"
        else:
            same = (
                a["terms"] == p["terms"]
                and a["vectors"] == p["vectors"]
                and a["entries"] == p["entries"]
            )
            row += (
                f"| {a['check_s']:.2f} | {a['entries_s']:.2f} | {a['index_s']:.2f} | {a['serialize_s']:.2f} "
                f"| {_mb(c.main_mb)} / {_mb(c.tree_mb)} / {_mb(c.pss_mb)} | {a['compact_bytes'] / 1e6:.1f} "
                f"| {'yes' if same else '**no**'} |"
            )
        lines.append(row)
    return "\n".join(lines)


def goal(results: list[Result]) -> list[str]:
    out = []
    for r in results:
        if r.docs < GOAL_DOCS:
            continue
        peak = build_peak_mb(r)
        met = r.build.wall_s <= GOAL_S and peak < GOAL_MB
        out.append(
            f"- {r.library}: {r.build.wall_s:.1f} s, {peak:,.0f} MB -> goal {'met' if met else '**not met**'}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="synthetic library sizes, comma-separated (default: %(default)s)",
    )
    parser.add_argument("--no-real", action="store_true", help="skip the msdocs-10k corpus")
    parser.add_argument(
        "--no-lunr",
        action="store_true",
        help="skip the lunr.py anchor (about a minute and 1 GB per 10,000 real docs)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the synthetic libraries (default: %(default)s)"
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("WHAT", "CONFIG", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        what, config, out = args.child
        print(json.dumps((child_lunr if what == "lunr" else child_index)(config, out)))
        return 0
    results = [
        measure(label, config, not args.no_lunr)
        for label, config in libraries(args.sizes, args.seed, not args.no_real)
    ]
    print(
        f"`handbook build` vs a plain lunr.py index of the same entries, fresh process each; {environment()}\n"
    )
    print(table(results))
    print()
    print(details(results))
    print(
        f"\nGoal: the whole `handbook build` of {GOAL_DOCS:,} docs in at most {GOAL_S:.0f} s "
        f"and under {GOAL_MB:.0f} MB."
    )
    for line in goal(results):
        print(line)
    print()
    print(size_table(results))
    print(f"\nGoal: the files the manifest lists at most {GOAL_SIZE_X:.0f}x the bytes of content/.")
    for r in results:
        if r.docs >= GOAL_DOCS and r.size:
            x = r.size["listed"] / r.size["content"]
            print(f"- {r.library}: {x:.2f}x -> goal {'met' if x <= GOAL_SIZE_X else '**not met**'}")
    bad = [r.library for r in results if not r.index_identical]
    for library in bad:
        print(
            f"FAIL {library}: Handbook's index written apart differs from the bundle's index.json",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
