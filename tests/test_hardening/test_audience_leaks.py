"""Small leaks to a public principal (issue 25, items 9 and 13).

The access example, with two more declared vocabularies (`clearance: [open, secret]`,
which the public guide and the staff procedure both use, and `shift: [night, day]`,
which only the staff procedure uses), is built and served to three audiences through an
`AudienceRouter`. A public token then reads everything that describes the library: the
API index, the OpenAPI document, the bundle's `tools.json` and catalog (on disk and as
served), and the status. None may name what only another audience's docs have — the
kind `procedure`, the value `secret`, the field `shift` — nor a path of the server's
disk. The agent-skills index, asked for by audiences in turn, is made once per
audience's bundle (again only after a reload), and never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import ROOT, get_json, live, request

from handbook import Library
from handbook.access.principals import Principals, add_token
from handbook.libraries.audiences import AudienceRouter
from handbook.serve.http import create_app
from handbook.skills import export as skills_export
from handbook_build import load_config
from handbook_build.pipeline import build

pytest.importorskip("uvicorn")

EXAMPLE = ROOT / "examples" / "access"
FOLDERS = {"public": "bundle", "staff": "bundles/staff", "customer:acme": "bundles/customer-acme"}
TOKENS = {"web": None, "ops": "staff", "acme-bot": "customer:acme"}
STAFF_ONLY = ["procedure", "secret", "shift", "night"]
"""Declared in the configuration, used by the staff procedure only."""
DESCRIBING = ["/api/v1/", "/api/v1/openapi.json", "/bundle/tools.json", "/bundle/catalog.json"]


class Served(NamedTuple):
    address: tuple[str, int]
    tokens: dict[str, str]
    libraries: dict[str, Library]
    built: Path

    def get(self, name: str, path: str) -> tuple[int, bytes]:
        status, _, body = request(
            self.address, path, {"Authorization": f"Bearer {self.tokens[name]}"}
        )
        return status, body


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, path
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("leaks") / "access"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    _edit(
        root / "mkdocs.yml",
        "kind: [guide, procedure, note]",
        "kind: [guide, procedure, note]\n        clearance: [open, secret]\n        shift: [night, day]",
    )
    _edit(root / "docs" / "guides" / "reset.md", "\n---\n", "\nclearance: open\n---\n")
    _edit(
        root / "docs" / "staff" / "override.md",
        "audience: staff\n",
        "audience: staff\nclearance: secret\nshift: night\n",
    )
    build(load_config(root / "mkdocs.yml"), root / "build" / "bundle", None)
    return root / "build"


@pytest.fixture
def served(built: Path, tmp_path: Path) -> Iterator[Served]:
    tokens_file = tmp_path / "tokens"
    tokens = {name: add_token(tokens_file, name, audience) for name, audience in TOKENS.items()}
    principals = Principals.load(tokens_file)
    libraries = {
        audience: Library.open(built / folder, allow_unsigned=True)
        for audience, folder in FOLDERS.items()
    }
    router = AudienceRouter(libraries, principals)
    with live(create_app(router, principals=principals)) as address:
        yield Served(address, tokens, libraries, built)


def _kinds(index: dict[str, Any]) -> list[str]:
    return list(index["context"]["kinds"])


def test_a_public_token_reads_no_value_only_another_audience_s_docs_have(
    served: Served,
) -> None:
    for path in DESCRIBING:
        status, body = served.get("web", path)
        assert status == 200, path
        assert [w for w in STAFF_ONLY if w.encode() in body.lower()] == [], path
    index = json.loads(served.get("web", "/api/v1/")[1])
    assert _kinds(index) == ["guide"]
    assert index["context"]["filters"]["clearance"] == ["open"]
    catalog = json.loads(served.get("web", "/bundle/catalog.json")[1])["library"]
    assert catalog["vocab"] == {
        "clearance": ["open"],
        "kind": ["guide"],
        "verified": ["verified", "field_tested", "unverified"],
    }
    assert catalog["list_fields"] == ["clearance"]


def test_each_audience_s_vocabulary_is_its_own_docs(served: Served) -> None:
    """Staff reads the procedure and its values, but not acme's kind; acme the reverse."""
    ops = json.loads(served.get("ops", "/api/v1/")[1])
    acme = json.loads(served.get("acme-bot", "/api/v1/")[1])
    assert _kinds(ops) == ["guide", "procedure"] and _kinds(acme) == ["guide", "note"]
    assert ops["context"]["filters"]["shift"] == ["night"]
    assert ops["context"]["filters"]["clearance"] == ["open", "secret"]
    openapi = json.loads(served.get("acme-bot", "/api/v1/openapi.json")[1])
    listing = openapi["paths"]["/api/v1/list"]["get"]
    kind = next(p for p in listing["parameters"] if p["name"] == "kind")
    assert kind["schema"]["enum"] == ["guide", "note", "any"]
    assert "kinds: guide, note)" in listing["description"]


