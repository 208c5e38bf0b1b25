"""The llms.txt view of a library (in the bundle, and at the site's root), for agents
that read a site rather than a bundle: an H1, a one-line summary, then a link to every
doc's page, grouped by kind.

Every value Handbook writes into it (titles, summaries, kinds, states) is one line of
markdown that reads as written (`_md_line`): a value cannot start a section, close a
link or add one.
"""

from __future__ import annotations

import re
from collections import defaultdict

from handbook.catalog import Catalog, DocEntry

from .config import Config


def llms_txt(catalog: Catalog, config: Config) -> str:
    """The llms.txt view: an H1, a one-line summary, then links grouped by kind."""
    lines = _head(
        catalog,
        "Each link leads to a doc's page; "
        "the signed bundle beside this file holds the same docs as markdown for agents.",
    )
    by_kind: dict[str, list[DocEntry]] = defaultdict(list)
    for doc in catalog.docs:
        by_kind[doc.kind].append(doc)
    for kind in sorted(by_kind):
        lines += [f"## {_md_line(kind)}", ""]
        for doc in sorted(by_kind[kind], key=lambda d: (d.title.lower(), d.id)):
            lines.append(f"- {_link(doc, config)}: {_md_line(doc.summary)}{_note(doc)}")
        lines.append("")
    return "\n".join(lines)


def _head(catalog: Catalog, about: str) -> list[str]:
    lib = catalog.library
    summary = lib.description or f"The {lib.name} knowledge library."
    return [
        f"# {_md_line(lib.title or lib.name)}",
        "",
        f"> {_md_line(summary)}",
        "",
        f"Library `{lib.name}` version {lib.version}, {len(catalog.docs)} docs. {about}",
        "",
    ]


def _link(doc: DocEntry, config: Config) -> str:
    """A link to the doc's page: site-relative, or under `site_url` when there is one."""
    base = config.site_url.rstrip("/") + "/" if config.site_url else ""
    url = base + doc.url.removeprefix("./")
    return f"[{_md_line(doc.title)}]({url or './'})"


def _note(doc: DocEntry) -> str:
    return "" if doc.verified == "verified" else f" ({_md_line(doc.verified)})"


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
