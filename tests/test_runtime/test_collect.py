"""`collect` and `ask` (handbook.handlers.collect), exact revisions in `get`, the `Shelf` over two
libraries that share ids, and the transports that carry collect and ask: MCP over
streamable HTTP (the SDK's client), the JSON API, RPC registration and the CLI.

Bundles are built in-process from the plant-floor example and from a second library
("site-b") that shares two of its ids."""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import KEY, PUBLIC, ROOT, VALID_DOC, MakeLibrary, get_json, live, run_cli

import handbook.handlers.ask as ha
import handbook.handlers.collect as hc
import handbook.handlers.grounding as hg
from handbook import Library, Shelf
from handbook.serve.http import create_app
from handbook.serve.rpc import register_tools
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor"

AC200, EM3, ABOUT, COMMISSIONING, MODBUS, MQTT = (
    "device.acme.ac200",
    "device.voltra.em3",
    "guide.about",
    "guide.commissioning",
    "protocol.modbus",
    "protocol.mqtt",
)
EXAMPLE_IDS = [AC200, EM3, ABOUT, COMMISSIONING, MODBUS, MQTT]
NIGHT = "guide.night-shift"
OLD = "0" * 64

NIGHT_SHIFT = """\
---
id: guide.night-shift
title: Night shift checklist
kind: guide
summary: What the night shift checks on the compressors before handing over to the morning crew.
---
# Night shift checklist

The night shift walks the compressor hall once per hour.

## Rounds

Check the discharge pressure gauge and write it in the log book.
"""


def copy_example(dest: Path, library: str | None = None) -> Path:
    """The example library's sources in `dest` (optionally renamed); its mkdocs.yml."""
    shutil.copytree(EXAMPLE, dest)
    config = dest / "mkdocs.yml"
    if library is not None:
        text = config.read_text(encoding="utf-8")
        assert "library: plant-floor" in text
        config.write_text(
            text.replace("library: plant-floor", f"library: {library}"), encoding="utf-8"
        )
    return config


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def built(config: Path, out: Path) -> Path:
    build(load_config(config), out, KEY)
    return out


def reasons(answer: dict[str, Any]) -> list[tuple[Any, str]]:
    return [(o["id"], o["reason"]) for o in answer["omissions"]]


def item_ids(answer: dict[str, Any]) -> list[str]:
    return [i["id"] for i in answer["items"]]


def without_correlation(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "correlation_id"}


@pytest.fixture(scope="module")
def library(plant_floor_bundle: Path) -> Library:
    return Library.open(plant_floor_bundle, [PUBLIC])


@pytest.fixture(scope="module")
def site_b(tmp_path_factory: pytest.TempPathFactory) -> Library:
    """A second library, "site-b": the example's Modbus guide (with one more section) and
    AC-200 doc under the same ids, and a night-shift guide of its own."""
    root = tmp_path_factory.mktemp("site-b")
    config = copy_example(root / "src", "site-b")
    docs = root / "src" / "docs"
    for rel in (
        "devices/voltra-em3.md",
        "guides/commissioning.md",
        "protocols/mqtt.md",
        "index.md",
    ):
        (docs / rel).unlink()
    (docs / "guides" / "night-shift.md").write_text(NIGHT_SHIFT, encoding="utf-8")
    edit(
        docs / "protocols" / "modbus.md",
        "## Scaling",
        "## Site B notes\n\nOn site B every gateway is pinned to unit id 9.\n\n## Scaling",
    )
    return Library.open(built(config, root / "bundle"), [PUBLIC])


@pytest.fixture(scope="module")
def shelf(library: Library, site_b: Library) -> Shelf:
    return Shelf([library, site_b])


# -- collect: one test per omission reason ----------------------------------------------------


def test_invalid_identity(library: Library) -> None:
    answer = library.collect(ids=["Not An Id", 42, AC200, "a:b:c", ""])
    assert item_ids(answer) == [AC200]
    assert reasons(answer) == [
        ("Not An Id", "invalid_identity"),
        ("42", "invalid_identity"),
        ("a:b:c", "invalid_identity"),
        ("", "invalid_identity"),
    ]
    assert all(
        "device.acme.ac200" in o["detail"] for o in answer["omissions"]
    )  # says what an id looks like
    assert hc.resolve([library.snapshot], None).reason == "invalid_identity"
    assert hc.resolve([library.snapshot], "Not An Id").found is None


def test_unknown_identity_suggests_close_ids(library: Library) -> None:
    answer = library.collect(ids=["device.acme.ac20", "nolib:protocol.modbus", "zzzz.qqqq"])
    assert answer["items"] == [] and answer["no_match"] is True
    assert reasons(answer) == [
        ("device.acme.ac20", "unknown_identity"),
        ("nolib:protocol.modbus", "unknown_identity"),
        ("zzzz.qqqq", "unknown_identity"),
    ]
    near, other_library, far = answer["omissions"]
    assert near["detail"].startswith("did you mean") and AC200 in near["detail"]
    assert "'nolib'" in other_library["detail"] and "plant-floor" in other_library["detail"]
    assert far["detail"] == "no library has this id"