def test_the_bundles_on_disk_hold_no_other_audience_s_vocabulary(built: Path) -> None:
    """What `/bundle/` serves is the signed files: the cause is the build's."""
    for name in ("catalog.json", "tools.json", "llms.txt"):
        data = (built / "bundle" / name).read_bytes().lower()
        assert [w for w in STAFF_ONLY if w.encode() in data] == [], name
    acme = json.loads((built / "bundles" / "customer-acme" / "catalog.json").read_bytes())
    assert acme["library"]["vocab"]["kind"] == ["guide", "note"]
    assert "shift" not in acme["library"]["vocab"] and acme["library"]["list_fields"] == [
        "clearance"
    ]


def test_status_names_no_path_of_the_server_s_disk(built: Path, tmp_path: Path) -> None:
    """Not where the bundle lies, not in a reload error about a bundle that went away,
    not in the error about an unreadable publish report."""
    folder = tmp_path / "srv" / "handbook-public"
    shutil.copytree(built / "bundle", folder)
    report = tmp_path / "srv" / "reports" / "publish.json"
    library = Library.open(folder, allow_unsigned=True, publish_report=report)
    tokens_file = tmp_path / "tokens"
    token = add_token(tokens_file, "web")
    principals = Principals.load(tokens_file)
    folder.rename(tmp_path / "srv" / "moved")
    assert library.reload()["reloaded"] is False  # the old bundle keeps serving
    router = AudienceRouter({"public": library}, principals)
    with live(create_app(router, principals=principals)) as address:
        status, body = get_json(address, "/api/v1/status", Authorization=f"Bearer {token}")
    assert status == 200
    text = json.dumps(body)
    assert "/srv" not in text and str(tmp_path) not in text, text
    assert "path" not in body
    assert body["last_reload_error"].startswith("access-example@public: ")
    assert body["publish"]["error"].startswith("publish report: cannot read it")


class Counted:
    """Calls of one function of `handbook.skills.export`, and whether any ran on a
    thread that runs an event loop."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.calls, self.on_loop = 0, 0
        real = getattr(skills_export, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.on_loop += _on_event_loop()
            return real(*args, **kwargs)

        monkeypatch.setattr(skills_export, name, counted)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_the_skills_index_is_made_once_per_audience_and_off_the_event_loop(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    made, indexed = Counted(monkeypatch, "skills"), Counted(monkeypatch, "index")
    names: dict[str, list[str]] = {}
    for name in ["web", "ops", "web", "acme-bot", "ops", "web", "acme-bot"] * 3:
        status, body = served.get(name, "/.well-known/agent-skills/index.json")
        assert status == 200
        names[name] = [e["name"] for e in json.loads(body)["skills"]]
    assert (made.calls, indexed.calls) == (3, 3)
    assert made.on_loop == indexed.on_loop == 0
    assert names["web"] == ["guide-reset", "index"]
    assert names["ops"] == ["guide-reset", "index", "procedure-override"]
    assert names["acme-bot"] == ["guide-reset", "index", "note-acme-contract"]
    assert served.get("ops", "/.well-known/agent-skills/procedure-override/SKILL.md")[0] == 200
    assert served.get("web", "/.well-known/agent-skills/procedure-override/SKILL.md")[0] == 404
    assert made.calls == 3  # a file of a skill reuses what was made too

    assert served.libraries["staff"].reload()["reloaded"] is True  # a new bundle object
    for name in ["ops", "web", "ops", "acme-bot"]:
        assert served.get(name, "/.well-known/agent-skills/index.json")[0] == 200
    assert (made.calls, indexed.calls) == (4, 4)  # only staff's was made again
