"""MCP with the SDK's own client: `handbook mcp` over stdio (a real subprocess) and the
`/mcp` endpoint of `handbook serve` over streamable HTTP (a real server on loopback),
in both protocol eras the SDK speaks. Tools, structured results, errors, resources,
the Origin/Host checks and the bearer token."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import KEY, PUBLIC, ROOT, live, request

from handbook import Library
from handbook.serve.gate import host_names
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.tools.table import BY_NAME, READ_TOOLS
from handbook_build import load_config
from handbook_build.pipeline import build

mcp = pytest.importorskip("mcp")
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402

MODES = ["auto", "legacy"]
CHILD_ENV = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
"""The SDK starts a server with a few safe variables only: this tree's PYTHONPATH is passed
on, so the child runs the code under test (a worktree's), not whatever is installed."""
TOKEN = "mcp-token"


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


async def exercise(client: Client, library: Library) -> None:
    """Everything an agent host does: list and call each tool, read a resource."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    definitions = {t["name"]: t for t in json.loads(library.bundle.read("tools.json"))["tools"]}
    assert set(tools) == set(definitions) == {tool.name for tool in READ_TOOLS}
    for name, tool in tools.items():
        assert tool.input_schema == definitions[name]["inputSchema"]
        # MCP alone serves output schemas: its clients check structured results with them
        assert "outputSchema" not in definitions[name]
        assert tool.output_schema == BY_NAME[name].output
        assert tool.annotations is not None
        assert (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,  # meaningful only when not read-only
            tool.annotations.idempotent_hint,
            tool.annotations.open_world_hint,
        ) == (True, None, None, False)

    listed = await client.call_tool(
        "knowledge_list", {"query": None, "limit": None, "kind": "device"}
    )
    assert not listed.is_error
    assert listed.structured_content == library.list(kind="device")
    assert json.loads(listed.content[0].text) == listed.structured_content

    got = await client.call_tool(
        "knowledge_get", {"doc_id": "device.acme.ac200", "section": "Register map"}
    )
    assert got.structured_content == library.get("device.acme.ac200", section="Register map")
    lenient = await client.call_tool(
        "knowledge_get", {"doc_id": "protocol.modbus"}
    )  # section left out
    assert lenient.structured_content == library.get("protocol.modbus")
    missing = await client.call_tool("knowledge_get", {"doc_id": "device.acme.ac2000"})
    assert not missing.is_error and missing.structured_content["found"] is False
    assert "device.acme.ac200" in missing.structured_content["suggestions"]

    found = await client.call_tool("knowledge_search", {"query": "word order", "limit": 3})
    assert found.structured_content == library.search("word order", limit=3)

    refused = await client.call_tool("knowledge_search", {"query": "foo~5"})
    assert refused.is_error and "edit distance" in refused.content[0].text
    wrong = await client.call_tool("knowledge_search", {"query": "x", "colour": "red"})
    assert wrong.is_error and "colour" in wrong.content[0].text
    wrong_type = await client.call_tool("knowledge_get", {"doc_id": 5})
    assert wrong_type.is_error
    with pytest.raises(MCPError, match="unknown tool"):
        await client.call_tool("knowledge_delete", {})

    resources = (await client.list_resources()).resources
    uris = {str(r.uri) for r in resources}
    assert uris == {f"handbook://plant-floor/{d.id}" for d in library.bundle.catalog.docs}
    doc = library.bundle.catalog.docs[0]
    contents = (await client.read_resource(f"handbook://plant-floor/{doc.id}")).contents[0]
    assert contents.mime_type == "text/markdown"
    assert contents.text.encode() == library.bundle.read(doc.content)  # type: ignore[union-attr]
    templates = (await client.list_resource_templates()).resource_templates
    assert templates[0].uri_template == "handbook://plant-floor/{id}"
    with pytest.raises(MCPError) as info:
        await client.read_resource("handbook://plant-floor/no.such.doc")
    assert info.value.code == -32002


@pytest.mark.parametrize("mode", MODES)
def test_stdio(plant_floor_bundle: Path, library: Library, mode: str) -> None:
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "handbook"),
        env=CHILD_ENV,
        args=["mcp", "--bundle", str(plant_floor_bundle), "--key", PUBLIC],
    )

    async def main() -> None:
        async with Client(params, mode=mode) as client:
            await exercise(client, library)

    anyio.run(main)


def test_stdio_refuses_an_untrusted_bundle(plant_floor_bundle: Path) -> None:
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "handbook"),
        env=CHILD_ENV,
        args=["mcp", "--bundle", str(plant_floor_bundle)],
    )

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            await client.list_tools()

    # the process exits (refused: no trusted key) before the handshake
    with pytest.raises(Exception):  # noqa: B017
        anyio.run(main)


@pytest.fixture(scope="module")
def server(library: Library) -> Any:
    with live(create_app(library, mcp=http_app(library))) as address:
        yield address


@pytest.mark.parametrize("mode", MODES)
def test_streamable_http(server: tuple[str, int], library: Library, mode: str) -> None:
    async def main() -> None:
        async with Client(f"http://{server[0]}:{server[1]}/mcp", mode=mode) as client:
            await exercise(client, library)

    anyio.run(main)


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


def post(address: tuple[str, int], headers: dict[str, str]) -> int:
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            body=INITIALIZE,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_origin_and_host_are_checked(server: tuple[str, int]) -> None:
    """DNS rebinding: a browser page on another origin, or a name that resolves to us."""
    assert post(server, {}) == 200
    assert post(server, {"Origin": f"http://127.0.0.1:{server[1]}"}) == 200
    assert post(server, {"Origin": "http://evil.example"}) == 403
    assert post(server, {"Origin": "http://127.0.0.1.evil.example"}) == 403
    assert post(server, {"Host": "evil.example"}) == 421
    assert post(server, {"Host": f"rebound.example:{server[1]}"}) == 421


def test_allowed_hosts_extend_the_checks(library: Library) -> None:
    hosts = host_names("127.0.0.1", ["kb.internal"])
    app = create_app(library, mcp=http_app(library, allowed_hosts=["kb.internal"]), hosts=hosts)
    with live(app) as address:
        assert post(address, {"Host": "kb.internal", "Origin": "https://kb.internal"}) == 200
        assert post(address, {"Host": "other.internal"}) == 421


def test_token_guards_mcp(library: Library) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    with live(create_app(library, token=TOKEN, mcp=http_app(library))) as address:
        assert post(address, {}) == 401
        assert post(address, {"Authorization": f"Bearer {TOKEN}"}) == 200
        url = f"http://{address[0]}:{address[1]}/mcp"

        async def main() -> list[str]:
            async with (
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
                ) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                return [t.name for t in (await client.list_tools()).tools]

        assert anyio.run(main) == [tool.name for tool in READ_TOOLS]
        assert request(address, "/api/v1/status")[0] == 401


def test_stdio_serves_several_libraries(plant_floor_bundle: Path, tmp_path: Path) -> None:
    """`handbook mcp --bundle A --bundle B`: one server, both libraries, qualified refs."""
    skills = tmp_path / "skills"
    build(load_config(ROOT / "examples" / "skills" / "mkdocs.yml"), skills, KEY)
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "handbook"),
        env=CHILD_ENV,
        args=["mcp", "--bundle", str(plant_floor_bundle), "--bundle", str(skills), "--key", PUBLIC],
    )

    async def main() -> tuple[set[str], dict[str, Any], str]:
        async with Client(params, mode="legacy") as client:
            uris = {r.uri for r in (await client.list_resources()).resources}
            got = await client.call_tool(
                "knowledge_get", {"doc_id": "plant-skills:skill.modbus-scan"}
            )
            attached = await client.read_resource(
                "handbook://plant-skills/skill.modbus-scan/references/register-template.csv"
            )
            return uris, dict(got.structured_content or {}), attached.contents[0].text  # type: ignore[union-attr]

    uris, got, attached = anyio.run(main)
    assert {u.split("/")[2] for u in uris} == {"plant-floor", "plant-skills"}
    assert got["found"] is True and got["ref"] == "plant-skills:skill.modbus-scan"
    assert (
        attached
        == (
            ROOT / "examples/skills/docs/skills/modbus-scan/references/register-template.csv"
        ).read_text()
    )
