"""Fuzz harnesses, short enough for CI: what reads untrusted input raises only its
declared errors, finishes each example within a hang bound and stays under a memory cap.

The harnesses live in `bench/fuzz.py`, which runs the very same targets for as long as
you like (`python bench/fuzz.py --examples 20000` or `--seconds 600`, with atheris when
it is installed). Here each target gets `HANDBOOK_FUZZ_EXAMPLES` examples (default
300), every example is timed against a 1 s hang bound (a hang detector, not a timing
test), and one in ten runs under tracemalloc against a 50 MB cap.

Targets: `Manifest.from_bytes` on random bytes, canonical random JSON and mutations of a
real signed manifest (only BundleError); `open_bundle` on copies of a real bundle whose
manifest, catalog or search file is mutated, the manifest entry updated and re-signed
with the test key where the payload changed (only BundleError); the doc parser on
random text, YAML token soup and mutated real docs (findings only, never an
exception); `handbook.search.query.parse` (only QueryError); `Library.search` (a dict, never
`internal_error`); trusted-key strings (only KeyFormatError); the snippet validators.

Exceptions of known product bugs are tallied apart, and only while their reproducer in
`bench/fuzz.py` still fails; each has a strict-xfail test at the end of this file that
asserts the correct behaviour.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import KEY, PUBLIC, ROOT, MakeLibrary, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handbook.bundle import canonical
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import Manifest, Signed
from handbook.bundle.signing import MANIFEST_TAG, sign
from handbook.errors import BundleError, FormatError
from handbook.libraries.library import Library
from handbook.search.index import SearchIndex
from handbook_build import load_config
from handbook_build.pipeline import build
from handbook_build.read.parse import parse
from handbook_build.read.source import Text


def _load_harnesses() -> ModuleType:
    name = "handbook_bench_fuzz"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "fuzz.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fuzz = _load_harnesses()

EXAMPLES = int(os.environ.get("HANDBOOK_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # timing is the harness's hang bound, measured on the call alone
    database=None,  # nothing written into the checkout
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

TALLY: dict[str, Counter[str]] = defaultdict(Counter)
"""target -> outcome kind (accepted, refused, known:<bug>) -> examples."""
TRACED: Counter[str] = Counter()
WORST: dict[str, dict[str, float]] = defaultdict(lambda: {"seconds": 0.0, "peak": 0.0})


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every target, over one real bundle (the plant-floor example) built once."""
    return fuzz.make_targets(tmp_path_factory.mktemp("fuzz"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", fuzz.TARGET_NAMES)
@FUZZ
@given(data=st.data())
def test_fuzz_target(targets: dict[str, Any], name: str, data: st.DataObject) -> None:
    """Only declared errors, no hang, bounded memory; see the module docstring."""
    target = targets[name]
    value = target.make(fuzz.HypothesisDraw(data))
    outcome = fuzz.check(target, value, trace=sum(TALLY[name].values()) % fuzz.MEMORY_EVERY == 0)
    TALLY[name][outcome.kind] += 1
    worst = WORST[name]
    worst["seconds"] = max(worst["seconds"], outcome.seconds)
    if outcome.peak is not None:
        TRACED[name] += 1
        worst["peak"] = max(worst["peak"], outcome.peak)


# Targets whose mutations get past the first check often (over a tenth of the examples
# in trial runs): if none does, the harness has stopped reaching the code behind it.
REACHES_DEEP = ["bundle_catalog", "bundle_search", "frontmatter", "query_parse", "library_search"]


def test_fuzz_volume_and_worst_cases(capsys: pytest.CaptureFixture[str]) -> None:
    """What the harnesses above ran: examples, outcomes, worst time and traced memory."""
    if not TALLY:
        pytest.skip("run together with test_fuzz_target")
    rows = [
        "",
        f"fuzz harnesses, {EXAMPLES} examples each (HANDBOOK_FUZZ_EXAMPLES)",
        f"{'target':<20} {'examples':>8} {'accepted':>8} {'refused':>8} {'known bug':>9} "
        f"{'worst ms':>9} {'traced':>6} {'worst traced MB':>15}",
    ]
    for name in fuzz.TARGET_NAMES:
        tally = TALLY.get(name, Counter())
        examples = sum(tally.values())
        known = sum(n for k, n in tally.items() if k.startswith("known:"))
        rows.append(
            f"{name:<20} {examples:>8} {tally['accepted']:>8} {tally['refused']:>8} {known:>9} "
            f"{WORST[name]['seconds'] * 1000:>9.1f} {TRACED[name]:>6} {WORST[name]['peak'] / 2**20:>15.2f}"
        )
    for bug in fuzz.KNOWN_BUGS:
        hits = sum(t[f"known:{bug.id}"] for t in TALLY.values())
        rows.append(f"known bug {bug.id}: {hits} hits ({'reproduces' if bug.active else 'fixed'})")
    with capsys.disabled():
        print("\n".join(rows))
    for name in fuzz.TARGET_NAMES:
        tally = TALLY.get(name, Counter())
        assert tally["undeclared"] == 0
        assert TRACED[name] >= 1, f"{name}: no example ran under tracemalloc"
        if EXAMPLES >= 200 and name in REACHES_DEEP:
            assert tally["accepted"] > 0, f"{name}: no example got past the first check"


# -- the harness itself ----------------------------------------------------------------------


def test_the_harness_catches_undeclared_exceptions_and_hangs() -> None:
    """A harness that cannot fail proves nothing: an undeclared exception, a hang and a
    memory hog are each reported."""

    class Broken(fuzz.Target):
        name, declared = "broken", (ValueError,)

        def make(self, draw: Any) -> Any:
            return draw

        def run(self, value: Any) -> str:
            if value == "type":
                raise TypeError("undeclared")
            if value == "big":
                blob = bytearray(8 * 2**20)
                del blob
            return "accepted"

    with pytest.raises(AssertionError, match="undeclared TypeError"):
        fuzz.check(Broken(), "type")
    assert fuzz.check(Broken(), "ok").kind == "accepted"
    with pytest.raises(AssertionError, match="took"):
        fuzz.check(Broken(), "ok", hang_seconds=0.0)
    with pytest.raises(AssertionError, match="allocated"):
        fuzz.check(Broken(), "big", trace=True, memory_cap=2**20)


def test_known_bugs_are_tolerated_only_where_they_are() -> None:
    """A known bug's exception type raised from anywhere else is still undeclared."""

    class Elsewhere(fuzz.Target):
        name = "elsewhere"

        def make(self, draw: Any) -> Any:
            return draw

        def run(self, value: Any) -> str:
            raise RecursionError("not from search.py")

    assert fuzz.execute(Elsewhere(), None).kind == "undeclared"


# -- regressions: product bugs the fuzzers found, asserted as the product should behave ------
# Those still open are strict xfails; the rest were fixed while this suite was written.


@pytest.mark.parametrize(
    "line",
    [
        "effective_date: 2026-02-30",
        "effective_date: 2026-13-01",
        "stamp: 2026-01-01T25:00:00Z",
        "stamp: 2026-01-01 10:00:00+99:00",
        "mask: 0b_",
        "mask: 0x_",
    ],
)
def test_impossible_dates_and_numbers_in_frontmatter_are_findings(line: str) -> None:
    """YAML 1.1 resolves these as timestamp or int by their shape; building the value then
    fails. The doc parser must answer a finding on the line, not raise; the field is
    dropped and the rest of the doc read."""
    doc, findings = parse(Text("x.md", f"---\nid: a\n{line}\n---\nbody\n"))
    assert doc is not None and doc.meta == {"id": "a"}
    assert [(f.line, f.severity) for f in findings] == [(3, "error")], findings


def test_an_impossible_date_does_not_stop_the_check(make_library: MakeLibrary) -> None:
    good = "---\nid: b\ntitle: B\nkind: guide\nsummary: B.\nversion: 1.10\n---\n# B\n"
    bad = "---\nid: a\ntitle: A\nkind: guide\nsummary: A.\neffective_date: 2026-02-30\n---\n# A\n"
    config = make_library({"a.md": bad, "b.md": good})
    run = run_cli("check", "--config", str(config))
    assert run.exit_code == 1
    assert any(line.startswith("a.md:6:17: HB") for line in run.lines), run.lines
    assert any(line.startswith("b.md:6:10: HB209") for line in run.lines), run.lines


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The plant-floor example built signed (test key) and unsigned; copy before changing."""
    root = tmp_path_factory.mktemp("regressions")
    config = load_config(ROOT / "examples" / "plant-floor" / "mkdocs.yml")
    return {
        "signed": build(config, root / "signed", KEY).bundle.path,
        "unsigned": build(config, root / "unsigned", None).bundle.path,
    }


def _with_file(
    bundles: dict[str, Path], tmp_path: Path, variant: str, name: str, data: bytes
) -> Path:
    """A copy of the bundle with file `name` replaced, its manifest entry updated and,
    for the signed variant, the manifest re-signed with the test key: the bytes are
    consistent and authentic, only their content is odd."""
    folder = tmp_path / variant
    shutil.copytree(bundles[variant], folder)
    (folder / name).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_bytes())
    manifest["signed"]["files"][name] = {
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    if variant == "signed":
        manifest["signatures"] = [sign(KEY, MANIFEST_TAG, manifest["signed"])]
    (folder / "manifest.json").write_bytes(canonical.dumps(manifest))
    return folder


def _with_listed_size(
    bundles: dict[str, Path], tmp_path: Path, variant: str, name: str, size: int
) -> Path:
    """A copy of the bundle whose manifest lists file `name` with `size` bytes (re-signed
    for the signed variant); the file itself is unchanged."""
    folder = tmp_path / variant
    shutil.copytree(bundles[variant], folder)
    manifest = json.loads((folder / "manifest.json").read_bytes())
    manifest["signed"]["files"][name]["bytes"] = size
    if variant == "signed":
        manifest["signatures"] = [sign(KEY, MANIFEST_TAG, manifest["signed"])]
    (folder / "manifest.json").write_bytes(canonical.dumps(manifest))
    return folder


def _open(folder: Path, variant: str) -> Any:
    if variant == "signed":
        return open_bundle(folder, [PUBLIC])
    return open_bundle(folder, allow_unsigned=True)


def _catalog_with(
    bundles: dict[str, Path], tmp_path: Path, variant: str, path: tuple[str | int, ...], value: Any
) -> Path:
    """A consistent (and, signed, re-signed) bundle whose catalog has `value` at `path`."""
    catalog = json.loads((bundles[variant] / "catalog.json").read_bytes())
    parent = catalog
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return _with_file(bundles, tmp_path, variant, "catalog.json", json.dumps(catalog).encode())


CATALOG_TYPE_CONFUSIONS: dict[str, tuple[tuple[str | int, ...], Any]] = {
    "meta-is-a-list": (("docs", 0, "meta"), []),
    "id-is-a-list": (("docs", 0, "id"), ["device.acme.ac200"]),
    "content-is-a-list": (("docs", 0, "content"), ["content/" + "0" * 64 + ".md"]),
    "section-start-is-a-string": (("docs", 0, "sections", 0, "start"), "0"),
}
"""A path into catalog.json and the value put there: fields check_agreement reads."""


@pytest.mark.parametrize("variant", ["unsigned", "signed"])
@pytest.mark.parametrize("case", list(CATALOG_TYPE_CONFUSIONS))
def test_a_catalog_with_wrong_field_types_is_a_format_error(
    bundles: dict[str, Path], tmp_path: Path, case: str, variant: str
) -> None:
    """The catalog's bytes match the (re-signed) manifest; its content is the wrong shape.
    `open_bundle` promises a BundleError subclass for any bundle it refuses."""
    folder = _catalog_with(bundles, tmp_path, variant, *CATALOG_TYPE_CONFUSIONS[case])
    with pytest.raises(FormatError, match=r"catalog\.json"):
        _open(folder, variant)


CATALOG_UNCHECKED_TYPES: dict[str, tuple[tuple[str | int, ...], Any]] = {
    "title-is-a-number": (("docs", 0, "title"), 5),
    "keywords-are-numbers": (("docs", 0, "keywords"), [1, 2]),
    "section-title-is-a-number": (("docs", 0, "sections", 0, "title"), 5),
}
"""Fields check_agreement does not read: today they pass the open, and list(query=...),
ask and get(section=...) answer internal_error later."""


@pytest.mark.parametrize("case", list(CATALOG_UNCHECKED_TYPES))
def test_a_catalog_field_of_the_wrong_type_is_refused_at_open(
    bundles: dict[str, Path], tmp_path: Path, case: str
) -> None:
    folder = _catalog_with(bundles, tmp_path, "signed", *CATALOG_UNCHECKED_TYPES[case])
    with pytest.raises(FormatError, match=r"catalog\.json"):
        _open(folder, "signed")


def _header_changed(change: Any) -> Any:
    """A real search.bin with its JSON header changed and padded to the same length, so
    every array stays where it was."""

    def make(original: bytes) -> bytes:
        length = int.from_bytes(original[12:16], "little")
        header = json.loads(original[16 : 16 + length])
        change(header)
        new = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        assert len(new) <= length
        return original[:16] + new.ljust(length) + original[16 + length :]

    return make


ARRAYS_LIST = b'{"arrays":[],"fields":["title","keywords","body"]}'
MALFORMED_SEARCH = [
    pytest.param(lambda _: fuzz.search_file(ARRAYS_LIST, b"\0" * 8), id="arrays-is-a-list"),
    pytest.param(
        lambda _: fuzz.search_file(ARRAYS_LIST.replace(b"[]", b"null"), b"\0" * 8),
        id="arrays-is-null",
    ),
    pytest.param(
        _header_changed(lambda h: h["arrays"].pop("postings")), id="arrays-missing-postings"
    ),
    pytest.param(_header_changed(lambda h: h.__setitem__("fields", None)), id="fields-is-null"),
    pytest.param(
        lambda _: fuzz.search_file(b"[" * 100_000, b"\0" * 8), id="header-nested-100000-deep"
    ),
]
"""Each makes a search.bin from the real one."""


@pytest.mark.parametrize("make", MALFORMED_SEARCH)
def test_a_malformed_search_header_is_a_format_error(bundles: dict[str, Path], make: Any) -> None:
    data = make((bundles["unsigned"] / "search.bin").read_bytes())
    with pytest.raises(FormatError, match=r"search\.bin"):
        SearchIndex(data)


def test_library_open_refuses_a_malformed_search_file_with_a_bundle_error(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    data = fuzz.search_file(ARRAYS_LIST, b"\0" * 8)
    folder = _with_file(bundles, tmp_path, "signed", "search.bin", data)
    with pytest.raises(BundleError):
        Library.open(folder, [PUBLIC])


@pytest.mark.parametrize("query", ["a\udcd8b", "+modbus re\ud800gister", "title:x\udfffy"])
def test_a_query_word_with_a_lone_surrogate_is_a_structured_error(
    bundles: dict[str, Path], query: str
) -> None:
    """Python's json module decodes "\\ud800" into a lone surrogate, so any JSON client
    can send one. The answer must be a query error (or hits), never internal_error."""
    lib = Library.open(bundles["unsigned"], allow_unsigned=True)
    for resp in (lib.search(query), lib.list(query=query)):
        assert resp.get("error", {}).get("code") != "internal_error", resp
    resp = lib.search(query)
    assert "error" not in resp or (
        resp["error"]["code"] in fuzz.QUERY_CODES and resp["hits"] == []
    ), resp


@pytest.mark.parametrize("variant", ["unsigned", "signed"])
@pytest.mark.parametrize("size", [2**40, 2**53 - 1])
def test_a_huge_listed_size_is_a_bundle_error_on_the_fast_open(
    bundles: dict[str, Path], tmp_path: Path, variant: str, size: int
) -> None:
    """`Library.open` opens without stat'ing every file (hash_all=False) and reads
    search.bin at once; a listed size the file does not have must be a HashMismatchError,
    not a MemoryError from allocating it."""
    folder = _with_listed_size(bundles, tmp_path, variant, "search.bin", size)
    with pytest.raises(BundleError, match=r"search\.bin"):
        Library.open(
            folder, [PUBLIC] if variant == "signed" else [], allow_unsigned=variant == "unsigned"
        )


def test_a_lazy_read_allocates_no_more_than_the_file_holds(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    import tracemalloc

    folder = _with_listed_size(bundles, tmp_path, "unsigned", "catalog.json", 2**30)
    bundle = open_bundle(folder, allow_unsigned=True, hash_all=False)
    tracemalloc.start()
    try:
        with pytest.raises(BundleError, match=r"catalog\.json"):
            bundle.catalog  # noqa: B018 - reads and verifies catalog.json
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, f"reading a 7.6 kB file listed as 1 GiB allocated {peak:,} bytes"


ARABIC_INDIC_YEAR = "\u0662\u0660\u0662\u0666-01-01T00:00:00Z"
"""2026-01-01T00:00:00Z with the year in Arabic-Indic digits."""


@pytest.mark.parametrize("key", ["built_at", "expires"])
def test_manifest_times_are_ascii_digits(key: str) -> None:
    """A year in Arabic-Indic digits is NFC, so the profile lets it through, `\\d`
    matches it and `time.strptime`'s `%Y` (also `\\d`) reads it as 2026, while a reader
    in another language does not read it as a time at all: one signed payload, two
    meanings."""
    times = {"built_at": "2026-01-01T00:00:00Z", key: ARABIC_INDIC_YEAR}
    signed = Signed("x", "1", times["built_at"], {}, 0, expires=times.get("expires"))
    with pytest.raises(FormatError, match=key):
        Manifest.from_bytes(Manifest(signed).to_bytes())
