"""The table of agent tools: the one authority every transport is generated from.

Each `Tool` names its verb (the method of the served object, the HTTP route, the RPC
topic and the CLI command), its parameters (JSON Schema, and how a value written as
text — a query string, a command line — becomes the argument), its output schema and
its annotations. From this table come the bundle's ``tools.json`` (written at build for
offline consumers), MCP's tools, the HTTP routes and OpenAPI document, the RPC
registration, the CLI's query commands and `handbook tools`. Adding a tool is one entry
here plus its handler on the served objects (`handbook.tools.served`). The parameters
several tools share are in `handbook.tools.params`; the write tools, served only with an
inbox, in `handbook.tools.write_tools`.

Input schemas satisfy OpenAI's strict mode (every property listed and required,
optional ones nullable, no additional properties), which every other host also accepts.
Descriptions are written for agents, and short: every definition rides on every turn of
every agent (issue 29: at most 10 KB for the read tools). Each says when to call its
tool and when another is better. The library's values (kinds, filter values) appear only
as capped lists (`handbook.tools.model.capped`), filter values only as enums: data, never
prose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import answers
from ..access.actor import ID_SCHEMA
from ..bundle.catalog import Catalog
from . import schemas as out
from .model import Param, Tool, ToolContext, capped, integer, pairs, revision_map, words
from .model import context_of as _context_of
from .params import (
    DOC_ID,
    INCLUDE_RETIRED,
    LANG,
    OFFSET,
    QUERY,
    RETRIEVER,
    REVIEWED,
    REVISION,
    SUSPECT,
    limit,
)
from .write_tools import WRITE_TOOLS

READ_TOOLS: tuple[Tool, ...] = (
    Tool(
        "knowledge_list",
        "list",
        "List the library's docs, optionally filtered and ranked by a query.",
        lambda c: f"List {c.title} docs",
        lambda c: (
            f"The {c.title} library's docs ({c.docs} docs; {_kinds(c)}) as short entries "
            "(verify_first: check before acting). Call it first, before answering from this "
            "library, then read a doc with knowledge_get; for words inside sections use "
            "knowledge_search. query matches titles, summaries, keywords, aliases, models"
            + _FILTERS
            + "."
        ),
        (QUERY, limit(20), OFFSET, LANG, REVIEWED, SUSPECT, INCLUDE_RETIRED),
        out.LIST,
        answers.ListAnswer,
        filters=True,
    ),
    Tool(
        "knowledge_get",
        "get",
        "Show one doc (or one section of it) with its metadata.",
        lambda c: f"Read a {c.title} doc",
        lambda c: (
            "One doc as markdown, with metadata, revision and sections; for a long one pass "
            "section, or offset. Prefer it over your memory and repeat its caveats: quote an "
            "unverified doc as unverified. An unknown id answers the closest ids."
        ),
        (
            DOC_ID,
            Param(
                "section",
                {"type": "string"},
                "A heading's title or anchor; null: whole doc.",
                flags=("--section", "-s"),
            ),
            OFFSET,
            REVISION,
            LANG,
        ),
        out.GET,
        answers.GetAnswer,
    ),
    Tool(
        "knowledge_search",
        "search",
        "Search every section's text (lunr query syntax: +must -not word~1 pre*).",
        lambda c: f"Search {c.title}",
        lambda c: (
            "Full-text search of the library's sections: the best with doc id, anchor, "
            "score, excerpt. Use it to find a passage, or when knowledge_list shows no "
            "obvious doc; read a hit with knowledge_get(id, section)."
        ),
        (
            Param(
                "query",
                {"type": "string"},
                "Words to find (+must -not word~1 pre*).",
                required=True,
                positional=True,
            ),
            limit(10),
            LANG,
            OFFSET,
            RETRIEVER,
        ),
        out.SEARCH,
        answers.SearchAnswer,
    ),
    Tool(
        "knowledge_collect",
        "collect",
        "Read several docs at once within a byte budget; every doc left out says why.",
        lambda c: f"Collect {c.title} docs",
        lambda c: (
            "Several docs in one call within a byte budget, instead of many "
            "knowledge_get calls: by ids or by query. A doc too long comes as its matching "
            "sections; omissions say what was left out and why" + _FILTERS + "."
        ),
        (
            QUERY,
            Param(
                "ids",
                {"type": "array", "items": {"type": "string"}, "maxItems": 100},
                "Doc ids (or library:id) in this order; null: select by query and filters.",
                from_text=words,
                flags=("--id",),
            ),
            Param(
                "revisions",
                {"type": "array", "items": out.REVISION_PAIR},
                "Exact revisions required; a changed doc is omitted.",
                from_text=pairs,
                to_python=revision_map,
                flags=("--revision",),
            ),
            limit(10),
            Param(
                "max_bytes",
                {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                "Content budget in UTF-8 bytes (default 32000).",
                from_text=integer,
                default=32_000,
            ),
            LANG,
            RETRIEVER,
        ),
        out.COLLECT,
        answers.CollectAnswer,
        filters=True,
    ),
    Tool(
        "knowledge_ask",
        "ask",
        "Answer a question by quoting the library (grounded), or say it cannot (insufficient).",
        lambda c: f"Ask {c.title}",
        lambda c: (
            "Answers a question by quoting the library, with sources. "
            "evidence_state: grounded, or insufficient (no answer: say so, do not guess), or "
            "unavailable. Nothing is generated; read a cited section with knowledge_get."
        ),
        (
            Param(
                "question",
                {"type": "string"},
                "The question, in words.",
                required=True,
                positional=True,
            ),
            limit(3, maximum=10),
            Param(
                "correlation_id",
                ID_SCHEMA,
                "An id to trace this question by (answered and logged); null: a new one.",
            ),
            RETRIEVER,
        ),
        out.ASK,
        answers.AskAnswer,
    ),
    Tool(
        "knowledge_brief",
        "brief",
        "What to read before a task: one passage per doc, ranked by relevance and trust.",
        lambda c: f"Brief from {c.title}",
        lambda c: (
            "Call it before a task: the best passage of each relevant doc, ranked "
            "by relevance, confidence and freshness. Check an item with verify_first before "
            "acting on it; read one whole with knowledge_get(id, section)."
        ),
        (
            Param(
                "task",
                {"type": "string", "maxLength": 2000},
                "What you are about to do, in words.",
                required=True,
                positional=True,
            ),
            Param(
                "refs",
                {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "Doc ids, devices or models the task is about; null: none.",
                from_text=words,
                flags=("--ref",),
            ),
            Param(
                "topics",
                {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "More words to look for; null: none.",
                from_text=words,
                flags=("--topic",),
            ),
            limit(8, maximum=50),
            RETRIEVER,
        ),
        out.BRIEF,
        answers.BriefAnswer,
    ),
    Tool(
        "knowledge_resource",
        "resource",
        "Show a file attached to a folder doc (a script, a table, an image) as verified bytes.",
        lambda c: f"Read a file of a {c.title} doc",
        lambda c: (
            "A file attached to a doc (its resources in knowledge_get), as content (text) or "
            "content_base64. Nothing is run. section reads part of a markdown file, as "
            "knowledge_search hits name it (under resource)."
        ),
        (
            DOC_ID,
            Param(
                "path",
                {"type": "string"},
                "The file's path in the doc's folder, as listed.",
                required=True,
                positional=True,
            ),
            REVISION,
            Param(
                "section",
                {"type": "string"},
                "A heading's title or anchor; null: whole file.",
                flags=("--section", "-s"),
            ),
            Param(
                "offset",
                {"type": "integer", "minimum": 0},
                "Read text in parts: 0, then next_offset; null: all at once.",
                from_text=integer,
            ),
        ),
        out.RESOURCE,
        answers.ResourceAnswer,
    ),
)


TOOLS: tuple[Tool, ...] = READ_TOOLS + WRITE_TOOLS

BY_NAME: Mapping[str, Tool] = {tool.name: tool for tool in TOOLS}
BY_VERB: Mapping[str, Tool] = {tool.verb: tool for tool in TOOLS}
RESERVED: frozenset[str] = frozenset(
    {p.name for t in TOOLS for p in t.params}
    | {a for t in TOOLS for p in t.params for a in p.aliases}
    | {"ref", "library"}
)
"""Names no frontmatter field may take as a filter: the tools' own parameters, and the
attribution keys the runtime sets on answers."""


def served_tools(context: ToolContext) -> list[Tool]:
    """The tools served: the write tools only with a writable inbox, and only those the
    context exposes (`handbook.tools.exposed`)."""
    return [
        tool
        for tool in TOOLS
        if (context.writable or not tool.writes)
        and (context.tools is None or tool.name in context.tools)
    ]


def definitions(context: ToolContext, output_schemas: bool = False) -> list[dict[str, Any]]:
    """Every served tool's definition, in the MCP shape, for the served libraries; with
    `output_schemas`, each with its outputSchema (what MCP serves)."""
    return [tool.definition(context, output_schemas) for tool in served_tools(context)]


def _kinds(context: ToolContext) -> str:
    listed = capped(context.kinds)
    return f"kinds: {', '.join(listed)}" if listed else f"{len(context.kinds)} kinds"


_FILTERS = "; a parameter without a description filters by that doc field (null: no filter)"


def context_of(catalogs: Sequence[Catalog]) -> ToolContext:
    """What the definitions say about these libraries (reserved names never filter)."""
    return _context_of(catalogs, RESERVED)
