"""Status keeps what was reported apart from what was verified (issue 21 §4): per audience
and language, the build's count of source docs is `reported`, the bundle's and the
answerable docs are `verified`, and the release pipeline's publish report is `reported`
or `not_reported` — never labelled verified."""

from __future__ import annotations

import json
import shutil
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, MakeLibrary, get_json, run_cli
from reviewers import reviews_option
from test_serve_command import serving

from handbook import Library
from handbook.access.principals import Principals
from handbook.answers import PublishStatus, StatisticsRow, StatusAnswer
from handbook.bundle.local import open_bundle
from handbook.bundle.publish_report import MAX_REPORT_BYTES, make_report, write_report
from handbook.handlers.snapshot import Snapshot
from handbook.handlers.statistics import statistics_rows
from handbook.libraries.audiences import CURRENT_PRINCIPAL, AudienceRouter
from handbook.libraries.shelf import Shelf
from handbook.tools.schemas import STATUS
from handbook_build import load_config
from handbook_build.pipeline import build


@pytest.fixture
def fleet(fleet_bundle: Path) -> Path:
    return fleet_bundle


@pytest.fixture(scope="module")
def access(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("access") / "access"
    shutil.copytree(ROOT / "examples" / "access", root, ignore=shutil.ignore_patterns("build"))
    build(load_config(root / "mkdocs.yml"), root / "build" / "bundle", None)
    return root / "build"


def states(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        row["source_docs_state"],
        row["bundle_docs_state"],
        row["indexed_docs_state"],
        row["statistics_state"],
    )


def test_each_language_has_its_reported_and_verified_counts_apart(fleet: Path) -> None:
    status = Library.open(fleet, allow_unsigned=True).status()
    jsonschema.validate(status, STATUS)
    assert status["statistics"] == [
        {
            "audience": None,
            "lang": "de",
            "source_docs": 1,
            "source_docs_state": "reported",
            "bundle_docs": 1,
            "bundle_docs_state": "verified",
            "indexed_docs": 1,
            "indexed_docs_state": "verified",
            "statistics_state": "verified",
        },
        {
            "audience": None,
            "lang": "en",
            "source_docs": 4,
            "source_docs_state": "reported",
            "bundle_docs": 4,
            "bundle_docs_state": "verified",
            "indexed_docs": 4,
            "indexed_docs_state": "verified",
            "statistics_state": "verified",
        },
    ]
    assert status["statistics_state"] == "verified"
    assert status["publish"] == {"statistics_state": "not_reported"}
    assert sum(r["bundle_docs"] for r in status["statistics"]) == status["docs"]


def test_each_audience_counts_only_what_its_readers_read(access: Path) -> None:
    rows = {
        name: Library.open(access / folder, allow_unsigned=True).status()["statistics"]
        for name, folder in (
            ("public", "bundle"),
            ("staff", "bundles/staff"),
            ("acme", "bundles/customer-acme"),
        )
    }
    assert {name: [(r["audience"], r["lang"], r["source_docs"], r["bundle_docs"],
                    r["indexed_docs"]) for r in found] for name, found in rows.items()} == {
        "public": [("public", "", 2, 2, 2)],
        "staff": [("staff", "", 3, 3, 3)],
        "acme": [("customer:acme", "", 3, 3, 3)],
    }  # fmt: skip


def test_a_principal_sees_the_status_of_its_own_audience_only(access: Path) -> None:
    public = Library.open(access / "bundle", allow_unsigned=True)
    staff = Library.open(access / "bundles" / "staff", allow_unsigned=True)
    router = AudienceRouter(
        {"public": public, "staff": staff},
        Principals({"d1": "ops", "d2": "web"}, {"ops": "staff", "web": "public"}),
    )
    for principal, audience, docs in (("ops", "staff", 3), ("web", "public", 2)):
        token = CURRENT_PRINCIPAL.set(principal)
        try:
            status = router.status()
        finally:
            CURRENT_PRINCIPAL.reset(token)
        assert [(r["audience"], r["bundle_docs"]) for r in status["statistics"]] == [
            (audience, docs)
        ]


def test_a_source_doc_the_review_policy_leaves_out_is_found_but_not_shipped(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    device = DOC.format(id="device.x", lang="en").replace("kind: guide", "kind: device")
    config = make_library(
        {"a.md": DOC.format(id="a", lang="en"), "c.md": device},
        reviews=reviews_option(protected={"kinds": ["device"]}, unapproved="omit"),
    )
    built = tmp_path / "bundle"
    build(load_config(config), built, None)
    status = Library.open(built, allow_unsigned=True).status()
    (row,) = status["statistics"]
    found = (row["lang"], row["source_docs"], row["bundle_docs"], row["indexed_docs"])
    assert found == ("en", 2, 1, 1)  # the unapproved device doc was found, not shipped
    assert states(row) == ("reported", "verified", "verified", "verified")


def test_a_language_the_build_reported_without_a_doc_shipped_has_its_row(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config = make_library(
        {"a.md": DOC.format(id="a", lang="en"), "b.md": DOC.format(id="b", lang="de")}
    )
    built = tmp_path / "bundle"
    build(load_config(config), built, None)
    catalog = json.loads((built / "catalog.json").read_text(encoding="utf-8"))
    assert catalog["library"]["source_docs"] == {"de": 1, "en": 1}
    catalog["library"]["source_docs"] = {"de": 1, "en": 1, "fr": 2}  # both fr docs left out
    edited = _resealed(built, catalog, tmp_path / "edited")
    rows = Library.open(edited, allow_unsigned=True).status()["statistics"]
    assert [(r["lang"], r["source_docs"], r["bundle_docs"], r["indexed_docs"]) for r in rows] == [
        ("de", 1, 1, 1),
        ("en", 1, 1, 1),
        ("fr", 2, 0, 0),
    ]


def test_a_catalog_that_fails_its_lazy_check_counts_nothing(fleet: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(fleet.resolve(), folder)
    library = Library.open(folder, allow_unsigned=True)
    data = bytearray((folder / "catalog.json").read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / "catalog.json").write_bytes(bytes(data))
    status = library.status()
    assert status["integrity_error"].startswith("catalog")
    assert status["statistics"] == [] and status["statistics_state"] == "not_reported"
    jsonschema.validate(status, STATUS)


def test_a_bundle_without_the_build_figure_says_not_reported(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    built = tmp_path / "bundle"
    build(load_config(make_library({"a.md": DOC.format(id="a", lang="en")})), built, None)
    catalog = json.loads((built / "catalog.json").read_text(encoding="utf-8"))
    del catalog["library"]["source_docs"]  # as every bundle built before it was recorded
    status = Library.open(_resealed(built, catalog, tmp_path / "old"), allow_unsigned=True).status()
    (row,) = status["statistics"]
    assert row["source_docs"] is None
    assert states(row) == ("not_reported", "verified", "verified", "verified")


def test_a_publish_report_is_reported_and_never_verified(fleet: Path, tmp_path: Path) -> None:
    report = tmp_path / "publish.json"
    run = run_cli(
        "publish-report", str(report), "--bundle", str(fleet), "--uploaded", "12",
        "--failed", "1", "--message", "synced to s3://kb/fleet",
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    assert run.stdout == f"reported fleet-procedures 1.0.0: 12 uploaded, 1 failed -> {report}\n"
    status = Library.open(fleet, allow_unsigned=True, publish_report=report).status()
    jsonschema.validate(status, STATUS)
    publish = status["publish"]
    assert publish["statistics_state"] == "reported" and publish["matches_served"] is True
    assert {k: v for k, v in publish["reported"].items() if k != "reported_at"} == {
        "format": "handbook/publish-report/v1",
        "library": "fleet-procedures",
        "version": "1.0.0",
        "uploaded_files": 12,
        "failed_files": 1,
        "message": "synced to s3://kb/fleet",
    }
    assert "verified" not in json.dumps(publish)
    assert all(r["source_docs_state"] == "reported" for r in status["statistics"])


def test_a_report_of_another_version_is_shown_as_not_matching(fleet: Path, tmp_path: Path) -> None:
    report = tmp_path / "publish.json"
    write_report(report, make_report("fleet-procedures", "0.9.0", "2026-01-31T12:00:00Z", 3, 0))
    publish = Library.open(fleet, allow_unsigned=True, publish_report=report).status()["publish"]
    assert publish["statistics_state"] == "reported" and publish["matches_served"] is False


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "cannot read it (No such file or directory)"),
        (b"{", "not UTF-8 JSON"),
        (b" " * (MAX_REPORT_BYTES + 1), f"larger than {MAX_REPORT_BYTES} bytes"),
        (b'{"format": "handbook/publish-report/v2"}', "format is 'handbook/publish-report/v2'"),
        (
            json.dumps(
                {**make_report("x", "1.0.0", "2026-01-31T12:00:00Z", 1, 0), "verified": True}
            ).encode(),
            "unknown ['verified']",
        ),
        (
            json.dumps(
                make_report("another-library", "1.0.0", "2026-01-31T12:00:00Z", 1, 0)
            ).encode(),
            "the report is about another-library",
        ),
    ],
)
def test_a_report_that_cannot_count_is_not_reported_and_says_why(
    fleet: Path, tmp_path: Path, content: bytes | None, why: str
) -> None:
    report = tmp_path / "publish.json"
    if content is not None:
        report.write_bytes(content)
    publish = Library.open(fleet, allow_unsigned=True, publish_report=report).status()["publish"]
    assert publish["statistics_state"] == "not_reported"
    assert publish["error"].startswith("publish report: ") and why in publish["error"]
    assert str(tmp_path) not in publish["error"]  # status names no path of the server's
    assert "reported" not in publish


def test_a_shelf_states_the_weakest_of_its_libraries(
    fleet: Path, make_library: MakeLibrary, tmp_path: Path
) -> None:
    built = tmp_path / "bundle"
    build(load_config(make_library({"a.md": DOC.format(id="a", lang="en")})), built, None)
    shelf = Shelf([Library.open(p, allow_unsigned=True) for p in (fleet, built)])
    status = shelf.status()
    assert [s["library"] for s in status["libraries"]] == ["fleet-procedures", "test"]
    assert status["statistics_state"] == "verified"


DOC = """\
---
id: {id}
title: Doc {id}
kind: guide
summary: The doc {id}.
lang: {lang}
---
# Doc {id}

## Steps

Check the valve of {id} first.
"""


def _resealed(bundle: Path, catalog: dict[str, Any], out: Path) -> Path:
    """An unsigned copy of `bundle` with `catalog` as its catalog (and no offsets file),
    the manifest listing the new bytes."""
    from handbook.bundle.canonical import dumps as canonical
    from handbook.bundle.layout import CATALOG, CATALOG_OFFSETS, MANIFEST
    from handbook.bundle.manifest import Manifest

    shutil.copytree(bundle.resolve(), out)
    data = json.dumps(catalog, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
    (out / CATALOG).write_bytes(data)
    (out / CATALOG_OFFSETS).unlink()
    signed = Manifest.from_bytes((out / MANIFEST).read_bytes()).signed.to_dict()
    del signed["files"][CATALOG_OFFSETS]
    signed["files"][CATALOG] = {"sha256": _sha(data), "bytes": len(data)}
    (out / MANIFEST).write_bytes(canonical({"signed": signed, "signatures": []}))
    return out


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_the_status_schema_and_its_typed_answer_name_the_same_keys() -> None:
    hints = typing.get_type_hints(StatusAnswer)
    assert set(STATUS["properties"]) <= set(hints)
    row = STATUS["properties"]["statistics"]["items"]
    assert set(row["properties"]) == set(typing.get_type_hints(StatisticsRow))
    assert set(STATUS["properties"]["publish"]["properties"]) == set(
        typing.get_type_hints(PublishStatus)
    )


def test_serve_shows_the_report_to_the_library_it_names(
    fleet: Path, plant_floor_bundle: Path, tmp_path: Path
) -> None:
    report = tmp_path / "publish.json"
    write_report(report, make_report("fleet-procedures", "1.0.0", "2026-01-31T12:00:00Z", 5, 0))
    args = ["--bundle", str(fleet), "--bundle", str(plant_floor_bundle), "--allow-unsigned"]
    with serving(*args, "--publish-report", str(report)) as (address, _):
        code, body = get_json(address, "/api/v1/status")
    assert code == 200
    jsonschema.validate(body, STATUS)
    publish = {s["library"]: s["publish"] for s in body["libraries"]}
    assert publish["fleet-procedures"]["statistics_state"] == "reported"
    assert publish["fleet-procedures"]["reported"]["uploaded_files"] == 5
    assert publish["plant-floor"] == {
        "statistics_state": "not_reported",
        "error": "publish report: the report is about fleet-procedures",
    }


def test_answerable_docs_are_not_verified_yet_before_the_search_file_is_read(
    fleet: Path,
) -> None:
    snap = Snapshot.of(open_bundle(fleet, allow_unsigned=True), "2026-01-31T12:00:00Z", defer=True)
    before = statistics_rows(snap)
    assert [
        (r["indexed_docs"], r["indexed_docs_state"], r["statistics_state"]) for r in before
    ] == [
        (None, "not_verified_yet", "reported"),
        (None, "not_verified_yet", "reported"),
    ]
    assert not snap.search_loaded  # counting did not read it
    snap.retriever.indexed_docs()  # a search reads it
    after = statistics_rows(snap)
    assert [(r["indexed_docs"], r["statistics_state"]) for r in after] == [
        (1, "verified"),
        (4, "verified"),
    ]
