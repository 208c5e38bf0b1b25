"""The source allow-list: `ask` quotes and `collect` gathers only the doc kinds and
libraries the operator allows, the other tools still show everything, and `status`
says what the list is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, ROOT, run_cli

from handbook import Library, Shelf
from handbook.handlers.citing import AllowedSources
from handbook_build import load_config
from handbook_build.pipeline import build

QUESTION = "What byte order does Modbus use?"


@pytest.fixture(scope="module")
def packaging_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("packaging-line") / "bundle"
    build(load_config(ROOT / "examples" / "packaging-line" / "mkdocs.yml"), out, KEY)
    return out


def kind(library: Library | Shelf, ref: str) -> str:
    return str(library.get(ref)["metadata"]["kind"])


def kinds_cited(library: Library | Shelf, question: str = QUESTION) -> set[str]:
    answer = library.ask(question, limit=5)
    return {kind(library, s.get("ref") or s["document_id"]) for s in answer["sources"]}


def test_ask_quotes_only_allowed_kinds(plant_floor_bundle: Path) -> None:
    everything = Library.open(plant_floor_bundle, [PUBLIC])
    assert "protocol" in kinds_cited(everything)  # the best answer is the Modbus protocol doc
    devices = Library.open(
        plant_floor_bundle, [PUBLIC], sources=AllowedSources.of(kinds=["device"])
    )
    answer = devices.ask(QUESTION, limit=5)
    assert answer["sources"] and kinds_cited(devices) == {"device"}
    assert devices.status()["sources"] == {"kinds": ["device"]}
    assert "sources" not in everything.status()
    # the other tools still show what the audience may read
    assert devices.get("protocol.modbus")["found"] is True
    assert {h["id"] for h in devices.search("modbus byte order")["hits"]} >= {"protocol.modbus"}


def test_a_list_that_allows_nothing_here_is_insufficient(plant_floor_bundle: Path) -> None:
    nothing = Library.open(plant_floor_bundle, [PUBLIC], sources=AllowedSources.of(kinds="note"))
    answer = nothing.ask(QUESTION)
    assert answer["evidence_state"] == "insufficient" and answer["sources"] == []
    other = Library.open(
        plant_floor_bundle, [PUBLIC], sources=AllowedSources.of(libraries=["packaging-line"])
    )
    assert other.ask(QUESTION)["sources"] == []


def test_collect_gathers_only_allowed_docs(plant_floor_bundle: Path) -> None:
    guides = Library.open(
        plant_floor_bundle, [PUBLIC], sources=AllowedSources.of(kinds="guide,device")
    )
    by_query = guides.collect(query="modbus")
    assert by_query["items"]
    assert {kind(guides, i["id"]) for i in by_query["items"]} <= {"guide", "device"}
    by_id = guides.collect(ids=["protocol.modbus", "guide.commissioning"])
    assert [i["id"] for i in by_id["items"]] == ["guide.commissioning"]
    assert [(o["id"], o["reason"]) for o in by_id["omissions"]] == [
        ("protocol.modbus", "not_allowed_source")
    ]
    everything = guides.collect()
    assert {kind(guides, i["id"]) for i in everything["items"]} == {"guide", "device"}


def test_a_shelf_cites_only_allowed_libraries(
    plant_floor_bundle: Path, packaging_bundle: Path
) -> None:
    libraries = [Library.open(p, [PUBLIC]) for p in (plant_floor_bundle, packaging_bundle)]
    shelf = Shelf(libraries, AllowedSources.of(libraries=["packaging-line"]))
    cited = shelf.ask("format changeover on the labeller", limit=5)["sources"]
    assert cited and {s["ref"].split(":")[0] for s in cited} == {"packaging-line"}
    gathered = shelf.collect(query="labeller")["items"]
    assert gathered and {i["ref"].split(":")[0] for i in gathered} == {"packaging-line"}
    assert shelf.status()["sources"] == {"libraries": ["packaging-line"]}
    listed = {d["ref"].split(":")[0] for d in shelf.list(limit=100)["docs"]}
    assert listed == {"plant-floor", "packaging-line"}


def test_the_command_line_takes_the_allow_list(plant_floor_bundle: Path) -> None:
    run = run_cli(
        "ask", QUESTION, "--bundle", str(plant_floor_bundle), "--key", PUBLIC,
        "--cite-kind", "device", "--json",
    )  # fmt: skip
    answer = json.loads(run.stdout)
    assert answer["sources"] and all(
        s["document_id"].startswith("device.") for s in answer["sources"]
    )
