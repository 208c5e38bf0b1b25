"""A reporter that fails while `register_tools` reports a failed topic is never silent:
its exception is logged as a warning (type and message) on the ``handbook.rpc`` logger,
whether it raised at once or from the awaitable it returned. Nothing raises still."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handbook import Library
from handbook.serve.rpc import register_tools


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, allow_unsigned=True)


def refusing(topic: str, handler: Callable[..., dict[str, Any]]) -> None:
    if topic == "knowledge.list":
        raise RuntimeError("router refused it")


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records]


def test_a_reporter_that_raises_is_logged(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(message: str) -> None:
        raise OSError("the reporter is down")

    with caplog.at_level(logging.WARNING, logger="handbook.rpc"):
        assert register_tools(refusing, library, report=broken) == ["knowledge.list"]
    assert logged(caplog) == [
        (
            "handbook.rpc",
            logging.WARNING,
            "the RPC reporter failed (OSError: the reporter is down) reporting: knowledge "
            "tool 'knowledge.list' not registered: RuntimeError: router refused it",
        )
    ]


def test_an_async_reporter_that_fails_is_logged(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(message: str) -> None:
        raise ValueError("the bus is gone")

    async def main() -> list[str]:
        outcome = register_tools(refusing, library, report=broken)
        assert not isinstance(outcome, list)
        return await outcome

    with caplog.at_level(logging.WARNING, logger="handbook.rpc"):
        assert asyncio.run(main()) == ["knowledge.list"]
    [(name, level, message)] = logged(caplog)
    assert (name, level) == ("handbook.rpc", logging.WARNING)
    assert message.startswith("the RPC reporter failed (ValueError: the bus is gone) reporting:")


def test_a_working_reporter_logs_nothing(
    library: Library, caplog: pytest.LogCaptureFixture
) -> None:
    messages: list[str] = []
    with caplog.at_level(logging.WARNING, logger="handbook.rpc"):
        assert register_tools(refusing, library, report=messages.append) == ["knowledge.list"]
    assert len(messages) == 1 and logged(caplog) == []
