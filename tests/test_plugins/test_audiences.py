"""Audiences (issue 21): one signed bundle per audience, holding only what its readers may
read, with no trace of the rest; links that would leak are errors; the site is one
audience's; an audience's bundle is never accepted as another's."""

from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT, run_cli
from test_mkdocs_plugin import run

from handbook import Library
from handbook.errors import LibraryMismatchError
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "access"
STAFF_ONLY = ["procedure.override", "Overriding the flow interlock", "interlock", "ZX-7731"]
ACME_ONLY = ["note.acme-contract", "Zanzibar", "quartermaster", "Tuesdays"]
AUDIENCE_NAMES = ["staff", "customer:acme", "customer-acme", "acme"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("access") / "access"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    build(load_config(root / "mkdocs.yml"), root / "build" / "bundle", None)
    return root / "build"


def every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.resolve().rglob("*")) if p.is_file())


def test_the_fixture_gives_exactly_the_expected_findings() -> None:
    config = FIXTURES / "audiences-hostile" / "mkdocs.yml"
    run_ = run_cli("check", "--explain", "--config", str(config))
    assert run_.exit_code == 1
    assert run_.stdout == (config.parent / "expected.txt").read_text(encoding="utf-8")


def test_each_audience_gets_its_own_signed_bundle(built: Path) -> None:
    public = Library.open(built / "bundle", allow_unsigned=True)
    staff = Library.open(built / "bundles" / "staff", allow_unsigned=True)
    acme = Library.open(built / "bundles" / "customer-acme", allow_unsigned=True)
    ids = {name: sorted(d["id"] for d in lib.list()["docs"]) for name, lib in
           (("public", public), ("staff", staff), ("acme", acme))}  # fmt: skip
    assert ids == {
        "public": ["guide.reset", "index"],
        "staff": ["guide.reset", "index", "procedure.override"],
        "acme": ["guide.reset", "index", "note.acme-contract"],
    }
    assert public.bundle.manifest.signed.audience == "public"
    assert staff.bundle.manifest.signed.audience == "staff"
    assert staff.bundle.manifest.signed.identity == "access-example@staff"


@pytest.mark.parametrize(
    ("bundle", "hidden"),
    [
        ("bundle", STAFF_ONLY + ACME_ONLY + AUDIENCE_NAMES),
        ("bundles/staff", [*ACME_ONLY, "customer:acme", "customer-acme"]),
        ("bundles/customer-acme", STAFF_ONLY),
    ],
)
def test_no_trace_of_what_an_audience_may_not_read(
    built: Path, bundle: str, hidden: list[str]
) -> None:
    """Every byte of every file of the bundle (catalog, search file, lunr index, tools,
    llms.txt, content, manifest): no id, title, distinctive word or audience name."""
    data = every_byte(built / bundle).lower()
    assert [word for word in hidden if word.lower().encode() in data] == []


def test_a_restricted_id_answers_like_an_unknown_one(built: Path) -> None:
    public = Library.open(built / "bundle", allow_unsigned=True)

    def masked(answer: object, doc_id: str) -> str:
        return str(answer).replace(doc_id, "ID")

    assert masked(public.get("procedure.override"), "procedure.override") == masked(
        public.get("procedure.zzzzzzzz"), "procedure.zzzzzzzz"
    )
    assert public.search("interlock")["hits"] == public.search("qwertyuiop")["hits"] == []
    collected = public.collect(ids=["note.acme-contract"])
    assert [o["reason"] for o in collected["omissions"]] == ["unknown_identity"]


def test_an_audience_s_bundle_is_never_accepted_as_another_s(built: Path) -> None:
    with pytest.raises(LibraryMismatchError, match="signed for audience 'staff', not 'public'"):
        Library.open(built / "bundles" / "staff", allow_unsigned=True, expect_audience="public")
    assert Library.open(built / "bundle", allow_unsigned=True, expect_audience="public")


def test_the_site_is_built_for_one_audience(tmp_path: Path) -> None:
    root = tmp_path / "access"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    done = run("mkdocs", "build", "--site-dir", str(root / "site"), cwd=root)
    assert done.returncode == 0, done.stderr
    pages = {p.relative_to(root / "site").as_posix() for p in (root / "site").rglob("*.html")}
    assert "guides/reset/index.html" in pages
    assert not [p for p in pages if p.startswith(("staff/", "customers/"))]
    assert [
        w for w in STAFF_ONLY + ACME_ONLY if w.lower().encode() in every_byte(root / "site").lower()
    ] == []


