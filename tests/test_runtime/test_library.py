"""`handbook.Library`, the agent-facing handlers: a bundle is served only when its
signature and hashes check out, list/get/search answer with bounded, self-describing
dicts whatever they are given, search ranks exactly as lunr does, and reload swaps in a
new bundle only when it verifies."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import KEY, PUBLIC, ROOT, MakeLibrary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lunr.index import Index

import handbook.search.query
from handbook import BundleError, HashMismatchError, Library, MissingFileError, SignatureError
from handbook.bundle.manifest import Manifest
from handbook.bundle.signing import (
    MANIFEST_TAG,
    TRUSTED_KEYS_ENV,
    generate_private_key,
    load_private_key,
    public_key_of,
    sign,
)
from handbook.search.index import SearchIndex
from handbook.search.stemmer import stem
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
EPOCH = "1767225600"

EXAMPLE_IDS = [
    "device.acme.ac200",
    "device.voltra.em3",
    "guide.about",
    "guide.commissioning",
    "protocol.modbus",
    "protocol.mqtt",
]
SUMMARY_KEYS = {"id", "kind", "title", "summary", "verified", "chars", "sections"}
HIT_KEYS = {"id", "title", "section", "anchor", "score", "excerpt"}
BUDGETS = [1500, 2000, 3000, 5000, 10_000, 40_000]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reproducible builds, and no keys leaking in from the environment."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("HANDBOOK_SIGNING_KEY", raising=False)
    monkeypatch.delenv(TRUSTED_KEYS_ENV, raising=False)


def _build(config: Path, out: Path, key: Any = KEY) -> Path:
    """Build outside a test's monkeypatch (module fixtures); returns the published link."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.delenv("CI", raising=False)
        mp.delenv("HANDBOOK_SIGNING_KEY", raising=False)
        mp.delenv(TRUSTED_KEYS_ENV, raising=False)
        build(load_config(config), out, key)
    return out


def _write_library(root: Path, docs: dict[str, str]) -> Path:
    """A library folder like conftest's `make_library`, usable from module fixtures."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for rel, text in docs.items():
        (root / "docs" / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    config = {
        "site_name": "t",
        "docs_dir": "docs",
        "plugins": [{"handbook": {"library": "crafted", "version": "1.0.0"}}],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root / "mkdocs.yml"


def _doc(doc_id: str, title: str, body: str) -> str:
    return (
        f"---\nid: {doc_id}\ntitle: {title}\nkind: guide\n"
        f"summary: {title}, built for the runtime tests.\n---\n# {title}\n\n{body}"
    )


# A long section with non-ASCII text (offsets count characters, not bytes).
_SENTENCES = " ".join(
    f"Sentence {i} about pumps and valves at 20 °C \u2013 “quoted” ü." for i in range(160)
)
LONG_BODY = (
    "Short overview.\n\n## Long section\n\n"
    + "\n\n".join(_SENTENCES[i : i + 300] for i in range(0, len(_SENTENCES), 300))
    + "\n\n## Short section\n\nTail text.\n"
)
FLAT_BODY = (
    "\n\n".join(f"Paragraph {i} has no heading above it, only words." for i in range(200)) + "\n"
)
ESCAPES_BODY = (
    "Overview.\n\n## Code\n\n```text\n"
    + "\n".join('{"k":"C:\\\\x\\\\y","q":"\\"\\""}' for _ in range(300))
    + "\n```\n"
)
WEIRD_BODY = "Overview.\n\n## #1 priority\n\nOne.\n\n## C++ / C#\n\nTwo.\n\n## Same\n\nThree.\n\n## Same\n\nFour.\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One signed build of the example library (the resolved version folder)."""
    return _build(EXAMPLE, tmp_path_factory.mktemp("example") / "bundle").resolve()


@pytest.fixture(scope="module")
def lib(built: Path) -> Library:
    return Library.open(built, [PUBLIC])


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library built for the edge cases the example does not have."""
    root = tmp_path_factory.mktemp("crafted")
    config = _write_library(
        root,
        {
            "long.md": _doc("guide.long", "A long guide", LONG_BODY),
            "flat.md": _doc("guide.flat", "A flat guide", FLAT_BODY),
            "escapes.md": _doc("guide.escapes", "Escapes", ESCAPES_BODY),
            "weird.md": _doc("guide.weird", "Weird headings", WEIRD_BODY),
        },
    )
    return _build(config, root / "out").resolve()


def _json_len(resp: dict[str, Any]) -> int:
    """The library's own measure: characters of the JSON text."""
    return len(json.dumps(resp, ensure_ascii=False))


def _copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(built, target)
    return target


def _ids(resp: dict[str, Any]) -> list[str]:
    return [d["id"] for d in resp["docs"]]


def _content_file(bundle: Path, doc_id: str) -> Path:
    catalog = json.loads((bundle / "catalog.json").read_bytes())
    return bundle / next(d["content"] for d in catalog["docs"] if d["id"] == doc_id)


