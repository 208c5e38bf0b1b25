"""`Exposed`: a served object offering only some of its tools (`handbook serve --tools`,
`handbook mcp --tools`, or an application's own choice before `register_tools`).

Each tool definition rides on every turn of every agent that connects, so an operator
whose agents need three tools can serve three. The choice is carried in the tool context
(`ToolContext.tools`), which is what every transport reads: the definitions, the HTTP
routes and OpenAPI document, MCP's tools and the RPC handlers list only the exposed
tools, and the one dispatch (`handbook.tools.dispatch.call`) answers a hidden tool
exactly like one that does not exist. The dispatch reads the choice from the served
object's `exposed_tools` (None or absent: every tool), not from its tool context, which
a shelf builds from its catalogs: a call costs no more than before. The Python methods
stay callable: they are the application's own API, and MCP's resources read docs
through them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import ToolContext
from .served import Served
from .table import BY_NAME, BY_VERB, TOOLS


class ToolChoiceError(ValueError):
    """Names that are no tool served here; the message lists the valid ones."""


def chosen(served: Served, names: Iterable[str]) -> tuple[str, ...]:
    """The tool names `names` mean (each a tool's name or verb: `knowledge_get` or
    `get`), in the table's order; raises ToolChoiceError naming every unknown one and
    the tools `served` offers. Read from the table, not from `served.tool_context()`,
    which an audience router answers only within a request: the write tools are offered
    where `served` has an inbox (a `handbook.inbox.writable.Writable`)."""
    wanted = [n.strip() for n in names if n.strip()]
    writable = getattr(served, "inbox", None) is not None
    offered = [t for t in TOOLS if writable or not t.writes]
    verbs = ", ".join(t.verb for t in offered)
    found = {n: BY_NAME.get(n) or BY_VERB.get(n) for n in wanted}
    unknown = [n for n, tool in found.items() if tool is None or tool not in offered]
    if unknown:
        writes = any(tool is not None and tool.writes for tool in found.values())
        hint = " (the write tools are served only with an inbox)" if writes else ""
        shown = ", ".join(repr(n[:60]) for n in unknown[:10])
        raise ToolChoiceError(f"no tool {shown} here{hint}; the tools are {verbs}")
    if not wanted:
        raise ToolChoiceError(f"name at least one tool; the tools are {verbs}")
    picked = {tool.name for tool in found.values() if tool is not None}
    return tuple(t.name for t in offered if t.name in picked)


class Exposed:
    """`served`, offering only the tools named `tools` (checked by `chosen`)."""

    def __init__(self, served: Served, tools: Iterable[str] | str) -> None:
        self.served = served
        self.exposed_tools = chosen(served, tools.split(",") if isinstance(tools, str) else tools)

    def tool_context(self) -> ToolContext:
        return self.served.tool_context()._replace(tools=self.exposed_tools)

    def __getattr__(self, name: str) -> Any:  # the tools, status, bundles, admits, inbox
        return getattr(self.served, name)
