"""What pedigree costs: a library of N docs with 5 reviews per doc, beside the same library
without reviewers: build time, bundle bytes, cold start (open + first brief, in a fresh
process) and `brief` p50/p99 over tasks made from the docs' titles. One run, ratios.

    python bench/pedigree_bench.py [--docs 10000] [--reviews-per-doc 5] [--tasks 200]
                                   [--other-reader PYTHONPATH]

With --other-reader, the cold starts are also taken with the runtime found on that path
(another checkout's `runtime`), back to back on the same bundles: a reader that does not
know reviews-offsets.bin parses reviews.json whole, as before issue 29.

The reviews are real records: signed by five declared reviewers (keys from fixed seeds),
over each doc's current revision, with verdicts mixed as a busy team's would be (mostly
approvals and corroborations, some contradictions, a few on an older revision so that
doc shows suspect), and verified by the build like any others.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from synth import generate

from handbook import Library
from handbook.bundle.signing import public_key_of
from handbook.pedigree.records import Review, sign
from handbook_build import load_config
from handbook_build.checks.reviews import write_record
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench" / "pedigree"
REVIEWERS = ("alice", "bob", "carol", "dan", "erin")
NOW = 1_800_000_000
VERDICTS = ["approve"] * 5 + ["corroborate"] * 3 + ["contradict", "reject"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--reviews-per-doc", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=200, help="brief calls timed per library")
    parser.add_argument("--other-reader", help="PYTHONPATH of another runtime to compare")
    args = parser.parse_args(argv)
    plain = generate(WORK / "plain", args.docs)
    say(f"generated {args.docs} docs")
    reviewed = reviewed_copy(plain, WORK / "reviewed")
    rows = {}
    for name, config in (("without reviews", plain), ("with reviews", reviewed)):
        out = WORK / "out" / name.replace(" ", "-")
        if name == "with reviews":
            written = write_reviews(config, WORK / "out" / "without-reviews", args.reviews_per_doc)
            say(f"signed {written} reviews")
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        build(load_config(config), out, None)
        seconds = time.perf_counter() - started
        say(f"built {name} in {seconds:.1f} s")
        rows[name] = {
            "build_s": seconds,
            "bundle_bytes": bundle_bytes(out),
            "cold_start_ms": cold_start(out),
            **brief_times(out, args.tasks),
        }
        if args.other_reader:
            rows[name]["other_cold_start_ms"] = cold_start(out, args.other_reader)
            rows[name]["cold_start_again_ms"] = cold_start(out)
    print(report(rows, args))
    return 0


def say(text: str) -> None:
    print(f"[pedigree] {text}", file=sys.stderr, flush=True)


def key(n: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes([n + 1]) * 32)


def reviewed_copy(plain: Path, target: Path) -> Path:
    """The same docs, with five reviewers declared and devices protected."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(plain.parent / "docs", target / "docs")
    config = yaml.safe_load(plain.read_text())
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "handbook" in plugin:
            plugin["handbook"]["reviews"] = {
                "reviewers": {n: str(public_key_of(key(i))) for i, n in enumerate(REVIEWERS)},
                "required_approvals": 2,
                "protected": {"kinds": ["device"]},
                "horizon": "180d",
                "unapproved": "flag",
            }
    (target / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return target / "mkdocs.yml"


def write_reviews(config: Path, plain_bundle: Path, per_doc: int) -> int:
    """`per_doc` signed reviews of every doc, over the revisions of the plain build (the
    same docs, so the same revisions)."""
    catalog = json.loads((plain_bundle / "catalog.json").read_text())
    folder = config.parent / "reviews"
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(0)
    keys = [key(i) for i in range(len(REVIEWERS))]
    written = 0
    for doc in catalog["docs"]:
        for n in rng.sample(range(len(keys)), min(per_doc, len(keys))):
            revision = doc["revision"] if rng.random() > 0.02 else "0" * 64
            review = Review(
                id="",
                library="synthetic",
                doc=doc["id"],
                revision=revision,
                verdict=rng.choice(VERDICTS),  # type: ignore[arg-type]
                basis="checked against the vendor manual, revision C",
                reviewer=public_key_of(keys[n]).keyid,
                issued_at=NOW - rng.randrange(0, 400) * 86_400,
            )
            write_record(folder, sign(review, keys[n]))
            written += 1
    return written


def bundle_bytes(out: Path) -> int:
    """Every file of the bundle: the manifest, what it lists, and (handbook/v2) the
    content and attached files the catalog vouches for."""
    manifest = json.loads((out / "manifest.json").read_text())
    files = manifest["signed"]["files"]
    addressed = [
        p
        for folder in ("content", "resources")
        if (out / folder).is_dir()
        for p in (out / folder).iterdir()
    ]
    return (
        sum(entry["bytes"] for entry in files.values())
        + sum(p.stat().st_size for p in addressed)
        + (out / "manifest.json").stat().st_size
    )


CHILD = """
import sys, time, json
started = time.perf_counter()
from handbook import Library
library = Library.open(sys.argv[1], allow_unsigned=True, clock=lambda: {now})
library.brief("calibrate the pressure sensor over modbus")
print(json.dumps((time.perf_counter() - started) * 1000))
"""


def cold_start(out: Path, pythonpath: str | None = None) -> float:
    """Open + first brief in a fresh interpreter, median of three; with the runtime on
    `pythonpath` when given."""
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    runs = []
    for _ in range(3):
        child = subprocess.run(
            [sys.executable, "-c", CHILD.format(now=NOW), str(out)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        runs.append(json.loads(child.stdout))
    return statistics.median(runs)


def brief_times(out: Path, tasks: int) -> dict[str, float]:
    library = Library.open(out, allow_unsigned=True, clock=lambda: NOW)
    docs = library.list(limit=100)["docs"]
    rng = random.Random(1)
    titles = [d["title"] for d in docs]
    times = []
    for _ in range(tasks):
        task = f"before servicing: {rng.choice(titles)}, check {rng.choice(titles).lower()}"
        started = time.perf_counter()
        library.brief(task, refs=[rng.choice(docs)["id"]])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "brief_p50_ms": statistics.median(times),
        "brief_p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))],
    }


def report(rows: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    base, with_ = rows["without reviews"], rows["with reviews"]
    lines = [
        f"{args.docs} docs, {args.reviews_per_doc} reviews per doc; {args.tasks} brief calls",
        "",
        "| measure | without reviews | with reviews | ratio |",
        "|---|--:|--:|--:|",
    ]
    for label, key_, fmt in (
        ("build (s)", "build_s", "{:.1f}"),
        ("bundle (MB)", "bundle_bytes", "{:.1f}"),
        ("cold start: open + first brief (ms)", "cold_start_ms", "{:.0f}"),
        ("brief p50 (ms)", "brief_p50_ms", "{:.2f}"),
        ("brief p99 (ms)", "brief_p99_ms", "{:.2f}"),
        ("cold start, other reader (ms)", "other_cold_start_ms", "{:.0f}"),
        ("cold start, this reader again (ms)", "cold_start_again_ms", "{:.0f}"),
    ):
        if key_ not in base:
            continue
        scale = 1e6 if key_ == "bundle_bytes" else 1
        a, b = base[key_] / scale, with_[key_] / scale
        lines.append(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {b / a:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
