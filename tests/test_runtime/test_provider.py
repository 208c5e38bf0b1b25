"""The knowledge-provider adapter (issue 21 §4): async health, ask with an actor and a
manifest sync over real bundles; `unavailable`, never an exception, when the bundle
cannot be loaded, and back once it can."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import ROOT

from handbook import Library
from handbook.access.actor import Actor
from handbook.access.principals import Principals
from handbook.errors import BundleError
from handbook.libraries.audiences import AudienceRouter
from handbook.libraries.client import RemoteLibrary
from handbook.libraries.provider import HandbookProvider
from handbook.tools.served import Served
from handbook_build import load_config
from handbook_build.pipeline import build

OPS = Actor("dispatcher-7", "northwind", "fleet-ops")
GROUNDED = "What are the immediate actions when a vehicle is damaged?"
UNANSWERED = "How do I calibrate the quantum flux capacitor?"


@pytest.fixture
def fleet(fleet_bundle: Path) -> Path:
    return fleet_bundle


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_health_names_what_is_served(fleet: Path) -> None:
    provider = HandbookProvider(Library.open(fleet, allow_unsigned=True))
    assert run(provider.health()) == {
        "provider": "handbook",
        "library": "fleet-procedures",
        "version": "1.0.0",
        "state": "available",
        "signature": "unsigned",
        "docs": 5,
        "statistics_state": "verified",
    }


def test_a_grounded_answer_cites_its_sources_in_the_contract_shape(fleet: Path) -> None:
    provider = HandbookProvider(Library.open(fleet, allow_unsigned=True))
    answer = run(provider.ask(GROUNDED, OPS, correlation_id="req-42"))
    assert answer["evidence_state"] == "grounded"
    assert answer["provider"] == "handbook" and answer["correlation_id"] == "req-42"
    assert answer["actor"] == {
        "actor": "dispatcher-7",
        "tenant": "northwind",
        "workspace": "fleet-ops",
    }
    top = answer["sources"][0]
    assert {k: top[k] for k in ("document_id", "title", "version", "section")} == {
        "document_id": "procedure.damage-report",
        "title": "Reporting damage to a vehicle",
        "version": "1.3",
        "section": "1. Immediate actions",
    }
    assert top["excerpt"].startswith("Block the vehicle in the fleet console")


def test_weak_evidence_is_insufficient_and_invents_nothing(fleet: Path) -> None:
    provider = HandbookProvider(Library.open(fleet, allow_unsigned=True))
    answer = run(provider.ask(UNANSWERED, OPS))
    assert answer["evidence_state"] == "insufficient"
    assert answer["sources"] == [] and len(answer["correlation_id"]) == 32


def test_the_log_has_the_source_ids_and_not_the_question(
    fleet: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = HandbookProvider(Library.open(fleet, allow_unsigned=True))
    with caplog.at_level(logging.INFO, logger="handbook.provider"):
        run(provider.ask(GROUNDED, OPS, correlation_id="req-43"))
    (record,) = caplog.records
    assert record.__dict__["correlation_id"] == "req-43"
    assert record.__dict__["actor"] == {
        "actor": "dispatcher-7",
        "tenant": "northwind",
        "workspace": "fleet-ops",
    }
    assert record.__dict__["question_chars"] == len(GROUNDED)
    assert "procedure.damage-report" in record.__dict__["source_ids"]
    assert "immediate" not in str(record.__dict__).lower()


def test_sync_compares_and_uploads_nothing(fleet: Path) -> None:
    library = Library.open(fleet, allow_unsigned=True)
    revision = library.get("procedure.damage-report")["revision"]
    provider = HandbookProvider(library)
    result = run(
        provider.sync_manifest(
            [
                {"document_id": "procedure.damage-report", "version": "1.3", "revision": revision},
                {"document_id": "procedure.damage-report", "version": "1.3", "lang": "de"},
                {"document_id": "procedure.key-handover", "version": "0.9"},
                {"document_id": "procedure.damage-report", "lang": "fr"},
                {"document_id": "procedure.towing"},
                {"version": "1.0"},
            ]
        )
    )
    assert result["state"] == "compared" and result["uploaded"] == 0
    assert result["present"] == ["procedure.damage-report", "procedure.damage-report"]
    assert result["missing"] == ["procedure.damage-report", "procedure.towing"]
    (stale,) = result["stale"]
    assert stale["document_id"] == "procedure.key-handover"
    assert stale["expected"] == {"version": "0.9"}
    assert stale["served"]["version"] == "1.0" and len(stale["served"]["revision"] or "") == 64
    assert result["invalid"] == [
        {"index": 5, "error": "document_id must be a non-empty string of at most 512 characters"}
    ]


def test_a_bundle_that_cannot_be_loaded_is_unavailable_then_recovers(
    fleet: Path, tmp_path: Path
) -> None:
    where = tmp_path / "bundle"
    calls: list[int] = []

    def load() -> Library:
        calls.append(1)
        return Library.open(where, allow_unsigned=True)

    provider = HandbookProvider.from_loader(load)
    health = run(provider.health())
    assert health["state"] == "unavailable" and health["library"] is None
    assert health["error"].startswith("MissingFileError: ")
    answer = run(provider.ask(GROUNDED, OPS, correlation_id="req-1"))
    assert answer["evidence_state"] == "unavailable" and answer["sources"] == []
    assert answer["error"]["code"] == "unavailable" and answer["correlation_id"] == "req-1"
    synced = run(provider.sync_manifest([{"document_id": "procedure.damage-report"}]))
    assert synced["state"] == "unavailable" and synced["uploaded"] == 0

    shutil.copytree(fleet.resolve(), where)  # published at last
    assert run(provider.health())["state"] == "available"
    assert run(provider.ask(GROUNDED, OPS))["evidence_state"] == "grounded"
    run(provider.health())
    assert len(calls) == 4  # tried on each call until it loaded, then kept


def test_a_corrupt_bundle_is_unavailable_naming_the_cause(fleet: Path, tmp_path: Path) -> None:
    where = tmp_path / "bundle"
    shutil.copytree(fleet.resolve(), where)
    (where / "manifest.json").write_bytes(b'{"signed": ')
    with pytest.raises(BundleError):
        Library.open(where, allow_unsigned=True)
    provider = HandbookProvider.from_loader(lambda: Library.open(where, allow_unsigned=True))
    health = run(provider.health())
    assert health["state"] == "unavailable" and health["error"].startswith("FormatError: ")
    assert run(provider.ask(GROUNDED, OPS))["evidence_state"] == "unavailable"


def test_a_file_that_fails_verification_after_open_makes_it_unavailable(
    fleet: Path, tmp_path: Path
) -> None:
    where = tmp_path / "bundle"
    shutil.copytree(fleet.resolve(), where)
    library = Library.open(where, allow_unsigned=True)
    for content in (where / "content").iterdir():
        data = bytearray(content.read_bytes())
        data[0] ^= 0x01
        content.write_bytes(bytes(data))
    provider = HandbookProvider(library)
    assert run(provider.health())["state"] == "available"  # nothing read yet
    first = run(provider.ask(GROUNDED, OPS))  # reads a tampered file: refused
    assert first["evidence_state"] != "grounded"
    health = run(provider.health())
    assert health["state"] == "unavailable" and health["error"].startswith("integrity_error: ")
    assert run(provider.ask(GROUNDED, OPS))["evidence_state"] == "unavailable"
    assert run(provider.sync_manifest([]))["state"] == "unavailable"


def test_an_unreachable_server_is_unavailable() -> None:
    provider = HandbookProvider(RemoteLibrary("http://127.0.0.1:9", timeout=0.5))
    health = run(provider.health())
    assert health["state"] == "unavailable" and health["error"].startswith("unavailable: ")
    answer = run(provider.ask(GROUNDED, OPS))
    assert answer["evidence_state"] == "unavailable" and answer["provider"] == "handbook"


@pytest.mark.parametrize(
    ("actor", "message"),
    [
        (Actor("a" * 129, "t", "w"), "actor actor is 129 characters; at most 128"),
        (Actor("a", "north wind", "w"), "actor tenant may hold letters, digits"),
        (Actor("a", "t", "ops\n"), "actor workspace may hold letters, digits"),
        (Actor("a", "t", "-ops"), "actor workspace may hold letters, digits"),
        ({"actor": "x"}, "actor must be an Actor"),
    ],
)
def test_an_actor_that_a_transport_would_refuse_is_refused_not_raised(
    fleet: Path, actor: Any, message: str
) -> None:
    provider = HandbookProvider(Library.open(fleet, allow_unsigned=True))
    answer = run(provider.ask(GROUNDED, actor, correlation_id="req-9"))
    assert answer["evidence_state"] == "unavailable" and answer["sources"] == []
    assert answer["error"]["code"] == "bad_actor" and answer["correlation_id"] == "req-9"
    assert answer["error"]["message"].startswith(message)


def test_an_audience_router_answers_as_the_providers_principal(tmp_path: Path) -> None:
    root = tmp_path / "access"
    shutil.copytree(ROOT / "examples" / "access", root, ignore=shutil.ignore_patterns("build"))
    build(load_config(root / "mkdocs.yml"), root / "build" / "bundle", None)
    router = AudienceRouter(
        {
            "public": Library.open(root / "build" / "bundle", allow_unsigned=True),
            "staff": Library.open(root / "build" / "bundles" / "staff", allow_unsigned=True),
        },
        Principals({"digest": "ops"}, {"ops": "staff"}),
    )
    wanted = [{"document_id": "procedure.override"}]
    staff = HandbookProvider(cast(Served, router), principal="ops")
    public = HandbookProvider(cast(Served, router))
    assert run(staff.sync_manifest(wanted))["present"] == ["procedure.override"]
    assert run(public.sync_manifest(wanted))["missing"] == ["procedure.override"]
    assert run(staff.health())["docs"] == 3 and run(public.health())["docs"] == 2