def test_ambiguous_identity_names_every_owner(
    shelf: Shelf, library: Library, site_b: Library
) -> None:
    answer = shelf.collect(ids=[MODBUS, AC200, NIGHT])
    assert item_ids(answer) == [NIGHT]
    assert reasons(answer) == [(MODBUS, "ambiguous_identity"), (AC200, "ambiguous_identity")]
    assert answer["omissions"][0]["choices"] == [
        "plant-floor:protocol.modbus",
        "site-b:protocol.modbus",
    ]
    assert answer["omissions"][1]["choices"] == [
        "plant-floor:device.acme.ac200",
        "site-b:device.acme.ac200",
    ]
    # never resolved by precedence: listing the libraries the other way round changes nothing but the order
    reverse = Shelf([site_b, library]).collect(ids=[MODBUS])
    assert reverse["items"] == [] and reverse["omissions"][0]["reason"] == "ambiguous_identity"
    assert reverse["omissions"][0]["choices"] == [
        "site-b:protocol.modbus",
        "plant-floor:protocol.modbus",
    ]


def test_duplicate_identity(library: Library) -> None:
    answer = library.collect(
        ids=[MODBUS, MQTT, MODBUS, "plant-floor:protocol.modbus", " protocol.mqtt "]
    )
    assert item_ids(answer) == [MODBUS, MQTT]
    assert reasons(answer) == [
        (MODBUS, "duplicate_identity"),
        ("plant-floor:protocol.modbus", "duplicate_identity"),
        (" protocol.mqtt ", "duplicate_identity"),
    ]
    assert "plant-floor:protocol.modbus" in answer["omissions"][0]["detail"]


def test_unavailable_revision_is_refused_never_substituted(library: Library) -> None:
    current = {i: library.doc(i).revision for i in (AC200, MODBUS)}  # type: ignore[union-attr]
    answer = library.collect(ids=[AC200, MODBUS], revisions={AC200: OLD, MODBUS: current[MODBUS]})
    assert item_ids(answer) == [MODBUS]
    assert answer["items"][0]["revision"] == current[MODBUS]
    assert reasons(answer) == [("plant-floor:device.acme.ac200", "unavailable_revision")]
    assert (
        current[AC200] in answer["omissions"][0]["detail"]
        and "content" not in answer["omissions"][0]
    )
    assert "Acme AC-200" not in json.dumps(answer)  # none of the new bytes
    # a qualified ref as the key, and a doc selected by query rather than by id
    assert reasons(
        library.collect(ids=[AC200], revisions={"plant-floor:device.acme.ac200": OLD})
    ) == [("plant-floor:device.acme.ac200", "unavailable_revision")]
    by_query = library.collect(query="compressor", revisions={AC200: OLD})
    assert AC200 not in item_ids(by_query) and (
        "plant-floor:device.acme.ac200",
        "unavailable_revision",
    ) in reasons(by_query)
    # the real revisions pass
    assert item_ids(library.collect(ids=[AC200, MODBUS], revisions=current)) == [AC200, MODBUS]


def test_filters_reason(library: Library) -> None:
    answer = library.collect(ids=[AC200, MODBUS, COMMISSIONING], kind="protocol")
    assert item_ids(answer) == [MODBUS]
    assert reasons(answer) == [
        ("plant-floor:device.acme.ac200", "filters"),
        ("plant-floor:guide.commissioning", "filters"),
    ]
    assert "kind=protocol" in answer["omissions"][0]["detail"]
    assert item_ids(library.collect(ids=[AC200, MODBUS], kind="any")) == [
        AC200,
        MODBUS,
    ]  # "any" is no filter
    assert item_ids(library.collect(ids=[AC200, MODBUS], kind=None)) == [AC200, MODBUS]
    assert item_ids(library.collect(ids=[AC200, EM3, MQTT], protocol="MODBUS")) == [
        AC200,
        EM3,
    ]  # case-insensitive


def test_query_reason(library: Library) -> None:
    assert [h["id"] for h in library.search("sparkplug")["hits"]] == [MQTT]
    answer = library.collect(ids=[AC200, MQTT], query="sparkplug")
    assert item_ids(answer) == [MQTT]
    assert reasons(answer) == [("plant-floor:device.acme.ac200", "query")]
    assert "sparkplug" in answer["omissions"][0]["detail"]


def test_output_limit_beyond_limit_and_beyond_max_bytes(library: Library) -> None:
    answer = library.collect(ids=[AC200, EM3, MODBUS, MQTT], limit=2)
    assert item_ids(answer) == [AC200, EM3]
    assert reasons(answer) == [
        ("plant-floor:protocol.modbus", "output_limit"),
        ("plant-floor:protocol.mqtt", "output_limit"),
    ]
    assert answer["omissions"][0]["detail"] == "beyond limit=2"

    size = len(library.bundle.read(library.doc(MODBUS).content))  # type: ignore[union-attr]
    too_big = library.collect(
        ids=[MODBUS], max_bytes=100
    )  # no query, so no sections to fall back to
    assert too_big["items"] == [] and too_big["bytes_used"] == 0
    assert reasons(too_big) == [("plant-floor:protocol.modbus", "output_limit")]
    assert f"needs {size:,} bytes" in too_big["omissions"][0]["detail"]


