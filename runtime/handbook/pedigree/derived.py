"""A doc's pedigree, derived from its reviews at the moment it is asked for.

Nothing here is stored as truth: the bundle ships the verified review and invalidation
records (`reviews.json`), and every answer derives from them, at the time of the call,

- **confidence**, from the reviewers whose latest verdict on the current revision
  supports it (``approve``, ``corroborate``: S) or disputes it (``contradict``,
  ``reject``: C), disputes weighing double::

      confidence = (S + 1) / (S + 2·C + 2)

  0.5 with no verdict, towards 1 with support, towards 0 with disputes; it only rises
  with S and only falls with C. Each reviewer counts once (their latest verdict), and a
  doc's own owners never count for it;
- **staleness**, the time since the last approval or corroboration of the current
  revision. Contradictions lower confidence and never touch staleness: the two axes move
  apart;
- **suspect**, when the doc's revision changed after its last review (cleared by the
  next review of the new revision), or when an artifact the doc is `about` changed after
  the doc's last review (an invalidation record; cleared by a review issued later);
- **contested**, while a reviewer's latest verdict on the current revision disputes it:
  the contradiction attaches to the doc and is shown with its basis, never edits it.

A doc's state is the first that holds of: retired, contested, suspect, under-approved
(a protected doc with fewer approvals than the policy requires), stale (staleness past
the horizon), unreviewed, reviewed. ``verify_first`` gives the reason an agent should
check before acting: contested, suspect, under-approved, stale, or a confidence below
one half.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..bounds import clip
from ..bundle.catalog import DocEntry
from ..bundle.manifest import utc_time
from .records import AGAINST, SUPPORT, Invalidation, Review, from_dict

CONTRADICTION_WEIGHT = 2
MAX_SHOWN_CONTRADICTIONS = 3
MAX_SHOWN_BASIS = 300
DAY = 86_400


class Policy(NamedTuple):
    """The review policy the library was built with."""

    required_approvals: int = 0
    protected_kinds: tuple[str, ...] = ()
    protected_keywords: tuple[str, ...] = ()
    horizon: int | None = None
    """Seconds after the last approval or corroboration when a doc is stale."""

    def required_of(self, doc: DocEntry) -> int:
        """The approvals `doc` needs: the policy's count if it is protected, else none."""
        keywords = {k.lower() for k in doc.keywords}
        protected = doc.kind in self.protected_kinds or bool(
            keywords & {k.lower() for k in self.protected_keywords}
        )
        return self.required_approvals if protected else 0


