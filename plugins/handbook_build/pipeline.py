"""The one orchestration: discover -> read -> parse -> validate. The CLI and the MkDocs
plugin both call `check`, so they can never disagree about a library."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from . import snippets
from .config import Config
from .findings import Finding, apply_levels, count
from .parse import Doc, parse
from .source import Text, discover, read
from .validate import check_doc, check_library


@dataclass(frozen=True)
class CheckResult:
    docs: list[Doc]
    """The docs that parsed, in path order (findings may still hold errors about them)."""
    findings: list[Finding]
    """Sorted, with the configured severities; `off` rules removed."""

    @property
    def errors(self) -> int:
        return count(self.findings)[0]

    @property
    def warnings(self) -> int:
        return count(self.findings)[1]

    def failed(self, strict: bool = False) -> bool:
        return self.errors > 0 or (strict and self.warnings > 0)


PARALLEL_MIN_FILES = 500
"""Below this, starting worker processes costs more than it saves."""
_CHUNK = 64


def check(config: Config, progress: Callable[[int, int], None] | None = None) -> CheckResult:
    """Check the whole library. `progress(done, total)` is called as files are checked."""
    found = discover(config.docs_dir, config.exclude)
    findings = list(found.findings)
    docs = []
    total = len(found.paths)
    for done, (doc, doc_findings) in enumerate(_load_all(config, found.paths), 1):
        findings.extend(doc_findings)
        if doc is not None:
            docs.append(doc)
        if progress:
            progress(done, total)
    findings.extend(check_library(docs))
    return CheckResult(docs, apply_levels(findings, config.rules))


def load(config: Config, path: str) -> tuple[Doc | None, list[Finding]]:
    """Read, parse and check one file."""
    source = read(config.docs_dir, path)
    if not isinstance(source, Text):
        return None, [source]
    doc, findings = parse(source)
    if doc is not None:
        findings += check_doc(doc, config, _validators(config))
    return doc, findings


_registries: dict[tuple[tuple[str, str], ...], dict[str, snippets.Validator]] = {}


def _validators(config: Config) -> dict[str, snippets.Validator]:
    """The validator registry, imported once per process (workers import their own)."""
    key = tuple(sorted(config.snippet_validators.items()))
    if key not in _registries:
        _registries[key] = snippets.registry(config.snippet_validators, config.config_path.parent)
    return _registries[key]


def _load_chunk(config: Config, paths: list[str]) -> list[tuple[Doc | None, list[Finding]]]:
    return [load(config, path) for path in paths]


def _load_all(config: Config, paths: list[str]) -> Iterator[tuple[Doc | None, list[Finding]]]:
    """Parsing and per-doc checks are CPU-bound pure Python, so large libraries use every
    core. Workers are forked from a clean server process: MkDocs' `serve` runs threads,
    and forking a threaded process can deadlock."""
    workers = min(os.cpu_count() or 1, 8)
    if len(paths) < PARALLEL_MIN_FILES or workers < 2:
        yield from (load(config, path) for path in paths)
        return
    chunks = [paths[i : i + _CHUNK] for i in range(0, len(paths), _CHUNK)]
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        for results in pool.map(_load_chunk, [config] * len(chunks), chunks):
            yield from results
