"""The table of agent tools: the one authority every transport is generated from.

Each `Tool` names its verb (the method of the served object, the HTTP route, the RPC
topic and the CLI command), its parameters (JSON Schema, and how a value written as
text — a query string, a command line — becomes the argument), its output schema and
its annotations. From this table come the bundle's ``tools.json`` (written at build for
offline consumers), MCP's tools, the HTTP routes and OpenAPI document, the RPC
registration, the CLI's query commands and `handbook tools`. Adding a tool is one entry
here plus its handler on the served objects (`handbook.served`).

Input schemas satisfy OpenAI's strict mode (every property listed and required,
optional ones nullable, no additional properties), which every other host also accepts.
Descriptions are written for agents and name the library's kinds, filter fields and
values, so an agent knows what it can ask before it asks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import answers
from . import schemas as out
from .catalog import Catalog

MAX_ENUM = 50
_READ_ONLY: Mapping[str, bool] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


class ToolContext(NamedTuple):
    """What the definitions say about the served libraries."""

    title: str
    libraries: tuple[str, ...]
    docs: int
    kinds: tuple[str, ...]
    filters: Mapping[str, tuple[str, ...] | None]
    """Filterable field -> its known values (None: too many to list)."""
    languages: tuple[str, ...]


def context_of(catalogs: Sequence[Catalog]) -> ToolContext:
    """The context of one library's catalog, or of several on a shelf."""
    infos = [c.library for c in catalogs]
    kinds: dict[str, None] = {}
    filters: dict[str, set[str] | None] = {}
    languages: set[str] = set()
    for catalog in catalogs:
        info = catalog.library
        kinds.update(
            dict.fromkeys(info.vocab.get("kind", ()) or sorted({d.kind for d in catalog.docs}))
        )
        for name, spec in info.filters.items():
            values = spec.get("values")
            known = filters.get(name, set())
            filters[name] = None if values is None or known is None else known | set(values)
        languages.update(str(d.meta.get("lang") or info.default_lang or "") for d in catalog.docs)
    title = ", ".join(i.title or i.name for i in infos) or "knowledge"
    return ToolContext(
        title,
        tuple(i.name for i in infos),
        sum(len(c.docs) for c in catalogs),
        tuple(kinds),
        {
            n: None if v is None else tuple(sorted(v))
            for n, v in sorted(filters.items())
            if n not in RESERVED
        },
        tuple(sorted(languages - {""})),
    )


# -- parameters ------------------------------------------------------------------------------


def _integer(text: str) -> Any:
    """A whole number; anything else as written, for the handler to refuse in its words."""
    stripped = text.strip()
    return int(stripped) if stripped.lstrip("-").isdigit() and len(stripped) < 12 else text


def _words(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _pairs(text: str) -> list[dict[str, str]]:
    pairs = [part.partition("=") for part in text.split(",") if part.strip()]
    return [{"id": k.strip(), "revision": v.strip()} for k, _, v in pairs]


def _revision_map(value: Any) -> Any:
    """The schema's list of {id, revision} as the handlers' mapping; a mapping as is."""
    if isinstance(value, list) and all(isinstance(r, Mapping) for r in value):
        return {str(r.get("id")): str(r.get("revision")) for r in value}
    return value


@dataclass(frozen=True)
class Param:
    name: str
    schema: Mapping[str, Any]
    """The JSON Schema of a given value (the table adds null for optional parameters)."""
    description: str
    required: bool = False
    from_text: Callable[[str], Any] | None = None
    """How a value written as text becomes the argument (default: the text itself)."""
    to_python: Callable[[Any], Any] | None = None
    """How a JSON value becomes the Python handler's argument (default: as it is)."""
    positional: bool = False
    """On the command line, an argument rather than an option."""
    flags: tuple[str, ...] = ()
    """Command-line option names, when not just `--<name>`."""
    aliases: tuple[str, ...] = ()
    """Other names accepted for it (older HTTP clients send `id`)."""

    def json_schema(self) -> dict[str, Any]:
        schema = {**self.schema, "description": self.description}
        if not self.required:
            kinds = schema.get("type", [])
            schema["type"] = [*(kinds if isinstance(kinds, list) else [kinds]), "null"]
        return schema


@dataclass(frozen=True)
class Tool:
    name: str
    verb: str
    summary: str
    """One line for people: --help, OpenAPI summaries."""
    title: Callable[[ToolContext], str]
    description: Callable[[ToolContext], str]
    params: tuple[Param, ...]
    output: Mapping[str, Any]
    answer: type
    """The `TypedDict` of its answers (`handbook.answers`), which `output` describes."""
    filters: bool = False
    """Takes the library's filterable fields as parameters too."""
    annotations: Mapping[str, bool] = field(default_factory=lambda: dict(_READ_ONLY))

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if name in (p.name, *p.aliases)), None)

    def input_schema(self, context: ToolContext) -> dict[str, Any]:
        properties = {p.name: p.json_schema() for p in self.params}
        if self.filters:
            properties.update({n: _filter_schema(n, v) for n, v in context.filters.items()})
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    def definition(self, context: ToolContext) -> dict[str, Any]:
        """The MCP shape: name, title, description, inputSchema, outputSchema, annotations."""
        return {
            "name": self.name,
            "title": self.title(context),
            "description": self.description(context),
            "inputSchema": self.input_schema(context),
            "outputSchema": dict(self.output),
            "annotations": dict(self.annotations),
        }


