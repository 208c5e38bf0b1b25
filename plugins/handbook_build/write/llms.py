"""The llms.txt views of a library, for agents that read a site rather than a bundle.

- ``llms.txt`` (in the bundle, and at the site's root): an H1, a one-line summary, then a
  link to every doc's page, grouped by kind.
- ``llms-full.txt`` (at the site's root only, never in the bundle): the same header, then
  every doc in catalog order, its body in full.

Every value Handbook writes into them (titles, summaries, kinds, ids, states) is one line
of markdown that reads as written (`_md_line`): a value cannot start a section, close a
link or add one. A body is the author's markdown, as agents read it from the bundle.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from handbook.bundle.catalog import Catalog, DocEntry
from handbook.bundle.local import Bundle

from ..config.settings import Config
from .pedigree_view import STATES, as_of, bundle_pedigrees, state_name

Pedigrees = Mapping[str, Mapping[str, Any]]
"""Each doc's pedigree as of the build, by source path; empty without reviewers."""

LLMS_FULL = "llms-full.txt"


def llms_txt(catalog: Catalog, config: Config, pedigrees: Pedigrees | None = None) -> str:
    """The llms.txt view: an H1, a one-line summary, then links grouped by kind; for a
    library with reviewers each doc's state as of the build."""
    pedigrees = pedigrees or {}
    lines = _head(
        catalog,
        "Each link leads to a doc's page; "
        "the signed bundle beside this file holds the same docs as markdown for agents.",
        pedigrees,
    )
    by_kind: dict[str, list[DocEntry]] = defaultdict(list)
    for doc in catalog.docs:
        by_kind[doc.kind].append(doc)
    for kind in sorted(by_kind):
        lines += [f"## {_md_line(kind)}", ""]
        for doc in sorted(by_kind[kind], key=lambda d: (d.title.lower(), d.id)):
            note = _note(doc, pedigrees)
            lines.append(f"- {_link(doc, config)}: {_md_line(doc.summary)}{note}")
        lines.append("")
    return "\n".join(lines)


def llms_full_txt(bundle: Bundle, config: Config) -> str:
    """The llms-full.txt view: the header of llms.txt, then for every doc in catalog order
    a rule, a line naming it (id, kind, link to its page, state), its summary, and its body
    as verified in `bundle`."""
    catalog, pedigrees = bundle.catalog, bundle_pedigrees(bundle)
    lines = _head(
        catalog,
        "Every doc follows in full, in catalog order; llms.txt lists them by kind, "
        "and the signed bundle beside this file holds the same docs for agents.",
        pedigrees,
    )
    for doc in catalog.docs:
        body = bundle.read(doc.content).decode("utf-8")
        lines += [
            "---",
            "",
            f"doc {_md_line(doc.id)} · kind {_md_line(doc.kind)} · {_link(doc, config)}"
            f"{_note(doc, pedigrees)}",
            "",
            f"> {_md_line(doc.summary)}",
            "",
            body.rstrip("\n"),
            "",
        ]
    return "\n".join(lines)


def _head(catalog: Catalog, about: str, pedigrees: Pedigrees) -> list[str]:
    lib = catalog.library
    summary = lib.description or f"The {lib.name} knowledge library."
    out = [
        f"# {_md_line(lib.title or lib.name)}",
        "",
        f"> {_md_line(summary)}",
        "",
        f"Library `{lib.name}` version {lib.version}, {len(catalog.docs)} docs. {about}",
        "",
    ]
    if pedigrees:
        states = ", ".join(state_name(s) for s in STATES)
        out += [
            f"After each link, in parentheses: the doc's `verified` field where it is not "
            f"verified (what its author declares), then its pedigree {as_of(lib.built_at)} "
            f"(derived from signed reviews), the first that holds of {states}. The bundle's "
            "tools give each doc's pedigree at the time they are asked.",
            "",
        ]
    return out


def _link(doc: DocEntry, config: Config) -> str:
    """A link to the doc's page: site-relative, or under `site_url` when there is one."""
    base = config.site_url.rstrip("/") + "/" if config.site_url else ""
    url = base + doc.url.removeprefix("./")
    return f"[{_md_line(doc.title)}]({url or './'})"


def _note(doc: DocEntry, pedigrees: Pedigrees) -> str:
    """` (unverified)` for a doc not declared verified; with a pedigree, its state too:
    ` (unverified; pedigree: under approved)`."""
    notes = [] if doc.verified == "verified" else [_md_line(doc.verified)]
    state = pedigrees.get(doc.source, {}).get("state")
    if state:
        notes.append(f"pedigree: {_md_line(state_name(str(state)))}")
    return f" ({'; '.join(notes)})" if notes else ""


_MD_SPECIAL = re.compile(r"[\\`*_\[\]<>#&~]")
"""What can start markdown syntax inside a line: escapes, code, emphasis, links, HTML
and autolinks, heading marks, entities, strikethrough (parentheses only matter after an
unescaped `]`)."""
_LINE_MARK = re.compile(r"^(?:[-+]|\d{1,9}[.)](?= |$))")
"""What begins a list item or a rule (`---`), should a value begin a line: `> 1. x` is a
list in a quote."""


def _md_line(text: str) -> str:
    """`text` as one line of markdown that reads as written: line breaks become spaces,
    syntax characters are backslash-escaped (CommonMark allows it before any ASCII
    punctuation), so the text an agent or a renderer reads is the value itself."""
    line = _MD_SPECIAL.sub(r"\\\g<0>", " ".join(text.split()))
    return _LINE_MARK.sub(lambda mark: f"{mark[0][:-1]}\\{mark[0][-1]}", line)
