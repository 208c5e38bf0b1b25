"""`mkdocs build` (and `properdocs build`) with the `handbook` plugin, in fresh processes:
the same findings as `handbook check`, the same bundle as `handbook build`, and pages
that carry the header card, the catalog, the bundle and llms.txt."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from handbook.bundle.local import open_bundle
from handbook.bundle.signing import generate_private_key

EPOCH = "1767225600"  # 2026-01-01T00:00:00Z


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(a private key file, its public key)."""
    pem, public = generate_private_key()
    path = tmp_path_factory.mktemp("key") / "handbook.key"
    path.write_bytes(pem)
    return path, str(public)


def copy_library(source: Path, target: Path) -> Path:
    """A library's mkdocs.yml and docs/ (and any validator module) copied to `target`."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("build", "site", "__pycache__"))
    return target / "mkdocs.yml"


def run(
    tool: str, *args: str, cwd: Path, key: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDBOOK_SIGNING_KEY")}
    environment.update(SOURCE_DATE_EPOCH=EPOCH, NO_MKDOCS_2_WARNING="1", **env)
    if key is not None:
        environment["HANDBOOK_SIGNING_KEY"] = key.read_text()
    return subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def project(tmp_path: Path) -> Path:
    """The project's own mkdocs.yml and docs, copied."""
    (tmp_path / "project").mkdir()
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "project" / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "project" / "docs")
    return tmp_path / "project" / "mkdocs.yml"


def test_project_docs_build_strictly_without_warnings(
    tmp_path: Path, key: tuple[Path, str]
) -> None:
    config = project(tmp_path)
    result = run("mkdocs", "build", "--strict", cwd=config.parent, key=key[0])
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    site = config.parent / "build" / "site"
    page = (site / "reference" / "configuration" / "index.html").read_text()
    assert 'class="hb-card" data-doc-id="handbook.reference.configuration"' in page
    assert "hb-badge--verified" in page
    assert "---\nid:" not in page and "kind: reference" not in page  # no raw frontmatter
    assert "catalog" in (site / "catalog" / "index.html").read_text().lower()
    assert (site / "llms.txt").read_bytes() == (site / "bundle" / "llms.txt").read_bytes()
    bundle = open_bundle(site / "bundle", [key[1]])
    assert bundle.signature_state == "verified"
    assert bundle.manifest.signed.library == "handbook"
    assert (site / "assets" / "handbook" / "handbook.css").exists()


def test_every_doc_page_links_to_its_verified_markdown(
    tmp_path: Path, key: tuple[Path, str]
) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    result = run("mkdocs", "build", "--strict", cwd=config.parent, key=key[0])
    assert result.returncode == 0, result.stderr
    site = config.parent / "build" / "site"
    bundle = open_bundle(site / "bundle", [key[1]])
    for doc in bundle.catalog.docs:
        page = (
            site / doc.source.replace(".md", ".html")
            if doc.source.endswith("index.md")
            else site / doc.source.removesuffix(".md") / "index.html"
        )
        html = page.read_text()
        assert f'data-doc-id="{doc.id}"' in html
        found = re.search(r'class="hb-links"[^>]*><a href="([^"]+)"', html)
        assert found, f"{page}: no raw markdown link"
        href = found.group(1)
        target = (page.parent / href).resolve()
        assert target.read_bytes() == bundle.read(doc.content)
    # Material's search indexes the card's summary and keywords, not its buttons and facts
    index = json.loads((site / "search" / "search_index.json").read_text())
    page_text = " ".join(
        d["text"] for d in index["docs"] if d["location"].startswith("devices/acme-ac200/")
    )
    assert "ac200, ac-200, compressor" in page_text
    assert "copy id" not in page_text and "equipment type" not in page_text