class Ledger:
    """The verified records of one bundle, by the doc (id, language) they are about."""

    def __init__(
        self,
        reviewers: Mapping[str, str],
        reviews: Iterable[Review],
        invalidations: Iterable[Invalidation],
        policy: Policy,
    ) -> None:
        self.reviewers, self.policy = dict(reviewers), policy
        self.reviews: dict[tuple[str, str | None], list[Review]] = defaultdict(list)
        for review in reviews:
            self.reviews[(review.doc, review.lang)].append(review)
        self.invalidations: dict[str, list[Invalidation]] = defaultdict(list)
        for record in invalidations:
            self.invalidations[record.about].append(record)

    def name_of(self, key_id: str) -> str:
        return self.reviewers.get(key_id, key_id[:16])

    def of(self, doc: DocEntry) -> Sequence[Review]:
        """The verified reviews of the doc (any revision)."""
        lang = doc.meta.get("lang")
        return self.reviews_of(doc.id, lang if isinstance(lang, str) else None)

    def reviews_of(self, doc_id: str, lang: str | None) -> Sequence[Review]:
        """The reviews of the doc `doc_id` in `lang` (None: a review naming no language)."""
        return self.reviews.get((doc_id, lang), [])

    def invalidations_of(self, about: str) -> Sequence[Invalidation]:
        """The invalidations of the artifact `about`."""
        return self.invalidations.get(about, [])

    def pedigree(self, doc: DocEntry, now: float) -> dict[str, Any]:
        """The doc's pedigree at time `now` (seconds since the epoch), JSON-ready."""
        reviews = self.of(doc)
        owners = {str(o) for o in _listed(doc.meta.get("owners"))}
        current = [r for r in reviews if r.revision == doc.revision]
        latest = _latest_by_reviewer(current)
        counted = {k: r for k, r in latest.items() if self.name_of(k) not in owners}
        support = [r for r in counted.values() if r.verdict in SUPPORT]
        against = sorted((r for r in latest.values() if r.verdict in AGAINST), key=_order)
        approvals = sum(1 for r in counted.values() if r.verdict == "approve")
        confidence = (len(support) + 1) / (len(support) + CONTRADICTION_WEIGHT * len(against) + 2)
        vouched = [
            r.issued_at
            for r in current
            if r.verdict in SUPPORT and self.name_of(r.reviewer) not in owners
        ]
        staleness = int(now) - max(vouched) if vouched else None
        last = max(current or reviews, key=_order, default=None)

        out: dict[str, Any] = {
            "confidence": round(confidence, 2),
            "reviews": len(counted),
            "approvals": approvals,
        }
        required = self.policy.required_of(doc)
        if required:
            out["approvals_required"] = required
        if last is not None:
            out["last_reviewed"] = {
                "at": utc_time(last.issued_at),
                "by": self.name_of(last.reviewer),
                "verdict": last.verdict,
            }
        if staleness is not None:
            out["staleness_days"] = max(0, staleness) // DAY
        if against:
            out["contradictions"] = [self._shown(r) for r in against[-MAX_SHOWN_CONTRADICTIONS:]]
        suspect = self.suspect(doc)
        reasons = {
            "contested": bool(against)
            and f"{len(against)} open contradiction(s): {clip(against[-1].basis, 120)}",
            "suspect": suspect,
            "under_approved": approvals < required
            and f"{approvals} of the {required} approvals it needs",
            "stale": staleness is not None
            and self.policy.horizon is not None
            and staleness > self.policy.horizon
            and f"last re-checked {staleness // DAY} days ago",
        }
        state = next((s for s, why in reasons.items() if why), None)
        out["state"] = state or ("reviewed" if counted else "unreviewed")
        # confidence < 1/2 only when S < 2C, which needs a contradiction: contested covers it
        why = next((str(w) for w in reasons.values() if w), None)
        if why:
            out["verify_first"] = why
        return {**out, **retirement(doc)}

    def suspect(self, doc: DocEntry) -> str:
        """Why the doc is suspect, or "" (a doc never reviewed is unreviewed, not suspect).
        Known apart from the state: a contested doc can be suspect too."""
        reviews = self.of(doc)
        current = [r for r in reviews if r.revision == doc.revision]
        if not reviews:
            return ""
        if not current:
            last = max(reviews, key=_order)
            return f"the doc changed after its last review ({utc_time(last.issued_at)[:10]})"
        reviewed = max(r.issued_at for r in current)
        for about in _listed(doc.meta.get("about")):
            changed = [r.changed_at for r in self.invalidations_of(str(about))]
            if changed and max(changed) > reviewed:
                when = utc_time(max(changed))[:10]
                return f"{about} changed ({when}) after the doc's last review"
        return ""

    def _shown(self, review: Review) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "by": self.name_of(review.reviewer),
            "at": utc_time(review.issued_at),
            "verdict": review.verdict,
            "basis": clip(review.basis, MAX_SHOWN_BASIS),
        }
        if review.section:
            shown["section"] = review.section
        return shown


def is_retired(doc: DocEntry) -> bool:
    return bool(doc.meta.get("retired") or doc.meta.get("superseded_by"))


def retirement(doc: DocEntry) -> dict[str, Any]:
    """A retired doc's state, why to look elsewhere and where, from its frontmatter
    (`retired`, `superseded_by`: a successor retires the doc it supersedes); {} for a
    current doc."""
    if not is_retired(doc):
        return {}
    successor = doc.meta.get("superseded_by")
    successor = successor if isinstance(successor, str) and successor else None
    out: dict[str, Any] = {"state": "retired"}
    reason = doc.meta.get("retired")
    why = "the doc is retired" + (f" ({clip(reason, 120)})" if isinstance(reason, str) else "")
    if successor:
        out["superseded_by"] = successor
        why += f": read {successor} instead"
    out["verify_first"] = why
    return out


def _order(review: Review) -> tuple[int, str]:
    return review.issued_at, review.id


def _latest_by_reviewer(reviews: Iterable[Review]) -> dict[str, Review]:
    latest: dict[str, Review] = {}
    for review in sorted(reviews, key=_order):
        latest[review.reviewer] = review
    return latest


def _listed(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def ledger_of(data: Any) -> Ledger:
    """The ledger of a bundle's `reviews.json` (already verified by the manifest); raises
    ValueError or RecordError when its shape is wrong."""
    if not isinstance(data, dict):
        raise ValueError("reviews.json must be an object")
    reviewers, policy = head_of(data.get("policy", {}), data.get("reviewers", {}))
    records = [from_dict(r) for r in data.get("records", [])]
    return Ledger(
        reviewers,
        [r for r in records if isinstance(r, Review)],
        [r for r in records if isinstance(r, Invalidation)],
        policy,
    )


def head_of(policy: Any, reviewers: Any) -> tuple[dict[str, str], Policy]:
    """The reviewers (key id -> name) and the policy of reviews.json's `reviewers` and
    `policy` values; ValueError when their shape is wrong."""
    if not isinstance(reviewers, dict) or not isinstance(policy, dict):
        raise ValueError("reviews.json: reviewers and policy must be objects")
    return {str(k): str(v) for k, v in reviewers.items()}, Policy(
        int(policy.get("required_approvals", 0)),
        tuple(map(str, policy.get("protected_kinds", ()))),
        tuple(map(str, policy.get("protected_keywords", ()))),
        policy.get("horizon") if isinstance(policy.get("horizon"), int) else None,
    )