# -- opening: signatures, keys, tampering ---------------------------------------------------


def test_open_verifies_the_signature(lib: Library) -> None:
    status = lib.status()
    assert status["signature"] == "verified"
    assert status["signed_by"] == [public_key_of(KEY).keyid]
    assert (status["library"], status["version"], status["docs"]) == ("plant-floor", "1.0.0", 6)
    assert status["last_reload_error"] is None


def test_open_with_a_symlinked_out_path(built: Path) -> None:
    """The published path is a symlink to the version folder; opening it must work."""
    link = built.parent.parent / "bundle"
    assert link.is_symlink()
    assert Library.open(link, [PUBLIC]).get("protocol.mqtt")["found"] is True


def test_unsigned_bundle_is_refused(tmp_path: Path) -> None:
    out = _build(EXAMPLE, tmp_path / "unsigned", key=None)
    with pytest.raises(SignatureError, match="unsigned"):
        Library.open(out, [PUBLIC])
    opened = Library.open(out, allow_unsigned=True)
    assert opened.status()["signature"] == "unsigned"
    assert opened.get("protocol.mqtt")["found"] is True


def test_wrong_key_is_refused(built: Path) -> None:
    _, other = generate_private_key()
    with pytest.raises(SignatureError, match="signature") as info:
        Library.open(built, [str(other)])
    assert isinstance(info.value, BundleError)
    assert "0 valid signature" in str(info.value)


def test_no_trusted_key_is_refused(built: Path) -> None:
    with pytest.raises(SignatureError, match="no trusted keys"):
        Library.open(built)


def test_changed_manifest_fails_the_signature(built: Path, tmp_path: Path) -> None:
    bundle = _copy(built, tmp_path)
    manifest = bundle / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"version":"1.0.0"', b'"version":"1.0.1"'))
    with pytest.raises(SignatureError):
        Library.open(bundle, [PUBLIC])


