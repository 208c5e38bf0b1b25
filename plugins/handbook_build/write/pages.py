"""What the site shows people beyond the markdown: a header card on every doc page and
a catalog page. Both are made from the verified catalog of the bundle just built, so
the site can never describe a doc differently from what agents load. And where each
doc's page is: the catalog records it, so agents can link people to it.

Plain functions from catalog records to HTML or markdown; the MkDocs adapter decides
where they go. Every value is escaped here, for where it goes: the card is raw HTML
inside markdown; the catalog page is markdown, in which any ASCII punctuation may be
syntax (of markdown or of one of its extensions); and a page's frontmatter reaches
MkDocs already HTML-escaped, because MkDocs and Material print a page's title and
metadata into the page as they are (`<title>`, nav, meta tags, search). Doc authors
write markdown, with its raw HTML, in the body; their frontmatter is text.
"""

from __future__ import annotations

import posixpath
import string
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

import yaml

from handbook.bundle.catalog import DocEntry, LibraryInfo

from .pedigree_view import STATES, as_of, sentence, state_name

CSS_PATH = "assets/handbook/handbook.css"
CATALOG_PAGE = "catalog.md"
BADGE_TEXT = {"verified": "verified", "field_tested": "field tested", "unverified": "unverified"}
DISPUTED = frozenset({"contested", "suspect"})
"""Derived states that contradict a declared `verified` or `field_tested`."""

CSS = """\
/* Handbook: doc header cards and the catalog. Colours come from Material's palette
   variables, so light and dark schemes both work. */
.hb-card {
  border: 1px solid var(--md-default-fg-color--lightest);
  border-radius: 0.4rem;
  padding: 0.6rem 0.9rem;
  margin: 0 0 1.2rem;
  background: var(--md-code-bg-color);
  font-size: 0.75rem;
}
.md-typeset .hb-card__head { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin: 0; }
.hb-kind {
  text-transform: uppercase; letter-spacing: 0.04em; font-weight: 700;
  color: var(--md-primary-fg-color);
}
.hb-id { font-family: var(--md-code-font-family); }
.hb-copy {
  cursor: pointer; border: 1px solid var(--md-default-fg-color--lighter);
  border-radius: 0.2rem; background: transparent; color: var(--md-default-fg-color--light);
  font-size: 0.65rem; padding: 0 0.35rem;
}
.hb-copy:hover { color: var(--md-accent-fg-color); border-color: var(--md-accent-fg-color); }
.hb-badge {
  display: inline-block; border-radius: 1rem; padding: 0 0.55rem; font-weight: 700;
  font-size: 0.65rem; color: #fff;
}
.hb-badge--verified { background: #2e7d32; }
.hb-badge--field_tested { background: #1565c0; }
.hb-badge--unverified { background: #b26a00; }
.md-typeset .hb-facts { display: flex; flex-wrap: wrap; gap: 0.2rem 1.2rem; margin: 0.4rem 0 0; }
.md-typeset .hb-facts div { display: flex; gap: 0.4rem; }
.md-typeset .hb-facts dt { color: var(--md-default-fg-color--light); font-weight: normal; margin: 0; }
.md-typeset .hb-facts dd { margin: 0; }
.md-typeset .hb-summary { margin: 0.4rem 0 0; }
.md-typeset .hb-pedigree { margin: 0.4rem 0 0; font-size: 0.7rem; padding-left: 0.5rem;
  border-left: 0.2rem solid #2e7d32; }
.md-typeset .hb-pedigree--unreviewed, .md-typeset .hb-pedigree--stale,
.md-typeset .hb-pedigree--under_approved { border-left-color: #b26a00; }
.md-typeset .hb-pedigree--suspect, .md-typeset .hb-pedigree--contested,
.md-typeset .hb-pedigree--retired { border-left-color: #c62828; }
.md-typeset .hb-keywords { margin: 0.3rem 0 0; color: var(--md-default-fg-color--light); }
.md-typeset .hb-keywords span { margin-right: 0.3rem; }
.md-typeset .hb-links { margin: 0.3rem 0 0; font-size: 0.65rem; }
.hb-state { font-weight: 700; white-space: nowrap; }
.hb-state--reviewed { color: #2e7d32; }
.hb-state--unreviewed, .hb-state--stale, .hb-state--under_approved { color: #b26a00; }
.hb-state--suspect, .hb-state--contested, .hb-state--retired { color: #c62828; }
.md-typeset .hb-disagree { color: #c62828; font-size: 0.65rem; }
.md-typeset .hb-as-of { color: var(--md-default-fg-color--light); font-size: 0.7rem; }
.md-typeset .hb-chart svg { max-width: 100%; height: auto; font-family: var(--md-text-font-family); }
.hb-chart .hb-bar--reviewed { fill: #2e7d32; }
.hb-chart .hb-bar--unreviewed, .hb-chart .hb-bar--stale, .hb-chart .hb-bar--under_approved { fill: #b26a00; }
.hb-chart .hb-bar--suspect, .hb-chart .hb-bar--contested, .hb-chart .hb-bar--retired { fill: #c62828; }
.hb-chart .hb-bar--past { fill: #c62828; }
.hb-chart .hb-bar--within { fill: #2e7d32; }
.hb-chart text { fill: var(--md-default-fg-color); font-size: 12px; }
.hb-chart .hb-horizon { stroke: var(--md-default-fg-color--light); stroke-dasharray: 4 3; }
"""

