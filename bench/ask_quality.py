"""How often `ask` is grounded with the right source first, and how often it says
`insufficient` when the library cannot answer, on question sets: the development sets
`ask_questions.json` (over the example libraries) and `ask_dev_sites.json` (over the real
sites in ../shared/data/real-sites/ that are not held out), on which the grounding
constants are tuned with --sweep, or the held-out set `ask_heldout.json` (over two other
real sites; never tuned on: --sweep refuses it). Real sites are adopted as they stand
from copies. Libraries are built into build/bench/ask/.

Usage: python bench/ask_quality.py [--questions FILE[,FILE]] [--retriever hybrid] [--details]
       python bench/ask_quality.py --sweep [--retriever hybrid]   (development sets only)
With several files, each set is named after its file ("dev_sites:unanswerable").
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from handbook import Library
from handbook.handlers import grounding
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.tasks.adopt_site import adopt_site

ROOT = Path(__file__).resolve().parent.parent
REAL_SITES = ROOT.parent / "shared" / "data" / "real-sites"
OUT = ROOT / "build" / "bench" / "ask"
DEVELOPMENT = ("ask_questions.json", "ask_dev_sites.json")
CONSTANTS = (
    "GROUNDED_TOP_COVERAGE",
    "GROUNDED_COVERAGE",
    "GROUNDED_SIMILARITY",
    "SIMILAR_FLOOR",
    "HEADING_MATCH",
)
GRID = {
    "GROUNDED_TOP_COVERAGE": (0.25, 0.3, 0.35, 0.4, 0.5),
    "GROUNDED_COVERAGE": (0.3, 0.35, 0.4, 0.5),
    "GROUNDED_SIMILARITY": (0.4, 0.45, 0.5, 0.55, 0.6, 0.65),
    "SIMILAR_FLOOR": (0.0, 0.1, 0.2, 0.3),
    "HEADING_MATCH": (0.5, 0.75, 2.0),  # 2.0: no heading reordering
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--questions",
        default=",".join(str(ROOT / "bench" / f) for f in DEVELOPMENT),
        help="question files, comma-separated (default: both development sets)",
    )
    parser.add_argument("--details", action="store_true", help="print every question's outcome")
    parser.add_argument("--retriever", default=None, help="lexical (default), semantic or hybrid")
    parser.add_argument("--sweep", action="store_true", help="calibration on the development set")
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        help="with --sweep: NAME=v1,v2 replaces a row of GRID",
    )
    args = parser.parse_args(argv)
    for item in args.grid:
        name, _, values = item.partition("=")
        GRID[name] = tuple(float(v) for v in values.split(","))
    paths = [Path(p) for p in args.questions.split(",")]
    if args.sweep and any("heldout" in p.name for p in paths):
        parser.error("ask_heldout.json is the held-out set: it is never tuned on")
    spec = _merged(paths)
    vectors = args.retriever not in (None, "lexical")
    libraries, docs = {}, {}
    for name, config in spec["libraries"].items():
        out = OUT / f"{name}-{'vectors' if vectors else 'lexical'}"
        site = _site(name, config, out.name)
        build(dataclasses.replace(load_config(site), semantic=vectors), out, None)
        libraries[name] = Library.open(out, allow_unsigned=True)
        catalog = json.loads((out / "catalog.json").read_text("utf-8"))
        docs[name] = {d.get("source"): d["id"] for d in catalog["docs"]}
    questions = [_normal(q, docs[q["library"]]) for q in spec["questions"]]
    sets = list(dict.fromkeys(q["set"] for q in questions))
    if args.sweep:
        return _sweep(questions, libraries, sets, args.retriever)
    shipped = ", ".join(f"{c} {getattr(grounding, c)}" for c in CONSTANTS)
    print(
        f"ask on {len(questions)} questions of {', '.join(p.name for p in paths)} over "
        f"{len(libraries)} libraries "
        f"(retriever {args.retriever or 'lexical'}; {shipped})\n"
    )
    counts = {s: _Counts() for s in sets}
    for q in questions:
        counts[q["set"]].add(q, _outcome(libraries[q["library"]], q, args.retriever))
    print("| measure | " + " | ".join(f"{s} ({counts[s].total})" for s in sets) + " |")
    print("|---|" + "--:|" * len(sets))
    for label, field, over in _Counts.ROWS:
        cells = [
            f"{getattr(c, field)} / {getattr(c, over)}" + _pct(c, field, over)
            for c in counts.values()
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.details:
        print(
            "\n| set | verdict | state | coverage | first source | question |\n|---|---|---|--:|---|---|"
        )
        for s in sets:
            for row in counts[s].rows:
                print(f"| {s} | " + " | ".join(str(c) for c in row) + " |")
    return 0


def _merged(paths: list[Path]) -> dict[str, Any]:
    """The question files as one: libraries joined (a name in two files is an error), and
    with several files each question's set prefixed by its file's name."""
    libraries: dict[str, str] = {}
    questions: list[dict[str, Any]] = []
    for path in paths:
        spec = json.loads(path.read_text(encoding="utf-8"))
        if clash := set(libraries) & set(spec["libraries"]):
            raise SystemExit(f"{path}: libraries {sorted(clash)} are in another file too")
        libraries |= spec["libraries"]
        prefix = f"{path.stem.removeprefix('ask_')}:" if len(paths) > 1 else ""
        for q in spec["questions"]:
            questions.append({**q, "set": prefix + q.get("set", "original")})
    return {"libraries": libraries, "questions": questions}


def _site(name: str, config: str, copy_name: str) -> Path:
    """The site's configuration: an example of this repository in place, or a real site
    copied (the data is never edited) and adopted as it stands; each build its own copy
    (`copy_name`), so a lexical and a hybrid run may go side by side."""
    if (ROOT / config).exists():
        return ROOT / config
    tree = Path(config).parts[0]
    copy = OUT / "sites" / copy_name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(REAL_SITES / tree, copy / tree)
    site = (copy / config).parent
    adopt_site(site, workflow=False)
    return site


def _normal(q: dict[str, Any], docs: dict[str, str]) -> dict[str, Any]:
    """A question with its set ("original" when unnamed) and expected doc id (the held-out
    set names the page's path in the docs folder; the catalog maps it to its doc)."""
    expected = q.get("expected")
    if expected and "doc" not in expected:
        source = expected["source"]
        if source not in docs:
            raise SystemExit(f"{q['question']!r}: no doc was built from {source}")
        expected = {"doc": docs[source], "section": expected.get("section")}
    return {**q, "set": q.get("set", "original"), "expected": expected}


def _outcome(library: Library, q: dict[str, Any], retriever: str | None) -> dict[str, Any]:
    answer = library.ask(q["question"], retriever=retriever)
    first = answer["sources"][0] if answer["sources"] else {}
    return {
        "grounded": answer["evidence_state"] == "grounded",
        "doc": first.get("document_id"),
        "anchor": first.get("anchor"),
        "docs": [s["document_id"] for s in answer["sources"]],
        "coverage": answer.get("coverage"),
        "state": answer["evidence_state"],
    }


class _Counts:
    ROWS = (
        ("answerable: grounded", "grounded", "answerable"),
        ("answerable: grounded, right doc first", "right", "answerable"),
        ("answerable: grounded, right doc and section first", "section", "answerable"),
        ("answerable: right doc among the sources", "among", "answerable"),
        ("unanswerable: insufficient", "refused", "unanswerable"),
    )

    def __init__(self) -> None:
        self.total = self.answerable = self.unanswerable = 0
        self.grounded = self.right = self.section = self.among = self.refused = 0
        self.rows: list[tuple[Any, ...]] = []

    def add(self, q: dict[str, Any], out: dict[str, Any]) -> None:
        self.total += 1
        expected, grounded = q["expected"], out["grounded"]
        if expected:
            right = out["doc"] == expected["doc"]
            self.answerable += 1
            self.grounded += grounded
            self.right += grounded and right
            self.section += grounded and right and out["anchor"] == expected["section"]
            self.among += expected["doc"] in out["docs"]
            verdict = "ok" if grounded and right else "MISS"
        else:
            self.unanswerable += 1
            self.refused += not grounded
            verdict = "FALSE GROUNDED" if grounded else "ok"
        where = f"{out['doc']}#{out['anchor']}"
        self.rows.append((verdict, out["state"], out["coverage"], where, q["question"]))


def _pct(counts: _Counts, field: str, over: str) -> str:
    total = getattr(counts, over)
    return f" ({getattr(counts, field) / total:.0%})" if total else ""


def _sweep(
    questions: list[dict[str, Any]],
    libraries: dict[str, Library],
    sets: list[str],
    retriever: str | None,
) -> int:
    """Every combination of GRID, scored on the development set: the best by mean right-doc-
    first rate over the sets, among those refusing at least 90% of unanswerable questions
    in every set. Questions run outermost, so each is embedded once."""
    names = [c for c in CONSTANTS if retriever not in (None, "lexical") or "SIMILAR" not in c]
    combos = list(itertools.product(*(GRID[c] for c in names)))
    grounding.evidence = _hashable(grounding.evidence)
    tallies = [{s: _Counts() for s in sets} for _ in combos]
    shipped = {c: getattr(grounding, c) for c in CONSTANTS}
    for q in questions:
        for combo, tally in zip(combos, tallies, strict=True):
            for c, value in zip(names, combo, strict=True):
                setattr(grounding, c, value)
            tally[q["set"]].add(q, _outcome(libraries[q["library"]], q, retriever))
    for c, value in shipped.items():
        setattr(grounding, c, value)
    scored = []
    for combo, tally in zip(combos, tallies, strict=True):
        refusal = min(c.refused / c.unanswerable for c in tally.values() if c.unanswerable)
        answerable = [c.right / c.answerable for c in tally.values() if c.answerable]
        right = sum(answerable) / len(answerable)
        scored.append((refusal >= 0.9, right, refusal, combo, tally))
    scored.sort(key=lambda s: (-s[0], -s[1], -s[2]))
    print("| " + " | ".join(names) + " | " + " | ".join(sets) + " | mean right first |")
    print("|" + "--:|" * (len(names) + len(sets) + 1))
    for ok, right, _, combo, tally in scored[:15]:
        cells = [
            f"{c.right}/{c.answerable} first, {c.refused}/{c.unanswerable} refused"
            for c in tally.values()
        ]
        print(
            f"| {' | '.join(map(str, combo))} | {' | '.join(cells)} | {right:.3f}{'' if ok else ' (refuses < 90%)'} |"
        )
    return 0


def _hashable(function: Any) -> Any:
    """`grounding.evidence` keyed by what it depends on (weights and matcher by the terms)."""
    cache: dict[Any, Any] = {}

    def wrapped(
        snap: Any, hit: Any, entry: int, weights: Any, matched: Any, similarity: Any
    ) -> Any:
        key = (id(snap), entry, tuple(weights.items()), similarity)
        if key not in cache:
            cache[key] = function(snap, hit, entry, weights, matched, similarity)
        return cache[key]

    return wrapped


if __name__ == "__main__":
    sys.exit(main())
