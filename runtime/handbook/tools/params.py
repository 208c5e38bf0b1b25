"""The parameters several tools of the table share (`handbook.tools.table`): one
definition each, so a query, an offset or a language means the same in every tool."""

from __future__ import annotations

from .model import Param, boolean, integer


def limit(default: int, maximum: int = 100) -> Param:
    """`limit`, with the tool's own default and maximum."""
    schema = {"type": "integer", "minimum": 1, "maximum": maximum}
    text = f"Most results (default {default})."
    flags = ("--limit", "-n")
    return Param("limit", schema, text, from_text=integer, flags=flags, default=default)


QUERY = Param("query", {"type": "string"}, "Free text; null: none.", flags=("--query", "-q"))
OFFSET = Param(
    "offset",
    {"type": "integer", "minimum": 0},
    "An earlier answer's next_offset (default 0).",
    from_text=integer,
    default=0,
)
LANG = Param(
    "lang",
    {"type": "string"},
    "A language tag (en, de); null: all.",
    offered=lambda context: len(context.languages) > 1,
)
RETRIEVER = Param(
    "retriever",
    {"type": "string", "enum": ["lexical", "semantic", "hybrid"]},
    "Ranking: lexical (default), semantic (needs vectors) or hybrid.",
)
DOC_ID = Param(
    "doc_id",
    {"type": "string"},
    "A doc id (or library:id).",
    required=True,
    positional=True,
    aliases=("id",),
)
REVISION = Param(
    "revision",
    {"type": "string"},
    "Only this exact revision; a changed doc is refused.",
)
REVIEWED = Param(
    "reviewed",
    {"type": "boolean"},
    "true: only docs reviewed as they are; false: only the others.",
    from_text=boolean,
)
SUSPECT = Param(
    "suspect",
    {"type": "boolean"},
    "true: only docs changed (or their subject) since reviewed.",
    from_text=boolean,
)
INCLUDE_RETIRED = Param(
    "include_retired",
    {"type": "boolean"},
    "true: retired and superseded docs too.",
    from_text=boolean,
)
