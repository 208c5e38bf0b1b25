"""Measure Handbook's runtime (open, search, get) beside lunr.py, FTS5, tantivy and bm25s.

For each library (synthetic ones of each `--sizes`, made by `synth.py`, and the real
msdocs-10k corpus when present) the bundle is built fresh with `handbook build`, so the
figures are those of the current code. Then, on the same machine in the same run:

* **cold start**: a fresh `python -c` process imports the engine, opens the index and
  answers one query. Timed from just before the process is spawned to the moment the
  parent reads the answer from the child's stdout (median of `--cold-runs`), and inside
  the child from a `perf_counter` taken on its first line (imports, open, first query).
* **warm**: in one of those processes, after the first answer, every query of the query
  set is timed once (p50, p99), Handbook's `get` on random ids, and the process's peak
  and final resident memory.

The engines, all over the **same entries** (`emit.index_entries`: one per doc and one per
heading, `##` or deeper) and the same query set:

* **handbook**: `Library.open(bundle, trusted_keys=[…])` (signature verified), `lib.search`.
* **lunr.py** 0.8.0: `Index.load(json.load(index.json))`, `idx.search(q)`; on large
  libraries only the first `--lunr-queries` queries (it takes up to seconds per query).
  Where lunr.py refuses the bundle's term order (UTF-16 order, for lunr.js), it loads a
  copy re-sorted by code point, made untimed (see `lunr_index_file`).
* **naive scan**: the earlier system: for each doc of `catalog.json`, count the query
  words found in title, summary, keywords, aliases and id; rank by that count.
* **FTS5**: stdlib `sqlite3`, `fts5(…, tokenize='porter unicode61')`, words joined with
  OR, ranked by `bm25()` with lunr's field boosts (title 10, keywords 5, body 1).
* **tantivy** (`en_stem`, the same boosts) and **bm25s** (+ PyStemmer, fields
  concatenated), when importable; each is skipped with a note otherwise.

The query set (`--queries`, deterministic for `--seed`): 1 to 3 consecutive words of a doc
or section title from the library's `catalog.json`, lowercased, lunr's stop words and
every non-word character removed, plus a few from keywords and aliases.

Then **ranking parity** with lunr.py on the large libraries (Handbook's top 10 against
lunr.py's for the same queries), and **retrieval quality** on Cranfield 1400 (nDCG@10,
Recall@100 over 225 queries, every engine on a Handbook library built from it, twice:
with the summary set to the abstract's first 200 characters, and with a summary that
indexes nothing; plus lunr.py's own index of title and text, the Cranfield README's setup).

    python bench/runtime_bench.py [--sizes 1000,10000] [--no-real] [--no-cranfield]

Only the standard library is used here; the engines run in the child processes. Index
files of the anchors go to build/bench/runtime/, bundles to build/bench/bundles/.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_bench import HANDBOOK, keyfile, run
from check_throughput import ROOT, WORK, environment, libraries

BENCH = Path(__file__).resolve().parent
RUNTIME = WORK / "runtime"
"""Anchor indexes, query sets and child arguments, per library."""
CRANFIELD = ROOT.parent / "shared" / "data" / "cranfield"
PURE = "handbook, pure Python"
"""Handbook without its numpy path (`handbook.search.index.ARRAYS` off, as with
`HANDBOOK_PURE_SEARCH=1` or without the `fast` extra): the base install's ranking."""
EXHAUSTIVE = "handbook, every posting"
"""Handbook in pure Python with its top-k path off (`handbook.search.top_k.EXHAUSTIVE_POSTINGS`
unbounded): the ranking before posting heads and arrays, in the same run, and what the
other paths must equal."""
ENGINES = ("handbook", "lunr.py", "naive scan", "FTS5", "tantivy", "bm25s", PURE, EXHAUSTIVE)
GOAL_DOCS = 10_000
GOAL_COLD_MS, GOAL_P50_MS, GOAL_P99_MS, GOAL_RSS_MB = 150.0, 1.0, 20.0, 150.0
LARGE = 5_000
"""Libraries with at least this many docs get lunr.py's query cap."""
_WORD = re.compile(r"[^\W_]+")
PLAIN_LUNR = "lunr.py, own index of title + text"
"""A quality row: lunr.py's builder over the raw Cranfield title and text, both boost 1
(the README's setup), rather than over Handbook's entries (title boost 10)."""
README_ANCHORS = {  # Cranfield README: all 225 queries, OR semantics over title + text
    "lunr.py": (0.386, 0.746),
    "tantivy": (0.370, 0.740),
    "bm25s": (0.373, 0.738),
    "FTS5": (0.362, 0.731),
    "naive scan": (0.248, 0.602),
    PLAIN_LUNR: (0.386, 0.746),
}

# -- the child processes --------------------------------------------------------------------
#
# Each engine is a `python -c` program: the first line takes a perf_counter, then imports,
# opens and answers ARGS["first"], prints one JSON line (flushed: the parent stops its
# clock when it reads it) and, when asked, goes on to the warm measurements, importing
# this file only then. `search(q, k)` returns [(ref, score), ...] for every anchor; for
# Handbook it is the agent-facing `lib.search`, and `core` gives the refs.

