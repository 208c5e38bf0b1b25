"""`RemoteLibrary` against a real `handbook serve` app on loopback: the same answers as
the library it serves, and degraded mode — structured `unavailable` answers, never an
exception — when the server is stopped mid-test, answers garbage or refuses the token,
and recovery when it is back."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import loopback_server

from handbook import Library, RemoteLibrary
from handbook.serve.http import create_app

uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, allow_unsigned=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any, port: int) -> Iterator[None]:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def without_id(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("correlation_id", "response_chars")}


def test_same_answers_then_degraded_then_recovered(library: Library) -> None:
    port = free_port()
    remote = RemoteLibrary(f"http://127.0.0.1:{port}", timeout=5)
    calls = [
        ("list", (), {"kind": "device"}),
        ("get", ("device.acme.ac200",), {"section": "Register map"}),
        ("get", ("nope",), {}),
        ("search", ("word order",), {"limit": 3}),
        ("collect", (), {"ids": ["protocol.modbus", "nope"], "max_bytes": 5000}),
        ("ask", ("What is the Modbus port of the AC-200?",), {}),
    ]
    with serving(create_app(library), port):
        for name, args, kwargs in calls:
            assert without_id(getattr(remote, name)(*args, **kwargs)) == without_id(
                getattr(library, name)(*args, **kwargs)
            ), name
        assert remote.status()["library"] == "plant-floor"
    # the server is gone: every call answers, none raises
    assert remote.ask("What is the Modbus port?")["evidence_state"] == "unavailable"
    for name, args, kwargs in calls[:-1]:
        answer = getattr(remote, name)(*args, **kwargs)
        assert answer["error"]["code"] == "unavailable", name
    assert remote.collect(ids=["protocol.modbus"])["items"] == []
    with serving(create_app(library), port):  # back on the same address: calls work again
        assert remote.get("protocol.modbus")["found"] is True


class Garbage(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = b"<html>not the API</html>" if "search" in self.path else b"[1, 2, 3]"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_server_answering_garbage_is_unavailable() -> None:
    with loopback_server(Garbage) as url:
        remote = RemoteLibrary(url)
        assert remote.search("x")["error"]["code"] == "unavailable"
        assert remote.list()["error"]["code"] == "unavailable"
        assert remote.ask("x")["evidence_state"] == "unavailable"


def test_token(library: Library) -> None:
    port = free_port()
    with serving(create_app(library, token="t0ken"), port):
        assert (
            RemoteLibrary(f"http://127.0.0.1:{port}", token="t0ken").get("protocol.modbus")["found"]
            is True
        )
        refused = RemoteLibrary(f"http://127.0.0.1:{port}", token="wrong").get("protocol.modbus")
        assert refused["error"]["code"] == "unavailable" and "token" in refused["error"]["message"]


def test_a_slow_server_is_cut_off() -> None:
    class Slow(Garbage):
        def do_GET(self) -> None:
            time.sleep(3)
            super().do_GET()

    with loopback_server(Slow) as url:
        started = time.monotonic()
        answer = RemoteLibrary(url, timeout=0.5).status()
        assert answer["error"]["code"] == "unavailable"
        assert time.monotonic() - started < 3


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="http"):
        RemoteLibrary("ftp://example.com")
