"""`handbook serve` under attack, against a real server on loopback (uvicorn in a thread).

Extends tests/test_runtime/test_http.py and test_mcp.py rather than repeating them:

- methods the app does not serve, on every kind of route, are 4xx (never 5xx);
- a proof, not a sample, that no filesystem access is derived from request paths: an
  audit hook records every file opened and every folder listed while a batch of hostile
  requests is served, and only files of the site map made at start may appear;
- MCP's Origin check for more foreign origins, on every method, with a valid token too,
  and no CORS grant anywhere;
- a property-based run driven by the served OpenAPI document: random values for the
  declared parameters plus junk ones; no 5xx, and every 200 body fits the declared
  response schema (Draft 2020-12).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PUBLIC, get_json, live, request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from handbook import Library
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.serve.site import SiteFiles
from handbook.tools.table import READ_TOOLS

pytest.importorskip("uvicorn")

SECRET = b"outside-secret-never-served"
TOKEN = "hardening-token"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder beside the site, holding what must never be read."""
    root = tmp_path_factory.mktemp("outside")
    (root / "secret.txt").write_bytes(SECRET)
    (root / "passwd").write_bytes(b"root:x:0:0:" + SECRET)
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, outside: Path) -> Path:
    """A site folder with everything the walk must leave out of the map: symlinks to a
    file, to a folder and in a loop, a FIFO, and a `bundle/` folder on disk (the bundle
    is served from the verified copy in memory, never from here)."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<h1>home</h1>")
    (root / "404.html").write_text("<h1>missing</h1>")
    (root / "style.css").write_text("body{}")
    (root / "guide").mkdir()
    (root / "guide" / "index.html").write_text("<h1>guide</h1>")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "loop.html").symlink_to(root / "loop.html")
    os.mkfifo(root / "pipe.html")
    (root / "bundle").mkdir()
    (root / "bundle" / "catalog.json").write_bytes(SECRET)
    (root / "bundle" / "secret.txt").write_bytes(SECRET)
    return root


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


@pytest.fixture(scope="module")
def server(library: Library, site: Path) -> Iterator[tuple[str, int]]:
    with live(create_app(library, site=site, mcp=http_app(library))) as address:
        yield address


def raw_request(address: tuple[str, int], data: bytes) -> tuple[int, bytes]:
    """Bytes sent as they are (no client-side checks): (status, body)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


# -- (a) methods -----------------------------------------------------------------------------


METHODS = ["PUT", "DELETE", "PATCH", "TRACE", "OPTIONS", "PROPFIND", "FROBNICATE", "get", "M" * 200]
ROUTES = [
    "/",
    "/guide/",
    "/no/such/page",
    "/api/v1/get?id=protocol.modbus",
    "/api/v1/openapi.json",
    "/bundle/catalog.json",
    "/bundle/manifest.json",
    "/mcp",
]


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m[:20])
def test_unknown_methods_are_4xx_never_5xx(server: tuple[str, int], method: str) -> None:
    """Methods are case-sensitive tokens: `get` is not GET. Every one is 405 (4xx at the
    least), and TRACE echoes nothing back (no cross-site tracing of headers)."""
    statuses = {}
    for path in ROUTES:
        status, _, body = request(
            server,
            path,
            {"X-Probe": "echo-me-not", "Content-Type": "application/json"},
            method=method,
        )
        statuses[path] = status
        assert b"echo-me-not" not in body
    assert all(400 <= s < 500 for s in statuses.values()), statuses
    assert set(statuses.values()) == {405}, statuses


def test_post_outside_mcp_and_the_tool_routes_is_405(server: tuple[str, int]) -> None:
    for path in ROUTES[:-1]:
        if path.startswith("/api/v1/get"):  # a tool route takes its arguments as JSON too
            continue
        assert request(server, path, method="POST")[0] == 405, path


