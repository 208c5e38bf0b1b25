"""The shapes of the answers agents get: plain JSON-ready dicts, typed.

Every handler returns one of these and never raises. Keys are optional (``total=False``)
because an answer that refuses (``error``) or misses (``found: false``) carries another
subset of them; the tool table's output schemas (`handbook.tools.table`) say which keys a
successful answer always has, and a test keeps the two in step. Every answer may carry
the envelope keys of `Answer`.
"""

from __future__ import annotations

from typing import Any, TypedDict


class _ErrorRequired(TypedDict):
    code: str
    message: str


class ErrorInfo(_ErrorRequired, total=False):
    """Why a call was refused: a stable `code` to branch on and a message saying what to do."""

    field: str
    """The argument at fault, where one is (the write tools)."""


class Answer(TypedDict, total=False):
    """The envelope every answer shares."""

    error: ErrorInfo
    hint: str
    truncated: bool
    """Something was left out to stay within the operator's `max_response_chars`."""
    response_chars: int
    """The size of this answer as JSON, itself included."""


class SectionInfo(TypedDict):
    title: str
    anchor: str
    chars: int


class SubsectionInfo(TypedDict):
    """A `###` (or deeper) heading a doc's answer lists, readable by title or anchor."""

    title: str
    anchor: str
    level: int
    chars: int
    within: str
    """The anchor of the `##` section that holds it; "" before the first one."""


PEDIGREE_STATES = (
    "retired",
    "contested",
    "suspect",
    "under_approved",
    "stale",
    "unreviewed",
    "reviewed",
)
"""A pedigree's states, worst first: a doc's state is the first of them that holds."""


class Pedigree(TypedDict, total=False):
    """Who vouched for a doc and how far to trust it now (`handbook.pedigree.derived`); in every
    answer that names a doc of a library with reviewers, and of any retired doc."""

    state: str
    """One of `PEDIGREE_STATES`."""
    confidence: float
    reviews: int
    """Reviewers whose latest verdict is on the current revision."""
    approvals: int
    approvals_required: int
    last_reviewed: dict[str, str]
    """{at, by, verdict}"""
    staleness_days: int
    contradictions: list[dict[str, str]]
    """The open ones: {by, at, verdict, basis, section?}"""
    verify_first: str
    """Why to check before acting, when there is a reason."""
    superseded_by: str


class DocSummary(TypedDict, total=False):
    id: str
    kind: str
    title: str
    summary: str
    verified: str
    chars: int
    sections: list[SectionInfo]
    ref: str
    """`<library>:<id>`, on a shelf of several libraries."""
    library: str
    pedigree: Pedigree


class ListAnswer(Answer, total=False):
    count: int
    """How many docs match, of which `returned` are in `docs`."""
    docs: list[DocSummary]
    returned: int
    offset: int
    next_offset: int
    """Where the next page starts, when there are more docs than this answer holds."""
    collisions: list[str]
    """On a shelf: ids that several libraries hold."""


class ResourceInfo(TypedDict):
    path: str
    bytes: int
    media_type: str


class GetAnswer(Answer, total=False):
    found: bool
    id: str
    ref: str
    library: str
    title: str
    metadata: dict[str, Any]
    revision: str
    url: str
    lang: str
    requested_lang: str
    fallback: bool
    sections: list[SectionInfo]
    sections_omitted: int
    subsections: list[SubsectionInfo]
    subsections_omitted: int
    section: dict[str, Any]
    """The section read: title, anchor, level, and `same_title` (the anchors of other
    sections with that title) when the title was asked for and is not unique."""
    resources: list[ResourceInfo]
    content: str
    offset: int
    next_offset: int
    code: str
    suggestions: list[str]
    choices: list[str]
    available_ids: list[str]
    available_ids_truncated: bool
    pedigree: Pedigree


class SearchHit(TypedDict, total=False):
    id: str
    title: str
    section: str | None
    anchor: str | None
    score: float
    excerpt: str
    resource: str
    """Set when the passage is in a markdown file attached to the doc: the file's path,
    to read with `resource(id, resource, section=anchor)`."""
    ref: str
    library: str
    pedigree: Pedigree


class SearchAnswer(Answer, total=False):
    count: int
    hits: list[SearchHit]
    returned: int
    offset: int
    next_offset: int
    note: str


class CollectItem(TypedDict, total=False):
    ref: str
    id: str
    library: str
    revision: str
    title: str
    content: str
    whole: bool
    bytes: int
    sections: list[str]
    pedigree: Pedigree


class Omission(TypedDict, total=False):
    id: str | None
    reason: str
    detail: str
    choices: list[str]
    count: int


class CollectAnswer(Answer, total=False):
    items: list[CollectItem]
    omissions: list[Omission]
    no_match: bool
    bytes_used: int
    budget: int | None
    note: str


