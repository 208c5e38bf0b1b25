"""`register_tools`: the handlers on any RPC framework that can register a callable
under a name — WAMP (autobahn), an application platform's injected session, a message
bus, a plugin host.

Handbook never imports the framework: the caller passes its `register(topic, handler)`
(a bound method or a small lambda adapting the argument order). Registration is where
deployments fail (a router refuses a name, a session is not up yet), and a knowledge
library must never take its host application down with it: every failure is reported
and returned, nothing raises. A reporter that fails itself is logged (a warning on
the ``handbook.rpc`` logger), so no failure goes unseen.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..tools.dispatch import handler
from ..tools.served import Served
from ..tools.table import TOOLS, served_tools

DEFAULT_TOPICS: Mapping[str, str] = {tool.verb: f"knowledge.{tool.verb}" for tool in TOOLS}
"""Handler name (the tool's verb) -> topic, for every tool of the table. A handler takes
the tool's parameters by keyword, or positionally in the table's order
(``get(doc_id, section=None, offset=0, revision=None, lang=None)``), and returns the
tool's JSON-serializable dict; unknown parameters get the same structured error as on
every other transport."""

Register = Callable[[str, Callable[..., dict[str, Any]]], Any]
Report = Callable[[str], Any]
log = logging.getLogger("handbook.rpc")


def handlers(served: Served) -> dict[str, Callable[..., dict[str, Any]]]:
    """The handlers by name, answered through `handbook.tools.dispatch`; they never raise."""
    return {tool.verb: handler(served, tool) for tool in served_tools(served.tool_context())}


def register_tools(
    register: Register,
    served: Served,
    topics: Mapping[str, str] | None = None,
    report: Report | None = None,
) -> list[str] | Awaitable[list[str]]:
    """Register each handler under its topic and return the topics that failed.

    `topics` overrides topic names by handler name (``{"get": "app.knowledge.get"}``);
    unknown handler names are reported as failures. `register` may be synchronous or
    return an awaitable (a coroutine, a Future, a Deferred adapted to asyncio), and so
    may `report(message)`. When everything was synchronous the list comes back at once;
    otherwise an awaitable of it does, to be awaited where the registry lives. Either
    way no exception escapes: a failure is reported and its topic returned."""
    available = handlers(served)
    named = {**{v: t for v, t in DEFAULT_TOPICS.items() if v in available}, **(topics or {})}
    failed: list[str] = []
    pending: list[tuple[str, Awaitable[Any]]] = []
    reports: list[tuple[str, Awaitable[Any]]] = []

    def fail(topic: str, problem: str) -> None:
        failed.append(topic)
        message = f"knowledge tool {topic!r} not registered: {problem}"
        outcome = _safe_report(report, message)
        if outcome is not None:
            reports.append((message, outcome))

    for name, topic in named.items():
        handler = available.get(name)
        if handler is None:
            fail(str(topic), f"no handler named {name!r}; expected one of {', '.join(available)}")
            continue
        try:
            result = register(topic, handler)
        except Exception as exc:  # the contract: report, never raise
            fail(topic, f"{type(exc).__name__}: {exc}")
            continue
        if inspect.isawaitable(result):
            pending.append((topic, result))
    if not pending and not reports:
        return failed
    return _finish(failed, pending, reports, fail)


async def _finish(
    failed: list[str],
    pending: list[tuple[str, Awaitable[Any]]],
    reports: list[tuple[str, Awaitable[Any]]],
    fail: Callable[[str, str], None],
) -> list[str]:
    for topic, result in pending:
        try:
            await result
        except Exception as exc:
            fail(topic, f"{type(exc).__name__}: {exc}")
    while reports:
        message, outcome = reports.pop(0)
        try:
            await outcome
        except Exception as exc:  # a failing reporter must not fail its host
            _reporter_failed(exc, message)
    return failed


def _safe_report(report: Report | None, message: str) -> Awaitable[Any] | None:
    """Call `report`; its awaitable, if it returned one, for the caller to await. A
    reporter that raises is logged instead."""
    if report is None:
        return None
    try:
        outcome = report(message)
    except Exception as exc:
        _reporter_failed(exc, message)
        return None
    return outcome if inspect.isawaitable(outcome) else None


def _reporter_failed(exc: Exception, message: str) -> None:
    """The one place a failing reporter is seen: what it raised, and what it was given."""
    log.warning("the RPC reporter failed (%s: %s) reporting: %s", type(exc).__name__, exc, message)