def test_output_limit_lists_fifty_then_counts(make_library: MakeLibrary, tmp_path: Path) -> None:
    total = hc.MAX_LISTED_BEYOND_LIMIT + 5
    docs = {f"d{n:03}.md": VALID_DOC.format(id=f"doc.n{n:03}") for n in range(total)}
    library = Library.open(built(make_library(docs), tmp_path / "many"), allow_unsigned=True)
    answer = library.collect(limit=2, max_bytes=1_000_000)
    assert item_ids(answer) == ["doc.n000", "doc.n001"]
    listed = answer["omissions"][:-1]
    assert len(listed) == hc.MAX_LISTED_BEYOND_LIMIT
    assert [o["id"] for o in listed] == [
        f"test:doc.n{n:03}" for n in range(2, 2 + hc.MAX_LISTED_BEYOND_LIMIT)
    ]
    assert {o["reason"] for o in listed} == {"output_limit"}
    rest = answer["omissions"][-1]
    assert (
        rest["id"] is None
        and rest["reason"] == "output_limit"
        and rest["count"] == total - 2 - hc.MAX_LISTED_BEYOND_LIMIT
    )
    assert len(answer["items"]) + len(listed) + rest["count"] == total  # every doc accounted for


# -- collect: semantics -------------------------------------------------------------------


@pytest.mark.parametrize(
    "order", [[MQTT, AC200, ABOUT, MODBUS], [MODBUS, ABOUT, AC200, MQTT], [EM3, COMMISSIONING]]
)
def test_explicit_ids_keep_the_callers_order(library: Library, order: list[str]) -> None:
    answer = library.collect(ids=order)
    assert item_ids(answer) == order and answer["omissions"] == []
    assert all(i["whole"] is True for i in answer["items"])
    assert [i["ref"] for i in answer["items"]] == [f"plant-floor:{i}" for i in order]


def test_item_shape_and_bytes(library: Library) -> None:
    item = library.collect(ids=[AC200])["items"][0]
    doc = library.doc(AC200)
    assert doc is not None
    raw = library.bundle.read(doc.content)
    assert item["content"].encode("utf-8") == raw
    assert (
        item["bytes"] == len(raw) > len(item["content"])
    )  # UTF-8 bytes, not characters (the doc has a degree sign)
    assert (item["ref"], item["library"], item["revision"], item["title"]) == (
        "plant-floor:device.acme.ac200",
        "plant-floor",
        doc.revision,
        "Acme AC-200 air compressor (fictional)",
    )
    assert item["revision"] == library.get(AC200)["revision"]


def test_no_ids_no_query_takes_every_doc_in_ref_order(library: Library) -> None:
    answer = library.collect(max_bytes=1_000_000)
    assert (
        item_ids(answer) == sorted(EXAMPLE_IDS)
        and answer["omissions"] == []
        and answer["no_match"] is False
    )


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("compressor", AC200),
        ("sparkplug retained broker", MQTT),
        ("energy meter kwh", EM3),
        ("commissioning handover", COMMISSIONING),
    ],
)
def test_a_query_ranks_best_first(library: Library, query: str, best: str) -> None:
    answer = library.collect(query=query, max_bytes=1_000_000)
    assert item_ids(answer)[0] == best
    matched = {h["id"] for h in library.search(query, limit=100)["hits"]}
    assert set(item_ids(answer)) == matched  # exactly the docs the query matches
    best_scores = [
        max(h["score"] for h in library.search(query, limit=100)["hits"] if h["id"] == i)
        for i in item_ids(answer)
    ]
    assert best_scores == sorted(best_scores, reverse=True)  # by each doc's best passage
    assert answer["omissions"] == []


def test_filters_apply_before_limit(library: Library) -> None:
    assert item_ids(library.collect(limit=1)) == [AC200]  # unfiltered, the first ref
    answer = library.collect(limit=1, kind="protocol")
    assert item_ids(answer) == [MODBUS]
    assert ("plant-floor:protocol.mqtt", "output_limit") in reasons(answer)
    assert {r for i, r in reasons(answer) if i != "plant-floor:protocol.mqtt"} == {"filters"}
    ranked = library.collect(query="modbus", limit=1, kind="device")
    assert item_ids(ranked)[0] in (AC200, EM3)


@pytest.mark.parametrize(
    ("max_bytes", "sections"),
    [
        (1000, ["Data model", "Address base", "Byte and word order"]),
        (
            600,
            ["Data model", "Byte and word order"],
        ),  # Address base does not fit; a later, smaller section does
    ],
)
def test_a_doc_too_big_comes_as_its_matched_sections(
    library: Library, max_bytes: int, sections: list[str]
) -> None:
    answer = library.collect(ids=[MODBUS], query="register", max_bytes=max_bytes)
    (item,) = answer["items"]
    assert item["whole"] is False and item["sections"] == sections
    matched = {
        h["section"] for h in library.search("register", limit=100)["hits"] if h["id"] == MODBUS
    }
    assert set(sections) <= matched
    expected = "".join(library.get(MODBUS, section=s)["content"] for s in sections)
    assert item["content"] == expected
    assert item["bytes"] == len(expected.encode("utf-8"))
    assert answer["bytes_used"] == item["bytes"] <= max_bytes
    assert answer["omissions"] == []


