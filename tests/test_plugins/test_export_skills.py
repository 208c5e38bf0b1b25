"""`handbook export skills`: a verified bundle as a folder of Agent Skills with the
well-known discovery index, the same bytes every time, and a round trip that keeps every
doc's id, fields, body and attached files. Refusals leave nothing written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import KEY, PUBLIC, ROOT, VALID_DOC, MakeLibrary, run_cli

from handbook.bundle.local import Bundle, open_bundle
from handbook.bundle.manifest import utc_seconds
from handbook.skills.export import SCHEMA, is_skill_name
from handbook_build import load_config
from handbook_build.errors import PublishError
from handbook_build.pipeline import build
from handbook_build.tasks.export import export_skills
from handbook_build.write import pages

INDEX = Path(".well-known/agent-skills/index.json")


@pytest.fixture(scope="module")
def skills_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skills") / "bundle"
    build(load_config(ROOT / "examples" / "skills" / "mkdocs.yml"), out, KEY)
    return out


def export(bundle: Path, out: Path, *args: str) -> Any:
    return run_cli("export", "skills", str(out), "--bundle", str(bundle), "--key", PUBLIC, *args)


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def read_skill_md(data: bytes) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a SKILL.md, read as any Skills client reads it."""
    text = data.decode("utf-8")
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body


def fields_of(front: dict[str, Any]) -> dict[str, Any]:
    """A doc's fields read back from a skill's frontmatter (the skill_md module's rule)."""
    meta = dict(front.get("metadata", {}))
    as_json = set(json.loads(meta.pop("handbook-json-fields", "[]")))
    fields: dict[str, Any] = {"summary": front["description"]}
    own = {k: v for k, v in meta.items() if not k.startswith("handbook-")}
    if own:
        fields["metadata"] = own
    for key, value in meta.items():
        if key.startswith("handbook-"):
            name = key.removeprefix("handbook-")
            fields[name] = json.loads(value) if name in as_json else value
    for key, name in (("license", "license"), ("compatibility", "compatibility")):
        if key in front:
            fields[name] = front[key]
    if "allowed-tools" in front:
        fields["allowed_tools"] = front["allowed-tools"]
    return fields


def assert_round_trip(bundle: Bundle, out: Path) -> None:
    """Every doc comes back from its SKILL.md with its id, fields and body, and its
    attached files with their bytes; nothing else is there."""
    found = {}
    for skill_md in sorted(out.glob("*/SKILL.md")):
        front, body = read_skill_md(skill_md.read_bytes())
        assert front["name"] == skill_md.parent.name and is_skill_name(front["name"])
        found[(front["metadata"]["handbook-id"], front["metadata"].get("handbook-lang"))] = (
            fields_of(front),
            body,
            skill_md.parent,
        )
    docs = bundle.catalog.docs
    assert sorted(found) == sorted((d.id, d.meta.get("lang")) for d in docs)
    for doc in docs:
        fields, body, folder = found[(doc.id, doc.meta.get("lang"))]
        assert fields == pages.frontmatter(doc)  # the doc's fields as the bundle holds them
        assert body.encode("utf-8") == bundle.read(doc.content)
        attached = {r.path: bundle.read(r.file) for r in doc.resources}
        assert files_of(folder) == {"SKILL.md": (folder / "SKILL.md").read_bytes(), **attached}


