"""Agent Skills: a folder of skills is a library with no configuration, each SKILL.md held
to the specification's rules (HB701-HB706); a Handbook folder doc that claims nothing of
the specification is not."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import VALID_DOC, MakeLibrary, run_cli

from handbook import Library
from handbook_build import load_config
from handbook_build.checks.adopt import exported_fields
from handbook_build.pipeline import build


def skill(
    name: str = "pdf-tools", description: str = "Fills PDF forms. Use it for forms.", **extra: str
) -> str:
    lines = [
        f"name: {name}",
        f"description: {description}",
        *(f"{k}: {v}" for k, v in extra.items()),
    ]
    return "---\n" + "\n".join(lines) + "\n---\n# Fill a PDF\n\nOpen the form, fill it, save it.\n"


def check_skill(make_library: MakeLibrary, text: str, folder: str = "pdf-tools") -> list[str]:
    config = make_library({f"{folder}/SKILL.md": text}, vocab={"kind": ["skill"]})
    run = run_cli("check", "--config", str(config))
    return [line.split(": ", 1)[1] for line in run.lines if ": HB7" in line]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (skill(), []),
        (skill(name="PDF_Tools"), ["HB701"]),
        (skill(name="-pdf"), ["HB701"]),
        (skill(name="pdf--tools"), ["HB701"]),
        (skill(name="x" * 65), ["HB701"]),
        (skill(name="other-name"), ["HB701"]),
        (skill(name="[a, b]"), ["HB701"]),
        ("---\ndescription: Fills forms.\n---\nbody\n", ["HB701"]),
        (skill(description="''"), ["HB702"]),
        (skill(description="d" * 1025), ["HB702"]),
        ("---\nname: pdf-tools\n---\nbody\n", ["HB702"]),
        (skill(compatibility="''"), ["HB703"]),
        (skill(compatibility="c" * 501), ["HB703"]),
        (skill(compatibility="c" * 500), []),
        (skill(metadata="{author: me, version: '1.0'}"), []),
        (skill(metadata="[a, b]"), ["HB704"]),
        (skill(metadata="{retries: 3}"), ["HB704"]),
        (skill(**{"allowed-tools": "Bash(git:*) Read"}), []),
        (skill(**{"allowed-tools": "[Bash, Read]"}), ["HB705"]),
    ],
)
def test_the_specification_rules(make_library: MakeLibrary, text: str, expected: list[str]) -> None:
    found = check_skill(make_library, text)
    assert [f.split()[0] for f in found] == expected, found


def test_findings_say_what_to_do(make_library: MakeLibrary) -> None:
    [grammar] = check_skill(make_library, skill(name="PDF_Tools"))
    assert "try `pdf-tools`" in grammar
    [folder] = check_skill(make_library, skill(name="other-name"))
    assert "is not its folder's name `pdf-tools`" in folder


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("step\n" * 501, "504 lines and about 638 tokens"),
        ("word " * 4_200, "4 lines and about 5,2"),
    ],
)
def test_a_long_body_is_a_warning(make_library: MakeLibrary, body: str, expected: str) -> None:
    limits = {"body_warn_chars": 50_000, "body_max_chars": 50_000}
    config = make_library(
        {"pdf-tools/SKILL.md": skill() + body}, vocab={"kind": ["skill"]}, limits=limits
    )
    run = run_cli("check", "--config", str(config))
    [long] = [line for line in run.lines if "HB706" in line]
    assert "(warning)" in long and expected in long
    assert run.exit_code == 0


def test_a_handbook_folder_doc_is_not_held_to_the_specification(make_library: MakeLibrary) -> None:
    config = make_library(
        {"panel/SKILL.md": VALID_DOC.format(id="panel"), "panel/wiring.csv": "a,b\n"}
    )
    run = run_cli("check", "--strict", "--config", str(config))
    assert run.exit_code == 0, run.stdout


def test_a_folder_of_skills_checks_builds_and_serves(tmp_path: Path) -> None:
    root = tmp_path / "team-skills"
    for name, description in [
        ("pdf-tools", "Fills PDF forms. Use it whenever a form arrives as a PDF."),
        ("bad_name", "Has a name the specification refuses. Use it in tests."),
    ]:
        (root / name / "references").mkdir(parents=True)
        (root / name / "SKILL.md").write_text(skill(name, description), encoding="utf-8")
        (root / name / "references" / "fields.md").write_text(
            "# Fields\n\nThe form's fields.\n", encoding="utf-8"
        )
    (root / "README.md").write_text("# About these skills\n", encoding="utf-8")

    run = run_cli("check", "--config", str(root))
    assert run.exit_code == 0, run.stdout  # adopted: the spec's errors are warnings
    assert [line.split(": ", 1)[1].split()[:2] for line in run.lines if "HB7" in line] == [
        ["HB701", "(warning)"]
    ]
    assert run.lines[-1].startswith("2 files checked (2 docs): 0 errors, 1 warning")

    bundle = build(load_config(root), tmp_path / "bundle", None).bundle
    library = Library.open(bundle.path, allow_unsigned=True)
    assert {d["id"]: d["kind"] for d in library.list()["docs"]} == {
        "pdf-tools": "skill",
        "bad_name": "skill",
    }
    doc = library.get("pdf-tools")
    assert doc["metadata"]["summary"] == "Fills PDF forms."
    assert (
        doc["metadata"]["description"]
        == "Fills PDF forms. Use it whenever a form arrives as a PDF."
    )
    assert "references/fields.md" in str(doc)


def test_fields_kept_by_export_come_back() -> None:
    meta = {
        "name": "device-ac200",
        "description": "Reads the AC200.",
        "metadata": {
            "handbook-id": "device.ac200",
            "handbook-kind": "device",
            "handbook-keywords": '["modbus", "rs485"]',
            "handbook-json-fields": '["keywords"]',
            "author": "plant team",
        },
    }
    assert exported_fields(meta) == {
        "id": "device.ac200",
        "kind": "device",
        "keywords": ["modbus", "rs485"],
        "summary": "Reads the AC200.",
        "metadata": {"author": "plant team"},
    }


@pytest.mark.parametrize(
    "metadata",
    [
        {"author": "me"},  # not exported by Handbook
        {"handbook-id": "x", "handbook-json-fields": "not json"},
        {
            "handbook-id": "x",
            "handbook-keywords": "[unclosed",
            "handbook-json-fields": '["keywords"]',
        },
        {"handbook-id": "x", "handbook-json-fields": "7"},
    ],
)
def test_metadata_that_export_did_not_write_is_left_as_written(metadata: dict[str, str]) -> None:
    meta = {"name": "x", "description": "d", "metadata": metadata}
    assert exported_fields(meta) == meta
