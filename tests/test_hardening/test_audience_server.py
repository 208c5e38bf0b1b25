"""The access example served to its three audiences exactly as docs/guide/access.md says.

The guide's own commands are read from the guide and run through the real CLI in a copy
of the example: `handbook build`, `handbook token add` for its three principals, and its
`handbook serve` command (plus a free port and an inbox), a real server on loopback. Each
token then reads, over every read tool of the HTTP API and over MCP, its own audience's
docs only; the public token cannot write into the staff audience's inbox (a staff- or
other-library-qualified id is refused exactly like an unknown id, nothing is stored, and
25 such attempts leave staff's per-doc cap untouched), while staff's own writes are filed
under staff's identity. Before the fix the guide's server did not start ("two libraries
are named access-example"), and the public token's proposals were stored under
`access-example@staff`. `handbook mcp` over stdio refuses the three bundles: it has no
token to choose an audience by.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY_PEM, PUBLIC, ROOT

from handbook.inbox.sqlite_store import SQLiteStore

pytest.importorskip("uvicorn")

GUIDE = ROOT / "docs" / "guide" / "access.md"
HANDBOOK = [sys.executable, "-c", "from handbook.cli import main; main()"]
SEES = {
    "web": {"guide.reset", "index"},
    "ops": {"guide.reset", "index", "procedure.override"},
    "acme-bot": {"guide.reset", "index", "note.acme-contract"},
}
EVERY = set().union(*SEES.values())
WORDS = {"procedure.override": "interlock", "note.acme-contract": "zanzibar"}
"""A word only each restricted doc holds, to ask about."""
SECRETS = {"procedure.override": "zx-7731", "note.acme-contract": "quartermaster"}
"""Words of each restricted doc no question names: they reach no other audience's answer."""
HOSTILE = ["access-example@staff:procedure.override", "totally-other-lib:foo.bar"]
INBOX = "inbox.db"


def guide() -> tuple[list[str], list[list[str]], list[str], list[str]]:
    """(the build command, its printed audience lines, the `token add` commands, the
    `serve` command), as the guide prints them."""
    text = GUIDE.read_text(encoding="utf-8")
    build = re.search(r"`(handbook build --config examples/access)`", text)
    printed = re.search(r"writes three bundles:\n\n```text\n(.*?)```", text, re.S)
    block = re.search(r"## Who is asking\n.*?```sh\n(.*?)```", text, re.S)
    assert build and printed and block, "the guide no longer shows the commands this test runs"
    lines = [shlex.split(line) for line in block[1].replace("\\\n", " ").splitlines() if line]
    assert [c[:3] for c in lines[:-1]] == [["handbook", "token", "add"]] * 3
    assert lines[-1][:2] == ["handbook", "serve"]
    return shlex.split(build[1]), printed[1].splitlines(), lines[:-1], lines[-1]


def handbook(
    command: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`command` (`handbook …`) through the real CLI, in `cwd`."""
    assert command[0] == "handbook"
    return subprocess.run(
        [*HANDBOOK, *command[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def access(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(a folder holding a copy of the example, built by the guide's command signed with
    the test key; the environment that trusts it)."""
    root = tmp_path_factory.mktemp("access-guide")
    shutil.copytree(
        ROOT / "examples" / "access",
        root / "examples" / "access",
        ignore=shutil.ignore_patterns("build"),
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"HANDBOOK_TOKEN", "HANDBOOK_TOKENS_FILE", "HANDBOOK_INBOX"}
    }
    env.update(HANDBOOK_SIGNING_KEY=KEY_PEM, HANDBOOK_TRUSTED_KEYS=PUBLIC, PYTHONUNBUFFERED="1")
    build, printed, _, _ = guide()
    done = handbook(build, root, env)
    assert done.returncode == 0, done.stderr
    for line in printed:  # the bundles the guide says, where it says
        assert line in done.stdout.splitlines(), (line, done.stdout)
    return root, env


