"""The one dispatch: how every transport calls a tool on a served object.

`call(served, name, arguments)` looks the tool up in the table, refuses an unknown tool
or parameter with the same structured error whatever the transport, turns the JSON
arguments into the handler's (null means "not given"), and calls the handler. HTTP
query strings and command lines first turn their text into JSON values with
`from_text`, by the same table. Nothing here raises.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from ..access.actor import ActorError, acting, from_details
from ..bounds import clip, refusal, with_size
from .model import Tool
from .served import Served
from .table import BY_NAME, served_tools

Dispatch = Callable[[Served, str, Mapping[str, Any] | None, str | None], dict[str, Any]]
"""What the transports call a tool through: `call`, or `call` wrapped (a request log)."""


def call(
    served: Served,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    principal: str | None = None,
) -> dict[str, Any]:
    """The answer of tool `name` to `arguments` (a JSON object), or a structured error.
    `principal` is who is asking, as the transport authenticated them: the write tools
    attribute what they store to it."""
    tool = BY_NAME.get(name) if isinstance(name, str) else None
    exposed = getattr(served, "exposed_tools", None)  # `handbook.tools.exposed`
    if tool is not None and (
        (exposed is not None and tool.name not in exposed)
        or (tool.writes and not served.tool_context().writable)
    ):
        tool = None  # not served here: the same answer as a tool that does not exist
    if tool is None:
        names = ", ".join(t.name for t in served_tools(served.tool_context()))
        return failure("unknown_tool", f"unknown tool {clip(str(name))!r}; the tools are {names}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return failure("bad_arguments", f"{tool.name}: the arguments must be an object of names")
    args: dict[str, Any] = {}
    fields: Collection[str] = ()
    if tool.filters and any(tool.param(k) is None for k in arguments if isinstance(k, str)):
        fields = served.tool_context().filters
    for key, value in arguments.items():
        param = tool.param(key) if isinstance(key, str) else None
        if param is None and key not in fields:
            return unknown_parameter(tool, key, fields)
        if value is None:
            continue
        problem = _type_problem(param.schema if param else _FILTER, value)
        if problem:
            return failure("bad_arguments", f"{tool.name}: {clip(str(key), 80)} {problem}")
        if param is None:
            args[key] = value  # a filter on a frontmatter field
        elif param.name in args:
            return failure("bad_arguments", f"{tool.name}: {param.name} is given twice")
        else:
            args[param.name] = param.to_python(value) if param.to_python else value
    missing = [p.name for p in tool.params if p.required and p.name not in args]
    if missing:
        return failure("bad_arguments", f"{tool.name} needs {', '.join(missing)}")
    if tool.writes:
        args["principal"] = principal
    try:
        answer = getattr(served, tool.verb)(**args)
    except Exception as exc:  # a served object of someone else's that raised
        return failure("internal_error", f"{type(exc).__name__}: {exc}")
    return dict(answer)


_FILTER = {"type": ["string", "integer", "boolean"]}
_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def _type_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    """Why `value` is not of the JSON type `schema` names (lists: their items too), or
    None. Ranges and formats are the handlers' to judge, in their own words."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    types = tuple(t for kind in kinds for t in _TYPES.get(kind, ()))
    if not isinstance(value, types) or (isinstance(value, bool) and "boolean" not in kinds):
        return f"must be {' or '.join(kinds)}, not {type(value).__name__}"
    items = schema.get("items")
    if isinstance(value, (list, tuple)) and isinstance(items, Mapping):
        for item in value:
            if problem := _type_problem(items, item):
                return f"items {problem}"
    return None


def refused(answer: Mapping[str, Any]) -> bool:
    """Whether `answer` refuses the call (an error), as opposed to answering it: a doc
    that is not there (`found: false`) is an answer, with suggestions."""
    return isinstance(answer.get("error"), dict) and answer.get("found") is not False


def unknown_parameter(tool: Tool, key: Any, fields: Collection[str] = ()) -> dict[str, Any]:
    takes = ", ".join(p.name for p in tool.params)
    if tool.filters:
        takes += (
            f", and the filter fields {', '.join(sorted(fields))}"
            if fields
            else ", and no filter field"
        )
    message = f"{tool.name} has no parameter {clip(str(key), 80)!r}; it takes {takes}"
    return failure("unknown_parameter", message)


def failure(code: str, message: str) -> dict[str, Any]:
    """A refusal in the handlers' own shape (sized, not truncated)."""
    return with_size({"error": refusal(code, message), "truncated": False})


def from_text(tool: Tool, pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, Any], str | None]:
    """(JSON arguments, None) from (name, text) pairs, as a query string or a command
    line gives them: each value converted by its parameter's rule; a list parameter may
    repeat or be comma-separated. A repeated name of any other parameter is refused
    (which value was meant?): (partial arguments, why)."""
    args: dict[str, Any] = {}
    for key, text in pairs:
        param = tool.param(key)
        value: Any = param.from_text(text) if param and param.from_text else text
        name = param.name if param else key
        if name not in args:
            args[name] = value
        elif isinstance(args[name], list) and isinstance(value, list):
            args[name] = [*args[name], *value]
        else:
            return args, f"{tool.name}: {clip(key, 80)} is given twice"
    return args, None


def handler(served: Served, tool: Tool) -> Callable[..., dict[str, Any]]:
    """A function for RPC registries: positional arguments in the table's order, or
    keywords, answered through `call`. The keyword `details` is the framework's call
    details, never a tool parameter: an actor context is read from it (`handbook.access.actor`)."""
    order = [p.name for p in tool.params]

    def handle(*args: Any, details: Any = None, **kwargs: Any) -> dict[str, Any]:
        try:
            actor = from_details(details)
        except ActorError as exc:
            return failure(exc.code, str(exc))
        with acting(actor) if actor is not None else contextlib.nullcontext():
            return answer(args, kwargs)

    def answer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(order):
            return failure(
                "bad_arguments", f"{tool.name} takes at most {len(order)} positional arguments"
            )
        given = dict(zip(order, args, strict=False))
        twice = sorted(set(given) & set(kwargs))
        if twice:
            return failure("bad_arguments", f"{tool.name}: {', '.join(twice)} given twice")
        return call(served, tool.name, {**given, **kwargs})

    handle.__name__ = tool.verb
    handle.__doc__ = tool.summary
    return handle
