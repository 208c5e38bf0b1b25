"""`handbook serve` publishes the libraries as Agent Skills under
``/.well-known/agent-skills/`` from the verified bundles in memory: the discovery index,
each SKILL.md, attached files (never with a type a browser would run) and archives, the
same bytes `handbook export skills` writes; public like `/bundle/` unless tokens are set."""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEY, PUBLIC, ROOT, VALID_DOC, MakeLibrary, get_json, live, request, run_cli

from handbook import Library, Shelf
from handbook.serve.http import create_app
from handbook_build import load_config
from handbook_build.pipeline import build

WELL_KNOWN = "/.well-known/agent-skills"
TOKEN = "skills-token"


@pytest.fixture(scope="module")
def skills_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skills") / "bundle"
    build(load_config(ROOT / "examples" / "skills" / "mkdocs.yml"), out, KEY)
    return out


@pytest.fixture(scope="module")
def server(skills_bundle: Path) -> Iterator[tuple[str, int]]:
    with live(create_app(Library.open(skills_bundle, [PUBLIC]))) as address:
        yield address


def test_the_index_names_what_the_server_serves(server: tuple[str, int]) -> None:
    status, headers, body = request(server, f"{WELL_KNOWN}/index.json")
    assert status == 200 and headers["content-type"] == "application/json"
    index = json.loads(body)
    assert index["$schema"] == "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
    assert [(e["name"], e["type"], e["url"]) for e in index["skills"]] == [
        ("device-acme-ac300", "archive", "device-acme-ac300.tar.gz"),
        ("skill-modbus-scan", "archive", "skill-modbus-scan.tar.gz"),
        ("skills-overview", "skill-md", "skills-overview/SKILL.md"),
    ]
    for entry in index["skills"]:
        url = urllib.parse.urljoin(f"{WELL_KNOWN}/index.json", entry["url"])
        status, headers, artifact = request(server, url)
        assert status == 200, url
        assert entry["digest"] == "sha256:" + hashlib.sha256(artifact).hexdigest()
        assert headers["content-type"] == (
            "application/gzip" if entry["type"] == "archive" else "text/markdown; charset=utf-8"
        )


def test_the_served_bytes_are_the_exported_ones(
    server: tuple[str, int], skills_bundle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    exported = run_cli(
        "export", "skills", str(out), "--bundle", str(skills_bundle), "--key", PUBLIC
    )
    assert exported.exit_code == 0, exported.stderr
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        url = f"/{rel}" if rel.startswith(".well-known/") else f"{WELL_KNOWN}/{rel}"
        status, _, body = request(server, url)
        assert status == 200, url
        if rel.endswith("index.json"):  # only where the index says the folders are differs
            served, written = json.loads(body)["skills"], json.loads(path.read_bytes())["skills"]
            for entry in written:
                entry["url"] = entry["url"].removeprefix("../../")
            assert served == written
        else:
            assert body == path.read_bytes(), url


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("skill-modbus-scan/SKILL.md", "text/markdown; charset=utf-8"),
        ("skill-modbus-scan/references/register-template.csv", "text/csv; charset=utf-8"),
        ("skill-modbus-scan/config/collector.yaml", "application/yaml"),
        ("skill-modbus-scan/scripts/scan.py", "text/plain; charset=utf-8"),
        ("device-acme-ac300/wiring.png", "image/png"),
    ],
)
def test_skill_files_with_inert_types_and_etags(
    server: tuple[str, int], path: str, media_type: str
) -> None:
    status, headers, body = request(server, f"{WELL_KNOWN}/{path}")
    assert status == 200
    assert headers["content-type"] == media_type
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-cache"
    assert headers["etag"] == f'"{hashlib.sha256(body).hexdigest()}"'
    again = request(server, f"{WELL_KNOWN}/{path}", {"If-None-Match": headers["etag"]})
    assert again[0] == 304 and again[2] == b""
    head = request(server, f"{WELL_KNOWN}/{path}", method="HEAD")
    assert (head[0], head[2]) == (200, b"")