def test_head_of_a_bundle_file_has_no_body(server: tuple[str, int]) -> None:
    status, headers, body = request(server, "/bundle/catalog.json", method="HEAD")
    assert status == 200 and body == b"" and headers["etag"].startswith('"')


# -- (b) no filesystem access derived from request paths --------------------------------------

_RECORDING = False
_RECORDED: list[tuple[str, Any, int]] = []
_HOOKED = False
_WATCHED = (
    "open",
    "os.listdir",
    "os.scandir",
    "os.chdir",
    "os.mkdir",
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "shutil.copyfile",
    "shutil.rmtree",
)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Audit hooks cannot be removed: this one does nothing unless recording is on."""
    if _RECORDING and event in _WATCHED:
        _RECORDED.append((event, args[0] if args else None, threading.get_ident()))


def _install_hook() -> None:
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True


HOSTILE_PATHS = [
    "/%2e%2e/",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/.%2e/.%2e/etc/passwd",
    "/%252f",
    "/%252e%252e%252fetc%252fpasswd",
    "/..%5c",
    "/..%5c..%5cetc%5cpasswd",
    "//host",
    "//host/etc/passwd",
    "///etc/passwd",
    "/bundle/../../etc/passwd",
    "/bundle/%2e%2e/%2e%2e/etc/passwd",
    "/bundle/content/%2e%2e%2f%2e%2e%2fmanifest.json",
    "/bundle/secret.txt",
    "/bundle/",
    "/bundle/content/",
    "/bundle/manifest.json/..",
    "/bundle/catalog.json%2f",
    "/%00",
    "/index.html%00",
    "/index.html%00.css",
    "/bundle/catalog.json%00",
    "/%ff%fe",
    "/%C3%A9",
    "/leak.txt",
    "/linked/secret.txt",
    "/linked/passwd",
    "/loop.html",
    "/pipe.html",
    "/guide/..%2f..%2fleak.txt",
    "/guide/%2e%2e/%2e%2e/secret.txt",
    "/" + "a" * 10_240,
    "/bundle/" + "a" * 10_240,
    "/api/v1/get?id=" + "x" * 10_240,
    "/api/v1/get?id=../../etc/passwd",
    "/api/v1/get?id=%2fetc%2fpasswd&section=%00",
    "/api/v1/resource?id=guide.about&path=../../../etc/passwd",
    "/api/v1/resource?id=guide.about&path=%2fetc%2fpasswd",
    "/api/v1/%2e%2e%2fopenapi.json",
    "/api/v1/..%2f..%2fetc%2fpasswd",
    "/api/v1/search?query=" + "../" * 1000,
    "/api/v1/list?" + "a" * 5000 + "=1",
    "/api/v1/get?id=%00%ff%fe",
    "/mcp/../etc/passwd",
    "/mcp%2f..%2fleak.txt",
]
RAW_REQUESTS = [
    b"GET /../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET http://evil.example/etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET /a\\..\\..\\leak.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET /index.html\x00.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET ../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    b"GET /guide/../../leak.txt HTTP/1.0\r\n\r\n",
    b"GET /bundle/./../leak.txt HTTP/1.1\r\nHost: ../../etc\r\nConnection: close\r\n\r\n",
]
WARM_UP = [
    "/",
    "/style.css",
    "/guide/",
    "/guide",
    "/no/such/page",
    "/bundle/catalog.json",
    "/bundle/manifest.json",
    "/api/v1/status",
    "/api/v1/get?id=nope",
    "/api/v1/get?id=protocol.modbus",
    "/api/v1/search?query=modbus",
    "/api/v1/list",
    "/api/v1/resource?id=guide.about&path=x",
    "/api/v1/openapi.json",
    "/api/v1/get?id=" + "x" * 5000,
]


def test_no_file_is_opened_but_those_of_the_site_map(
    server: tuple[str, int], library: Library, site: Path, outside: Path
) -> None:
    """Every `open` (and every folder listing or change) made by the server while it
    answers hostile requests is recorded by an audit hook; only files of the map made by
    the one walk at start may be among them, and none may resolve outside the site."""
    global _RECORDING
    site_map = SiteFiles(site).files
    allowed = {os.fspath(p) for p in site_map.values()}
    assert set(site_map) == {
        "index.html",
        "404.html",
        "style.css",
        "guide/index.html",
    }  # no link, FIFO or bundle/
    for name in (
        library.bundle.manifest.signed.files
    ):  # the bundle is served from memory: read it all first
        library.bundle.read(name)
    for path in WARM_UP:  # lazy imports and mimetypes' own files, before recording
        request(server, path)
    client = threading.get_ident()
    _install_hook()
    _RECORDED.clear()
    statuses: Counter[int] = Counter()
    _RECORDING = True
    try:
        for path in HOSTILE_PATHS:
            status, _, body = request(server, path)
            statuses[status] += 1
            assert status < 500 and SECRET not in body, (path, status)
        for data in RAW_REQUESTS:
            status, body = raw_request(server, data)
            statuses[status] += 1
            assert status < 500 and SECRET not in body, (data, status)
    finally:
        _RECORDING = False
    events = [(event, target) for event, target, thread in _RECORDED if thread != client]
    opened = [os.fsdecode(t) if isinstance(t, bytes | str) else t for e, t in events if e == "open"]
    others = [(e, t) for e, t in events if e != "open"]
    print(
        f"\n{len(HOSTILE_PATHS) + len(RAW_REQUESTS)} hostile requests, statuses {dict(sorted(statuses.items()))}; "
        f"{len(opened)} file opens ({len(set(opened))} distinct: {sorted(set(map(str, opened)))}), "
        f"{len(others)} other file events"
    )
    assert others == []
    assert set(opened) <= allowed, set(opened) - allowed
    real_site = os.path.realpath(site)
    for path in set(opened):
        assert isinstance(path, str)
        real = os.path.realpath(path)
        assert os.path.commonpath([real_site, real]) == real_site, path
        assert os.path.commonpath([os.path.realpath(outside), real]) != os.path.realpath(outside)


def test_the_audit_hook_sees_site_reads(server: tuple[str, int], site: Path) -> None:
    """The proof above is only as good as the hook: it must see the server's reads."""
    global _RECORDING
    for path in WARM_UP:
        request(server, path)
    _install_hook()
    _RECORDED.clear()
    client = threading.get_ident()
    _RECORDING = True
    try:
        assert request(server, "/style.css")[0] == 200
        assert request(server, "/no/such/page")[0] == 404
    finally:
        _RECORDING = False
    opened = {
        os.fsdecode(t)
        for e, t, thread in _RECORDED
        if e == "open" and thread != client and isinstance(t, str | bytes)
    }
    assert opened == {os.fspath(site / "style.css"), os.fspath(site / "404.html")}


