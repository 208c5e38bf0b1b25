"""Fuzz the parsers that read untrusted input, for as long as you like.

The same harnesses run briefly in CI (`tests/test_hardening/test_fuzz.py`, a few hundred
examples each) and for a long time here. Every target turns fuzzer input into one value
(`make`) and feeds it to the product (`run`). Only the target's *declared* errors may
come out; anything else is an undeclared exception, and a broken contract (a failed
assertion in `run`) counts as one too. Each example is timed (a hang detector, not a
benchmark) and one in `--memory-every` runs under tracemalloc.

=====================  ===============================================================
target                 input → call (declared errors)
=====================  ===============================================================
manifest_bytes         random bytes, JSON token soup, canonical random JSON →
                       `Manifest.from_bytes` (FormatError / BundleError)
manifest_mutation      a real signed manifest, byte- or tree-mutated →
                       `Manifest.from_bytes` (BundleError)
bundle_manifest        a copied real bundle (signed, re-signed, or unsigned) whose
                       manifest is mutated → `open_bundle(hash_all=True)` (BundleError)
bundle_catalog         the same with `catalog.json` mutated and its manifest entry
                       updated (and re-signed), so the catalog itself is parsed and
                       checked → `open_bundle` (BundleError)
bundle_search          the same with `search.bin` (header and bytes) → `Library.open`
                       (BundleError)
frontmatter            random text, YAML token soup and mutated real docs of the
                       examples → `handbook_build.read.parse.parse` (no exception at all:
                       findings only)
query_parse            random text and lunr-syntax soup → `handbook.search.query.parse`
                       (QueryError)
library_search         the same, with odd limits and languages → `Library.search`
                       (never raises; a dict, never `internal_error`)
trusted_key            text and `ed25519:` keys → `PublicKey.parse` (KeyFormatError)
snippet_validators     text → the built-in json/yaml/toml validators (never raise)
=====================  ===============================================================

Engines: atheris (coverage-guided; each target in a child process, its libFuzzer log
in build/fuzz/) when it is importable, else hypothesis (random generation, no
shrinking). Known product bugs (`KNOWN_BUGS`, each with a strict-xfail test) are
counted apart from new undeclared exceptions, and only while their reproducer still
fails: once a bug is fixed its exceptions count as new again.

Usage::

    python bench/fuzz.py --examples 20000            # per target
    python bench/fuzz.py --seconds 600               # total, split across targets
    python bench/fuzz.py --targets frontmatter,query_parse --engine hypothesis

Exit status 1 when any target had a new undeclared exception, a hang (an example over
`--hang-seconds`), an example over the memory cap, or a child that died. Needs the test
extras (hypothesis) and, for the atheris engine, `pip install atheris`.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar

from handbook.bundle import canonical
from handbook.bundle.local import open_bundle
from handbook.bundle.manifest import Manifest
from handbook.bundle.signing import (
    MANIFEST_TAG,
    PublicKey,
    load_private_key,
    public_key_of,
    sign,
    trusted_keys,
)
from handbook.errors import BundleError, KeyFormatError
from handbook.libraries.library import Library
from handbook.search.file_format import MAGIC
from handbook.search.query import MAX_EDIT_DISTANCE, MAX_TERMS, MAX_WILDCARDS, QueryError
from handbook.search.query import parse as parse_query
from handbook.search.query_terms import fit
from handbook_build import load_config
from handbook_build.checks.snippets import check_json, check_toml, check_yaml
from handbook_build.findings import Finding
from handbook_build.pipeline import build
from handbook_build.read.parse import parse as parse_doc
from handbook_build.read.source import Text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE = EXAMPLES / "plant-floor" / "mkdocs.yml"
TEST_KEY = ROOT / "tests" / "vectors" / "test-key.pem"
ARTIFACTS = ROOT / "build" / "fuzz"

HANG_SECONDS = 1.0
"""An example slower than this is a hang (a generous bound: real examples take ms)."""
MEMORY_CAP = 50 * 1024 * 1024
"""Peak traced allocation allowed for one example."""
MEMORY_EVERY = 10
"""One example in this many runs under tracemalloc."""

QUERY_CODES = {
    "invalid_query",
    "query_too_long",
    "empty_query",
    "too_many_terms",
    "too_many_wildcards",
    "only_excluded_terms",
    "invalid_boost",
    "invalid_fuzzy",
    "fuzzy_too_far",
    "leading_wildcard",
}
SEARCH_CODES = QUERY_CODES | {"invalid_limit"}

T = TypeVar("T")


# -- drawing values: one interface over hypothesis and atheris ------------------------------


class Draw(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...
    def binary(self, max_size: int) -> bytes: ...
    def text(self, max_size: int) -> str: ...
    def pick(self, options: Sequence[T]) -> T: ...


class HypothesisDraw:
    """Draws from hypothesis' `st.data()` (so failures shrink in the tests)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.data.draw(self.st.integers(lo, hi)))

    def binary(self, max_size: int) -> bytes:
        return bytes(self.data.draw(self.st.binary(max_size=max_size)))

    def text(self, max_size: int) -> str:
        return str(self.data.draw(self.st.text(max_size=max_size)))

    def pick(self, options: Sequence[T]) -> T:
        return self.data.draw(self.st.sampled_from(options))  # type: ignore[no-any-return]


