"""The parameters several tools of the table share (`handbook.tools.table`): one
definition each, so a query, an offset or a language means the same in every tool."""

from __future__ import annotations

from .model import Param, boolean, integer


def limit(default: int, maximum: int = 100) -> Param:
    """`limit`, with the tool's own default and maximum."""
    schema = {"type": "integer", "minimum": 1, "maximum": maximum}
    text = f"Most results to return (default {default})."
    flags = ("--limit", "-n")
    return Param("limit", schema, text, from_text=integer, flags=flags, default=default)


QUERY = Param(
    "query", {"type": "string"}, "Free-text query; null for none.", flags=("--query", "-q")
)
OFFSET = Param(
    "offset",
    {"type": "integer", "minimum": 0},
    "Where to continue: the next_offset of an earlier answer (default 0).",
    from_text=integer,
    default=0,
)
LANG = Param("lang", {"type": "string"}, "A language tag (en, de); null for every language.")
RETRIEVER = Param(
    "retriever",
    {"type": "string", "enum": ["lexical", "semantic", "hybrid"]},
    "How to rank: lexical (default; lunr's words), semantic (meaning, when the bundle has "
    "vectors) or hybrid (both fused).",
)
DOC_ID = Param(
    "doc_id",
    {"type": "string"},
    "A doc id (or library:id), e.g. from knowledge_list.",
    required=True,
    positional=True,
    aliases=("id",),
)
REVISION = Param(
    "revision",
    {"type": "string"},
    "Serve only this exact revision; a doc that changed since is refused.",
)
REVIEWED = Param(
    "reviewed",
    {"type": "boolean"},
    "true: only docs whose current revision has a review; false: only docs without one "
    "(libraries with reviewers).",
    from_text=boolean,
)
SUSPECT = Param(
    "suspect",
    {"type": "boolean"},
    "true: only docs that changed, or whose subject changed, since their last review.",
    from_text=boolean,
)
INCLUDE_RETIRED = Param(
    "include_retired",
    {"type": "boolean"},
    "true: list retired and superseded docs too (left out by default).",
    from_text=boolean,
)