# -- the site folder changing under a running server ------------------------------------------------
#
# The map is made once at start; the files it names are read at request time. The bundle
# side guards this window (descriptors opened with O_NOFOLLOW, regular files only); the
# site side should too, since a site folder is rebuilt in place (`mkdocs build` empties it
# first) while the server runs.


@pytest.fixture
def own_site(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "own-site"
    (root / "guide").mkdir(parents=True)
    (root / "index.html").write_text("<h1>home</h1>")
    (root / "404.html").write_text("<h1>missing</h1>")
    (root / "style.css").write_text("body{}")
    (root / "guide" / "index.html").write_text("<h1>guide</h1>")
    (outside / "index.html").write_bytes(SECRET)
    return root


def test_a_site_file_removed_after_start_is_a_404(library: Library, own_site: Path) -> None:
    with live(create_app(library, site=own_site)) as address:
        (own_site / "style.css").unlink()
        assert request(address, "/style.css")[0] == 404


def test_a_404_page_removed_after_start_is_still_a_404(library: Library, own_site: Path) -> None:
    with live(create_app(library, site=own_site)) as address:
        (own_site / "404.html").unlink()
        assert request(address, "/no/such/page")[0] == 404


@pytest.mark.parametrize("swap", ["file", "folder"])
def test_a_site_file_swapped_for_a_symlink_is_not_followed(
    library: Library, own_site: Path, outside: Path, swap: str
) -> None:
    with live(create_app(library, site=own_site)) as address:
        if swap == "file":
            (own_site / "style.css").unlink()
            (own_site / "style.css").symlink_to(outside / "secret.txt")
            path = "/style.css"
        else:
            shutil.rmtree(own_site / "guide")
            (own_site / "guide").symlink_to(outside, target_is_directory=True)
            path = "/guide/"
        status, _, body = request(address, path)
        assert SECRET not in body and status == 404


def test_a_site_file_swapped_for_a_fifo_blocks_nothing(library: Library, own_site: Path) -> None:
    import http.client

    def get(address: tuple[str, int], path: str) -> int:
        conn = http.client.HTTPConnection(*address, timeout=2)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        finally:
            conn.close()

    with live(create_app(library, site=own_site)) as address:
        (own_site / "style.css").unlink()
        os.mkfifo(own_site / "style.css")
        results: dict[str, Any] = {}

        def ask_fifo() -> None:
            try:
                results["fifo"] = get(address, "/style.css")
            except OSError as exc:
                results["fifo"] = exc

        asker = threading.Thread(target=ask_fifo)
        asker.start()
        try:
            time.sleep(0.3)
            try:
                results["home"] = get(address, "/")  # another client, meanwhile
            except OSError as exc:
                results["home"] = exc
        finally:
            with contextlib.suppress(
                OSError
            ):  # unblock a server stuck opening the FIFO, so that it can stop
                os.close(os.open(own_site / "style.css", os.O_WRONLY | os.O_NONBLOCK))
            asker.join()
        assert results == {"home": 200, "fifo": 404}, results


# -- (c) MCP: Origin, on every method, with a token too; no CORS grant anywhere -----------------


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
)
CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "knowledge_get",
            "arguments": {"doc_id": "protocol.modbus", "section": None},
        },
    }
)


