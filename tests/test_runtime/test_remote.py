"""`Library.open(URL)`: update-safe loading against a real HTTP server on loopback that
serves good, tampered, rolled-back, expired, foreign, oversized, endless and slow
bundles. Every refusal names its cause, downloads stop at the listed size + 1 byte and
at the deadline, and the version high-water mark survives restarts and resets with
the trusted keys."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEY, PUBLIC, ROOT, loopback_server

from handbook import (
    DownloadError,
    ExpiredError,
    HashMismatchError,
    Library,
    LibraryMismatchError,
    RollbackError,
    SignatureError,
)
from handbook.bundle.signing import generate_private_key, load_private_key
from handbook_build import load_config
from handbook_build.pipeline import build

OTHER_PEM, OTHER_PUBLIC = generate_private_key()
OTHER_KEY = load_private_key(OTHER_PEM)
EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"


def files_of(folder: Path) -> dict[str, bytes]:
    root = folder.resolve()
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """name -> the files of a published bundle."""
    base = tmp_path_factory.mktemp("remote")
    config = load_config(EXAMPLE)
    made: dict[str, dict[str, bytes]] = {}
    for name, changes, key in [
        ("v1", {"version": "1.0.0"}, KEY),
        ("v2", {"version": "2.0.0"}, KEY),
        ("v2-again", {"version": "2.0.0", "site_name": "Rebuilt"}, KEY),
        ("expired", {"version": "3.0.0", "expires": "2020-01-01T00:00:00Z"}, KEY),
        ("foreign", {"version": "9.0.0", "library": "someone-else"}, KEY),
        ("other-key", {"version": "1.5.0"}, OTHER_KEY),
    ]:
        build(dataclasses.replace(config, **changes), base / name, key)
        made[name] = files_of(base / name)
    tampered = dict(made["v2"])
    content = next(n for n in tampered if n.startswith("content/"))
    tampered[content] = tampered[content].replace(b"a", b"b", 1)
    made["tampered"] = tampered
    return made


class Handler(BaseHTTPRequestHandler):
    """GET /<bundle>/<file> from the server's `bundles`; /<mode>:<bundle>/<file> plays
    tricks with one file: `endless` never stops, `slow` sends a byte a second, `stall`
    sends half and waits, `liar` announces a huge Content-Length."""

    bundles: ClassVar[dict[str, dict[str, bytes]]] = {}
    requests: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.requests.append(self.path)
        head, _, name = self.path.lstrip("/").partition("/")
        mode, _, bundle = head.rpartition(":")
        data = self.bundles.get(bundle, {}).get(name)
        if data is None:
            self.send_error(404)
            return
        if mode and name == self.trick_file(bundle):
            self.trick(mode, data)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.send_body(data)

    def send_body(self, data: bytes) -> None:
        with contextlib.suppress(
            OSError
        ):  # a client that refuses the length hangs up: as it should
            self.wfile.write(data)

    def trick_file(self, bundle: str) -> str:
        return "catalog.json"

    def trick(self, mode: str, data: bytes) -> None:
        self.send_response(200)
        if mode == "liar":
            self.send_header("Content-Length", str(10**12))
            self.end_headers()
            self.send_body(data)
            return
        self.end_headers()  # no length: the body runs until the connection closes
        try:
            if mode == "endless":
                while True:
                    self.wfile.write(b"x" * 65536)
            elif mode == "slow":
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(1)
            elif mode == "stall":
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                time.sleep(30)
        except OSError:  # the client hung up, as it should
            pass


@pytest.fixture(scope="module")
def server(bundles: dict[str, dict[str, bytes]]) -> Iterator[str]:
    with loopback_server(type("BundleHandler", (Handler,), {"bundles": bundles})) as url:
        yield url


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"cache_dir": tmp_path / "cache", "state_dir": tmp_path / "state"}


def open_url(
    url: str, dirs: dict[str, Path], keys: list[str] | None = None, **options: Any
) -> Library:
    """An eager open (every file fetched first): lazy opens are test_remote_lazy.py's."""
    options.setdefault("lazy", False)
    return Library.open(url, [PUBLIC] if keys is None else keys, **dirs, **options)


