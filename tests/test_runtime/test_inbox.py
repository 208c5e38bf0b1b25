"""Agents write back (issue 18): the write tools, attribution, caps and refusals, open
records in the pedigree of every replica, degraded reads, and the operators' page."""

from __future__ import annotations

import json
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import live, request
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook import Library
from handbook.bundle.signing import public_key_of, signing_input
from handbook.inbox.intake import Inbox
from handbook.inbox.records import TAGS, payload, record_id, sign
from handbook.inbox.sqlite_store import SQLiteStore
from handbook.inbox.store import Caps
from handbook.inbox.writable import Writable
from handbook.serve.http import create_app
from handbook.serve.mcp import http_app
from handbook.tools.dispatch import call
from handbook.tools.table import WRITE_TOOLS, definitions

AC200 = "device.acme.ac200"
AGENT = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
STRANGER = Ed25519PrivateKey.from_private_bytes(bytes([8]) * 32)


@pytest.fixture
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, allow_unsigned=True)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "inbox" / "records.sqlite3"


def replica(library: Library, store_path: Path, caps: Caps | None = None) -> Writable:
    """One `handbook serve --inbox` replica: its own store connection, one shared file."""
    store_path.parent.mkdir(parents=True, exist_ok=True)
    agents = {"field-bot": public_key_of(AGENT)}
    return Writable(library, Inbox(SQLiteStore(store_path), caps or Caps(), agents))


def revision(served: Any, doc_id: str = AC200) -> str:
    return str(served.get(doc_id)["revision"])


def contradict(served: Any, principal: str | None = "support-bot", **changes: Any) -> Any:
    arguments = {
        "doc_id": AC200,
        "revision": revision(served),
        "section": "Register map",
        "basis": "register 40001 reads 0 on unit 7; the map says it holds the voltage",
        **changes,
    }
    return call(served, "knowledge_contradict", arguments, principal)


def test_a_contradiction_is_stored_once_and_shows_on_every_replica(
    library: Library, store_path: Path
) -> None:
    first, second = replica(library, store_path), replica(library, store_path)
    written = contradict(first)
    assert (written["state"], written["new"], written["by"]) == ("open", True, "support-bot")
    again = contradict(first)
    assert (again["id"], again["new"]) == (written["id"], False)  # a retry is the same record

    pedigree = second.get(AC200)["pedigree"]
    [shown] = pedigree["open_records"]
    assert shown["id"] == written["id"] and shown["reviewed"] is False
    assert (shown["kind"], shown["by"], shown["section"]) == (
        "contradiction",
        "support-bot",
        "register-map",
    )
    assert pedigree["verify_first"].startswith("unreviewed contradiction by support-bot: register")
    assert pedigree.get("state") != "contested"
    assert second.get(AC200)["content"] == library.get(AC200)["content"]  # the text is the doc's
    hits = second.search("register map ac200")["hits"]
    assert any(h["id"] == AC200 and h["pedigree"]["open_records"] for h in hits)
    brief = second.brief("read the AC200 registers", refs=["AC200"])["items"]
    assert next(i for i in brief if i["id"] == AC200)["verify_first"].startswith("unreviewed")
    assert "open_records" not in (library.get(AC200).get("pedigree") or {})  # not served: none


def test_a_signed_record_is_attributed_to_the_declared_agent(
    library: Library, store_path: Path
) -> None:
    served = replica(library, store_path)
    fields = payload(
        "corroboration", "plant-floor", AC200, f"key:{public_key_of(AGENT).keyid}",
        revision=revision(served), basis="read 230 V as the map says",
    )  # fmt: skip
    arguments = {
        "doc_id": AC200,
        "revision": revision(served),
        "basis": "read 230 V as the map says",
        "key_id": public_key_of(AGENT).keyid,
        "signature": sign("corroboration", fields, AGENT),
    }
    written = call(served, "knowledge_corroborate", arguments)  # no principal: the key says who
    assert (written["by"], written["id"]) == ("agent field-bot", record_id("corroboration", fields))

    # the same signature as a contradiction: another domain tag, so it does not verify
    replayed = call(served, "knowledge_contradict", arguments)
    assert replayed["error"]["code"] == "bad_arguments"
    assert replayed["error"]["field"] == "signature"
    stranger = {
        **arguments,
        "key_id": public_key_of(STRANGER).keyid,
        "signature": sign(
            "corroboration",
            {**fields, "by": f"key:{public_key_of(STRANGER).keyid}"},
            STRANGER,
        ),
    }
    refused = call(served, "knowledge_corroborate", stranger)
    assert refused["error"]["field"] == "key_id"
    assert "not an agent key this server declares" in refused["error"]["message"]
    assert len(served.inbox.store.records(state=None)) == 1


