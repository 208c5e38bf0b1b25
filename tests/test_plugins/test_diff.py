"""`handbook diff` names the version bump a change calls for, on folders and archives."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import PUBLIC, VALID_DOC, run_cli
from release_helpers import EXAMPLE, build_bundle, substitute

from handbook.bundle.signing import generate_private_key
from handbook_build.tasks.pack import pack

pytest_plugins = ["release_fixtures"]
pytestmark = pytest.mark.usefixtures("clean_environment")


def library_copy(tmp_path: Path) -> Path:
    target = tmp_path / "lib"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("build", "site", "__pycache__"))
    return target


def together(*mutations: Callable[[Path], None]) -> Callable[[Path], None]:
    def mutate(lib: Path) -> None:
        for mutation in mutations:
            mutation(lib)

    return mutate


def _edit_body(lib: Path) -> None:
    substitute(
        lib / "docs" / "devices" / "acme-ac200.md",
        "Its\ncontroller speaks",
        "Its\ncontroller only speaks",
    )


def _add_doc(lib: Path) -> None:
    (lib / "docs" / "guides" / "troubleshooting.md").write_text(
        VALID_DOC.format(id="guide.troubleshooting"), encoding="utf-8"
    )


def _add_section(lib: Path) -> None:
    path = lib / "docs" / "devices" / "acme-ac200.md"
    path.write_text(
        path.read_text(encoding="utf-8") + "\n## Troubleshooting\n\nRestart the controller.\n",
        encoding="utf-8",
    )


def _remove_doc(lib: Path) -> None:
    (lib / "docs" / "protocols" / "mqtt.md").unlink()


def _remove_section(lib: Path) -> None:
    path = lib / "docs" / "devices" / "acme-ac200.md"
    text = path.read_text(encoding="utf-8")
    start = text.index("## Pitfalls")
    path.write_text(text[:start] + text[text.index("## Collector snippet") :], encoding="utf-8")


def _remove_vocab_value(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "protocol: [modbus, mqtt, opcua]", "protocol: [modbus, mqtt]")


def _add_vocab_value(lib: Path) -> None:
    substitute(
        lib / "mkdocs.yml",
        "protocol: [modbus, mqtt, opcua]",
        "protocol: [modbus, mqtt, opcua, bacnet]",
    )


def _require_field(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "      vocab:\n", "      required: [verified]\n      vocab:\n")


def _new_version_only(lib: Path) -> None:
    substitute(lib / "mkdocs.yml", "version: 1.0.0", "version: 1.0.1")


def _retitle(lib: Path) -> None:
    substitute(
        lib / "docs" / "index.md",
        "title: About this handbook\n",
        "title: About the plant-floor handbook\n",
    )


SCENARIOS: dict[str, tuple[Callable[[Path], None], str, Callable[[dict[str, Any]], bool]]] = {
    "identical": (
        lambda lib: None,
        "none",
        lambda r: r["added"] == r["removed"] == r["changed"] == r["reasons"] == [],
    ),
    "new version number only": (
        _new_version_only,
        "none",
        lambda r: (
            r["changed"] == [] and r["old"]["version"] == "1.0.0" and r["new"]["version"] == "1.0.1"
        ),
    ),
    "body edited": (
        _edit_body,
        "patch",
        lambda r: (
            [c["id"] for c in r["changed"]] == ["device.acme.ac200"]
            and r["changed"][0]["content_changed"]
            and r["changed"][0]["sections_added"] == r["changed"][0]["sections_removed"] == []
        ),
    ),
    "title edited": (
        _retitle,
        "patch",
        lambda r: (
            r["changed"][0]["metadata"]
            == {"title": ["About this handbook", "About the plant-floor handbook"]}
        ),
    ),
    "doc added": (
        _add_doc,
        "minor",
        lambda r: r["added"] == ["guide.troubleshooting"] and r["removed"] == [],
    ),
    "section added": (
        _add_section,
        "minor",
        lambda r: (
            [(c["id"], c["sections_added"], c["sections_removed"]) for c in r["changed"]]
            == [("device.acme.ac200", ["troubleshooting"], [])]
        ),
    ),
    "vocabulary value added": (
        _add_vocab_value,
        "minor",
        lambda r: r["contract"]["vocab_added"] == {"protocol": ["bacnet"]},
    ),
    "doc removed": (
        _remove_doc,
        "major",
        lambda r: r["removed"] == ["protocol.mqtt"] and r["added"] == [],
    ),
    "section removed": (
        _remove_section,
        "major",
        lambda r: (
            [(c["id"], c["sections_removed"]) for c in r["changed"]]
            == [("device.acme.ac200", ["pitfalls"])]
        ),
    ),
    "vocabulary value removed": (
        _remove_vocab_value,
        "major",
        lambda r: r["contract"]["vocab_removed"] == {"protocol": ["opcua"]},
    ),
    "field made required": (
        _require_field,
        "major",
        lambda r: r["contract"]["required_added"] == ["verified"],
    ),
    "doc added and one removed": (
        together(_add_doc, _remove_doc),
        "major",
        lambda r: r["added"] == ["guide.troubleshooting"] and r["removed"] == ["protocol.mqtt"],
    ),
}


def build_variant(tmp_path: Path, mutate: Callable[[Path], None]) -> Path:
    lib = library_copy(tmp_path)
    mutate(lib)
    return build_bundle(lib / "mkdocs.yml", tmp_path / "v2" / "bundle")


def diff_json(old: Path, new: Path, *extra: str) -> dict[str, Any]:
    run = run_cli("diff", str(old), str(new), "--json", *extra)
    assert run.exit_code == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_diff_names_the_bump(v1: Path, tmp_path: Path, scenario: str) -> None:
    mutate, bump, details = SCENARIOS[scenario]
    v2 = build_variant(tmp_path, mutate)
    report = diff_json(v1, v2, "--key", PUBLIC)
    assert report["bump"] == bump, report["reasons"]
    assert details(report), json.dumps(report, indent=1)
    assert report["old"]["library"] == report["new"]["library"] == "plant-floor"
    if bump != "none":
        assert report["reasons"]
    # going back undoes it: what was added is removed and vice versa
    back = diff_json(v2, v1)
    assert back["added"] == report["removed"] and back["removed"] == report["added"]


def test_diff_a_dropped_vocabulary_loosens_the_contract(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(
        tmp_path,
        lambda lib: substitute(
            lib / "mkdocs.yml",
            "        equipment_type: [air_compressor, energy_meter, plc, gateway]\n",
            "",
        ),
    )
    report = diff_json(v1, v2)
    assert report["bump"] == "minor", report


def test_diff_a_new_vocabulary_tightens_the_contract(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(
        tmp_path,
        lambda lib: substitute(
            lib / "mkdocs.yml",
            "      vocab:\n",
            "      vocab:\n        verified_by: [alice, bob]\n",
        ),
    )
    report = diff_json(v1, v2)
    assert report["bump"] == "major"
    assert list(report["contract"]["vocab_removed"]) == ["verified_by"]


def test_diff_works_on_archives_and_folders_alike(
    v1: Path, v1_archive: Path, tmp_path: Path
) -> None:
    v2 = build_variant(tmp_path, _add_section)
    v2_archive = tmp_path / "v2.tar.gz"
    pack(v2, v2_archive)
    folders = diff_json(v1, v2)
    assert folders["bump"] == "minor"
    assert diff_json(v1_archive, v2_archive, "--key", PUBLIC) == folders
    assert diff_json(v1_archive, v2) == folders
    assert diff_json(v1, v2_archive) == folders


def test_diff_text_names_the_bump_and_the_changes(v1: Path, tmp_path: Path) -> None:
    v2 = build_variant(tmp_path, together(_add_section, _retitle))
    run = run_cli("diff", str(v1), str(v2))
    assert run.exit_code == 0, run.stderr
    assert run.lines[0] == "plant-floor 1.0.0 -> plant-floor 1.0.0: suggested bump MINOR"
    assert "  - 1 section(s) added: device.acme.ac200#troubleshooting" in run.lines
    assert "  - 1 doc(s) changed: guide.about" in run.lines
    assert "  changed device.acme.ac200 (+#troubleshooting)" in run.lines
    assert (
        "  changed guide.about (title: 'About this handbook' -> 'About the plant-floor handbook')"
        in run.lines
    )


def test_diff_refuses_a_damaged_or_untrusted_bundle(
    v1: Path, v1_archive: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(v1.resolve(), copy)
    victim = sorted((copy / "content").iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"\n")
    damaged = run_cli("diff", str(v1), str(copy), "--json")
    assert damaged.exit_code == 1 and damaged.stderr.startswith("refused:") and damaged.stdout == ""
    _, stranger = generate_private_key()
    untrusted = run_cli("diff", str(v1_archive), str(v1), "--key", str(stranger))
    assert untrusted.exit_code == 1 and untrusted.stderr.startswith("refused:")
