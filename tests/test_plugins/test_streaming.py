"""A build that emits its bundle as the docs are checked (`write.streaming`, issue 29)
writes exactly the bytes of one that emits from every parsed doc afterwards (`emit`),
keeps no doc's body, and leaves nothing behind when the check fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KEY, ROOT, VALID_DOC, MakeLibrary

from handbook import Library
from handbook_build import load_config, pipeline, workers
from handbook_build.errors import BuildError
from handbook_build.pipeline import build, check
from handbook_build.write.lunr_index import Entry, LunrIndex
from handbook_build.write.seal import staging
from handbook_build.write.streaming import Stream

DOC = """\
---
id: {id}
title: {title}
kind: guide
summary: About {id}.
{extra}---
# {title}

Intro of {id}, with \U0001f600 outside the BMP and é.

## First

Shared words: pump valve sensor.

### Deeper

More about {id}.

## Second

The end.
"""

TWIN = "---\nid: {id}\ntitle: Twin\nkind: guide\nsummary: s\n---\n# Twin\n\n## Body\n\nSame.\n"
SKILL = "---\nid: {id}\ntitle: Skill {id}\nkind: guide\nsummary: s\n---\n# S\n\n## Use\n\nRun it.\n"
NOTES = "# Notes\n\nIntro.\n\n## Wiring\n\nRed to A.\n\n### Colours\n\nBlue to B.\n"


def _files(out: Path) -> dict[str, bytes]:
    root = out.resolve()
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _both(config_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    """The bundle built as docs are checked, and the one emitted after the check."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(load_config(config_path), tmp_path / "streamed" / "bundle", KEY)
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "streams", lambda config: False)
        build(load_config(config_path), tmp_path / "emitted" / "bundle", KEY)
    return _files(tmp_path / "streamed" / "bundle"), _files(tmp_path / "emitted" / "bundle")


