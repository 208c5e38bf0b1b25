"""How often `ask` is grounded with the right source first, and how often it says
`insufficient` when the library cannot answer: the held-out questions of
`ask_questions.json` (written before any measurement, not used to tune the thresholds)
over the example libraries, built here into build/bench/ask/.

Usage: python bench/ask_quality.py [--details]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from handbook import Library
from handbook.ask import GROUNDED_COVERAGE, GROUNDED_TOP_COVERAGE
from handbook_build import load_config
from handbook_build.pipeline import build

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="print every question's outcome")
    args = parser.parse_args(argv)
    spec = json.loads((ROOT / "bench" / "ask_questions.json").read_text())
    libraries = {}
    for name, config in spec["libraries"].items():
        out = ROOT / "build" / "bench" / "ask" / name
        build(load_config(ROOT / config), out, None)
        libraries[name] = Library.open(out, allow_unsigned=True)
    answerable = [q for q in spec["questions"] if q["expected"]]
    unanswerable = [q for q in spec["questions"] if not q["expected"]]
    counts = {
        "grounded": 0,
        "right_doc_first": 0,
        "right_section_first": 0,
        "right_doc_in_sources": 0,
    }
    refused = 0
    rows = []
    for q in spec["questions"]:
        answer = libraries[q["library"]].ask(q["question"])
        sources = answer["sources"]
        first = sources[0] if sources else {}
        if q["expected"]:
            doc, section = q["expected"]["doc"], q["expected"]["section"]
            grounded = answer["evidence_state"] == "grounded"
            counts["grounded"] += grounded
            counts["right_doc_first"] += grounded and first.get("document_id") == doc
            counts["right_section_first"] += (
                grounded and first.get("document_id") == doc and first.get("anchor") == section
            )
            counts["right_doc_in_sources"] += any(s["document_id"] == doc for s in sources)
            verdict = "ok" if grounded and first.get("document_id") == doc else "MISS"
        else:
            refused += answer["evidence_state"] == "insufficient"
            verdict = "ok" if answer["evidence_state"] == "insufficient" else "FALSE GROUNDED"
        rows.append(
            (
                verdict,
                answer["evidence_state"],
                answer.get("coverage"),
                f"{first.get('document_id')}#{first.get('anchor')}",
                q["question"],
            )
        )
    n = len(answerable)
    print(
        f"ask on {len(spec['questions'])} held-out questions over {len(libraries)} example libraries "
        f"(thresholds: coverage >= {GROUNDED_COVERAGE}, best passage >= {GROUNDED_TOP_COVERAGE})\n"
    )
    print("| measure | count | share |\n|---|--:|--:|")
    for label, value, total in [
        ("answerable: grounded", counts["grounded"], n),
        ("answerable: grounded, right doc first", counts["right_doc_first"], n),
        ("answerable: grounded, right doc and section first", counts["right_section_first"], n),
        ("answerable: right doc among the sources", counts["right_doc_in_sources"], n),
        ("unanswerable: insufficient", refused, len(unanswerable)),
    ]:
        print(f"| {label} | {value} / {total} | {value / total:.0%} |")
    if args.details:
        print("\n| verdict | state | coverage | first source | question |\n|---|---|--:|---|---|")
        for row in rows:
            print("| " + " | ".join(str(c) for c in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
