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
Descriptions are written for agents and name the library's kinds, filter fields and
values, so an agent knows what it can ask before it asks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import answers
from ..access.actor import ID_SCHEMA
from ..bundle.catalog import Catalog
from . import schemas as out
from .model import Param, Tool, ToolContext, integer, pairs, revision_map, words
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
            f"Lists the docs of the {c.title} knowledge library ({c.docs} docs; kinds: "
            f"{', '.join(c.kinds)}). Call it before answering questions this library may cover, "
            "then fetch the matching doc with knowledge_get. Filter by any field"
            + (f" ({', '.join(c.filters)})" if c.filters else "")
            + ", or pass a free-text query that matches titles, summaries, keywords, aliases and "
            "model numbers. Returns compact entries: id, kind, title, summary, verified state, "
            "size and, where docs are reviewed, their pedigree (state, confidence, last review; "
            "verify_first says why to check before acting); no content. Retired docs are left "
            "out unless include_retired. Long lists come in pages: pass offset=next_offset."
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
            "Fetches one doc by id (from knowledge_list or knowledge_search) as markdown, with its "
            "metadata, revision and section list. For long docs pass `section` (any heading's "
            "title or anchor: a `## ` section with its subsections, or one of `subsections`, "
            "`### ` and deeper) to read just that part, or offset=next_offset to continue. Prefer "
            "the doc's content over your own memory, and repeat its caveats: a doc marked "
            "unverified must be quoted as such. Unknown ids return the closest matches."
        ),
        (
            DOC_ID,
            Param(
                "section",
                {"type": "string"},
                "A heading's title or anchor (a section or subsection); null for the whole doc.",
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
            f"Searches the text of every section of the {c.title} library and returns the "
            "best-matching sections with doc id, section anchor, score and a short excerpt. Use it "
            "when knowledge_list finds no obvious doc; then read the hit with "
            "knowledge_get(doc_id, section)."
        ),
        (
            Param(
                "query", {"type": "string"}, "Words to search for.", required=True, positional=True
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
            f"Reads several docs of the {c.title} library in one call, within a byte budget: by "
            "explicit ids (kept in your order) or by a query (best first), filtered like "
            "knowledge_list. Docs that do not fit whole come as the sections that matched. "
            "Everything left out is listed under omissions with a reason (unknown_identity, "
            "ambiguous_identity, invalid_identity, duplicate_identity, unavailable_revision, "
            "filters, query, output_limit). Pass revisions to insist on exact doc revisions."
        ),
        (
            QUERY,
            Param(
                "ids",
                {"type": "array", "items": {"type": "string"}, "maxItems": 100},
                "Doc ids (or library:id refs) to read, in this order; null to select by query "
                "and filters.",
                from_text=words,
                flags=("--id",),
            ),
            Param(
                "revisions",
                {"type": "array", "items": out.REVISION_PAIR},
                "Exact revisions required, per doc; a changed doc is omitted.",
                from_text=pairs,
                to_python=revision_map,
                flags=("--revision",),
            ),
            limit(10),
            Param(
                "max_bytes",
                {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                "Budget for the returned content in UTF-8 bytes (default 32000).",
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
            f"Answers a question from the {c.title} library by quoting its passages, with sources "
            "(doc id, title, version, section, excerpt). evidence_state is grounded when the "
            "passages cover the question's key terms, insufficient when they do not (then no "
            "answer is given: say so, do not guess), unavailable when no library is loaded. It "
            "never generates text; read the cited sections with knowledge_get for detail."
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
                "An id to trace this question by (returned in the answer and logged): up to "
                "128 letters, digits and . _ : @ / + = -, starting with a letter or digit; "
                "null for a new one.",
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
            f"Assembles a briefing from the {c.title} library for a task you are about to do: "
            "the best passage of each relevant doc, ranked by relevance * confidence * "
            "freshness, with a bonus for docs about the refs you name (doc ids, device names, "
            "models). Each item carries the doc's pedigree and, when the doc is suspect, "
            "contested, stale or under-approved, verify_first with the reason: check those "
            "before acting on them. Retired docs are left out. Nothing is generated; read an "
            "item whole with knowledge_get(id, section)."
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
                "Doc ids, device names or model numbers the task is about (matching docs "
                "rank higher); null for none.",
                from_text=words,
                flags=("--ref",),
            ),
            Param(
                "topics",
                {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "More words to look for beside the task's; null for none.",
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
        lambda c: f"Read a file attached to a {c.title} doc",
        lambda c: (
            "Reads a file attached to a folder doc (listed under `resources` by knowledge_get) by "
            "its path in the doc's folder: `content` when it is text, `content_base64` otherwise. "
            "An attached markdown file lists its `sections`: pass `section` (a title or anchor, "
            "as a knowledge_search hit names it with the file's path under `resource`) to read "
            "just that part, or offset=0 and then next_offset to read any text file in parts. "
            "Nothing is ever run."
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
                "A section of an attached markdown file, by title or anchor; null for the "
                "whole file.",
                flags=("--section", "-s"),
            ),
            Param(
                "offset",
                {"type": "integer", "minimum": 0},
                "Read the text in parts from here (0 to start, then next_offset); null for "
                "the whole file in one answer.",
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
    """The tools served: the write tools only with a writable inbox."""
    return [tool for tool in TOOLS if context.writable or not tool.writes]


def definitions(context: ToolContext) -> list[dict[str, Any]]:
    """Every served tool's definition, in the MCP shape, for the served libraries."""
    return [tool.definition(context) for tool in served_tools(context)]


def context_of(catalogs: Sequence[Catalog]) -> ToolContext:
    """What the definitions say about these libraries (reserved names never filter)."""
    return _context_of(catalogs, RESERVED)