def test_the_skills_example_exports_folder_docs_with_their_files(
    skills_bundle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "skills"
    result = export(skills_bundle, out)
    assert result.exit_code == 0, result.stderr
    assert result.lines == [
        f"exported plant-skills 1.0.0 as 3 skills (2 with attached files), 12 files -> {out}",
        f"discovery index: {out / INDEX}",
    ]
    assert sorted(files_of(out)) == [
        ".well-known/agent-skills/device-acme-ac300.tar.gz",
        ".well-known/agent-skills/index.json",
        ".well-known/agent-skills/skill-modbus-scan.tar.gz",
        "device-acme-ac300/SKILL.md",
        "device-acme-ac300/registers.csv",
        "device-acme-ac300/wiring.png",
        "skill-modbus-scan/SKILL.md",
        "skill-modbus-scan/config/collector.yaml",
        "skill-modbus-scan/references/notes.md",
        "skill-modbus-scan/references/register-template.csv",
        "skill-modbus-scan/scripts/scan.py",
        "skills-overview/SKILL.md",
    ]
    bundle = open_bundle(skills_bundle, [PUBLIC])
    assert_round_trip(bundle, out)
    front, _ = read_skill_md((out / "skill-modbus-scan" / "SKILL.md").read_bytes())
    assert front == {
        "name": "skill-modbus-scan",
        "description": "A procedure for finding which holding registers of an unknown Modbus "
        "TCP device answer, with a register table to fill in and a collector config to "
        "start from.",
        "metadata": {
            "handbook-id": "skill.modbus-scan",
            "handbook-json-fields": '["keywords"]',
            "handbook-keywords": '["modbus", "scan", "registers", "holding registers", '
            '"discovery"]',
            "handbook-kind": "skill",
            "handbook-title": "Scanning a Modbus device for readable registers",
            "handbook-verified": "unverified",
        },
    }


def test_the_index_names_every_artifact_with_its_digest(
    skills_bundle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "skills"
    assert export(skills_bundle, out).exit_code == 0
    index = json.loads((out / INDEX).read_bytes())
    assert list(index) == ["$schema", "skills"]
    assert (
        index["$schema"] == SCHEMA == "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
    )
    entries = index["skills"]
    assert [(e["name"], e["type"], e["url"]) for e in entries] == [
        ("device-acme-ac300", "archive", "device-acme-ac300.tar.gz"),
        ("skill-modbus-scan", "archive", "skill-modbus-scan.tar.gz"),
        ("skills-overview", "skill-md", "../../skills-overview/SKILL.md"),
    ]
    for entry in entries:
        assert list(entry) == ["name", "type", "description", "url", "digest", "version"]
        artifact = (out / INDEX.parent / entry["url"]).resolve()  # resolved as a URL would be
        assert entry["digest"] == "sha256:" + hashlib.sha256(artifact.read_bytes()).hexdigest()
        assert entry["version"] == "1.0.0"
        if entry["type"] == "skill-md":
            front, _ = read_skill_md(artifact.read_bytes())
            assert (front["name"], front["description"]) == (entry["name"], entry["description"])


def test_an_archive_holds_the_skill_folder_with_fixed_times_and_owners(
    skills_bundle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "skills"
    assert export(skills_bundle, out).exit_code == 0
    built_at = open_bundle(skills_bundle, [PUBLIC]).manifest.signed.built_at
    archive = out / INDEX.parent / "skill-modbus-scan.tar.gz"
    with tarfile.open(fileobj=io.BytesIO(archive.read_bytes()), mode="r:gz") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == [
            "SKILL.md",
            "config/collector.yaml",
            "references/notes.md",
            "references/register-template.csv",
            "scripts/scan.py",
        ]
        for member in members:
            assert member.isfile() and member.mode == 0o644
            assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
            assert member.mtime == utc_seconds(built_at)
            source = tar.extractfile(member)
            assert source is not None
            assert source.read() == (out / "skill-modbus-scan" / member.name).read_bytes()
    assert archive.read_bytes()[4:8] == b"\0\0\0\0"  # no time in the gzip header


def test_the_export_is_byte_reproducible(skills_bundle: Path, tmp_path: Path) -> None:
    assert export(skills_bundle, tmp_path / "one").exit_code == 0
    for path in (tmp_path / "one").rglob("*"):
        os.utime(path, (0, 0))
    assert export(skills_bundle, tmp_path / "two").exit_code == 0
    assert files_of(tmp_path / "one") == files_of(tmp_path / "two")


def test_dotted_ids_become_hyphenated_names(plant_floor_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "plant"
    result = export(plant_floor_bundle, out)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.parent.name for p in out.glob("*/SKILL.md")) == [
        "device-acme-ac200",
        "device-voltra-em3",
        "guide-about",
        "guide-commissioning",
        "protocol-modbus",
        "protocol-mqtt",
    ]
    assert_round_trip(open_bundle(plant_floor_bundle, [PUBLIC]), out)
    front, _ = read_skill_md((out / "device-acme-ac200" / "SKILL.md").read_bytes())
    assert front["metadata"]["handbook-id"] == "device.acme.ac200"
    assert front["metadata"]["handbook-aliases"] == '["AC200", "Acme AC 200"]'
    assert front["metadata"]["handbook-version"] == "2.1"  # the doc's, not the library's


def test_a_kind_filter_exports_those_docs(plant_floor_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "devices"
    result = export(plant_floor_bundle, out, "--kind", "device", "--kind", "protocol")
    assert result.exit_code == 0, result.stderr
    entries = json.loads((out / INDEX).read_bytes())["skills"]
    assert [e["name"] for e in entries] == [
        "device-acme-ac200",
        "device-voltra-em3",
        "protocol-modbus",
        "protocol-mqtt",
    ]


def test_an_unknown_kind_is_a_usage_error(plant_floor_bundle: Path, tmp_path: Path) -> None:
    result = export(plant_floor_bundle, tmp_path / "out", "--kind", "gadget")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: Invalid value for --kind: plant-floor has no doc of kind gadget "
        "(its kinds: device, guide, protocol)"
    )
    assert not (tmp_path / "out").exists()


def test_colliding_names_are_refused_and_nothing_is_written(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config = make_library(
        {"a.md": VALID_DOC.format(id="notes.a"), "b.md": VALID_DOC.format(id="notes_a")}
    )
    build(load_config(config), tmp_path / "bundle", KEY)
    result = export(tmp_path / "bundle", tmp_path / "out")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: cannot be written as Agent Skills: "
        "docs 'notes.a' and 'notes_a' both map to the skill name 'notes-a'\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "bundle.versions", "lib"]


def test_a_full_output_is_replaced_only_with_force(skills_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = export(skills_bundle, out)
    assert result.exit_code == 1
    assert result.stderr == f"error: {out} is not empty; pass --force to replace what it holds\n"
    assert files_of(out) == {"keep.txt": b"mine"}
    result = export(skills_bundle, out, "--force", "--kind", "guide")
    assert result.exit_code == 0, result.stderr
    assert sorted(files_of(out)) == [
        ".well-known/agent-skills/index.json",
        "skills-overview/SKILL.md",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left


def test_an_output_that_is_not_a_folder_is_refused(skills_bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    result = export(skills_bundle, tmp_path / "out", "--force")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for 'OUT': Directory '{tmp_path / 'out'}' is a file."
    )
    with pytest.raises(PublishError, match=r"/out is not a folder; choose another output$"):
        export_skills(open_bundle(skills_bundle, [PUBLIC]), tmp_path / "out", force=True)
    assert (tmp_path / "out").read_text() == "a file"


def test_an_empty_output_folder_is_used(skills_bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    assert export(skills_bundle, tmp_path / "out", "--kind", "guide").exit_code == 0
    assert (tmp_path / "out" / "skills-overview" / "SKILL.md").is_file()


def test_links_are_never_written_through(
    skills_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for out in ("link", "link/skills"):
        result = export(skills_bundle, Path(out), "--force")
        assert result.exit_code == 1
        assert result.stderr == (
            f"error: {tmp_path / 'link'} is a symbolic link (to {elsewhere}); refusing to "
            "write through it. Remove the link, or choose another output\n"
        )
    assert list(elsewhere.iterdir()) == []


def test_an_unsigned_bundle_needs_allow_unsigned(make_library: MakeLibrary, tmp_path: Path) -> None:
    build(load_config(make_library({"a.md": VALID_DOC.format(id="a")})), tmp_path / "bundle", None)
    args = ("export", "skills", str(tmp_path / "out"), "--bundle", str(tmp_path / "bundle"))
    refused = run_cli(*args)
    assert refused.exit_code == 1
    assert refused.stderr.startswith("refused: ")
    assert run_cli(*args, "--allow-unsigned").exit_code == 0


def test_a_packed_bundle_exports_the_same_files(skills_bundle: Path, tmp_path: Path) -> None:
    archive = tmp_path / "skills.tar.gz"
    assert run_cli("pack", str(skills_bundle), "-o", str(archive)).exit_code == 0
    assert export(skills_bundle, tmp_path / "from-folder").exit_code == 0
    assert export(archive, tmp_path / "from-archive").exit_code == 0
    assert files_of(tmp_path / "from-folder") == files_of(tmp_path / "from-archive")