def test_tags_are_not_the_review_or_manifest_tags() -> None:
    assert set(TAGS.values()).isdisjoint({"handbook/v1/review", "handbook/v1/invalidation"})
    assert signing_input(TAGS["proposal"], {}) != signing_input(TAGS["contradiction"], {})


@pytest.mark.parametrize(
    ("changes", "principal", "field", "message"),
    [
        ({"doc_id": "device.nope"}, "bot", "doc_id", "the library has no doc device.nope"),
        ({"revision": "0" * 64}, "bot", "revision", "is now at revision"),
        ({"section": "Nope"}, "bot", "section", "has no section Nope"),
        ({"basis": " "}, "bot", "basis", "basis must be non-empty text"),
        ({"basis": "x" * 2001}, "bot", "basis", "at most 2,000"),
        ({"evidence": ["a"] * 17}, "bot", "evidence", "at most 16 evidence references"),
        ({}, None, "signature", "this request has no principal"),
        ({"key_id": "ab" * 32}, "bot", "signature", "a signed record needs key_id and signature"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
    library: Library,
    store_path: Path,
    changes: dict[str, Any],
    principal: str | None,
    field: str,
    message: str,
) -> None:
    served = replica(library, store_path)
    answer = contradict(served, principal, **changes)
    assert answer["error"]["field"] == field
    assert message in answer["error"]["message"]
    assert served.inbox.store.records(state=None) == []


def test_wrong_json_types_are_refused_before_the_handler(
    library: Library, store_path: Path
) -> None:
    served = replica(library, store_path)
    answer = contradict(served, evidence="not a list")
    assert answer["error"]["code"] == "bad_arguments"
    assert served.inbox.store.records(state=None) == []


def test_caps_refuse_and_store_nothing(library: Library, store_path: Path) -> None:
    served = replica(library, store_path, Caps(per_principal_per_hour=2, open_per_doc=3))
    for n in range(2):
        assert contradict(served, basis=f"observation {n}")["new"] is True
    limited = contradict(served, basis="observation 3")
    assert limited["error"]["code"] == "rate_limited"
    assert contradict(served, principal="other-bot", basis="observation 4")["new"] is True
    crowded = contradict(served, principal="third-bot", basis="observation 5")
    assert crowded["error"]["code"] == "too_many_open"
    assert len(served.inbox.store.records(state=None)) == 3


def test_a_proposal_for_a_new_doc_needs_an_id_that_could_be_one(
    library: Library, store_path: Path
) -> None:
    served = replica(library, store_path)
    new = "---\nid: device.acme.ac300\ntitle: ACME AC300\n---\n# ACME AC300\n"
    written = call(
        served,
        "knowledge_propose",
        {"doc_id": "device.acme.ac300", "markdown": new, "basis": "a new unit on line 3"},
        "field-team",
    )
    assert (written["kind"], written["doc"], written["state"]) == (
        "proposal",
        "device.acme.ac300",
        "open",
    )
    bad = call(
        served,
        "knowledge_propose",
        {"doc_id": "Device AC300!", "markdown": new, "basis": "x"},
        "field-team",
    )
    assert bad["error"]["field"] == "doc_id"


def test_the_write_tools_are_served_only_with_an_inbox(library: Library, store_path: Path) -> None:
    names = {t.name for t in WRITE_TOOLS}
    assert names.isdisjoint(d["name"] for d in definitions(library.tool_context()))
    served = replica(library, store_path)
    assert names <= {d["name"] for d in definitions(served.tool_context())}
    refused = call(library, "knowledge_contradict", {"doc_id": AC200}, "bot")
    assert refused["error"]["code"] == "unknown_tool"
    assert "knowledge_contradict" not in refused["error"]["message"].split("the tools are")[1]


def test_reads_go_on_when_the_store_is_gone(library: Library, store_path: Path) -> None:
    served = replica(library, store_path)
    contradict(served)
    served.inbox.store.close()
    shutil.rmtree(store_path.parent)
    store_path.mkdir(parents=True)  # a folder where the database was: it cannot be opened
    served.inbox.forget("plant-floor", AC200)
    answer = served.get(AC200)
    assert answer["found"] is True and "open_records" not in (answer.get("pedigree") or {})
    assert served.status()["inbox"].startswith("unavailable")
    assert contradict(served, basis="again")["error"]["code"] == "unavailable"


def test_http_and_mcp_attribute_writes_to_the_token_s_principal(
    library: Library, store_path: Path
) -> None:
    served = replica(library, store_path)
    arguments = {"doc_id": AC200, "revision": revision(served), "basis": "held on unit 9"}
    with live(create_app(served, token="s3cret", mcp=http_app(served))) as address:
        base = f"http://{address[0]}:{address[1]}"
        post = urllib.request.Request(
            f"{base}/api/v1/corroborate",
            data=json.dumps(arguments).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer s3cret"},
        )
        with urllib.request.urlopen(post, timeout=30) as response:
            over_http = json.loads(response.read())

        async def over_mcp() -> dict[str, Any]:
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=30) as http,
                Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
            ):
                result = await client.call_tool("knowledge_corroborate", arguments)
                return dict(json.loads(result.content[0].text))

        mcp_answer = anyio.run(over_mcp)
        status, _, _ = request(address, "/inbox")
        assert status == 401
        status, headers, page = request(address, "/inbox", {"Authorization": "Bearer s3cret"})
    assert over_http["by"] == "token" and over_http["new"] is True
    assert mcp_answer["id"] == over_http["id"] and mcp_answer["new"] is False
    assert status == 200 and "default-src 'none'" in headers["content-security-policy"]
    assert b"held on unit 9" in page