@pytest.mark.parametrize(
    "path",
    [
        "nope/SKILL.md",
        "skills-overview.tar.gz",  # a skill without attached files has no archive
        "skill-modbus-scan",
        "skill-modbus-scan/",
        "skill-modbus-scan/scripts",
        "skill-modbus-scan/../skills-overview/SKILL.md",
        "skill-modbus-scan/%2e%2e/skills-overview/SKILL.md",
        "device-acme-ac300/../../bundle/manifest.json",
        "index.json/x",
        "",
    ],
)
def test_anything_else_is_not_there(server: tuple[str, int], path: str) -> None:
    status, _, body = request(server, f"{WELL_KNOWN}/{path}")
    assert status == 404, path
    assert body == b"no such skill or file\n"


def test_attached_files_never_get_an_active_type(make_library: MakeLibrary, tmp_path: Path) -> None:
    config = make_library(
        {
            "page/index.md": VALID_DOC.format(id="page"),
            "page/view.html": "<script>alert(1)</script>",
            "page/logo.svg": "<svg onload='alert(1)'/>",
        }
    )
    build(load_config(config), tmp_path / "bundle", KEY)
    with live(create_app(Library.open(tmp_path / "bundle", [PUBLIC]))) as address:
        types = {
            name: request(address, f"{WELL_KNOWN}/page/{name}")[1]["content-type"]
            for name in ("view.html", "logo.svg")
        }
    assert types == {
        "view.html": "text/plain; charset=utf-8",
        "logo.svg": "application/octet-stream",
    }


def test_a_token_guards_the_skills_like_the_bundles(skills_bundle: Path) -> None:
    app = create_app(Library.open(skills_bundle, [PUBLIC]), token=TOKEN)
    with live(app) as address:
        for path in ("index.json", "skills-overview/SKILL.md", "skill-modbus-scan.tar.gz"):
            status, refusal = get_json(address, f"{WELL_KNOWN}/{path}")
            assert (status, refusal["error"]["code"]) == (401, "unauthorized")
            status, _, _ = request(
                address, f"{WELL_KNOWN}/{path}", {"Authorization": f"Bearer {TOKEN}"}
            )
            assert status == 200


def test_several_libraries_share_one_index(skills_bundle: Path, plant_floor_bundle: Path) -> None:
    shelf = Shelf(
        [Library.open(skills_bundle, [PUBLIC]), Library.open(plant_floor_bundle, [PUBLIC])]
    )
    with live(create_app(shelf)) as address:
        status, index = get_json(address, f"{WELL_KNOWN}/index.json")
        assert status == 200
        names = [e["name"] for e in index["skills"]]
        assert names == sorted(names) and len(names) == 9
        assert {"plant-floor-device-acme-ac200", "plant-skills-skill-modbus-scan"} <= set(names)
        status, _, body = request(address, f"{WELL_KNOWN}/plant-floor-guide-about/SKILL.md")
        assert status == 200
        assert b'\nname: "plant-floor-guide-about"\n' in body


def test_docs_that_cannot_be_skills_answer_an_error(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    config = make_library({"a.md": VALID_DOC.format(id="x.y"), "b.md": VALID_DOC.format(id="x_y")})
    build(load_config(config), tmp_path / "bundle", KEY)
    with live(create_app(Library.open(tmp_path / "bundle", [PUBLIC]))) as address:
        status, answer = get_json(address, f"{WELL_KNOWN}/index.json")
        assert status == 500
        assert answer["error"] == {
            "code": "skills_unavailable",
            "message": "cannot be written as Agent Skills: "
            "docs 'x.y' and 'x_y' both map to the skill name 'x-y'",
        }
        status, _ = get_json(address, "/api/v1/status")
        assert status == 200  # the rest of the server is untouched
