"""`register_tools` on fake RPC registries: synchronous and asynchronous, one that fails
for one topic, failing and asynchronous reporters. Nothing ever raises; failed topics
come back and are reported."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handbook import Library
from handbook.serve.rpc import DEFAULT_TOPICS, register_tools
from handbook.tools.table import READ_TOOLS

READ_TOPICS = {DEFAULT_TOPICS[tool.verb] for tool in READ_TOOLS}
"""What a library served without an inbox registers: the write tools are not served."""


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, allow_unsigned=True)


class SyncRegistry:
    def __init__(self, refuse: str | None = None) -> None:
        self.handlers: dict[str, Callable[..., dict[str, Any]]] = {}
        self.refuse = refuse

    def register(self, topic: str, handler: Callable[..., dict[str, Any]]) -> None:
        if topic == self.refuse:
            raise RuntimeError(f"router refused {topic}")
        self.handlers[topic] = handler


class AsyncRegistry(SyncRegistry):
    async def register(self, topic: str, handler: Callable[..., dict[str, Any]]) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().register(topic, handler)


def test_sync_registry_gets_every_handler(library: Library) -> None:
    registry = SyncRegistry()
    assert register_tools(registry.register, library) == []
    assert set(registry.handlers) == READ_TOPICS
    answer = registry.handlers["knowledge.get"]("device.acme.ac200", section="Register map")
    assert answer["found"] is True and answer == library.get(
        "device.acme.ac200", section="Register map"
    )
    assert registry.handlers["knowledge.list"](kind="device")["count"] == 2
    assert registry.handlers["knowledge.search"]("modbus", limit=2)["count"] > 0
    json.dumps(answer)  # what travels over the wire


def test_async_registry_is_awaited(library: Library) -> None:
    registry = AsyncRegistry()
    outcome = register_tools(registry.register, library)
    assert not isinstance(outcome, list)
    assert asyncio.run(_await(outcome)) == []
    assert set(registry.handlers) == READ_TOPICS


async def _await(outcome: Any) -> Any:
    return await outcome


@pytest.mark.parametrize("kind", [SyncRegistry, AsyncRegistry])
def test_one_failing_topic_is_reported_and_returned(
    library: Library, kind: type[SyncRegistry]
) -> None:
    registry = kind(refuse="knowledge.get")
    messages: list[str] = []
    outcome = register_tools(registry.register, library, report=messages.append)
    failed = outcome if isinstance(outcome, list) else asyncio.run(_await(outcome))
    assert failed == ["knowledge.get"]
    assert set(registry.handlers) == READ_TOPICS - {"knowledge.get"}
    assert len(messages) == 1 and "knowledge.get" in messages[0] and "router refused" in messages[0]


def test_future_returning_registry_that_fails(library: Library) -> None:
    """autobahn's session.register returns a Future; a refused one fails when awaited."""

    async def main() -> tuple[list[str], list[str]]:
        loop = asyncio.get_running_loop()
        messages: list[str] = []

        def register(topic: str, handler: Callable[..., dict[str, Any]]) -> asyncio.Future[None]:
            future: asyncio.Future[None] = loop.create_future()
            if topic == "knowledge.search":
                future.set_exception(ValueError("wamp.error.procedure_already_exists"))
            else:
                future.set_result(None)
            return future

        outcome = register_tools(register, library, report=messages.append)
        assert not isinstance(outcome, list)
        return await outcome, messages

    failed, messages = asyncio.run(main())
    assert failed == ["knowledge.search"]
    assert "procedure_already_exists" in messages[0]


def test_failing_and_async_reporters_never_raise(library: Library) -> None:
    def broken_report(message: str) -> None:
        raise RuntimeError("the reporter is down too")

    assert register_tools(
        SyncRegistry(refuse="knowledge.list").register, library, report=broken_report
    ) == ["knowledge.list"]

    reported: list[str] = []

    async def async_report(message: str) -> None:
        reported.append(message)

    outcome = register_tools(
        SyncRegistry(refuse="knowledge.list").register, library, report=async_report
    )
    assert asyncio.run(_await(outcome)) == ["knowledge.list"]
    assert len(reported) == 1


def test_topics_override_and_unknown_names(library: Library) -> None:
    registry = SyncRegistry()
    messages: list[str] = []
    failed = register_tools(
        registry.register,
        library,
        topics={"get": "app.kb.get", "delete": "app.kb.delete"},
        report=messages.append,
    )
    assert failed == ["app.kb.delete"]
    assert "app.kb.get" in registry.handlers and "knowledge.get" not in registry.handlers
    assert "no handler named 'delete'" in messages[0]


@pytest.mark.parametrize(
    ("topic", "args", "kwargs"),
    [
        ("knowledge.get", (), {}),
        ("knowledge.get", (1, 2, 3, 4), {}),
        ("knowledge.search", (), {"nonsense": object()}),
        ("knowledge.list", (None, "x"), {"limit": -5}),
    ],
)
def test_handlers_answer_bad_calls_with_a_dict(
    library: Library, topic: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    registry = SyncRegistry()
    register_tools(registry.register, library)
    answer = registry.handlers[topic](*args, **kwargs)
    assert isinstance(answer, dict)
    assert "error" in answer or answer.get("found") is False or answer.get("count") == 0
    json.dumps(answer)
