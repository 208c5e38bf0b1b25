"""`handbook mcp` over stdio answers every request it read before stdin closed: a client
that pipes its requests and closes stdin at once (a script, `printf … | handbook mcp`)
used to lose the replies still in flight at EOF, with exit status 0 (the MCP Python
SDK's issue 2678). A real subprocess over a real pipe, several rounds since it is a race;
then the relay itself, in process, for what the pipe cannot show deterministically."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from conftest import PUBLIC
from mcp.shared.message import SessionMessage

from handbook.serve.mcp_stdio import answered_before_eof

ROUNDS = 5
CALLS = 20
HANDBOOK = str(Path(sys.executable).parent / "handbook")


def _requests() -> list[dict[str, Any]]:
    """initialize, initialized, `CALLS` tools/call and tools/list requests, then the
    slowest tools (collect, ask) last, right before the EOF."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    hello["clientInfo"] = {"name": "pipe", "version": "0"}
    sent: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    search = {"name": "knowledge_search", "arguments": {"query": "word order"}}
    for n in range(1, CALLS + 1):
        call = {"method": "tools/call", "params": search} if n % 2 else {"method": "tools/list"}
        sent.append({"jsonrpc": "2.0", "id": n, **call})
    slow = [
        ("knowledge_collect", {"query": "modbus register", "max_bytes": 100_000}),
        ("knowledge_ask", {"question": "What is the word order of the AC200 registers?"}),
    ]
    for n, (name, arguments) in enumerate(slow, CALLS + 1):
        params = {"name": name, "arguments": arguments}
        sent.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    return sent


def test_every_piped_request_is_answered_before_exit(plant_floor_bundle: Path) -> None:
    sent = _requests()
    ids = [m["id"] for m in sent if "id" in m]
    payload = "".join(json.dumps(m) + "\n" for m in sent)
    command = [HANDBOOK, "mcp", "--bundle", str(plant_floor_bundle), "--key", PUBLIC]
    for _ in range(ROUNDS):
        # run() writes the payload and closes stdin at once, as a pipe does.
        done = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        replies = [json.loads(line) for line in done.stdout.splitlines()]
        assert Counter(r["id"] for r in replies) == Counter(ids), done.stderr
        assert all("result" in r for r in replies), [r for r in replies if "error" in r]
        called = [r["result"] for r in replies if r["id"] > 0 and "content" in r["result"]]
        assert called and not any(c["isError"] for c in called)


Streams = tuple[
    MemoryObjectSendStream[SessionMessage | Exception],
    MemoryObjectReceiveStream[SessionMessage | Exception],
    MemoryObjectSendStream[SessionMessage],
    MemoryObjectReceiveStream[SessionMessage],
]


def _streams() -> Streams:
    """(the client's end of stdin, stdin as the transport hands it over, stdout as the
    transport takes it, the client's end of stdout)."""
    client_in, stdin = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    stdout, client_out = anyio.create_memory_object_stream[SessionMessage](10)
    return client_in, stdin, stdout, client_out


def _message(raw: dict[str, Any]) -> SessionMessage:
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(raw))


REQUEST = _message({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
REPLY = _message({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}})


def test_the_end_of_input_waits_for_the_reply() -> None:
    async def main() -> None:
        client_in, stdin, stdout, client_out = _streams()
        async with answered_before_eof(stdin, stdout) as (read, write):
            await client_in.send(REQUEST)
            client_in.close()
            assert await read.receive() is REQUEST
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(anyio.WouldBlock):  # not the end of input: 7 is unanswered
                read.receive_nowait()
            await write.send(REPLY)
            assert await client_out.receive() is REPLY
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
        with pytest.raises(anyio.EndOfStream):  # stdout closed after the server's last word
            await client_out.receive()
        client_out.close()

    anyio.run(main)


def test_a_request_the_client_cancelled_is_not_waited_for() -> None:
    cancel = {"requestId": 7, "reason": "changed my mind"}
    cancelled = _message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})

    async def main() -> None:
        client_in, stdin, stdout, client_out = _streams()
        async with answered_before_eof(stdin, stdout) as (read, _):
            for item in (REQUEST, cancelled):
                await client_in.send(item)
            client_in.close()
            assert [await read.receive(), await read.receive()] == [REQUEST, cancelled]
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
        client_out.close()

    anyio.run(main)


def test_the_wait_is_bounded() -> None:
    """A request never answered holds the end of input back `seconds` at most."""

    async def main() -> None:
        client_in, stdin, stdout, client_out = _streams()
        with anyio.fail_after(30):  # loose: the bound below is a hundredth of a second
            async with answered_before_eof(stdin, stdout, seconds=0.01) as (read, _):
                await client_in.send(REQUEST)
                client_in.close()
                assert await read.receive() is REQUEST
                with pytest.raises(anyio.EndOfStream):
                    await read.receive()
        client_out.close()

    anyio.run(main)
