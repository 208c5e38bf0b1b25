"""Markdown attached to a folder doc (`references/*.md`, `agents/*.md`).

Its `##` sections are in the catalog, as byte ranges of the file; `resource(id, path,
section=…)` reads one, and `offset` reads any text file in parts. It is searched section
by section: a hit names the doc's id, the file's path and the section's anchor. Its
entries are in index.json (lunr scores them as we do) and in arrays of search.bin that an
older reader does not know, so it never takes them for ranges of a doc's content.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import KEY, PUBLIC, MakeLibrary, run_cli
from lunr.index import Index

from handbook import Library
from handbook.bundle.canonical import dumps
from handbook.bundle.signing import MANIFEST_TAG, sign
from handbook.search.file_format import MAGIC, RESOURCE
from handbook.search.index import SearchIndex
from handbook.search.query import parse
from handbook.serve.mcp import build_server
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.write.sections import MAX_ATTACHED_SECTIONS

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


def test_a_heading_bomb_is_capped_and_still_searched(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    bomb = "".join(f"## h{n}\n\nword{n}\n\n" for n in range(3 * MAX_ATTACHED_SECTIONS))
    bomb += "the last words (platypus)\n"
    lib = built(make_library, tmp_path, **{"skills/scan-kit/references/bomb.md": bomb})
    sections = attached(lib, "references/bomb.md").sections
    assert len(sections) == MAX_ATTACHED_SECTIONS
    last = sections[-1]
    assert last.title == f"h{MAX_ATTACHED_SECTIONS - 1}" and last.end == len(bomb.encode())
    hit = lib.search("platypus")["hits"][0]
    assert (hit["resource"], hit["anchor"]) == ("references/bomb.md", last.anchor)
    assert read_section(lib, "references/bomb.md", last.anchor).endswith("(platypus)\n")


# -- read one section, or in parts -------------------------------------------------------------


def test_a_section_of_an_attached_file_is_read_by_title_or_anchor(lib: Library) -> None:
    part = lib.resource(DOC, "references/guide.md", section="exception-codes")
    assert part["content"] == EXCEPTIONS and part["offset"] == 0
    assert part["section"] == {"title": "Exception codes", "anchor": "exception-codes", "level": 2}
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
    hit = lib.search("aardwolf")["hits"][0]
    assert (hit["resource"], hit["anchor"]) == ("references/big.md", "tables")
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


# -- searched section by section ---------------------------------------------------------------


def test_a_phrase_only_in_a_reference_is_found_and_read_back(lib: Library) -> None:
    hit = lib.search("zanzibar")["hits"][0]
    assert {k: hit[k] for k in ("id", "resource", "section", "anchor")} == {
        "id": DOC,
        "resource": "references/guide.md",
        "section": "Exception codes",
        "anchor": "exception-codes",
    }
    assert "(zanzibar)" in hit["excerpt"]
    part = lib.resource(hit["id"], hit["resource"], section=hit["anchor"])
    assert part["content"] == EXCEPTIONS
    overview = lib.search("turbocharger")["hits"][0]
    assert (overview["resource"], overview["section"], overview["anchor"]) == (
        "references/guide.md",
        None,
        None,
    )
    assert lib.search("wallaby")["hits"][0]["resource"] == "agents/helper.md"
    assert "resource" not in lib.search("holding")["hits"][0]  # the doc's own text
    assert lib.search("okapi")["count"] == 0  # a file that is not UTF-8 is not searched


def test_hits_and_sources_say_which_file(lib: Library) -> None:
    asked = lib.ask("Which devices answer exception code 2 for single registers?")
    assert asked["evidence_state"] == "grounded"
    source = asked["sources"][0]
    assert (source["resource"], source["anchor"]) == ("references/guide.md", "exception-codes")
    assert "references/guide.md" in asked["answer"]
    listed = lib.list(query="zanzibar")["docs"]
    assert [d["id"] for d in listed] == [DOC]
    collected = lib.collect(query="quokka")["items"][0]
    assert collected["id"] == DOC and collected["whole"] is True  # the doc, not the file


QUERIES = ["zanzibar", "registers", "exception code", "blocks", "quok*", "turbochargr~1", "東京"]


def test_scores_are_lunr_scores_over_index_json(lib: Library) -> None:
    data = json.loads(gzip.decompress(lib.bundle.read("index.json.gz")))
    data["invertedIndex"].sort(key=lambda item: item[0])  # lunr.py loads code-point order
    reference = Index.load(data)
    retriever = lib.snapshot.retriever
    for query in QUERIES:
        expected = [(r["ref"], round(r["score"], 6)) for r in reference.search(query)]
        _, hits = retriever.rank(parse(query))
        ours = []
        for hit in hits:
            p = retriever.passage(hit.entry)
            place = f"/{p.resource}#{p.anchor}" if p.resource else (f"#{p.anchor}" * bool(p.anchor))
            ours.append((p.doc_id + place, round(hit.score, 6)))
        assert ours == expected, query


def without_attached_arrays(data: bytes) -> bytes:
    """search.bin as a reader sees it that knows only the arrays of the first release."""
    length = int.from_bytes(data[12:16], "little")
    header = json.loads(data[16 : 16 + length])
    header["arrays"] = {k: v for k, v in header["arrays"].items() if not k.startswith(RESOURCE)}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-(len(MAGIC) + 8 + len(text)) % 8)
    return data[:12] + len(text).to_bytes(4, "little") + text + data[16 + length :]


def test_an_older_reader_sees_the_docs_entries_only(lib: Library) -> None:
    full = lib.bundle.read("search.bin")
    assert SearchIndex(full).attached
    older = SearchIndex(without_attached_arrays(full))
    assert not older.attached and older.entries == len(older.entry_doc)
    assert max(older.groups[0].entries) < len(older.entry_doc)
    contents = {d.sha256: d.bytes for d in lib.bundle.catalog.docs}
    for entry in range(older.entries):  # every range it knows is inside a doc's content
        doc = older.entry_doc[entry]
        assert older.entry_end[entry] <= contents[older.content_sha(doc)]
    data = json.loads(gzip.decompress(lib.bundle.read("index.json.gz")))
    data["invertedIndex"].sort(key=lambda item: item[0])
    reference = Index.load(data)
    for query in QUERIES:
        expected = [round(r["score"], 6) for r in reference.search(query) if "/" not in r["ref"]]
        _, hits = older.search(parse(query))
        assert [round(h.score, 6) for h in hits] == expected, query
    assert older.search(parse("zanzibar")) == (0, [])


ODD = "references/odd #1 (draft) & ü.md"


def test_a_path_with_odd_characters(make_library: MakeLibrary, tmp_path: Path) -> None:
    text = "## Über #1\n\nA file with an odd name (numbat).\n"
    lib = built(make_library, tmp_path, **{f"skills/scan-kit/{ODD}": text})
    hit = lib.search("numbat")["hits"][0]
    assert (hit["resource"], hit["anchor"]) == (ODD, "uber-1")
    assert lib.resource(DOC, hit["resource"], section=hit["anchor"])["content"] == text
    ref = json.loads(gzip.decompress(lib.bundle.read("index.json.gz")))["fieldVectors"]
    assert f"title/{DOC}/{ODD}#uber-1" in {name for name, _ in ref}


def test_script_in_an_attached_file_is_shown_as_text(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    evil = (
        "## <script>alert(1)</script> [red]boom[/red]\n\n"
        '<img src=x onerror="alert(2)"> [link](javascript:alert(3)) (kangaroo)\n'
    )
    lib = built(make_library, tmp_path, **{"skills/scan-kit/agents/evil.md": evil})
    hit = lib.search("kangaroo")["hits"][0]
    assert hit["section"] == "alert(1) [red]boom[/red]"  # tags are no heading text
    assert hit["excerpt"].startswith('<img src=x onerror="alert(2)">')  # as written, in JSON
    run = run_cli("search", "kangaroo", "--bundle", str(tmp_path / "bundle"), "--key", PUBLIC)
    assert run.exit_code == 0
    assert "alert(1) [red]boom[/red]" in run.stdout  # rich markup escaped, not applied
    assert '<img src=x onerror="alert(2)">' in run.stdout
    shown = run_cli(
        "resource", DOC, "agents/evil.md", "--section", "alert1-redboomred",
        "--bundle", str(tmp_path / "bundle"), "--key", PUBLIC,
    )  # fmt: skip
    assert shown.exit_code == 0 and shown.stdout == evil
