"""Retrieval quality of the lexical, semantic and hybrid retrievers, and what vectors cost.

Two judged collections, each built as Handbook libraries twice with `handbook build`
(fresh, with the current code): once as they are, once with `semantic: true`, which adds
`vectors.bin` (one sentence embedding per search entry):

* **cranfield**: Cranfield 1400 from ../shared/data/cranfield, one doc per abstract, as
  `runtime_bench.py` builds it (summary = the abstract's first 200 characters), its 225
  queries (punctuation removed, lowercased; the stop words are left in, the runtime
  drops them itself past its term cap) and graded qrels;
* **real-sites**: the three trees of ../shared/data/real-sites, each adopted with
  `handbook init --adopt` into a library of its own, and the 117 questions of
  bench/judged/real-sites/ (written and judged before any retriever ran on them).

For each library a child process opens the semantic bundle (signature verified) and
asks every question with `lib.search(text, limit=100, retriever=…)` for lexical,
semantic and hybrid in turn, after one untimed warm-up query each (the model loads on the
first). A doc's rank is that of its first passage in the hits. Reported, from one run:

* nDCG@10 (gain = graded relevance) and Recall@100 per collection and retriever, with
  `runtime_bench.quality`, and hybrid's gain over lexical with a 95% interval from the
  per-query differences (1.96 standard errors), which is the noise the goal allows;
* build seconds and bundle bytes without and with vectors (each semantic build from an
  empty embedding cache of its own), the semantic build again after a sentence is added
  to one doc (the cache kept: what an author's rebuild costs), and search p50 per
  retriever;
* the fusion check the runtime's semantic module names: reciprocal rank fusion at several
  constants and min-max normalised score fusion at several weights, recomputed from the
  lexical and semantic hits, chosen on a dev split (Cranfield's even-numbered queries)
  and reported on the rest, beside the shipped RRF_K = 60.

    python bench/retrieval_quality.py [--collections cranfield,real-sites] [--blas-threads 1]

Only the standard library is used here; Handbook runs in the child processes. Libraries
go to build/bench/retrieval/, bundles to build/bench/bundles/, logs to build/bench/logs/.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_bench import HANDBOOK, keyfile, last_json, run
from check_throughput import ROOT, WORK, environment
from runtime_bench import _qrels, build_bundle, cranfield_library, cranfield_queries, quality

OUT = WORK / "retrieval"
JUDGED = ROOT / "bench" / "judged" / "real-sites"
REAL_SITES = ROOT.parent / "shared" / "data" / "real-sites"
TREES = ("mkdocs", "pymdown-extensions", "agent-skills")
RETRIEVERS = ("lexical", "semantic", "hybrid")
ANCHORS = {("cranfield", "lexical"): (0.387, 0.751)}
"""bench/README.md: Handbook's lexical figures on the same Cranfield library."""
GOAL = 0.03
"""Issue 19: hybrid above lexical by this much nDCG@10, averaged over collections."""
RRF_KS = (10, 20, 40, 60, 100)
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
"""Normalised-score fusion: the lexical score's weight; the semantic one's is 1 - w."""

Hits = list[tuple[str, float]]
"""One query's hits: (passage key `doc|resource|anchor`, score), best first."""


# -- the child: every question through every retriever --------------------------------------


def child(request_file: str) -> dict[str, Any]:
    from handbook import Library
    from handbook.bundle.signing import load_private_key, public_key_of

    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    key = str(public_key_of(load_private_key(keyfile().read_bytes(), what="bench key")))
    lib = Library.open(request["bundle"], trusted_keys=[key])
    out: dict[str, Any] = {"passages": lib.snapshot.retriever.passage_count()}
    for retriever in RETRIEVERS:
        lib.search("warm up", limit=10, retriever=retriever)
        hits, times = [], []
        for text in request["queries"]:
            start = time.perf_counter()
            answer = lib.search(text, limit=100, retriever=retriever)
            times.append(time.perf_counter() - start)
            if "hits" not in answer:
                raise RuntimeError(f"{retriever}: {text!r} answered {answer}")
            hits.append(
                [
                    (f"{h['id']}|{h.get('resource', '')}|{h.get('anchor', '')}", h["score"])
                    for h in answer["hits"]
                ]
            )
        out[retriever] = {"hits": hits, "search_s": times}
    return out