def test_trusted_keys_from_the_environment(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, other = generate_private_key()
    monkeypatch.setenv(TRUSTED_KEYS_ENV, f"{other}, {PUBLIC}")
    assert Library.open(built).status()["signature"] == "verified"
    monkeypatch.setenv(TRUSTED_KEYS_ENV, str(other))
    with pytest.raises(SignatureError):
        Library.open(built)


def _add_signatures(bundle: Path, *extra: dict[str, str]) -> None:
    manifest = Manifest.from_bytes((bundle / "manifest.json").read_bytes())
    updated = Manifest(manifest.signed, (*manifest.signatures, *extra))
    (bundle / "manifest.json").write_bytes(updated.to_bytes())


def test_threshold_counts_distinct_trusted_keys(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _copy(built, tmp_path)
    pem, second = generate_private_key()
    signed = Manifest.from_bytes((bundle / "manifest.json").read_bytes()).signed.to_dict()
    with pytest.raises(SignatureError, match="2 required"):
        Library.open(bundle, [PUBLIC, str(second)], threshold=2)
    _add_signatures(bundle, sign(load_private_key(pem), MANIFEST_TAG, signed))
    assert len(Library.open(bundle, [PUBLIC, str(second)], threshold=2).status()["signed_by"]) == 2
    with pytest.raises(SignatureError, match="2 required"):
        Library.open(bundle, [PUBLIC], threshold=2)
    monkeypatch.setenv(TRUSTED_KEYS_ENV, f"{PUBLIC},{second}")
    assert len(Library.open(bundle, threshold=2).status()["signed_by"]) == 2


def test_one_key_signing_twice_does_not_meet_a_threshold(built: Path, tmp_path: Path) -> None:
    bundle = _copy(built, tmp_path)
    manifest = Manifest.from_bytes((bundle / "manifest.json").read_bytes())
    _add_signatures(bundle, *manifest.signatures)
    with pytest.raises(SignatureError):
        Library.open(bundle, [PUBLIC, PUBLIC], threshold=2)


def test_missing_folder_is_a_bundle_error(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        Library.open(tmp_path / "nothing", [PUBLIC])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_tampered_search_file_is_refused(built: Path, tmp_path: Path) -> None:
    bundle = _copy(built, tmp_path)
    _flip(bundle / "search.bin")
    with pytest.raises(HashMismatchError, match=r"search\.bin"):
        Library.open(bundle, [PUBLIC])


def _open_or_error(bundle: Path, name: str) -> Library | None:
    """Files may be hashed at open or on first use; at open, the error must name the file."""
    try:
        return Library.open(bundle, [PUBLIC])
    except HashMismatchError as exc:
        assert name in str(exc)
        return None


def _structured_error(resp: Any, name: str) -> None:
    assert isinstance(resp, dict)
    json.dumps(resp)
    error = resp.get("error")
    assert error, resp
    message = error["message"] if isinstance(error, dict) else error
    assert name in message
    assert not resp.get("docs") and not resp.get("hits") and "content" not in resp


def test_tampered_catalog_is_refused_by_the_first_call_that_needs_it(
    built: Path, tmp_path: Path
) -> None:
    bundle = _copy(built, tmp_path)
    _flip(bundle / "catalog.json")
    opened = _open_or_error(bundle, "catalog.json")
    if opened is None:
        return
    _structured_error(opened.list(), "catalog.json")
    _structured_error(opened.list(query="modbus"), "catalog.json")
    _structured_error(opened.get("protocol.mqtt"), "catalog.json")
    _structured_error(opened.list(), "catalog.json")  # and it stays refused


MARKER = b"TAMPERED-MARKER!"


def test_tampered_content_is_never_served(built: Path, tmp_path: Path) -> None:
    bundle = _copy(built, tmp_path)
    content = _content_file(bundle, "device.acme.ac200")
    data = content.read_bytes()
    assert b"screw compressor" in data and len(MARKER) == len(b"screw compressor")
    content.write_bytes(data.replace(b"screw compressor", MARKER, 1))
    opened = _open_or_error(bundle, content.name)
    if opened is None:
        return
    name = f"content/{content.name}"
    answers = [
        opened.get("device.acme.ac200"),
        opened.get("device.acme.ac200", section="Pitfalls"),
        opened.get("device.acme.ac200"),
    ]
    for resp in answers:
        _structured_error(resp, name)
        assert MARKER.decode() not in json.dumps(resp)
    # a search reads no content file: its excerpts come from the verified search file
    found = opened.search("screw compressor")
    assert found["count"] > 0 and "screw compressor" in json.dumps(found)
    assert MARKER.decode() not in json.dumps(found)
    assert opened.get("protocol.mqtt")["found"] is True  # other docs still verify and serve
    assert opened.search("qos")["count"] > 0


# -- list -----------------------------------------------------------------------------------


def test_list_returns_compact_entries(lib: Library) -> None:
    resp = lib.list()
    assert resp["count"] == 6 and _ids(resp) == EXAMPLE_IDS
    assert isinstance(resp["hint"], str) and resp["truncated"] is False
    for entry in resp["docs"]:
        assert SUMMARY_KEYS <= entry.keys() <= SUMMARY_KEYS | {"equipment_type", "protocol"}
        assert "content" not in entry
        assert all(set(s) == {"title", "anchor", "chars"} for s in entry["sections"])
    ac200 = resp["docs"][0]
    assert ac200["protocol"] == "modbus" and ac200["equipment_type"] == "air_compressor"
    assert ac200["verified"] == "unverified" and ac200["chars"] > 0
    assert [s["anchor"] for s in ac200["sections"]] == [
        "connection-defaults",
        "register-map",
        "pitfalls",
        "collector-snippet",
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            {"protocol": "modbus"},
            ["device.acme.ac200", "device.voltra.em3", "guide.commissioning", "protocol.modbus"],
        ),
        (
            {"protocol": "MODBUS"},
            ["device.acme.ac200", "device.voltra.em3", "guide.commissioning", "protocol.modbus"],
        ),
        ({"kind": "Device"}, ["device.acme.ac200", "device.voltra.em3"]),
        ({"verified": "VERIFIED"}, ["guide.about", "guide.commissioning", "protocol.modbus"]),
        ({"vendor": "acme (FICTIONAL)"}, ["device.acme.ac200"]),
        ({"keywords": "kwh"}, ["device.voltra.em3"]),
        ({"keywords": "Screw Compressor"}, ["device.acme.ac200"]),
        ({"aliases": "modbus/tcp"}, ["protocol.modbus"]),
        ({"equipment_type": "energy_meter", "protocol": "modbus"}, ["device.voltra.em3"]),
        ({"kind": "device", "protocol": "mqtt"}, []),
        ({"protocol": "any"}, EXAMPLE_IDS),
        ({"protocol": "ANY", "kind": "any"}, EXAMPLE_IDS),
        ({"protocol": None}, EXAMPLE_IDS),
    ],
)
def test_list_filters(lib: Library, filters: dict[str, Any], expected: list[str]) -> None:
    """Scalars match case-insensitively, list fields by membership, "any" is no filter."""
    resp = lib.list(**filters)
    assert sorted(_ids(resp)) == expected
    assert resp["count"] == len(expected)


def test_list_unknown_field_names_the_known_fields(lib: Library) -> None:
    resp = lib.list(colour="red")
    assert resp["count"] == 0 and resp["docs"] == []
    assert "colour" in resp["hint"]
    for field in ("protocol", "equipment_type", "keywords", "kind", "vendor"):
        assert field in resp["hint"]


def test_list_unknown_value_names_the_known_values(lib: Library) -> None:
    resp = lib.list(protocol="zigbee")
    assert resp["count"] == 0 and resp["docs"] == []
    assert "zigbee" in resp["hint"] and "modbus" in resp["hint"] and "mqtt" in resp["hint"]


def test_list_limit_says_there_is_more(lib: Library) -> None:
    resp = lib.list(limit=2)
    assert len(resp["docs"]) == 2 and resp["count"] == 6
    assert "6" in resp["hint"]
    assert lib.list(limit="abc")["error"]["code"] == "invalid_limit"


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("AC200", "device.acme.ac200"),
        ("AC-200", "device.acme.ac200"),
        ("ac 200", "device.acme.ac200"),
        ("ac200", "device.acme.ac200"),
        ("Acme AC 200", "device.acme.ac200"),
        ("device.acme.ac200", "device.acme.ac200"),
        ("EM3", "device.voltra.em3"),
        ("EM-3", "device.voltra.em3"),
        ("voltra em 3", "device.voltra.em3"),
        ("Modbus/TCP", "protocol.modbus"),
        ("mqtt", "protocol.mqtt"),
        ("kwh", "device.voltra.em3"),
        ("sparkplug", "protocol.mqtt"),
    ],
)
def test_list_query_finds_ids_aliases_and_model_numbers(
    lib: Library, query: str, first: str
) -> None:
    """However a model number is written, the device comes first."""
    assert _ids(lib.list(query=query))[0] == first