def mcp_request(
    address: tuple[str, int], method: str, body: str | None, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.request(
            method,
            "/mcp",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


FOREIGN_ORIGINS = [
    "null",  # sandboxed iframes, file: pages, some redirects
    "https://evil.example",
    "http://evil.example:{port}",
    "http://localhost.evil.example",
    "http://127.0.0.1.nip.io:{port}",
    "http://127.0.0.2:{port}",
    "http://[::2]:{port}",
    "http://0.0.0.0:{port}",
    "file://",
    "chrome-extension://abcdefghijklmnop",
    "http://LOCALHOST.evil.example:{port}",
]


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_mcp_refuses_foreign_origins_on_every_method(server: tuple[str, int], origin: str) -> None:
    origin = origin.format(port=server[1])
    for method, body in [("POST", INITIALIZE), ("POST", CALL), ("GET", None), ("DELETE", None)]:
        status, headers, answer = mcp_request(server, method, body, {"Origin": origin})
        assert status == 403, (method, origin, status)
        assert b"modbus" not in answer.lower() and "access-control-allow-origin" not in headers


def test_mcp_accepts_its_own_origins(server: tuple[str, int]) -> None:
    for origin in [
        f"http://127.0.0.1:{server[1]}",
        f"http://localhost:{server[1]}",
        "http://localhost",
        f"https://[::1]:{server[1]}",
    ]:
        assert mcp_request(server, "POST", INITIALIZE, {"Origin": origin})[0] == 200, origin


def test_a_valid_token_does_not_excuse_a_foreign_origin(library: Library) -> None:
    with live(create_app(library, token=TOKEN, mcp=http_app(library))) as address:
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert mcp_request(address, "POST", CALL, bearer)[0] == 200
        assert (
            mcp_request(address, "POST", CALL, {**bearer, "Origin": "https://evil.example"})[0]
            == 403
        )
        assert mcp_request(address, "POST", CALL, {**bearer, "Host": "evil.example"})[0] == 421
        assert (
            mcp_request(address, "POST", CALL, {"Origin": f"http://127.0.0.1:{address[1]}"})[0]
            == 401
        )


def test_no_cors_grant_on_any_route(server: tuple[str, int]) -> None:
    """A page on another origin may send simple GETs but must not be allowed to read the
    answers: no route grants CORS, not even to a preflight."""
    evil = {"Origin": "https://evil.example"}
    for path in [
        "/",
        "/api/v1/status",
        "/api/v1/get?id=protocol.modbus",
        "/bundle/catalog.json",
        "/api/v1/openapi.json",
    ]:
        for method in ("GET", "OPTIONS"):
            headers = (
                {**evil, "Access-Control-Request-Method": "GET"} if method == "OPTIONS" else evil
            )
            _, answer_headers, _ = request(server, path, headers, method=method)
            assert not [h for h in answer_headers if h.startswith("access-control-")], (
                path,
                method,
                answer_headers,
            )


# -- (d) OpenAPI-driven property run ------------------------------------------------------------

JUNK_NAMES = [
    "x",
    "",
    "id[]",
    "__proto__",
    "constructor",
    "limit ",
    "Query",
    "q",
    "ids[0]",
    "\u00e9",
    "a" * 300,
    "%00",
    "self",
    "lang",
]
JUNK_VALUES = st.one_of(
    st.text(max_size=80),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "",
            "null",
            "None",
            "true",
            "false",
            "any",
            "[]",
            "{}",
            "*",
            "~",
            "^",
            "a*b*c*",
            "+-",
            "x~3",
            "title:x",
            "1e309",
            "-0",
            "0x10",
            "9" * 40,
            "protocol.modbus",
            "device.acme.ac200",
            "register map",
            "modbus,mqtt",
            "protocol.modbus=deadbeef",
            "../../etc/passwd",
            "\x00",
            "\ud7ff",
            "a" * 5000,
        ]
    ),
)