class AtherisDraw:
    """Draws from atheris' FuzzedDataProvider (coverage-guided)."""

    def __init__(self, fdp: Any) -> None:
        self.fdp = fdp

    def integer(self, lo: int, hi: int) -> int:
        return int(self.fdp.ConsumeIntInRange(lo, hi))

    def binary(self, max_size: int) -> bytes:
        return bytes(self.fdp.ConsumeBytes(self.fdp.ConsumeIntInRange(0, max_size)))

    def text(self, max_size: int) -> str:
        return str(self.fdp.ConsumeUnicode(self.fdp.ConsumeIntInRange(0, max_size)))

    def pick(self, options: Sequence[T]) -> T:
        return options[self.fdp.ConsumeIntInRange(0, len(options) - 1)]


def soup(draw: Draw, tokens: Sequence[str], max_items: int) -> str:
    """Text made of `tokens`, where the interesting syntax is."""
    return "".join(draw.pick(tokens) for _ in range(draw.integer(0, max_items)))


EDGE_INTS = [
    0,
    1,
    -1,
    2,
    31,
    32,
    33,
    64,
    255,
    2**31,
    2**32,
    2**53 - 1,
    2**53,
    -(2**53),
    2**63,
    10**30,
]
EDGE_STRINGS = [
    "",
    " ",
    ".",
    "..",
    "../x",
    "/etc/passwd",
    "a/../b",
    "a//b",
    "con",
    "NUL.txt",
    "a:b",
    "a\\b",
    "x\x00y",
    "content/" + "0" * 64 + ".md",
    "content/" + "A" * 64 + ".md",
    "CATALOG.JSON",
    "catalog.json",
    "manifest.json",
    "search.bin",
    "resources/" + "0" * 64,
    "0" * 64,
    "f" * 63,
    "handbook/v1",
    "handbook/v2",
    "2026-01-01T00:00:00Z",
    "2000-01-01T00:00:00Z",
    "e\u0301",
    "\u00e9",
    "\ud800",
    "\u202e",
    "\ufeff",
    "\uff0e\uff0e",
    "ed25519:" + "A" * 43 + "=",
    "#anchor",
    "x" * 300,
    "device.acme.ac200",
    "en",
    "de",
]
KEY_WORDS = [
    "signed",
    "signatures",
    "keyid",
    "sig",
    "spec",
    "library",
    "version",
    "built_at",
    "expires",
    "files",
    "docs",
    "sha256",
    "bytes",
    "name",
    "id",
    "kind",
    "title",
    "summary",
    "verified",
    "keywords",
    "aliases",
    "meta",
    "revision",
    "content",
    "chars",
    "url",
    "source",
    "sections",
    "resources",
    "start",
    "end",
    "level",
    "anchor",
    "path",
    "media_type",
    "lang",
    "list_fields",
    "required",
    "filters",
    "vocab",
    "default_lang",
    "arrays",
    "fields",
    "",
]
JSON_TOKENS = [
    b'"',
    b",",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b"0",
    b"-1",
    b"1.5",
    b"1e400",
    b"null",
    b"true",
    b'"x"',
    b"\\u0000",
    b"\\ud800",
    b"9007199254740993",
    b"NaN",
    b"\xef\xbb\xbf",
    b"\xff",
    b" ",
    b"\\",
    b"[" * 64,
]


def iso_time(draw: Draw) -> str:
    """Shaped like a UTC time, with any two-digit numbers: mostly impossible dates."""
    y, mo, d, h, mi, s = (draw.integer(0, 9999), *(draw.integer(0, 99) for _ in range(5)))
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z"


