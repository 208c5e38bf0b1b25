"""`index.json` must load and rank the same in lunr.js 2.3.9 as in lunr.py.

The bundle promises "a lunr index that lunr.js 2.3.x and lunr.py both load". lunr.py
writes terms in code-point order, and lunr.js refuses such an index ("Out of order word
insertion") as soon as a term holds a character outside the Basic Multilingual Plane,
because JavaScript compares strings by UTF-16 code units. These tests build libraries
whose terms sort differently in the two orders, load our index in real lunr.js through
node, and compare its rankings with lunr.py's search over lunr.py's own index.

The node tests need `node` and the lunr npm package: `npm install --prefix build/js
lunr@2.3.9` in the repository root, or $HANDBOOK_LUNR_JS pointing at lunr.js's folder.
The pure-Python tests at the end need neither.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lunr
import pytest

from handbook.bundle.local import Bundle
from handbook_build.config.settings import load_config
from handbook_build.pipeline import build, check
from handbook_build.write.deflate_parts import xfl
from handbook_build.write.emit import INDEX_GZ_LEVEL, attached_entries, doc_key, index_entries
from handbook_build.write.lunr_index import FIELDS, Entry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
SKILLS = ROOT / "examples" / "skills" / "mkdocs.yml"
LUNR_ENV = "HANDBOOK_LUNR_JS"

EXAMPLE_QUERIES = [
    "modbus",
    "register map",
    "compressor pressure",
    "word order",
    "mqtt retained",
    "commissioning",
    "energy meter",
    "float",
    "address base",
    "acme",
    "registers",
    "modb*",
]
SKILLS_QUERIES = ["illegal address", "registers", "scan", "exception code", "collector"]
"""The skills example attaches references/notes.md: its entry (`…/references/notes.md#`)
is in the index beside the docs'."""
UNICODE_QUERIES = [
    "🚀",
    "go🚀live",
    "ﬁeld",
    "ﬁ*",
    "￦",
    "東京の工場",
    "𠮷野家",
    "café",
    "überdruck",
    "naïve",
    "registers",
]


def _doc(id_: str, title: str, summary: str, keywords: str, body: str) -> str:
    return f"---\nid: {id_}\ntitle: {title}\nkind: guide\nsummary: {summary}\nkeywords: {keywords}\n---\n{body}"


# Terms here sort differently by code point and by UTF-16 code unit: "🚀" (U+1F680,
# surrogates D83D DE80) and "𠮷野家" (U+20BB7) come before "ﬁeld" (U+FB01) and "￦"
# (U+FFE6) in UTF-16 order, after them in code-point order.
UNICODE_DOCS = {
    "rocket.md": _doc(
        "launch.rocket",
        "Rocket launch 🚀 checklist",
        "The go🚀live checklist for launch day.",
        '["🚀", "launch"]',
        "# Rocket launch 🚀 checklist\n\n## Countdown\n\n"
        "Say 🚀 when the go🚀live moment comes. Registers are cleared.\n",
    ),
    "ligature.md": _doc(
        "typo.ligature",
        "The ﬁeld ligature",
        "Old typesetting writes ﬁeld with a ligature and prices in ￦.",
        '["ﬁeld", "￦"]',
        "# The ﬁeld ligature\n\n## Prices\n\n"
        "The café on the ﬁeld charges 5000 ￦ for a naïve Überdruck demonstration.\n",
    ),
    "cjk.md": _doc(
        "site.tokyo",
        "東京の工場",
        "東京の工場 and the 𠮷野家 canteen next door.",
        "[]",
        "# 東京の工場\n\n## 食堂\n\nThe 𠮷野家 canteen serves the café crowd. Überdruck valves are tested here.\n",
    ),
}


HEADINGS_DOCS = {
    "theme.md": _doc(
        "theme.colors",
        "Theme colors",
        "How the palette is configured.",
        '["palette"]',
        "# Theme colors\n\nOverview of colors.\n\n## Configuration\n\nConfigure the palette.\n\n"
        "### Color palette toggle\n\nA toggle switches the palette between light and dark.\n\n"
        "#### Toggle icon\n\nThe toggle icon shows the current scheme.\n\n"
        "### Primary color\n\nThe primary color tints the header.\n\n"
        "## Usage\n\nUse the palette in templates.\n\n### Example\n\nAn example of a dark palette.\n",
    ),
    "fonts.md": _doc(
        "theme.fonts",
        "Theme fonts",
        "Fonts and their configuration.",
        "[]",
        "# Theme fonts\n\n### Before any section\n\nA font note.\n\n## Configuration\n\n"
        "Set the text font.\n\n### Example\n\nAn example font configuration.\n",
    ),
}
"""Headings below `##`: each is an entry of its own (`<doc id>#<anchor>`)."""
HEADINGS_QUERIES = ["palette", "toggle", "toggle icon", "example", "configuration", "font*", "dark"]