def test_list_query_respects_filters(lib: Library) -> None:
    resp = lib.list(query="modbus", kind="device")
    assert sorted(_ids(resp)) == ["device.acme.ac200", "device.voltra.em3"]
    nothing = lib.list(query="zeppelin")
    assert nothing["count"] == 0 and nothing["docs"] == [] and nothing["hint"]


# -- get ------------------------------------------------------------------------------------


def test_get_whole_doc(lib: Library) -> None:
    resp = lib.get("device.acme.ac200")
    assert resp["found"] is True and resp["truncated"] is False
    assert {"id", "title", "metadata", "revision", "sections", "content"} <= resp.keys()
    assert resp["title"] == "Acme AC-200 air compressor (fictional)"
    assert resp["metadata"]["model"] == "AC-200" and resp["metadata"]["protocol"] == "modbus"
    assert "ac200" in resp["metadata"]["keywords"]
    assert isinstance(resp["revision"], str) and resp["revision"]
    assert resp["content"].startswith("# Acme AC-200 air compressor (fictional)\n")
    assert "## Register map" in resp["content"] and "## Collector snippet" in resp["content"]


@pytest.mark.parametrize(
    "section",
    [
        "Register map",
        "register map",
        "REGISTER MAP",
        "register-map",
        "Register-Map",
        "#register-map",
    ],
)
def test_get_section_by_title_or_anchor(lib: Library, section: str) -> None:
    resp = lib.get("device.acme.ac200", section=section)
    assert resp["found"] is True
    assert resp["content"].startswith("## Register map\n")
    assert "## Pitfalls" not in resp["content"]
    listed = next(s for s in resp["sections"] if s["anchor"] == "register-map")
    assert len(resp["content"]) == listed["chars"]


def test_get_unknown_section_lists_sections_and_close_matches(lib: Library) -> None:
    resp = lib.get("device.acme.ac200", section="registr map")
    assert resp["found"] is False and resp["error"]
    assert [s["anchor"] for s in resp["sections"]] == [
        "connection-defaults",
        "register-map",
        "pitfalls",
        "collector-snippet",
    ]
    assert {"Register map", "register-map"} & set(resp["suggestions"])
    assert "content" not in resp


@pytest.mark.parametrize("wanted", ["device.acme.ac20", "AC-200", "device.acme.AC200"])
def test_get_unknown_id_suggests(lib: Library, wanted: str) -> None:
    resp = lib.get(wanted)
    assert resp["found"] is False and wanted in resp["error"]["message"]
    assert "device.acme.ac200" in resp["suggestions"]
    assert resp["available_ids"] == EXAMPLE_IDS


def test_get_doc_over_budget_returns_overview_and_sections(built: Path) -> None:
    small = Library.open(built, [PUBLIC], max_response_chars=1500)
    resp = small.get("device.acme.ac200")
    assert resp["found"] is True and resp["truncated"] is True
    assert resp["content"].startswith("# Acme AC-200") and "## " not in resp["content"]
    assert "controller speaks" in resp["content"]
    assert [s["anchor"] for s in resp["sections"]] == [
        "connection-defaults",
        "register-map",
        "pitfalls",
        "collector-snippet",
    ]
    assert _json_len(resp) <= 1500


def _pieces(
    library: Library, doc_id: str, section: str | None, first: int = 0
) -> Iterator[dict[str, Any]]:
    offset = first
    for _ in range(1000):
        resp = library.get(doc_id, section=section, offset=offset)
        assert resp["found"] is True, resp
        yield resp
        if not resp["truncated"]:
            return
        assert resp["next_offset"] > offset
        offset = resp["next_offset"]
    raise AssertionError("continuation never ended")