CHILD = """\
import time
T0 = time.perf_counter()
import json
import sys
ARGS = json.loads(sys.argv[1])
{imports}
T1 = time.perf_counter()
{open}
T2 = time.perf_counter()
ANSWER = search(ARGS["first"], 10)
T3 = time.perf_counter()
HITS = len(ANSWER["hits"]) if isinstance(ANSWER, dict) else len(ANSWER)
print(json.dumps({{"t0": T0, "import_s": T1 - T0, "open_s": T2 - T1, "first_s": T3 - T2, "hits": HITS}}), flush=True)
if ARGS.get("warm"):
    sys.path.insert(0, ARGS["bench"])
    import runtime_bench
    print(json.dumps(runtime_bench.warm(ARGS["warm"], globals())), flush=True)
"""

SNIPPETS: dict[str, tuple[str, str]] = {
    "handbook": (
        """\
from handbook import Library
from handbook.search.query import parse
def search(q, k):
    return lib.search(q, limit=k)
def core(q, k):
    index = lib.snapshot.retriever.index
    ids, anchors = index.strings("doc_id"), index.strings("entry_anchor")
    out = []
    for hit in index.search(parse(q), k)[1]:
        doc, anchor = ids[index.entry_doc[hit.entry]], anchors[hit.entry]
        out.append((f"{doc}#{anchor}" if anchor else doc, hit.score))
    return out
def docrank(q, k):
    index = lib.snapshot.retriever.index
    scores = index.scores(parse(q))[0]
    best = {}
    for entry, score in scores.items():
        doc = index.entry_doc[entry]
        if doc not in best or score > best[doc][0]:
            best[doc] = (score, entry)
    ids = index.strings("doc_id")
    order = sorted(best, key=lambda d: (-best[d][0], best[d][1]))[:k]
    return [(ids[d], best[d][0]) for d in order]
def get(doc_id):
    return lib.get(doc_id)""",
        """\
lib = Library.open(ARGS["path"], trusted_keys=[ARGS["key"]])""",
    ),
    EXHAUSTIVE: ("", ""),  # filled in below from Handbook's
    "lunr.py": (
        """\
from lunr.index import Index
def search(q, k):
    return [(r["ref"], r["score"]) for r in idx.search(q)[:k]]""",
        """\
with open(ARGS["lunr_index"], encoding="utf-8") as fh:
    idx = Index.load(json.load(fh))""",
    ),
    "naive scan": (
        """\
import heapq
def search(q, k):
    words = q.lower().split()
    scored = []
    for n, (doc_id, text) in enumerate(HAY):
        count = sum(1 for w in words if w in text)
        if count:
            scored.append((-count, n, doc_id))
    return [(doc_id, -count) for count, _, doc_id in heapq.nsmallest(k, scored)]""",
        """\
with open(ARGS["path"] + "/catalog.json", encoding="utf-8") as fh:
    DOCS = json.load(fh)["docs"]
HAY = [
    (d["id"], " ".join([d["title"], d["summary"], *d["keywords"], *d["aliases"], d["id"]]).lower())
    for d in DOCS
]""",
    ),
    "FTS5": (
        """\
import sqlite3
SQL = "SELECT ref, bm25(entries, 0.0, 10.0, 5.0, 1.0) AS s FROM entries WHERE entries MATCH ? ORDER BY s LIMIT ?"
def search(q, k):
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in q.split())
    return [(ref, -s) for ref, s in con.execute(SQL, (match, k))]""",
        """\
con = sqlite3.connect("file:" + ARGS["index"] + "?mode=ro", uri=True)""",
    ),
    "tantivy": (
        """\
import tantivy
BOOSTS = {"title": 10.0, "keywords": 5.0}
def search(q, k):
    query = index.parse_query(q, ["title", "keywords", "body"], field_boosts=BOOSTS)
    return [(searcher.doc(address)["ref"][0], score) for score, address in searcher.search(query, k).hits]""",
        """\
index = tantivy.Index.open(ARGS["index"])
searcher = index.searcher()""",
    ),
    "bm25s": (
        """\
import bm25s
import Stemmer
def search(q, k):
    tokens = bm25s.tokenize(q, stopwords="en", stemmer=STEMMER, return_ids=False, show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=min(k, len(REFS)), show_progress=False)
    return [(REFS[d], float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]""",
        """\
retriever = bm25s.BM25.load(ARGS["index"], show_progress=False)
with open(ARGS["index"] + "/refs.json", encoding="utf-8") as fh:
    REFS = json.load(fh)
STEMMER = Stemmer.Stemmer("english")""",
    ),
}


SNIPPETS[PURE] = (
    SNIPPETS["handbook"][0]
    + "\nimport handbook.search.index\nhandbook.search.index.ARRAYS = False",
    SNIPPETS["handbook"][1],
)
SNIPPETS[EXHAUSTIVE] = (
    SNIPPETS[PURE][0]
    + "\nimport handbook.search.top_k\nhandbook.search.top_k.EXHAUSTIVE_POSTINGS = 1 << 62",
    SNIPPETS["handbook"][1],
)


def _memory() -> dict[str, float]:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (
        1024 ** (2 if sys.platform == "darwin" else 1)
    )
    status = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    status[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"maxrss_mb": peak, "vmrss_mb": status.get("VmRSS"), "vmhwm_mb": status.get("VmHWM")}