@dataclass(frozen=True)
class Library:
    """A built library, and lunr.py's own index over the very same entries."""

    name: str
    index_path: Path
    entries: list[Entry]
    reference: Any
    """lunr.py's `Index` built from `entries` with lunr.py's own builder."""
    reference_path: Path
    """`reference.serialize()` as JSON, in lunr.py's (code-point) term order."""

    def ours(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.index_path.read_bytes())
        return data


def _write_unicode_library(root: Path, docs: dict[str, str] = UNICODE_DOCS) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in docs.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    (root / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: unicode\n      version: 1.0.0\n",
        encoding="utf-8",
    )
    return root / "mkdocs.yml"


def _build(name: str, config_path: Path, tmp: Path) -> Library:
    """Build unsigned (pipeline.build does not consult $CI) with `index.json` written
    plainly (`lunr_index: json`; the default gzips the same bytes, see the last test), then
    index the same entries, in the same order (docs by path, as the build adds them), with
    lunr.py."""
    config = replace(load_config(config_path), lunr_index="json")
    bundle = build(config, tmp / f"{name}-bundle", None).bundle
    entries = [*index_entries(check(config).docs), *_attached(bundle)]
    documents = [
        {"ref": e.ref, **{field: text for (field, _), text in zip(FIELDS, e.fields, strict=True)}}
        for e in entries
    ]
    reference = lunr.lunr(
        "ref", [{"field_name": field, "boost": boost} for field, boost in FIELDS], documents
    )
    reference_path = tmp / f"{name}-lunr-py.json"
    reference_path.write_text(
        json.dumps(reference.serialize(), ensure_ascii=False), encoding="utf-8"
    )
    return Library(name, bundle.path / "index.json", entries, reference, reference_path)


def _attached(bundle: Bundle) -> list[Entry]:
    """The entries of the attached markdown files, in the build's order: docs by path,
    each doc's files by path."""
    return [
        entry
        for doc in sorted(bundle.catalog.docs, key=lambda d: d.source)
        for file in doc.resources
        if file.media_type == "text/markdown"
        for entry in attached_entries(
            doc_key(doc.id, doc.meta), doc.title, file, bundle.read(file.file).decode()
        )
    ]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Library]:
    tmp = tmp_path_factory.mktemp("lunr")
    return {
        "plant-floor": _build("plant-floor", EXAMPLE, tmp),
        "unicode": _build("unicode", _write_unicode_library(tmp / "unicode"), tmp),
        "skills": _build("skills", SKILLS, tmp),
        "headings": _build(
            "headings", _write_unicode_library(tmp / "headings", HEADINGS_DOCS), tmp
        ),
    }


def _by_utf16(term: str) -> bytes:
    return term.encode("utf-16-be", "surrogatepass")


# -- lunr.js through node ---------------------------------------------------------------------

NODE_SCRIPT = r"""
const fs = require("fs");
const path = require("path");
const request = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const lunr = require(path.join(request.lunr, "lunr.js"));
const out = {version: lunr.version, indexes: {}};
for (const [name, file] of Object.entries(request.indexes)) {
  let index;
  try {
    index = lunr.Index.load(JSON.parse(fs.readFileSync(file, "utf8")));
  } catch (e) {
    out.indexes[name] = {error: String((e && e.message) || e)};
    continue;
  }
  const results = {};
  for (const query of request.queries[name] || []) {
    try {
      results[query] = index.search(query).map(r => [r.ref, r.score]);
    } catch (e) {
      results[query] = {error: String((e && e.message) || e)};
    }
  }
  out.indexes[name] = {results};
}
process.stdout.write(JSON.stringify(out));
"""


def _find_lunr_js() -> tuple[str, Path]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; lunr.js interop needs Node.js")
    candidates = [Path(os.environ[LUNR_ENV])] if os.environ.get(LUNR_ENV) else []
    candidates.append(ROOT / "build" / "js" / "node_modules" / "lunr")
    for folder in candidates:
        if (folder / "lunr.js").is_file():
            return node, folder
    pytest.skip(
        f"lunr.js not found in {' or '.join(map(str, candidates))}; run "
        f"`npm install --prefix build/js lunr@2.3.9` in {ROOT} or set ${LUNR_ENV} to lunr.js's folder"
    )


