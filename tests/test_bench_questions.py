"""The question files `bench/ask_quality.py` measures `ask` with: the development sets
(`ask_questions.json`, over the example libraries, and `ask_dev_sites.json`, over the three
real sites in `../shared/data/real-sites/` that are not held out) and the held-out set
(`ask_heldout.json`, over two other real sites, never tuned on).

A wrong expected answer silently turns into a wrong rate, so every expected page and
anchor is checked against the pages themselves: anchors are made by Python-Markdown's toc,
as MkDocs makes them, over the page as the site shows it (its `--8<--` and
`include-markdown` includes expanded). The held-out API reference is rendered by
mkdocstrings from `src/` at build time; its headings are the public objects and their
members that griffe reads there, each with the labels mkdocstrings puts after the name."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml
from conftest import REAL_SITES, ROOT, shared_data
from markdown.extensions.toc import slugify

BENCH = ROOT / "bench"
SETS = ("original", "paraphrased", "unanswerable")
HELD_OUT_MINIMUM = {"paraphrased": 40, "original": 15, "unanswerable": 20}
DEV_SITES_MINIMUM = {"paraphrased": 40, "unanswerable": 25}
"""Issue 27: near-topic unanswerable questions and paraphrases on real sites to tune on."""
EXTENSIONS = [
    "toc",
    "pymdownx.superfences",
    "pymdownx.tabbed",
    "pymdownx.details",
    "admonition",
    "attr_list",
    "md_in_html",
    "tables",
    "footnotes",
    "def_list",
]
"""Enough of both sites' extensions that fences, tabs and admonitions hide their `#` lines."""
API_PAGE = "reference/api.md"
API_LABELS = re.compile(
    r"-(module-attribute|class-attribute|instance-attribute|property|classmethod|staticmethod)$"
)


