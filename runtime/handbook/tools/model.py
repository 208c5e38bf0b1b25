"""The model of an agent tool: its parameters, its definition for one served context.

`handbook.tools.table` holds the table of tools built from these; transports read only the
table. A parameter knows its JSON Schema and how a value written as text (a query
string, a command line) becomes the argument; a tool knows its verb (the served
object's method), its output schema and the `TypedDict` of its answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..bundle.catalog import Catalog

ENUM_CAP = 12
"""At most this many values are listed as an enum in a tool schema (`capped`)."""
ENUM_CHARS = 240
"""...and at most this many characters of them: the definitions ride on every agent turn."""
_READ_ONLY: Mapping[str, bool] = {"readOnlyHint": True, "openWorldHint": False}
"""MCP's hints for a tool that changes nothing; destructiveHint and idempotentHint mean
something only when readOnlyHint is false (the MCP specification), so they are left out."""


class ToolContext(NamedTuple):
    """What the definitions say about the served libraries."""

    title: str
    libraries: tuple[str, ...]
    docs: int
    kinds: tuple[str, ...]
    filters: Mapping[str, tuple[str, ...] | None]
    """Filterable field -> its known values (None: too many to list)."""
    languages: tuple[str, ...]
    writable: bool = False
    """Served with a writable inbox (`handbook.inbox.writable`): the write tools are offered."""
    tools: tuple[str, ...] | None = None
    """The names of the only tools offered and callable (`handbook.tools.exposed`); None: all."""


def context_of(catalogs: Sequence[Catalog], reserved: frozenset[str] = frozenset()) -> ToolContext:
    """The context of one library's catalog, or of several on a shelf; fields named
    like a tool's own parameters (`reserved`) are never offered as filters."""
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
            if n not in reserved
        },
        tuple(sorted(languages - {""})),
    )


def integer(text: str) -> Any:
    """A whole number; anything else as written, for the handler to refuse in its words."""
    stripped = text.strip()
    return (
        int(stripped)
        if stripped.isascii() and stripped.lstrip("-").isdigit() and len(stripped) < 12
        else text
    )


def boolean(text: str) -> Any:
    """true or false; anything else as written, for the handler to refuse in its words."""
    return {"true": True, "false": False}.get(text.strip().lower(), text)


def words(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def pairs(text: str) -> list[dict[str, str]]:
    pairs = [part.partition("=") for part in text.split(",") if part.strip()]
    return [{"id": k.strip(), "revision": v.strip()} for k, _, v in pairs]


def revision_map(value: Any) -> Any:
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
    default: Any = None
    """What the served methods take when it is not given (None: nothing); a test holds
    every served method's signature to its tool's parameters and these defaults."""
    offered: Callable[[ToolContext], bool] | None = None
    """Whether the definitions offer it for these libraries (default: always). One that
    cannot change an answer there (a language where there is one) would cost every agent
    turn for nothing; it is still taken when given."""

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
    writes: bool = False
    """Writes to the inbox: offered only where one is served, and told who is asking."""
    annotations: Mapping[str, bool] = field(default_factory=lambda: dict(_READ_ONLY))

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if name in (p.name, *p.aliases)), None)

    def input_schema(self, context: ToolContext, every: bool = False) -> dict[str, Any]:
        """The parameters offered for `context`, or with `every` all it takes (what an
        OpenAPI document, a contract read once rather than on every turn, describes)."""
        properties = {
            p.name: p.json_schema()
            for p in self.params
            if every or p.offered is None or p.offered(context)
        }
        if self.filters:
            properties.update({n: _filter_schema(v) for n, v in context.filters.items()})
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    def definition(self, context: ToolContext, output_schemas: bool = False) -> dict[str, Any]:
        """The MCP shape: name, title, description, inputSchema, annotations, and the
        outputSchema when asked for (MCP clients validate structured results with it;
        no other host reads it, and every agent turn would carry it)."""
        return {
            "name": self.name,
            "title": self.title(context),
            "description": self.description(context),
            "inputSchema": self.input_schema(context),
            **({"outputSchema": dict(self.output)} if output_schemas else {}),
            "annotations": dict(self.annotations),
        }


def capped(values: Sequence[str] | None) -> tuple[str, ...] | None:
    """`values` when they are few and short enough to list in a definition (`ENUM_CAP`,
    `ENUM_CHARS`), else None. The one cap on everything a definition lists from the
    library's vocabulary, which grows with the docs."""
    if not values or len(values) > ENUM_CAP or sum(len(v) for v in values) > ENUM_CHARS:
        return None
    return tuple(values)


def _filter_schema(values: tuple[str, ...] | None) -> dict[str, Any]:
    """A filter field: its values as an enum (data, never prose) when `capped` lists
    them, else any string. What a filter does is said once, in the tool's description."""
    listed = capped(values)
    if listed is None:
        return {"type": ["string", "null"]}
    return {"type": ["string", "null"], "enum": [*listed, "any", None]}