# -- libraries ------------------------------------------------------------------------------


def with_semantic(config: Path, library: str) -> None:
    """Add `semantic: true` beside the library's name, at its indentation."""
    text = config.read_text(encoding="utf-8")
    line = re.search(rf"^([ \t]*)library: {re.escape(library)}\n", text, re.MULTILINE)
    if line is None:
        raise RuntimeError(f"{config}: no `library: {library}` line to add semantic: true beside")
    at = line.end()
    config.write_text(f"{text[:at]}{line.group(1)}semantic: true\n{text[at:]}", encoding="utf-8")


def real_site(name: str, semantic: bool) -> Path:
    """A copy of the tree with what `handbook init --adopt` writes; the config's path."""
    out = OUT / ("semantic" if semantic else "lexical") / name  # the folder names the library
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(REAL_SITES / name, out)
    subprocess.run(
        [*HANDBOOK, "init", "--adopt", str(out), "--install-from", "handbook==0.1.0"],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    config = out / "handbook.yml" if (out / "handbook.yml").exists() else out / "mkdocs.yml"
    if semantic:
        with_semantic(config, name)
    return config


def cranfield(semantic: bool) -> Path:
    config = cranfield_library(
        OUT / f"cranfield-{'semantic' if semantic else 'lexical'}", "abstract"
    )
    if semantic:
        with_semantic(config, "cranfield")
    return config


def rebuild(name: str, config: Path, bundle: Path) -> float:
    """Seconds of the semantic build again after a sentence is added to the first doc's
    body (the catalog's first), the embedding cache kept; the doc is then put back."""
    docs_dir = re.search(r"^docs_dir: *(\S+)", config.read_text(encoding="utf-8"), re.M)
    source = json.loads((bundle / "catalog.json").read_text(encoding="utf-8"))["docs"][0]
    doc = config.parent / (docs_dir.group(1) if docs_dir else "docs") / source["source"]
    text = doc.read_text(encoding="utf-8")
    doc.write_text(text + "\nOne more sentence, for the rebuild.\n", encoding="utf-8")
    try:
        return build_bundle(f"retrieval-{name}-rebuild", config)[1]
    finally:
        doc.write_text(text, encoding="utf-8")


def bundle_bytes(bundle: Path) -> tuple[int, int]:
    """(every file of the bundle, vectors.bin alone)."""
    files = [p for p in bundle.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(
        p.stat().st_size for p in files if p.name == "vectors.bin"
    )


@dataclass
class Library:
    name: str
    build_s: dict[str, float] = field(default_factory=dict)
    """'lexical' / 'semantic' build -> wall seconds."""
    bytes: dict[str, int] = field(default_factory=dict)
    vector_bytes: int = 0
    passages: int = 0
    rebuild_s: float = 0.0
    """The semantic build again, one doc changed, its embedding cache kept."""


@dataclass
class Collection:
    name: str
    ids: list[str]
    libraries: list[str]
    """The library each query is asked of."""
    texts: list[str]
    styles: list[str]
    qrels: dict[str, dict[str, int]]
    built: list[Library] = field(default_factory=list)
    hits: dict[str, list[Hits]] = field(default_factory=dict)
    """retriever -> per query hits, in query order."""
    search_s: dict[str, list[float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Libraries whose build failed -> why; their questions are left out."""

    def leave_out(self) -> None:
        keep = [i for i, name in enumerate(self.libraries) if name not in self.skipped]
        for attr in ("ids", "libraries", "texts", "styles"):
            setattr(self, attr, [getattr(self, attr)[i] for i in keep])
        for retriever, hits in self.hits.items():
            self.hits[retriever] = [hits[i] for i in keep]


def load_cranfield() -> Collection:
    ids, texts, _ = cranfield_queries(set())
    return Collection("cranfield", ids, ["cranfield"] * len(ids), texts, [""] * len(ids), _qrels())


def load_real_sites() -> Collection:
    queries = json.loads((JUDGED / "queries.json").read_text(encoding="utf-8"))["queries"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (JUDGED / "qrels.txt").read_text(encoding="utf-8").splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    return Collection(
        "real-sites",
        [q["id"] for q in queries],
        [q["library"] for q in queries],
        [q["text"] for q in queries],
        [q["style"] for q in queries],
        qrels,
    )


def measure(collection: Collection) -> None:
    """Build each library both ways, then ask its questions of the semantic bundle."""
    for name in dict.fromkeys(collection.libraries):
        lib = Library(name)
        for kind in ("lexical", "semantic"):
            print(f"{collection.name}/{name}: {kind} build", file=sys.stderr, flush=True)
            semantic = kind == "semantic"
            config = cranfield(semantic) if name == "cranfield" else real_site(name, semantic)
            cache = OUT / "cache" / name  # emptied: the first semantic build embeds everything
            shutil.rmtree(cache, ignore_errors=True)
            os.environ["HANDBOOK_CACHE_DIR"] = str(cache)
            try:
                bundle, lib.build_s[kind] = build_bundle(f"retrieval-{name}-{kind}", config)
                if semantic:
                    lib.rebuild_s = rebuild(name, config, bundle)
            except RuntimeError as exc:  # reported, and the library's questions left out
                log = WORK / "logs" / f"runtime-build-retrieval-{name}-{kind}.err"
                collection.skipped[name] = f"{exc}: {log.read_text(encoding='utf-8').strip()}"
                print(f"{collection.name}/{name}: {collection.skipped[name]}", file=sys.stderr)
                break
            lib.bytes[kind], vectors = bundle_bytes(bundle)
            if semantic:
                lib.vector_bytes = vectors
        if name in collection.skipped:
            continue
        collection.built.append(lib)
        mine = [i for i, lib_name in enumerate(collection.libraries) if lib_name == name]
        request = OUT / f"{name}-queries.json"
        request.write_text(
            json.dumps({"bundle": str(bundle), "queries": [collection.texts[i] for i in mine]}),
            encoding="utf-8",
        )
        print(
            f"{collection.name}/{name}: {len(mine)} queries x {len(RETRIEVERS)} retrievers",
            file=sys.stderr,
            flush=True,
        )
        proc = run(
            f"retrieval-{name}-queries",
            [sys.executable, str(Path(__file__).resolve()), "--child", str(request)],
        )
        answers = last_json(proc)
        lib.passages = answers["passages"]
        for retriever in RETRIEVERS:
            hits = collection.hits.setdefault(retriever, [[] for _ in collection.ids])
            for i, got in zip(mine, answers[retriever]["hits"], strict=True):
                hits[i] = [(key, score) for key, score in got]
            collection.search_s.setdefault(retriever, []).extend(answers[retriever]["search_s"])


# -- scoring --------------------------------------------------------------------------------


def docs_of(hits: Hits) -> list[str]:
    return [key.split("|", 1)[0] for key, _ in hits]


def per_query(collection: Collection, rankings: list[Hits], subset: list[int]) -> list[float]:
    """nDCG@10 of each query in `subset`."""
    return [
        quality([docs_of(rankings[i])], [collection.ids[i]], collection.qrels)[0] for i in subset
    ]


def scores(
    collection: Collection, rankings: list[Hits], subset: list[int] | None = None
) -> tuple[float, float]:
    chosen = range(len(collection.ids)) if subset is None else subset
    return quality(
        [docs_of(rankings[i]) for i in chosen],
        [collection.ids[i] for i in chosen],
        collection.qrels,
    )


def rrf(k: int) -> Callable[[Hits, Hits], Hits]:
    def fuse(lexical: Hits, semantic: Hits) -> Hits:
        fused: dict[str, float] = {}
        for ranking in (lexical, semantic):
            for rank, (key, _) in enumerate(ranking, 1):
                fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
        return sorted(fused.items(), key=lambda kv: -kv[1])

    return fuse


def normalised(weight: float) -> Callable[[Hits, Hits], Hits]:
    def fuse(lexical: Hits, semantic: Hits) -> Hits:
        fused: dict[str, float] = {}
        for ranking, w in ((lexical, weight), (semantic, 1.0 - weight)):
            if not ranking:
                continue
            top, low = ranking[0][1], ranking[-1][1]
            for key, score in ranking:
                share = (score - low) / (top - low) if top > low else 1.0
                fused[key] = fused.get(key, 0.0) + w * share
        return sorted(fused.items(), key=lambda kv: -kv[1])

    return fuse


FUSIONS: dict[str, Callable[[Hits, Hits], Hits]] = {
    **{f"RRF k={k}": rrf(k) for k in RRF_KS},
    **{f"min-max w_lex={w}": normalised(w) for w in WEIGHTS},
}


def fused(collection: Collection, fusion: str) -> list[Hits]:
    fuse = FUSIONS[fusion]
    return [
        fuse(lex, sem)[:100]
        for lex, sem in zip(collection.hits["lexical"], collection.hits["semantic"], strict=True)
    ]


def gain(collection: Collection) -> tuple[float, float]:
    """Hybrid minus lexical nDCG@10, and 1.96 standard errors of the per-query differences."""
    every = list(range(len(collection.ids)))
    diffs = [
        h - lex
        for h, lex in zip(
            per_query(collection, collection.hits["hybrid"], every),
            per_query(collection, collection.hits["lexical"], every),
            strict=True,
        )
    ]
    return statistics.mean(diffs), 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))


# -- reporting ------------------------------------------------------------------------------


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def quality_table(collections: list[Collection]) -> list[str]:
    lines = [
        "| collection | queries | retriever | nDCG@10 | R@100 | anchor nDCG@10 / R@100 |",
        "|---|--:|---|--:|--:|---|",
    ]
    for c in collections:
        for r in RETRIEVERS:
            ndcg, recall = scores(c, c.hits[r])
            anchor = ANCHORS.get((c.name, r))
            cell = f"{anchor[0]:.3f} / {anchor[1]:.3f}" if anchor else ""
            lines.append(f"| {c.name} | {len(c.ids)} | {r} | {ndcg:.3f} | {recall:.3f} | {cell} |")
    return lines


def breakdown_table(c: Collection, key: str, values: list[str]) -> list[str]:
    lines = [f"| {key} | queries | " + " | ".join(RETRIEVERS) + " |", "|---|--:|" + "--:|" * 3]
    for value in dict.fromkeys(values):
        subset = [i for i, v in enumerate(values) if v == value]
        cells = [f"{scores(c, c.hits[r], subset)[0]:.3f}" for r in RETRIEVERS]
        lines.append(f"| {value} | {len(subset)} | " + " | ".join(cells) + " |")
    return lines


def cost_table(collections: list[Collection]) -> list[str]:
    lines = [
        "| library | entries | build s lexical | build s semantic | rebuild s, one doc changed "
        "| bundle KB lexical | bundle KB semantic | vectors.bin KB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c in collections:
        for lib in c.built:
            lines.append(
                f"| {lib.name} | {lib.passages:,} "
                f"| {lib.build_s['lexical']:.1f} | {lib.build_s['semantic']:.1f} "
                f"| {lib.rebuild_s:.1f} ({lib.rebuild_s / lib.build_s['lexical']:.1f}x lexical) "
                f"| {lib.bytes['lexical'] / 1024:,.0f} | {lib.bytes['semantic'] / 1024:,.0f} "
                f"| {lib.vector_bytes / 1024:,.0f} |"
            )
    lines += ["", "| collection | " + " | ".join(f"{r} p50 ms" for r in RETRIEVERS) + " |"]
    lines.append("|---|" + "--:|" * 3)
    for c in collections:
        base = p50_ms(c.search_s["lexical"])
        cells = [
            f"{p50_ms(c.search_s[r]):.1f} ({p50_ms(c.search_s[r]) / base:.0f}x)" for r in RETRIEVERS
        ]
        lines.append(f"| {c.name} | " + " | ".join(cells) + " |")
    return lines


def fusion_table(collections: list[Collection]) -> tuple[list[str], str]:
    """Fusions on Cranfield's dev half (even positions), the chosen one everywhere else."""
    cran = next((c for c in collections if c.name == "cranfield"), None)
    if cran is None:
        return ["(no Cranfield in this run: no dev split to choose a fusion on)"], ""
    dev = list(range(0, len(cran.ids), 2))
    test = list(range(1, len(cran.ids), 2))
    others = [c for c in collections if c is not cran]
    head = "| fusion | cranfield dev nDCG@10 | cranfield test nDCG@10 | " + " | ".join(
        f"{c.name} nDCG@10" for c in others
    )
    lines = [head + " |", "|---|--:|--:|" + "--:|" * len(others)]
    rows = [
        (
            "shipped hybrid (runtime, RRF k=60)",
            [cran.hits["hybrid"]],
            [c.hits["hybrid"] for c in others],
        )
    ]
    rows += [(name, [fused(cran, name)], [fused(c, name) for c in others]) for name in FUSIONS]
    best, best_dev = "", -1.0
    for name, (cran_hits,), other_hits in rows:
        dev_ndcg = scores(cran, cran_hits, dev)[0]
        if name in FUSIONS and dev_ndcg > best_dev:
            best, best_dev = name, dev_ndcg
        cells = [f"{dev_ndcg:.3f}", f"{scores(cran, cran_hits, test)[0]:.3f}"]
        cells += [f"{scores(c, h)[0]:.3f}" for c, h in zip(others, other_hits, strict=True)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines, best


def report(collections: list[Collection], args: argparse.Namespace, wall_s: float) -> str:
    out = [
        f"{time.strftime('%Y-%m-%d')}, one run of `python bench/retrieval_quality.py "
        f"--collections {args.collections} --blas-threads {args.blas_threads}` "
        f"({wall_s / 60:.1f} min); {environment()}, nproc {os.cpu_count()}",
        "",
        *quality_table(collections),
        "",
    ]
    for c in collections:
        for name, why in c.skipped.items():
            out.append(f"- {c.name}/{name} left out, its build failed: {why}")
    gains = []
    for c in collections:
        mean, noise = gain(c)
        gains.append(mean)
        out.append(
            f"- {c.name}: hybrid - lexical nDCG@10 = {mean:+.3f} (95% interval +/- {noise:.3f})"
        )
    average = statistics.mean(gains)
    out.append(
        f"- averaged over collections: {average:+.3f} (goal >= +{GOAL:.2f}: "
        f"{'met' if average >= GOAL else 'not met'})"
    )
    for c in collections:
        if c.name == "real-sites":
            out += ["", "real-sites nDCG@10 by tree:", "", *breakdown_table(c, "tree", c.libraries)]
            out += ["", "real-sites nDCG@10 by style:", "", *breakdown_table(c, "style", c.styles)]
    out += ["", *cost_table(collections), ""]
    lines, best = fusion_table(collections)
    out += lines
    if best:
        out.append(f"\nbest fusion on the dev split: {best}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--collections",
        default="cranfield,real-sites",
        help="comma-separated: cranfield, real-sites (default both)",
    )
    parser.add_argument(
        "--blas-threads",
        default="1",
        help="OPENBLAS_NUM_THREADS for the builds and queries (default 1: on a busy 2-core "
        "machine, threads that wait on each other made encoding twice as slow); 'auto' "
        "leaves it unset",
    )
    args = parser.parse_args(argv)
    if args.blas_threads != "auto":
        os.environ["OPENBLAS_NUM_THREADS"] = args.blas_threads
    loaders = {"cranfield": load_cranfield, "real-sites": load_real_sites}
    names = [n.strip() for n in args.collections.split(",") if n.strip()]
    unknown = [n for n in names if n not in loaders]
    if unknown or not names:
        parser.error(f"--collections takes {', '.join(loaders)}, not {args.collections!r}")
    start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    collections = [loaders[n]() for n in names]
    for collection in collections:
        measure(collection)
        collection.leave_out()
    print(report(collections, args, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
