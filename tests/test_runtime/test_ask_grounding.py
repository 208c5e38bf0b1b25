"""`ask` grounds on what its quote carries, quotes the sentences that hold the question's
words, ranks a section titled with them first, and reads the question as plain words;
`search` keeps lunr's syntax and says when an operator changed the query. Checked on a
small library written for it (the calibration itself is bench/ask_quality.py's)."""

from __future__ import annotations

import pytest

from handbook import Library
from handbook.handlers import grounding
from handbook.handlers.quotes import quote, units
from handbook.search import plain_words
from handbook.search.stemmer import stem
from handbook_build import load_config
from handbook_build.pipeline import build

SERVING = """---
id: guide.serving
title: Serving answers
kind: guide
summary: How the server answers agents.
---
# Serving answers

## Limits

Every answer is bounded. The response budget is shared by all the tools, and a tool that
needs more text pages through it.

## Response budget

Each answer fits within max_response_chars characters, 20000 by default; the server
drops excerpts first and then whole hits.
"""

THEMES = """---
id: guide.themes
title: Colour themes
kind: guide
summary: Light and dark colour schemes for the site.
---
## Dark mode

The site ships two colour schemes, and the reader's system preference picks one of them
when the page first loads, which makes your documentation comfortable to read at night
and keeps the contrast readable on every screen that anyone might use to open it.
To enable dark mode, add this to mkdocs.yml:

```yaml
theme:
  palette:
    scheme: slate
```

Nothing else is needed.
"""

