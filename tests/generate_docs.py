"""Regenerate the parts of docs/ that are made from the code: `python tests/generate_docs.py`.

The configuration reference (docs/reference/configuration.md) holds, between two marker
comments, the table of options and a section per option, made from
`handbook_build.config.options.OPTIONS`; the text around the markers is written by hand.
test_docs.py fails when the page and the table differ.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from handbook_build.config.options import OPTIONS

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "reference" / "configuration.md"
BEGIN = (
    "<!-- options: made from handbook_build.config.options.OPTIONS by tests/generate_docs.py -->"
)
END = "<!-- end of options -->"
TYPES = {str: "string", list: "list", dict: "mapping", bool: "boolean"}


def options_markdown() -> str:
    """The table of options, then each option's heading and text, between blank lines
    (so the markers around them stay apart from the markdown)."""
    rows = [
        f"| [`{o.name}`](#{o.name}) | {TYPES[o.type]} | {_default(o.default, o.required)} "
        f"| {o.summary} |"
        for o in OPTIONS
    ]
    table = "\n".join(["| option | type | default | what it is |", "|---|---|---|---|", *rows])
    sections = [f"## {o.name}\n\n{o.doc}" for o in OPTIONS]
    return "\n" + "\n\n".join([table, *sections]) + "\n\n"


def _default(value: Any, required: bool) -> str:
    if required:
        return "required"
    if value is None:
        return "none"
    return f"`{value if isinstance(value, str) else json.dumps(value)}`"


def _span(page: str) -> slice:
    return slice(page.index(BEGIN) + len(BEGIN) + 1, page.index(END))


def generated_part(page: str) -> str:
    """What the page holds between the markers."""
    return page[_span(page)]


def write() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    span = _span(page)
    CONFIGURATION.write_text(page[: span.start] + options_markdown() + page[span.stop :], "utf-8")


if __name__ == "__main__":
    write()
