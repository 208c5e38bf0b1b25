"""The one orchestration: discover -> read -> parse -> validate. The CLI and the MkDocs
plugin both call `check`, so they can never disagree about a library."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import snippets
from .config import Config
from .findings import Finding, apply_levels, count
from .parse import Doc, parse
from .source import Text, discover, read
from .validate import validate


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
    """Check the whole library. `progress(done, total)` is called as files are parsed."""
    found = discover(config.docs_dir, config.exclude)
    findings = list(found.findings)
    docs = []
    total = len(found.paths)
    for done, (doc, doc_findings) in enumerate(_load_all(config.docs_dir, found.paths), 1):
        findings.extend(doc_findings)
        if doc is not None:
            docs.append(doc)
        if progress:
            progress(done, total)
    validators = snippets.registry(config.snippet_validators, config.config_path.parent)
    findings.extend(validate(docs, config, validators))
    return CheckResult(docs, apply_levels(findings, config.rules))


def load(root: Path, path: str) -> tuple[Doc | None, list[Finding]]:
    """Read and parse one file."""
    source = read(root, path)
    if not isinstance(source, Text):
        return None, [source]
    return parse(source)


def _load_chunk(root: Path, paths: list[str]) -> list[tuple[Doc | None, list[Finding]]]:
    return [load(root, path) for path in paths]


def _load_all(root: Path, paths: list[str]) -> Iterator[tuple[Doc | None, list[Finding]]]:
    """Parsing is CPU-bound pure Python, so large libraries use every core. Workers are
    forked from a clean server process: MkDocs' `serve` runs threads, and forking a
    threaded process can deadlock."""
    workers = min(os.cpu_count() or 1, 8)
    if len(paths) < PARALLEL_MIN_FILES or workers < 2:
        yield from (load(root, path) for path in paths)
        return
    chunks = [paths[i : i + _CHUNK] for i in range(0, len(paths), _CHUNK)]
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        for results in pool.map(_load_chunk, [root] * len(chunks), chunks):
            yield from results
