"""The one orchestration: discover -> read -> parse -> validate. The CLI and the MkDocs
plugin both call `check`, so they can never disagree about a library."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle import Bundle

from . import snippets
from .config import Config
from .emit import emit, index_entries
from .findings import Finding, apply_levels, count
from .lunr_index import Analyzed
from .parse import Doc, parse
from .seal import publish, staging
from .source import Text, discover, read
from .validate import check_doc, check_library


@dataclass(frozen=True)
class CheckResult:
    docs: list[Doc]
    """The docs that parsed, in path order (findings may still hold errors about them)."""
    findings: list[Finding]
    """Sorted, with the configured severities; `off` rules removed."""
    analyzed: dict[str, tuple[Analyzed, ...]] = field(default_factory=dict)
    """Doc path -> its index entries through the lunr pipeline (when asked for)."""

    @property
    def errors(self) -> int:
        return count(self.findings)[0]

    @property
    def warnings(self) -> int:
        return count(self.findings)[1]

    def failed(self, strict: bool = False) -> bool:
        return self.errors > 0 or (strict and self.warnings > 0)


class BuildError(Exception):
    """The library has errors (or warnings under strict): nothing was written."""

    def __init__(self, result: CheckResult) -> None:
        super().__init__(f"{result.errors} errors, {result.warnings} warnings: nothing written")
        self.result = result


def build_time(now: float | None = None) -> str:
    """`SOURCE_DATE_EPOCH` when set (reproducible builds), else now; UTC, whole seconds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = int(epoch) if epoch and epoch.strip().isdigit() else int(now if now is not None else time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def build(
    config: Config,
    out: Path,
    key: Ed25519PrivateKey | None,
    *,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[CheckResult, Bundle]:
    """Check, emit, seal and publish. Raises `BuildError` (nothing written) when the check
    fails; the previous bundle at `out` stays in place on any failure."""
    result = check(config, progress, analyze=True)
    if result.failed(strict):
        raise BuildError(result)
    built_at = build_time()
    with staging(out) as writer:
        emit(result.docs, config, built_at, writer, result.analyzed)
        writer.seal(library=config.library, version=config.version, built_at=built_at, docs=len(result.docs), key=key)
        bundle = publish(writer, out, key)
    return result, bundle


A = TypeVar("A")
T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_FILES = 500
"""Below this, starting worker processes costs more than it saves."""
_CHUNK = 64


def check(config: Config, progress: Callable[[int, int], None] | None = None, *, analyze: bool = False) -> CheckResult:
    """Check the whole library. `progress(done, total)` is called as files are checked.
    With `analyze`, each doc's index entries also go through the lunr pipeline while the
    doc is at hand in its worker (the build needs them; a check does not)."""
    found = discover(config.docs_dir, config.exclude)
    findings = list(found.findings)
    docs = []
    analyzed = {}
    total = len(found.paths)
    for done, loaded in enumerate(parallel(_load_chunk, (config, analyze), found.paths), 1):
        findings.extend(loaded.findings)
        if loaded.doc is not None:
            docs.append(loaded.doc)
            if loaded.analyzed is not None:
                analyzed[loaded.doc.path] = loaded.analyzed
        if progress:
            progress(done, total)
    findings.extend(check_library(docs))
    return CheckResult(docs, apply_levels(findings, config.rules), analyzed)


@dataclass(frozen=True)
class Loaded:
    doc: Doc | None
    findings: list[Finding]
    analyzed: tuple[Analyzed, ...] | None = None


def load(config: Config, path: str, analyze: bool = False) -> Loaded:
    """Read, parse and check one file (and analyze its index entries)."""
    source = read(config.docs_dir, path)
    if not isinstance(source, Text):
        return Loaded(None, [source])
    doc, findings = parse(source)
    if doc is None:
        return Loaded(None, findings)
    findings += check_doc(doc, config, _validators(config))
    return Loaded(doc, findings, tuple(e.analyze() for e in index_entries([doc])) if analyze else None)


_registries: dict[tuple[tuple[str, str], ...], dict[str, snippets.Validator]] = {}


def _validators(config: Config) -> dict[str, snippets.Validator]:
    """The validator registry, imported once per process (workers import their own)."""
    key = tuple(sorted(config.snippet_validators.items()))
    if key not in _registries:
        _registries[key] = snippets.registry(config.snippet_validators, config.config_path.parent)
    return _registries[key]


def _load_chunk(args: tuple[Config, bool], paths: list[str]) -> list[Loaded]:
    config, analyze = args
    return [load(config, path, analyze) for path in paths]


def parallel(work: Callable[[A, list[T]], list[R]], arg: A, items: list[T]) -> Iterator[R]:
    """`work(arg, chunk)` over chunks of `items`, results in order. Parsing, checking and
    analysis are CPU-bound pure Python, so large inputs use every core. A single-threaded
    process forks its workers; one running threads (MkDocs' `serve`) starts them from a
    clean fork server instead, since forking a threaded process can deadlock. If the
    pool cannot run, the rest of the work is done here, serially."""
    chunks = [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]
    workers = min(os.cpu_count() or 1, 8)
    if len(items) < PARALLEL_MIN_FILES or workers < 2:
        for chunk in chunks:
            yield from work(arg, chunk)
        return
    context = multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    done = 0
    try:
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            for results in pool.map(work, [arg] * len(chunks), chunks):
                yield from results
                done += 1
    except BrokenProcessPool:
        for chunk in chunks[done:]:
            yield from work(arg, chunk)
