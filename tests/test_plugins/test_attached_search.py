"""Markdown attached to a folder doc (`references/*.md`, `agents/*.md`).

Its `##` sections are in the catalog, as byte ranges of the file; `resource(id, path,
section=…)` reads one, and `offset` reads any text file in parts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import KEY, PUBLIC, MakeLibrary, run_cli

from handbook import Library
from handbook.canonical import dumps
from handbook.mcp import build_server
from handbook.signing import MANIFEST_TAG, sign
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.sections import MAX_ATTACHED_SECTIONS

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

SKILL = """\
---
id: skill.scan-kit
title: Scan kit
kind: skill
summary: Scans Modbus devices for readable registers.
---
# Scan kit

## Steps

Read holding registers in blocks.
"""
EXCEPTIONS = """\
## Exception codes

Devices that answer exception code 2 often still answer single registers (zanzibar).

```text
## not a heading, a fence
```

### Inside

Bytes before offsets count: ümlaut 東京 🚀.

"""
GUIDE = (
    "---\nname: field-guide\ndescription: The long guide to quirks.\n---\n"
    "# Field guide\n\nOverview words: turbocharger.\n\n"
    + EXCEPTIONS
    + "## Timing\n\nWait a second between blocks (quokka).\n"
)
FILES: dict[str, str | bytes] = {
    "skills/scan-kit/SKILL.md": SKILL,
    "skills/scan-kit/references/guide.md": GUIDE,
    "skills/scan-kit/agents/helper.md": "# Helper\n\nAn agent that reads registers (wallaby).\n",
    "skills/scan-kit/scripts/scan.py": "print('never run')\n",
    "skills/scan-kit/references/latin1.md": "## Caf\xe9\n\nnot UTF-8 (okapi)\n".encode("latin-1"),
}
DOC = "skill.scan-kit"


def read_section(lib: Library, path: str, section: str) -> str:
    """A section of an attached file, page by page, each answer within the bound."""
    pieces, offset = [], 0
    while True:
        part = lib.resource(DOC, path, section=section, offset=offset)
        assert part["found"] and part["response_chars"] <= 40_000
        pieces.append(part["content"])
        if "next_offset" not in part:
            return "".join(pieces)
        offset = part["next_offset"]


def built(make_library: MakeLibrary, tmp_path: Path, **extra: str | bytes) -> Library:
    config = make_library({**FILES, **extra}, vocab={"kind": ["skill"]})
    build(load_config(config), tmp_path / "bundle", KEY)
    return Library.open(tmp_path / "bundle", [PUBLIC])


@pytest.fixture
def lib(make_library: MakeLibrary, tmp_path: Path) -> Library:
    return built(make_library, tmp_path)


def attached(lib: Library, path: str) -> Any:
    doc = next(d for d in lib.bundle.catalog.docs if d.id == DOC)
    return next(r for r in doc.resources if r.path == path)


# -- attached markdown has sections ----------------------------------------------------------


def test_attached_markdown_lists_its_sections_as_byte_ranges(lib: Library) -> None:
    catalog = json.loads(lib.bundle.read("catalog.json"))
    files = {r["path"]: r for r in catalog["docs"][0]["resources"]}
    guide = files["references/guide.md"]
    assert [(s["title"], s["anchor"], s["level"]) for s in guide["sections"]] == [
        ("Exception codes", "exception-codes", 2),
        ("Timing", "timing", 2),
    ]  # the frontmatter is no setext heading, the fence no heading at all
    data = GUIDE.encode()
    assert [data[s["start"] : s["end"]] for s in guide["sections"]] == [
        EXCEPTIONS.encode(),
        b"## Timing\n\nWait a second between blocks (quokka).\n",
    ]
    assert guide["sections"][0]["chars"] == len(EXCEPTIONS)
    assert "sections" not in files["agents/helper.md"]  # markdown without `##` sections
    assert "sections" not in files["scripts/scan.py"]
    assert "sections" not in files["references/latin1.md"]  # not UTF-8: not read as text


def test_a_section_outside_its_file_is_refused(lib: Library, tmp_path: Path) -> None:
    """Even under a valid signature: the runtime slices attached files by these offsets."""
    folder = Path(shutil.copytree(lib.bundle.path, tmp_path / "copy"))
    catalog = json.loads((folder / "catalog.json").read_bytes())
    guide = next(r for r in catalog["docs"][0]["resources"] if "sections" in r)
    guide["sections"][-1]["end"] = guide["bytes"] + 1
    data = json.dumps(catalog).encode()
    (folder / "catalog.json").write_bytes(data)
    signed = json.loads((folder / "manifest.json").read_bytes())["signed"]
    signed["files"]["catalog.json"] = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    manifest = {"signed": signed, "signatures": [sign(KEY, MANIFEST_TAG, signed)]}
    (folder / "manifest.json").write_bytes(dumps(manifest))
    run = run_cli("verify", str(folder), "--key", PUBLIC)
    assert run.exit_code == 1
    assert "attaches references/guide.md with a section outside the file" in run.stderr


def test_a_heading_bomb_is_capped(make_library: MakeLibrary, tmp_path: Path) -> None:
    bomb = "".join(f"## h{n}\n\nword{n}\n\n" for n in range(3 * MAX_ATTACHED_SECTIONS))
    bomb += "the last words (platypus)\n"
    lib = built(make_library, tmp_path, **{"skills/scan-kit/references/bomb.md": bomb})
    sections = attached(lib, "references/bomb.md").sections
    assert len(sections) == MAX_ATTACHED_SECTIONS
    last = sections[-1]
    assert last.title == f"h{MAX_ATTACHED_SECTIONS - 1}" and last.end == len(bomb.encode())
    assert read_section(lib, "references/bomb.md", last.anchor).endswith("(platypus)\n")


# -- read one section, or in parts -------------------------------------------------------------


def test_a_section_of_an_attached_file_is_read_by_title_or_anchor(lib: Library) -> None:
    part = lib.resource(DOC, "references/guide.md", section="exception-codes")
    assert part["content"] == EXCEPTIONS and part["offset"] == 0
    assert part["section"] == {"title": "Exception codes", "anchor": "exception-codes"}
    assert [s["anchor"] for s in part["sections"]] == ["exception-codes", "timing"]
    assert lib.resource(DOC, "references/guide.md", section="timing")["content"] == (
        "## Timing\n\nWait a second between blocks (quokka).\n"
    )
    whole = lib.resource(DOC, "references/guide.md")
    assert whole["content"] == GUIDE and "offset" not in whole  # no part asked: all of it
    assert lib.resource(DOC, "agents/helper.md", offset=10)["content"] == (
        "An agent that reads registers (wallaby).\n"
    )


def test_reading_a_section_that_is_not_there(lib: Library) -> None:
    miss = lib.resource(DOC, "references/guide.md", section="Timeing")
    assert miss["found"] is False and miss["error"]["code"] == "unknown_section"
    assert miss["suggestions"][0] == "Timing"
    plain = lib.resource(DOC, "scripts/scan.py", section="anything")
    assert plain["found"] is False and plain["error"]["code"] == "unknown_section"


def test_a_large_file_is_read_in_parts(make_library: MakeLibrary, tmp_path: Path) -> None:
    filler = "".join(f"line {n} of the appendix, lorem ipsum dolor\n" for n in range(40_000))
    big = f"# Appendix\n\n## Tables\n\n{filler}the very end (aardwolf)\n"
    assert 1_000_000 < len(big) < 5 * 1024 * 1024  # within limits.resource_bytes
    lib = built(make_library, tmp_path, **{"skills/scan-kit/references/big.md": big})
    whole = lib.resource(DOC, "references/big.md")
    assert whole["found"] is False and whole["error"]["code"] == "too_large"
    assert "offset=0" in whole["hint"]
    assert read_section(lib, "references/big.md", "tables") == big[big.index("## Tables") :]
    bundle = str(tmp_path / "bundle")
    run = run_cli(
        "resource", DOC, "references/big.md", "-s", "tables", "--bundle", bundle, "--key", PUBLIC
    )
    assert run.stdout.startswith("## Tables\n") and len(run.stdout) < 40_000
    assert "cut: the rest follows with --offset " in run.stderr

    async def read() -> str:
        async with Client(build_server(lib)) as client:
            uri = f"handbook://test/{DOC}/references/big.md"
            return (await client.read_resource(uri)).contents[0].text  # type: ignore[union-attr]

    assert anyio.run(read) == big
