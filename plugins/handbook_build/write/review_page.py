"""The review-queue page of a library with reviewers: what `handbook reviews` lists,
worked out by the same function (`pedigree_view.queue`) as of the build, for a doc owner
who opens the site rather than a terminal: worst first, with owners and the reason, then
two pictures (`charts`): docs per state, and how long since each doc was last confirmed
against the horizon.

The page is markdown for MkDocs, like the catalog: the table's values are text
(`pages.md_text`), its links the docs' source files, which MkDocs resolves and checks;
the charts are raw HTML blocks of escaped SVG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from handbook.bundle.catalog import DocEntry, LibraryInfo

from .charts import staleness_chart, states_chart
from .pages import md_text
from .pedigree_view import STATES, as_of, queue, reason, sentence, state_name, summary

QUEUE_PAGE = "reviews.md"
QUEUE_URLS = (QUEUE_PAGE, "reviews/index.md", "reviews/README.md")
"""Pages of a site that would have the queue page's URL: any of them keeps it out."""


def queue_markdown(
    library: LibraryInfo,
    docs: Sequence[DocEntry],
    pedigrees: Mapping[str, Mapping[str, Any]],
    horizon: int | None,
    catalog_page: str | None = "catalog.md",
) -> str:
    """The review-queue page of `docs` with their `pedigrees` (by source path) as of the
    build, the policy's `horizon` in days (None: nothing goes stale)."""
    by_source = {doc.source: doc for doc in docs}
    queued = queue((d.id, d.source, pedigrees.get(d.source, {})) for d in docs)
    catalog = f" The [catalog]({quote(catalog_page)}) shows every doc." if catalog_page else ""
    out = [
        "---",
        "title: Review queue",
        "hide: [toc]",
        "search:",
        "  exclude: true",
        "---",
        "",
        "# Review queue",
        "",
        f'<p class="hb-as-of">{md_text(sentence(as_of(library.built_at)))} '
        "<code>handbook reviews</code> works the queue out at the time it runs.</p>",
        "",
        f"{md_text(sentence(summary(queued, len(docs))))} Worst first: a doc's state is the "
        f"first that holds of {', '.join(state_name(s) for s in STATES)}.{catalog}",
        "",
    ]
    if queued:
        out += ["| state | doc | owners | why | last reviewed |", "|---|---|---|---|---|"]
        out += [_row(item, by_source[item["path"]]) for item in queued]
    else:
        out.append("Nothing needs a reviewer.")
    out += ["", *_charts(docs, pedigrees, horizon)]
    return "\n".join(out) + "\n"


def _charts(
    docs: Sequence[DocEntry], pedigrees: Mapping[str, Mapping[str, Any]], horizon: int | None
) -> list[str]:
    """The page's two pictures, each under its heading: docs per state, and the days
    since each doc that is not retired was last confirmed."""
    counts = {s: 0 for s in STATES}
    for doc in docs:
        state = str(pedigrees.get(doc.source, {}).get("state"))
        counts[state] = counts.get(state, 0) + 1
    ages = [
        (doc.id, pedigrees.get(doc.source, {}).get("staleness_days"))
        for doc in docs
        if pedigrees.get(doc.source, {}).get("state") != "retired"
    ]
    stale = (
        f"A doc is stale once that is more than {horizon} days ago (the dashed line)."
        if horizon is not None
        else "The library sets no horizon, so no doc goes stale."
    )
    return [
        "## Docs per state",
        "",
        _figure(states_chart(counts), "Docs per state, worst first."),
        "",
        "## Since each doc was last confirmed",
        "",
        "Confirmed: approved or corroborated, in its current revision, by a reviewer who "
        f"does not own the doc. {stale}",
        "",
        _figure(staleness_chart(ages, horizon), "Days since each doc was last confirmed."),
    ]


def _row(item: Mapping[str, Any], doc: DocEntry) -> str:
    """One queued doc: state, link and id, owners, the reason, the last review."""
    state = str(item["state"])
    owners = doc.meta.get("owners")
    names = ", ".join(map(str, owners)) if isinstance(owners, list) else ""
    last = item.get("last_reviewed")
    when = (
        f"{str(last.get('at', ''))[:10]} by {last.get('by', '')} ({last.get('verdict', '')})"
        if isinstance(last, Mapping)
        else "never"
    )
    return (
        f'| <span class="hb-state hb-state--{state}">{md_text(state_name(state))}</span> '
        f"| [{md_text(doc.title)}]({quote(doc.source)}) <code>{md_text(doc.id)}</code> "
        f"| {md_text(names) or 'none named'} | {md_text(reason(item))} | {md_text(when)} |"
    )


def _figure(svg: str, caption: str) -> str:
    """A chart as one raw HTML block (no blank line inside, so markdown leaves it be)."""
    return f'<figure class="hb-chart">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
