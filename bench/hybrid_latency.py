"""Search latency with vectors on msdocs-10k: lexical, semantic and hybrid p50, the query's
embedding included.

Embedding msdocs-10k's ~66,000 passages takes hours on a small machine, and a search's
time does not depend on the vectors' values. So the semantic bundle is built with its
embedding cache filled beforehand with random unit vectors for every passage, keyed as
the build keys them (`handbook_build.write.embedding_cache`): the build embeds nothing,
and each search then runs the shipped path end to end, through `lib.search` of the
signed bundle: the query embedded by the real model, its similarity to 66,000 vectors,
the fusion with the lexical ranking. The rankings of such a bundle mean nothing; it is
for time only (bench/retrieval_quality.py measures quality and latency with real vectors).

    python bench/hybrid_latency.py [--queries 200] [--docs N]

`--docs N` keeps the first N docs of msdocs-10k (path order). Queries are
`runtime_bench.make_queries`' (1-3 words of titles), each asked once per retriever after a
warm-up; the query embedding alone is timed too. Output under build/bench/hybrid/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_bench import keyfile, last_json, run
from check_throughput import WORK, environment, msdocs
from runtime_bench import build_bundle, make_queries

OUT = WORK / "hybrid"
RETRIEVERS = ("lexical", "semantic", "hybrid")


def fill_cache(bundle: Path, cache: Path) -> int:
    """Random unit vectors for every passage of the lexical `bundle`, as the semantic
    build of the same library will key them."""
    import numpy as np

    from handbook import Library
    from handbook.search.encoder import Encoder, model_dir
    from handbook_build.write.embedding_cache import EmbeddingCache, text_key
    from handbook_build.write.embeddings import passage_texts

    encoder = Encoder(model_dir())
    lib = Library.open(bundle, allow_unsigned=True)
    keys = [text_key(t) for t in passage_texts(bundle, lib.bundle.catalog)]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(keys), encoder.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    shutil.rmtree(cache, ignore_errors=True)
    store = EmbeddingCache(cache, encoder.vector_key, encoder.dim)
    store.put(zip(keys, vectors, strict=True))
    store.close()
    return len(keys)


def child(request_file: str) -> dict[str, Any]:
    from lunr.stop_word_filter import WORDS

    from handbook import Library
    from handbook.bundle.signing import load_private_key, public_key_of
    from handbook.search.encoder import Encoder, model_dir

    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    key = str(public_key_of(load_private_key(keyfile().read_bytes(), what="bench key")))
    lib = Library.open(request["bundle"], trusted_keys=[key])
    catalog = json.loads((Path(request["bundle"]) / "catalog.json").read_text("utf-8"))
    queries = make_queries(catalog, set(WORDS), request["queries"], 7)
    out: dict[str, Any] = {"passages": lib.snapshot.retriever.passage_count()}
    for retriever in RETRIEVERS:
        lib.search("warm up", limit=10, retriever=retriever)
        times = []
        for text in queries:
            start = time.perf_counter()
            lib.search(text, limit=10, retriever=retriever)
            times.append(time.perf_counter() - start)
        out[retriever] = times
    encoder = Encoder(model_dir())
    encoder.encode_query("warm up")
    times = []
    for text in queries:
        start = time.perf_counter()
        encoder.encode_query(text)
        times.append(time.perf_counter() - start)
    out["query embedding"] = times
    return out


def subset(config: Path, docs: int) -> Path:
    """A copy of the library with its first `docs` docs (path order)."""
    target = OUT / f"msdocs-{docs}"
    shutil.rmtree(target, ignore_errors=True)
    source = config.parent / "docs"
    chosen = sorted(source.rglob("*.md"))[:docs]
    for path in chosen:
        (target / "docs" / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / "docs" / path.relative_to(source))
    shutil.copy2(config, target / "mkdocs.yml")
    return target / "mkdocs.yml"


def semantic_copy(config: Path) -> Path:
    text = config.read_text(encoding="utf-8")
    line = re.search(r"^([ \t]*)library: (\S+)\n", text, re.MULTILINE)
    if line is None:
        raise RuntimeError(f"{config}: no `library:` line to add semantic: true beside")
    out = config.with_name("mkdocs-semantic.yml")
    out.write_text(
        f"{text[: line.end()]}{line.group(1)}semantic: true\n{text[line.end() :]}",
        encoding="utf-8",
    )
    return out


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--docs", type=int, default=0, help="only the first N docs")
    args = parser.parse_args()
    config = msdocs()
    if config is None:
        print("msdocs-10k not found (../shared/data/msdocs-10k)", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    if args.docs:
        config = subset(config, args.docs)
    cache = OUT / "cache"
    os.environ["HANDBOOK_CACHE_DIR"] = str(cache)
    print("lexical build", file=sys.stderr, flush=True)
    lexical, lexical_s = build_bundle("hybrid-lexical", config)
    filled = fill_cache(lexical, cache)
    print(f"{filled:,} passages in the cache; semantic build", file=sys.stderr, flush=True)
    bundle, semantic_s = build_bundle("hybrid-semantic", semantic_copy(config))
    request = OUT / "request.json"
    request.write_text(json.dumps({"bundle": str(bundle), "queries": args.queries}))
    answers = last_json(
        run(
            "hybrid-queries",
            [sys.executable, str(Path(__file__).resolve()), "--child", str(request)],
        )
    )
    print(
        f"{time.strftime('%Y-%m-%d')}, `python bench/hybrid_latency.py --queries {args.queries}"
        f"{f' --docs {args.docs}' if args.docs else ''}`; {environment()}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}\n\n"
        f"{answers['passages']:,} passages; build s lexical {lexical_s:.1f}, semantic from a "
        f"full cache {semantic_s:.1f}\n\n| measure | p50 ms | p90 ms |\n|---|--:|--:|"
    )
    for name in (*RETRIEVERS, "query embedding"):
        times = sorted(answers[name])
        print(
            f"| {name} | {statistics.median(times) * 1000:.1f} "
            f"| {times[int(len(times) * 0.9)] * 1000:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