@pytest.mark.parametrize("example", ["plant-floor", "fleet-procedures", "skills"])
def test_the_examples_stream_to_the_same_bytes(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streamed, emitted = _both(ROOT / "examples" / example / "mkdocs.yml", tmp_path, monkeypatch)
    assert "catalog.json" in streamed and "search.bin" in streamed
    assert streamed.keys() == emitted.keys()
    assert [p for p in streamed if streamed[p] != emitted[p]] == []


@pytest.mark.parametrize("lunr_index", ["gzip", "json", "none"])
def test_a_hostile_library_streams_to_the_same_bytes(
    lunr_index: str, make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths in another order than ids, a body shared by two docs (one content file), the
    same id in two languages, attached markdown whose bytes a .txt file repeats, and a
    doc whose only attached file is not markdown."""
    docs: dict[str, str | bytes] = {
        "z-first.md": DOC.format(id="a.first", title="Zed", extra=""),
        "a-last.md": DOC.format(id="z.last", title="Ay", extra=""),
        "same-1.md": DOC.format(id="m.same", title="Same", extra=""),
        "same-2.md": DOC.format(id="m.same", title="Same", extra="lang: de\n"),
        "twin-1.md": TWIN.format(id="t.one"),
        "twin-2.md": TWIN.format(id="t.two"),
        "skill/SKILL.md": SKILL.format(id="skill.one"),
        "skill/notes.md": NOTES,
        "skill/copy.txt": NOTES,
        "tool/SKILL.md": SKILL.format(id="skill.two"),
        "tool/data.csv": "a,b\n1,2\n",
    }
    config = make_library(docs, lunr_index=lunr_index)
    streamed, emitted = _both(config, tmp_path, monkeypatch)
    assert streamed.keys() == emitted.keys()
    assert [p for p in streamed if streamed[p] != emitted[p]] == []


def test_findings_are_the_same_either_way(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library-wide checks read slim docs when streaming: a duplicate id and a
    successor that does not exist are still reported at their lines and columns; a doc
    that parses but fails its own checks (no title) is never written, only reported."""
    docs = {
        "a.md": VALID_DOC.format(id="dup"),
        "b.md": VALID_DOC.format(id="dup"),
        "c.md": VALID_DOC.format(id="c").replace("kind: guide", "kind: guide\nsuperseded_by: nope"),
        "d.md": VALID_DOC.format(id="d").replace("title: A valid doc\n", ""),
    }
    config = make_library(docs)
    out = tmp_path / "out" / "bundle"
    with pytest.raises(BuildError) as streamed:
        build(load_config(config), out, KEY)
    with monkeypatch.context() as patch:
        patch.setattr(pipeline, "streams", lambda config: False)
        with pytest.raises(BuildError) as emitted:
            build(load_config(config), out, KEY)
    lines = [f"{f.path}:{f.line}:{f.col}: {f.code}" for f in streamed.value.findings]
    assert lines == [f"{f.path}:{f.line}:{f.col}: {f.code}" for f in emitted.value.findings]
    assert "b.md:2:5: HB" in "\n".join(lines) and "c.md:" in "\n".join(lines)
    assert "d.md:" in "\n".join(lines)
    assert streamed.value.findings == emitted.value.findings
    assert not out.exists() and list((out.parent / "bundle.versions").iterdir()) == []


def test_a_failed_check_after_written_docs_leaves_nothing(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    """Docs already written when a later file fails the check, and an attached file that
    cannot be read (a fifo, refused by the check): BuildError, nothing published, no
    staging folder left."""
    import os

    docs = {f"d{n:02}.md": VALID_DOC.format(id=f"d{n}") for n in range(30)}
    docs["zz.md"] = "no frontmatter"
    docs["skill/SKILL.md"] = SKILL.format(id="skill.x")
    config = make_library(docs)
    os.mkfifo(config.parent / "docs" / "skill" / "pipe")
    out = tmp_path / "out" / "bundle"
    with pytest.raises(BuildError) as failed:
        build(load_config(config), out, KEY)
    codes = {(f.path, f.code) for f in failed.value.findings}
    assert ("zz.md", "HB201") in codes and ("skill/pipe", "HB103") in codes
    assert not out.exists() and list((out.parent / "bundle.versions").iterdir()) == []


def test_the_stream_keeps_no_body(make_library: MakeLibrary, tmp_path: Path) -> None:
    """What the check keeps of a streamed doc is its path, frontmatter values and the
    marks the library checks name; its entry is bytes; its text is on disk only."""
    config = load_config(make_library({"a.md": DOC.format(id="a", title="A", extra="")}))
    with staging(tmp_path / "bundle") as writer:
        stream = Stream(config, writer)
        result = check(config, on_doc=stream.add)
        (kept,) = result.docs
        assert kept is stream.docs[0]
        assert (kept.body, kept.sections, kept.headings) == ("", (), ())
        assert set(kept.fields) == {"id"} and kept.meta["title"] == "A"
        assert isinstance(stream.entries[0], bytes) and b'"id":"a"' in stream.entries[0]
        (content,) = (writer.root / "content").iterdir()
        assert "Intro of a" in content.read_text(encoding="utf-8")


def test_excerpt_texts_cut_by_workers_are_the_same_bytes(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker processes cut and compress the texts two docs at a time: equal texts met in
    several chunks are still stored once, numbered in order of first appearance."""
    docs: dict[str, str | bytes] = {
        f"d{n:02}.md": TWIN.format(id=f"t.{n}")
        if n % 3 == 0
        else DOC.format(id=f"d.{n}", title=f"T{n}", extra="")
        for n in range(13)
    }
    config = make_library(docs)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(load_config(config), tmp_path / "here" / "bundle", KEY)
    monkeypatch.setattr(workers, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(workers, "CHUNK", 2)
    build(load_config(config), tmp_path / "workers" / "bundle", KEY)
    here, forked = _files(tmp_path / "here" / "bundle"), _files(tmp_path / "workers" / "bundle")
    assert here.keys() == forked.keys()
    assert [p for p in here if here[p] != forked[p]] == []
    library = Library.open(tmp_path / "workers" / "bundle", allow_unsigned=True)
    hits = library.search("pump valve sensor", limit=3)["hits"]
    assert hits and all("pump valve sensor" in hit["excerpt"] for hit in hits)


def test_a_library_without_docs_streams_to_the_same_bytes(
    make_library: MakeLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    streamed, emitted = _both(make_library({"notes.txt": "not a doc"}), tmp_path, monkeypatch)
    assert streamed.keys() == emitted.keys() and "search.bin" in streamed
    assert [p for p in streamed if streamed[p] != emitted[p]] == []


def test_an_index_drops_its_json_tables_once_written_and_makes_them_again() -> None:
    """index.json's own tables go once it is written (`_pieces`); writing it again gives
    the same bytes, and the search file's arrays are those of an index never written."""
    entries = [Entry(f"d{n}", (f"title {n}", "kw é", f"body words {n % 7} 𝄞")) for n in range(40)]
    written = LunrIndex(entries)
    first = written.to_bytes()
    assert written._member_json == [] and written.to_bytes() == first
    assert written.search_arrays(split=30) == LunrIndex(entries).search_arrays(split=30)
