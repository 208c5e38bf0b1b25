"""The output schemas of the tools: what a successful answer always holds.

They name the keys an agent can rely on and allow more (answers grow compatibly: a
reader of the same major format version accepts new keys). A test checks them against
the `TypedDict`s of `handbook.answers`, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from ..answers import PEDIGREE_STATES

_STRING = {"type": "string"}
_OPT_STRING = {"type": ["string", "null"]}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}


def _result(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Output schemas name what is always there and allow more: results grow."""
    return {"type": "object", "properties": properties, "required": required}


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


_ENVELOPE = {
    "truncated": _BOOL,
    "response_chars": _INT,
    "hint": _STRING,
}

_SECTION = _result({"title": _STRING, "anchor": _STRING, "chars": _INT}, ["title", "anchor"])
_SUBSECTION = _result(
    {"title": _STRING, "anchor": _STRING, "level": _INT, "chars": _INT, "within": _STRING},
    ["title", "anchor", "level"],
)

PEDIGREE = _result(
    {
        "state": {
            "type": "string",
            "enum": list(reversed(PEDIGREE_STATES)),
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reviews": _INT,
        "approvals": _INT,
        "approvals_required": _INT,
        "last_reviewed": _result({"at": _STRING, "by": _STRING, "verdict": _STRING}, ["at", "by"]),
        "staleness_days": _INT,
        "contradictions": _array(
            _result(
                {"by": _STRING, "at": _STRING, "verdict": _STRING, "basis": _STRING},
                ["by", "basis"],
            )
        ),
        "verify_first": _STRING,
        "superseded_by": _STRING,
    },
    ["state"],
)
"""Who vouched for a doc and how far to trust it now; present where the library has
reviewers, or the doc is retired."""

DOC_SUMMARY = _result(
    {
        "id": _STRING,
        "kind": _STRING,
        "title": _STRING,
        "summary": _STRING,
        "verified": _STRING,
        "chars": _INT,
        "sections": _array(_SECTION),
        "pedigree": PEDIGREE,
    },
    ["id", "title", "summary"],
)

LIST = _result(
    {
        "count": _INT,
        "docs": _array(DOC_SUMMARY),
        "returned": _INT,
        "offset": _INT,
        "next_offset": _INT,
        **_ENVELOPE,
    },
    ["count", "docs"],
)

GET = _result(
    {
        "found": _BOOL,
        "id": _STRING,
        "title": _STRING,
        "metadata": {"type": "object"},
        "revision": _STRING,
        "url": _STRING,
        "sections": _array(_SECTION),
        "subsections": _array(_SUBSECTION),
        "content": _STRING,
        "offset": _INT,
        "next_offset": _INT,
        "suggestions": _array(_STRING),
        "pedigree": PEDIGREE,
        **_ENVELOPE,
    },
    ["found"],
)

HIT = _result(
    {
        "id": _STRING,
        "title": _STRING,
        "section": _OPT_STRING,
        "anchor": _OPT_STRING,
        "score": {"type": "number"},
        "excerpt": _STRING,
        "pedigree": PEDIGREE,
        "resource": _STRING,
    },
    ["id", "title", "score"],
)

_NOTE = {"note": _STRING}
"""Set when a long query was shortened to the term cap (`handbook.search.query_terms`)."""

SEARCH = _result(
    {
        "count": _INT,
        "hits": _array(HIT),
        "returned": _INT,
        "offset": _INT,
        "next_offset": _INT,
        **_NOTE,
        **_ENVELOPE,
    },
    ["count", "hits"],
)

REVISION_PAIR = {
    "type": "object",
    "properties": {"id": _STRING, "revision": _STRING},
    "required": ["id", "revision"],
    "additionalProperties": False,
}

COLLECT = _result(
    {
        "items": _array(
            _result(
                {
                    "ref": _STRING,
                    "id": _STRING,
                    "library": _STRING,
                    "revision": _STRING,
                    "title": _STRING,
                    "content": _STRING,
                    "whole": _BOOL,
                    "bytes": _INT,
                    "pedigree": PEDIGREE,
                },
                ["ref", "id", "revision", "title", "content"],
            )
        ),
        "omissions": _array(
            _result({"id": _OPT_STRING, "reason": _STRING, "detail": _STRING}, ["reason"])
        ),
        "no_match": _BOOL,
        "bytes_used": _INT,
        "budget": {"type": ["integer", "null"]},
        **_NOTE,
        **_ENVELOPE,
    },
    ["items", "omissions", "no_match", "bytes_used"],
)

ASK = _result(
    {
        "answer": _STRING,
        "evidence_state": {"type": "string", "enum": ["grounded", "insufficient", "unavailable"]},
        "sources": _array(
            _result(
                {
                    "document_id": _STRING,
                    "ref": _STRING,
                    "title": _STRING,
                    "version": _OPT_STRING,
                    "section": _OPT_STRING,
                    "excerpt": _STRING,
                    "pedigree": PEDIGREE,
                },
                ["document_id", "title", "excerpt"],
            )
        ),
        "library": _OPT_STRING,
        "version": _OPT_STRING,
        "correlation_id": _STRING,
        "actor": _result({"actor": _STRING, "tenant": _STRING, "workspace": _STRING}, []),
        "caution": _STRING,
        **_NOTE,
        **_ENVELOPE,
    },
    ["answer", "evidence_state", "sources", "correlation_id"],
)

BRIEF = _result(
    {
        "count": _INT,
        "items": _array(
            _result(
                {
                    **HIT["properties"],
                    "relevance": {"type": "number"},
                    "confidence": {"type": "number"},
                    "freshness": {"type": "number"},
                    "about_ref": _BOOL,
                    "verify_first": _STRING,
                    "ref": _STRING,
                    "library": _STRING,
                },
                ["id", "title", "score", "relevance", "confidence", "freshness"],
            )
        ),
        "returned": _INT,
        **_NOTE,
        **_ENVELOPE,
    },
    ["count", "items"],
)

WRITE = _result(
    {
        "id": _STRING,
        "kind": {"type": "string", "enum": ["proposal", "contradiction", "corroboration"]},
        "doc": _STRING,
        "library": _STRING,
        "state": {"type": "string", "enum": ["open", "accepted", "rejected"]},
        "new": _BOOL,
        "by": _STRING,
        **_ENVELOPE,
    },
    [],
)

RESOURCE = _result(
    {
        "found": _BOOL,
        "id": _STRING,
        "revision": _STRING,
        "path": _STRING,
        "bytes": _INT,
        "sha256": _STRING,
        "media_type": _STRING,
        "sections": _array(_SECTION),
        "subsections": _array(_SUBSECTION),
        "content": _STRING,
        "content_base64": _STRING,
        "offset": _INT,
        "next_offset": _INT,
        **_ENVELOPE,
    },
    ["found"],
)

_OPT_INT = {"type": ["integer", "null"]}
_STATE = {"type": "string", "enum": ["verified", "reported", "not_reported"]}
STATISTICS_ROW = _result(
    {
        "audience": _OPT_STRING,
        "lang": _STRING,
        "source_docs": _OPT_INT,
        "source_docs_state": {"type": "string", "enum": ["reported", "not_reported"]},
        "bundle_docs": _INT,
        "bundle_docs_state": {"type": "string", "enum": ["verified"]},
        "indexed_docs": _OPT_INT,
        "indexed_docs_state": {"type": "string", "enum": ["verified", "not_verified_yet"]},
        "statistics_state": _STATE,
    },
    ["lang", "source_docs_state", "bundle_docs", "indexed_docs_state", "statistics_state"],
)
"""One audience and language: what the build reported, what the manifest and the runtime
verified, each labelled (`handbook.handlers.statistics`)."""
PUBLISH = _result(
    {
        "statistics_state": {"type": "string", "enum": ["reported", "not_reported"]},
        "reported": {"type": "object"},
        "matches_served": _BOOL,
        "error": _STRING,
    },
    ["statistics_state"],
)
"""The last publish the release pipeline reported: never `verified`."""

STATUS = _result(
    {
        "library": _STRING,
        "version": _STRING,
        "docs": _INT,
        "signature": _STRING,
        "loaded_at": _STRING,
        "audience": _OPT_STRING,
        "statistics": _array(STATISTICS_ROW),
        "statistics_state": _STATE,
        "publish": PUBLISH,
        "libraries": _array({"type": "object"}),
        "sources": _result({"kinds": _array(_STRING), "libraries": _array(_STRING)}, []),
    },
    [],
)