def test_bytes_used_counts_content_only(library: Library) -> None:
    noise = [f"no.such.doc{n}" for n in range(40)]
    answer = library.collect(ids=[*EXAMPLE_IDS, *noise], max_bytes=4000)
    assert (
        answer["bytes_used"]
        == sum(i["bytes"] for i in answer["items"])
        == sum(len(i["content"].encode()) for i in answer["items"])
    )
    assert answer["bytes_used"] <= 4000 and answer["budget"] == 4000
    assert len(json.dumps(answer["omissions"])) > 4000  # the envelope is big, and not counted
    # an exact fit: the whole budget is the content, nothing is reserved for the envelope
    size = len(library.bundle.read(library.doc(AC200).content))  # type: ignore[union-attr]
    exact = library.collect(ids=[AC200], max_bytes=size)
    assert exact["items"][0]["whole"] is True and exact["bytes_used"] == size
    assert library.collect(ids=[AC200], max_bytes=size - 1)["items"] == []


def test_no_match(library: Library) -> None:
    nothing = library.collect(query="sourdough")
    assert (
        nothing["items"] == []
        and nothing["omissions"] == []
        and nothing["no_match"] is True
        and nothing["bytes_used"] == 0
    )
    assert library.collect(query="modbus")["no_match"] is False


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 0},
        {"limit": True},
        {"limit": "3"},
        {"max_bytes": -1},
        {"max_bytes": 0},
        {"max_bytes": 2.5},
        {"ids": "not-a-list"},
        {"ids": b"bytes"},
        {"ids": 7},
        {"ids": [MODBUS] * (hc.MAX_COLLECT_IDS + 1)},
        {"revisions": [1]},
        {"revisions": "abc"},
    ],
)
def test_bad_arguments_never_raise(library: Library, shelf: Shelf, kwargs: dict[str, Any]) -> None:
    for answer in (
        library.collect(**kwargs),
        shelf.collect(**kwargs),
        hc.collect([library.snapshot], **kwargs),
    ):
        assert answer["error"]["code"] == "bad_arguments"
        assert answer["items"] == [] and answer["no_match"] is True
        json.dumps(answer)


def test_other_refusals_are_structured(library: Library) -> None:
    wrong_call = library.collect("q", [MODBUS], None, 1, 1, "extra")  # type: ignore[call-arg]
    assert wrong_call["error"]["code"] == "bad_arguments"
    bad_query = library.collect(query="foo~5")
    assert bad_query["error"]["code"] == "fuzzy_too_far" and bad_query["items"] == []


def test_collect_is_deterministic(library: Library, shelf: Shelf) -> None:
    calls: list[dict[str, Any]] = [
        {"ids": [MQTT, "device.acme.ac20", AC200, AC200], "max_bytes": 3000},
        {"query": "register word order", "max_bytes": 1500},
        {"limit": 2, "kind": "device"},
    ]
    for handler in (library.collect, shelf.collect):
        for kwargs in calls:
            assert json.dumps(handler(**kwargs), sort_keys=True) == json.dumps(
                handler(**kwargs), sort_keys=True
            )


def test_full_collect_with_limit_one(library: Library) -> None:
    answer = library.collect(limit=1)
    assert item_ids(answer) == [AC200]
    assert reasons(answer) == [
        (f"plant-floor:{i}", "output_limit") for i in sorted(EXAMPLE_IDS)[1:]
    ]
    assert all(o["detail"] == "beyond limit=1" for o in answer["omissions"])


def test_ids_as_an_iterator(library: Library) -> None:
    answer = library.collect(ids=iter([MODBUS, MQTT]))
    assert item_ids(answer) == [MODBUS, MQTT]


def test_collect_respects_max_response_chars(plant_floor_bundle: Path) -> None:
    small = Library.open(plant_floor_bundle, [PUBLIC], max_response_chars=2000)
    answer = small.collect()  # max_bytes defaults to 32,000; the schema allows up to 1,000,000
    assert answer["response_chars"] <= 2000
    assert len(json.dumps(answer, ensure_ascii=False)) <= 2000


# -- ask ------------------------------------------------------------------------------------


def test_key_terms() -> None:
    assert ha.key_terms("What is the register map of the AC-200?") == ["regist", "map", "ac", "200"]
    assert ha.key_terms("Registers, registers and REGISTER 7") == [
        "regist"
    ]  # deduplicated, one-digit numbers dropped
    assert ha.key_terms("what is the") == []


def check_grounded(answer: dict[str, Any]) -> None:
    assert answer["evidence_state"] == "grounded"
    terms, missing = answer["key_terms"], answer["missing_terms"]
    assert set(missing) <= set(terms)
    assert (answer["coverage"] == 1.0) is (not missing)  # weighted: a missing term costs its IDF
    assert answer["coverage"] >= hg.GROUNDED_COVERAGE
    assert answer["sources"] and "From " in answer["answer"]
    for source in answer["sources"]:
        assert {
            "document_id",
            "title",
            "version",
            "section",
            "excerpt",
            "ref",
            "anchor",
            "score",
        } <= set(source)
        assert (
            source["excerpt"] and f"\u201c{source['excerpt']}\u201d" in answer["answer"]
        )  # quoted verbatim
        cited = (
            source["ref"] if ", " in (answer["library"] or "") else source["document_id"]
        )  # a shelf cites qualified refs
        assert f"[{cited}]" in answer["answer"]