def test_long_section_continues_exactly(crafted: Path) -> None:
    whole = Library.open(crafted, [PUBLIC]).get("guide.long", section="Long section")
    assert whole["truncated"] is False and len(whole["content"]) > 5000
    small = Library.open(crafted, [PUBLIC], max_response_chars=1500)
    pieces = list(_pieces(small, "guide.long", "long-section"))
    assert len(pieces) > 5
    assert all(p["content"] for p in pieces)
    assert "".join(p["content"] for p in pieces) == whole["content"]
    assert all(_json_len(p) <= 1500 for p in pieces)


def test_doc_without_sections_continues_exactly(crafted: Path) -> None:
    whole = Library.open(crafted, [PUBLIC]).get("guide.flat")
    assert whole["truncated"] is False and whole["sections"] == []
    small = Library.open(crafted, [PUBLIC], max_response_chars=2000)
    pieces = list(_pieces(small, "guide.flat", None))
    assert len(pieces) > 2
    assert "".join(p["content"] for p in pieces) == whole["content"]


def test_offset_past_the_end_is_empty(lib: Library) -> None:
    resp = lib.get("protocol.mqtt", offset=10**9)
    assert resp["found"] is True and resp["content"] == "" and resp["truncated"] is False


# -- search ---------------------------------------------------------------------------------


def test_search_returns_section_hits_best_first(lib: Library) -> None:
    resp = lib.search("register map")
    hits = resp["hits"]
    assert hits and resp["count"] >= len(hits)
    assert all(set(h) == HIT_KEYS for h in hits)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert any(h["anchor"] == "register-map" for h in hits)
    assert {h["id"] for h in hits} >= {"device.acme.ac200", "device.voltra.em3"}


def test_search_limit(lib: Library) -> None:
    resp = lib.search("modbus", limit=3)
    assert len(resp["hits"]) == 3 and resp["count"] > 3
    assert lib.search("modbus", limit=None)["returned"] == 10


def _body(lib: Library, hit: dict[str, Any]) -> str:
    """The hit's text without its heading: a section, or the overview before the first."""
    if hit["anchor"]:
        text = lib.get(hit["id"], section=hit["anchor"])["content"]
        return text.split("\n", 1)[1]
    text = lib.get(hit["id"])["content"]
    return text.split("\n", 1)[1].split("\n## ", 1)[0]


def _stems(text: str) -> set[str]:
    return {stem(w.lower()) for w in re.findall(r"\w+", text)}


@pytest.mark.parametrize(
    "query", ["registers", "modbus", "compressor", "qos retained", "float", "gateway"]
)
def test_search_excerpt_shows_a_matched_word(lib: Library, query: str) -> None:
    """When the hit's text holds a matched word, the excerpt shows one."""
    terms = {c.term for c in handbook.search.query.parse(query)}
    hits = lib.search(query, limit=100)["hits"]
    assert hits
    shown = 0
    for hit in hits:
        if _stems(_body(lib, hit)) & terms:
            assert _stems(hit["excerpt"]) & terms, hit
            shown += 1
    assert shown


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("registr~3", "fuzzy_too_far"),
        ("modbus~9", "fuzzy_too_far"),
        ("mod* reg* pre*", "too_many_wildcards"),
        ("a*b*c*", "too_many_wildcards"),
        ("*bus", "leading_wildcard"),
        ("modbus *bus", "leading_wildcard"),
        ("x" * 2001, "query_too_long"),
        ("modbus " * 300, "query_too_long"),
        (" ".join(f"+w{i}" for i in range(33)), "too_many_terms"),
    ],
)
def test_query_caps_give_structured_errors(lib: Library, query: str, code: str) -> None:
    resp = lib.search(query)
    assert resp["count"] == 0 and resp["hits"] == []
    assert resp["error"]["code"] == code
    assert isinstance(resp["error"]["message"], str) and resp["error"]["message"]
    listed = lib.list(query=query)
    assert isinstance(listed, dict) and listed.get("error", {}).get("code") != "internal_error"


@pytest.mark.parametrize(
    "query", ["registr~2", "mod* reg*", "x" * 500, " ".join(f"w{i}" for i in range(32))]
)
def test_queries_at_the_caps_run(lib: Library, query: str) -> None:
    assert "error" not in lib.search(query)