COPY_SCRIPT = (
    "navigator.clipboard&&navigator.clipboard.writeText(this.dataset.copy)"
    ".then(()=>{this.textContent='copied';setTimeout(()=>{this.textContent='copy id'},1500)})"
)


def badge(state: str) -> str:
    """The verified state as a coloured badge."""
    known = state if state in BADGE_TEXT else "unverified"
    return (
        f'<span class="hb-badge hb-badge--{known}" title="verified: {escape(state)}">'
        f"{escape(BADGE_TEXT.get(state, state))}</span>"
    )


def pedigree_line(pedigree: dict[str, Any], built_at: str) -> str:
    """The card's line on who vouched for the doc, as of the build at `built_at`, escaped
    like every value."""
    state = str(pedigree.get("state", ""))
    facts = [state_name(state), f"confidence {pedigree.get('confidence', '')}"]
    if "approvals_required" in pedigree:
        facts.append(f"{pedigree.get('approvals')} of {pedigree['approvals_required']} approvals")
    last = pedigree.get("last_reviewed")
    if isinstance(last, dict):
        facts.append(f"last reviewed {str(last.get('at', ''))[:10]} by {last.get('by')}")
    if "verify_first" in pedigree:
        facts.append(f"verify first: {pedigree['verify_first']}")
    known = state if state in STATES else "unreviewed"
    return (
        f'<p class="hb-pedigree hb-pedigree--{known}" data-search-exclude>'
        f"{escape(' · '.join(facts))} <small>({escape(as_of(built_at))})</small></p>"
    )


def header_card(
    doc: DocEntry, library: LibraryInfo, raw_url: str, pedigree: dict[str, Any] | None = None
) -> str:
    """The card a doc page opens with. `raw_url` is the page's link to its markdown;
    `pedigree` the doc's as of the build, for a library with reviewers."""
    facts = [(name, doc.meta.get(name)) for name in ("version", "effective_date")]
    facts += [
        (name, doc.meta.get(name))
        for name in library.list_fields
        if name not in ("version", "effective_date")
    ]
    shown = "".join(
        f"<div><dt>{escape(name.replace('_', ' '))}</dt><dd>{escape(_text(value))}</dd></div>"
        for name, value in facts
        if value not in (None, "", [])
    )
    words = [*doc.keywords, *doc.aliases]
    # Material's search skips elements marked data-search-exclude (up to the first
    # closing tag of the same name, so nothing marked nests its own tag): the head and
    # the facts are left out, the summary and the keywords are found by search.
    parts = [
        f'<div class="hb-card" data-doc-id="{escape(doc.id)}">',
        '<p class="hb-card__head" data-search-exclude>',
        f'<span class="hb-kind">{escape(doc.kind)}</span>',
        f'<code class="hb-id">{escape(doc.id)}</code>',
        f'<button type="button" class="hb-copy" data-copy="{escape(doc.id)}" '
        f'title="Copy the doc id" onclick="{escape(COPY_SCRIPT)}">copy id</button>',
        badge(doc.verified),
        "</p>",
        f'<dl class="hb-facts" data-search-exclude>{shown}</dl>' if shown else "",
        pedigree_line(pedigree, library.built_at) if pedigree else "",
        f'<p class="hb-summary">{escape(doc.summary)}</p>',
        f'<p class="hb-keywords"><span>keywords</span> {escape(", ".join(words))}</p>'
        if words
        else "",
        f'<p class="hb-links" data-search-exclude><a href="{escape(raw_url)}" '
        'type="text/markdown">raw markdown</a>'
        f" · revision <code>{escape(doc.revision[:12])}</code></p>",
        "</div>",
    ]
    return "\n".join(part for part in parts if part)


