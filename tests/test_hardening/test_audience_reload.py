"""A doc moved to a narrower audience, published and reloaded under load.

The access example is built twice: A as written, B with the public guide `guide.reset`
moved to `staff`. Clients with a public token and a staff token hammer list, search and
get over HTTP while the published bundles of every audience are swapped between A and B
and each library reloads. Every answer must be exactly what one bundle of the asker's
audience gives, never a mix; right after the public library's reload to B returns, the
public answers no longer name the guide (and after the swap back they do again), while
staff reads it throughout.
"""

from __future__ import annotations

import json
import shutil
import threading
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, get_json, live
from test_reload_consistency import point

from handbook import Library
from handbook.access.principals import Principals, add_token
from handbook.cli.serving import by_audience
from handbook.serve.http import create_app
from handbook.tools.dispatch import call
from handbook.tools.table import BY_VERB
from handbook_build import load_config
from handbook_build.pipeline import build

pytest.importorskip("uvicorn")

EXAMPLE = ROOT / "examples" / "access"
MOVED = "guide.reset"
SWAPS = 12
CLIENTS = 4
PATHS = [
    "/api/v1/list",
    "/api/v1/search?" + urllib.parse.urlencode({"query": "reset the controller"}),
    "/api/v1/get?" + urllib.parse.urlencode({"doc_id": MOVED}),
]
FOLDERS = {"public": "bundle", "staff": "bundles/staff", "customer:acme": "bundles/customer-acme"}


def build_version(tmp_path: Path, label: str, moved: bool) -> Path:
    root = tmp_path / label
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build"))
    config = root / "mkdocs.yml"
    if moved:
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace("version: 1.0.0", "version: 1.1.0"), encoding="utf-8")
        guide = root / "docs" / "guides" / "reset.md"
        text = guide.read_text(encoding="utf-8")
        guide.write_text(text.replace("\n---\n", "\naudience: staff\n---\n", 1), encoding="utf-8")
        index = root / "docs" / "index.md"  # a public link to a staff doc is an error
        text = index.read_text(encoding="utf-8").replace("(guides/reset.md)", "")
        index.write_text(
            text.replace("[resetting a pump controller]", "resetting"), encoding="utf-8"
        )
    build(load_config(config), root / "build" / "bundle", None)
    return root / "build"


def expected(folder: Path) -> dict[str, Any]:
    """path -> the answer of this bundle alone, as JSON gives it back."""
    library = Library.open(folder, allow_unsigned=True)
    out = {}
    for path in PATHS:
        route, _, query = path.partition("?")
        tool = BY_VERB[route.rsplit("/", 1)[1]]
        arguments = dict(urllib.parse.parse_qsl(query))
        out[path] = json.loads(json.dumps(call(library, tool.name, arguments)))
    return out


def names_moved(answer: dict[str, Any]) -> bool:
    return MOVED in json.dumps(answer)


def test_a_doc_moved_to_a_narrower_audience_leaves_at_the_swap(tmp_path: Path) -> None:
    builds = {"A": build_version(tmp_path, "A", False), "B": build_version(tmp_path, "B", True)}
    answers = {
        (audience, label): expected(builds[label] / folder)
        for audience, folder in FOLDERS.items()
        for label in builds
    }
    assert names_moved(answers["public", "A"]["/api/v1/list"])
    assert not any(names_moved(a) for a in answers["public", "B"].values() if "found" not in a)
    assert answers["public", "B"]["/api/v1/get?doc_id=guide.reset"]["found"] is False
    assert all(names_moved(answers["staff", label]["/api/v1/list"]) for label in builds)

    published = tmp_path / "published"
    published.mkdir()
    links = {audience: published / audience.replace(":", "-") for audience in FOLDERS}
    for audience, folder in FOLDERS.items():
        point(links[audience], builds["A"] / folder, "first")
    tokens = tmp_path / "tokens"
    made = {"web": add_token(tokens, "web"), "ops": add_token(tokens, "ops", "staff")}
    audience_of = {"web": "public", "ops": "staff"}
    principals = Principals.load(tokens)
    libraries = {str(link): Library.open(link, allow_unsigned=True) for link in links.values()}
    router = by_audience(libraries, principals)

    stop = threading.Event()
    seen: Counter[tuple[str, str]] = Counter()
    mixed: list[str] = []
    lock = threading.Lock()

    def client(name: str, address: tuple[str, int]) -> None:
        auth = {"Authorization": f"Bearer {made[name]}"}
        audience = audience_of[name]
        while not stop.is_set():
            for path in PATHS:
                status, body = get_json(address, path, **auth)
                label = next(
                    (lb for lb in builds if body == answers[audience, lb][path]),
                    None,
                )
                with lock:
                    if label is None:
                        mixed.append(f"{name} {path}: HTTP {status} {json.dumps(body)[:300]}")
                    else:
                        seen[name, label] += 1

    with live(create_app(router, principals=principals)) as address:
        threads = [
            threading.Thread(target=client, args=(name, address), daemon=True)
            for name in list(made) * (CLIENTS // 2)
        ]
        for thread in threads:
            thread.start()
        try:
            for swap in range(SWAPS):
                label = "B" if swap % 2 == 0 else "A"
                for audience, folder in FOLDERS.items():
                    point(links[audience], builds[label] / folder, f"{swap}")
                for library in libraries.values():
                    library.reload()
                # at the swap: the very next public answer is the new bundle's
                auth = {"Authorization": f"Bearer {made['web']}"}
                status, body = get_json(address, PATHS[0], **auth)
                assert (status, body) == (200, answers["public", label][PATHS[0]])
                assert names_moved(body) is (label == "A")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
    assert mixed == [], "\n".join(mixed[:5])
    assert all(seen[name, label] > 0 for name in made for label in builds), seen
