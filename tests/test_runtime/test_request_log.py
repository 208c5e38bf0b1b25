"""The request log of `handbook serve`, read after a real session over HTTP and MCP:
every tool call is a line with its principal, what it returned and its sizes; the text
of queries and questions is not in it unless the operator turns it on, and then it is;
and logging never changes an answer."""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PUBLIC, get_json, live

from handbook import Library
from handbook.access.principals import Principals
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.serve.request_log import KEY_ENV, RequestLog, returned
from handbook.tools.dispatch import call

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

TOKEN = "s3cret-token-of-the-support-bot"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SEARCHED = "register word order"
ASKED = "What byte order does Modbus use?"
MCP_SEARCHED = "holding registers of the pump"
BRIEFED = "replace the AC200 controller"
LOG_KEY = "k" * 32


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


def session(library: Library, log: RequestLog) -> list[dict[str, Any]]:
    """A session of an agent over HTTP and MCP; the answers it got, in order."""
    principals = Principals.single(TOKEN, "support-bot")
    app = create_app(library, principals=principals, mcp=http_app(library, log=log), log=log)
    answers = []
    with live(app) as address:
        for path in (
            f"/api/v1/search?query={SEARCHED.replace(' ', '+')}&limit=2",
            "/api/v1/get?doc_id=device.acme.ac200&section=register-map",
            "/api/v1/get?doc_id=no.such.doc",
            "/api/v1/no-such-tool",
        ):
            answers.append(get_json(address, path, **AUTH)[1])
        request = urllib.request.Request(
            f"http://{address[0]}:{address[1]}/api/v1/ask",
            data=json.dumps({"question": ASKED, "correlation_id": "ticket-42"}).encode(),
            headers={"Content-Type": "application/json", **AUTH},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answers.append(json.loads(response.read()))
        answers += mcp_calls(
            address,
            [
                ("knowledge_search", {"query": MCP_SEARCHED, "limit": 3}),
                ("knowledge_brief", {"task": BRIEFED, "refs": ["AC-200"], "limit": 2}),
            ],
        )
    return answers


def mcp_calls(
    address: tuple[str, int], calls: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://{address[0]}:{address[1]}/mcp"

    async def main() -> list[dict[str, Any]]:
        async with (
            httpx2.AsyncClient(headers=AUTH, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            return [
                json.loads((await client.call_tool(name, arguments)).content[0].text)
                for name, arguments in calls
            ]

    return anyio.run(main)


def logged(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def default_log(library: Library, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("log") / "requests.jsonl"
    log = RequestLog.open(str(path), key=LOG_KEY)
    try:
        session(library, log)
    finally:
        log.close()
    yield path


def test_every_tool_call_is_a_line_with_its_principal(default_log: Path) -> None:
    lines = logged(default_log)
    assert [(line["transport"], line["tool"], line["outcome"]) for line in lines] == [
        ("http", "knowledge_search", "ok"),
        ("http", "knowledge_get", "ok"),
        ("http", "knowledge_get", "unknown_id"),
        ("http", None, "unknown_tool"),
        ("http", "knowledge_ask", "ok"),
        ("mcp", "knowledge_search", "ok"),
        ("mcp", "knowledge_brief", "ok"),
    ]
    assert {line["principal"] for line in lines} == {"support-bot"}
    assert all(line["actor"] is None for line in lines)
    assert all(line["time"].endswith("Z") and line["ms"] >= 0 for line in lines)
    assert all(line["answer_bytes"] > 0 for line in lines)
    search, get, missing, _, ask, _, _ = lines
    assert search["arguments"] == {"query": len(json.dumps(SEARCHED)), "limit": 1}
    assert get["docs"] == ["device.acme.ac200"]
    assert get["sections"] == ["device.acme.ac200#register-map"]
    assert missing["docs"] == [] and missing["sections"] == []
    assert ask["correlation_id"] == "ticket-42"
    assert ask["docs"] and all(s.split("#")[0] in ask["docs"] for s in ask["sections"])


def test_no_query_text_by_default_only_its_length_and_keyed_hash(default_log: Path) -> None:
    text = default_log.read_text(encoding="utf-8")
    for words in (SEARCHED, ASKED, MCP_SEARCHED, BRIEFED, "word order", "Modbus"):
        assert words not in text
    lines = logged(default_log)
    asked = lines[4]["words"]["question"]
    expected = hmac.new(LOG_KEY.encode(), ASKED.encode(), hashlib.sha256).hexdigest()
    assert asked == {"chars": len(ASKED), "hmac": expected}
    assert set(lines[6]["words"]) == {"task"}  # refs are ids, not words


def test_the_file_is_readable_by_its_owner_only(default_log: Path) -> None:
    assert default_log.stat().st_mode & 0o777 == 0o600


def test_query_text_is_logged_when_the_operator_turns_it_on(
    library: Library, tmp_path: Path
) -> None:
    path = tmp_path / "requests.jsonl"
    log = RequestLog.open(str(path), queries=True)
    try:
        session(library, log)
    finally:
        log.close()
    lines = logged(path)
    assert lines[0]["words"] == {"query": {"chars": len(SEARCHED), "text": SEARCHED}}
    assert lines[4]["words"]["question"]["text"] == ASKED
    assert lines[5]["words"]["query"]["text"] == MCP_SEARCHED
    assert lines[6]["words"]["task"]["text"] == BRIEFED


def test_logging_never_changes_an_answer(library: Library, tmp_path: Path) -> None:
    log = RequestLog.open(str(tmp_path / "requests.jsonl"))
    try:
        for name, arguments in (
            ("knowledge_search", {"query": SEARCHED}),
            ("knowledge_get", {"doc_id": "device.acme.ac200"}),
            ("knowledge_list", {"limit": "many"}),
        ):
            assert log.caller("http")(library, name, arguments, "ci") == call(
                library, name, arguments, "ci"
            )
    finally:
        log.close()


def test_a_log_that_cannot_be_written_is_said_once(
    library: Library, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = RequestLog.open(str(tmp_path / "requests.jsonl"))
    log.close()  # every write now fails
    for _ in range(2):
        answer = log.caller("mcp")(library, "knowledge_get", {"doc_id": "device.acme.ac200"}, None)
        assert answer["id"] == "device.acme.ac200"
    assert capsys.readouterr().err.count("the request log cannot be written") == 1


def test_argument_names_that_are_not_names_are_not_logged(tmp_path: Path) -> None:
    log = RequestLog.open(str(tmp_path / "requests.jsonl"))
    line = log.line("http", "knowledge_list", {"jane@acme.com": 1, "kind": "device"}, None, {}, 0)
    log.close()
    assert line["arguments"] == {"?": 1, "kind": 8}


def test_a_short_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"{KEY_ENV} has 5 characters"):
        RequestLog.open(str(tmp_path / "log"), key="short")


def test_what_answers_returned() -> None:
    assert returned({"found": True, "id": "a", "section": {"title": "T", "anchor": "t"}}) == (
        ["a"],
        ["a#t"],
    )
    assert returned({"hits": [{"ref": "l:a", "anchor": "x"}, {"ref": "l:a", "anchor": None}]}) == (
        ["l:a"],
        ["l:a#x"],
    )
    assert returned({"sources": [{"document_id": "a", "anchor": "s"}]}) == (["a"], ["a#s"])
    assert returned({"id": "rec1", "doc": "a", "state": "open", "kind": "propose"}) == (["a"], [])
    assert returned({"found": False, "id": "x", "suggestions": ["a"]}) == ([], [])