def insert_card(markdown: str, card: str) -> str:
    """The page's markdown with the card right after its `# ` title (or first)."""
    lines = markdown.split("\n")
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        if line.startswith("# "):
            return "\n".join([*lines[: n + 1], "", card, "", *lines[n + 1 :]])
        break
    return f"{card}\n\n{markdown}"


def catalog_markdown(
    library: LibraryInfo,
    docs: Sequence[DocEntry],
    pedigrees: Mapping[str, Mapping[str, Any]] | None = None,
    queue_page: str | None = None,
) -> str:
    """The catalog page: every doc grouped by kind (in the vocabulary's order), with its
    summary and declared verified state; with `pedigrees` (by source path, as of the
    build: a library with reviewers) also each doc's derived state, confidence and last
    review, and a note where the two disagree. Links are to the docs' source files (and
    `queue_page`), which MkDocs resolves and checks like any other link. Every value is
    text (`md_text`), every link target a percent-encoded path."""
    kinds = list(library.vocab.get("kind", ()))
    kinds += sorted({d.kind for d in docs} - set(kinds))
    out = [
        "---",
        "title: Catalog",
        "hide: [toc]",
        "search:",
        "  exclude: true",  # Material's search: every doc already has its own page
        "---",
        "",
        "# Catalog",
        "",
        f"{len(docs)} docs in **{md_text(library.title or library.name)}** {md_text(library.version)}. "
        "Agents load the same docs from the signed bundle ([llms.txt](llms.txt)).",
    ]
    if pedigrees:
        out += ["", *_pedigree_intro(library, docs, pedigrees, queue_page)]
    head = "| doc | id | summary | state |"
    if pedigrees:
        head = "| doc | id | summary | declared | pedigree | confidence | last reviewed |"
    for kind in kinds:
        members = sorted(
            (d for d in docs if d.kind == kind), key=lambda d: (d.title.casefold(), d.id)
        )
        if not members:
            continue
        out += ["", f"## {md_text(kind)}", "", head, "|---" * head.count(" | ") + "|---|"]
        for doc in members:
            row = (
                f"| [{md_text(doc.title)}]({quote(doc.source)}) | <code>{md_text(doc.id)}</code> "
                f"| {md_text(doc.summary)} | {badge(doc.verified)} |"
            )
            if pedigrees:
                row += _pedigree_cells(doc, pedigrees.get(doc.source, {}))
            out.append(row)
    return "\n".join(out) + "\n"


def _pedigree_intro(
    library: LibraryInfo,
    docs: Sequence[DocEntry],
    pedigrees: Mapping[str, Mapping[str, Any]],
    queue_page: str | None,
) -> list[str]:
    """What the catalog of a library with reviewers says before its tables: when, what
    the two columns mean, and how many docs are in each state."""
    states = [str(pedigrees.get(d.source, {}).get("state")) for d in docs]
    counted = " · ".join(f"{states.count(s)} {state_name(s)}" for s in STATES if s in states)
    queue = ""
    if queue_page:
        queue = f" The [review queue]({quote(queue_page)}) lists what needs a reviewer."
    return [
        f'<p class="hb-as-of">{md_text(sentence(as_of(library.built_at)))}</p>',
        "",
        "**Declared** is the `verified` field the doc's author wrote in its frontmatter: "
        "what the author claims.",
        "**Pedigree** is the state derived from the library's signed reviews when the site "
        "was built: what reviewers vouched for, the first that holds of "
        f"{', '.join(state_name(s) for s in STATES)}.{queue}",
        "",
        f"States: {counted}.",
    ]