def test_a_site_for_a_narrower_audience_than_the_default_shows_only_its_docs(
    tmp_path: Path,
) -> None:
    """The generated pages (catalog, llms.txt) come from the site's audience's bundle,
    not the default's: a public site beside a staff default names no staff doc."""
    root = tmp_path / "access"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    config = root / "mkdocs.yml"
    config.write_text(config.read_text().replace("default: public", "default: staff"))
    done = run("mkdocs", "build", "--site-dir", str(root / "site"), cwd=root)
    assert done.returncode == 0, done.stderr
    assert (root / "site" / "llms.txt").is_file()
    assert [w for w in STAFF_ONLY if w.lower().encode() in every_byte(root / "site").lower()] == []
    assert b"interlock" in (root / "build" / "bundle" / "catalog.json").read_bytes().lower()


def test_each_principal_is_served_its_audience_only(built: Path, tmp_path: Path) -> None:
    """A token for customer:acme never sees staff's docs nor the reverse; a principal
    whose audience is not served is refused; the bundle files follow the audience too."""
    from conftest import get_json, live, request

    from handbook.access.principals import Principals, add_token
    from handbook.cli.serving import by_audience
    from handbook.serve.http import create_app
    from handbook.serve.mcp import http_app

    tokens = tmp_path / "tokens"
    made = {
        name: add_token(tokens, name, audience)
        for name, audience in [
            ("web", None), ("ops", "staff"), ("acme-bot", "customer:acme"), ("gone", "partner"),
        ]
    }  # fmt: skip
    principals = Principals.load(tokens)
    libraries = {
        str(p): Library.open(built / p, allow_unsigned=True)
        for p in ("bundle", "bundles/staff", "bundles/customer-acme")
    }
    router = by_audience(libraries, principals)
    staff_only = by_audience({"s": libraries["bundles/staff"]}, principals)
    assert list(staff_only.bundles()) == ["access-example"]  # outside a request: no audience
    with live(create_app(router, principals=principals, mcp=http_app(router))) as address:

        def ask(name: str, path: str) -> tuple[int, dict[str, object]]:
            return get_json(address, path, Authorization=f"Bearer {made[name]}")

        def ids(name: str) -> list[str]:
            return sorted(str(d["id"]) for d in ask(name, "/api/v1/list")[1]["docs"])  # type: ignore[index, union-attr]

        assert ids("web") == ["guide.reset", "index"]
        assert ids("ops") == ["guide.reset", "index", "procedure.override"]
        assert ids("acme-bot") == ["guide.reset", "index", "note.acme-contract"]
        assert ask("acme-bot", "/api/v1/get?doc_id=procedure.override")[0] == 404
        assert ask("ops", "/api/v1/search?query=zanzibar")[1]["hits"] == []
        status, _ = ask("gone", "/api/v1/list")
        assert status == 403
        assert request(address, "/api/v1/list")[0] == 401
        _, _, catalog = request(
            address, "/bundle/catalog.json", {"Authorization": f"Bearer {made['web']}"}
        )
        assert b"interlock" not in catalog.lower() and b"zanzibar" not in catalog.lower()
        # MCP answers each token from its audience's bundle too: tools and resources.
        for name, expected in [
            ("web", ["guide.reset", "index"]),
            ("ops", ["guide.reset", "index", "procedure.override"]),
            ("acme-bot", ["guide.reset", "index", "note.acme-contract"]),
        ]:
            listed, resources, leaked = mcp_session(address, made[name])
            assert sorted(d["id"] for d in listed["docs"]) == expected
            assert sorted(r.rsplit("/", 1)[1] for r in resources) == expected
            assert leaked["found"] is False