def load(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((BENCH / name).read_text(encoding="utf-8"))
    return spec


def problems(spec: Any, doc_key: str, *, held_out: bool) -> list[str]:
    """What is wrong with a question file's shape, one line per fault. The development
    set names docs by id (`doc`) and may leave `set` out (original); the held-out set
    names pages (`source`) and always says its set."""
    if not isinstance(spec, dict) or set(spec) != {"about", "libraries", "questions"}:
        return ["top level must be exactly about, libraries, questions"]
    found = []
    if not isinstance(spec["about"], str) or not spec["about"].strip():
        found.append("about must say what the set is")
    libraries = spec["libraries"]
    if not isinstance(libraries, dict) or not libraries:
        found.append("libraries must map names to site configurations")
        libraries = {}
    seen: set[str] = set()
    for n, q in enumerate(spec["questions"] if isinstance(spec["questions"], list) else [None]):
        where = f"question {n + 1}"
        if not isinstance(q, dict) or not {"library", "question", "expected"} <= set(q):
            found.append(f"{where}: needs library, question and expected")
            continue
        extra = set(q) - {"library", "set", "question", "expected"}
        kind = q.get("set", None if held_out else "original")
        text = q["question"]
        expected = q["expected"]
        if extra:
            found.append(f"{where}: unknown keys {sorted(extra)}")
        if q["library"] not in libraries:
            found.append(f"{where}: library {q['library']!r} is not in libraries")
        if kind not in SETS:
            found.append(f"{where}: set {kind!r} is not one of {SETS}")
        if not isinstance(text, str) or not text.strip():
            found.append(f"{where}: empty question")
        elif text in seen:
            found.append(f"{where}: asked twice: {text!r}")
        else:
            seen.add(text)
        if expected is None:
            if held_out and kind in ("original", "paraphrased"):
                found.append(f"{where}: a {kind} question needs an expected answer")
            continue
        if held_out and kind == "unanswerable":
            found.append(f"{where}: an unanswerable question expects null")
            continue
        if not isinstance(expected, dict) or set(expected) != {doc_key, "section"}:
            found.append(f"{where}: expected must be exactly {doc_key} and section")
            continue
        if not isinstance(expected[doc_key], str) or not expected[doc_key]:
            found.append(f"{where}: expected {doc_key} must name a doc")
        section = expected["section"]
        if section is not None and (
            not isinstance(section, str) or slugify(section, "-") != section
        ):
            found.append(f"{where}: section {section!r} is not an anchor (toc slug)")
    return found


def test_development_set_has_the_shape_ask_quality_reads() -> None:
    assert problems(load("ask_questions.json"), "doc", held_out=False) == []


@pytest.mark.parametrize(
    ("name", "minimum"),
    [("ask_heldout.json", HELD_OUT_MINIMUM), ("ask_dev_sites.json", DEV_SITES_MINIMUM)],
)
def test_real_site_sets_have_the_shape_and_the_sizes_issue_27_asks_for(
    name: str, minimum: dict[str, int]
) -> None:
    spec = load(name)
    assert problems(spec, "source", held_out=True) == []
    counts = {s: sum(q["set"] == s for q in spec["questions"]) for s in SETS}
    assert {s: counts[s] >= n for s, n in minimum.items()} == dict.fromkeys(minimum, True), counts
    assert {q["library"] for q in spec["questions"]} == set(spec["libraries"])


def test_the_development_sites_are_not_the_held_out_ones() -> None:
    """Tuning on a held-out site would make its figures meaningless."""
    dev, held = load("ask_dev_sites.json"), load("ask_heldout.json")
    trees = {
        name: {Path(c).parts[0] for c in s["libraries"].values()}
        for name, s in (("dev", dev), ("held", held))
    }
    assert trees["dev"] and not trees["dev"] & trees["held"]
    assert not {q["question"] for q in dev["questions"]} & {
        q["question"] for q in held["questions"]
    }


@pytest.mark.parametrize(
    ("question", "fault"),
    [
        ({"library": "a", "set": "paraphrased", "question": "q?", "expected": None}, "needs an"),
        ({"library": "a", "set": "unanswerable", "question": "q?", "expected": {}}, "expects null"),
        ({"library": "a", "set": "guessed", "question": "q?", "expected": None}, "set 'guessed'"),
        ({"library": "b", "set": "unanswerable", "question": "q?", "expected": None}, "library"),
        ({"library": "a", "set": "unanswerable", "question": " ", "expected": None}, "empty"),
        (
            {"library": "a", "set": "original", "question": "q?", "expected": {"source": "x.md"}},
            "exactly source and section",
        ),
        (
            {
                "library": "a",
                "set": "original",
                "question": "q?",
                "expected": {"source": "x.md", "section": "#Global Options"},
            },
            "not an anchor",
        ),
        ({"library": "a", "question": "q?", "expected": None}, "set None"),
    ],
)
def test_a_malformed_held_out_question_is_named(question: dict[str, Any], fault: str) -> None:
    spec = {"about": "x", "libraries": {"a": "a/mkdocs.yml"}, "questions": [question]}
    found = problems(spec, "source", held_out=True)
    assert len(found) == 1 and fault in found[0], found


def test_a_question_asked_twice_is_named() -> None:
    q = {"library": "a", "set": "unanswerable", "question": "q?", "expected": None}
    spec = {"about": "x", "libraries": {"a": "a/mkdocs.yml"}, "questions": [q, dict(q)]}
    assert problems(spec, "source", held_out=True) == ["question 2: asked twice: 'q?'"]


def docs_folder(config: Path) -> Path:
    """The site's docs folder, as MkDocs or Zensical reads it from the configuration."""
    text = config.read_text(encoding="utf-8")
    if config.suffix == ".toml":
        name = tomllib.loads(text).get("project", {}).get("docs_dir", "docs")
    else:
        found = re.search(r"^docs_dir:\s*([^\s#]+)", text, re.M)
        name = found.group(1) if found else "docs"
    return config.parent / str(name)


def shown(page: Path, site: Path) -> str:
    """The page's markdown as the site shows it: frontmatter off, `--8<-- "file"` lines
    (relative to the site, where the build runs) and `[% include-markdown "file" %]`
    (relative to the page) replaced by the files they name."""
    text = re.sub(r"\A---\n.*?\n---\n", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(
        r'^-{2,}8<-{2,} "([^"]+)"$',
        lambda m: (site / m.group(1)).read_text(encoding="utf-8"),
        text,
        flags=re.M,
    )
    return re.sub(
        r'\[%\s*include-markdown\s+"([^"]+)"\s*%\]',
        lambda m: (page.parent / m.group(1)).read_text(encoding="utf-8"),
        text,
    )


def anchors(text: str) -> set[str]:
    md = markdown.Markdown(extensions=EXTENSIONS)
    md.convert(text)
    found: set[str] = set()
    todo = list(md.toc_tokens)  # type: ignore[attr-defined]
    while todo:
        token = todo.pop()
        found.add(token["id"])
        todo.extend(token["children"])
    return found


def api_names(site: Path) -> set[str]:
    """The slugs of the headings mkdocstrings renders for the package in `src/`: each
    public export, and each public member of an exported class."""
    import griffe

    package = griffe.load(site.name, search_paths=[site / "src"], resolve_aliases=True)
    names = set()
    for export in map(str, package.exports or ()):
        names.add(export)
        names.update(m for m in package[export].members if not m.startswith("_"))
    return {slugify(n, "-") for n in names}


def api_anchor_exists(anchor: str, names: set[str]) -> bool:
    base = re.sub(r"_\d+$", "", anchor)  # toc's suffix for a repeated heading
    while API_LABELS.search(base):
        base = API_LABELS.sub("", base)
    return base in names


def real_site(spec: dict[str, Any], library: str) -> tuple[Path, Path]:
    """The site's folder and docs folder; an Agent Skills tree has no configuration until
    it is adopted (`handbook.yml` is written then), and its pages are the tree itself."""
    config = REAL_SITES / spec["libraries"][library]
    if config.name == "handbook.yml" and not config.exists():
        site = shared_data(config.parent)
        return site, site
    config = shared_data(config)
    return config.parent, docs_folder(config)


@pytest.mark.parametrize("name", ["ask_heldout.json", "ask_dev_sites.json"])
def test_every_real_site_answer_is_a_page_and_heading_of_its_site(name: str) -> None:
    spec = load(name)
    shared_data(REAL_SITES)
    wrong = []
    names: dict[Path, set[str]] = {}
    for q in spec["questions"]:
        if q["expected"] is None:
            continue
        site, docs = real_site(spec, q["library"])
        source, section = q["expected"]["source"], q["expected"]["section"]
        page = docs / source
        if not page.is_file():
            wrong.append(f"{q['library']}: no page {source} ({q['question']})")
        elif section is None:
            continue
        elif source == API_PAGE:
            if site not in names:
                names[site] = api_names(site)
            if not api_anchor_exists(section, names[site]):
                wrong.append(f"{source}#{section}: no such API heading ({q['question']})")
        elif section not in anchors(shown(page, site)):
            wrong.append(f"{source}#{section}: no such heading ({q['question']})")
    assert wrong == []


def test_included_text_gives_the_changelog_its_headings() -> None:
    """The checker reads what the site shows, not the page as written: both changelog
    pages are one include, and their release headings come from the included file."""
    spec = load("ask_heldout.json")
    for library, release in (
        ("mkdocs-macros", "141-2025-10-18"),
        ("mkdocstrings", "0240-2023-11-14"),
    ):
        site, docs = real_site(spec, library)
        page = docs / "changelog.md"
        assert release not in anchors(page.read_text(encoding="utf-8"))
        assert release in anchors(shown(page, site))


def test_api_headings_are_the_packages_objects_and_nothing_else() -> None:
    spec = load("ask_heldout.json")
    site, _ = real_site(spec, "mkdocstrings")
    names = api_names(site)
    assert api_anchor_exists("get_handler_1", names)
    assert api_anchor_exists("css_filename-class-attribute-instance-attribute", names)
    assert not api_anchor_exists("get_handlers", names)
    assert not api_anchor_exists("class-attribute", names)


def test_every_development_answer_is_a_doc_and_heading_of_its_example() -> None:
    spec = load("ask_questions.json")
    wrong = []
    for name, config in spec["libraries"].items():
        pages = {}
        for path in docs_folder(ROOT / config).rglob("*.md"):
            head = re.match(r"---\n(.*?)\n---\n", path.read_text(encoding="utf-8"), re.S)
            meta = yaml.safe_load(head.group(1)) if head else None
            if isinstance(meta, dict) and "id" in meta:
                pages[meta["id"]] = path
        for q in spec["questions"]:
            if q["library"] != name or q["expected"] is None:
                continue
            doc, section = q["expected"]["doc"], q["expected"]["section"]
            if doc not in pages:
                wrong.append(f"{name}: no doc {doc} ({q['question']})")
            elif section is not None and section not in anchors(shown(pages[doc], ROOT)):
                wrong.append(f"{doc}#{section}: no such heading ({q['question']})")
    assert wrong == []
