"""The format's version policy (docs/spec/bundle.md, "Versions"): within handbook/v2,
additions are accepted by every reader — new signed manifest keys (kept as they are),
new catalog fields, new listed files — and another major version is refused with a
clear error: handbook/v1, which this release once wrote, with what to do (rebuild)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY, PUBLIC, run_cli

from handbook import FormatError, Library
from handbook.bundle.canonical import dumps
from handbook.bundle.signing import MANIFEST_TAG, sign


def rewrite(built: Path, tmp_path: Path, change: Callable[[Path, dict[str, Any]], None]) -> Path:
    """A copy of the bundle changed by `change(folder, signed)` and signed again."""
    folder = tmp_path / "copy"
    shutil.copytree(built, folder)
    signed = json.loads((folder / "manifest.json").read_bytes())["signed"]
    change(folder, signed)
    manifest = {"signed": signed, "signatures": [sign(KEY, MANIFEST_TAG, signed)]}
    (folder / "manifest.json").write_bytes(dumps(manifest))
    return folder


def relist(folder: Path, signed: dict[str, Any], name: str) -> None:
    data = (folder / name).read_bytes()
    signed["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def test_a_new_signed_key_is_accepted_and_kept(plant_floor_bundle: Path, tmp_path: Path) -> None:
    folder = rewrite(plant_floor_bundle, tmp_path, lambda _, signed: signed.update(provenance="ci"))
    lib = Library.open(folder, [PUBLIC])
    assert lib.bundle.manifest.signed.unrecognized == {"provenance": "ci"}
    assert lib.bundle.manifest.to_bytes() == (folder / "manifest.json").read_bytes()
    assert lib.get("device.acme.ac200")["found"] is True
    assert run_cli("verify", str(folder), "--key", PUBLIC).exit_code == 0


def test_new_catalog_fields_and_files_are_accepted(
    plant_floor_bundle: Path, tmp_path: Path
) -> None:
    def change(folder: Path, signed: dict[str, Any]) -> None:
        catalog = json.loads((folder / "catalog.json").read_bytes())
        catalog["library"]["future"] = {"x": 1}
        for doc in catalog["docs"]:
            doc["pedigree"] = {"reviews": []}
            for section in doc["sections"]:
                section["words"] = 3
        (folder / "catalog.json").write_bytes(json.dumps(catalog).encode())
        relist(folder, signed, "catalog.json")
        (folder / "reviews").mkdir()
        (folder / "reviews" / "index.json").write_bytes(b"[]\n")
        relist(folder, signed, "reviews/index.json")

    folder = rewrite(plant_floor_bundle, tmp_path, change)
    lib = Library.open(folder, [PUBLIC])
    assert lib.get("device.acme.ac200", section="Register map")["found"] is True
    assert run_cli("verify", str(folder), "--key", PUBLIC).exit_code == 0


def test_another_major_version_is_refused_clearly(plant_floor_bundle: Path, tmp_path: Path) -> None:
    folder = rewrite(
        plant_floor_bundle, tmp_path, lambda _, signed: signed.update(spec="handbook/v3")
    )
    with pytest.raises(
        FormatError, match=r"spec is 'handbook/v3'; this reader understands 'handbook/v2'"
    ):
        Library.open(folder, [PUBLIC])
    run = run_cli("verify", str(folder), "--key", PUBLIC)
    assert run.exit_code == 1 and "another major version" in run.stderr
    assert "rebuild" not in run.stderr  # a newer bundle: rebuilding with this release is no cure


def as_v1(folder: Path, signed: dict[str, Any]) -> None:
    """The bundle as handbook/v1 wrote it: every content file listed in the manifest."""
    signed["spec"] = "handbook/v1"
    for path in sorted((folder / "content").iterdir()):
        relist(folder, signed, f"content/{path.name}")


def test_a_v1_bundle_is_refused_with_what_to_do(plant_floor_bundle: Path, tmp_path: Path) -> None:
    """A bundle built by an earlier release (handbook/v1, signed under its own tag) is
    refused before anything else is read, naming both versions and the remedy."""
    folder = tmp_path / "copy"
    shutil.copytree(plant_floor_bundle, folder)
    signed = json.loads((folder / "manifest.json").read_bytes())["signed"]
    as_v1(folder, signed)
    manifest = {"signed": signed, "signatures": [sign(KEY, "handbook/v1/manifest", signed)]}
    (folder / "manifest.json").write_bytes(dumps(manifest))
    with pytest.raises(
        FormatError,
        match=r"spec is 'handbook/v1'; this reader understands 'handbook/v2' .*rebuild it "
        r"with this release \(handbook build\)",
    ):
        Library.open(folder, [PUBLIC])
    run = run_cli("verify", str(folder), "--key", PUBLIC)
    assert run.exit_code == 1 and "rebuild it with this release" in run.stderr


def test_a_v2_manifest_may_not_list_content(plant_floor_bundle: Path, tmp_path: Path) -> None:
    """Listing content files, signed under the v2 tag, is not a v2 manifest: the content
    folders belong to the catalog, which is what vouches for each file."""
    folder = rewrite(
        plant_floor_bundle, tmp_path, lambda f, s: as_v1(f, s) or s.update(spec="handbook/v2")
    )
    with pytest.raises(
        FormatError, match=r"lies in content/, whose files handbook/v2 manifests do not list"
    ):
        Library.open(folder, [PUBLIC])