def _timed(fn: Any, items: list[str], *args: Any) -> tuple[list[float], list[Any], int]:
    """(seconds per item, each result or None where it raised, how many raised)."""
    times, results, errors = [], [], 0
    for item in items:
        start = time.perf_counter()
        try:
            result = fn(item, *args)
        except Exception:
            errors += 1
            results.append(None)
            continue
        times.append(time.perf_counter() - start)
        results.append(result)
    return times, results, errors


def warm(args_file: str, ns: dict[str, Any]) -> dict[str, Any]:
    """The warm part of an engine's child, after its first answer: every query once."""
    with open(args_file, encoding="utf-8") as fh:
        args = json.load(fh)
    queries, k = args["queries"], args["k"]
    out: dict[str, Any] = {}
    if args["mode"] == "quality":
        rank = ns.get("docrank") or ns["search"]
        out["search_s"], ranked, out["errors"] = _timed(rank, queries, k)
        out["refs"] = [None if r is None else [ref for ref, _ in r] for r in ranked]
        return out
    out["search_s"], results, out["errors"] = _timed(ns["search"], queries, k)
    if "core" in ns:  # Handbook: the API answer has excerpts; the refs come from the core
        out["core_s"], results, _ = _timed(ns["core"], queries, k)
    out["refs"] = results
    if "get" in ns and args.get("get_ids"):
        out["get_s"], _, out["get_errors"] = _timed(ns["get"], args["get_ids"])
    out.update(_memory())
    return out


def child_plain_lunr(request: dict[str, Any]) -> dict[str, Any]:
    """lunr.py's own index of Cranfield's title and text (boost 1 each), and its top 100
    for each query: the setup of the Cranfield README's anchor, for comparison."""
    import lunr

    with open(CRANFIELD / "docs.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    idx = lunr.lunr(
        ref="ref",
        fields=["title", "text"],
        documents=[
            {"ref": f"cran.{d['id']}", "title": d["title"], "text": d["text"]} for d in docs
        ],
    )
    return {"refs": [[r["ref"] for r in idx.search(q)[:100]] for q in request["queries"]]}


def child_prep(request_file: str) -> dict[str, Any]:
    """Untimed setup for one library, in a child so the parent stays small (a child's
    ru_maxrss starts from its parent's RSS at the fork): the anchors' indexes over the same
    entries as the bundle's index (FTS5, tantivy, bm25s), the index lunr.py loads, the
    query set and the ids for `get`, lunr's stop words and the bench key's public key."""
    import sqlite3

    from lunr.stop_word_filter import WORDS

    from handbook.bundle.signing import load_private_key, public_key_of
    from handbook_build import check, load_config
    from handbook_build.write.emit import index_entries

    with open(request_file, encoding="utf-8") as fh:
        request = json.load(fh)
    if request.get("what") == "plain-lunr":
        return child_plain_lunr(request)
    out, bundle = Path(request["out"]), Path(request["bundle"])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    entries = list(
        index_entries(check(load_config(request["config"])).docs)
    )  # path order, as the build
    report: dict[str, Any] = {
        "entries": len(entries),
        "notes": [],
        "built_s": {"entries": time.perf_counter() - t0},
    }

    t0 = time.perf_counter()
    db = out / "fts5.sqlite"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute(
        "CREATE VIRTUAL TABLE entries USING fts5(ref UNINDEXED, title, keywords, body, tokenize='porter unicode61')"
    )
    con.executemany(
        "INSERT INTO entries VALUES (?, ?, ?, ?)", ((e.ref, *e.fields) for e in entries)
    )
    con.execute("INSERT INTO entries(entries) VALUES ('optimize')")
    con.commit()
    con.close()
    report["built_s"]["FTS5"] = time.perf_counter() - t0

    try:
        import tantivy
    except ImportError as exc:
        report["notes"].append(f"tantivy skipped: {exc}")
    else:
        t0 = time.perf_counter()
        target = out / "tantivy"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        schema = tantivy.SchemaBuilder()
        schema.add_text_field("ref", stored=True, tokenizer_name="raw")
        for name in ("title", "keywords", "body"):
            schema.add_text_field(name, stored=False, tokenizer_name="en_stem")
        index = tantivy.Index(schema.build(), path=str(target))
        writer = index.writer()
        for e in entries:
            writer.add_document(
                tantivy.Document(
                    ref=e.ref, title=e.fields[0], keywords=e.fields[1], body=e.fields[2]
                )
            )
        writer.commit()
        writer.wait_merging_threads()
        report["built_s"]["tantivy"] = time.perf_counter() - t0

    try:
        import bm25s
        import Stemmer
    except ImportError as exc:
        report["notes"].append(f"bm25s skipped: {exc}")
    else:
        t0 = time.perf_counter()
        target = out / "bm25s"
        shutil.rmtree(target, ignore_errors=True)
        tokens = bm25s.tokenize(
            [" ".join(e.fields) for e in entries],
            stopwords="en",
            stemmer=Stemmer.Stemmer("english"),
            show_progress=False,
        )
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        retriever.save(str(target), show_progress=False)
        (target / "refs.json").write_text(json.dumps([e.ref for e in entries]), encoding="utf-8")
        report["built_s"]["bm25s"] = time.perf_counter() - t0

    report["stop_words"] = sorted(WORDS)
    report["key"] = str(
        public_key_of(load_private_key(Path(keyfile()).read_bytes(), what="bench key"))
    )
    report["lunr_index"], note = lunr_index_file(bundle, out) if request["lunr"] else ("", None)
    report["notes"] += [note] if note else []
    with open(bundle / "catalog.json", encoding="utf-8") as fh:
        catalog = json.load(fh)
    report["docs"] = len(catalog["docs"])
    count, seed = request["queries"], request["seed"]
    report["queries"] = make_queries(catalog, set(WORDS), count, seed)
    report["get_ids"] = [
        d["id"]
        for d in random.Random(seed).sample(catalog["docs"], min(count, len(catalog["docs"])))
    ]
    (out / "queries.json").write_text(json.dumps(report["queries"], indent=1), encoding="utf-8")
    (out / "stop_words.json").write_text(json.dumps(report["stop_words"]), encoding="utf-8")
    return report


