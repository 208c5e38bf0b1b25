"""One tool contract for every transport: each tool of the table, called with the same
arguments through the Python API, the dispatch, HTTP (GET and POST), MCP, RPC, the CLI
and a `RemoteLibrary`, gives the same dict (modulo each transport's framing); unknown
tools and parameters get the same structured error everywhere; and every transport
serves exactly the tools of the table.

The served object is a `Shelf` of two example libraries (one with attached files), so
these calls also prove that a shelf can be served at all."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import KEY, PUBLIC, ROOT, get_json, live, run_cli

from handbook import Library, RemoteLibrary, Shelf
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.serve.rpc import register_tools
from handbook.tools.dispatch import call
from handbook.tools.table import BY_NAME, READ_TOOLS
from handbook_build import load_config
from handbook_build.pipeline import build

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

AC200 = "plant-floor:device.acme.ac200"

CALLS: dict[str, dict[str, Any]] = {
    "knowledge_list": {"query": "modbus", "limit": 3, "kind": "device"},
    "knowledge_get": {"doc_id": AC200, "section": "Register map"},
    "knowledge_search": {"query": "word order", "limit": 3},
    "knowledge_collect": {
        "ids": [AC200, "protocol.modbus"],
        "max_bytes": 6000,
        "revisions": None,  # filled in from the bundle
    },
    "knowledge_ask": {"question": "What byte order does Modbus use?", "correlation_id": "parity"},
    "knowledge_brief": {
        "task": "read the word order of the AC200 registers over Modbus",
        "refs": ["AC-200"],
        "limit": 4,
    },
    "knowledge_resource": {
        "doc_id": "skill.modbus-scan",
        "path": "references/register-template.csv",
    },
}
"""Arguments for every tool of the table (a test fails when a tool has none here)."""


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Shelf:
    root = tmp_path_factory.mktemp("transports")
    libraries = []
    for example in ("plant-floor", "skills"):
        out = root / example
        build(load_config(ROOT / "examples" / example / "mkdocs.yml"), out, KEY)
        libraries.append(Library.open(out, [PUBLIC]))
    served = Shelf(libraries)
    revision = served.get(AC200)["revision"]
    CALLS["knowledge_collect"]["revisions"] = [{"id": AC200, "revision": revision}]
    return served


@pytest.fixture(scope="module")
def server(shelf: Shelf) -> Iterator[tuple[str, int]]:
    with live(create_app(shelf, mcp=http_app(shelf))) as address:
        yield address


def python_call(served: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool called as a Python method, as an application would."""
    args = dict(arguments)
    if name == "knowledge_collect" and args.get("revisions"):
        args["revisions"] = {r["id"]: r["revision"] for r in args["revisions"]}
    return dict(getattr(served, BY_NAME[name].verb)(**args))