@contextmanager
def serving(command: list[str], cwd: Path, env: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """The guide's `handbook serve` on a free port with an inbox; (its URL, its stderr
    lines so far). The address is read from the line the server announces once its
    socket listens, so no wait is needed."""
    process = subprocess.Popen(
        [*HANDBOOK, *command[1:], "--port", "0", "--inbox", INBOX],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    said: list[str] = []
    url = None
    for line in process.stderr:
        said.append(line)
        if found := re.match(r"serving .* at (http://127\.0\.0\.1:\d+)/", line):
            url = found[1]
            break
    drain = threading.Thread(target=lambda: said.extend(process.stderr or ()), daemon=True)
    drain.start()
    try:
        assert url is not None, f"serve did not start: {''.join(said)}"
        yield url, said
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        drain.join(timeout=60)
        process.stderr.close()


class Asker:
    """One principal's calls to the API: POST /api/v1/<verb> with its bearer token."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def __call__(self, verb: str, **arguments: Any) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.url}/api/v1/{verb}",
            data=json.dumps(arguments).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())


def ids_in(answer: Any, *keys: str) -> set[str]:
    """The doc ids an answer names under `keys` (document_id for ask's sources)."""
    out = set()
    for key in keys:
        for item in answer.get(key) or []:
            out.add(item.get("id") or item.get("document_id"))
    return out


def check_reads(ask: Asker, name: str) -> None:
    """Every read tool, for one token: its audience's docs, and nothing of the others'."""
    sees, answers = SEES[name], []
    status, listed = ask("list", limit=50)
    assert status == 200 and ids_in(listed, "docs") == sees, (name, listed)
    for doc_id in sorted(EVERY):
        status, got = ask("get", doc_id=doc_id)
        assert (status == 200 and got["found"]) if doc_id in sees else status == 404, (name, got)
        answers.append(got)
        status, resource = ask("resource", doc_id=doc_id, path="wiring.txt")
        code = "unknown_resource" if doc_id in sees else "unknown_id"
        assert resource["error"]["code"] == code, (name, doc_id, resource)
        answers.append(resource)
    _, collected = ask("collect", ids=sorted(EVERY))
    assert ids_in(collected, "items") == sees and ids_in(collected, "omissions") == EVERY - sees
    answers.append(collected)
    for doc_id, word in WORDS.items():
        _, found = ask("search", query=word)
        assert ids_in(found, "hits") == ({doc_id} if doc_id in sees else set()), (name, found)
        _, asked = ask("ask", question=f"What does the {word} doc say?")
        assert (doc_id in ids_in(asked, "sources")) == (doc_id in sees), (name, asked)
        _, briefed = ask("brief", task=f"work on the {word}")
        assert ids_in(briefed, "items") <= sees, (name, briefed)
        answers += [found, asked, briefed]
    text = json.dumps(answers).lower()
    for doc_id, secret in SECRETS.items():
        assert (secret in text) is (doc_id in sees), (name, secret)


def mcp_reads(url: str, token: str) -> tuple[set[str], set[str], Any, Any, str | None]:
    """(knowledge_list's ids, the resources listed, knowledge_get of the staff doc, a
    propose naming the staff audience, the staff doc read as a resource or None) over
    MCP at /mcp with `token`."""
    import anyio
    import httpx2
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> tuple[set[str], set[str], Any, Any, str | None]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):

            async def tool(name: str, **arguments: Any) -> Any:
                return json.loads((await client.call_tool(name, arguments)).content[0].text)

            listed = ids_in(await tool("knowledge_list"), "docs")
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            got = await tool("knowledge_get", doc_id="procedure.override")
            wrote = await tool(
                "knowledge_propose", doc_id=HOSTILE[0], markdown="Skip it.", basis="over MCP"
            )
            try:
                read = await client.read_resource("handbook://access-example/procedure.override")
                text: str | None = read.contents[0].text  # type: ignore[union-attr]
            except MCPError:
                text = None
            return listed, resources, got, wrote, text

    return anyio.run(main)


def check_mcp(url: str, made: dict[str, str]) -> None:
    """MCP over HTTP answers a restricted and a public token from their own bundles."""
    for name in ("ops", "web"):
        listed, resources, got, wrote, text = mcp_reads(url, made[name])
        assert listed == SEES[name]
        assert resources == {f"handbook://access-example/{i}" for i in SEES[name]}
        assert got["found"] is (name == "ops")
        assert (text is not None and "ZX-7731" in text) is (name == "ops")
        assert wrote["error"]["code"] == "bad_arguments", wrote  # no one names staff's inbox


def same_refusal(ask: Asker, hostile: str, **arguments: Any) -> None:
    """`hostile` is answered exactly like an unknown id of its length, tool for tool."""
    unknown = "q" * len(hostile)
    calls = [
        ("propose", {"markdown": "Skip the bypass.", "basis": "Public says so."}),
        ("contradict", {"revision": "0" * 64, "basis": "Public says so."}),
        ("corroborate", {"revision": "0" * 64, "basis": "Public says so."}),
    ]
    for verb, args in calls:
        status, got = ask(verb, doc_id=hostile, **args, **arguments)
        if verb == "propose":  # an unknown id is a new doc: refused when it has a revision
            args = {**args, "revision": "0" * 64}
        expected = ask(verb, doc_id=unknown, **args, **arguments)
        assert got["error"]["code"] == "bad_arguments", (hostile, verb, got)
        assert (status, json.dumps(got).replace(hostile, unknown)) == (
            expected[0],
            json.dumps(expected[1]),
        ), (hostile, verb)
        assert len(json.dumps(got)) == len(json.dumps(expected[1]))


def check_inbox(url: str, made: dict[str, str], store: SQLiteStore) -> None:
    """The public token cannot reach staff's inbox, nor its cap; staff's writes work."""
    web, ops = Asker(url, made["web"]), Asker(url, made["ops"])
    for hostile in HOSTILE:
        same_refusal(web, hostile)
    for n in range(25):  # more than staff's per-doc cap (20): none is stored or counted
        status, got = web("propose", doc_id=HOSTILE[0], markdown=f"v{n}", basis=f"b{n}")
        assert status == 400 and got["error"]["code"] == "bad_arguments", got
    assert store.records() == []
    _, got = ops("get", doc_id="procedure.override")
    assert "open_records" not in got.get("pedigree", {})
    basis = "The bypass valve must be closed first: the panel refuses otherwise."
    status, wrote = ops(
        "contradict", doc_id="procedure.override", revision=got["revision"], basis=basis
    )
    assert status == 200 and wrote["new"] is True and wrote["state"] == "open", wrote
    assert wrote["library"] == "access-example@staff" and wrote["by"] == "ops"
    _, proposed = ops(
        "propose", doc_id="access-example:procedure.valve-check", markdown="# Check", basis="b"
    )
    assert (
        proposed["library"] == "access-example@staff" and proposed["doc"] == "procedure.valve-check"
    )
    _, got = ops("get", doc_id="procedure.override")
    assert [r["by"] for r in got["pedigree"]["open_records"]] == ["ops"]
    assert got["pedigree"]["verify_first"].startswith("unreviewed contradiction by ops")
    stored = store.records()
    assert sorted(r.library for r in stored) == ["access-example@staff"] * 2
    assert {r.id for r in stored} == {wrote["id"], proposed["id"]}
    assert len({r.principal for r in stored}) == 1  # both ops's


def test_the_guide_s_three_audience_server(access: tuple[Path, dict[str, str]]) -> None:
    root, env = access
    _, _, adds, serve = guide()
    made = {}
    for add in adds:
        done = handbook(add, root, env)
        assert done.returncode == 0, done.stderr
        made[add[3]] = done.stdout.strip()
    assert set(made) == set(SEES)
    gone = handbook(
        ["handbook", "token", "add", "gone", "--tokens", "tokens.txt", "--audience", "partner"],
        root,
        env,
    )
    with serving(serve, root, env) as (url, said):
        for identity in (
            "access-example@public",
            "access-example@staff",
            "access-example@customer:acme",
        ):
            assert identity in said[-1]
        for name, token in made.items():
            check_reads(Asker(url, token), name)
        status, refused = Asker(url, gone.stdout.strip())("list")
        assert status == 403 and refused["error"]["code"] == "forbidden"
        check_mcp(url, made)
        store = SQLiteStore(root / INBOX)
        try:
            check_inbox(url, made, store)
        finally:
            store.close()


def test_handbook_mcp_refuses_several_audiences(access: tuple[Path, dict[str, str]]) -> None:
    """Over stdio no token says whose audience to read: the guide's three bundles are
    refused with an error naming their audiences, never served as one."""
    root, env = access
    _, _, _, serve = guide()
    bundles = serve[serve.index("--bundle") :]
    done = handbook(["handbook", "mcp", *bundles], root, env)
    assert done.returncode == 2 and "no token to choose one by" in done.stderr, done.stderr
    assert "customer:acme, public, staff" in done.stderr
