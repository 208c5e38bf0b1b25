"""MCP over stdin/stdout, answering every request read before the client closed stdin.

`handbook mcp` serves here; the server itself (tools, resources, errors) is
`handbook.serve.mcp.build_server`, shared with MCP over HTTP.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator

import anyio
import mcp_types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from ..search.array_loading import for_a_server
from ..tools.served import Served
from .mcp import build_server

CANCELLED = "notifications/cancelled"


def run_stdio(served: Served) -> None:
    """Serve MCP on stdin/stdout until the client closes it, answering every request read
    before it closed (see `answered_before_eof`). Nothing else may write to stdout: it is
    the protocol stream."""
    from mcp.server.stdio import stdio_server

    for_a_server()

    async def main() -> None:
        server = build_server(served)
        async with (
            stdio_server() as (stdin, stdout),
            answered_before_eof(stdin, stdout) as (read, write),
        ):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


DRAIN_SECONDS = 10.0
"""How long requests still unanswered when stdin closes may take to be answered: ample
for any tool over a bundle, short enough that a server whose client left still exits
(what is unanswered then is cancelled, as the SDK does)."""


class _Unanswered:
    """The requests read from the client and not yet answered (a count per id): a
    request is settled by its reply, or by the client's own cancellation, after which
    the server never replies."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.none_left = anyio.Event()

    def read(self, item: SessionMessage | Exception) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, types.JSONRPCRequest):
            self.counts[str(message.id)] += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == CANCELLED:
            self._settle((message.params or {}).get("requestId"), every=True)

    def written(self, item: SessionMessage) -> None:
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self._settle(item.message.id, every=False)

    def _settle(self, request_id: object, every: bool) -> None:
        key = str(request_id)
        self.counts[key] = 0 if every else self.counts[key] - 1
        if self.counts[key] <= 0:
            del self.counts[key]
        if not self.counts:
            self.none_left.set()

    async def drained(self, seconds: float) -> None:
        """Back once every request read is settled, or after `seconds` at most."""
        if self.counts:
            self.none_left = anyio.Event()
            with anyio.move_on_after(seconds):
                await self.none_left.wait()


@contextlib.asynccontextmanager
async def answered_before_eof(
    stdin: ObjectReceiveStream[SessionMessage | Exception],
    stdout: ObjectSendStream[SessionMessage],
    seconds: float = DRAIN_SECONDS,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """(the streams to serve on) relaying `stdin` and `stdout`, where the end of `stdin`
    reaches the server only once every request read has been answered (or `seconds`
    have passed). A client that writes its requests and closes stdin at once (a pipe,
    a script) gets every answer, not only those done before the EOF.

    Works around the MCP Python SDK's issue 2678 (modelcontextprotocol/python-sdk,
    open as of mcp 2.3.0): on end of input the server cancels its in-flight requests
    and their replies are lost, with exit status 0. Uses only the public stream API and
    message types. It can be removed once the SDK release that fixes that issue is the
    lowest `mcp` this project allows; tests/test_hardening/test_mcp_stdio.py keeps
    checking the behaviour either way."""
    unanswered = _Unanswered()
    to_server, read = anyio.create_memory_object_stream[SessionMessage | Exception]()
    write, from_server = anyio.create_memory_object_stream[SessionMessage]()

    async def inbound() -> None:
        async with stdin, to_server:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async for item in stdin:
                    unanswered.read(item)
                    await to_server.send(item)
                await unanswered.drained(seconds)

    async def outbound() -> None:
        async with stdout, from_server:
            async for item in from_server:
                await stdout.send(item)
                unanswered.written(item)

    async with anyio.create_task_group() as tasks, read, write:  # closed first, on the way out
        tasks.start_soon(inbound)
        tasks.start_soon(outbound)
        yield read, write