def _pedigree_cells(doc: DocEntry, pedigree: Mapping[str, Any]) -> str:
    """A catalog row's pedigree cells: the state (and whether the declared state says
    otherwise), the confidence, and the last review, when and by whom."""
    state = str(pedigree.get("state", ""))
    known = state if state in STATES else "unreviewed"
    cell = f'<span class="hb-state hb-state--{known}">{md_text(state_name(state))}</span>'
    if doc.verified in ("verified", "field_tested") and state in DISPUTED:
        cell += (
            f'<br><strong class="hb-disagree">declared {md_text(BADGE_TEXT[doc.verified])}, '
            f"but {md_text(state_name(state))}</strong>"
        )
    last = pedigree.get("last_reviewed")
    when = ""
    if isinstance(last, Mapping):
        when = md_text(
            f"{str(last.get('at', ''))[:10]} by {last.get('by', '')} ({last.get('verdict', '')})"
        )
    return f" {cell} | {md_text(str(pedigree.get('confidence', '')))} | {when or 'never'} |"


def page_url(path: str, use_directory_urls: bool) -> str:
    """The site URL of the page rendered from the doc at `path` (POSIX, relative to the
    docs root), exactly as MkDocs' `File.url` makes it, without importing MkDocs:
    `README.md` stands for its folder's `index.md`; `a/b.md` is `a/b/` with directory
    URLs and `a/b.html` without; the result is percent-encoded UTF-8."""
    folder, name = posixpath.split(path)
    stem = posixpath.splitext(name)[0]
    stem = "index" if stem == "README" else stem
    if not use_directory_urls:
        return quote(posixpath.join(folder, f"{stem}.html"))
    if stem == "index":
        return quote(f"{folder or '.'}/")
    return quote(f"{posixpath.join(folder, stem)}/")


def raw_url(doc: DocEntry, page_url: str) -> str:
    """The link from a page at `page_url` (site-relative) to the doc's content file in
    the site's copy of the bundle."""
    folder = (
        page_url.rstrip("/")
        if page_url.endswith("/") or not page_url
        else posixpath.dirname(page_url)
    )
    return posixpath.relpath(f"bundle/{doc.content}", folder or ".")


def by_source(docs: Iterable[DocEntry]) -> dict[str, DocEntry]:
    return {doc.source: doc for doc in docs}


def frontmatter(doc: DocEntry) -> dict[str, Any]:
    """The doc's fields as the bundle holds them: what its page is made from."""
    fields: dict[str, Any] = {
        "id": doc.id,
        "title": doc.title,
        "kind": doc.kind,
        "summary": doc.summary,
        "verified": doc.verified,
    }
    if doc.keywords:
        fields["keywords"] = list(doc.keywords)
    if doc.aliases:
        fields["aliases"] = list(doc.aliases)
    return {**fields, **doc.meta}


def escaped(value: Any) -> Any:
    """`value` with every string in it, keys included, HTML-escaped (quotes too): what
    a theme may print into text or an attribute as it is."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, Mapping):
        return {escaped(key): escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped(item) for item in value]
    return value


def page_source(meta: Mapping[str, Any], markdown: str) -> str:
    """A page's source for MkDocs to read: `meta` as YAML frontmatter, then `markdown`.
    PyYAML's dump loads back as it was, and never has a line that is `---` or `...`
    alone, so MkDocs' frontmatter reader ends the block where it ends."""
    header = yaml.safe_dump(dict(meta), sort_keys=False)
    return f"---\n{header}---\n{markdown}"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def md_text(text: str) -> str:
    """`text` shown as it is in a markdown table cell: on one line, with every ASCII
    punctuation character as a numeric entity, since any of them may start syntax
    (`[`, `(` and `]` a link, `|` a cell, `<` HTML, `{` attributes, `:` an emoji)."""
    return "".join(f"&#{ord(c)};" if c in _PUNCTUATION else c for c in " ".join(text.split()))


_PUNCTUATION = frozenset(string.punctuation)