SYNTAX = [
    ":",
    "^",
    "~",
    "+",
    "-",
    "*",
    "**",
    '"',
    "'",
    "\\",
    "(",
    ")",
    "[",
    "{",
    "}",
    "!",
    "&&",
    "||",
    "title:",
    "keywords:",
    "body:^",
    "nofield:modbus",
    "a:b:c",
    "title:modbus:tcp",
    "foo^",
    "foo~",
    "foo^abc",
    "modbus^0",
    "modbus^-1",
    "modbus^1e400",
    "modbus^nan",
    "modbus^inf",
    "modbus~-1",
    "modbus~1^2",
    "modbus^2~1",
    "modbus^2^3",
    "modbus~1~2",
    "+-",
    "-+modbus",
    "--modbus",
    "-modbus",
    "+modbus -modbus",
    '"modbus tcp"',
    '"unbalanced',
    "(modbus",
    "modbus)",
    "a*~1",
    "title:*",
    "+*",
    "a-*",
    "ä*",
    "ß~2",
    "🙂",
    "\x00",
    "",
    "   ",
    "\n\t",
    "modbus\u200b",
    "İstanbul",
    "ﬁ",
    "Ⅻ~1",
    "modbus~\u0661",
    "modbus^²",
    "title:modbus^2~1",
    "+title:modbus -body:tcp qos",
]


@pytest.mark.parametrize("query", SYNTAX)
def test_lunr_syntax_in_user_input_never_crashes(lib: Library, query: str) -> None:
    """Hits or a structured error naming what to fix; never an internal error."""
    for resp in (lib.search(query), lib.list(query=query)):
        assert isinstance(resp, dict)
        json.dumps(resp)
        if "error" in resp:
            assert resp["error"]["code"] != "internal_error", resp
            assert resp["error"]["message"]
        else:
            assert isinstance(resp.get("hits", resp.get("docs")), list)


@pytest.mark.parametrize("query", ["modbus~²", "registr~³"])
def test_superscript_fuzzy_distance_is_a_query_error(lib: Library, query: str) -> None:
    assert lib.search(query)["error"]["code"] == "invalid_fuzzy"
    assert lib.list(query=query).get("error", {}).get("code") != "internal_error"


# -- budgets and self-description -----------------------------------------------------------


def _calls(library: Library) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    calls: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("list()", library.list),
        ("list(modbus, 100)", lambda: library.list(query="modbus", limit=100)),
        ("list(protocol)", lambda: library.list(protocol="modbus", limit=100)),
        ("search(modbus, 100)", lambda: library.search("modbus", limit=100)),
        (
            "search(register map, 100)",
            lambda: library.search("register map temperature", limit=100),
        ),
        ("get(section)", lambda: library.get("protocol.modbus", section="Data model")),
    ]
    calls += [(f"get({i})", lambda i=i: library.get(i)) for i in EXAMPLE_IDS]
    return calls


@pytest.mark.parametrize("budget", BUDGETS)
def test_every_answer_fits_the_budget(built: Path, budget: int) -> None:
    library = Library.open(built, [PUBLIC], max_response_chars=budget)
    calls = [
        *_calls(library),
        ("get(unknown)", lambda: library.get("device.nope")),
        ("get(unknown section)", lambda: library.get("device.acme.ac200", section="nope")),
        ("search(error)", lambda: library.search("*x")),
    ]
    for name, call in calls:
        resp = call()
        assert len(json.dumps(resp)) <= budget, name
        assert _json_len(resp) <= budget, name


@pytest.mark.parametrize("budget", [1000, 1200])
def test_small_budgets_still_bound_whole_docs(built: Path, budget: int) -> None:
    library = Library.open(built, [PUBLIC], max_response_chars=budget)
    for doc_id in EXAMPLE_IDS:
        resp = library.get(doc_id)
        assert resp.get("next_offset", 0) >= 0, doc_id
        assert _json_len(resp) <= budget, doc_id


@pytest.mark.parametrize("budget", [1000, 1500, 3000])
def test_truncated_answers_say_so(built: Path, budget: int) -> None:
    library = Library.open(built, [PUBLIC], max_response_chars=budget)
    for name, call in _calls(library):
        resp = call()
        assert isinstance(resp.get("truncated"), bool), name
        assert isinstance(resp.get("response_chars"), int), name
        if "docs" in resp or "hits" in resp:
            items = resp.get("docs", resp.get("hits"))
            assert resp["returned"] == len(items), name
            if resp["truncated"]:
                assert "hint" in resp, name
    listed = library.list(limit=100)
    if budget == 1000:
        assert listed["truncated"] is True and listed["returned"] < listed["count"]


@pytest.mark.parametrize("budget", [1500, 40_000])
def test_response_chars_is_the_json_length(built: Path, budget: int) -> None:
    library = Library.open(built, [PUBLIC], max_response_chars=budget)
    for name, call in _calls(library):
        resp = call()
        assert resp["response_chars"] == _json_len(resp), name


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.get("device.acme.ac200", section="nope"),
        lambda lib: lib.get("device.nope"),
        lambda lib: lib.get(""),
        lambda lib: lib.get("protocol.mqtt", offset="x"),
        lambda lib: lib.search("*bus"),
        lambda lib: lib.search("modbus", limit="x"),
        lambda lib: lib.list(limit="x"),
    ],
    ids=[
        "unknown-section",
        "unknown-id",
        "empty-id",
        "bad-offset",
        "query-error",
        "search-limit",
        "list-limit",
    ],
)
def test_error_answers_say_size_and_truncated(
    lib: Library, call: Callable[[Library], dict[str, Any]]
) -> None:
    resp = call(lib)
    assert "error" in resp
    assert isinstance(resp.get("truncated"), bool)
    assert isinstance(resp.get("response_chars"), int)