ACTIONS = """---
id: guide.actions
title: Using the collector in GitHub Actions
kind: guide
summary: A workflow that runs the collector.
---
# Using the collector in GitHub Actions

## Installing the collector

Run pip install collector in a workflow step. Configuration lives in collector.toml,
which the step reads before it starts.

## Changes

The collector changed its log format in this version of the guide; each version
changes the defaults a little.
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    root = tmp_path_factory.mktemp("grounding")
    docs = root / "lib" / "docs"
    docs.mkdir(parents=True)
    for name, text in (("serving.md", SERVING), ("themes.md", THEMES), ("actions.md", ACTIONS)):
        (docs / name).write_text(text, encoding="utf-8")
    (root / "lib" / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\nplugins:\n  - handbook:\n      library: test\n"
        "      version: 1.0.0\n",
        encoding="utf-8",
    )
    out = root / "bundle"
    build(load_config(root / "lib" / "mkdocs.yml"), out, None)
    return Library.open(out, allow_unsigned=True)


def test_a_paraphrase_is_grounded_by_stems_and_the_heading(library: Library) -> None:
    answer = library.ask("How is the collector installed and configured?")
    assert answer["evidence_state"] == "grounded", answer["answer"]
    first = answer["sources"][0]
    assert (first["document_id"], first["section"]) == ("guide.actions", "Installing the collector")
    assert "Configuration lives in collector.toml" in first["excerpt"]


def test_unrelated_passages_sharing_common_words_are_insufficient(library: Library) -> None:
    # "change", "version" and "collector" are in one passage; the rest is nowhere
    answer = library.ask("How did the collector's retention policy change in version 2.7.1?")
    assert answer["evidence_state"] == "insufficient", answer["answer"]
    assert "2.7.1" in answer["key_terms"] and "2.7.1" in answer["missing_terms"]
    assert answer["sources"], "the closest passages are listed as leads"
    assert "\u201c" not in answer["answer"]  # nothing is quoted


def test_the_quote_holds_the_matched_words_and_what_a_colon_introduces(library: Library) -> None:
    answer = library.ask("How do I enable dark mode?")
    assert answer["evidence_state"] == "grounded"
    excerpt = answer["sources"][0]["excerpt"]
    assert "To enable dark mode, add this to mkdocs.yml:" in excerpt
    assert "scheme: slate" in excerpt  # the configuration, not cut before it
    assert f"\u201c{excerpt}\u201d" in answer["answer"]


def test_a_section_titled_with_the_question_ranks_first(library: Library) -> None:
    answer = library.ask("What is the response budget?")
    assert answer["evidence_state"] == "grounded"
    assert answer["sources"][0]["section"] == "Response budget"
    # search's lunr ranking is not changed by this
    hits = library.search("response budget")["hits"]
    assert {h["section"] for h in hits} >= {"Limits", "Response budget"}


def test_a_heading_alone_is_never_quoted(library: Library) -> None:
    answer = library.ask("Using the collector in GitHub Actions")
    assert answer["evidence_state"] == "grounded"
    for source in answer["sources"]:
        assert source["excerpt"].strip() and not source["excerpt"].lstrip().startswith("#")
        assert source["excerpt"] != source["title"]


def test_quote_units_and_clipping() -> None:
    text = "## Heading\n\n" + "Filler words here. " * 60 + "The port is 502 on the wire."
    matched = grounding.matcher(["port", "502"])
    quoted, covered = quote(text, {"port": 1.0, "502": 2.0}, matched, room=120)
    assert "The port is 502 on the wire." in quoted and covered == {"port", "502"}
    assert "Heading" not in quoted
    assert units("# Only a heading\n") == [] and quote("# Only a heading", {}, matched) == (
        "",
        set(),
    )
    long = "Words " * 100 + "and the port 502 after them " + "tail " * 100
    clipped, _ = quote(long, {"port": 1.0}, matched, room=120)
    assert "port 502" in clipped and clipped.startswith("…")


def test_stem_prefixes_match_but_short_stems_do_not() -> None:
    matched = grounding.matcher(["configur", "port"])
    assert matched({"config"}) == {"configur"}  # "config" and "configuration"
    assert matched({"portabl"}) == set()  # "port" is too short to match by prefix


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("+1 nucleosomes", ["nucleosom"]),
        ("TCR/CD8 cells", ["tcr", "cd8", "cell"]),
        ("H2A.Z binding", ["h2a.z", "bind"]),
        ("title:foo -x *", ["titl", "foo", "x"]),
        ("port~1 modbus^3", ["port", "modbu"]),
    ],
)
def test_questions_are_words(library: Library, question: str, terms: list[str]) -> None:
    answer = library.ask(question)
    assert "error" not in answer
    assert answer["key_terms"] == terms
    assert "error" not in library.brief(question)


def test_a_token_the_library_holds_whole_stays_whole() -> None:
    assert plain_words.words("TCR/CD8 cells", lambda term: term == "tcr/cd8") == [
        "tcr/cd8",
        "cells",
    ]
    assert plain_words.words("the * of -", lambda term: False) == []


def test_ask_on_only_syntax_has_no_words(library: Library) -> None:
    answer = library.ask("* ~ ^ + -")
    assert answer["evidence_state"] == "insufficient" and answer["key_terms"] == []


def test_search_notes_what_an_operator_changed(library: Library) -> None:
    assert "note" not in library.search("response budget")
    note = library.search("+response -limits title:budget collect* budgt~1 answer^2")["note"]
    for effect in ("required", "excluded", "title:", "*", "~", "^"):
        assert effect in note, effect
    assert "ask and brief" in note


def test_search_note_keeps_the_shortening_note(library: Library) -> None:
    long = " ".join(f"word{n}" for n in range(40))
    note = library.search("+collector " + long)["note"]
    assert "required" in note and "over the limit" in note


def test_grounded_needs_a_supporting_first_passage() -> None:
    assert not grounding.grounded([], {"port": 1.0})


def test_a_near_topic_question_naming_what_the_library_never_names_is_refused(
    library: Library,
) -> None:
    # the same question without the name is grounded on the install section
    plain = library.ask("How do I install the collector in a workflow step?")
    assert plain["evidence_state"] == "grounded", plain["answer"]
    answer = library.ask("How do I install the collector in a Jenkins workflow step?")
    assert answer["evidence_state"] == "insufficient", answer["answer"]
    assert "jenkin" in answer["missing_terms"]
    assert answer["sources"] and "\u201c" not in answer["answer"]  # leads, nothing quoted


def test_a_stem_prefix_never_stands_for_a_name(library: Library) -> None:
    # "colour" covers "colourama" by prefix, but a name must be held as written
    answer = library.ask("Which Colourama schemes does the site ship for dark mode?")
    assert answer["evidence_state"] == "insufficient", answer["answer"]
    assert "colourama" in answer["missing_terms"]
    assert library.ask("Which colour schemes does the site ship for dark mode?")[
        "evidence_state"
    ] == ("grounded")


def test_a_paraphrase_keeping_its_names_is_still_grounded(library: Library) -> None:
    answer = library.ask(
        "Where does the collector's configuration live when GitHub Actions runs it?"
    )
    assert answer["evidence_state"] == "grounded", answer["answer"]
    assert answer["sources"][0]["document_id"] == "guide.actions"
    assert "github" not in answer["missing_terms"]
    assert grounding.names(answer["answer"], {"github", "action"}) == ["github", "actions"]


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Which Node.js version does MkDocs 1.7.0 need?", ["node.js", "mkdocs", "1.7.0"]),
        ("How do I export to PDF? Which tool renders PlantUML?", ["pdf", "plantuml"]),
        ("Can I read the EM3 over BACnet/IP?", ["em3", "bacnet/ip"]),
        ("What is exception code 04?", ["04"]),
        ("How Do I Install The Collector On Version 2.7?", ["2.7"]),  # capitals say nothing
        ("HOW DO I INSTALL THE COLLECTOR?", []),
        ("how do i install the collector?", []),
        ("Which The I A?", []),  # stop words are never names
    ],
)
def test_names_are_words_with_a_digit_or_a_capital_no_sentence_puts_there(
    question: str, named: list[str]
) -> None:
    terms = {stem(w) for w in plain_words.words(question)} | {"node.j", "1.7.0", "2.7"}
    assert grounding.names(question, terms) == named


@pytest.mark.parametrize(
    "question",
    [
        "Zorblax quuxified flimflam wibbleton?",
        "the and of it is was",
        "install collector " * 600,  # 10,800 characters
        "<div><img src=x onerror=alert(1)></div> <script>fetch('//x')</script> ## **Title** [a](b)",
        "```\n{{ config }}\n``` | --- | :--: |\n> [!NOTE]\n{% raw %}",
    ],
)
def test_hostile_questions_are_never_grounded(library: Library, question: str) -> None:
    answer = library.ask(question)
    assert answer["evidence_state"] == "insufficient", answer["answer"]
    assert "\u201c" not in answer["answer"]
