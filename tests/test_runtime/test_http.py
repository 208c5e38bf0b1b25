"""`handbook serve` against a real server on loopback (uvicorn in a thread, plain HTTP
clients): every endpoint, bundle files by hash, odd and hostile paths, the token,
concurrency, reload under load, and a property-based run over the OpenAPI parameters."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import threading
import time
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT, get_json, live, request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handbook import Library
from handbook.libraries.reloader import Reloader
from handbook.serve.http import create_app
from handbook.tools.table import READ_TOOLS
from handbook_build import load_config
from handbook_build.pipeline import build

uvicorn = pytest.importorskip("uvicorn")

EXAMPLE = ROOT / "examples" / "plant-floor"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small stand-in site, with a symlink that must never be followed."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<h1>home</h1>")
    (root / "guide").mkdir()
    (root / "guide" / "index.html").write_text("<h1>guide</h1>")
    (root / "404.html").write_text("<h1>missing</h1>")
    (root / "style.css").write_text("body{}")
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("do not serve")
    (root / "leak.txt").symlink_to(secret)
    return root


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


@pytest.fixture(scope="module")
def server(library: Library, site: Path) -> Iterator[tuple[str, int]]:
    with live(create_app(library, site=site)) as address:
        yield address


# -- endpoints -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "call", "status"),
    [
        ("/api/v1/list", lambda lib: lib.list(), 200),
        (
            "/api/v1/list?query=compressor&kind=device&limit=1",
            lambda lib: lib.list(query="compressor", kind="device", limit="1"),
            200,
        ),
        ("/api/v1/get?id=device.acme.ac200", lambda lib: lib.get("device.acme.ac200"), 200),
        (
            "/api/v1/get?id=device.acme.ac200&section=register%20map",
            lambda lib: lib.get("device.acme.ac200", section="register map"),
            200,
        ),
        ("/api/v1/get?id=nope", lambda lib: lib.get("nope"), 404),
        (
            "/api/v1/search?query=word%20order&limit=3",
            lambda lib: lib.search("word order", limit="3"),
            200,
        ),
        ("/api/v1/search?query=foo~5", lambda lib: lib.search("foo~5"), 400),
    ],
)
def test_api_answers_are_the_handlers_dicts(
    server: tuple[str, int], library: Library, path: str, call: Any, status: int
) -> None:
    got_status, body = get_json(server, path)
    assert got_status == status
    assert body == call(library)


def test_status_says_what_is_served(server: tuple[str, int]) -> None:
    status, body = get_json(server, "/api/v1/status")
    assert status == 200
    assert (
        body["library"] == "plant-floor" and body["docs"] == 6 and body["signature"] == "verified"
    )
    assert body["loaded_at"].endswith("Z")


def test_openapi_document(server: tuple[str, int]) -> None:
    status, doc = get_json(server, "/api/v1/openapi.json")
    assert status == 200 and doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {f"/api/v1/{t.verb}" for t in READ_TOOLS} | {
        "/api/v1/status",
        "/api/v1/",
    }
    params = {p["name"] for p in doc["paths"]["/api/v1/get"]["get"]["parameters"]}
    assert {"doc_id", "section", "offset", "revision", "lang"} <= params


def test_unknown_endpoint_and_parameters(server: tuple[str, int]) -> None:
    assert get_json(server, "/api/v1/delete")[0] == 404
    status, body = get_json(server, "/api/v1/search?query=x&colour=red")
    assert status == 400 and "colour" in body["error"]["message"]
    status, body = get_json(server, "/api/v1/list?self=x")  # not a filter field either
    assert status == 400 and body["error"]["code"] == "unknown_parameter"
    assert (
        "the filter fields" in body["error"]["message"]
        and "equipment_type" in body["error"]["message"]
    )
    for attempt in (
        "/api/v1/collect?max_chars=1",
        "/api/v1/collect?libraries=x",
        "/api/v1/list?limit=-5",
        "/api/v1/list?limit=99999999999999",
        "/api/v1/get?doc_id=a&doc_id=b",
    ):
        status, body = get_json(server, attempt)
        assert status == 400 and body["error"]["code"], attempt


def test_bundle_files_by_hash_with_etags(
    server: tuple[str, int], library: Library, plant_floor_bundle: Path
) -> None:
    files = library.bundle.manifest.signed.files
    for name, entry in files.items():
        status, headers, body = request(server, f"/bundle/{name}")
        assert status == 200, name
        assert hashlib.sha256(body).hexdigest() == entry.sha256
        assert headers["etag"] == f'"{entry.sha256}"'
        assert headers["cache-control"] == (
            "public, max-age=31536000, immutable" if name.startswith("content/") else "no-cache"
        )
        again, _, _ = request(server, f"/bundle/{name}", {"If-None-Match": headers["etag"]})
        assert again == 304
    status, headers, body = request(server, "/bundle/manifest.json")
    assert status == 200 and body == (plant_floor_bundle / "manifest.json").read_bytes()
    # the lunr index is sent as stored, gzip bytes, never labelled JSON (which a browser
    # would try to parse) nor with a Content-Encoding the bytes were not meant to carry
    status, headers, body = request(server, "/bundle/index.json.gz")
    assert status == 200 and headers["content-type"] == "application/gzip"
    assert "content-encoding" not in headers and body[:2] == b"\x1f\x8b"


def test_site_files_and_folders(server: tuple[str, int]) -> None:
    assert request(server, "/")[2] == b"<h1>home</h1>"
    assert request(server, "/guide/")[2] == b"<h1>guide</h1>"
    status, headers, _ = request(server, "/guide")
    assert status == 301 and headers["location"] == "/guide/"
    status, headers, body = request(server, "/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    status, _, body = request(server, "/no/such/page")
    assert status == 404 and body == b"<h1>missing</h1>"


@pytest.mark.parametrize(
    "path",
    [
        "/bundle/../manifest.json",
        "/bundle/%2e%2e/%2e%2e/etc/passwd",
        "/bundle/..%2f..%2fetc%2fpasswd",
        "/bundle/%252e%252e%252f",
        "/bundle/content/..%5c..%5cmanifest.json",
        "/bundle//etc/passwd",
        "/bundle/content/" + "a" * 10_000 + ".md",
        "/bundle/catalog.json%00.md",
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "//etc/passwd",
        "/..%5c..%5cwindows",
        "/leak.txt",
        "/bundle/",
        "/bundle",
        "/api/v1/get?id=" + "x" * 10_000,
        "/api/v1/get?id=%00%ff%fe",
        "/guide/%2e%2e/%2e%2e/secret.txt",
        "/index.html%00.txt",
    ],
)
def test_odd_paths_never_escape_or_fail(server: tuple[str, int], path: str) -> None:
    status, _, body = request(server, path)
    assert status in (301, 400, 404), (path, status)
    assert b"do not serve" not in body and b"root:" not in body


def test_concurrent_requests(server: tuple[str, int]) -> None:
    paths = [
        "/api/v1/search?query=modbus",
        "/api/v1/get?id=protocol.modbus",
        "/api/v1/list?kind=device",
        "/bundle/catalog.json",
        "/api/v1/status",
    ] * 10

    def one(path: str) -> int:
        return request(server, path)[0]

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(one, paths))
    assert statuses == [200] * 50


# -- token ---------------------------------------------------------------------------------


def test_token_guards_api_mcp_and_bundles_not_the_site(library: Library, site: Path) -> None:
    with live(create_app(library, site=site, token=TOKEN)) as address:
        assert request(address, "/api/v1/status")[0] == 401
        status, headers, _ = request(address, "/api/v1/status", {"Authorization": "Bearer wrong"})
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert request(address, "/api/v1/status", {"Authorization": f"Basic {TOKEN}"})[0] == 401
        assert request(address, "/api/v1/status", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert request(address, "/mcp", {"Authorization": "Bearer wrong"})[0] == 401
        assert request(address, "/")[0] == 200
        assert request(address, "/bundle/catalog.json")[0] == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert request(address, "/bundle/catalog.json", bearer)[0] == 200
    with live(create_app(library, site=site, token=TOKEN, protect_site=True)) as address:
        assert request(address, "/")[0] == 401
        assert request(address, "/", {"Authorization": f"Bearer {TOKEN}"})[0] == 200


# -- reload --------------------------------------------------------------------------------


def test_reload_under_load(tmp_path: Path) -> None:
    """A new build published while requests run: every request answers, then the new
    version serves; a tampered publish is refused and the old one keeps serving."""
    config = load_config(EXAMPLE / "mkdocs.yml")
    out = tmp_path / "bundle"
    build(config, out, KEY)
    library = Library.open(out, [PUBLIC])
    reloader = Reloader(library, out, interval=0.05)
    reloader.start()
    statuses: list[int] = []
    stop = threading.Event()
    try:
        with live(create_app(library)) as address:

            def hammer() -> None:
                while not stop.is_set():
                    statuses.append(request(address, "/api/v1/search?query=modbus")[0])
                    statuses.append(request(address, "/api/v1/get?id=protocol.modbus")[0])

            workers = [threading.Thread(target=hammer) for _ in range(4)]
            for worker in workers:
                worker.start()
            build(dataclasses.replace(config, version="1.0.1"), out, KEY)
            deadline = time.monotonic() + 30
            while get_json(address, "/api/v1/status")[1]["version"] != "1.0.1":
                assert time.monotonic() < deadline, "the new bundle was not picked up"
                time.sleep(0.05)
            # a publish with one content file tampered with: refused, 1.0.1 keeps serving
            tampered = tmp_path / "tampered"
            shutil.copytree(os.path.realpath(out), tampered)
            victim = sorted((tampered / "content").iterdir())[0]
            victim.write_bytes(victim.read_bytes() + b"tampered")
            link = tmp_path / "swap"
            link.symlink_to(tampered)
            os.replace(link, out)
            deadline = time.monotonic() + 30
            while library.last_reload_error is None:
                assert time.monotonic() < deadline, "the tampered bundle was not looked at"
                time.sleep(0.05)
            stop.set()
            for worker in workers:
                worker.join()
            assert victim.name.removesuffix(".md") in library.last_reload_error
            _status, body = get_json(address, "/api/v1/status")
            assert (
                body["version"] == "1.0.1"
                and victim.name.removesuffix(".md") in body["last_reload_error"]
            )
    finally:
        stop.set()
        reloader.stop()
    assert statuses and set(statuses) == {200}


# -- property-based: nothing a client sends makes the server fail -------------------------


PARAM_VALUES = st.one_of(
    st.text(max_size=60),
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["", "null", "any", "*", "~", "^", "a*b*c*", "+-", "x~3", "title:x"]),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    endpoint=st.sampled_from(["list", "get", "search", "status"]),
    params=st.dictionaries(
        st.sampled_from(
            ["query", "limit", "id", "doc_id", "section", "offset", "kind", "vendor", "x"]
        ),
        PARAM_VALUES,
        max_size=4,
    ),
)
def test_openapi_parameters_never_cause_a_server_error(
    server: tuple[str, int], endpoint: str, params: dict[str, str]
) -> None:
    query = urllib.parse.urlencode(params)
    status, headers, body = request(server, f"/api/v1/{endpoint}?{query}")
    assert status in (200, 400, 404), (endpoint, params, body[:300])
    assert headers["content-type"] == "application/json"
    json.loads(body)
