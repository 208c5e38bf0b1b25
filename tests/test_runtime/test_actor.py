"""The actor context: sent as transport metadata on every transport, validated, echoed by
`ask` beside its correlation id, recorded in the request log, forwarded by a
`RemoteLibrary`, and never accepted as a tool parameter."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from conftest import PUBLIC, live

from handbook import Actor, Library, RemoteLibrary, acting
from handbook.access.actor import ActorError, actor_of, from_details, from_headers, from_meta
from handbook.access.principals import Principals
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.serve.request_log import RequestLog
from handbook.serve.rpc import register_tools
from handbook.tools.dispatch import call

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

QUESTION = "What byte order does Modbus use?"
ACTOR = {"actor": "dispatcher-17", "tenant": "northwind", "workspace": "fleet-ops"}
HEADERS = {
    "X-Handbook-Actor": "dispatcher-17",
    "X-Handbook-Tenant": "northwind",
    "X-Handbook-Workspace": "fleet-ops",
}
TOKEN = "token-of-the-operations-app"


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


def post(
    address: tuple[str, int], verb: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://{address[0]}:{address[1]}/api/v1/{verb}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def mcp_ask(
    address: tuple[str, int], headers: dict[str, str], meta: dict[str, Any] | None
) -> dict[str, Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://{address[0]}:{address[1]}/mcp"

    async def main() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            result = await client.call_tool(
                "knowledge_ask", {"question": QUESTION, "limit": 1}, meta=meta
            )
            return dict(json.loads(result.content[0].text))

    return anyio.run(main)


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, problem",
    [
        ("", "letters, digits"),
        ("has space", "letters, digits"),
        ("-leading-dash", "letters, digits"),
        ('quote"d', "letters, digits"),
        ("line\nbreak", "letters, digits"),
        ("x" * 129, "at most 128"),
        (17, "must be a string"),
    ],
)
def test_a_bad_value_is_refused_naming_its_carrier(value: Any, problem: str) -> None:
    with pytest.raises(ActorError, match=problem) as caught:
        actor_of({"tenant": value}, "header X-Handbook-{name}")
    assert "header X-Handbook-tenant" in str(caught.value)


def test_each_carrier_gives_the_same_actor() -> None:
    expected = Actor(**ACTOR)
    raw = {k.lower().encode(): v.encode() for k, v in HEADERS.items()}
    assert from_headers(raw) == expected
    assert from_meta({f"handbook/{k}": v for k, v in ACTOR.items()}) == expected
    assert from_details(ACTOR) == expected
    assert from_details(SimpleNamespace(**ACTOR)) == expected
    assert from_details(SimpleNamespace(caller_authextra=ACTOR, caller_authid="app")) == expected
    assert from_headers({}) is None and from_meta({"progressToken": 1}) is None
    assert from_details(None) is None and from_details({}) is None
    assert Actor(tenant="northwind").info() == {"tenant": "northwind"}


# -- the transports --------------------------------------------------------------------------


def test_http_echoes_validates_and_logs_the_actor(library: Library, tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    log = RequestLog.open(str(path), key="k" * 32)
    principals = Principals.single(TOKEN, "ops-app")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        app = create_app(library, principals=principals, log=log)
        with live(app) as address:
            status, answer = post(
                address, "ask", {"question": QUESTION, "correlation_id": "c-42"}, auth | HEADERS
            )
            assert status == 200
            assert answer["actor"] == ACTOR and answer["correlation_id"] == "c-42"
            status, plain = post(address, "ask", {"question": QUESTION}, auth)
            assert status == 200 and "actor" not in plain
            status, refused = post(
                address, "ask", {"question": QUESTION}, auth | {"X-Handbook-Tenant": "a b"}
            )
            assert status == 400 and refused["error"]["code"] == "bad_actor"
            assert "X-Handbook-tenant" in refused["error"]["message"]
    finally:
        log.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["actor"] for line in lines] == [ACTOR, None]  # the refusal never ran a tool
    assert lines[0]["correlation_id"] == "c-42" and lines[0]["principal"] == "ops-app"
    assert QUESTION not in path.read_text()


def test_mcp_takes_the_actor_from_meta_or_headers(library: Library) -> None:
    with live(create_app(library, mcp=http_app(library))) as address:
        meta = {f"handbook/{k}": v for k, v in ACTOR.items()}
        assert mcp_ask(address, {}, meta)["actor"] == ACTOR
        assert mcp_ask(address, HEADERS, None)["actor"] == ACTOR
        overridden = mcp_ask(address, HEADERS, {"handbook/actor": "night-shift"})
        assert overridden["actor"] == {"actor": "night-shift"}  # _meta wins, whole
        assert "actor" not in mcp_ask(address, {}, None)
        refused = mcp_ask(address, {}, {"handbook/workspace": "x" * 500})
        assert refused["error"]["code"] == "bad_actor"


def test_rpc_reads_the_call_details(library: Library) -> None:
    registered: dict[str, Any] = {}
    assert register_tools(lambda topic, h: registered.__setitem__(topic, h), library) == []
    ask = registered["knowledge.ask"]
    assert ask(QUESTION, details=SimpleNamespace(caller_authextra=ACTOR))["actor"] == ACTOR
    assert "actor" not in ask(QUESTION)
    assert ask(QUESTION, details={"actor": "a b"})["error"]["code"] == "bad_actor"


def test_a_remote_library_forwards_the_actor(library: Library) -> None:
    with live(create_app(library)) as address:
        remote = RemoteLibrary(f"http://{address[0]}:{address[1]}")
        with acting(Actor(**ACTOR)):
            assert remote.ask(QUESTION)["actor"] == ACTOR
        assert "actor" not in remote.ask(QUESTION)


def test_the_actor_is_never_a_tool_parameter(library: Library) -> None:
    for name in ("actor", "tenant", "workspace"):
        answer = call(library, "knowledge_ask", {"question": QUESTION, name: "someone"})
        assert answer["error"]["code"] == "unknown_parameter"
    with acting(Actor(actor="x")):
        assert library.ask(QUESTION)["actor"] == {"actor": "x"}
    assert "actor" not in library.ask(QUESTION)  # the block's context is gone


def test_an_actor_alone_keeps_who_is_asking() -> None:
    from handbook.libraries.audiences import CURRENT_PRINCIPAL

    with acting(None, "ops"):
        with acting(Actor(actor="x")):  # an RPC call's details inside a principal's request
            assert CURRENT_PRINCIPAL.get() == "ops"
        with acting(Actor(actor="y"), None):
            assert CURRENT_PRINCIPAL.get() is None
        assert CURRENT_PRINCIPAL.get() == "ops"
    assert CURRENT_PRINCIPAL.get() is None
