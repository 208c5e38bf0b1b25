"""`llms-full.txt`: every doc's body in catalog order at the site's root (never in the
bundle), its header values escaped as in llms.txt; and every link of llms.txt and
llms-full.txt leads to a file of the built site, with directory URLs and without."""

from __future__ import annotations

import json
import shutil
import urllib.parse
from pathlib import Path

import pytest
import yaml
from conftest import KEY, KEY_PEM, ROOT
from hostile_site import SITE_NAME, write_library
from markdown_it import MarkdownIt
from site_helpers import mkdocs_build

from handbook.bundle.catalog import Catalog
from handbook.bundle.local import open_bundle
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.write.llms import llms_full_txt

HEAD = """\
# Plant floor handbook (example)

> Protocol guides, device register maps and procedures for a small plant-floor integration team.

Library `plant-floor` version 1.0.0, 6 docs. Every doc follows in full, in catalog order; \
llms.txt lists them by kind, and the signed bundle beside this file holds the same docs for agents.

---

doc device.acme.ac200 · kind device · \
[Acme AC-200 air compressor (fictional)]({url}) (unverified)

> Register map, connection defaults and a collector snippet for the fictional Acme AC-200 \
screw compressor over Modbus TCP.

# Acme AC-200 air compressor (fictional)
"""


def built_site(root: Path, directory_urls: bool) -> Path:
    shutil.copytree(ROOT / "examples" / "plant-floor", root, ignore=shutil.ignore_patterns("build"))
    config = yaml.safe_load((root / "mkdocs.yml").read_text())
    config["use_directory_urls"] = directory_urls
    config["theme"]["font"] = False  # no fonts from the network
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    mkdocs_build(root, key_pem=KEY_PEM)
    return root / "build" / "site"


@pytest.fixture(scope="module", params=[True, False], ids=["directory-urls", "file-urls"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_site(tmp_path_factory.mktemp("plant-site") / "library", request.param)


def links(markdown: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [
        str(child.attrs["href"])
        for token in tokens
        if token.children
        for child in token.children
        if child.type == "link_open"
    ]


def test_llms_full_holds_every_body_in_catalog_order(site: Path) -> None:
    text = (site / "llms-full.txt").read_text(encoding="utf-8")
    catalog = Catalog.from_dict(json.loads((site / "bundle" / "catalog.json").read_bytes()))
    bundle = open_bundle(site / "bundle", allow_unsigned=True)
    assert text.startswith(HEAD.format(url=catalog.docs[0].url))
    position = 0
    for doc in catalog.docs:
        header = text.index(f"\ndoc {doc.id} · kind {doc.kind} · ", position)
        body = bundle.read(doc.content).decode("utf-8")
        position = text.index(body, header)
        assert text[header:position].count("\n---\n") == 0  # its own header, then its body
    assert text.count("\n---\n\ndoc ") == len(catalog.docs)


def test_llms_full_is_published_with_the_site_not_the_bundle(site: Path) -> None:
    assert (site / "llms-full.txt").is_file() and (site / "llms.txt").is_file()
    assert not (site / "bundle" / "llms-full.txt").exists()
    manifest = json.loads((site / "bundle" / "manifest.json").read_bytes())
    assert "llms-full.txt" not in manifest["signed"]["files"]


@pytest.mark.parametrize("name", ["llms.txt", "llms-full.txt"])
def test_every_link_leads_to_a_file_of_the_site(site: Path, name: str) -> None:
    found = links((site / name).read_text(encoding="utf-8"))
    assert len(found) >= 6
    for href in found:
        assert not urllib.parse.urlsplit(href).scheme, href
        target = site / urllib.parse.unquote(href)
        if href.endswith("/"):
            target = target / "index.html"
        assert target.is_file(), f"{name}: {href}"


def test_llms_full_header_values_are_one_line_and_read_as_written(tmp_path: Path) -> None:
    """The hostile library's titles, kinds and summaries try to add headings, links and
    script; each doc's header is still one line naming the doc and one quoted summary."""
    config = load_config(write_library(tmp_path))
    bundle = build(config, tmp_path / "bundle", KEY).bundle
    text = llms_full_txt(bundle, config)
    md = MarkdownIt("commonmark")
    tokens = md.parse(text)
    headings = [tokens[n + 1].content for n, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [SITE_NAME]  # the bodies have none: no value made one
    lines = text.splitlines()
    for doc in bundle.catalog.docs:
        at = next(n for n, line in enumerate(lines) if line.startswith(f"doc {doc.id} · "))
        note = "" if doc.verified == "verified" else f" ({doc.verified})"
        assert shown(md, lines[at]) == (
            f"doc {doc.id} · kind {doc.kind} · {doc.title}{note}",
            [doc.url],
        )
        assert lines[at + 2].startswith("> ")
        assert shown(md, lines[at + 2]) == (" ".join(doc.summary.split()), [])
    assert sorted(links(text)) == sorted(doc.url for doc in bundle.catalog.docs)


def shown(md: MarkdownIt, line: str) -> tuple[str, list[str]]:
    """The text a reader sees of one line of markdown, and the links in it."""
    children = [c for t in md.parse(line) if t.type == "inline" for c in t.children or []]
    text = "".join(c.content for c in children if c.type in ("text", "code_inline"))
    return text, [str(c.attrs["href"]) for c in children if c.type == "link_open"]