def mcp_session(address: tuple[str, int], token: str) -> tuple[dict[str, Any], list[str], Any]:
    """(knowledge_list, the resources listed, knowledge_get of another audience's doc)
    over MCP with `token`."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://{address[0]}:{address[1]}/mcp"

    async def main() -> tuple[dict[str, Any], list[str], Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            listed = json.loads((await client.call_tool("knowledge_list", {})).content[0].text)
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            other = (
                "note.acme-contract" if "acme" not in listed_ids(listed) else "procedure.override"
            )
            got = await client.call_tool("knowledge_get", {"doc_id": other})
            return listed, resources, json.loads(got.content[0].text)

    return anyio.run(main)


def listed_ids(answer: dict[str, Any]) -> str:
    return " ".join(str(d["id"]) for d in answer["docs"])


def test_each_audience_has_an_inbox_of_its_own(built: Path, tmp_path: Path) -> None:
    """Agents of different audiences writing about the same shared doc: each reads only
    its own audience's records, in pedigrees and on /inbox, and neither ids, idempotent
    retries nor the per-doc cap let it learn of the other's."""
    from conftest import get_json, live, request

    from handbook.access.principals import Principals, add_token
    from handbook.cli.serving import by_audience
    from handbook.inbox.intake import Inbox
    from handbook.inbox.sqlite_store import SQLiteStore
    from handbook.inbox.store import Caps
    from handbook.inbox.writable import Writable
    from handbook.serve.http import create_app

    tokens = tmp_path / "tokens"
    made = {
        name: add_token(tokens, name, audience)
        for name, audience in [("web", None), ("ops", "staff"), ("acme-bot", "customer:acme")]
    }
    principals = Principals.load(tokens)
    libraries = {
        str(p): Library.open(built / p, allow_unsigned=True)
        for p in ("bundle", "bundles/staff", "bundles/customer-acme")
    }
    router = by_audience(libraries, principals)
    store = SQLiteStore(tmp_path / "inbox.db")
    served = Writable(router, Inbox(store, Caps(open_per_doc=1)))
    basis = "The reset takes two minutes, not ten: measured on site."
    with live(create_app(served, principals=principals)) as address:

        def call(name: str, verb: str, **arguments: object) -> dict[str, Any]:
            query = urllib.parse.urlencode(arguments)
            auth = {"Authorization": f"Bearer {made[name]}"}
            return dict(get_json(address, f"/api/v1/{verb}?{query}", **auth)[1])

        revision = call("ops", "get", doc_id="guide.reset")["revision"]
        staff = call("ops", "contradict", doc_id="guide.reset", revision=revision, basis=basis)
        assert staff["state"] == "open" and staff["library"] == "access-example@staff"
        for name in ("web", "acme-bot"):  # nothing shows through, nothing is counted
            assert "open_records" not in call(name, "get", doc_id="guide.reset").get("pedigree", {})
        public = call("web", "contradict", doc_id="guide.reset", revision=revision, basis=basis)
        assert public["new"] is True and public["id"] != staff["id"]
        assert public["library"] == "access-example@public"
        seen = call("ops", "get", doc_id="guide.reset")["pedigree"]["open_records"]
        assert [r["id"] for r in seen] == [staff["id"]]
        seen = call("web", "get", doc_id="guide.reset")["pedigree"]["open_records"]
        assert [r["id"] for r in seen] == [public["id"]]
        assert "open_records" not in call("acme-bot", "get", doc_id="guide.reset").get(
            "pedigree", {}
        )
        pages = {
            name: request(address, "/inbox", {"Authorization": f"Bearer {made[name]}"})[2]
            for name in made
        }
        assert staff["id"][:12].encode() in pages["ops"]
        assert staff["id"][:12].encode() not in pages["web"] + pages["acme-bot"]
        assert public["id"][:12].encode() not in pages["ops"] + pages["acme-bot"]
    assert sorted(r.library for r in store.records()) == [
        "access-example@public",
        "access-example@staff",
    ]


RESTRICTED = {
    "procedure.override": "procedure.overlide",
    "note.acme-contract": "note.acne-contrast",
}
"""Another audience's ids, and unknown ids whose words and stems have the same lengths
(answers carry their sizes) and are in no public doc."""


def masked(answer: Any, doc_id: str) -> str:
    """`answer` as JSON with the id, its words and their stems replaced by placeholders."""
    from handbook.search.stemmer import stem

    text = json.dumps(answer)
    words = re.findall(r"[a-z]+", doc_id)
    for n, part in enumerate([doc_id, *words, *(stem(w) for w in words)]):
        text = text.replace(part, f"<{n}>")
    return text