def test_ask_grounded_register_map(library: Library) -> None:
    answer = library.ask("What is the register map of the AC-200?")
    check_grounded(answer)
    assert (
        answer["key_terms"] == ["regist", "map", "ac", "200"]
        and answer["missing_terms"] == []
        and answer["coverage"] == 1.0
    )
    sources = answer["sources"]
    assert len(sources) == ha.DEFAULT_ASK_SOURCES
    assert sources[0]["document_id"] == AC200
    assert "Register map" in [s["section"] for s in sources if s["document_id"] == AC200]
    ac200 = next(s for s in sources if s["section"] == "Register map")
    assert (
        ac200["title"] == "Acme AC-200 air compressor (fictional)" and ac200["version"] == "2.1"
    )  # the doc's own version
    assert "1-based document addresses" in ac200["excerpt"]
    assert (answer["library"], answer["version"]) == ("plant-floor 1.0.0", "1.0.0")


def test_ask_weighs_key_terms_by_how_rare_they_are_in_the_library(library: Library) -> None:
    answer = library.ask("What byte order does Modbus use?")
    check_grounded(answer)
    # "use" (stem "us") is missing; weighed by IDF it costs 0.297 of the question, not 1/4
    assert answer["missing_terms"] == ["us"] and answer["coverage"] == 0.703
    assert answer["sources"][0]["document_id"] == MODBUS
    byte_order = next(s for s in answer["sources"] if s["section"] == "Byte and word order")
    assert (
        byte_order["document_id"] == MODBUS and byte_order["version"] == "1.0.0"
    )  # no doc version: the library's
    assert "`ABCD` (high word first)" in byte_order["excerpt"]


def test_ask_outside_the_library_is_insufficient(library: Library) -> None:
    answer = library.ask("How do I bake a sourdough bread?")
    assert answer["evidence_state"] == "insufficient"
    assert answer["key_terms"] == ["bake", "sourdough", "bread"] == answer["missing_terms"]
    assert answer["coverage"] == 0.0 and answer["sources"] == []
    assert (
        "does not cover" in answer["answer"]
        and "missing: bake, sourdough, bread" in answer["answer"]
    )
    assert "No answer is given" in answer["answer"]


def test_ask_borderline_is_insufficient_with_the_closest_sources(library: Library) -> None:
    answer = library.ask("How do I bake sourdough bread over Modbus?")
    assert answer["evidence_state"] == "insufficient"
    assert answer["coverage"] < hg.GROUNDED_COVERAGE
    assert answer["missing_terms"] == ["bake", "sourdough", "bread"]
    assert (
        answer["sources"] and answer["sources"][0]["document_id"] == MODBUS
    )  # the closest passage, listed
    assert "does not cover" in answer["answer"]
    for source in answer["sources"]:  # no procedure: nothing is quoted
        assert source["excerpt"] not in answer["answer"]
    assert "\u201c" not in answer["answer"]


def test_ask_needs_concentrated_evidence(library: Library) -> None:
    """Every key term is somewhere, each in another passage: not grounded."""
    answer = library.ask("sparkplug baud coils handover", limit=4)
    assert answer["coverage"] == 1.0 >= hg.GROUNDED_COVERAGE
    assert (
        answer["evidence_state"] == "insufficient"
    )  # the best passage holds 1 of 4 < GROUNDED_TOP_COVERAGE
    assert len(answer["sources"]) == 4 and answer["missing_terms"] == []


def test_ask_unavailable_without_a_library() -> None:
    for answer in (Shelf([]).ask("What is the Modbus port?"), ha.ask([], "x")):
        assert answer["evidence_state"] == "unavailable"
        assert answer["sources"] == [] and answer["library"] is None and answer["version"] is None
        assert answer["correlation_id"]
        json.dumps(answer)


def test_ask_only_stop_words(library: Library) -> None:
    answer = library.ask("what is the")
    assert (
        answer["evidence_state"] == "insufficient"
        and answer["key_terms"] == []
        and answer["sources"] == []
    )
    assert "stop words" in answer["answer"]


@pytest.mark.parametrize(
    ("question", "kwargs"),
    [
        (42, {}),
        (None, {}),
        ("", {}),
        ("   ", {}),
        (["modbus"], {}),
        ("modbus", {"limit": 0}),
        ("modbus", {"limit": 11}),
        ("modbus", {"limit": True}),
    ],
)
def test_ask_bad_arguments(
    library: Library, shelf: Shelf, question: Any, kwargs: dict[str, Any]
) -> None:
    for answer in (library.ask(question, **kwargs), shelf.ask(question, **kwargs)):
        assert answer["error"]["code"] == "bad_arguments"
        assert answer["evidence_state"] == "insufficient" and answer["sources"] == []
    assert library.ask()["error"]["code"] == "bad_arguments"  # type: ignore[call-arg]