def valid_value(name: str, known: dict[str, list[str]]) -> str:
    """A value the served library answers 200 to, for a required parameter."""
    if name in ("id", "doc_id", "ids"):
        return known["ids"][0]
    return "modbus"


def values_for(
    name: str, schema: dict[str, Any], known: dict[str, list[str]]
) -> st.SearchStrategy[str]:
    """Values for a declared parameter: what its schema allows (enums, integer ranges),
    real ids, sections and revisions of the served library, and junk."""
    declared: list[st.SearchStrategy[str]] = []
    if schema.get("enum"):
        declared.append(st.sampled_from([v for v in schema["enum"] if v is not None]))
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds:
        declared.append(
            st.integers(schema.get("minimum", -5) - 2, schema.get("maximum", 200) + 2).map(str)
        )
    if name in ("id", "doc_id"):
        declared.append(st.sampled_from(known["ids"]))
    elif name == "ids":
        declared.append(
            st.lists(st.sampled_from(known["ids"] + ["nope", ""]), max_size=4).map(",".join)
        )
    elif name == "section":
        declared.append(st.sampled_from(known["sections"]))
    elif name in ("revision", "revisions"):
        pairs = [f"{i}={r}" for i, r in zip(known["ids"], known["revisions"], strict=True)]
        declared.append(st.sampled_from(known["revisions"] if name == "revision" else pairs))
    elif name in ("query", "question"):
        declared.append(
            st.sampled_from(
                [
                    "modbus",
                    "register map",
                    "what is the word order",
                    "mqtt qos",
                    "modb*",
                    "registr~1",
                ]
            )
        )
    return st.one_of(*declared, JUNK_VALUES) if declared else JUNK_VALUES