def id_calls(doc_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every tool of the table, called about `doc_id`."""
    zero = "0" * 64
    return [
        ("knowledge_list", {"query": doc_id}),
        ("knowledge_get", {"doc_id": doc_id}),
        ("knowledge_get", {"doc_id": doc_id, "section": "steps"}),
        ("knowledge_search", {"query": doc_id}),
        ("knowledge_collect", {"ids": [doc_id]}),
        ("knowledge_ask", {"question": f"What does {doc_id} say?", "correlation_id": "c-1"}),
        ("knowledge_brief", {"task": "reset the pump", "refs": [doc_id]}),
        ("knowledge_resource", {"doc_id": doc_id, "path": "wiring.txt"}),
        ("knowledge_propose", {"doc_id": doc_id, "markdown": "Fixed.", "basis": "Seen.", "revision": zero}),
        ("knowledge_contradict", {"doc_id": doc_id, "revision": zero, "basis": "Wrong."}),
        ("knowledge_corroborate", {"doc_id": doc_id, "revision": zero, "basis": "Held."}),
    ]  # fmt: skip


def test_every_tool_on_every_transport_answers_a_restricted_id_like_an_unknown_one(
    built: Path, tmp_path: Path
) -> None:
    """A public token asking any tool, over Python, HTTP, MCP and RPC, about a staff or
    an acme doc gets exactly the answer of a doc that never existed."""
    import anyio
    import httpx2
    from conftest import live
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from handbook import acting
    from handbook.access.principals import Principals, add_token
    from handbook.cli.serving import by_audience
    from handbook.inbox.intake import Inbox
    from handbook.inbox.sqlite_store import SQLiteStore
    from handbook.inbox.writable import Writable
    from handbook.serve.http import create_app
    from handbook.serve.mcp import http_app
    from handbook.serve.rpc import register_tools
    from handbook.tools.dispatch import call
    from handbook.tools.table import BY_NAME

    tokens = tmp_path / "tokens"
    token = add_token(tokens, "web")
    add_token(tokens, "ops", "staff")
    principals = Principals.load(tokens)
    libraries = {
        str(p): Library.open(built / p, allow_unsigned=True)
        for p in ("bundle", "bundles/staff", "bundles/customer-acme")
    }
    router = by_audience(libraries, principals)
    served = Writable(router, Inbox(SQLiteStore(tmp_path / "inbox.db")))
    auth = {"Authorization": f"Bearer {token}"}

    def python(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        with acting(None, "web"):
            return [call(served, name, args, "web") for name, args in calls]

    def rpc(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        handlers: dict[str, Any] = {}
        register_tools(lambda topic, h: handlers.__setitem__(topic, h), served)
        with acting(None, "web"):
            return [handlers[f"knowledge.{BY_NAME[name].verb}"](**args) for name, args in calls]

    with live(create_app(served, principals=principals, mcp=http_app(served))) as address:
        base = f"http://{address[0]}:{address[1]}"

        def http(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            out = []
            for name, args in calls:
                request = urllib.request.Request(
                    f"{base}/api/v1/{BY_NAME[name].verb}",
                    data=json.dumps(args).encode(),
                    headers={"Content-Type": "application/json", **auth},
                    method="POST",
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        out.append((response.status, json.loads(response.read())))
                except urllib.error.HTTPError as exc:
                    with exc:
                        out.append((exc.code, json.loads(exc.read())))
            return out

        def mcp(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            async def main() -> list[Any]:
                async with (
                    httpx2.AsyncClient(headers=auth, timeout=30) as client,
                    Client(streamable_http_client(f"{base}/mcp", http_client=client)) as session,
                ):
                    return [
                        json.loads((await session.call_tool(name, args)).content[0].text)
                        for name, args in calls
                    ]

            return anyio.run(main)

        for transport in (python, http, mcp, rpc):
            for restricted, unknown in RESTRICTED.items():
                asked = transport(id_calls(restricted))
                never = transport(id_calls(unknown))
                for (name, _), got, expected in zip(
                    id_calls(restricted), asked, never, strict=True
                ):
                    assert masked(got, restricted) == masked(expected, unknown), (
                        transport.__name__,
                        name,
                    )
