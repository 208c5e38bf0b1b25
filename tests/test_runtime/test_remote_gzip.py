"""Bundle files over the wire gzip-compressed, as CDNs and `handbook serve` send them to a
reader that accepts it: the same verified answers for fewer bytes, and a hostile stream
(a bomb, a broken or unfinished stream, an encoding nobody asked for) refused without
reading more than the manifest allows."""

from __future__ import annotations

import contextlib
import gzip
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import PUBLIC, live, loopback_server

from handbook import Library
from handbook.bundle.layout import SEARCH
from handbook.serve.http import create_app

QUERY = "register map"
DOC = "device.acme.ac200"


class Handler(BaseHTTPRequestHandler):
    """GET /<path> of `root`, gzip-compressed for clients that accept it; `hostile`
    replaces one file's stream (name -> (Content-Encoding, body))."""

    root: ClassVar[Path]
    hostile: ClassVar[dict[str, tuple[str, bytes]]] = {}
    sent: ClassVar[dict[str, int]] = {}
    lock: ClassVar[threading.Lock] = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        name = self.path.lstrip("/")
        path = self.root / name
        if name.startswith("objects/") or not path.is_file():
            self.send_error(404)
            return
        encoding, body = "identity", path.read_bytes()
        if "gzip" in self.headers.get("Accept-Encoding", ""):
            encoding, body = "gzip", gzip.compress(body, mtime=0)
        encoding, body = self.hostile.get(name, (encoding, body))
        with self.lock:
            self.sent[name] = len(body)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if encoding != "identity":
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)


@pytest.fixture
def server(plant_floor_bundle: Path) -> Iterator[tuple[str, type[Handler]]]:
    handler = type("H", (Handler,), {"root": plant_floor_bundle, "hostile": {}, "sent": {}})
    with loopback_server(handler) as url:
        yield url, handler


def opened(url: str, tmp_path: Path) -> Library:
    return Library.open(
        url + "/", [PUBLIC], cache_dir=tmp_path / "cache", state_dir=tmp_path / "state"
    )


def test_a_compressed_transfer_gives_the_same_verified_answers(
    server: tuple[str, type[Handler]], plant_floor_bundle: Path, tmp_path: Path
) -> None:
    url, handler = server
    local = Library.open(plant_floor_bundle, [PUBLIC])
    remote = opened(url, tmp_path)
    assert remote.search(QUERY)["hits"] == local.search(QUERY)["hits"]
    assert remote.get(DOC)["content"] == local.get(DOC)["content"]
    sent = handler.sent
    raw = {name: (plant_floor_bundle / name).stat().st_size for name in sent}
    assert SEARCH in sent and sum(sent.values()) < 0.6 * sum(raw.values())


@pytest.mark.parametrize(
    ("encoding", "body", "says"),
    [
        ("gzip", gzip.compress(b"\0" * (8 << 20)), "more than"),  # a bomb: 8 MB from 8 kB
        ("gzip", gzip.compress(b"not the file")[:-8], "gzip"),  # ends before its trailer
        ("gzip", b"\x1f\x8b\x08\x00garbage, not deflate", "gzip"),
        ("br", b"\x0b\x02\x80hello", "Content-Encoding"),  # never asked for
    ],
    ids=["bomb", "unfinished", "broken", "brotli"],
)
def test_a_hostile_stream_is_refused_naming_the_file(
    server: tuple[str, type[Handler]], tmp_path: Path, encoding: str, body: bytes, says: str
) -> None:
    url, handler = server
    handler.hostile[SEARCH] = (encoding, body)
    answer = opened(url, tmp_path).search(QUERY)
    assert answer.get("hits", []) == []
    message = answer["error"]["message"]
    assert SEARCH in message and says in message, message


def test_serve_sends_bundle_files_gzipped_to_who_accepts_it(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    library = Library.open(plant_floor_bundle, [PUBLIC])
    data = (plant_floor_bundle / SEARCH).read_bytes()
    with live(create_app(library)) as address:
        base = f"http://{address[0]}:{address[1]}"

        def fetch(headers: dict[str, str]) -> tuple[int, Any, bytes]:
            request = urllib.request.Request(f"{base}/bundle/{SEARCH}", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, response.headers, response.read()
            except urllib.error.HTTPError as exc:
                with exc:
                    return exc.code, exc.headers, b""

        status, headers, body = fetch({"Accept-Encoding": "gzip"})
        assert status == 200 and headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(body) == data and len(body) < len(data)
        assert headers["Vary"] == "Accept-Encoding" and headers["ETag"].endswith('-gz"')
        assert fetch({"Accept-Encoding": "gzip", "If-None-Match": headers["ETag"]})[0] == 304
        for plain in ({}, {"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip;q=0"}):
            status, headers, body = fetch(plain)
            assert status == 200 and "Content-Encoding" not in headers and body == data
        # and the remote reader, which asks for gzip, reads the served bundle
        remote = opened(f"{base}/bundle", tmp_path)
        assert remote.search(QUERY)["hits"] == library.search(QUERY)["hits"]