def test_openapi_property_run(server: tuple[str, int]) -> None:
    status, document = get_json(server, "/api/v1/openapi.json")
    assert status == 200
    ids = [d["id"] for d in get_json(server, "/api/v1/list")[1]["docs"]]
    docs = [get_json(server, f"/api/v1/get?id={i}")[1] for i in ids]
    known = {
        "ids": ids,
        "revisions": [d["revision"] for d in docs],
        "sections": sorted(
            {s[k] for d in docs for s in d["sections"] for k in ("title", "anchor")}
        ),
    }
    Draft202012Validator.check_schema({"type": "object"})
    operations: dict[str, tuple[dict[str, st.SearchStrategy[str]], Draft202012Validator]] = {}
    for path, item in document["paths"].items():
        operation = item["get"]
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        Draft202012Validator.check_schema(schema)
        params = {
            p["name"]: values_for(p["name"], p.get("schema", {}), known)
            for p in operation.get("parameters", [])
        }
        operations[path] = (params, Draft202012Validator(schema))
    counts: Counter[str] = Counter()
    violations: list[str] = []
    server_errors: list[str] = []

    @settings(
        max_examples=500,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        path = data.draw(st.sampled_from(sorted(operations)), label="path")
        declared, validator = operations[path]
        names = data.draw(
            st.lists(st.sampled_from(sorted(declared) or ["x"]), max_size=4, unique=True),
            label="declared",
        )
        junk = data.draw(
            st.sampled_from([[], [], [], ["x"], ["x", "\u00e9"]]).flatmap(
                lambda some: (
                    st.lists(st.sampled_from(JUNK_NAMES), max_size=2, unique=True)
                    if some
                    else st.just([])
                )
            ),
            label="junk",
        )
        params = [(n, data.draw(declared.get(n, JUNK_VALUES), label=n)) for n in names]
        params += [(n, data.draw(JUNK_VALUES, label=n)) for n in junk]
        query = urllib.parse.urlencode(params, errors="surrogatepass")
        got, headers, body = request(server, f"{path}?{query}" if query else path)
        counts[f"{path} {got}"] += 1
        counts["requests"] += 1
        if got >= 500:
            server_errors.append(f"{path}?{query[:200]} -> {got} {body[:200]!r}")
            return
        assert got in (200, 400, 404), (path, query[:300], got)
        assert headers["content-type"] == "application/json"
        answer = json.loads(body)
        if got == 200:
            counts["validated"] += 1
            errors = sorted(validator.iter_errors(answer), key=lambda e: list(e.absolute_path))
            if errors:
                violations.append(
                    f"{path}?{query[:200]}: {errors[0].message} at {list(errors[0].absolute_path)}"
                )
        else:
            assert isinstance(answer, dict)

    # one plainly valid request per endpoint, so "every endpoint answered 200" does not hang
    # on which values the random run happened to draw
    for path, item in document["paths"].items():
        required = [p for p in item["get"].get("parameters", []) if p.get("required")]
        query = urllib.parse.urlencode(
            [(p["name"], valid_value(p["name"], known)) for p in required]
        )
        got, _, body = request(server, f"{path}?{query}" if query else path)
        counts[f"{path} {got}"] += 1
        if got == 200:
            assert not list(operations[path][1].iter_errors(json.loads(body))), path

    run()
    print(
        f"\nOpenAPI run: {counts['requests']} requests, {counts['validated']} 200 bodies validated, "
        f"{len(server_errors)} server errors, {len(violations)} schema violations"
    )
    for key in sorted(k for k in counts if k.startswith("/")):
        print(f"  {key}: {counts[key]}")
    assert server_errors == []
    assert violations == []
    # this library attaches no files to its docs, so no resource can be found in it
    attaching = any(d.get("resources") for d in docs)
    silent = set() if attaching else {"/api/v1/resource"}
    assert {p for p in operations if counts[f"{p} 200"] == 0} == silent, (
        "every endpoint answered 200 at least once"
    )


JUNK_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def json_values_for(
    name: str, schema: dict[str, Any], known: dict[str, list[str]]
) -> st.SearchStrategy[Any]:
    """JSON values for a declared property: what its schema allows, real ids, sections and
    revisions of the served library, and junk of every JSON type."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    declared: list[st.SearchStrategy[Any]] = [st.none()] if "null" in kinds else []
    if schema.get("enum"):
        declared.append(st.sampled_from(schema["enum"]))
    if "integer" in kinds:
        declared.append(st.integers(schema.get("minimum", -5) - 2, schema.get("maximum", 200) + 2))
    if "string" in kinds:
        declared.append(values_for(name, schema, known))
    if "array" in kinds and name == "ids":
        declared.append(st.lists(st.sampled_from([*known["ids"], "nope", ""]), max_size=4))
    if "array" in kinds and name == "revisions":
        pairs = [
            {"id": i, "revision": r} for i, r in zip(known["ids"], known["revisions"], strict=True)
        ]
        declared.append(st.lists(st.sampled_from(pairs) | JUNK_JSON, max_size=3))
    return st.one_of(*declared, JUNK_JSON)


def test_openapi_post_property_run(server: tuple[str, int]) -> None:
    """Every tool route also takes its arguments as a JSON object: bodies drawn from the
    OpenAPI request schemas, with junk of every JSON type and unknown names, never get a
    server error, and every 200 answer fits its documented schema."""
    _, document = get_json(server, "/api/v1/openapi.json")
    ids = [d["id"] for d in get_json(server, "/api/v1/list")[1]["docs"]]
    docs = [get_json(server, f"/api/v1/get?doc_id={i}")[1] for i in ids]
    known = {
        "ids": ids,
        "revisions": [d["revision"] for d in docs],
        "sections": sorted(
            {s[k] for d in docs for s in d["sections"] for k in ("title", "anchor")}
        ),
    }
    operations = {
        path: (
            {
                name: json_values_for(name, prop, known)
                for name, prop in item["post"]["requestBody"]["content"]["application/json"][
                    "schema"
                ]["properties"].items()
            },
            Draft202012Validator(
                item["post"]["responses"]["200"]["content"]["application/json"]["schema"]
            ),
        )
        for path, item in document["paths"].items()
        if "post" in item
    }
    assert len(operations) == len(READ_TOOLS)
    counts: Counter[str] = Counter()
    problems: list[str] = []

    @settings(
        max_examples=400,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        path = data.draw(st.sampled_from(sorted(operations)), label="path")
        declared, validator = operations[path]
        names = data.draw(
            st.lists(st.sampled_from(sorted(declared)), max_size=5, unique=True), label="names"
        )
        body: dict[str, Any] = {n: data.draw(declared[n], label=n) for n in names}
        body.update(
            data.draw(
                st.dictionaries(st.sampled_from(JUNK_NAMES), JUNK_JSON, max_size=2), label="junk"
            )
        )
        raw = json.dumps(body, allow_nan=True).encode()
        conn = http.client.HTTPConnection(*server, timeout=30)
        try:
            conn.request("POST", path, body=raw, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            got, answer = response.status, json.loads(response.read())
        finally:
            conn.close()
        counts[f"{path} {got}"] += 1
        if got >= 500 or got not in (200, 400, 404):
            problems.append(f"{path} {raw[:200]!r} -> {got}")
        elif got == 200:
            errors = list(validator.iter_errors(answer))
            if errors:
                problems.append(f"{path} {raw[:200]!r}: {errors[0].message}")

    run()
    print(f"\nOpenAPI POST run: {sum(counts.values())} requests, {len(problems)} problems")
    assert problems == []
    assert all(counts[f"{p} 400"] for p in operations if p != "/api/v1/resource"), counts