@pytest.fixture(scope="module")
def lunr_js(
    libraries: dict[str, Library], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """One node run: load our index and lunr.py's for each library, run every query on
    ours. Returns lunr.js's version and, per index, its results or its load error."""
    node, folder = _find_lunr_js()
    tmp = tmp_path_factory.mktemp("node")
    (tmp / "run.js").write_text(NODE_SCRIPT, encoding="utf-8")
    queries = {
        "plant-floor": EXAMPLE_QUERIES,
        "unicode": UNICODE_QUERIES,
        "skills": SKILLS_QUERIES,
        "headings": HEADINGS_QUERIES,
    }
    indexes: dict[str, str] = {}
    for name, library in libraries.items():
        indexes[f"{name}/ours"] = str(library.index_path)
        indexes[f"{name}/lunr.py"] = str(library.reference_path)
    request = {
        "lunr": str(folder),
        "indexes": indexes,
        "queries": {f"{n}/ours": q for n, q in queries.items()},
    }
    (tmp / "request.json").write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
    run = subprocess.run(
        [node, str(tmp / "run.js"), str(tmp / "request.json")],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    out: dict[str, Any] = json.loads(run.stdout)
    if not str(out["version"]).startswith("2.3."):
        pytest.skip(f"lunr.js {out['version']} found in {folder}; these tests target 2.3.x (2.3.9)")
    return out


def test_unicode_library_really_needs_utf16_order(libraries: dict[str, Library]) -> None:
    """Guard for the tests below: the test library's terms must sort differently in the
    two orders, or lunr.py's index would load in lunr.js too and prove nothing."""
    terms = [t for t, _ in libraries["unicode"].ours()["invertedIndex"]]
    assert {"🚀", "ﬁeld", "￦", "𠮷野家", "東京の工場", "café"} <= set(terms)
    assert sorted(terms) != sorted(terms, key=_by_utf16)


def test_lunr_js_loads_our_index_and_refuses_lunr_py_order(lunr_js: dict[str, Any]) -> None:
    """The failure mode of the issue: lunr.py's own serialization is refused by lunr.js,
    ours (same terms, UTF-16 order) loads."""
    assert "error" not in lunr_js["indexes"]["unicode/ours"]
    assert "Out of order" in lunr_js["indexes"]["unicode/lunr.py"].get("error", "")
    # With ASCII-only terms the two orders agree and both load.
    assert "error" not in lunr_js["indexes"]["plant-floor/ours"]
    assert "error" not in lunr_js["indexes"]["plant-floor/lunr.py"]


def test_lunr_js_finds_non_bmp_and_cjk_terms(lunr_js: dict[str, Any]) -> None:
    """Terms with surrogate pairs, BMP-private-area-adjacent characters and CJK are
    reachable through lunr.js's token set, not only present in the JSON."""
    results = lunr_js["indexes"]["unicode/ours"]["results"]
    expected = {
        "🚀": "launch.rocket",
        "go🚀live": "launch.rocket#countdown",
        "ﬁeld": "typo.ligature",
        "ﬁ*": "typo.ligature",
        "￦": "typo.ligature",
        "東京の工場": "site.tokyo",
        "𠮷野家": "site.tokyo",
        "naïve": "typo.ligature#prices",
        "registers": "launch.rocket#countdown",
    }
    for query, ref in expected.items():
        assert not isinstance(results[query], dict), results[query]
        # the doc is what must be reached; which of its entries wins depends on the boosts
        assert results[query] and results[query][0][0].split("#")[0] == ref.split("#")[0], (
            query,
            results[query],
        )


def test_lunr_js_finds_a_subsection_by_its_anchor(lunr_js: dict[str, Any]) -> None:
    """A `####` heading's text is an entry of its own, whose ref is the page's anchor."""
    results = lunr_js["indexes"]["headings/ours"]["results"]
    assert results["toggle icon"][0][0] == "theme.colors#toggle-icon"


def test_lunr_js_finds_a_phrase_of_an_attached_file(lunr_js: dict[str, Any]) -> None:
    """The attached file's entry, by its ref `<doc id>/<path>#` (no section: notes.md has
    none), is what lunr.js ranks first for words only that file holds."""
    results = lunr_js["indexes"]["skills/ours"]["results"]
    assert results["illegal address"][0][0] == "skill.modbus-scan/references/notes.md#"


def _overlap(a: list[str], b: list[str]) -> float:
    if not a and not b:
        return 1.0
    return len(set(a) & set(b)) / max(len(a), len(b))


@pytest.mark.parametrize("name", ["plant-floor", "unicode", "skills", "headings"])
def test_lunr_js_ranks_like_lunr_py(
    name: str, libraries: dict[str, Library], lunr_js: dict[str, Any], record_property: Any
) -> None:
    """lunr.js over our index must rank like lunr.py over its own index of the same
    entries: same top hit (and score) and >= 90 % of the top ten in common."""
    library = libraries[name]
    js_results = lunr_js["indexes"][f"{name}/ours"]["results"]
    report = []
    for query, js in js_results.items():
        assert not isinstance(js, dict), (query, js)
        py = [(r["ref"], r["score"]) for r in library.reference.search(query)]
        js_top = [ref for ref, _ in js[:10]]
        py_top = [ref for ref, _ in py[:10]]
        overlap = _overlap(js_top, py_top)
        report.append(
            f"{query!r}: top {js_top[:1]} vs {py_top[:1]}, top-10 overlap {overlap:.2f} ({len(js)} vs {len(py)} hits)"
        )
        if name == "plant-floor":
            assert py, f"{query!r} should find something in the example library"
        assert js_top[:1] == py_top[:1], report[-1]
        if js:
            assert js[0][1] == pytest.approx(py[0][1], rel=1e-9), (query, js[0], py[0])
        assert overlap >= 0.9, report[-1]
    record_property("overlap", report)
    print(f"\n{name}:\n  " + "\n  ".join(report))


# -- the serialized index, without node -------------------------------------------------------


def _as_dicts(index: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": index["version"],
        "fields": index["fields"],
        "pipeline": index["pipeline"],
        "fieldVectors": dict(map(tuple, index["fieldVectors"])),
        "invertedIndex": dict(map(tuple, index["invertedIndex"])),
    }


@pytest.mark.parametrize("name", ["plant-floor", "unicode", "skills", "headings"])
def test_index_json_is_lunr_py_serialization_up_to_term_order(
    name: str, libraries: dict[str, Library]
) -> None:
    """Our streamed writer must produce exactly what lunr.py's builder would (same terms,
    `_index` numbers, postings and field vectors), differing only in term order."""
    library = libraries[name]
    ours = library.ours()
    reference = json.loads(library.reference_path.read_bytes())
    assert (
        set(ours)
        == set(reference)
        == {"version", "fields", "pipeline", "fieldVectors", "invertedIndex"}
    )
    assert _as_dicts(ours) == _as_dicts(reference)
    # No duplicates hidden by the dict comparison.
    assert len(ours["invertedIndex"]) == len(reference["invertedIndex"])
    assert len(ours["fieldVectors"]) == len(reference["fieldVectors"])


@pytest.mark.parametrize("name", ["plant-floor", "unicode", "skills", "headings"])
def test_terms_are_in_utf16_code_unit_order(name: str, libraries: dict[str, Library]) -> None:
    """lunr.js inserts terms into its token set in file order and needs them ascending
    by JavaScript string comparison, i.e. by UTF-16 code units."""
    terms = [t for t, _ in libraries[name].ours()["invertedIndex"]]
    keys = [_by_utf16(t) for t in terms]
    assert keys == sorted(keys)
    assert len(set(terms)) == len(terms)


@pytest.mark.parametrize("name", ["plant-floor", "skills"])
def test_the_default_index_json_gz_is_index_json_gzipped(
    libraries: dict[str, Library], tmp_path: Path, name: str
) -> None:
    """What lunr.js loads above is what the default build ships, compressed: the same
    bytes once decompressed, in a gzip file with no name and time 0 (reproducible)."""
    config = load_config({"plant-floor": EXAMPLE, "skills": SKILLS}[name])
    assert config.lunr_index == "gzip"
    bundle = build(config, tmp_path / "default", None).bundle
    assert "index.json" not in bundle.manifest.signed.files
    packed = bundle.read("index.json.gz")
    assert packed[:8] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00"  # no name, mtime 0
    assert packed[8:10] == bytes((xfl(INDEX_GZ_LEVEL), 255))
    assert gzip.decompress(packed) == libraries[name].index_path.read_bytes()


def test_lunr_index_none_writes_no_lunr_index(tmp_path: Path) -> None:
    config = replace(load_config(EXAMPLE), lunr_index="none")
    files = build(config, tmp_path / "none", None).bundle.manifest.signed.files
    assert not {"index.json", "index.json.gz"} & set(files) and "search.bin" in files
