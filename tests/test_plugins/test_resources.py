"""Docs that are folders: `SKILL.md` or `index.md` with attached files. Found and
checked at build (no links, no special files, portable names, a size limit), hashed
into the signed bundle, listed in the catalog, and read back by path and exact
revision as verified bytes, never from a path the caller builds and never executed."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, ROOT, MakeLibrary, run_cli

from handbook import HashMismatchError, Library
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.read.source import discover

EXAMPLE = ROOT / "examples" / "skills"


def built(source: Path, out: Path) -> Library:
    build(load_config(source / "mkdocs.yml"), out, KEY)
    return Library.open(out, allow_unsigned=True)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "skills", ignore=shutil.ignore_patterns("build"))
    return tmp_path / "skills"


def test_folder_docs_and_their_files_are_found() -> None:
    found = discover(EXAMPLE / "docs")
    assert found.paths == [
        "devices/ac300/index.md",
        "index.md",
        "skills/modbus-scan/SKILL.md",
    ]  # notes.md is the skill's, not a doc
    assert found.resources == {
        "devices/ac300/index.md": ["devices/ac300/registers.csv", "devices/ac300/wiring.png"],
        "skills/modbus-scan/SKILL.md": [
            "skills/modbus-scan/config/collector.yaml",
            "skills/modbus-scan/references/notes.md",
            "skills/modbus-scan/references/register-template.csv",
            "skills/modbus-scan/scripts/scan.py",
        ],
    }


def test_an_index_folder_keeps_its_markdown_docs(make_library: MakeLibrary) -> None:
    doc = "---\nid: {id}\ntitle: T\nkind: guide\nsummary: s\n---\n# T\n\n## S\n\nText.\n"
    config = make_library(
        {
            "area/index.md": doc.format(id="area"),
            "area/other.md": doc.format(id="area.other"),
            "area/table.csv": "a,b\n1,2\n",
            "loose.csv": "x\n",
        }
    )
    found = discover(config.parent / "docs")
    assert found.paths == ["area/index.md", "area/other.md"]
    assert found.resources == {
        "area/index.md": ["area/table.csv"]
    }  # a file outside any folder doc stays a site asset


def test_files_are_hashed_listed_and_read_back(example: Path, tmp_path: Path) -> None:
    lib = built(example, tmp_path / "bundle")
    listed = lib.get("skill.modbus-scan")["resources"]
    assert [r["path"] for r in listed] == [
        "config/collector.yaml",
        "references/notes.md",
        "references/register-template.csv",
        "scripts/scan.py",
    ]
    on_disk = (example / "docs/skills/modbus-scan/config/collector.yaml").read_bytes()
    answer = lib.resource("skill.modbus-scan", "config/collector.yaml")
    assert (
        answer["content"].encode() == on_disk
        and answer["sha256"] == hashlib.sha256(on_disk).hexdigest()
    )
    assert answer["media_type"] == "application/yaml"
    picture = lib.resource("device.acme.ac300", "wiring.png")
    assert (
        base64.b64decode(picture["content_base64"])
        == (example / "docs/devices/ac300/wiring.png").read_bytes()
    )
    assert picture["media_type"] == "image/png"
    script = lib.resource("skill.modbus-scan", "scripts/scan.py")
    assert "never runs it" in script["content"]  # shipped as text, not run
    name = f"resources/{answer['sha256']}"  # vouched for by the catalog, not the manifest
    assert name not in lib.bundle.manifest.signed.files
    assert lib.bundle.entry(name) == (answer["sha256"], answer["bytes"])


@pytest.mark.parametrize(
    "path",
    [
        "../skills/modbus-scan/scripts/scan.py",
        "/etc/passwd",
        "registers.csv/../wiring.png",
        "..",
        "",
        "REGISTERS.CSV",
        "registers.csv\x00",
        "C:\\registers.csv",
        "%2e%2e/registers.csv",
        5,
    ],
)
def test_paths_only_name_listed_files(example: Path, tmp_path: Path, path: object) -> None:
    lib = built(example, tmp_path / "bundle")
    answer = lib.resource("device.acme.ac300", path)  # type: ignore[arg-type]
    assert answer["found"] is False
    assert answer.get("resources") in (["registers.csv", "wiring.png"], None)


def test_exact_revisions_and_a_changed_file(example: Path, tmp_path: Path) -> None:
    lib = built(example, tmp_path / "bundle")
    before = lib.get("device.acme.ac300")["revision"]
    assert lib.resource("device.acme.ac300", "registers.csv", revision=before)["found"] is True
    table = example / "docs/devices/ac300/registers.csv"
    table.write_text(table.read_text() + "3,fault_code,uint16,,1\n")
    build(load_config(example / "mkdocs.yml"), tmp_path / "bundle", KEY)
    assert lib.reload()["reloaded"] is True
    after = lib.get("device.acme.ac300")["revision"]
    assert after != before  # a file-only change changes the doc's revision
    refused = lib.resource("device.acme.ac300", "registers.csv", revision=before)
    assert (
        refused["found"] is False
        and refused["error"]["code"] == "unavailable_revision"
        and "content" not in refused
    )
    assert (
        "fault_code"
        in lib.resource("device.acme.ac300", "registers.csv", revision=after)["content"]
    )


def test_a_tampered_file_is_never_served(example: Path, tmp_path: Path) -> None:
    lib = built(example, tmp_path / "bundle")
    digest = lib.resource("device.acme.ac300", "registers.csv")["sha256"]
    fresh = Library.open(tmp_path / "bundle", allow_unsigned=True)
    target = Path(os.path.realpath(tmp_path / "bundle")) / "resources" / digest
    target.write_bytes(target.read_bytes().replace(b"bar", b"psi"))
    answer = fresh.resource("device.acme.ac300", "registers.csv")
    assert (
        "content" not in answer
        and answer["error"]["code"] == "integrity_error"
        and digest in answer["error"]["message"]
    )
    with pytest.raises(HashMismatchError):
        Library.open(tmp_path / "bundle", allow_unsigned=True).bundle.read(f"resources/{digest}")


def test_build_refuses_links_special_files_and_oversized_files(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    doc = "---\nid: skill.x\ntitle: T\nkind: guide\nsummary: s\n---\n# T\n\n## S\n\nText.\n"
    config = make_library(
        {"skill/SKILL.md": doc, "skill/big.bin": b"x" * 2048, "skill/ok.txt": "fine"},
        limits={"resource_bytes": 1024},
    )
    docs = config.parent / "docs"
    (tmp_path / "secret.txt").write_text("outside")
    (docs / "skill" / "link.txt").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(docs / "skill" / "pipe")
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 1
    assert "skill/big.bin:1:1: HB106" in run.stdout and "limits.resource_bytes" in run.stdout
    assert "skill/link.txt:1:1: HB104" in run.stdout  # a link out of the docs root
    assert "skill/pipe:1:1: HB103" in run.stdout


def test_unportable_resource_names_are_refused(make_library: MakeLibrary) -> None:
    doc = "---\nid: skill.x\ntitle: T\nkind: guide\nsummary: s\n---\n# T\n\n## S\n\nText.\n"
    config = make_library(
        {
            "skill/SKILL.md": doc,
            "skill/a:b.txt": "x",
            "skill/Notes.txt": "x",
            "skill/notes.txt": "y",
        }
    )
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 1 and "HB104" in run.stdout and "HB105" in run.stdout


def test_a_catalog_pointing_outside_its_files_is_refused(example: Path, tmp_path: Path) -> None:
    """A signed catalog whose resource entry is unsafe or malformed is refused; one that
    names a file the bundle does not hold vouches for nothing that can be read."""
    import json

    from handbook.bundle.catalog import Catalog
    from handbook.bundle.entries import check_agreement
    from handbook.bundle.manifest import FileEntry
    from handbook.errors import FormatError, MissingFileError

    lib = built(example, tmp_path / "bundle")

    def altered(*changes: dict[str, Any]) -> Catalog:
        data = json.loads(lib.bundle.read("catalog.json"))
        doc = next(d for d in data["docs"] if d["id"] == "device.acme.ac300")
        for resource, change in zip(doc["resources"], changes, strict=False):
            resource.update(change)
        return Catalog.from_dict(data)

    with pytest.raises(FormatError, match="unsafe path"):
        check_agreement(lib.bundle.manifest, altered({"path": "../../etc/passwd"}))
    with pytest.raises(FormatError, match="not 64 lowercase hex"):
        check_agreement(lib.bundle.manifest, altered({"sha256": "0" * 63 + "G"}))
    with pytest.raises(FormatError, match="another entry"):  # one file, two sizes
        same = {"sha256": "0" * 64}
        check_agreement(lib.bundle.manifest, altered({**same, "bytes": 1}, {**same, "bytes": 2}))
    known: dict[str, FileEntry] = {}
    check_agreement(lib.bundle.manifest, altered({"sha256": "0" * 64}), known)
    with pytest.raises(MissingFileError, match=r"resources/0{64}: referred to by the catalog"):
        lib.bundle.source.read_verified("resources/" + "0" * 64, known["resources/" + "0" * 64])


def test_attached_files_through_cli_http_and_mcp(example: Path, tmp_path: Path) -> None:
    import json

    import anyio
    from conftest import get_json, live, request
    from mcp import Client

    from handbook.serve.http import create_app
    from handbook.serve.mcp import http_app

    lib = built(example, tmp_path / "bundle")
    table = (example / "docs/devices/ac300/registers.csv").read_text()
    picture = (example / "docs/devices/ac300/wiring.png").read_bytes()

    run = run_cli(
        "resource",
        "device.acme.ac300",
        "registers.csv",
        "--bundle",
        str(tmp_path / "bundle"),
        "--allow-unsigned",
    )
    assert run.exit_code == 0 and run.stdout == table
    out = tmp_path / "wiring.png"
    run = run_cli(
        "resource",
        "device.acme.ac300",
        "wiring.png",
        "-o",
        str(out),
        "--bundle",
        str(tmp_path / "bundle"),
        "--allow-unsigned",
    )
    assert run.exit_code == 0 and out.read_bytes() == picture
    run = run_cli(
        "resource",
        "device.acme.ac300",
        "../index.md",
        "--bundle",
        str(tmp_path / "bundle"),
        "--allow-unsigned",
    )
    assert run.exit_code == 1

    with live(create_app(lib, mcp=http_app(lib))) as address:
        status, body = get_json(address, "/api/v1/resource?id=device.acme.ac300&path=registers.csv")
        assert status == 200 and body["content"] == table
        status, body = get_json(address, "/api/v1/resource?id=device.acme.ac300&path=..%2Findex.md")
        assert status == 404 and body["found"] is False
        assert (
            request(
                address,
                f"/bundle/resources/{body and lib.resource('device.acme.ac300', 'registers.csv')['sha256']}",
            )[2].decode()
            == table
        )

        async def main() -> tuple[str, str]:
            async with Client(f"http://{address[0]}:{address[1]}/mcp", mode="legacy") as client:
                text = (
                    await client.read_resource(
                        "handbook://plant-skills/device.acme.ac300/registers.csv"
                    )
                ).contents[0]
                blob = (
                    await client.read_resource(
                        "handbook://plant-skills/device.acme.ac300/wiring.png"
                    )
                ).contents[0]
                return text.text, blob.blob  # type: ignore[union-attr]

        text, blob = anyio.run(main)
        assert text == table and base64.b64decode(blob) == picture
        json.dumps(body)
