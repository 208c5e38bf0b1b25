"""The other side of the wire is not trusted either: a `handbook serve` that drips or
nests its answers cannot hold or crash a `RemoteLibrary`, and the knowledge provider
takes a correlation id only in the grammar every transport applies.

The servers are raw sockets on loopback, so they can send what no HTTP library would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handbook import Library
from handbook.access.actor import Actor
from handbook.libraries.client import ANSWER_DEPTH, RemoteLibrary
from handbook.libraries.provider import HandbookProvider

DEADLINE = 1.0


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """http://127.0.0.1:PORT of a server that reads a request's head and then calls
    `answer(conn, stop)`; stopped (every connection closed) on the way out."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(4096)
            answer(conn, stop)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def drip_headers(conn: socket.socket, stop: threading.Event) -> None:
    """A status line and headers one byte every 0.2 s, for 10 s at most: a per-read
    socket timeout never fires on it."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"x" * 50:
        if stop.wait(0.2):
            return
        conn.sendall(bytes([byte]))


def answer_with(body: bytes) -> Callable[[socket.socket, threading.Event], None]:
    def answer(conn: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        conn.sendall(head.encode() + b"\r\nConnection: close\r\n\r\n" + body)

    return answer


def test_a_server_dripping_its_headers_cannot_hold_a_remote_call() -> None:
    with raw_server(drip_headers) as url:
        remote = RemoteLibrary(url, timeout=DEADLINE)
        started = time.monotonic()
        answer = remote.search("anything")
        elapsed = time.monotonic() - started
    assert answer["error"]["code"] == "unavailable"
    assert "TimeoutError" in answer["error"]["message"]
    assert elapsed < 3 * DEADLINE  # the one loose bound: the server drips for 10 s


@pytest.mark.parametrize("depth", [ANSWER_DEPTH + 1, 3_000, 100_000])
def test_an_answer_nested_past_any_real_answer_is_unavailable_not_a_crash(depth: int) -> None:
    body = b'{"hits": ' + b"[" * depth + b"]" * depth + b"}"
    with raw_server(answer_with(body)) as url:
        answer = RemoteLibrary(url, timeout=5).search("anything")
    assert answer["error"]["code"] == "unavailable"
    assert f"nested deeper than {ANSWER_DEPTH} levels" in answer["error"]["message"]


def test_an_answer_within_the_depth_is_read() -> None:
    """The control: metadata nested as deep as the build allows still comes through."""
    nested: object = "leaf"
    for _ in range(32):
        nested = [nested]
    body = b'{"count": 0, "docs": [], "note": ' + repr(nested).replace("'", '"').encode() + b"}"
    with raw_server(answer_with(body)) as url:
        answer = RemoteLibrary(url, timeout=5).list()
    assert "error" not in answer and answer["count"] == 0


@pytest.mark.parametrize(
    "correlation_id",
    ["x" * 100_000, "req\x1b]52;c;aGk=\x07", "req\u202eevil", "", "two words", 42],
    ids=["100k", "osc52", "bidi", "empty", "space", "int"],
)
def test_the_provider_refuses_a_correlation_id_outside_the_grammar(
    fleet_bundle: Path, correlation_id: object, caplog: pytest.LogCaptureFixture
) -> None:
    provider = HandbookProvider(Library.open(fleet_bundle, allow_unsigned=True))
    actor = Actor("dispatcher-7", "northwind", "fleet-ops")
    with caplog.at_level(logging.DEBUG):
        answer = asyncio.run(provider.ask("vehicle damaged", actor, correlation_id))  # type: ignore[arg-type]
    assert answer["error"]["code"] == "bad_arguments"
    assert answer["evidence_state"] == "unavailable" and answer["sources"] == []
    assert answer["correlation_id"] != correlation_id and len(answer["correlation_id"]) == 32
    logged = "".join(r.getMessage() + repr(r.__dict__) for r in caplog.records)
    assert not isinstance(correlation_id, str) or not correlation_id or correlation_id not in logged


def test_the_provider_echoes_a_correlation_id_in_the_grammar(fleet_bundle: Path) -> None:
    provider = HandbookProvider(Library.open(fleet_bundle, allow_unsigned=True))
    actor = Actor("dispatcher-7", "northwind", "fleet-ops")
    answer = asyncio.run(provider.ask("vehicle damaged", actor, "req-42:a/b"))
    assert "error" not in answer and answer["correlation_id"] == "req-42:a/b"
