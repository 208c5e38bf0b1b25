"""The tool table is the one home of each tool's parameters and defaults: every served
class, and the `Served` protocol, takes exactly the table's parameters, in its order,
with its defaults (`Param.default`)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from handbook.inbox.writable import Writable
from handbook.libraries.client import RemoteLibrary
from handbook.libraries.library import Library
from handbook.libraries.shelf import Shelf
from handbook.tools.model import Tool
from handbook.tools.served import Served
from handbook.tools.table import TOOLS

READERS: tuple[type[Any], ...] = (Served, Library, Shelf, RemoteLibrary, Writable)
WRITERS: tuple[type[Any], ...] = (Writable,)


def expected(tool: Tool) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter a method serving `tool` takes after `self`."""
    named = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [
        (p.name, named, inspect.Parameter.empty if p.required else p.default) for p in tool.params
    ]
    if tool.writes:  # who is asking, as the transport authenticated them
        params.append(("principal", inspect.Parameter.KEYWORD_ONLY, None))
    if tool.filters:
        params.append(("filters", inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    return params


def taken(method: Any) -> list[tuple[str, Any, Any]]:
    """The same of a method; a keyword-only parameter counts as named unless it is the
    write tools' `principal` (the table's order, not the kind, is what transports use)."""
    parameters = list(inspect.signature(method).parameters.values())[1:]
    return [
        (
            p.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "principal"
            else p.kind,
            p.default,
        )
        for p in parameters
    ]


CASES = [
    pytest.param(tool, served, id=f"{served.__name__}.{tool.verb}")
    for tool in TOOLS
    for served in (WRITERS if tool.writes else READERS)
]


@pytest.mark.parametrize(("tool", "served"), CASES)
def test_every_served_method_takes_the_tables_parameters_and_defaults(
    tool: Tool, served: type[Any]
) -> None:
    assert taken(getattr(served, tool.verb)) == expected(tool)


def test_the_served_classes_serve_every_read_tool_and_only_the_inbox_writes() -> None:
    reads = {tool.verb for tool in TOOLS if not tool.writes}
    writes = {tool.verb for tool in TOOLS if tool.writes}
    for served in READERS:
        assert reads <= set(dir(served)), served
    for served in (Served, Library, Shelf, RemoteLibrary):
        assert not writes & set(dir(served)), served
    assert writes <= set(dir(Writable))
