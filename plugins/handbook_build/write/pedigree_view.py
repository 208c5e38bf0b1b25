"""One vocabulary for pedigree wherever people read it: the doc card, the catalog page,
the review-queue page, `llms.txt` and `handbook reviews` name the runtime's states
(`handbook.pedigree.derived`) in the runtime's order, shown with spaces ("under
approved"), and work the queue out with the same function. The agent contract (the
pedigree in JSON answers) keeps the names as they are (`under_approved`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from handbook.answers import PEDIGREE_STATES
from handbook.bundle.catalog import Catalog, DocEntry
from handbook.bundle.layout import REVIEWS
from handbook.bundle.local import Bundle
from handbook.bundle.manifest import utc_seconds
from handbook.pedigree.derived import Ledger, ledger_of
from handbook.pedigree.records import Record

from ..checks import reviews
from ..config.options import ReviewSettings

STATES = PEDIGREE_STATES
"""The runtime's states, worst first: a doc's state is the first of them that holds."""
QUEUE_STATES = STATES[1:-1]
"""The states that need a reviewer now (a retired doc needs none, a reviewed doc is done)."""
UNREVIEWED_REASON = "no review of its current revision"


def state_name(state: str) -> str:
    """A state as people read it: the runtime's name with spaces."""
    return state.replace("_", " ")


def pedigrees_at(ledger: Ledger, docs: Iterable[DocEntry], now: float) -> dict[str, dict[str, Any]]:
    """Each doc's pedigree at `now`, by its source path (unique, where ids repeat per lang)."""
    return {doc.source: ledger.pedigree(doc, now) for doc in docs}


def bundle_pedigrees(bundle: Bundle) -> dict[str, dict[str, Any]]:
    """Each doc's pedigree (by source path) as of the bundle's build; {} for a library
    without reviewers. Agents get theirs derived at the time they ask."""
    if REVIEWS not in bundle.manifest.signed.files:
        return {}
    ledger = ledger_of(json.loads(bundle.read(REVIEWS)))
    now = utc_seconds(bundle.manifest.signed.built_at) or 0
    return pedigrees_at(ledger, bundle.catalog.docs, now)


def records_pedigrees(
    settings: ReviewSettings | None, records: Sequence[Record], catalog: Catalog
) -> dict[str, dict[str, Any]]:
    """Each doc's pedigree (by source path) as of the catalog's build, from the verified
    `records` while the bundle is written; {} for a library without reviewers."""
    if settings is None:
        return {}
    now = utc_seconds(catalog.library.built_at) or 0
    return pedigrees_at(reviews.ledger_of(settings, records), catalog.docs, now)


def horizon_days(bundle: Bundle) -> int | None:
    """The policy's staleness horizon in whole days, None without one (or without reviews)."""
    if REVIEWS not in bundle.manifest.signed.files:
        return None
    horizon = ledger_of(json.loads(bundle.read(REVIEWS))).policy.horizon
    return None if horizon is None else horizon // 86_400


def queue(items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The review queue of `(id, path, pedigree)` items: the docs whose state needs a
    reviewer, most urgent first (by state, then id), each as `{id, path, **pedigree}`."""
    out = [
        {"id": doc_id, "path": path, **pedigree}
        for doc_id, path, pedigree in items
        if pedigree.get("state") in QUEUE_STATES
    ]
    out.sort(key=lambda item: (QUEUE_STATES.index(item["state"]), item["id"]))
    return out


def reason(item: Mapping[str, Any]) -> str:
    """Why a queued doc needs a reviewer: its `verify_first`, or for an unreviewed doc
    that nobody reviewed its current revision."""
    return str(item.get("verify_first") or UNREVIEWED_REASON)


def summary(queue: Iterable[Mapping[str, Any]], docs: int) -> str:
    """ "8 docs: 1 contested, 2 suspect, …" in the states' order."""
    states = [item["state"] for item in queue]
    counted = ", ".join(
        f"{states.count(s)} {state_name(s)}" for s in QUEUE_STATES if states.count(s)
    )
    return f"{docs} docs: {counted or 'nothing to review'}"


def as_of(built_at: str) -> str:
    """ "as of the build, 2026-12-01 00:00 UTC": what every page with pedigree says, the
    time being the bundle's `built_at` (`SOURCE_DATE_EPOCH` when set)."""
    return f"as of the build, {built_at[:10]} {built_at[11:16]} UTC".rstrip()


def sentence(text: str) -> str:
    """`text` as a sentence: its first letter upper case, a full stop at the end."""
    return text[:1].upper() + text[1:] + "."