# -- running the children -------------------------------------------------------------------


@dataclass
class Cold:
    wall_s: float
    """From just before the spawn to reading the first answer."""
    start_s: float
    """Interpreter start: spawn to the child's first line (perf_counter is system-wide)."""
    import_s: float
    open_s: float
    first_s: float
    hits: int

    @property
    def inside_s(self) -> float:
        return self.import_s + self.open_s + self.first_s


@dataclass
class EngineRun:
    engine: str
    cold: list[Cold] = field(default_factory=list)
    warm: dict[str, Any] = field(default_factory=dict)
    queries: int = 0
    note: str = ""

    @property
    def cold_ms(self) -> float:
        return statistics.median(c.wall_s for c in self.cold) * 1000

    def median(self, name: str) -> float:
        return statistics.median(getattr(c, name) for c in self.cold) * 1000


def spawn(engine: str, label: str, args: dict[str, Any]) -> tuple[Cold, dict[str, Any]]:
    """One child: the cold figures, and the warm ones when `args["warm"]` names a file."""
    imports, opener = SNIPPETS[engine]
    code = CHILD.format(imports=imports, open=opener)
    logs = WORK / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"runtime-{label}-{engine.replace(' ', '-')}.err", "wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", code, json.dumps(args)],
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=ROOT,
        )
        assert child.stdout is not None
        line = child.stdout.readline()
        answered = time.perf_counter()
        rest = child.stdout.read()
        child.wait()
    if child.returncode or not line:
        raise RuntimeError(
            f"{label} {engine}: child failed (exit {child.returncode}); see {err.name}"
        )
    first = json.loads(line)
    cold = Cold(
        answered - start,
        first["t0"] - start,
        first["import_s"],
        first["open_s"],
        first["first_s"],
        first["hits"],
    )
    warm_out = json.loads(rest.strip().splitlines()[-1]) if args.get("warm") else {}
    return cold, warm_out


def run_engine(
    engine: str, label: str, base: dict[str, Any], warm_args: dict[str, Any], cold_runs: int
) -> EngineRun:
    """The warm child first (its cold start counts too), then `cold_runs - 1` cold-only ones."""
    args_file = RUNTIME / label / f"warm-{engine.replace(' ', '-')}.json"
    args_file.write_text(json.dumps(warm_args), encoding="utf-8")
    result = EngineRun(engine, queries=len(warm_args["queries"]))
    cold, result.warm = spawn(engine, label, {**base, "warm": str(args_file)})
    result.cold.append(cold)
    for _ in range(cold_runs - 1):
        result.cold.append(spawn(engine, label, base)[0])
    return result


# -- libraries, bundles, queries ------------------------------------------------------------


def build_bundle(label: str, config: Path) -> tuple[Path, float]:
    """A fresh `handbook build` with the current code, into build/bench/bundles/<label>."""
    out = WORK / "bundles" / label
    for old in (out, out.parent / f"{out.name}.versions"):
        if old.is_symlink() or old.is_file():
            old.unlink()
        elif old.exists():
            shutil.rmtree(old)
    proc = run(
        f"runtime-build-{label}",
        [*HANDBOOK, "build", "--config", str(config), "--out", str(out), "--key", str(keyfile())],
    )
    return out.resolve(), proc.wall_s