def test_a_good_bundle_loads_and_serves(
    server: str, dirs: dict[str, Path], bundles: dict[str, dict[str, bytes]]
) -> None:
    lib = open_url(f"{server}/v1/", dirs, expect_library="plant-floor")
    status = lib.status()
    assert (status["library"], status["version"], status["signature"]) == (
        "plant-floor",
        "1.0.0",
        "verified",
    )
    assert lib.get("device.acme.ac200")["found"] is True
    objects = dirs["cache_dir"] / "objects"
    assert {p.name for p in objects.iterdir()} >= {
        hashlib.sha256(b).hexdigest() for n, b in bundles["v1"].items() if n != "manifest.json"
    }


def test_cached_files_are_not_downloaded_again(server: str, dirs: dict[str, Path]) -> None:
    open_url(f"{server}/v1", dirs)
    Handler.requests.clear()
    lib = open_url(f"{server}/v1", dirs)
    assert lib.status()["version"] == "1.0.0"
    assert Handler.requests == [
        "/v1/manifest.json"
    ]  # every listed file came from the cache, re-hashed


@pytest.mark.parametrize(
    ("bundle", "error", "message"),
    [
        ("tampered", HashMismatchError, "content/"),
        ("expired", ExpiredError, "expired at 2020-01-01T00:00:00Z"),
        ("foreign", LibraryMismatchError, "someone-else"),
        ("other-key", SignatureError, "valid signature"),
        ("missing", DownloadError, "404"),
    ],
)
def test_bad_bundles_are_refused(
    server: str, dirs: dict[str, Path], bundle: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        open_url(f"{server}/{bundle}", dirs, expect_library="plant-floor")


def test_rollback_is_refused_and_the_mark_survives_restarts(
    server: str, dirs: dict[str, Path]
) -> None:
    assert open_url(f"{server}/v2", dirs).status()["version"] == "2.0.0"
    with pytest.raises(RollbackError, match=r"1\.0\.0 is older than 2\.0\.0"):
        open_url(f"{server}/v1", dirs)  # a new Library, as after a restart: the mark is on disk
    mark = json.loads((dirs["state_dir"] / "highwater.json").read_text())
    assert [m["version"] for m in mark.values()] == ["2.0.0"]
    with pytest.raises(RollbackError, match="other contents"):
        open_url(f"{server}/v2-again", dirs)  # same version, different bytes
    assert open_url(f"{server}/v1", dirs, allow_rollback=True).status()["version"] == "1.0.0"
    with pytest.raises(RollbackError):
        open_url(f"{server}/v1", dirs)  # an allowed rollback does not lower the mark


def test_the_mark_resets_when_the_trusted_keys_change(server: str, dirs: dict[str, Path]) -> None:
    open_url(f"{server}/v2", dirs)
    assert (
        open_url(f"{server}/other-key", dirs, keys=[str(OTHER_PUBLIC)]).status()["version"]
        == "1.5.0"
    )
    with pytest.raises(RollbackError):
        open_url(f"{server}/v1", dirs)  # the old key set keeps its own mark


def test_reload_refuses_a_rollback_and_keeps_serving(
    server: str, dirs: dict[str, Path], bundles: dict[str, dict[str, bytes]]
) -> None:
    lib = open_url(f"{server}/v2", dirs)
    bundles["swap"] = bundles["v2"]
    lib2 = open_url(f"{server}/swap", dirs)
    bundles["swap"] = bundles["v1"]
    answer = lib2.reload()
    assert answer["reloaded"] is False and "older" in answer["error"]
    assert lib2.status()["version"] == "2.0.0" and lib.status()["version"] == "2.0.0"
    bundles.pop("swap")


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("endless", "more than the"),
        ("liar", "announces"),
        ("slow", "too slow|timed out|cannot fetch"),
        ("stall", "timed out|too slow|cannot fetch"),
    ],
)
def test_endless_and_slow_transfers_are_cut_off(
    server: str, dirs: dict[str, Path], mode: str, message: str
) -> None:
    started = time.monotonic()
    with pytest.raises(DownloadError, match=message):
        open_url(f"{server}/{mode}:v1", dirs, timeout=2.0)
    assert time.monotonic() - started < 20  # bounded by the deadline, not by the server


def test_an_oversized_manifest_is_refused_before_parsing(
    server: str, dirs: dict[str, Path], bundles: dict[str, dict[str, bytes]]
) -> None:
    from handbook.bundle.manifest import MAX_MANIFEST_BYTES

    bundles["huge"] = {"manifest.json": b"{" + b" " * (MAX_MANIFEST_BYTES + 10) + b"}"}
    try:
        with pytest.raises(DownloadError, match=r"more than the|announces"):
            open_url(f"{server}/huge", dirs)
    finally:
        bundles.pop("huge")