@pytest.mark.parametrize("budget", [1500, 3000, 10_000])
def test_escape_heavy_content_fits_the_budget(crafted: Path, budget: int) -> None:
    library = Library.open(crafted, [PUBLIC], max_response_chars=budget)
    for resp in _pieces(library, "guide.escapes", "code"):
        assert _json_len(resp) <= budget


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, big: lib.get(big),
        lambda lib, big: lib.get("protocol.mqtt", section=big),
        lambda lib, big: lib.list(protocol=big),
        lambda lib, big: lib.list(**{big: "x"}),
    ],
    ids=["id", "section", "filter-value", "filter-field"],
)
def test_huge_inputs_keep_answers_bounded(
    built: Path, call: Callable[[Library, str], dict[str, Any]]
) -> None:
    library = Library.open(built, [PUBLIC], max_response_chars=2000)
    resp = call(library, "ab-" * 30_000)
    assert _json_len(resp) <= 2000


def test_infinite_offset_is_an_offset_error(lib: Library) -> None:
    resp = lib.get("protocol.mqtt", offset=float("inf"))
    assert resp.get("found") is False and "offset" in str(resp.get("error")), resp


# -- everything returned resolves -----------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "modbus",
        "register map",
        "mqtt qos",
        "commissioning",
        "float",
        "modb*",
        "registr~1",
        "address base",
    ],
)
def test_every_search_hit_resolves(lib: Library, query: str) -> None:
    hits = lib.search(query, limit=100)["hits"]
    assert hits
    for hit in hits:
        doc = lib.get(hit["id"])
        assert doc["found"] is True and doc["title"] == hit["title"]
        if hit["anchor"] is not None:
            by_anchor = lib.get(hit["id"], section=hit["anchor"])
            by_title = lib.get(hit["id"], section=hit["section"])
            assert by_anchor["found"] is True and by_title["found"] is True, hit
            assert by_anchor["section"]["anchor"] == hit["anchor"]


def _all_sections_resolve(library: Library) -> None:
    entries = library.list(limit=100)["docs"]
    assert entries
    for entry in entries:
        assert library.get(entry["id"])["found"] is True
        for section in entry["sections"]:
            for wanted in (section["title"], section["anchor"]):
                resp = library.get(entry["id"], section=wanted)
                assert resp["found"] is True, (entry["id"], wanted)
            by_anchor = library.get(entry["id"], section=section["anchor"])
            assert len(by_anchor["content"]) == section["chars"]


def test_every_listed_doc_and_section_resolves(lib: Library) -> None:
    _all_sections_resolve(lib)


def test_section_titled_with_a_hash_resolves(crafted: Path) -> None:
    library = Library.open(crafted, [PUBLIC])
    assert library.get("guide.weird", section="#1 priority")["found"] is True


def test_duplicate_and_punctuated_titles_resolve(crafted: Path) -> None:
    library = Library.open(crafted, [PUBLIC])
    entry = next(d for d in library.list(limit=100)["docs"] if d["id"] == "guide.weird")
    anchors = [s["anchor"] for s in entry["sections"]]
    assert len(set(anchors)) == len(anchors)
    for section in entry["sections"]:
        assert library.get("guide.weird", section=section["anchor"])["found"] is True
    assert library.get("guide.weird", section="c++ / c#")["content"].startswith("## C++ / C#")
    second = library.get("guide.weird", section=anchors[-1])
    assert "Four." in second["content"]


# -- arbitrary inputs -----------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=40),
    st.sampled_from(
        [
            "modbus",
            "device.acme.ac200",
            "register-map",
            "Pitfalls",
            "any",
            "modb*",
            "registr~1",
            '+-:^~*"',
        ]
    ),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(1, 40_000)),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=3),
)
FILTER_NAMES = st.one_of(
    st.sampled_from(
        ["protocol", "keywords", "kind", "verified", "aliases", "equipment_type", "vendor", "id"]
    ),
    st.text(max_size=12),
).filter(lambda k: k not in ("query", "limit"))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    query=VALUES,
    limit=VALUES,
    doc_id=VALUES,
    section=VALUES,
    offset=VALUES,
    filters=st.dictionaries(FILTER_NAMES, VALUES, max_size=3),
)
def test_handlers_never_raise(
    lib: Library,
    query: Any,
    limit: Any,
    doc_id: Any,
    section: Any,
    offset: Any,
    filters: dict[str, Any],
) -> None:
    """Whatever an agent sends, a JSON-serializable dict comes back."""
    for resp in (
        lib.list(query=query, limit=limit, **filters),
        lib.list(**filters),
        lib.search(query, limit),
        lib.search(query=query),
        lib.get(doc_id, section, offset),
        lib.get(doc_id),
        lib.get("device.acme.ac200", section=section, offset=offset),
    ):
        assert isinstance(resp, dict)
        json.dumps(resp)


