"""How often `ask` is grounded with the right source first, and how often it says
`insufficient` when the library cannot answer: the held-out questions of
`ask_questions.json` (written before any measurement, not used to tune the thresholds)
over the example libraries, built here into build/bench/ask/.

Usage: python bench/ask_quality.py [--details]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from handbook import Library
from handbook.handlers import ask
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="print every question's outcome")
    parser.add_argument("--retriever", default=None, help="lexical (default), semantic or hybrid")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="calibration: rates for a grid of thresholds instead of the shipped ones",
    )
    args = parser.parse_args(argv)
    spec = json.loads((ROOT / "bench" / "ask_questions.json").read_text())
    libraries = {}
    vectors = args.retriever not in (None, "lexical")  # the example configs build none
    for name, config in spec["libraries"].items():
        out = ROOT / "build" / "bench" / "ask" / name
        build(dataclasses.replace(load_config(ROOT / config), semantic=vectors), out, None)
        libraries[name] = Library.open(out, allow_unsigned=True)
    if args.sweep:
        for coverage in (0.5, 0.6, 0.65, 0.7, 0.75, 0.8):
            for top in (0.3, 0.4, 0.5, 0.6):
                ask.GROUNDED_COVERAGE, ask.GROUNDED_TOP_COVERAGE = coverage, top
                rates = [_rates(spec, libraries, s, args.retriever)[0] for s in SETS]
                cells = " | ".join(f"{r[1]}/{r[0]} first, {r[3]}/{r[2]} refused" for r in rates)
                print(f"| {coverage} | {top} | {cells} |")
        return 0
    print(
        f"ask on {len(spec['questions'])} held-out questions over {len(libraries)} example "
        f"libraries (thresholds: weighted coverage >= {ask.GROUNDED_COVERAGE}, best passage >= "
        f"{ask.GROUNDED_TOP_COVERAGE}; retriever {args.retriever or 'lexical'})\n"
    )
    print("| measure | " + " | ".join(SETS) + " |\n|---|" + "--:|" * len(SETS))
    results = [_rates(spec, libraries, s, args.retriever) for s in SETS]
    labels = [
        "answerable: grounded",
        "answerable: grounded, right doc first",
        "answerable: grounded, right doc and section first",
        "answerable: right doc among the sources",
        "unanswerable: insufficient",
    ]
    for i, label in enumerate(labels):
        cells = []
        for (n, _, m, _), counts, _ in results:
            value, total = counts[i], (m if i == 4 else n)
            cells.append(f"{value} / {total} ({value / max(total, 1):.0%})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    if args.details:
        print("\n| set | verdict | state | coverage | first source | question |")
        print("|---|---|---|--:|---|---|")
        for name, (_, _, rows) in zip(SETS, results, strict=True):
            for row in rows:
                print(f"| {name} | " + " | ".join(str(c) for c in row) + " |")
    return 0


SETS = ("original", "paraphrased")


def _rates(
    spec: dict[str, Any], libraries: dict[str, Library], name: str, retriever: str | None
) -> tuple[tuple[int, int, int, int], list[int], list[tuple[Any, ...]]]:
    """((answerable, right doc first, unanswerable, refused), the five counts, rows)."""
    questions = [q for q in spec["questions"] if q.get("set", "original") == name]
    counts = [0, 0, 0, 0, 0]
    rows = []
    for q in questions:
        answer = libraries[q["library"]].ask(q["question"], retriever=retriever)
        sources = answer["sources"]
        first = sources[0] if sources else {}
        grounded = answer["evidence_state"] == "grounded"
        if q["expected"]:
            doc, section = q["expected"]["doc"], q["expected"]["section"]
            right = first.get("document_id") == doc
            counts[0] += grounded
            counts[1] += grounded and right
            counts[2] += grounded and right and first.get("anchor") == section
            counts[3] += any(s["document_id"] == doc for s in sources)
            verdict = "ok" if grounded and right else "MISS"
        else:
            counts[4] += not grounded
            verdict = "FALSE GROUNDED" if grounded else "ok"
        where = f"{first.get('document_id')}#{first.get('anchor')}"
        rows.append(
            (verdict, answer["evidence_state"], answer.get("coverage"), where, q["question"])
        )
    answerable = sum(1 for q in questions if q["expected"])
    summary = (answerable, counts[1], len(questions) - answerable, counts[4])
    return summary, counts, rows


if __name__ == "__main__":
    sys.exit(main())
