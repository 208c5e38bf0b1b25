"""A host that drips a response cannot hold a remote read past the caller's deadline.

A real server on loopback (a raw socket, so it can send what no HTTP library would)
sends one byte every 0.2 s: of the status line and headers, which a per-read socket
timeout never notices, or of the body. Every read ends at the deadline with a message
that says what did not arrive, and the file's lock is free again afterwards: the next
call, once the host behaves, is answered.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import PUBLIC

from handbook import DownloadError, Library
from handbook.bundle.layout import MANIFEST, SEARCH

DEADLINE = 1.0
DRIP_SECONDS = 0.2
DRIP_BYTES = 50
"""The server gives up after 10 s: long enough that a reader cut off only by it fails
the test, short enough that the old code's failure does not hang the run."""


@dataclass
class DripHost:
    """Serves a bundle folder at `/`; the files named in `drip` are sent a byte every
    0.2 s, from the status line on (`headers`) or after complete headers (`body`)."""

    bundle: Path
    drip: dict[str, str] = field(default_factory=dict)
    url: str = ""
    stop: threading.Event = field(default_factory=threading.Event)

    def serve(self, listener: socket.socket) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            name = request.split(b" ", 2)[1].decode().lstrip("/")
            path = self.bundle / name
            if name.startswith("objects/") or not path.is_file():
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            data = path.read_bytes()
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            mode = self.drip.get(name)
            if mode == "headers":
                self.trickle(conn, head + b"X-Padding: " + b"x" * DRIP_BYTES)
            elif mode == "body":
                conn.sendall(head)
                self.trickle(conn, data[:DRIP_BYTES])
            else:
                conn.sendall(head + data)

    def trickle(self, conn: socket.socket, data: bytes) -> None:
        for byte in data:
            if self.stop.wait(DRIP_SECONDS):
                return
            conn.sendall(bytes([byte]))


@pytest.fixture
def host(plant_floor_bundle: Path) -> Iterator[DripHost]:
    listener = socket.create_server(("127.0.0.1", 0))
    served = DripHost(plant_floor_bundle, url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    thread = threading.Thread(target=served.serve, args=(listener,), daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept
        listener.close()
        thread.join(timeout=5)


def open_remote(host: DripHost, tmp_path: Path, **options: object) -> Library:
    return Library.open(
        host.url,
        [PUBLIC],
        cache_dir=tmp_path / "cache",
        state_dir=tmp_path / "state",
        timeout=DEADLINE,
        **options,  # type: ignore[arg-type]
    )


def test_dripped_headers_end_a_lazy_read_at_the_deadline_and_free_the_file(
    host: DripHost, tmp_path: Path
) -> None:
    lib = open_remote(host, tmp_path)
    host.drip[SEARCH] = "headers"
    started = time.monotonic()
    answer = lib.search("compressor")
    elapsed = time.monotonic() - started
    assert answer["error"]["code"] == "integrity_error", answer
    assert re.match(
        rf"{re.escape(SEARCH)}: too slow; no complete response headers from "
        r"127\.0\.0\.1:\d+ within 1 s \(the deadline of this download\)",
        answer["error"]["message"],
    ), answer["error"]["message"]
    assert elapsed < 3 * DEADLINE, f"the read took {elapsed:.1f} s"
    # The file's lock was released with the failure: once the host behaves, the
    # next call downloads the file and answers.
    del host.drip[SEARCH]
    assert lib.search("compressor")["count"] > 0


def test_dripped_headers_of_the_manifest_refuse_the_open(host: DripHost, tmp_path: Path) -> None:
    host.drip[MANIFEST] = "headers"
    with pytest.raises(
        DownloadError, match=r"manifest\.json: too slow; no complete response headers from"
    ):
        open_remote(host, tmp_path)


def test_a_dripped_body_ends_at_the_deadline_and_says_how_much_came(
    host: DripHost, tmp_path: Path
) -> None:
    lib = open_remote(host, tmp_path)
    host.drip[SEARCH] = "body"
    answer = lib.search("compressor")
    assert re.match(
        rf"{re.escape(SEARCH)}: too slow; no complete body from 127\.0\.0\.1:\d+ within "
        r"1 s \(the deadline of this download\); [1-9]\d* bytes of it had arrived",
        answer["error"]["message"],
    ), answer["error"]["message"]


def test_an_eager_fetch_is_bounded_the_same_way(host: DripHost, tmp_path: Path) -> None:
    host.drip[SEARCH] = "headers"
    with pytest.raises(
        DownloadError, match=rf"{re.escape(SEARCH)}: too slow; no complete response headers"
    ):
        open_remote(host, tmp_path, lazy=False)