# -- reload ---------------------------------------------------------------------------------


def test_reload_swaps_in_a_new_bundle_and_keeps_serving_on_failure(
    make_library: MakeLibrary, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = {"a.md": _doc("guide.a", "First edition", "## Part\n\nOriginal words.\n")}
    build(load_config(make_library(first)), out, KEY)
    library = Library.open(out, [PUBLIC])
    assert "Original words" in library.get("guide.a")["content"]
    unchanged = library.reload()
    assert unchanged["reloaded"] is True and unchanged["changed"] is False

    second = {
        "a.md": _doc("guide.a", "Second edition", "## Part\n\nRevised words.\n"),
        "b.md": _doc("guide.b", "A new doc", "## Part\n\nNew words.\n"),
    }
    build(load_config(make_library(second)), out, KEY)
    assert "Original words" in library.get("guide.a")["content"]  # nothing changes until reload
    resp = library.reload()
    assert resp["reloaded"] is True and resp["changed"] is True
    assert "Revised words" in library.get("guide.a")["content"]
    assert library.get("guide.b")["found"] is True
    assert library.list()["count"] == 2
    assert library.search("revised")["hits"][0]["id"] == "guide.a"

    (Path(os.path.realpath(out)) / "manifest.json").write_bytes(b"garbage")
    failed = library.reload()
    assert failed["reloaded"] is False and "manifest.json" in failed["error"]
    assert library.status()["last_reload_error"] == failed["error"]
    assert "Revised words" in library.get("guide.a")["content"]
    assert library.search("revised")["hits"][0]["id"] == "guide.a"

    third = {"a.md": _doc("guide.a", "Third edition", "## Part\n\nFinal words.\n")}
    (tmp_path / "lib" / "docs" / "b.md").unlink()
    build(load_config(make_library(third)), out, KEY)
    assert library.reload()["reloaded"] is True
    assert library.status()["last_reload_error"] is None
    assert "Final words" in library.get("guide.a")["content"]
    assert library.get("guide.b")["found"] is False


def test_reload_refuses_a_wrongly_signed_bundle(make_library: MakeLibrary, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(
        load_config(
            make_library({"a.md": _doc("guide.a", "Signed", "## Part\n\nTrusted words.\n")})
        ),
        out,
        KEY,
    )
    library = Library.open(out, [PUBLIC])
    pem, _ = generate_private_key()
    build(
        load_config(make_library({"a.md": _doc("guide.a", "Other", "## Part\n\nForged words.\n")})),
        out,
        load_private_key(pem),
    )
    resp = library.reload()
    assert resp["reloaded"] is False and "signature" in resp["error"]
    assert "Trusted words" in library.get("guide.a")["content"]


# -- lunr equivalence -----------------------------------------------------------------------

LUNR_QUERIES = [
    "modbus",
    "register map",
    "modb*",
    "registr~1",
    "+modbus -tcp",
    "title:modbus",
    "compressor^3 pressure",
    "word order",
    "mqtt qos",
    "kwh",
    "float32 cdab",
    "ac-200",
    "40001",
]


def _index_hits(index: SearchIndex, query: str) -> list[Any]:
    """Every hit, best first (SearchIndex.search returns hits, or (total, hits))."""
    found: Any = index.search(handbook.search.query.parse(query))
    return list(found[1] if isinstance(found, tuple) else found)


@pytest.fixture(scope="module")
def lunr_index(built: Path) -> Any:
    return Index.load(json.loads(gzip.decompress((built / "index.json.gz").read_bytes())))


@pytest.mark.parametrize("query", LUNR_QUERIES)
def test_search_matches_lunr(lib: Library, lunr_index: Any, query: str) -> None:
    expected = [(r["ref"], round(r["score"], 6)) for r in lunr_index.search(query)][:10]
    assert expected
    index = lib.snapshot.retriever.index
    doc_ids, anchors = index.strings("doc_id"), index.strings("entry_anchor")
    ours = []
    for hit in _index_hits(index, query)[:10]:
        anchor = anchors[hit.entry]
        ref = doc_ids[index.entry_doc[hit.entry]] + (f"#{anchor}" if anchor else "")
        ours.append((ref, round(hit.score, 6)))
    assert ours == expected
    public = lib.search(query, limit=10)["hits"]
    assert [h["id"] + (f"#{h['anchor']}" if h["anchor"] else "") for h in public] == [
        ref for ref, _ in expected
    ]