def test_same_bundle_as_handbook_build(tmp_path: Path, key: tuple[Path, str]) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    with_includes(config)
    cli = subprocess.run(
        [
            str(Path(sys.executable).parent / "handbook"),
            "build",
            "--config",
            str(config),
            "--out",
            str(tmp_path / "cli-bundle"),
            "--key",
            str(key[0]),
        ],
        cwd=config.parent,
        env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    site_build = run("mkdocs", "build", cwd=config.parent, key=key[0])
    assert site_build.returncode == 0, site_build.stderr
    expected = files_of(tmp_path / "cli-bundle")
    assert expected, "the CLI wrote no bundle"
    assert files_of(config.parent / "build" / "bundle") == expected
    assert files_of(config.parent / "build" / "site" / "bundle") == expected
    included = [name for name, data in expected.items() if b"Isolate the supply first." in data]
    assert len([n for n in included if n.startswith("content/")]) == 6  # every doc's body


def with_includes(config: Path) -> None:
    """Every page of the library gets a snippet appended (`auto_append`)."""
    (config.parent / "parts").mkdir()
    (config.parent / "parts" / "safety.md").write_text("Isolate the supply first.\n")
    config.write_text(
        config.read_text()
        + "markdown_extensions:\n"
        + "  - pymdownx.snippets:\n      base_path: [parts]\n      auto_append: [safety.md]\n"
    )


def files_of(folder: Path) -> dict[str, bytes]:
    root = folder.resolve()
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_hostile_doc_fails_with_the_findings_of_handbook_check(tmp_path: Path) -> None:
    config = copy_library(FIXTURES / "hostile", tmp_path / "hostile")
    result = run("mkdocs", "build", cwd=config.parent)
    assert result.returncode != 0
    expected = [
        line
        for line in (FIXTURES / "hostile" / "expected.txt").read_text().splitlines()
        if ": HB" in line and "(notice)" not in line  # notices are debug lines, then a count
    ]
    assert expected
    logged = result.stderr
    assert "handbook: 1 notice (`handbook check --explain` lists them)" in logged
    for line in expected:
        assert line in logged, f"missing from mkdocs' log: {line}"
    assert "nothing built" in logged
    assert not (config.parent / "build" / "bundle").exists()


def test_warnings_fail_only_strict_builds(tmp_path: Path, key: tuple[Path, str]) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    doc = config.parent / "docs" / "guides" / "commissioning.md"
    doc.write_text(
        doc.read_text() + "\n" + "word " * 2500
    )  # over the 12,000-character warning limit
    lenient = run("mkdocs", "build", cwd=config.parent, key=key[0])
    assert lenient.returncode == 0, lenient.stderr
    assert "HB401 (warning)" in lenient.stderr
    strict = run("mkdocs", "build", "--strict", cwd=config.parent, key=key[0])
    assert strict.returncode != 0
    assert "HB401 (warning)" in strict.stderr


def test_strict_build_refuses_to_be_unsigned(tmp_path: Path) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    result = run("mkdocs", "build", "--strict", cwd=config.parent)
    assert result.returncode != 0
    assert "no signing key" in result.stderr
    unsigned = run("mkdocs", "build", cwd=config.parent)
    assert unsigned.returncode == 0, unsigned.stderr
    assert "unsigned" in unsigned.stderr
    assert "UNSIGNED" not in unsigned.stderr  # it replaced nothing signed


def test_an_unsigned_build_over_a_signed_bundle_warns_loudly(
    tmp_path: Path, key: tuple[Path, str]
) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    assert run("mkdocs", "build", cwd=config.parent, key=key[0]).returncode == 0
    unsigned = run("mkdocs", "build", cwd=config.parent)
    assert unsigned.returncode == 0, unsigned.stderr
    assert "WARNING" in unsigned.stderr and "replaces it with an UNSIGNED one" in unsigned.stderr
    refused = run("mkdocs", "build", "--strict", cwd=config.parent)
    assert refused.returncode != 0


def test_rebuilds_swap_the_published_bundle(tmp_path: Path, key: tuple[Path, str]) -> None:
    """`bundle_dir` is a symlink to a version folder; each build swaps it, never nests."""
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    doc = config.parent / "docs" / "guides" / "commissioning.md"
    published = config.parent / "build" / "bundle"
    revisions = []
    for n in range(3):
        doc.write_text(doc.read_text() + f"\nEdit {n}.\n")
        result = run("mkdocs", "build", "--strict", cwd=config.parent, key=key[0])
        assert result.returncode == 0, result.stderr
        assert published.is_symlink()
        revisions.append(open_bundle(published, [key[1]]).manifest.signed_bytes)
    assert len(set(revisions)) == 3
    versions = sorted(p.name for p in (config.parent / "build" / "bundle.versions").iterdir())
    assert len(versions) == 2 and not any(
        name.endswith(".versions") for name in versions
    )  # the new one and the one before


def test_configured_key_file_and_bundle_dir(tmp_path: Path, key: tuple[Path, str]) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    shutil.copy(key[0], config.parent / "site.key")
    (config.parent / "site.key").chmod(0o600)  # a key others may read draws a warning
    text = config.read_text().replace(
        "      library: plant-floor",
        "      library: plant-floor\n      signing_key: site.key\n      bundle_dir: out/kb",
    )
    config.write_text(text)
    result = run("mkdocs", "build", "--strict", cwd=config.parent)
    assert result.returncode == 0, result.stderr
    assert open_bundle(config.parent / "out" / "kb", [key[1]]).signature_state == "verified"


def test_configuration_errors_name_their_line(tmp_path: Path) -> None:
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    config.write_text(config.read_text().replace("kind: [device, protocol, guide]", "kind: []"))
    result = run("mkdocs", "build", cwd=config.parent)
    assert result.returncode != 0
    assert (
        "mkdocs.yml:" in result.stderr
        and "HB001 handbook.vocab.kind: must be a non-empty list of strings" in result.stderr
    )


def test_properdocs_builds_an_example_library(tmp_path: Path, key: tuple[Path, str]) -> None:
    pytest.importorskip("properdocs", reason="ProperDocs is installed by the test extra")
    config = copy_library(ROOT / "examples" / "plant-floor", tmp_path / "lib")
    result = run("properdocs", "build", "--strict", cwd=config.parent, key=key[0])
    assert result.returncode == 0, result.stderr
    site = config.parent / "build" / "site"
    assert (
        'data-doc-id="device.acme.ac200"'
        in (site / "devices" / "acme-ac200" / "index.html").read_text()
    )
    assert open_bundle(site / "bundle", [key[1]]).signature_state == "verified"