def json_value(draw: Draw, depth: int = 2) -> Any:
    kind = draw.integer(0, 8 if depth > 0 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return draw.pick([True, False])
    if kind == 2:
        return draw.pick(EDGE_INTS)
    if kind == 3:
        return draw.integer(-(2**64), 2**64)
    if kind == 4:
        return draw.pick(EDGE_STRINGS)
    if kind == 5:
        return iso_time(draw)
    if kind == 6:
        return draw.text(24)
    if kind == 7:
        return [json_value(draw, depth - 1) for _ in range(draw.integer(0, 3))]
    return {draw.pick(KEY_WORDS): json_value(draw, depth - 1) for _ in range(draw.integer(0, 3))}


def mutate_bytes(draw: Draw, data: bytes, max_ops: int = 4) -> bytes:
    buf = bytearray(data)
    for _ in range(draw.integer(1, max_ops)):
        op = draw.integer(0, 5)
        i = draw.integer(0, len(buf))
        if op == 0 and buf:
            buf[min(i, len(buf) - 1)] = draw.integer(0, 255)
        elif op == 1:
            del buf[i : i + draw.integer(1, 64)]
        elif op == 2:
            buf[i:i] = draw.binary(16)
        elif op == 3:
            buf[i:i] = draw.pick(JSON_TOKENS)
        elif op == 4:
            j = draw.integer(0, len(buf))
            buf[i:i] = buf[j : j + draw.integer(1, 64)]
        else:
            del buf[i:]
    return bytes(buf)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _paths(item, (*path, n))


def _confused(value: Any) -> Any:
    """The same datum in another JSON type: what a careless or hostile writer produces."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return {str(n): v for n, v in enumerate(value)}
    if isinstance(value, dict):
        return list(value.values())
    return 0


def mutate_tree(draw: Draw, value: Any, max_ops: int = 3) -> Any:
    """A deep copy of a JSON value with a few values replaced, type-confused, deleted,
    added or duplicated, or keys renamed."""
    value = copy.deepcopy(value)
    for _ in range(draw.integer(1, max_ops)):
        path = draw.pick(list(_paths(value)))
        op = draw.integer(0, 5)
        if not path:
            value = json_value(draw) if op == 0 else _confused(value)
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        target = parent[key]
        if op == 0:
            parent[key] = json_value(draw)
        elif op == 1:
            parent[key] = _confused(target)
        elif op == 2:
            del parent[key]
        elif op == 3 and isinstance(parent, dict):
            parent[draw.pick(KEY_WORDS)] = parent.pop(key)
        elif op == 4 and isinstance(target, dict):
            target[draw.pick(KEY_WORDS)] = json_value(draw)
        elif op == 4 and isinstance(target, list):
            target.append(
                copy.deepcopy(target[0]) if target and draw.integer(0, 1) else json_value(draw)
            )
        else:
            parent[key] = (
                draw.pick(EDGE_INTS) if isinstance(target, int) else draw.pick(EDGE_STRINGS)
            )
    return value


# -- known bugs: counted apart while their reproducer still fails ---------------------------


@dataclass(frozen=True)
class KnownBug:
    id: str
    summary: str
    types: tuple[type[BaseException], ...]
    where: tuple[str, str]
    """(file name, function) that must be on the traceback."""
    repro: Callable[[], object]

    @cached_property
    def active(self) -> bool:
        """Whether the reproducer still raises the undeclared exception."""
        try:
            self.repro()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return self.matches(exc, check_active=False)
        return False

    def matches(self, exc: BaseException, check_active: bool = True) -> bool:
        if not isinstance(exc, self.types) or (check_active and not self.active):
            return False
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append((Path(tb.tb_frame.f_code.co_filename).name, tb.tb_frame.f_code.co_name))
            tb = tb.tb_next
        return self.where in frames


def search_file(header: bytes, tail: bytes = b"") -> bytes:
    return MAGIC + (1).to_bytes(4, "little") + len(header).to_bytes(4, "little") + header + tail


KNOWN_BUGS: list[KnownBug] = []
"""Open product bugs, each with a strict-xfail test in tests/test_hardening/test_fuzz.py.
Fixed ones are removed: should they come back, they count as new."""


def known_bug(exc: BaseException) -> KnownBug | None:
    return next((bug for bug in KNOWN_BUGS if bug.matches(exc)), None)


# -- the targets ------------------------------------------------------------------------------


class Target(abc.ABC):
    """One parser under fuzzing: `make` draws an input, `run` feeds it to the parser."""

    name = ""
    declared: tuple[type[BaseException], ...] = ()

    @abc.abstractmethod
    def make(self, draw: Draw) -> Any:
        """An input, drawn from the fuzzing engine's data."""

    @abc.abstractmethod
    def run(self, value: Any) -> str:
        """ "accepted" or "refused" (a declared refusal that is an answer, not an
        exception); raise a declared error to refuse, AssertionError for a broken contract."""

    def describe(self, value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 400 else text[:400] + "…"


def _check_accepted_manifest(data: bytes, manifest: Manifest) -> None:
    assert manifest.to_bytes() == data, "an accepted manifest must re-encode to the same bytes"
    assert manifest.canonical_signed() == canonical.dumps(manifest.signed.to_dict())


class ManifestBytes(Target):
    name = "manifest_bytes"
    declared = (BundleError,)

    def make(self, draw: Draw) -> bytes:
        kind = draw.integer(0, 2)
        if kind == 0:
            return draw.binary(512)
        if kind == 1:
            return b"".join(draw.pick(JSON_TOKENS) for _ in range(draw.integer(0, 40)))
        value = (
            {"signatures": json_value(draw), "signed": json_value(draw, 3)}
            if draw.integer(0, 1)
            else json_value(draw, 3)
        )
        try:
            return canonical.dumps(value)
        except canonical.CanonicalError:
            return json.dumps(value).encode()

    def run(self, value: bytes) -> str:
        _check_accepted_manifest(value, Manifest.from_bytes(value))
        return "accepted"


class ManifestMutation(Target):
    name = "manifest_mutation"
    declared = (BundleError,)

    def __init__(self, original: bytes) -> None:
        self.original, self.tree = original, json.loads(original)

    def make(self, draw: Draw) -> bytes:
        if draw.integer(0, 1):
            return mutate_bytes(draw, self.original)
        tree = mutate_tree(draw, self.tree)
        try:
            return canonical.dumps(tree)
        except canonical.CanonicalError:
            return json.dumps(tree, sort_keys=True, separators=(",", ":")).encode()

    def run(self, value: bytes) -> str:
        _check_accepted_manifest(value, Manifest.from_bytes(value))
        return "accepted"


class Workspace:
    """Copies of one real bundle, built once: signed with the test key, unsigned, and a
    pristine one that no target mutates (the library_search target serves it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.key = load_private_key(TEST_KEY.read_bytes())
        self.public = str(public_key_of(self.key))
        config = load_config(EXAMPLE)
        for variant, key in (("signed", self.key), ("unsigned", None)):
            built = build(config, root / f"build-{variant}", key).bundle.path
            shutil.copytree(built, root / variant)
        shutil.copytree(root / "unsigned", root / "pristine")
        self.originals = {
            v: {
                n: (root / v / n).read_bytes()
                for n in ("manifest.json", "catalog.json", "search.bin")
            }
            for v in ("signed", "unsigned")
        }

    def manifest_tree(self, variant: str) -> Any:
        return json.loads(self.originals[variant]["manifest.json"])

    def open(self, variant: str, files: dict[str, bytes], opener: Callable[..., Any]) -> Any:
        """Write `files` into the variant's copy, open it with `opener`, restore it."""
        folder = self.root / variant
        try:
            for name, data in files.items():
                (folder / name).write_bytes(data)
            if variant == "signed":
                return opener(folder, [self.public])
            return opener(folder, (), allow_unsigned=True)
        finally:
            for name in files:
                (folder / name).write_bytes(self.originals[variant][name])

    def manifest_for(self, variant: str, name: str, data: bytes, resign: bool) -> bytes:
        """The variant's manifest listing `data` as file `name`, re-signed with the test
        key when the variant is signed and `resign` (else the old signature stays)."""
        tree = self.manifest_tree(variant)
        tree["signed"]["files"][name] = {
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        return self.seal(variant, tree, resign)

    def seal(self, variant: str, tree: Any, resign: bool) -> bytes:
        if variant == "signed" and resign and isinstance(tree, dict):
            with contextlib.suppress(Exception):  # a mutated payload may have no canonical form
                tree["signatures"] = [sign(self.key, MANIFEST_TAG, tree["signed"])]
        try:
            return canonical.dumps(tree)
        except canonical.CanonicalError:
            return json.dumps(tree, sort_keys=True, separators=(",", ":")).encode()


def _open_hashing(path: Path, keys: Any, **options: Any) -> Any:
    bundle = open_bundle(path, keys, hash_all=True, **options)
    assert len(bundle.catalog.docs) == bundle.manifest.signed.docs
    return bundle


class BundleManifest(Target):
    name = "bundle_manifest"
    declared = (BundleError,)

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace

    def make(self, draw: Draw) -> tuple[str, bytes]:
        variant = draw.pick(["signed", "unsigned"])
        if draw.integer(0, 3) == 0:
            return variant, mutate_bytes(draw, self.ws.originals[variant]["manifest.json"])
        return variant, self.ws.seal(
            variant,
            mutate_tree(draw, self.ws.manifest_tree(variant)),
            resign=bool(draw.integer(0, 1)),
        )

    def run(self, value: tuple[str, bytes]) -> str:
        variant, data = value
        self.ws.open(variant, {"manifest.json": data}, _open_hashing)
        return "accepted"


class BundleCatalog(Target):
    name = "bundle_catalog"
    declared = (BundleError,)

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.trees = {
            v: json.loads(workspace.originals[v]["catalog.json"]) for v in ("signed", "unsigned")
        }

    def make(self, draw: Draw) -> tuple[str, bytes, bytes]:
        variant = draw.pick(["signed", "unsigned"])
        if draw.integer(0, 3) == 0:
            data = mutate_bytes(draw, self.ws.originals[variant]["catalog.json"])
        else:
            data = json.dumps(mutate_tree(draw, self.trees[variant], max_ops=2)).encode()
        return (
            variant,
            data,
            self.ws.manifest_for(variant, "catalog.json", data, resign=draw.integer(0, 7) > 0),
        )

    def run(self, value: tuple[str, bytes, bytes]) -> str:
        variant, catalog, manifest = value
        self.ws.open(variant, {"catalog.json": catalog, "manifest.json": manifest}, _open_hashing)
        return "accepted"

    def describe(self, value: tuple[str, bytes, bytes]) -> str:
        return super().describe((value[0], value[1]))


class BundleSearch(Target):
    name = "bundle_search"
    declared = (BundleError,)

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace

    def make(self, draw: Draw) -> tuple[str, bytes, bytes]:
        variant = draw.pick(["signed", "unsigned"])
        original = self.ws.originals[variant]["search.bin"]
        header_len = int.from_bytes(original[12:16], "little")
        kind = draw.integer(0, 2)
        if kind == 0:  # a mutated header, the arrays as they were
            header = json.loads(original[16 : 16 + header_len])
            new = json.dumps(mutate_tree(draw, header, max_ops=2)).encode()
            data = (
                original[:12] + len(new).to_bytes(4, "little") + new + original[16 + header_len :]
            )
        elif kind == 1:  # bytes of the preamble and header
            data = mutate_bytes(draw, original[: 16 + header_len]) + original[16 + header_len :]
        else:
            data = mutate_bytes(draw, original)
        return variant, data, self.ws.manifest_for(variant, "search.bin", data, resign=True)

    def run(self, value: tuple[str, bytes, bytes]) -> str:
        variant, data, manifest = value

        def opener(path: Path, keys: Any, **options: Any) -> None:
            lib = Library.open(path, keys, **options)
            for query in ("modbus register", "reg*", "modbsu~2"):
                assert isinstance(lib.search(query), dict)

        self.ws.open(variant, {"search.bin": data, "manifest.json": manifest}, opener)
        return "accepted"

    def describe(self, value: tuple[str, bytes, bytes]) -> str:
        return super().describe((value[0], value[1][:200]))


FRONTMATTER_TOKENS = [
    "\n",
    "  ",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "&a ",
    "*a",
    "!!str ",
    "!!python/object:os.system ",
    "!!python/object/apply:os.system ",
    "!x ",
    "? ",
    "|\n",
    ">-\n",
    "'",
    '"',
    "# c",
    "---",
    "...",
    "id",
    "title",
    "2026-01-31",
    "2026-02-30",
    "2026-01-01 10:00:00+01:00",
    "12:30:45",
    "0x1F",
    "0b_",
    "0o7",
    "1_000",
    ".inf",
    "1.10",
    "yes",
    "Off",
    "null",
    "~",
    "9007199254740993",
    "-9007199254740992",
    "\u00e9",
    "\t",
    "\\u0000",
    "%YAML 1.1\n",
    "%TAG ! tag:x,2002:\n",
    "<<: ",
    "=",
    "\ufeff",
    "\x85",
    "\u2028",
    "\r",
    "\x00",
]


def valid_text(text: str) -> str:
    """`text` as it can come out of strict UTF-8 decoding: lone surrogates become '?'."""
    return text.encode("utf-8", "replace").decode("utf-8")


def as_read(text: str) -> str:
    """Text as `handbook_build.read.source.read` hands it to the parser: valid UTF-8, no
    byte-order mark, line endings made ``\\n``."""
    text = valid_text(text).removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


class FrontmatterTarget(Target):
    name = "frontmatter"
    declared = ()

    def __init__(self) -> None:
        self.docs = sorted(p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*/docs/**/*.md"))

    def make(self, draw: Draw) -> str:
        return as_read(self._make(draw))

    def _make(self, draw: Draw) -> str:
        kind = draw.integer(0, 3)
        if kind == 0:
            return draw.text(300)
        if kind == 1:
            return "---\n" + draw.text(300) + "\n---\nbody\n"
        if kind == 2:
            return "---\n" + soup(draw, FRONTMATTER_TOKENS, 60) + "\n---\n# T\n\n## S\n"
        text = draw.pick(self.docs)
        for _ in range(draw.integer(1, 4)):
            i = draw.integer(0, min(len(text), 1200))  # mostly in and around the frontmatter
            op = draw.integer(0, 3)
            if op == 0:
                text = text[:i] + draw.pick(FRONTMATTER_TOKENS) + text[i:]
            elif op == 1:
                text = text[:i] + text[i + draw.integer(1, 40) :]
            elif op == 2:
                text = text[:i] + draw.text(8) + text[i:]
            else:
                j = draw.integer(0, len(text))
                text = text[:i] + text[j : j + draw.integer(1, 80)] + text[i:]
        return text

    def run(self, value: str) -> str:
        doc, findings = parse_doc(Text("fuzz.md", value))
        assert all(isinstance(f, Finding) and f.line >= 1 and f.col >= 1 for f in findings)
        if doc is None:
            assert any(f.severity == "error" for f in findings), findings
            return "refused"
        assert set(doc.meta) <= set(doc.fields)  # a refused value (a finding) drops its field
        assert all(f.severity == "error" for f in findings), findings
        json.dumps(doc.meta, allow_nan=False)  # plain JSON values, nothing else
        lines = value.count("\n") + 2
        assert all(1 <= line <= lines for line in doc.lines.values())
        assert all(1 <= h.line <= lines for h in doc.headings)
        assert all(0 <= s.start <= s.end <= len(doc.body) for s in doc.sections)
        return "accepted"


QUERY_TOKENS = [
    "modbus",
    "register",
    "qos",
    "mqtt",
    "a",
    "ab",
    "c",
    " ",
    "  ",
    "\t",
    "\n",
    "*",
    "~",
    "~1",
    "~2",
    "~3",
    "~-1",
    "^",
    "^2",
    "^100",
    "^101",
    "^0",
    "^nan",
    "+",
    "-",
    ":",
    "title:",
    "body:",
    "keywords:",
    "nofield:",
    '"',
    "'",
    "\\",
    "(",
    ")",
    "[",
    "!",
    "&&",
    "\u00e9",
    "\u00df",
    "\u0130",
    "\ufb01",
    "\u0661",
    "\u00b2",
    "\u200b",
    "\U0001f642",
    "\x00",
    ".",
    "?",
    "_",
    "0",
    "9",
    "\udcd8",
]


class QueryText(Target):
    def make(self, draw: Draw) -> str:
        kind = draw.integer(0, 3)
        if kind == 0:
            return draw.text(600)
        if kind == 1:
            return soup(draw, QUERY_TOKENS, 60)
        if kind == 2:  # around the term cap
            return " ".join(
                draw.pick(QUERY_TOKENS[:4]) + draw.pick(["", "~1", "~2", "*", "^3"])
                for _ in range(draw.integer(28, 36))
            )
        return (draw.pick(QUERY_TOKENS[:3]) + " ") * draw.integer(
            50, 90
        )  # around the character cap


class QueryParse(QueryText):
    name = "query_parse"
    declared = (QueryError,)

    def run(self, value: str) -> str:
        try:
            clauses = fit(parse_query(value), len).clauses  # any frequency will do
        except QueryError as exc:
            assert exc.code in QUERY_CODES and str(exc), exc.to_dict()
            raise
        assert 1 <= len(clauses) <= MAX_TERMS
        assert sum(c.term.count("*") for c in clauses) <= MAX_WILDCARDS
        assert all(
            c.edit_distance <= MAX_EDIT_DISTANCE and not c.term.startswith("*") and c.term
            for c in clauses
        )
        return "accepted"


class LibrarySearch(QueryText):
    name = "library_search"
    declared = ()

    def __init__(self, workspace: Workspace) -> None:
        self.lib = Library.open(workspace.root / "pristine", allow_unsigned=True)

    def make(self, draw: Draw) -> tuple[str, Any, Any]:
        limit = draw.pick([None, 1, 10, 100, 101, 0, -1, "5", "x", 1.5, True, 10**30, []])
        lang = draw.pick([None, None, "any", "en", "xx", ""])
        return super().make(draw), limit, lang

    def run(self, value: tuple[str, Any, Any]) -> str:
        query, limit, lang = value
        resp = self.lib.search(query, limit, lang=lang)
        assert isinstance(resp, dict)
        if (
            resp.get("error", {}).get("code") == "internal_error"
        ):  # run it unwrapped: the real exception
            type(self.lib).search.__wrapped__(self.lib, query, limit, lang=lang)
            raise AssertionError(f"internal_error, but unwrapped it ran: {resp['error']}")
        assert resp["response_chars"] == len(json.dumps(resp, ensure_ascii=False))
        if "error" in resp:
            assert resp["error"]["code"] in SEARCH_CODES, resp["error"]
            assert resp["hits"] == [] and resp["count"] == 0
            return "refused"
        assert isinstance(resp["hits"], list) and len(resp["hits"]) <= 100
        return "accepted"


class TrustedKey(Target):
    name = "trusted_key"
    declared = (KeyFormatError,)

    def make(self, draw: Draw) -> str:
        import base64

        kind = draw.integer(0, 2)
        if kind == 0:
            return draw.text(80)
        if kind == 1:  # mostly 32 bytes: a key of the right size, valid or not
            raw = (
                bytes(draw.integer(0, 255) for _ in range(32))
                if draw.integer(0, 2)
                else draw.binary(40)
            )
        else:  # all-zero, all-one, p-1, and other points near the edges
            raw = bytes([draw.pick([0, 1, 0xFF, 0xEC, 0x7F])]) * 32
        return (
            draw.pick(["ed25519:", "ED25519:", " ed25519:", "ed25519: "])
            + base64.b64encode(raw).decode()
            + draw.pick(["", "=", "\n", " x"])
        )

    def run(self, value: str) -> str:
        key = PublicKey.parse(value)
        assert len(key.raw) == 32 and len(key.keyid) == 64
        assert trusted_keys([value], env=False) == [key]
        return "accepted"


SNIPPET_TOKENS = [
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "=",
    "&a ",
    "*a",
    "!!python/object:os.system ",
    "a",
    "1",
    "\n",
    "  ",
    "- ",
    "'''",
    "[[",
    "]]",
    "\\",
    "\x00",
]


class SnippetValidators(Target):
    name = "snippet_validators"
    declared = ()

    def make(self, draw: Draw) -> str:  # fences come from files decoded as strict UTF-8
        return valid_text(draw.text(300) if draw.integer(0, 1) else soup(draw, SNIPPET_TOKENS, 200))

    def run(self, value: str) -> str:
        problems = [p for check in (check_json, check_yaml, check_toml) for p in check(value)]
        assert all(
            isinstance(p, str)
            or (
                isinstance(p, tuple)
                and len(p) in (2, 3)
                and all(isinstance(n, int) for n in p[:-1])
                and isinstance(p[-1], str)
            )
            for p in problems
        )
        return "refused" if problems else "accepted"


TARGET_NAMES = [
    "manifest_bytes",
    "manifest_mutation",
    "bundle_manifest",
    "bundle_catalog",
    "bundle_search",
    "frontmatter",
    "query_parse",
    "library_search",
    "trusted_key",
    "snippet_validators",
]
_NEEDS_WORKSPACE = {
    "manifest_mutation",
    "bundle_manifest",
    "bundle_catalog",
    "bundle_search",
    "library_search",
}


def make_targets(workdir: Path, names: Sequence[str] = TARGET_NAMES) -> dict[str, Target]:
    """The targets named, ready to run; a real bundle is built under `workdir` if any needs one."""
    unknown = set(names) - set(TARGET_NAMES)
    if unknown:
        raise ValueError(
            f"unknown targets: {', '.join(sorted(unknown))}; known: {', '.join(TARGET_NAMES)}"
        )
    ws = Workspace(workdir) if _NEEDS_WORKSPACE & set(names) else None
    factories: dict[str, Callable[[], Target]] = {
        "manifest_bytes": ManifestBytes,
        "manifest_mutation": lambda: ManifestMutation(ws.originals["signed"]["manifest.json"]),  # type: ignore[union-attr]
        "bundle_manifest": lambda: BundleManifest(ws),  # type: ignore[arg-type]
        "bundle_catalog": lambda: BundleCatalog(ws),  # type: ignore[arg-type]
        "bundle_search": lambda: BundleSearch(ws),  # type: ignore[arg-type]
        "frontmatter": FrontmatterTarget,
        "query_parse": QueryParse,
        "library_search": lambda: LibrarySearch(ws),  # type: ignore[arg-type]
        "trusted_key": TrustedKey,
        "snippet_validators": SnippetValidators,
    }
    return {name: factories[name]() for name in names}


# -- running one example ----------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str
    """accepted | refused | known:<bug id> | undeclared"""
    seconds: float
    peak: int | None
    """Peak traced bytes, when the example ran under tracemalloc."""
    error: BaseException | None = None


def execute(target: Target, value: Any, trace: bool = False) -> Outcome:
    """Run one example; classify what came out. Never raises (but KeyboardInterrupt)."""
    started = False
    if trace:
        if tracemalloc.is_tracing():
            tracemalloc.reset_peak()
        else:
            tracemalloc.start()
            started = True
        base = tracemalloc.get_traced_memory()[0]
    error: BaseException | None = None
    t0 = time.perf_counter()
    try:
        kind = target.run(value)
    except target.declared as exc:
        kind, error = "refused", exc
    except BaseException as exc:  # SystemExit too: product code must not end the process
        if isinstance(exc, KeyboardInterrupt):
            raise
        bug = known_bug(exc)
        kind, error = (f"known:{bug.id}" if bug else "undeclared"), exc
    seconds = time.perf_counter() - t0
    peak = None
    if trace:
        peak = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()
    return Outcome(kind, seconds, peak, error)


def check(
    target: Target,
    value: Any,
    trace: bool = False,
    hang_seconds: float = HANG_SECONDS,
    memory_cap: int = MEMORY_CAP,
) -> Outcome:
    """`execute`, then fail (AssertionError) on an undeclared exception, a hang or an
    example over the memory cap: what the CI harnesses call."""
    outcome = execute(target, value, trace)
    if outcome.kind == "undeclared":
        assert outcome.error is not None
        raise AssertionError(
            f"{target.name}: undeclared {type(outcome.error).__name__}: {outcome.error}"
        ) from outcome.error
    assert outcome.seconds < hang_seconds, (
        f"{target.name}: one example took {outcome.seconds:.2f} s (hang bound {hang_seconds} s)"
    )
    assert outcome.peak is None or outcome.peak < memory_cap, (
        f"{target.name}: one example allocated {outcome.peak:,} bytes"
    )
    return outcome


# -- statistics and engines ---------------------------------------------------------------


@dataclass
class Stats:
    target: str
    engine: str
    examples: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    hangs: int = 0
    over_memory: int = 0
    worst_seconds: float = 0.0
    worst_input: str = ""
    traced: int = 0
    worst_peak: int = 0
    elapsed: float = 0.0
    failures: list[dict[str, str]] = field(default_factory=list)
    crashed: str = ""

    def record(
        self, target: Target, value: Any, outcome: Outcome, hang_seconds: float, memory_cap: int
    ) -> None:
        self.examples += 1
        self.kinds[outcome.kind] += 1
        if outcome.seconds > self.worst_seconds:
            self.worst_seconds, self.worst_input = outcome.seconds, target.describe(value)
        self.hangs += outcome.seconds >= hang_seconds
        if outcome.peak is not None:
            self.traced += 1
            self.worst_peak = max(self.worst_peak, outcome.peak)
            self.over_memory += outcome.peak >= memory_cap
        if (
            outcome.error is not None
            and outcome.kind != "refused"
            and sum(1 for f in self.failures if f["kind"] == outcome.kind) < 3
        ):
            tb = outcome.error.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = (
                f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno} {tb.tb_frame.f_code.co_name}"
                if tb
                else "?"
            )
            self.failures.append(
                {
                    "kind": outcome.kind,
                    "error": f"{type(outcome.error).__name__}: {outcome.error}"[:300],
                    "where": where,
                    "input": target.describe(value),
                }
            )

    @property
    def undeclared(self) -> int:
        return self.kinds["undeclared"]

    @property
    def known(self) -> int:
        return sum(n for k, n in self.kinds.items() if k.startswith("known:"))

    @property
    def failed(self) -> bool:
        return bool(self.undeclared or self.hangs or self.over_memory or self.crashed)


class Budget:
    def __init__(self, examples: int | None, seconds: float | None) -> None:
        self.examples, self.deadline = examples, (time.monotonic() + seconds if seconds else None)

    def done(self, stats: Stats) -> bool:
        if self.examples is not None and stats.examples >= self.examples:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline


def run_hypothesis(target: Target, budget: Budget, args: argparse.Namespace) -> Stats:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    stats = Stats(target.name, "hypothesis")
    start = time.monotonic()

    def example(data: Any) -> None:
        value = target.make(HypothesisDraw(data))
        outcome = execute(target, value, trace=stats.examples % args.memory_every == 0)
        stats.record(target, value, outcome, args.hang_seconds, args.memory_cap)

    while not budget.done(stats):
        size = min(200, budget.examples - stats.examples) if budget.examples is not None else 200
        batch = settings(
            max_examples=size,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )(given(st.data())(example))
        before = stats.examples
        batch()
        if stats.examples == before:  # hypothesis found nothing more to generate
            break
    stats.elapsed = time.monotonic() - start
    return stats


def run_atheris_child(args: argparse.Namespace) -> None:
    """In a child process: fuzz one target with atheris, write the stats, exit."""
    import atheris

    with tempfile.TemporaryDirectory(prefix="handbook-fuzz-") as tmp:
        target = make_targets(Path(tmp), [args.child])[args.child]
        for bug in KNOWN_BUGS:
            bug.active  # noqa: B018 - decided once, before fuzzing
        stats = Stats(target.name, "atheris")
        budget = Budget(args.examples, args.seconds)
        start = time.monotonic()

        def finish() -> None:
            stats.elapsed = time.monotonic() - start
            fields = {f.name: getattr(stats, f.name) for f in dataclasses.fields(stats)}
            Path(args.stats).write_text(
                json.dumps({**fields, "kinds": dict(stats.kinds)}), encoding="utf-8"
            )
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

        def one(data: bytes) -> None:
            if budget.done(stats):
                finish()
            value = target.make(AtherisDraw(atheris.FuzzedDataProvider(data)))
            outcome = execute(target, value, trace=stats.examples % args.memory_every == 0)
            stats.record(target, value, outcome, args.hang_seconds, args.memory_cap)

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        atheris.Setup(
            [
                sys.argv[0],
                "-runs=-1",
                "-max_len=4096",
                "-timeout=60",
                "-rss_limit_mb=4096",
                f"-artifact_prefix={ARTIFACTS}/{target.name}-",
            ],
            one,
        )
        atheris.Fuzz()
        finish()


ATHERIS_BOOT = """
import runpy, sys
import atheris
with atheris.instrument_imports(include=["handbook", "handbook_build", "markdown_it", "yaml"]):
    import handbook.bundle.local, handbook.bundle.canonical, handbook.bundle.catalog, handbook.bundle.manifest
    import handbook.libraries.library
    import handbook.search.query, handbook.search.index, handbook.bundle.signing
    import handbook_build.read.frontmatter, handbook_build.read.parse, handbook_build.checks.snippets
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
"""The child's start: the product is imported under atheris' coverage instrumentation,
then this script runs as usual and finds it imported."""


def run_atheris(
    name: str, examples: int | None, seconds: float | None, args: argparse.Namespace
) -> Stats:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stats_file = ARTIFACTS / f"{name}.stats.json"
    log = ARTIFACTS / f"{name}.log"
    stats_file.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-c",
        ATHERIS_BOOT,
        __file__,
        "--child",
        name,
        "--engine",
        "atheris",
        "--memory-every",
        str(args.memory_every),
        "--hang-seconds",
        str(args.hang_seconds),
        "--memory-cap-mb",
        str(args.memory_cap // 2**20),
        "--stats",
        str(stats_file),
    ]
    if examples is not None:
        command += ["--examples", str(examples)]
    if seconds is not None:
        command += ["--seconds", str(seconds)]
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=ROOT)
    if stats_file.exists():
        data = json.loads(stats_file.read_text(encoding="utf-8"))
        data["kinds"] = Counter(data["kinds"])
        stats = Stats(**data)
    else:
        stats = Stats(name, "atheris")
    if proc.returncode != 0 or not stats_file.exists():
        stats.crashed = f"child exited with {proc.returncode}; see {log.relative_to(ROOT)}"
    return stats


def report(all_stats: Sequence[Stats], args: argparse.Namespace) -> str:
    lines = [
        "| target | engine | examples | accepted | refused | known-bug hits | undeclared "
        f"| hangs (>= {args.hang_seconds:g} s) | worst ms | traced | worst traced MB | s |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for s in all_stats:
        lines.append(
            f"| {s.target} | {s.engine} | {s.examples:,} | {s.kinds['accepted']:,} "
            f"| {s.kinds['refused']:,} | {s.known:,} | {s.undeclared:,} | {s.hangs} "
            f"| {s.worst_seconds * 1000:.1f} | {s.traced:,} | {s.worst_peak / 2**20:.2f} | {s.elapsed:.0f} |"
        )
    total = sum(s.examples for s in all_stats)
    new = sum(s.undeclared for s in all_stats)
    known = Counter[str]()
    for s in all_stats:
        known.update({k: n for k, n in s.kinds.items() if k.startswith("known:")})
    lines.append("")
    lines.append(
        f"{total:,} examples; undeclared exceptions: {new} new, {sum(known.values())} from known bugs; "
        f"hangs: {sum(s.hangs for s in all_stats)}; "
        f"over {args.memory_cap / 2**20:.0f} MB: {sum(s.over_memory for s in all_stats)}"
    )
    for bug in KNOWN_BUGS:
        state = "reproduces" if bug.active else "FIXED (its exceptions now count as new)"
        lines.append(
            f"  known bug {bug.id} ({state}): {known[f'known:{bug.id}']} hits: {bug.summary}"
        )
    for s in all_stats:
        if s.crashed:
            lines.append(f"  {s.target}: {s.crashed}")
        for f in s.failures:
            lines.append(
                f"  {s.target} [{f['kind']}] {f['error']} at {f['where']}\n      input: {f['input']}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--examples", type=int, help="examples per target (default 2,000 unless --seconds)"
    )
    parser.add_argument("--seconds", type=float, help="total time, split evenly across the targets")
    parser.add_argument(
        "--targets", default=",".join(TARGET_NAMES), help="comma-separated (default: all)"
    )
    parser.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    parser.add_argument("--hang-seconds", type=float, default=HANG_SECONDS)
    parser.add_argument("--memory-cap-mb", type=int, default=MEMORY_CAP // 2**20)
    parser.add_argument(
        "--memory-every", type=int, default=MEMORY_EVERY, help="trace one example in this many"
    )
    parser.add_argument("--strict", action="store_true", help="known-bug hits fail the run too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.memory_cap = args.memory_cap_mb * 2**20
    if args.child:
        run_atheris_child(args)
        return 0
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    examples = args.examples if args.examples or args.seconds else 2000
    per_target = args.seconds / len(names) if args.seconds else None
    engine = args.engine
    if engine in ("auto", "atheris"):
        try:
            import atheris  # noqa: F401
        except ImportError:
            if engine == "atheris":
                parser.error("atheris is not importable: pip install atheris")
            print(
                "atheris is not importable; fuzzing with hypothesis (random generation, not coverage-guided)"
            )
            engine = "hypothesis"
        else:
            engine = "atheris"
    print(
        f"fuzzing {len(names)} targets with {engine}: "
        + (f"{examples:,} examples each" if examples else "")
        + (" or " if examples and per_target else "")
        + (f"{per_target:.0f} s each" if per_target else ""),
        flush=True,
    )
    all_stats = []
    with tempfile.TemporaryDirectory(prefix="handbook-fuzz-") as tmp:
        targets = make_targets(Path(tmp), names) if engine == "hypothesis" else {}
        for name in names:
            if engine == "atheris":
                stats = run_atheris(name, examples, per_target, args)
            else:
                stats = run_hypothesis(targets[name], Budget(examples, per_target), args)
            print(
                f"  {name}: {stats.examples:,} examples in {stats.elapsed:.0f} s, {stats.undeclared} undeclared, "
                f"{stats.known} known-bug hits, {stats.hangs} hangs{' — ' + stats.crashed if stats.crashed else ''}",
                flush=True,
            )
            all_stats.append(stats)
    print()
    print(report(all_stats, args))
    failed = any(s.failed for s in all_stats) or (args.strict and any(s.known for s in all_stats))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
