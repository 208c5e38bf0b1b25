"""Who the server answers (issue: "the server answers only whom it should"): every route
checks the Host it is asked under and a browser's Origin (DNS rebinding), the bearer
token maps to a principal and covers the API, MCP and the bundles (and the site when
asked), and one client cannot out-ask the others."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, ROOT, live

from handbook import Library
from handbook.access.principals import Principals, TokensFileError, add_token
from handbook.serve.gate import host_names
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook_build import load_config
from handbook_build.pipeline import build

ROUTES = [
    "/",
    "/api/v1/",
    "/api/v1/status",
    "/api/v1/get?doc_id=protocol.modbus",
    "/api/v1/openapi.json",
    "/bundle/catalog.json",
    "/bundle/manifest.json",
]
REBOUND = [
    "evil.example",
    "attacker.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "localhost.evil:{port}",
    "",
]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    out = tmp_path_factory.mktemp("gate") / "bundle"
    build(load_config(ROOT / "examples" / "plant-floor" / "mkdocs.yml"), out, KEY)
    return Library.open(out, [PUBLIC])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    (folder / "index.html").write_text("<h1>modbus</h1>")
    return folder


@pytest.fixture(scope="module")
def server(library: Library, site: Path) -> Iterator[tuple[str, int]]:
    with live(create_app(library, site=site, mcp=http_app(library))) as address:
        yield address


@pytest.mark.parametrize("host", REBOUND)
def test_a_rebound_name_reads_nothing_on_any_route(server: tuple[str, int], host: str) -> None:
    for path in [*ROUTES, "/mcp"]:
        status, _, body = request(server, path, {"Host": host.format(port=server[1])})
        assert status == 421, (path, host, status)
        assert b"modbus" not in body.lower()


def test_own_names_are_answered(server: tuple[str, int]) -> None:
    for host in (
        f"127.0.0.1:{server[1]}",
        f"localhost:{server[1]}",
        "localhost",
        f"[::1]:{server[1]}",
    ):
        for path in ROUTES:
            assert request(server, path, {"Host": host})[0] == 200, (path, host)


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "file://", "http://127.0.0.1.nip.io"]
)
def test_a_foreign_origin_is_refused_on_every_route(server: tuple[str, int], origin: str) -> None:
    for path in ROUTES:
        status, _, body = request(server, path, {"Origin": origin})
        assert status == 403 and b"modbus" not in body.lower(), (path, origin)
    assert request(server, "/api/v1/status", {"Origin": f"http://localhost:{server[1]}"})[0] == 200


def test_allowed_hosts_are_answered_and_nothing_else(library: Library) -> None:
    hosts = host_names("127.0.0.1", ["kb.internal"])
    with live(create_app(library, hosts=hosts)) as address:
        assert request(address, "/api/v1/status", {"Host": "kb.internal"})[0] == 200
        assert (
            request(
                address, "/api/v1/status", {"Host": "kb.internal", "Origin": "https://kb.internal"}
            )[0]
            == 200
        )
        assert request(address, "/api/v1/status", {"Host": "kb.external"})[0] == 421


def test_principals_from_a_tokens_file(library: Library, site: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    alice, bot = add_token(tokens, "alice"), add_token(tokens, "support-bot")
    stored = tokens.read_text()
    assert alice not in stored and bot not in stored and "sha256:" in stored  # digests only
    assert tokens.stat().st_mode & 0o077 == 0
    with pytest.raises(TokensFileError, match="already has a token"):
        add_token(tokens, "alice")
    app = create_app(library, site=site, principals=Principals.load(tokens), mcp=http_app(library))
    with live(app) as address:
        for path in ROUTES[1:]:
            assert request(address, path)[0] == 401, path
            assert request(address, path, {"Authorization": "Bearer nope"})[0] == 401, path
        assert request(address, "/mcp", {"Authorization": "Bearer nope"})[0] == 401
        assert request(address, "/")[0] == 200  # the site is public unless protected
        for token, name in ((alice, "alice"), (bot, "support-bot")):
            status, _, body = request(address, "/api/v1/", {"Authorization": f"Bearer {token}"})
            assert status == 200 and f'"principal":"{name}"'.encode() in body


def test_a_malformed_tokens_file_names_its_line(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# principals\nalice sha256:" + "a" * 64 + "\nbob plain-token\n")
    with pytest.raises(
        TokensFileError, match=r"tokens:3: not `<principal> sha256:<64 hex> \[audience=NAME\]`"
    ):
        Principals.load(tokens)


def request(
    address: tuple[str, int], path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """GET `path` with exactly these headers (a Host given here replaces the usual one)."""
    headers = headers or {}
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _from(source: str, address: tuple[str, int], path: str) -> int:
    """One request from the loopback address `source` (another client, as the server sees it)."""
    conn = http.client.HTTPConnection(*address, timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_one_client_cannot_out_ask_the_others(library: Library) -> None:
    with live(create_app(library, rate=0.5, burst=5)) as address:
        statuses = [_from("127.0.0.1", address, "/api/v1/status") for _ in range(8)]
        assert statuses[:5] == [200] * 5 and 429 in statuses[5:]
        status, headers, body = request(address, "/api/v1/status")
        assert status == 429 and int(headers["retry-after"]) >= 1 and b"rate_limited" in body
        try:  # another client is not slowed by the first one's excess
            assert _from("127.0.0.2", address, "/api/v1/status") == 200
        except OSError as exc:  # pragma: no cover - a host without 127.0.0.2
            pytest.skip(f"no second loopback address here: {exc}")


def test_a_request_without_host_is_refused(server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=30) as sock:
        sock.sendall(b"GET /api/v1/status HTTP/1.0\r\n\r\n")
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 421")