def test_the_operators_page_escapes_what_agents_wrote(library: Library, store_path: Path) -> None:
    served = replica(library, store_path)
    contradict(served, basis='<script>alert(1)</script><img src=x onerror="x">')
    with live(create_app(served, token="s3cret")) as address:
        _, _, page = request(address, "/inbox", {"Authorization": "Bearer s3cret"})
    assert b"<script>alert" not in page and b"<img" not in page
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_inbox_page_shows_the_newest_of_the_audience_s_records(tmp_path: Path) -> None:
    """More open records than a page, two audiences interleaved: the page holds the newest
    page-full of the asking audience's, and none of the other's."""
    from handbook.inbox.store import Stored
    from handbook.serve.inbox_page import MAX_INBOX_PAGE, inbox_page

    store = SQLiteStore(tmp_path / "inbox.db")
    caps = Caps(per_principal_per_hour=10_000, open_per_doc=10_000)
    for n in range(2 * MAX_INBOX_PAGE + 50):
        library = "lib@staff" if n % 2 else "lib@public"
        record_id = f"{n:012x}" + "0" * 52
        basis = {"basis": str(n)}
        record = Stored(record_id, "contradiction", library, "doc.a", "principal:x", basis, n)
        store.add(record, caps)
    page = inbox_page(Inbox(store), {"lib@staff"}).body.decode()
    shown = {int(i, 16) for i in re.findall(r"<td>([0-9a-f]{12})</td>", page)}
    staff = [n for n in range(2 * MAX_INBOX_PAGE + 50) if n % 2]
    assert shown == set(staff[-MAX_INBOX_PAGE:])
