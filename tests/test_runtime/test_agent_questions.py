"""Issue 19: queries as agents send them. Long questions are shortened (never refused)
with a note, syntax is never dropped, truncated answers page on with `offset`, a file
tampered after opening answers `integrity_error` while `status` keeps answering, and
`retriever=` names lexical, semantic or hybrid ranking with structured errors when it
cannot run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, embedding_model

from handbook import Library
from handbook.search.query import MAX_TERMS, parse
from handbook.search.query_terms import fit
from handbook_build import load_config
from handbook_build.pipeline import build

EXAMPLE = ROOT / "examples" / "plant-floor" / "mkdocs.yml"
LONG = (
    "We connected a new energy meter through an RS-485 to Ethernet gateway and all the "
    "floating point readings look like garbage even though the addresses seem right; the "
    "values are 32 bits wide and span two registers, so could the order in which the two "
    "halves are sent be the problem here?"
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agentq") / "bundle"
    build(load_config(EXAMPLE), out, None)
    return out.resolve()


@pytest.fixture(scope="module")
def lib(bundle: Path) -> Library:
    return Library.open(bundle, allow_unsigned=True)


def test_a_long_question_is_answered_with_a_note_saying_what_was_dropped(lib: Library) -> None:
    assert len(parse(LONG)) > MAX_TERMS
    answer = lib.search(LONG)
    assert "error" not in answer and answer["hits"]
    assert answer["note"].startswith(f"The query had {len(parse(LONG))} terms, over the limit")
    assert "dropped stop words (" in answer["note"] and "the" in answer["note"]
    asked = lib.ask(LONG)  # its key words are the stop-word-free ones: 32 or fewer here
    assert "error" not in asked and asked["sources"]


def test_repeated_words_merge_and_rank_exactly_as_written_once(lib: Library) -> None:
    answer = lib.search("modbus " * 285)  # 1,995 characters of one word
    assert answer["note"].endswith("merged repeated words (modbu x285).")
    once = lib.search("modbus")
    assert [(h["id"], h["anchor"], h["score"]) for h in answer["hits"]] == [
        (h["id"], h["anchor"], h["score"]) for h in once["hits"]
    ]


def test_the_least_informative_words_go_last_and_syntax_never() -> None:
    words = [f"w{i}" for i in range(40)]
    clauses = parse(" ".join(["+keep", "title:also", *words]))
    frequency = {f"w{i}": i + 1 for i in range(40)}  # w39 is the most common
    fitted = fit(clauses, lambda term: frequency.get(term, 5))
    kept = [c.term for c in fitted.clauses]
    assert len(kept) == MAX_TERMS and kept[:2] == ["keep", "also"]
    assert kept[2:] == [f"w{i}" for i in range(30)]
    assert fitted.note.endswith(
        "dropped the least informative words (w30, w31, w32, w33, w34, w35, w36, w37, w38, w39)."
    )


def test_2000_characters_of_syntax_is_a_structured_error(lib: Library) -> None:
    query = " ".join(f"+w{i}~1" for i in range(200))  # 1,489 characters
    answer = lib.search(query)
    assert answer["error"]["code"] == "too_many_terms" and answer["hits"] == []
    assert "never dropped" in answer["error"]["message"]
    assert lib.search("x" * 2001)["error"]["code"] == "query_too_long"


def test_truncated_hits_page_on_with_offset_and_nothing_is_lost(bundle: Path) -> None:
    whole = Library.open(bundle, allow_unsigned=True).search("modbus register", limit=100)
    small = Library.open(bundle, allow_unsigned=True, max_response_chars=3000)
    seen, offset = [], 0
    while True:
        page = small.search("modbus register", limit=100, offset=offset)
        assert page["response_chars"] <= 3000 and page["hits"]
        seen += [(h["id"], h["anchor"]) for h in page["hits"]]
        if "next_offset" not in page:
            break
        assert page["truncated"] and f"offset={page['next_offset']}" in page["hint"]
        offset = page["next_offset"]
    assert seen == [(h["id"], h["anchor"]) for h in whole["hits"]]
    assert len(seen) == whole["count"]
    assert small.search("modbus", offset="x")["error"]["code"] == "invalid_offset"


def test_excerpts_shrink_before_hits_are_left_out(bundle: Path) -> None:
    full = Library.open(bundle, allow_unsigned=True).search("modbus", limit=12)
    tight = Library.open(bundle, allow_unsigned=True, max_response_chars=3000)
    answer = tight.search("modbus", limit=12)
    assert len(answer["hits"]) == len(full["hits"]) and not answer["truncated"]
    assert sum(len(h["excerpt"]) for h in answer["hits"]) < sum(
        len(h["excerpt"]) for h in full["hits"]
    )


def test_a_file_tampered_after_opening_is_an_integrity_error_and_status_answers(
    bundle: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    opened = Library.open(copy, allow_unsigned=True)
    doc_id = opened.search("modbus")["hits"][0]["id"]
    for victim in (copy / "content").iterdir():
        victim.write_bytes(victim.read_bytes() + b"tampered")
    assert opened.search("modbus")["hits"]  # from the verified search.bin: no content read
    answer = opened.get(doc_id)
    assert answer["error"]["code"] == "integrity_error"
    assert "content/" in answer["error"]["message"] and "reload" in answer["error"]["message"]
    status = opened.status()
    assert "error" not in status and status["library"] == "plant-floor"
    assert status["integrity_error"].startswith("content/")


def test_retriever_errors_are_structured(lib: Library) -> None:
    assert lib.search("modbus", retriever="bogus")["error"]["code"] == "unknown_retriever"
    for name in ("semantic", "hybrid"):
        error = lib.search("modbus", retriever=name)["error"]
        assert error["code"] == "no_vectors" and "semantic: true" in error["message"]
        assert lib.collect(query="modbus", retriever=name)["error"]["code"] == "no_vectors"
        assert lib.ask("what is modbus", retriever=name)["error"]["code"] == "no_vectors"
    assert lib.search("modbus", retriever="lexical") == lib.search("modbus")


def test_the_lexical_path_never_imports_numpy(bundle: Path) -> None:
    code = (
        "import sys; from handbook import Library; "
        f"lib = Library.open({str(bundle)!r}, allow_unsigned=True); "
        "lib.search('modbus'); lib.ask('what is modbus'); lib.collect(query='modbus'); "
        "print('numpy' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


# -- the semantic retriever, where the model package is installed (CI installs it) ---------

semantic = pytest.importorskip  # the extra's modules, imported only by these tests


@pytest.fixture(scope="module")
def semantic_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    semantic("numpy")
    pytest.importorskip("handbook.search.encoder")
    embedding_model()
    root = tmp_path_factory.mktemp("semantic")
    shutil.copytree(EXAMPLE.parent / "docs", root / "docs")
    text = EXAMPLE.read_text().replace(
        "      version: 1.0.0\n", "      version: 1.0.0\n      semantic: true\n"
    )
    (root / "mkdocs.yml").write_text(text)
    out = root / "bundle"
    build(load_config(root / "mkdocs.yml"), out, None)
    return out.resolve()


def test_attached_markdown_is_embedded_and_found_by_meaning(
    semantic_bundle: Path, tmp_path: Path
) -> None:
    """A library whose folder docs attach markdown (searched by section) builds with
    vectors for those sections too, numbered as the runtime numbers them."""
    skills = EXAMPLE.parent.parent / "skills"
    shutil.copytree(skills / "docs", tmp_path / "docs")
    text = (skills / "mkdocs.yml").read_text()
    (tmp_path / "mkdocs.yml").write_text(
        text.replace("      version: 1.0.0\n", "      version: 1.0.0\n      semantic: true\n")
    )
    build(load_config(tmp_path / "mkdocs.yml"), tmp_path / "bundle", None)
    lib = Library.open(tmp_path / "bundle", allow_unsigned=True)
    question = "a device refuses a block read but answers one register at a time"
    hits = lib.search(question, limit=3, retriever="semantic")["hits"]
    assert (hits[0]["id"], hits[0].get("resource")) == ("skill.modbus-scan", "references/notes.md")


def test_golden_vector_of_the_numpy_encoder() -> None:
    """all-MiniLM-L6-v2's published embedding of this sentence (sentence-transformers),
    first six dimensions: the numpy forward pass must reproduce it."""
    np = semantic("numpy")
    encoder = pytest.importorskip("handbook.search.encoder")
    try:
        model = encoder.Encoder(encoder.model_dir())
    except LookupError:
        pytest.skip("the embedding model is not installed")
    vector = model.encode(["This is an example sentence"])[0]
    expected = [0.0676569, 0.0634960, 0.0487131, 0.0793050, 0.0374481, 0.0026528]
    assert np.allclose(vector[:6], expected, atol=2e-5)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_semantic_and_hybrid_rank_from_the_signed_vectors(semantic_bundle: Path) -> None:
    manifest = json.loads((semantic_bundle / "manifest.json").read_text())
    assert "vectors.bin" in manifest["signed"]["files"]
    lib = Library.open(semantic_bundle, allow_unsigned=True)
    question = "how many programs can talk to the compressor at once"
    top = lib.search(question, limit=3, retriever="semantic")["hits"]
    assert (top[0]["id"], top[0]["anchor"]) == ("device.acme.ac200", "pitfalls")
    hybrid = lib.search(question, limit=5, retriever="hybrid")
    assert "pitfalls" in [h["anchor"] for h in hybrid["hits"]]
    assert lib.search(question) == Library.open(semantic_bundle, allow_unsigned=True).search(
        question, retriever="lexical"
    )
    assert lib.collect(query=question, retriever="hybrid")["items"]
    assert (
        lib.ask(question, retriever="semantic")["sources"][0]["document_id"] == "device.acme.ac200"
    )