def http_get(address: tuple[str, int], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    pairs = []
    for key, value in arguments.items():
        if isinstance(value, list):
            pairs += [
                (key, f"{v['id']}={v['revision']}" if isinstance(v, dict) else v) for v in value
            ]
        elif value is not None:
            pairs.append((key, str(value)))
    path = f"/api/v1/{BY_NAME[name].verb if name in BY_NAME else name}"
    status, body = get_json(address, path + "?" + urllib.parse.urlencode(pairs))
    assert status < 500, body
    return dict(body)


def http_post(address: tuple[str, int], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    route = BY_NAME[name].verb if name in BY_NAME else name
    request = urllib.request.Request(
        f"http://{address[0]}:{address[1]}/api/v1/{route}",
        data=json.dumps(arguments).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        with exc:
            return dict(json.loads(exc.read()))


def mcp_call(address: tuple[str, int], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client(f"http://{address[0]}:{address[1]}/mcp") as client:
            try:
                result = await client.call_tool(name, arguments)
            except mcp.MCPError as exc:  # an unknown tool is a protocol error
                return dict(exc.error.data)
            return dict(json.loads(result.content[0].text))

    return anyio.run(main)


def rpc_call(served: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    registered: dict[str, Callable[..., dict[str, Any]]] = {}
    assert (
        register_tools(lambda topic, handler: registered.__setitem__(topic, handler), served) == []
    )
    return registered[f"knowledge.{BY_NAME[name].verb}"](**arguments)


def cli_call(paths: list[Path], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = BY_NAME[name]
    args = [tool.verb]
    for param in tool.params:
        value = arguments.get(param.name)
        if value is None:
            continue
        if param.positional:
            args.append(str(value))
            continue
        flag = (param.flags or (f"--{param.name.replace('_', '-')}",))[0]
        for item in value if isinstance(value, list) else [value]:
            text = f"{item['id']}={item['revision']}" if isinstance(item, dict) else str(item)
            args += [flag, text]
    for field, value in arguments.items():
        if tool.param(field) is None and value is not None:
            args += ["--filter", f"{field}={value}"]
    for path in paths:
        args += ["--bundle", str(path)]
    run = run_cli(*args, "--key", PUBLIC, "--json")
    return dict(json.loads(run.stdout))


def same(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what legitimately differs by call: nothing, today."""
    return answer


def test_every_tool_has_arguments_here() -> None:
    assert set(CALLS) == {tool.name for tool in READ_TOOLS}


@pytest.mark.parametrize("name", [tool.name for tool in READ_TOOLS])
def test_every_transport_gives_the_same_answer(
    shelf: Shelf, server: tuple[str, int], name: str
) -> None:
    arguments = {k: v for k, v in CALLS[name].items() if v is not None}
    expected = python_call(shelf, name, arguments)
    assert "error" not in expected or expected.get("found") is False, expected
    paths = [lib.bundle.path for lib in shelf.libraries]
    remote = RemoteLibrary(f"http://{server[0]}:{server[1]}")
    answers = {
        "dispatch": call(shelf, name, arguments),
        "http get": http_get(server, name, arguments),
        "http post": http_post(server, name, arguments),
        "mcp": mcp_call(server, name, arguments),
        "rpc": rpc_call(shelf, name, arguments),
        "cli": cli_call(paths, name, arguments),
        "remote": call(remote, name, arguments),
        "remote method": python_call(remote, name, arguments),
    }
    for transport, answer in answers.items():
        assert same(answer) == same(expected), transport


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("knowledge_delete", {}, "unknown_tool"),
        ("knowledge_search", {"query": "x", "colour": "red"}, "unknown_parameter"),
        ("knowledge_get", {"doc_id": AC200, "ids": ["x"]}, "unknown_parameter"),
        ("knowledge_get", {"doc_id": 5}, "bad_arguments"),
        ("knowledge_ask", {}, "bad_arguments"),
        ("knowledge_brief", {"task": "x", "refs": 5}, "bad_arguments"),
    ],
)
def test_refusals_are_the_same_everywhere(
    shelf: Shelf, server: tuple[str, int], name: str, arguments: dict[str, Any], code: str
) -> None:
    expected = call(shelf, name, arguments)
    assert expected["error"]["code"] == code
    answers = {
        "mcp": mcp_call(server, name, arguments),
        "http post": http_post(server, name, arguments),
        "remote": call(RemoteLibrary(f"http://{server[0]}:{server[1]}"), name, arguments),
    }
    if name in BY_NAME:
        answers["rpc"] = rpc_call(shelf, name, arguments)
    if all(isinstance(v, str) for v in arguments.values()):  # text transports carry strings only
        answers["http get"] = http_get(server, name, arguments)
    for transport, answer in answers.items():
        assert answer["error"] == expected["error"], transport


def test_every_transport_serves_exactly_the_table(shelf: Shelf, server: tuple[str, int]) -> None:
    names = [tool.name for tool in READ_TOOLS]

    async def listed() -> list[str]:
        async with Client(f"http://{server[0]}:{server[1]}/mcp") as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert anyio.run(listed) == names
    _, document = get_json(server, "/api/v1/openapi.json")
    routes = {path.removeprefix("/api/v1/") for path in document["paths"]}
    assert routes == {tool.verb for tool in READ_TOOLS} | {"", "status"}
    _, index = get_json(server, "/api/v1/")
    assert [t["name"] for t in index["tools"]] == names
    registered: list[str] = []
    register_tools(lambda topic, handler: registered.append(topic), shelf)
    assert registered == [f"knowledge.{tool.verb}" for tool in READ_TOOLS]
    from handbook.cli import main

    for tool in READ_TOOLS:
        assert tool.verb in main.commands
    assert all(callable(getattr(RemoteLibrary, tool.verb)) for tool in READ_TOOLS)


def test_a_remote_library_can_be_served_again(server: tuple[str, int], shelf: Shelf) -> None:
    """A `RemoteLibrary` is a served object like any: a second server in front of the
    first answers the same dicts."""
    remote = RemoteLibrary(f"http://{server[0]}:{server[1]}")
    with live(create_app(remote, mcp=http_app(remote))) as proxy:
        for name in ("knowledge_get", "knowledge_search"):
            assert http_get(proxy, name, CALLS[name]) == python_call(shelf, name, CALLS[name])
        assert mcp_call(proxy, "knowledge_list", CALLS["knowledge_list"]) == python_call(
            shelf, "knowledge_list", CALLS["knowledge_list"]
        )