def _filter_schema(name: str, values: tuple[str, ...] | None) -> dict[str, Any]:
    if values and len(values) <= MAX_ENUM:
        listed = ", ".join(values)
        return {
            "type": ["string", "null"],
            "enum": [*values, "any", None],
            "description": f'Only docs whose {name} is this value ({listed}). null or "any": no filter.',
        }
    return {
        "type": ["string", "null"],
        "description": f'Only docs whose {name} is this value. null or "any": no filter.',
    }


def _limit(default: int, maximum: int = 100) -> Param:
    schema = {"type": "integer", "minimum": 1, "maximum": maximum}
    text = f"Most results to return (default {default})."
    return Param("limit", schema, text, from_text=_integer, flags=("--limit", "-n"))


QUERY = Param(
    "query", {"type": "string"}, "Free-text query; null for none.", flags=("--query", "-q")
)
OFFSET = Param(
    "offset",
    {"type": "integer", "minimum": 0},
    "Where to continue: the next_offset of an earlier answer (default 0).",
    from_text=_integer,
)
LANG = Param("lang", {"type": "string"}, "A language tag (en, de); null for every language.")
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


# -- the table ------------------------------------------------------------------------------

TOOLS: tuple[Tool, ...] = (
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
            "model numbers. Returns compact entries: id, kind, title, summary, verified state and "
            "size; no content. Long lists come in pages: pass offset=next_offset for the next."
        ),
        (QUERY, _limit(20), OFFSET, LANG),
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
            "metadata, revision and section list. For long docs pass `section` (a `## ` heading "
            "title or anchor) to read just that part, or offset=next_offset to continue. Prefer "
            "the doc's content over your own memory, and repeat its caveats: a doc marked "
            "unverified must be quoted as such. Unknown ids return the closest matches."
        ),
        (
            DOC_ID,
            Param(
                "section",
                {"type": "string"},
                "A section title or anchor; null for the whole doc.",
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
            _limit(10),
            LANG,
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
                from_text=_words,
                flags=("--id",),
            ),
            Param(
                "revisions",
                {"type": "array", "items": out.REVISION_PAIR},
                "Exact revisions required, per doc; a changed doc is omitted.",
                from_text=_pairs,
                to_python=_revision_map,
                flags=("--revision",),
            ),
            _limit(10),
            Param(
                "max_bytes",
                {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                "Budget for the returned content in UTF-8 bytes (default 32000).",
                from_text=_integer,
            ),
            LANG,
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
            _limit(3, maximum=10),
            Param(
                "correlation_id",
                {"type": "string", "maxLength": 200},
                "An id to trace this question by (returned in the answer); null for a new one.",
            ),
        ),
        out.ASK,
        answers.AskAnswer,
    ),
    Tool(
        "knowledge_resource",
        "resource",
        "Show a file attached to a folder doc (a script, a table, an image) as verified bytes.",
        lambda c: f"Read a file attached to a {c.title} doc",
        lambda c: (
            "Reads a file attached to a folder doc (listed under `resources` by knowledge_get) by "
            "its path in the doc's folder: `content` when it is text, `content_base64` otherwise. "
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
        ),
        out.RESOURCE,
        answers.ResourceAnswer,
    ),
)

BY_NAME: Mapping[str, Tool] = {tool.name: tool for tool in TOOLS}
BY_VERB: Mapping[str, Tool] = {tool.verb: tool for tool in TOOLS}
RESERVED: frozenset[str] = frozenset(
    {p.name for t in TOOLS for p in t.params}
    | {a for t in TOOLS for p in t.params for a in p.aliases}
    | {"ref", "library"}
)
"""Names no frontmatter field may take as a filter: the tools' own parameters, and the
attribution keys the runtime sets on answers."""


def definitions(context: ToolContext) -> list[dict[str, Any]]:
    """Every tool's definition, in the MCP shape, for the served libraries."""
    return [tool.definition(context) for tool in TOOLS]
