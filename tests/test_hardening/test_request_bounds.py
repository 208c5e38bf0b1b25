"""Requests with no bound where there must be one (issue 25, items 6, 7 and 10), each
attack performed against a real server on 127.0.0.1 and, where it applies, through the
Python API, RPC, MCP and the CLI:

- a `correlation_id` of 100,000 characters, or holding control or bidi characters, is
  refused (`bad_arguments`) on every transport, never echoed nor logged; the request
  log writes no control or bidi character raw, whatever the caller sent;
- JSON nested thousands deep is refused before it is parsed: 400 `bad_arguments` for a
  POSTed body, HB801 naming the file for a review record, and never a traceback;
- a header that must be sent once (`X-Handbook-Actor`, `-Tenant`, `-Workspace`,
  `Authorization`) sent twice is refused, over the API and over MCP alike.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import pytest
from conftest import PUBLIC, VALID_DOC, MakeLibrary, live, run_cli
from reviewers import reviews_option

from handbook import Library
from handbook.access.actor import ID_SCHEMA, MAX_CHARS
from handbook.access.principals import Principals
from handbook.bundle.canonical import MAX_DEPTH, NestingError, load_untrusted, nesting
from handbook.serve.gate import Gate, host_names
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.serve.request_log import RequestLog
from handbook.serve.rpc import handlers
from handbook.tools.dispatch import call
from handbook.tools.table import BY_NAME

pytest.importorskip("uvicorn")

QUESTION = "What byte order does Modbus use?"
TOKEN = "token-of-the-bounds-test"
AUTH = ("Authorization", f"Bearer {TOKEN}")
HOSTILE_IDS = {
    "100,000 characters": "c" * 100_000,
    "one past the bound": "c" * (MAX_CHARS + 1),
    "an escape sequence": "ticket\x1b[2J42",
    "a right-to-left override": "ticket\u202e24",
    "a line break": "ticket-42\nforged line",
    "a space": "ticket 42",
}


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


@pytest.fixture(scope="module")
def served(library: Library, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """(address, log path): the API and MCP behind a token, every call logged."""
    path = tmp_path_factory.mktemp("log") / "requests.jsonl"
    log = RequestLog.open(str(path), queries=True, key="k" * 32)
    principals = Principals.single(TOKEN, "bounds-bot")
    app = create_app(library, principals=principals, mcp=http_app(library, log=log), log=log)
    try:
        with live(app) as address:
            yield address, path
    finally:
        log.close()


def send(
    address: tuple[str, int],
    path: str,
    headers: list[tuple[str, str]],
    body: bytes | None = None,
) -> tuple[int, Any]:
    """One request with `headers` exactly as listed (a name may repeat); (status, JSON)."""
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.putrequest("GET" if body is None else "POST", path, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Accept", "application/json, text/event-stream")
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read()
        if response.getheader("content-type", "").startswith("text/event-stream"):
            data = next(line[5:] for line in data.splitlines() if line.startswith(b"data:"))
        return response.status, json.loads(data)
    finally:
        conn.close()


def mcp_call(address: tuple[str, int], arguments: dict[str, Any], *headers: tuple[str, str]) -> Any:
    """`knowledge_ask` over MCP's streamable HTTP, stateless (one POST); (status, body)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "knowledge_ask", "arguments": arguments},
    }
    return send(address, "/mcp", [AUTH, *headers], json.dumps(message).encode())


def log_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- item 6: correlation_id ------------------------------------------------------------------


def assert_refused(answer: dict[str, Any], hostile: str) -> None:
    assert answer["error"]["code"] == "bad_arguments", answer
    assert "correlation_id" in answer["error"]["message"]
    assert hostile not in json.dumps(answer, ensure_ascii=False)
    assert answer["correlation_id"] != hostile and len(answer["correlation_id"]) == 32
    assert answer["response_chars"] < 2_000


