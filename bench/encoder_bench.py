"""The numpy encoder against an earlier revision's, in one process: speed and agreement.

Both encoders (this tree's `handbook.search.encoder`, and the same file at `--baseline`,
read with `git show` and loaded as a module) embed the same Cranfield passages, built as
the semantic build builds a Cranfield doc's one passage (title, summary = the abstract's
first 200 characters, abstract). Timed rounds alternate between the two, so machine load
falls on both alike; passages/s is the sample's size over the median round. Then, with
`--ndcg`, each encoder embeds all 1,400 passages and the 225 queries and ranks the docs by
cosine similarity: semantic nDCG@10 and Recall@100 as `runtime_bench.quality` computes them.

    OPENBLAS_NUM_THREADS=1 python bench/encoder_bench.py [--baseline main] [--sample 64]
        [--rounds 3] [--ndcg [--window 128]] [--threads 1,2]

`--threads` instead times this tree's encoder at each BLAS thread count (set through
`handbook.search.threads`), for choosing the default. Needs the semantic extra and the model.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_throughput import ROOT, environment
from runtime_bench import CRANFIELD, _qrels, cranfield_queries, quality


def passages() -> tuple[list[str], list[str]]:
    """(doc ids, passage texts) of Cranfield as the semantic build embeds them."""
    ids, texts = [], []
    with open(CRANFIELD / "docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            text = d["text"].strip()
            title = " ".join(d["title"].split()) or "untitled"
            ids.append(f"cran.{d['id']}")
            texts.append("\n".join(filter(None, [title, text[:200].strip() or "none", text])))
    return ids, texts


def baseline_module(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:runtime/handbook/search/encoder.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = ROOT / "build" / "bench" / "baseline_encoder.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_encoder", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rate(encoder: Any, texts: list[str]) -> float:
    start = time.perf_counter()
    encoder.encode(texts)
    return time.perf_counter() - start


def ndcg(encoder: Any, ids: list[str], texts: list[str]) -> tuple[float, float]:
    import numpy as np

    qids, queries, _ = cranfield_queries(set())
    docs = encoder.encode(texts)
    asked = encoder.encode(queries)
    rankings = [[ids[i] for i in np.argsort(-(docs @ q), kind="stable")[:100]] for q in asked]
    return quality(rankings, qids, _qrels())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision of the old encoder")
    parser.add_argument("--sample", type=int, default=64, help="passages per timed round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ndcg", action="store_true", help="also rank all of Cranfield")
    parser.add_argument(
        "--window", type=int, default=0, help="with --ndcg, also this tree cut at N tokens"
    )
    parser.add_argument("--threads", default="", help="time this tree at these thread counts")
    args = parser.parse_args()
    from handbook.search.encoder import Encoder, model_dir

    ids, texts = passages()
    # the sample: evenly spread over the collection, so its lengths are the collection's
    sample = texts[:: max(1, len(texts) // args.sample)][: args.sample]
    print(f"{environment()}; sample {len(sample)} Cranfield passages", flush=True)
    new = Encoder(model_dir())
    if args.threads:
        from handbook.search.threads import blas_threads

        for count in (int(n) for n in args.threads.split(",")):
            with blas_threads(count):
                rate(new, sample[:4])
                times = [rate(new, sample) for _ in range(args.rounds)]
            print(f"threads {count}: {len(sample) / statistics.median(times):.2f} passages/s")
        return 0
    old = baseline_module(args.baseline).Encoder(model_dir())
    rate(old, sample[:4]), rate(new, sample[:4])  # warm up
    old_s, new_s = [], []
    for _ in range(args.rounds):
        old_s.append(rate(old, sample))
        new_s.append(rate(new, sample))
    a, b = old.encode(sample), new.encode(sample)
    print(
        f"baseline {args.baseline}: {len(sample) / statistics.median(old_s):.2f} passages/s "
        f"(rounds {', '.join(f'{t:.1f}' for t in old_s)} s)\n"
        f"this tree: {len(sample) / statistics.median(new_s):.2f} passages/s "
        f"(rounds {', '.join(f'{t:.1f}' for t in new_s)} s)\n"
        f"speed-up: {statistics.median(old_s) / statistics.median(new_s):.2f}x; "
        f"max |difference| {abs(a - b).max():.2e}, "
        f"least cosine {min((a * b).sum(axis=1)):.7f}",
        flush=True,
    )
    if args.ndcg:
        encoders = [(args.baseline, old), ("this tree", new)]
        if args.window:
            short = Encoder(model_dir())
            short.tokenizer.enable_truncation(max_length=args.window)
            encoders.append((f"this tree, {args.window}-token window", short))
        for name, encoder in encoders:
            start = time.perf_counter()
            score, recall = ndcg(encoder, ids, texts)
            took = time.perf_counter() - start
            print(
                f"{name}: semantic nDCG@10 {score:.4f}, R@100 {recall:.4f} "
                f"({len(texts)} passages + 225 queries in {took:.0f} s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
