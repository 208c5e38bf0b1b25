"""The --tools option `handbook serve`, `handbook mcp` and `handbook tools` share: offer
only some tools (`handbook.tools.exposed`), refused at once when it names no tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ..tools.exposed import Exposed, ToolChoiceError
from ..tools.served import Served

F = TypeVar("F", bound=Callable[..., Any])


def tools_option(command: F) -> F:
    """--tools NAMES, handed to `command` as `tool_names: str | None`."""
    return click.option(
        "--tools",
        "tool_names",
        metavar="NAMES",
        help="Offer only these tools, comma-separated (verbs or names: list,get,search); "
        "the others are neither listed nor callable [default: every tool].",
    )(command)


def exposing(served: Served, tool_names: str | None) -> Served:
    """`served`, offering only `tool_names` when given; a usage error listing the valid
    names when one is not a tool served here."""
    if tool_names is None:
        return served
    try:
        return cast(Served, Exposed(served, tool_names))
    except ToolChoiceError as exc:
        raise click.UsageError(f"--tools: {exc}") from None