def prep(
    label: str, config: Path, bundle: Path, args: argparse.Namespace, lunr: bool = True
) -> dict[str, Any]:
    """The anchors' indexes, the query set and the key (`child_prep`), in a child; with
    `lunr` false, no index for lunr.py (it loads its JSON whole: 3 GB at 100,000 docs)."""
    out = RUNTIME / label
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    request = out / "prep.json"
    request.write_text(
        json.dumps(
            {
                "config": str(config),
                "out": str(out),
                "bundle": str(bundle),
                "queries": args.queries,
                "seed": args.seed,
                "lunr": lunr,
            }
        ),
        encoding="utf-8",
    )
    proc = run(
        f"runtime-prep-{label}",
        [sys.executable, str(Path(__file__).resolve()), "--child", str(request)],
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def lunr_index_file(bundle: Path, out: Path) -> tuple[str, str | None]:
    """The index lunr.py loads: the bundle's own `index.json`, or, when its terms are not
    in code-point order, a copy with the inverted index re-sorted (untimed). Handbook
    writes terms in UTF-16 order, as lunr.js compares them; lunr.py's loader insists on
    code-point order ("Out of order word insertion"), and the two differ as soon as a
    term holds a character outside the Basic Multilingual Plane. Same terms, postings and
    vectors, same size: only the order of the inverted index changes. A bundle built
    with the default `lunr_index: gzip` has index.json.gz: it is decompressed (untimed)
    to `out`, and lunr.py loads that, as a lunr.py user would."""
    source = bundle / "index.json"
    if not source.exists():
        source = out / "index.json"
        with gzip.open(bundle / "index.json.gz", "rb") as packed, open(source, "wb") as plain:
            shutil.copyfileobj(packed, plain, 1 << 20)
    data = json.loads(source.read_text(encoding="utf-8"))
    terms = [term for term, _ in data["invertedIndex"]]
    if terms == sorted(terms):
        return str(source), None
    moved = sum(1 for a, b in zip(terms, sorted(terms), strict=True) if a != b)
    data["invertedIndex"].sort(key=lambda item: item[0])
    copy = out / "index.codepoint-order.json"
    copy.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return str(copy), (
        f"lunr.py cannot load this bundle's index.json as written (terms in UTF-16 order, for lunr.js: "
        f"{moved:,} of {len(terms):,} positions differ from code-point order, and lunr.py raises "
        f"'Out of order word insertion'); it loads a copy with the inverted index re-sorted by code point"
    )


def _words(text: str, stop: set[str]) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


def make_queries(catalog: dict[str, Any], stop: set[str], count: int, seed: int) -> list[str]:
    """1-3 consecutive words of a doc or section title (about 95%) or of a keyword or
    alias (the rest), lowercased, stop words and non-word characters removed, no repeats."""
    rng = random.Random(seed)
    docs = catalog["docs"]
    titles = [d["title"] for d in docs]
    sections = [s["title"] for d in docs for s in d["sections"]]
    names = [n for d in docs for n in (*d["keywords"], *d["aliases"])]
    keyword_share = max(1, count // 20)
    out: list[str] = []
    seen: set[str] = set()
    for _ in range(count * 200):
        if len(out) >= count:
            break
        if len(out) < keyword_share and names:
            source = names
        else:
            source = sections if sections and rng.random() < 0.5 else titles
        words = _words(rng.choice(source), stop)
        if not words:
            continue
        n = rng.randint(1, min(3, len(words)))
        at = rng.randrange(len(words) - n + 1)
        query = " ".join(words[at : at + n])
        if query not in seen:
            seen.add(query)
            out.append(query)
    rng.shuffle(out)
    return out


# -- statistics -----------------------------------------------------------------------------


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else math.nan


def p99(values: list[float]) -> float:
    """Nearest rank: with 100 values the 99th, with fewer the maximum."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] * 1000


def _f(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


# -- one library ----------------------------------------------------------------------------


@dataclass
class Measured:
    label: str
    docs: int
    entries: int
    build_s: float
    runs: list[EngineRun]
    queries: list[str]
    notes: list[str]
    parity: dict[str, Any] | None = None


def measure(label: str, config: Path, args: argparse.Namespace) -> Measured:
    print(f"{label}: handbook build", file=sys.stderr)
    bundle, build_s = build_bundle(label, config)
    print(f"{label}: anchor indexes and query set", file=sys.stderr)
    setup = prep(label, config, bundle, args)
    docs, queries, get_ids, lunr_index = (
        setup["docs"],
        setup["queries"],
        setup["get_ids"],
        setup["lunr_index"],
    )
    notes = list(setup["notes"])
    runs = []
    for engine in ENGINES:
        index = {
            "FTS5": RUNTIME / label / "fts5.sqlite",
            "tantivy": RUNTIME / label / "tantivy",
            "bm25s": RUNTIME / label / "bm25s",
        }.get(engine)
        if index is not None and not index.exists():
            continue  # skipped in prep, with a note
        engine_queries = queries
        if engine == "lunr.py" and docs >= LARGE:
            engine_queries = queries[: args.lunr_queries]
        base = {
            "path": str(bundle),
            "key": setup["key"],
            "index": str(index or ""),
            "first": queries[0],
            "bench": str(BENCH),
            "lunr_index": lunr_index,
        }
        warm_args = {
            "mode": "bench",
            "queries": engine_queries,
            "k": 10,
            "get_ids": get_ids if engine == "handbook" else [],
        }
        print(
            f"{label}: {engine} ({len(engine_queries)} queries, {args.cold_runs} cold starts)",
            file=sys.stderr,
        )
        runs.append(run_engine(engine, label, base, warm_args, args.cold_runs))
    every = next((r for r in runs if r.engine == EXHAUSTIVE), None)
    if every is not None:
        pairs = list(zip(runs[0].warm["refs"], every.warm["refs"], strict=True))
        same = sum(a == b for a, b in pairs)
        notes.append(
            f"handbook against every posting scored in pure Python: {same} of {len(pairs)} "
            "queries give the same top 10 (refs, order and scores)"
        )
    library = Measured(label, docs, setup["entries"], build_s, runs, queries, notes)
    if docs >= LARGE:
        library.parity = parity(runs[0], runs[1], args.parity_queries)
    return library


def parity(handbook: EngineRun, lunr: EngineRun, cap: int) -> dict[str, Any]:
    """Handbook's top 10 against lunr.py's, for the first `cap` queries lunr.py answered.
    Ties: lunr.py orders equal scores as its dicts happen to iterate, Handbook by entry
    number, so 'with ties' also accepts a top hit (or overlap) that differs only among
    entries of equal score."""
    ours, theirs = handbook.warm["refs"], lunr.warm["refs"]
    n = min(cap, len(theirs))
    compared = raised = empty = same = same_ties = 0
    overlap, overlap_ties = [], []
    for a, b in zip(ours[:n], theirs[:n], strict=True):
        if b is None:
            raised += 1
            continue
        compared += 1
        if not a and not b:
            empty += 1
            same += 1
            same_ties += 1
            overlap.append(1.0)
            overlap_ties.append(1.0)
            continue
        a_refs, b_refs = [r for r, _ in a], [r for r, _ in b]
        same += bool(a_refs and b_refs and a_refs[0] == b_refs[0])
        top = b[0][1] if b else None
        same_ties += bool(
            a and b and (a_refs[0] == b_refs[0] or math.isclose(a[0][1], top, rel_tol=1e-9))
        )
        overlap.append(len(set(a_refs) & set(b_refs)) / max(len(a_refs), len(b_refs)))
        # entries tied with the 10th score may stand in for each other
        last = b[-1][1]
        shared = len(set(a_refs) & set(b_refs)) + sum(
            1 for r, s in a if r not in b_refs and math.isclose(s, last, rel_tol=1e-9)
        )
        overlap_ties.append(min(1.0, shared / max(len(a_refs), len(b_refs))))
    return {
        "compared": compared,
        "raised": raised,
        "empty": empty,
        "same_top": same,
        "same_top_ties": same_ties,
        "overlap": statistics.mean(overlap) if overlap else math.nan,
        "overlap_ties": statistics.mean(overlap_ties) if overlap_ties else math.nan,
    }


# -- Cranfield ------------------------------------------------------------------------------


def _yaml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # JSON strings are YAML double-quoted strings


def cranfield_library(out: Path, summary: str) -> Path:
    """One doc per Cranfield doc: id cran.<id>, title, kind article, the abstract as body.
    `summary` is "abstract" (its first 200 characters) or "none" (a dash, which indexes
    no word: lunr's tokenizer splits on hyphens)."""
    docs_dir = out / "docs"
    shutil.rmtree(docs_dir, ignore_errors=True)
    docs_dir.mkdir(parents=True)
    with open(CRANFIELD / "docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            text = d["text"].strip()
            title = " ".join(d["title"].split()) or "untitled"
            short = (text[:200].strip() or "none") if summary == "abstract" else "-"
            (docs_dir / f"cran-{int(d['id']):04d}.md").write_text(
                f"---\nid: cran.{d['id']}\ntitle: {_yaml_string(title)}\nkind: article\n"
                f"summary: {_yaml_string(short)}\n---\n{text}\n",
                encoding="utf-8",
            )
    config = out / "mkdocs.yml"
    config.write_text(
        f"""site_name: Cranfield 1400 (summary {summary})
site_description: The Cranfield collection as a Handbook library, for bench/runtime_bench.py.
docs_dir: docs
site_dir: site
theme:
  name: material
plugins:
  - search
  - handbook:
      library: cranfield
      version: 1.0.0
      vocab:
        kind: [article]
""",
        encoding="utf-8",
    )
    return config


def cranfield_queries(stop: set[str]) -> tuple[list[str], list[str], int]:
    """(query ids, query strings, how many had more than Handbook's 32 words as given).
    Lunr syntax and punctuation become spaces; lunr's stop words are dropped for every
    engine (they are not in the index, so no score changes; without it 8 queries exceed
    Handbook's 32-word cap)."""
    ids, texts, over = [], [], 0
    with open(CRANFIELD / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            words = re.sub(r"[^\w\s]|_", " ", q["text"]).lower().split()
            over += len(words) > 32
            ids.append(q["id"])
            texts.append(" ".join(w for w in words if w not in stop))
    return ids, texts, over


def _qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(CRANFIELD / "qrels.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            qrels.setdefault(r["query_id"], {})[r["doc_id"]] = max(0, int(r["relevance"]))
    return qrels


def quality(
    rankings: list[list[str] | None], ids: list[str], qrels: dict[str, dict[str, int]]
) -> tuple[float, float]:
    """Mean nDCG@10 (linear gain = graded relevance) and Recall@100 (relevance > 0)."""
    ndcgs, recalls = [], []
    for qid, ranked in zip(ids, rankings, strict=True):
        judged = qrels.get(qid, {})
        docs = list(dict.fromkeys(r.split("#")[0].removeprefix("cran.") for r in ranked or []))
        dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(docs[:10]))
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        ndcgs.append(dcg / idcg if idcg else 0.0)
        relevant = {d for d, g in judged.items() if g > 0}
        recalls.append(len(relevant & set(docs[:100])) / len(relevant) if relevant else 0.0)
    return statistics.mean(ndcgs), statistics.mean(recalls)


@dataclass
class Quality:
    variant: str
    scores: dict[str, tuple[float, float, int]]
    """engine -> (nDCG@10, Recall@100, queries that raised)."""
    over_cap: int
    queries: int


def plain_lunr_quality() -> tuple[float, float, int]:
    print(f"cranfield: {PLAIN_LUNR}", file=sys.stderr)
    ids, queries, _ = cranfield_queries(
        set(
            json.loads((RUNTIME / "cranfield-none" / "stop_words.json").read_text(encoding="utf-8"))
        )
    )
    request = RUNTIME / "cranfield-plain-lunr.json"
    request.write_text(json.dumps({"what": "plain-lunr", "queries": queries}), encoding="utf-8")
    proc = run(
        "runtime-cranfield-plain-lunr",
        [sys.executable, str(Path(__file__).resolve()), "--child", str(request)],
    )
    refs = json.loads(proc.stdout.strip().splitlines()[-1])["refs"]
    return (*quality(refs, ids, _qrels()), 0)


def measure_cranfield(variant: str) -> Quality:
    label = f"cranfield-{variant}"
    config = cranfield_library(WORK / label, variant)
    print(f"{label}: handbook build", file=sys.stderr)
    bundle, _ = build_bundle(label, config)
    setup = prep(label, config, bundle, argparse.Namespace(queries=1, seed=0))
    ids, queries, over = cranfield_queries(set(setup["stop_words"]))
    qrels = _qrels()
    lunr_index = setup["lunr_index"]
    scores = {}
    for engine in ENGINES:
        index = {
            "FTS5": RUNTIME / label / "fts5.sqlite",
            "tantivy": RUNTIME / label / "tantivy",
            "bm25s": RUNTIME / label / "bm25s",
        }.get(engine)
        if index is not None and not index.exists():
            continue
        print(f"{label}: {engine}", file=sys.stderr)
        base = {
            "path": str(bundle),
            "key": setup["key"],
            "index": str(index or ""),
            "first": queries[0],
            "bench": str(BENCH),
            "lunr_index": lunr_index,
        }
        out = run_engine(
            engine, label, base, {"mode": "quality", "queries": queries, "k": 100}, 1
        ).warm
        ndcg, recall = quality(out["refs"], ids, qrels)
        scores[engine] = (ndcg, recall, out["errors"])
    return Quality(variant, scores, over, len(queries))


# -- reporting ------------------------------------------------------------------------------


def library_table(lib: Measured) -> str:
    hb = lib.runs[0]
    lines = [
        f"**{lib.label}**: {lib.docs:,} docs, {lib.entries:,} index entries, {len(lib.queries)} queries",
        "",
        "| engine | cold start ms | in-process ms | search p50 ms | p99 ms | get p50 ms | peak / end RSS MB "
        "| queries | cold x | p50 x |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    hb_cold, hb_p50 = hb.cold_ms, p50(hb.warm["search_s"])
    for r in lib.runs:
        w = r.warm
        get = _f(p50(w["get_s"]), 3) if "get_s" in w else ""
        rss = f"{_f(w['maxrss_mb'], 0)} / {_f(w['vmrss_mb'], 0)}"
        ratio = (
            " | " if r is hb else f"{r.cold_ms / hb_cold:.1f} | {p50(w['search_s']) / hb_p50:.1f}"
        )
        queries = f"{r.queries}" + (f" ({w['errors']} raised)" if w["errors"] else "")
        name = f"**{r.engine}**" if r is hb else r.engine
        lines.append(
            f"| {name} | {_f(r.cold_ms, 1)} | {_f(r.median('inside_s'), 1)} | {_f(p50(w['search_s']), 3)} "
            f"| {_f(p99(w['search_s']), 2)} | {get} | {rss} | {queries} | {ratio} |"
        )
    return "\n".join(lines)


def details_table(libraries: list[Measured]) -> str:
    lines = [
        "| library | engine | interpreter start ms | import ms | open ms | first query ms | cold min-max ms "
        "| core p50 / p99 ms | get first / p99 ms | VmHWM MB |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for lib in libraries:
        for r in lib.runs:
            w = r.warm
            walls = [c.wall_s * 1000 for c in r.cold]
            core = f"{_f(p50(w['core_s']), 3)} / {_f(p99(w['core_s']), 2)}" if "core_s" in w else ""
            get = (
                f"{_f(w['get_s'][0] * 1000, 1)} / {_f(p99(w['get_s']), 2)}"
                if w.get("get_s")
                else ""
            )
            lines.append(
                f"| {lib.label} | {r.engine} | {_f(r.median('start_s'), 1)} | {_f(r.median('import_s'), 1)} "
                f"| {_f(r.median('open_s'), 1)} | {_f(r.median('first_s'), 1)} "
                f"| {_f(min(walls), 0)}-{_f(max(walls), 0)} "
                f"| {core} | {get} | {_f(w.get('vmhwm_mb'), 0)} |"
            )
    return "\n".join(lines)


def goal_lines(libraries: list[Measured]) -> list[str]:
    out = []
    for lib in libraries:
        if lib.docs < GOAL_DOCS:
            continue
        hb = lib.runs[0]
        w = hb.warm
        checks = [
            ("cold start", hb.cold_ms, GOAL_COLD_MS, "ms", hb.cold_ms <= GOAL_COLD_MS),
            (
                "search p50",
                p50(w["search_s"]),
                GOAL_P50_MS,
                "ms",
                p50(w["search_s"]) <= GOAL_P50_MS,
            ),
            (
                "search p99",
                p99(w["search_s"]),
                GOAL_P99_MS,
                "ms",
                p99(w["search_s"]) <= GOAL_P99_MS,
            ),
            ("peak RSS", w["maxrss_mb"], GOAL_RSS_MB, "MB", w["maxrss_mb"] < GOAL_RSS_MB),
        ]
        parts = [
            f"{name} {_f(value, 3 if unit == 'ms' and value < 10 else 1)} {unit} "
            f"({'met' if ok else f'**missed**, {value / goal:.1f}x the goal'})"
            for name, value, goal, unit, ok in checks
        ]
        out.append(f"- {lib.label}: " + "; ".join(parts))
    return out


def parity_table(libraries: list[Measured]) -> str:
    lines = [
        "| library | queries | lunr.py raised | both empty | same top hit | same top hit, ties allowed "
        "| mean top-10 overlap | overlap, ties allowed |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for lib in libraries:
        p = lib.parity
        if p is None:
            continue
        n = max(p["compared"], 1)
        lines.append(
            f"| {lib.label} | {p['compared']} | {p['raised']} | {p['empty']} | {p['same_top'] / n:.1%} "
            f"| {p['same_top_ties'] / n:.1%} | {p['overlap']:.3f} | {p['overlap_ties']:.3f} |"
        )
    return "\n".join(lines)


def quality_table(results: list[Quality]) -> str:
    names = {"abstract": "summary = abstract[:200]", "none": "summary '-'"}
    head = "| engine | " + " | ".join(
        f"nDCG@10, {names[q.variant]} | R@100, {names[q.variant]}" for q in results
    )
    lines = [head + " | README nDCG@10 / R@100 |", "|---|" + "--:|--:|" * len(results) + "--:|"]
    for engine in (*ENGINES, PLAIN_LUNR):
        if not any(engine in q.scores for q in results):
            continue
        row = f"| {engine} |"
        for q in results:
            s = q.scores.get(engine)
            row += (
                " n/a | n/a |"
                if s is None
                else f" {s[0]:.3f} | {s[1]:.3f} |"
                if not s[2]
                else f" {s[0]:.3f} ({s[2]} raised) | {s[1]:.3f} |"
            )
        anchor = README_ANCHORS.get(engine)
        lines.append(row + (f" {anchor[0]:.3f} / {anchor[1]:.3f} |" if anchor else " |"))
    return "\n".join(lines)


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def versions() -> str:
    code = (
        "import importlib.metadata as m\nout = []\n"
        "for name in ('lunr', 'tantivy', 'bm25s', 'PyStemmer', 'numpy'):\n"
        "    try:\n        out.append(f'{name} {m.version(name)}')\n"
        "    except m.PackageNotFoundError:\n        out.append(f'{name} missing')\n"
        "import sqlite3\nout.append(f'SQLite {sqlite3.sqlite_version}')\nprint(', '.join(out))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="synthetic library sizes, comma-separated (default: %(default)s)",
    )
    parser.add_argument("--no-real", action="store_true", help="skip the msdocs-10k corpus")
    parser.add_argument(
        "--no-cranfield", action="store_true", help="skip the Cranfield retrieval-quality part"
    )
    parser.add_argument(
        "--queries", type=int, default=200, help="queries per library (default: %(default)s)"
    )
    parser.add_argument(
        "--lunr-queries",
        type=int,
        default=100,
        help=f"lunr.py's queries on libraries of {LARGE:,} docs or more (default: %(default)s)",
    )
    parser.add_argument(
        "--parity-queries",
        type=int,
        default=100,
        help="queries compared with lunr.py (default: %(default)s)",
    )
    parser.add_argument(
        "--cold-runs",
        type=int,
        default=5,
        help="cold starts per engine; the median is reported (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the synthetic libraries and query sets (default: %(default)s)",
    )
    parser.add_argument("--child", metavar="REQUEST", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child_prep(args.child)))
        return 0
    started = time.perf_counter()
    results = [
        measure(label, config, args)
        for label, config in libraries(args.sizes, args.seed, not args.no_real)
    ]
    cranfield: list[Quality] = []
    if not args.no_cranfield:
        if (CRANFIELD / "docs.jsonl").exists():
            cranfield = [measure_cranfield(variant) for variant in ("abstract", "none")]
            plain = plain_lunr_quality()
            for q in cranfield:
                q.scores[PLAIN_LUNR] = plain
        else:
            print(f"note: {CRANFIELD} not found; retrieval quality skipped", file=sys.stderr)

    print(
        f"Runtime beside lunr.py, FTS5, tantivy and bm25s; {environment()}; commit {commit()}; {versions()}\n"
    )
    for lib in results:
        print(library_table(lib))
        print()
        for note in lib.notes:
            print(f"note: {note}")
    print(
        "Cold start = spawn to first answer read by the parent, median of "
        f"{args.cold_runs}; in-process = imports + open + first query inside the child.\n"
    )
    print(details_table(results))
    print(
        f"\nGoals at {GOAL_DOCS:,} docs: cold start <= {GOAL_COLD_MS:.0f} ms, search p50 <= {GOAL_P50_MS:.0f} ms, "
        f"p99 <= {GOAL_P99_MS:.0f} ms, RSS < {GOAL_RSS_MB:.0f} MB"
    )
    for line in goal_lines(results):
        print(line)
    if any(lib.parity for lib in results):
        print(f"\nRanking parity with lunr.py (first {args.parity_queries} queries):\n")
        print(parity_table(results))
    if cranfield:
        q = cranfield[0]
        print(
            f"\nCranfield 1400, {q.queries} queries ({q.over_cap} over 32 words before stop words were dropped):\n"
        )
        print(quality_table(cranfield))
    print(
        f"\n(whole run {time.perf_counter() - started:.0f} s; this process's peak RSS "
        f"{_memory()['maxrss_mb']:.0f} MB, the floor of every child's ru_maxrss)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