class Source(TypedDict, total=False):
    document_id: str
    ref: str
    title: str
    version: str | None
    section: str | None
    anchor: str | None
    excerpt: str
    score: float
    resource: str
    """As in `SearchHit`: the attached markdown file the passage is in."""
    pedigree: Pedigree


class ActorInfo(TypedDict, total=False):
    """Whom a request acts for (`handbook.access.actor`): only the parts the transport sent."""

    actor: str
    tenant: str
    workspace: str


class AskAnswer(Answer, total=False):
    answer: str
    evidence_state: str
    """grounded | insufficient | unavailable"""
    sources: list[Source]
    library: str | None
    version: str | None
    correlation_id: str
    actor: ActorInfo
    """The actor context the request carried, echoed; absent when none was sent."""
    coverage: float
    key_terms: list[str]
    missing_terms: list[str]
    note: str
    caution: str
    """Set on a grounded answer whose top source is suspect or contested."""


class BriefItem(TypedDict, total=False):
    """One doc's best passage for a task, with how far to trust it (`handbook.handlers.briefing`)."""

    id: str
    title: str
    section: str | None
    anchor: str | None
    excerpt: str
    resource: str
    score: float
    """relevance * confidence * freshness * the ref bonus."""
    relevance: float
    confidence: float
    freshness: float
    about_ref: bool
    verify_first: str
    pedigree: Pedigree
    ref: str
    library: str


class BriefAnswer(Answer, total=False):
    count: int
    items: list[BriefItem]
    returned: int
    note: str


class WriteAnswer(Answer, total=False):
    """What `propose`, `contradict` and `corroborate` answer (`handbook.inbox.writable`)."""

    id: str
    kind: str
    doc: str
    library: str
    state: str
    """open | accepted | rejected"""
    new: bool
    """False when the same record was already in the inbox (a retried call)."""
    by: str


class ResourceAnswer(Answer, total=False):
    found: bool
    id: str
    ref: str
    revision: str
    path: str
    bytes: int
    sha256: str
    media_type: str
    sections: list[SectionInfo]
    """An attached markdown file's `##` sections, to read one at a time."""
    sections_omitted: int
    subsections: list[SubsectionInfo]
    """Its `###` and deeper headings, to read one at a time too."""
    subsections_omitted: int
    section: dict[str, Any]
    content: str
    content_base64: str
    offset: int
    """Set when a part of the file's text was asked for (a section, or from an offset)."""
    next_offset: int
    code: str
    suggestions: list[str]
    resources: list[str]


class StatisticsRow(TypedDict):
    """One audience and language of a served bundle, each figure with its provenance
    (`handbook.handlers.statistics`): a reported figure is never labelled verified."""

    audience: str | None
    lang: str
    source_docs: int | None
    """Source docs the build found for these readers (reported by the build), or None."""
    source_docs_state: str
    """reported | not_reported"""
    bundle_docs: int
    """Docs in the bundle: the catalog's, whose count the signed manifest fixes."""
    bundle_docs_state: str
    """verified"""
    indexed_docs: int | None
    """Docs this runtime can answer from: in the search file, under the catalog's id,
    with at least one passage."""
    indexed_docs_state: str
    """verified | not_verified_yet"""
    statistics_state: str
    """verified (the answerable count was verified here) | reported | not_reported"""


class PublishStatus(TypedDict, total=False):
    """The last publish the release pipeline reported (`handbook.bundle.publish_report`)."""

    statistics_state: str
    """reported | not_reported: a report is what a pipeline said, never verified."""
    reported: dict[str, Any]
    """The report as written: library, version, audience, reported_at, uploaded_files,
    failed_files, message."""
    matches_served: bool
    """Whether the report names the version being served."""
    error: str
    """Why a report that was configured could not be read."""


class StatusAnswer(Answer, total=False):
    library: str
    version: str
    built_at: str
    docs: int
    signature: str
    signed_by: list[str]
    loaded_at: str
    last_reload_error: str | None
    languages: dict[str, dict[str, int]]
    integrity_error: str
    libraries: list[StatusAnswer]
    inbox: str
    """available, or unavailable and why: served with a writable inbox only."""
    sources: dict[str, list[str]]
    """The source allow-list of `ask` and `collect` (kinds, libraries), when one is set."""
    audience: str | None
    """The audience the bundle was built for, as signed (None: a library without)."""
    statistics: list[StatisticsRow]
    """Per audience and language: source docs (reported), bundle docs and answerable
    docs (verified), kept apart."""
    statistics_state: str
    """The weakest of the rows' states: verified | reported | not_reported."""
    publish: PublishStatus


def refusal(code: str, message: str) -> ErrorInfo:
    return {"code": code, "message": message}