def test_ask_correlation_id(library: Library) -> None:
    assert library.ask("modbus port", correlation_id="req-42")["correlation_id"] == "req-42"
    assert library.ask("sourdough", correlation_id="req-43")["correlation_id"] == "req-43"
    first, second = (
        library.ask("modbus port")["correlation_id"],
        library.ask("modbus port")["correlation_id"],
    )
    assert first != second and len(first) == 32 and int(first, 16) >= 0


def test_ask_is_deterministic_but_for_the_correlation_id(library: Library) -> None:
    question = "What word order does the EM3 use?"
    assert json.dumps(library.ask(question, correlation_id="c"), sort_keys=True) == json.dumps(
        library.ask(question, correlation_id="c"), sort_keys=True
    )


def test_ask_finds_words_whose_stem_is_not_stable(library: Library) -> None:
    assert [h["section"] for h in library.search("disagree")["hits"]] == ["Byte and word order"]
    answer = library.ask("disagree")
    assert answer["sources"] and answer["sources"][0]["section"] == "Byte and word order"
    assert answer["evidence_state"] == "grounded"


# -- get(revision=...) ------------------------------------------------------------------------


def test_get_serves_only_the_revision_asked_for(library: Library) -> None:
    current = library.get(MODBUS)["revision"]
    assert library.get(MODBUS, revision=current)["found"] is True
    assert library.get(MODBUS, revision=current)["content"] == library.get(MODBUS)["content"]
    refused = library.get(MODBUS, revision=OLD)
    assert refused["found"] is False and refused["error"]["code"] == "unavailable_revision"
    assert refused["revision"] == current and "content" not in refused and "sections" not in refused
    assert library.get(f"plant-floor:{MODBUS}", revision=current)["found"] is True


def test_rebuild_refuses_the_old_revision_and_serves_the_new(tmp_path: Path) -> None:
    config = copy_example(tmp_path / "src")
    out = built(config, tmp_path / "bundle")
    library = Library.open(out, [PUBLIC])
    old = {i: library.get(i)["revision"] for i in (MODBUS, MQTT)}
    edit(
        tmp_path / "src" / "docs" / "protocols" / "modbus.md",
        "## Scaling",
        "## Gateways\n\nOne gateway per line.\n\n## Scaling",
    )
    built(config, out)
    assert library.reload()["reloaded"] is True
    new = library.get(MODBUS)["revision"]
    assert new != old[MODBUS]
    refused = library.get(MODBUS, revision=old[MODBUS])
    assert (
        refused["found"] is False
        and refused["error"]["code"] == "unavailable_revision"
        and refused["revision"] == new
    )
    assert "content" not in refused
    served = library.get(MODBUS, revision=new)
    assert served["found"] is True and "One gateway per line." in served["content"]
    assert (
        library.get(MQTT, revision=old[MQTT])["found"] is True
    )  # an unchanged doc keeps its revision
    answer = library.collect(ids=[MODBUS, MQTT], revisions=old)
    assert item_ids(answer) == [MQTT] and reasons(answer) == [
        ("plant-floor:protocol.modbus", "unavailable_revision")
    ]
    assert "One gateway per line." not in json.dumps(answer)


# -- Shelf ------------------------------------------------------------------------------------


def test_shelf_list_qualifies_and_names_collisions(shelf: Shelf) -> None:
    answer = shelf.list(limit=100)
    refs = [d["ref"] for d in answer["docs"]]
    assert refs == sorted(
        [f"plant-floor:{i}" for i in EXAMPLE_IDS]
        + ["site-b:device.acme.ac200", "site-b:guide.night-shift", "site-b:protocol.modbus"]
    )
    assert all(d["ref"] == f"{d['library']}:{d['id']}" for d in answer["docs"])
    assert answer["collisions"] == [AC200, MODBUS]
    assert answer["count"] == 9
    assert shelf.list(kind="guide")["collisions"] == []


def test_shelf_get(shelf: Shelf, site_b: Library) -> None:
    ambiguous = shelf.get(MODBUS)
    assert ambiguous["found"] is False and ambiguous["error"]["code"] == "ambiguous_identity"
    assert ambiguous["choices"] == ["plant-floor:protocol.modbus", "site-b:protocol.modbus"]
    assert "content" not in ambiguous
    qualified = shelf.get("site-b:protocol.modbus", section="Site B notes")
    assert qualified["found"] is True and (qualified["ref"], qualified["library"]) == (
        "site-b:protocol.modbus",
        "site-b",
    )
    assert "pinned to unit id 9" in qualified["content"]
    other = shelf.get("plant-floor:protocol.modbus")
    assert other["found"] is True and "Site B notes" not in other["content"]
    only_one = shelf.get(NIGHT)  # one owner: the unqualified id works
    assert only_one["found"] is True and only_one["ref"] == "site-b:guide.night-shift"
    revision = site_b.get(MODBUS)["revision"]
    assert shelf.get("site-b:protocol.modbus", revision=revision)["found"] is True
    stale = shelf.get("site-b:protocol.modbus", revision=OLD)
    assert stale["found"] is False and stale["error"]["code"] == "unavailable_revision"
    unknown = shelf.get("device.acme.ac20")
    assert (
        unknown["found"] is False
        and unknown["error"]["code"] == "unknown_identity"
        and AC200 in unknown["error"]["message"]
    )