@pytest.mark.parametrize("hostile", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
def test_a_hostile_correlation_id_is_refused_by_the_python_api_and_rpc(
    library: Library, hostile: str
) -> None:
    assert_refused(dict(library.ask(QUESTION, correlation_id=hostile)), hostile)
    assert_refused(
        call(library, "knowledge_ask", {"question": QUESTION, "correlation_id": hostile}), hostile
    )
    assert_refused(handlers(library)["ask"](QUESTION, correlation_id=hostile), hostile)


def test_a_correlation_id_that_is_no_string_is_refused(library: Library) -> None:
    answer = dict(library.ask(QUESTION, correlation_id=["c"] * 50_000))  # type: ignore[arg-type]
    assert answer["error"]["code"] == "bad_arguments" and answer["response_chars"] < 2_000


@pytest.mark.parametrize("hostile", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
def test_a_hostile_correlation_id_is_refused_over_http_and_mcp_and_never_logged(
    served: Any, hostile: str
) -> None:
    address, path = served
    body = json.dumps({"question": QUESTION, "correlation_id": hostile}).encode()
    status, answer = send(address, "/api/v1/ask", [AUTH], body)
    assert status == 400
    assert_refused(answer, hostile)
    if len(hostile) < 1000:  # a longer query parameter is refused before any tool (too_long)
        query = urlencode({"question": QUESTION, "correlation_id": hostile})
        status, answer = send(address, f"/api/v1/ask?{query}", [AUTH])
        assert status == 400
        assert_refused(answer, hostile)
    status, message = mcp_call(address, {"question": QUESTION, "correlation_id": hostile})
    result = message["result"]
    assert result["isError"] is True and hostile not in json.dumps(result, ensure_ascii=False)
    assert "correlation_id" in result["content"][0]["text"]
    assert hostile not in log_text(path)


def test_a_good_correlation_id_is_echoed_and_logged(served: Any, library: Library) -> None:
    address, path = served
    body = json.dumps({"question": QUESTION, "correlation_id": "ticket:42/a@b.c+d=e_f-g"}).encode()
    status, answer = send(address, "/api/v1/ask", [AUTH], body)
    assert status == 200 and answer["correlation_id"] == "ticket:42/a@b.c+d=e_f-g"
    assert '"correlation_id":"ticket:42/a@b.c+d=e_f-g"' in log_text(path)
    longest = "c" * MAX_CHARS
    assert library.ask(QUESTION, correlation_id=longest)["correlation_id"] == longest


def test_the_cli_refuses_a_hostile_correlation_id(plant_floor_bundle: Path) -> None:
    hostile = HOSTILE_IDS["a right-to-left override"]
    run = run_cli(
        "ask", QUESTION, "--correlation-id", hostile, "--bundle", str(plant_floor_bundle),
        "--key", PUBLIC, "--json",
    )  # fmt: skip
    answer = json.loads(run.stdout)
    assert run.exit_code == 1 and answer["error"]["code"] == "bad_arguments"
    assert hostile not in run.stdout


def test_the_schema_advertises_the_grammar_it_enforces() -> None:
    schema = BY_NAME["knowledge_ask"].param("correlation_id").schema  # type: ignore[union-attr]
    assert schema is ID_SCHEMA and schema["maxLength"] == MAX_CHARS
    pattern = re.compile(schema["pattern"].replace("$", r"\Z"))
    assert pattern.match("ticket-42") and not pattern.match("ticket 42")
    assert not pattern.match("ticket-42\n") and not pattern.match("-42")


def test_the_request_log_escapes_control_and_bidi_characters(served: Any) -> None:
    """Questions are logged as written (queries on): every control, bidi, separator or
    lone-surrogate character comes out escaped, and the line reads back as sent."""
    address, path = served
    question = "Modbus \x1b[31mred\x7f \u202eevil\u2066 \u2028 \x85 byte order \ud800?"
    body = json.dumps({"question": question}).encode()  # ASCII, \\u escapes
    status, _ = send(address, "/api/v1/ask", [AUTH], body)
    assert status == 200
    text = log_text(path)
    for char in "\x1b\x7f\u202e\u2066\u2028\x85":
        assert char not in text
    assert "\\u202e" in text and "\\u001b" in text and "\\ud800" in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert any(line["words"].get("question", {}).get("text") == question for line in lines)


# -- item 7: nesting -------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["list", "search", "ask", "brief"])
@pytest.mark.parametrize(
    "body",
    [b"[" * 3000, b'{"a":' * 3000, b'{"query": ' + b"[" * 3000 + b"]" * 3000 + b"}"],
    ids=["arrays", "objects", "in-a-value"],
)
def test_a_deeply_nested_body_is_refused_not_a_500(served: Any, verb: str, body: bytes) -> None:
    status, answer = send(served[0], f"/api/v1/{verb}", [AUTH], body)
    assert status == 400 and answer["error"]["code"] == "bad_arguments", answer
    assert f"nested deeper than {MAX_DEPTH} levels" in answer["error"]["message"]


def test_a_body_within_the_depth_bound_is_answered(served: Any) -> None:
    status, answer = send(served[0], "/api/v1/list", [AUTH], b'{"query": "modbus"}')
    assert status == 200 and answer["docs"]
    brackets = b'{"question": "modbus [[[[ {{{{ \\" [[[[ byte order"}'  # in a string: no nesting
    assert send(served[0], "/api/v1/ask", [AUTH], brackets)[0] == 200


def test_nesting_is_measured_without_parsing() -> None:
    assert nesting('{"a": [1, {"b": "[[[[\\"[["}], "c": {}}') == 3
    assert nesting('"[[[' + "[" * 100) == 0  # an unterminated string holds the rest
    assert nesting("[" * 200_000) == 200_000
    assert load_untrusted(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    with pytest.raises(NestingError):
        load_untrusted(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


def test_a_deeply_nested_review_file_is_hb801_not_a_traceback(
    make_library: MakeLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_library({"a.md": VALID_DOC.format(id="guide.a")}, reviews={**reviews_option()})
    monkeypatch.chdir(config.parent)
    (config.parent / "reviews").mkdir()
    (config.parent / "reviews" / "deep.json").write_bytes(b"[" * 8000 + b"]" * 8000)
    run = run_cli("check")
    assert run.exit_code == 1
    assert (
        f"../reviews/deep.json:1:1: HB801 nested deeper than {MAX_DEPTH} levels; "
        "fix the record, or remove the file" in run.lines
    )
    assert "Traceback" not in run.stdout + run.stderr


# -- item 10: a header sent twice ------------------------------------------------------------


@pytest.mark.parametrize("name", ["Actor", "Tenant", "Workspace"])
def test_an_actor_header_sent_twice_is_refused(served: Any, name: str) -> None:
    address, path = served
    before = log_text(path)
    twice = [(f"X-Handbook-{name}", "dispatcher-17"), (f"X-Handbook-{name}", "admin")]
    status, answer = send(address, "/api/v1/ask?question=modbus", [AUTH, *twice])
    assert status == 400 and answer["error"]["code"] == "bad_actor"
    assert f"X-Handbook-{name.lower()}" in answer["error"]["message"]
    status, answer = mcp_call(address, {"question": QUESTION}, *twice)
    assert status == 400 and answer["error"]["code"] == "bad_actor"
    assert log_text(path) == before  # refused before any tool ran


@pytest.mark.parametrize("order", ["good-last", "good-first"])
def test_two_authorization_headers_are_refused(served: Any, order: str) -> None:
    """Which of two credentials was meant? Not for the server to guess, either way round."""
    address, _ = served
    headers = [AUTH, ("Authorization", "Bearer not-a-token")]
    headers = headers[::-1] if order == "good-last" else headers
    for path, body in (("/api/v1/status", None), ("/mcp", b"{}")):
        status, answer = send(address, path, headers, body)
        assert status == 400 and answer["error"]["code"] == "duplicate_header", answer
        assert "Authorization" in answer["error"]["message"]


@pytest.mark.parametrize(
    "twice",
    [
        [(b"host", b"evil.example"), (b"host", b"127.0.0.1")],
        [
            (b"host", b"127.0.0.1"),
            (b"origin", b"http://evil.example"),
            (b"origin", b"http://127.0.0.1"),
        ],
    ],
    ids=["host", "origin"],
)
def test_a_host_or_origin_sent_twice_is_refused_by_the_gate(twice: list[Any]) -> None:
    """uvicorn refuses two Hosts itself; the gate refuses them under any ASGI server (the
    last of each is the good one: a gate that read only it let the request in)."""
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a refused request reached the app")

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/api/v1/status", "headers": twice, "client": ("t", 1)}
    gate = Gate(app, hosts=host_names("127.0.0.1"))
    anyio.run(gate, scope, None, record)
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"]["code"] == "duplicate_header"
