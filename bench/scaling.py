"""The scaling curve: Handbook at 1,000, 10,000 and 100,000 real docs (issue 20).

The libraries are derived from the real msdocs-10k corpus (unpacked as
`check_throughput.msdocs` does), each written once into `--out`/libraries:

* **1k**: every 10th page of the corpus in file-name order (C++ and PowerShell pages in
  their proportions), unchanged.
* **10k**: the corpus itself.
* **100k**: the corpus plus 9 variants of every page (`-v2` .. `-v10` appended to the
  id and the file name). A variant's text is the page's own with some of its words
  swapped for other words of the corpus: the corpus's lowercase words of 4 or more
  letters that are not lunr stop words and occur in at least 2 pages, ordered by how
  many pages hold them and cut into buckets of 64 neighbours; per variant, a seeded
  fifth of each bucket is permuted in a cycle. Only prose is touched: not the
  frontmatter, the `#` title, fenced code, or words right after `<` or `</` (HTML tags).
  Because a word is swapped with one of about the same document frequency and the
  mapping is a permutation, the vocabulary stays the corpus's own and the spread of
  posting-list lengths stays close to 10x the corpus's: 100k has about as many distinct
  terms as 10k, where a real 100,000-page corpus would have more (Heaps' law). Its
  posting lists are therefore ~10x longer for the same terms: a hard case for search,
  an easy one for the term dictionary.

For each library, in fresh child processes, one after the other:

* `handbook build` (wall time, peak RSS of the main process by `os.wait4`, peak PSS of
  its process tree), as `build_bench.run` measures it; bundle bytes (every file the
  manifest lists) against the bytes of `content/`, as `build_bench.bundle_sizes` counts.
* cold start and warm search, as `runtime_bench.run_engine` measures Handbook: spawn to
  the first answer (median of `--cold-runs`), then the query set once (p50, p99 of
  `lib.search(q, limit=10)`), then `VmRSS` (steady RSS) and the peak.
* the anchors (issue 29): SQLite FTS5, tantivy and bm25s at every size, and lunr.py up
  to 10,000 docs (it loads its JSON index whole), over the same entries as the bundle's
  index (`runtime_bench.child_prep`: index build seconds) and the same query set, cold
  start and warm search measured as Handbook's (`runtime_bench.run_engine`); lunr.py
  answers `--lunr-queries` of them (its p99 is seconds at 10k). `--no-anchors` skips them.
* remote first answer: a child serves the published folder on a loopback
  `http.server` that counts the body bytes it sends (`remote_bench`'s), and calls
  `Library.open(url, ...)` (lazy: the manifest, then what the call needs) and one
  search, with an empty cache; then again with the server sending gzip, as a CDN does.

The query set is fixed across sizes: `runtime_bench.make_queries` over the catalog
entries of the 1k subset's docs, which every larger library holds too.

    python bench/scaling.py [--sizes 1000,10000,100000] [--out build/bench/scaling]

Only the standard library is used here; Handbook runs in the child processes.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import random
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_bench import HANDBOOK, Proc, bundle_sizes, keyfile, run
from check_throughput import WORK, environment, msdocs
from runtime_bench import RUNTIME, EngineRun, commit, make_queries, p50, p99, prep, run_engine

SELF = [sys.executable, str(Path(__file__).resolve())]
VARIANTS = 10
"""Copies of every page in the 100k library: the page and `-v2` .. `-v10`."""
BUCKET = 64
SWAP_SHARE = 0.2
DERIVATION = 2
"""Bumped when the derivation changes, so an older library is written again."""
ANCHORS = ("FTS5", "tantivy", "bm25s", "lunr.py")
LUNR_MAX_DOCS = 10_000
"""lunr.py holds its index as Python objects: 2.8 GB at 10k; 100k does not fit."""
_WORD = re.compile(r"(?<![</\w])[a-z]{4,}(?!\w)")
_FENCE = re.compile(r"^\s*(```|~~~)")


# -- deriving the libraries ----------------------------------------------------------------


def _pages(corpus: Path) -> list[Path]:
    return sorted((corpus / "docs").glob("*.md"))


def _split(text: str) -> tuple[str, str]:
    """(frontmatter block with its fences, body)."""
    end = text.index("\n---\n", 4) + 5
    return text[:end], text[end:]


def _prose_lines(body: str) -> list[tuple[bool, str]]:
    """Each line of the body (ends kept) and whether its words may be swapped."""
    out, fenced = [], False
    for line in body.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
            out.append((False, line))
        else:
            out.append((not fenced and not line.startswith("# "), line))
    return out


def vocabulary(pages: list[Path], stop: set[str]) -> list[str]:
    """The swappable words, most widespread first (ties by the word)."""
    df: dict[str, int] = {}
    for page in pages:
        _, body = _split(page.read_text(encoding="utf-8"))
        words = {w for ok, line in _prose_lines(body) if ok for w in _WORD.findall(line)}
        for word in words - stop:
            df[word] = df.get(word, 0) + 1
    return sorted((w for w, n in df.items() if n >= 2), key=lambda w: (-df[w], w))


def swaps(vocab: list[str], variant: int) -> dict[str, str]:
    """A fifth of each bucket of 64 neighbours, permuted in one cycle (so no word maps
    to itself and two words never map to the same one)."""
    rng = random.Random(f"scaling-{variant}")
    out: dict[str, str] = {}
    for at in range(0, len(vocab), BUCKET):
        bucket = vocab[at : at + BUCKET]
        chosen = rng.sample(
            bucket, max(2, round(len(bucket) * SWAP_SHARE)) if len(bucket) > 1 else 0
        )
        for word, other in zip(chosen, chosen[1:] + chosen[:1], strict=True):
            out[word] = other
    return out


def variant_text(text: str, suffix: str, mapping: dict[str, str]) -> str:
    head, body = _split(text)
    head = re.sub(r"(?m)^id: (\S+)$", lambda m: f"id: {m.group(1)}{suffix}", head, count=1)

    def swap(m: re.Match[str]) -> str:
        return mapping.get(m.group(0), m.group(0))

    return head + "".join(_WORD.sub(swap, line) if ok else line for ok, line in _prose_lines(body))


def derive(size: int, out: Path) -> Path:
    """The library of `size` docs under `out`, written once (to a partial folder renamed
    at the end); its mkdocs.yml."""
    corpus = msdocs()
    if corpus is None:
        raise SystemExit("the msdocs-10k archive is needed: ../shared/data/msdocs-10k/")
    source = corpus.parent
    if size == 10_000:
        return corpus
    target = out / "libraries" / f"msdocs-{size // 1000}k"
    mark = target / f".derivation-{DERIVATION}"
    if mark.exists():
        return target / "mkdocs.yml"
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    (partial / "docs").mkdir(parents=True)
    config = (source / "mkdocs.yml").read_text(encoding="utf-8")
    config = re.sub(r"(?m)^site_name: .*$", f"site_name: MS Docs derived ({size:,} docs)", config)
    if size == 100_000:  # a swapped word can turn a placeholder password in a URL into one
        config = config.replace(
            "      limits:\n", '      rules:\n        HB405: "warn"\n      limits:\n', 1
        )
    (partial / "mkdocs.yml").write_text(config, encoding="utf-8")
    pages = _pages(source)
    if size == 1_000:
        for page in pages[::10]:
            shutil.copyfile(page, partial / "docs" / page.name)
    elif size == 100_000:
        from lunr.stop_word_filter import WORDS

        vocab = vocabulary(pages, set(WORDS))
        maps = {v: swaps(vocab, v) for v in range(2, VARIANTS + 1)}
        for page in pages:
            text = page.read_text(encoding="utf-8")
            shutil.copyfile(page, partial / "docs" / page.name)
            for v, mapping in maps.items():
                name = f"{page.stem}-v{v}.md"
                (partial / "docs" / name).write_text(
                    variant_text(text, f"-v{v}", mapping), encoding="utf-8"
                )
        (partial / "derivation.json").write_text(
            json.dumps({"vocabulary": len(vocab), "swapped_per_variant": len(maps[2])}),
            encoding="utf-8",
        )
    else:
        raise SystemExit(f"--sizes: {size} is not one of 1000, 10000, 100000")
    (partial / mark.name).write_text("", encoding="utf-8")
    partial.rename(target)
    return target / "mkdocs.yml"


def subset_ids(corpus_config: Path) -> set[str]:
    """The ids of the 1k subset (file names are the ids in msdocs-10k)."""
    return {p.stem for p in _pages(corpus_config.parent)[::10]}


# -- children ------------------------------------------------------------------------------


def child_setup(bundle: str, subset: list[str], count: int, seed: int) -> dict[str, Any]:
    """The query set (from the 1k subset's catalog entries) and the bench key's public key."""
    from lunr.stop_word_filter import WORDS

    from handbook.bundle.signing import load_private_key, public_key_of

    with open(Path(bundle) / "catalog.json", encoding="utf-8") as fh:
        catalog = json.load(fh)
    keep = set(subset)
    catalog["docs"] = [d for d in catalog["docs"] if d["id"] in keep]
    key = public_key_of(load_private_key(keyfile().read_bytes(), what="bench key"))
    return {
        "queries": make_queries(catalog, set(WORDS), count, seed),
        "key": str(key),
        "subset_docs": len(catalog["docs"]),
    }


def child_remote(bundle: str, key: str, query: str, scratch: str) -> dict[str, Any]:
    """Serve `bundle` on loopback (`remote_bench`'s counting server), open it by URL from
    an empty cache and search once: plainly, then with gzip transfers as a CDN sends
    them. The bytes, requests and times of each."""
    from remote_bench import serving

    from handbook import Library

    out: dict[str, Any] = {}
    for label, compress in (("", False), ("gzip_", True)):
        with serving(Path(bundle), objects=False, compress=compress) as (url, log):
            shutil.rmtree(scratch, ignore_errors=True)
            t0 = time.perf_counter()
            lib = Library.open(
                url + "/",
                trusted_keys=[key],
                cache_dir=Path(scratch) / "cache",
                state_dir=Path(scratch) / "state",
                timeout=3600,
            )
            t1 = time.perf_counter()
            answer = lib.search(query, limit=10)
            t2 = time.perf_counter()
        shutil.rmtree(scratch, ignore_errors=True)
        out.update(
            {
                f"{label}bytes": sum(size for _, size in log),
                f"{label}requests": len(log),
                f"{label}open_s": t1 - t0,
                f"{label}first_s": t2 - t1,
                f"{label}hits": len(answer.get("hits", [])),
            }
        )
    return out


# -- one size ------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    docs: int
    build: Proc
    sizes: dict[str, int]
    runtime: EngineRun
    remote: dict[str, Any]
    anchors: list[EngineRun]
    anchor_build_s: dict[str, float]


def fresh(path: Path) -> None:
    for old in (path, path.parent / f"{path.name}.versions"):
        if old.is_symlink() or old.is_file():
            old.unlink()
        elif old.exists():
            shutil.rmtree(old)


def child_json(label: str, args: list[str]) -> dict[str, Any]:
    proc = run(label, [*SELF, "--child", *args])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_runtime(
    label: str, published: Path, setup: dict[str, Any], subset: Path, args: argparse.Namespace
) -> EngineRun:
    """Cold starts and the query set over one published bundle; `setup` (query set and
    key) is filled from the first bundle it sees."""
    if not setup:
        setup.update(
            child_json(
                "scaling-setup",
                ["setup", str(published), str(subset), str(args.queries), str(args.seed)],
            )
        )
    print(f"{label}: cold start and {len(setup['queries'])} searches", file=sys.stderr)
    (RUNTIME / f"scaling-{label}").mkdir(parents=True, exist_ok=True)
    base = {
        "path": str(published),
        "key": setup["key"],
        "first": setup["queries"][0],
        "bench": str(Path(__file__).resolve().parent),
    }
    warm = {"mode": "bench", "queries": setup["queries"], "k": 10, "get_ids": []}
    return run_engine("handbook", f"scaling-{label}", base, warm, args.cold_runs)


def measure(
    size: int,
    config: Path,
    out: Path,
    setup: dict[str, Any],
    subset: Path,
    args: argparse.Namespace,
) -> Row:
    """One library; `setup` (query set and key) is filled from the first bundle built."""
    label = f"msdocs-{size // 1000}k"
    bundle = out / "bundles" / label
    fresh(bundle)
    print(f"{label}: handbook build", file=sys.stderr)
    build = run(
        f"scaling-build-{label}",
        [
            *HANDBOOK,
            "build",
            "--config",
            str(config),
            "--out",
            str(bundle),
            "--key",
            str(keyfile()),
        ],
    )
    published = bundle.resolve()
    sizes = bundle_sizes(published)
    print(  # now, not only in the report: at 100k the rest takes half an hour
        f"{label}: built in {build.wall_s:.1f} s, peak {build.main_mb:,.0f} MB (main), "
        f"{build.pss_mb or 0:,.0f} MB (tree PSS); bundle {sizes['listed'] / 1e6:.1f} MB, "
        f"{sizes['listed'] / sizes['content']:.2f}x its content",
        file=sys.stderr,
    )
    docs = len(list((config.parent / "docs").glob("*.md")))
    runtime = measure_runtime(label, published, setup, subset, args)
    print(f"{label}: remote open and first answer", file=sys.stderr)
    remote = child_json(
        f"scaling-remote-{label}",
        ["remote", str(published), setup["key"], setup["queries"][0], str(out / "remote")],
    )
    anchors, built = (
        measure_anchors(label, docs, config, published, setup, args) if args.anchors else ([], {})
    )
    return Row(label, docs, build, sizes, runtime, remote, anchors, built)


def measure_anchors(
    label: str,
    docs: int,
    config: Path,
    published: Path,
    setup: dict[str, Any],
    args: argparse.Namespace,
) -> tuple[list[EngineRun], dict[str, float]]:
    """The anchor engines over the same entries and the same query set as Handbook's:
    their indexes built in a child (`runtime_bench.child_prep`), then each measured as
    Handbook is (`runtime_bench.run_engine`). Returns the runs and index build seconds."""
    name = f"scaling-{label}"
    print(f"{label}: anchor indexes", file=sys.stderr)
    made = prep(name, config, published, args, lunr=docs <= LUNR_MAX_DOCS)
    runs = []
    for engine in ANCHORS:
        index = {
            "FTS5": RUNTIME / name / "fts5.sqlite",
            "tantivy": RUNTIME / name / "tantivy",
            "bm25s": RUNTIME / name / "bm25s",
        }.get(engine)
        if (index is not None and not index.exists()) or (
            engine == "lunr.py" and not made["lunr_index"]
        ):
            continue  # not installed (a note in `made`), or too large for lunr.py
        queries = setup["queries"][: args.lunr_queries if engine == "lunr.py" else None]
        base = {
            "path": str(published),
            "key": setup["key"],
            "index": str(index or ""),
            "first": queries[0],
            "bench": str(Path(__file__).resolve().parent),
            "lunr_index": made["lunr_index"],
        }
        warm = {"mode": "bench", "queries": queries, "k": 10, "get_ids": []}
        print(f"{label}: {engine} ({len(queries)} queries)", file=sys.stderr)
        runs.append(run_engine(engine, name, base, warm, args.cold_runs))
    for note in made["notes"]:
        print(f"{label}: {note}", file=sys.stderr)
    return runs, made["built_s"]


# -- reporting -----------------------------------------------------------------------------


def columns(r: Row) -> dict[str, float]:
    w = r.runtime.warm
    return {
        "build s": r.build.wall_s,
        "build peak MB (main)": r.build.main_mb,
        "build peak MB (tree PSS)": max(r.build.main_mb, r.build.pss_mb or 0.0),
        "bundle MB": r.sizes["listed"] / 1e6,
        "content MB": r.sizes["content"] / 1e6,
        "cold start ms": r.runtime.cold_ms,
        "search p50 ms": p50(w["search_s"]),
        "search p99 ms": p99(w["search_s"]),
        "steady RSS MB": w["vmrss_mb"],
        "peak RSS MB": w["vmhwm_mb"] or w["maxrss_mb"],
        "remote first answer MB": r.remote["bytes"] / 1e6,
        "gzip transfers MB": r.remote.get("gzip_bytes", 0) / 1e6,
    }


def _n(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def table(rows: list[Row]) -> str:
    names = list(columns(rows[0]))
    lines = [
        "| library | docs | " + " | ".join(names) + " |",
        "|---|--:|" + "--:|" * len(names),
    ]
    for r in rows:
        c = columns(r)
        lines.append(f"| {r.label} | {r.docs:,} | " + " | ".join(_n(c[n]) for n in names) + " |")
    if len(rows) > 1:
        for a, b in itertools.pairwise(rows):
            ca, cb = columns(a), columns(b)
            step = b.docs / a.docs
            lines.append(
                f"| growth {a.label} to {b.label} (docs x{step:.0f}) | | "
                + " | ".join(f"x{cb[n] / ca[n]:.1f}" if ca[n] else "n/a" for n in names)
                + " |"
            )
    return "\n".join(lines)


def details(rows: list[Row]) -> str:
    lines = [
        "| library | bundle / content | cold min-max ms | import / open / first query ms (median) "
        "| core p50 / p99 ms | remote requests | remote open s | remote first search ms | build tree RSS MB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        cold = [c.wall_s * 1000 for c in r.runtime.cold]
        w = r.runtime.warm
        lines.append(
            f"| {r.label} | {r.sizes['listed'] / r.sizes['content']:.2f} "
            f"| {min(cold):,.0f}-{max(cold):,.0f} "
            f"| {r.runtime.median('import_s'):.0f} / {r.runtime.median('open_s'):,.0f} "
            f"/ {r.runtime.median('first_s'):.1f} "
            f"| {p50(w['core_s']):.2f} / {p99(w['core_s']):.1f} | {r.remote['requests']:,} "
            f"| {r.remote['open_s']:.1f} | {r.remote['first_s'] * 1000:.1f} "
            f"| {r.build.tree_mb or 0:,.0f} |"
        )
    return "\n".join(lines)


def anchors_table(rows: list[Row]) -> str:
    """Handbook beside each anchor, per library: index build, cold start, search."""
    lines = [
        "| library | engine | index build s | cold start ms | search p50 / p99 ms "
        "| peak RSS MB | engine p50 / Handbook p50 |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        ours = p50(r.runtime.warm["search_s"])
        for run_ in [r.runtime, *r.anchors]:
            w = run_.warm
            built = r.build.wall_s if run_ is r.runtime else r.anchor_build_s.get(run_.engine)
            lines.append(
                f"| {r.label} | {run_.engine} | {_n(built) if built is not None else ''} "
                f"| {run_.cold_ms:,.0f} | {p50(w['search_s']):.2f} / {p99(w['search_s']):.1f} "
                f"| {w['vmhwm_mb'] or w['maxrss_mb']:,.0f} | {p50(w['search_s']) / ours:.1f} |"
            )
    return "\n".join(lines)


def runtime_table(runs: list[tuple[str, EngineRun]]) -> str:
    lines = [
        "| library | cold start ms | cold min-max ms | search p50 / p99 ms | core p50 / p99 ms "
        "| steady / peak RSS MB |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for label, r in runs:
        cold, w = [c.wall_s * 1000 for c in r.cold], r.warm
        lines.append(
            f"| {label} | {r.cold_ms:,.0f} | {min(cold):,.0f}-{max(cold):,.0f} "
            f"| {p50(w['search_s']):.2f} / {p99(w['search_s']):.1f} "
            f"| {p50(w['core_s']):.2f} / {p99(w['core_s']):.1f} "
            f"| {w['vmrss_mb']:,.0f} / {w['vmhwm_mb'] or w['maxrss_mb']:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="default: %(default)s")
    parser.add_argument("--out", default=str(WORK / "scaling"), help="default: %(default)s")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument(
        "--runtime-only",
        action="store_true",
        help="only cold start and search again, on the bundles an earlier run left in --out",
    )
    parser.add_argument(
        "--no-anchors",
        dest="anchors",
        action="store_false",
        help="skip FTS5, tantivy, bm25s and lunr.py",
    )
    parser.add_argument(
        "--lunr-queries", type=int, default=10, help="queries lunr.py answers (default: 10)"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        what, *rest = args.child
        if what == "derive":
            print(json.dumps({"config": str(derive(int(rest[0]), Path(rest[1])))}))
        elif what == "setup":
            subset = json.loads(Path(rest[1]).read_text(encoding="utf-8"))
            print(json.dumps(child_setup(rest[0], subset, int(rest[2]), int(rest[3]))))
        else:
            print(json.dumps(child_remote(*rest)))
        return 0
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    configs = {}
    for size in sizes:  # in children, so this process stays small
        print(f"deriving {size:,} docs", file=sys.stderr)
        configs[size] = Path(
            child_json(f"scaling-derive-{size}", ["derive", str(size), str(out)])["config"]
        )
    corpus = msdocs()
    assert corpus is not None  # derive has unpacked it
    subset = out / "subset.json"
    subset.write_text(json.dumps(sorted(subset_ids(corpus))), encoding="utf-8")
    rows: list[Row] = []
    setup: dict[str, Any] = {}
    if args.runtime_only:
        runs = []
        for size in sizes:
            label = f"msdocs-{size // 1000}k"
            published = (out / "bundles" / label).resolve()
            runs.append((label, measure_runtime(label, published, setup, subset, args)))
        print(f"Runtime again, {datetime.date.today()}, commit {commit()}; {environment()}\n")
        print(runtime_table(runs))
        return 0
    for size in sizes:
        rows.append(measure(size, configs[size], out, setup, subset, args))
        (out / "results.md").write_text(f"{table(rows)}\n\n{details(rows)}\n", encoding="utf-8")
    report = (
        f"Scaling curve, {datetime.date.today()}, commit {commit()}; {environment()}\n\n"
        f"{table(rows)}\n\n{details(rows)}\n"
        + (f"\n{anchors_table(rows)}\n" if args.anchors else "")
    )
    (out / "results.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