def test_shelf_search_merges_hits(shelf: Shelf, library: Library, site_b: Library) -> None:
    answer = shelf.search("gateway", limit=10)
    refs = [h["ref"] for h in answer["hits"]]
    assert "site-b:protocol.modbus" in refs and "plant-floor:device.voltra.em3" in refs
    assert all(h["ref"] == f"{h['library']}:{h['id']}" for h in answer["hits"])
    scores = [h["score"] for h in answer["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert answer["count"] == library.search("gateway")["count"] + site_b.search("gateway")["count"]


def test_shelf_collect_across_libraries(shelf: Shelf, library: Library, site_b: Library) -> None:
    answer = shelf.collect(
        ids=["site-b:protocol.modbus", "plant-floor:protocol.modbus", NIGHT, MQTT],
        max_bytes=100_000,
    )
    assert [i["ref"] for i in answer["items"]] == [
        "site-b:protocol.modbus",
        "plant-floor:protocol.modbus",
        "site-b:guide.night-shift",
        "plant-floor:protocol.mqtt",
    ]
    assert answer["items"][0]["content"] != answer["items"][1]["content"]
    assert answer["items"][0]["revision"] == site_b.get(MODBUS)["revision"]
    assert answer["items"][1]["revision"] == library.get(MODBUS)["revision"]
    by_query = shelf.collect(query="pinned gateway")
    assert by_query["items"][0]["ref"] == "site-b:protocol.modbus"
    assert "plant-floor:device.voltra.em3" in [i["ref"] for i in by_query["items"]]
    revised = shelf.collect(
        ids=["site-b:protocol.modbus", "plant-floor:protocol.modbus"],
        revisions={"site-b:protocol.modbus": OLD},
    )
    assert [i["ref"] for i in revised["items"]] == ["plant-floor:protocol.modbus"]
    assert reasons(revised) == [("site-b:protocol.modbus", "unavailable_revision")]


def test_shelf_ask(shelf: Shelf) -> None:
    answer = shelf.ask("Which unit id is the gateway pinned to on site B?", correlation_id="s1")
    check_grounded(answer)
    assert (
        answer["sources"][0]["ref"] == "site-b:protocol.modbus"
        and answer["sources"][0]["section"] == "Site B notes"
    )
    assert (
        answer["library"] == "plant-floor 1.0.0, site-b 1.0.0"
        and answer["version"] is None
        and answer["correlation_id"] == "s1"
    )


def test_shelf_refuses_two_libraries_with_one_name(
    library: Library, plant_floor_bundle: Path
) -> None:
    twin = Library.open(plant_floor_bundle, [PUBLIC])
    with pytest.raises(ValueError, match="plant-floor"):
        Shelf([library, twin])
    with pytest.raises(ValueError):
        Shelf(iter([library, library]))


# -- transports -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(library: Library) -> Iterator[tuple[str, int]]:
    from handbook.serve.mcp import http_app

    with live(create_app(library, mcp=http_app(library))) as address:
        yield address


def test_mcp_collect_and_ask(server: tuple[str, int], library: Library) -> None:
    from mcp import Client

    revision = library.get(MODBUS)["revision"]

    async def main() -> list[Any]:
        async with Client(f"http://{server[0]}:{server[1]}/mcp", mode="legacy") as client:
            return [
                await client.call_tool(
                    "knowledge_collect",
                    {
                        "ids": [MODBUS, AC200, "nope.nope"],
                        "max_bytes": 2500,
                        "revisions": [
                            {"id": MODBUS, "revision": revision},
                            {"id": AC200, "revision": OLD},
                        ],
                    },
                ),
                await client.call_tool(
                    "knowledge_collect", {"query": "register", "kind": "device", "limit": 1}
                ),
                await client.call_tool(
                    "knowledge_ask", {"question": "What byte order does Modbus use?"}
                ),
                await client.call_tool(
                    "knowledge_ask", {"question": "How do I bake a sourdough bread?", "limit": 2}
                ),
                await client.call_tool(
                    "knowledge_collect", {"revisions": {MODBUS: revision}}
                ),  # a map: not the schema's list
                await client.call_tool("knowledge_collect", {"ids": [MODBUS], "max_bytes": 0}),
                await client.call_tool("knowledge_ask", {"question": 42}),
            ]

    collected, by_query, grounded, insufficient, *refused = anyio.run(main)
    assert all(r.is_error and r.structured_content is None for r in refused)
    assert not collected.is_error
    assert collected.structured_content == library.collect(
        ids=[MODBUS, AC200, "nope.nope"], max_bytes=2500, revisions={MODBUS: revision, AC200: OLD}
    )
    assert item_ids(collected.structured_content) == [MODBUS]
    assert json.loads(collected.content[0].text) == collected.structured_content
    assert by_query.structured_content == library.collect(query="register", kind="device", limit=1)
    assert without_correlation(grounded.structured_content) == without_correlation(
        library.ask("What byte order does Modbus use?")
    )
    assert grounded.structured_content["evidence_state"] == "grounded"
    assert without_correlation(insufficient.structured_content) == without_correlation(
        library.ask("How do I bake a sourdough bread?", limit=2)
    )
    assert (
        not insufficient.is_error
        and insufficient.structured_content["evidence_state"] == "insufficient"
    )


def test_http_collect_and_ask(server: tuple[str, int], library: Library) -> None:
    revision = library.get(MODBUS)["revision"]
    query = urllib.parse.urlencode(
        {
            "ids": f"{MODBUS},{AC200},plant-floor:{MQTT}",
            "revisions": f"{MODBUS}={revision},{AC200}={OLD}",
            "max_bytes": "2000",
        }
    )
    status, body = get_json(server, f"/api/v1/collect?{query}")
    assert status == 200
    assert body == library.collect(
        ids=[MODBUS, AC200, f"plant-floor:{MQTT}"],
        revisions={MODBUS: revision, AC200: OLD},
        max_bytes=2000,
    )
    assert ("plant-floor:device.acme.ac200", "unavailable_revision") in reasons(body)

    status, body = get_json(server, "/api/v1/collect?query=register&kind=protocol&limit=1")
    assert status == 200 and body == library.collect(query="register", kind="protocol", limit=1)

    status, body = get_json(server, "/api/v1/collect?max_bytes=-1")
    assert status == 400 and body["error"]["code"] == "bad_arguments"

    question = "What is the register map of the AC-200?"
    status, body = get_json(
        server, "/api/v1/ask?" + urllib.parse.urlencode({"question": question, "limit": "2"})
    )
    assert status == 200 and without_correlation(body) == without_correlation(
        library.ask(question, limit=2)
    )
    status, body = get_json(server, "/api/v1/ask?question=sourdough")
    assert status == 200 and body["evidence_state"] == "insufficient"
    status, body = get_json(server, "/api/v1/ask")
    assert status == 400 and body["error"]["code"] == "bad_arguments"


def test_rpc_registers_collect_and_ask(library: Library) -> None:
    registered: dict[str, Any] = {}
    assert (
        register_tools(lambda topic, handler: registered.__setitem__(topic, handler), library) == []
    )
    assert {"knowledge.collect", "knowledge.ask"} <= set(registered)
    answer = registered["knowledge.collect"](ids=[MQTT, MODBUS], max_bytes=5000)
    assert answer == library.collect(ids=[MQTT, MODBUS], max_bytes=5000) and item_ids(answer) == [
        MQTT,
        MODBUS,
    ]
    asked = registered["knowledge.ask"]("What byte order does Modbus use?", correlation_id="rpc-1")
    assert asked == library.ask("What byte order does Modbus use?", correlation_id="rpc-1")
    assert registered["knowledge.collect"](limit=0)["error"]["code"] == "bad_arguments"


def test_cli_collect(plant_floor_bundle: Path, library: Library) -> None:
    bundle = ["--bundle", str(plant_floor_bundle), "--key", PUBLIC]
    run = run_cli(
        "collect",
        *bundle,
        "--id",
        MQTT,
        "--id",
        AC200,
        "--revision",
        f"{AC200}={OLD}",
        "--max-bytes",
        "5000",
        "--json",
    )
    assert run.exit_code == 0
    assert json.loads(run.stdout) == library.collect(
        ids=[MQTT, AC200], revisions={AC200: OLD}, max_bytes=5000
    )
    run = run_cli(
        "collect", *bundle, "--query", "register", "--filter", "kind=device", "-n", "1", "--json"
    )
    assert run.exit_code == 0 and json.loads(run.stdout) == library.collect(
        query="register", kind="device", limit=1
    )
    text = run_cli("collect", *bundle, "--id", MODBUS, "--id", "nope.nope")
    assert (
        text.exit_code == 0
        and "Modbus TCP and RTU" in text.stdout
        and "left out nope.nope: unknown_identity" in text.stdout
    )
    assert run_cli("collect", *bundle, "--max-bytes", "0", "--json").exit_code == 1
    assert run_cli("collect", *bundle, "--revision", "no-equals-sign").exit_code == 2


def test_cli_ask(plant_floor_bundle: Path, library: Library) -> None:
    bundle = ["--bundle", str(plant_floor_bundle), "--key", PUBLIC]
    question = "What byte order does Modbus use?"
    run = run_cli("ask", question, *bundle, "--json")
    assert run.exit_code == 0
    assert without_correlation(json.loads(run.stdout)) == without_correlation(library.ask(question))
    run = run_cli("ask", "How do I bake a sourdough bread?", *bundle, "--json")
    assert run.exit_code == 1 and json.loads(run.stdout)["evidence_state"] == "insufficient"
    text = run_cli("ask", question, *bundle)
    assert (
        text.exit_code == 0
        and "grounded" in text.stdout
        and "source: protocol.modbus" in text.stdout
    )


def test_cli_get_revision(plant_floor_bundle: Path, library: Library) -> None:
    bundle = ["--bundle", str(plant_floor_bundle), "--key", PUBLIC]
    revision = library.get(MODBUS)["revision"]
    run = run_cli("get", MODBUS, "--revision", revision, *bundle, "--json")
    assert run.exit_code == 0 and json.loads(run.stdout)["found"] is True
    run = run_cli("get", MODBUS, "--revision", OLD, *bundle, "--json")
    assert run.exit_code == 1
    refused = json.loads(run.stdout)
    assert (
        refused["error"]["code"] == "unavailable_revision"
        and refused["revision"] == revision
        and "content" not in refused
    )
