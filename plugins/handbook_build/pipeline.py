"""The one orchestration the CLI and the MkDocs plugin call, so they can never disagree
about a library. `check` discovers, reads, parses and validates every file (on every
core, `workers`); `build` checks, then has `write.bundles` emit, seal and publish each
bundle from the docs that passed."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.local import Bundle
from handbook.pedigree.records import Record

from . import rules
from .checks import audiences, skills
from .checks.adopt import IdLedger, derive
from .checks.defuse import defused
from .checks.reviews import Reviewed, review
from .checks.validate import check_comments, check_doc, check_library, check_resources
from .config import validators
from .config.settings import Config
from .errors import BuildError
from .findings import Finding, Severity, apply_levels, count
from .read import site_text
from .read.includes import Expander
from .read.parse import Doc, Expands, parse
from .read.rendering import wanted
from .read.source import Text, discover, read
from .workers import parallel
from .write.bundles import (
    Shipment,
    bundle_folders,
    doc_lang,
    streams,
    write_bundles,
    write_streamed,
)
from .write.emit import entry_of, index_entries
from .write.lunr_index import LunrIndex
from .write.streaming import Stream

OnDoc = Callable[[Doc, Sequence[str]], Doc | None]
"""Told each doc as it is checked, with its attached files; may return the doc to keep."""


@dataclass(frozen=True)
class CheckResult:
    docs: list[Doc]
    """The docs that parsed, in path order (findings may still hold errors about them)."""
    findings: list[Finding]
    """Sorted, with the configured severities; `off` rules removed."""
    resources: dict[str, list[str]] = field(default_factory=dict)
    """Folder docs' attached files: doc path -> file paths, relative to the docs root."""
    files: int = 0
    """Every markdown file read, whether it parsed into a doc or not."""
    records: list[Record] = field(default_factory=list)
    """The verified reviews and invalidations (a library that declares reviewers)."""
    omitted: set[str] = field(default_factory=set)
    """Paths of docs the review policy leaves out of the bundle."""

    @property
    def errors(self) -> int:
        return count(self.findings)[0]

    @property
    def warnings(self) -> int:
        return count(self.findings)[1]

    @property
    def notices(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.NOTICE)

    def failed(self, strict: bool = False) -> bool:
        return self.errors > 0 or (strict and self.warnings > 0)


@dataclass(frozen=True)
class BuildResult:
    findings: list[Finding]
    """The check's findings (warnings only, or the build would have failed)."""
    bundle: Bundle
    """The published bundle, as verified by the runtime: the default audience's."""
    bundles: Mapping[str, Bundle] = field(default_factory=dict)
    """Every audience's bundle, by audience (empty for a library without audiences)."""

    def for_audience(self, audience: str | None) -> Bundle:
        return self.bundles.get(audience or "", self.bundle)


def build(
    config: Config,
    out: Path,
    key: Ed25519PrivateKey | None,
    *,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
    embedding: Callable[[int, int], None] | None = None,
) -> BuildResult:
    """Check, emit, seal and publish; `progress` and `embedding` are told (done, total)
    as files are checked and (with `semantic: true`) passages embedded. Raises
    `BuildError` (nothing written) when the check fails, `PublishError` when `out` is
    reached through a symbolic link; the previous bundle at `out` stays in place on any
    failure."""
    folders = bundle_folders(config, out)
    with _no_cycle_collection():
        if streams(config):
            findings: list[Finding] = []
            checking = _checking(config, strict, progress, findings)
            bundle = write_streamed(config, out, key, checking, embedding)
            return BuildResult(findings, bundle)
        findings, shipment = _passing_check(config, strict, progress)
        bundles = write_bundles(config, folders, key, shipment, embedding)
    settings = config.audiences
    default = bundles[settings.default if settings else ""]
    return BuildResult(findings, default, bundles if settings else {})


def _passing_check(
    config: Config, strict: bool, progress: Callable[[int, int], None] | None
) -> tuple[list[Finding], Shipment]:
    """The check's findings and what the bundles are written from, or `BuildError`. With
    one bundle of every doc, the search index is built while the check runs; the check's
    result ends here, so the shipment alone holds the docs (and can free them)."""
    index = LunrIndex() if config.audiences is None and not _omitting(config) else None
    result = check(config, progress, on_doc=None if index is None else _indexing(index))
    if result.failed(strict):
        raise BuildError(result.findings, len(result.docs))
    shipment = Shipment(list(result.docs), result.resources, result.records, result.omitted, index)
    return result.findings, shipment


def _indexing(index: LunrIndex) -> OnDoc:
    return lambda doc, _: index.extend(index_entries([doc]))


def _checking(
    config: Config,
    strict: bool,
    progress: Callable[[int, int], None] | None,
    findings: list[Finding],
) -> Callable[[Stream], None]:
    """The check of a build that streams: each doc goes to the stream as it is checked;
    BuildError when the check fails, else its findings are added to `findings`."""

    def run(stream: Stream) -> None:
        result = check(config, progress, on_doc=stream.add)
        if result.failed(strict):
            raise BuildError(result.findings, len(result.docs))
        findings.extend(result.findings)

    return run


def _omitting(config: Config) -> bool:
    return config.reviews is not None and config.reviews.unapproved == "omit"


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """A build creates millions of small objects and no reference cycles worth
    collecting; the cyclic collector would spend seconds re-scanning them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check(
    config: Config,
    progress: Callable[[int, int], None] | None = None,
    *,
    on_doc: OnDoc | None = None,
) -> CheckResult:
    """Check the whole library. `progress(done, total)` is called as files are checked,
    and `on_doc(doc, attached files)` for each doc that parsed, in path order, while
    worker processes are still parsing the rest (the build indexes or writes docs there,
    on the otherwise idle main process); not for a doc with errors of its own, which fail
    the check (a build never writes it, and it may lack what an entry needs). A doc
    `on_doc` returns is kept in the doc's place (a build that streams keeps a slim one)."""
    found = discover(config.docs_dir, config.exclude, skills_only=config.layout == "skills")
    findings = list(found.findings)
    if config.site is not None and wanted(config.site):  # once; forked workers inherit it
        findings.extend(site_text.prepare(config.site, _includes(config)).findings)
    docs = []
    total = len(found.paths)
    ids = IdLedger()
    for done, (doc, doc_findings) in enumerate(parallel(_load_chunk, config, found.paths), 1):
        findings.extend(doc_findings)
        if doc is not None:
            if config.adopt is not None:  # derived ids settled before anything indexes them
                doc, twice = ids.admit(doc)
                findings.extend(twice)
            if on_doc is not None and not count(apply_levels(doc_findings, config.levels))[0]:
                doc = on_doc(doc, found.resources.get(doc.path, ())) or doc
            docs.append(doc)
        if progress:
            progress(done, total)
    findings.extend(check_library(docs, config.default_lang))
    findings.extend(audiences.check(docs, config.audiences))
    findings.extend(check_resources(config, found.resources))
    reviewed = Reviewed()
    if config.reviews is not None:
        entries = {(d.id, doc_lang(d)): (d, entry_of(d, config, found.resources)) for d in docs}
        reviewed = review(config, entries)
        findings.extend(reviewed.findings)
    return CheckResult(
        docs,
        apply_levels(findings, config.levels),
        found.resources,
        total,
        reviewed.records,
        reviewed.omitted,
    )


def load(
    config: Config, path: str, expander: Expands | None = None
) -> tuple[Doc | None, list[Finding]]:
    """Read, parse (includes expanded by `expander`, or one made for this file) and check
    one file."""
    source = read(config.docs_dir, path)
    if not isinstance(source, Text):
        return None, [source]
    if len(source.text) > _too_long(config):  # parsed, it would take hundreds of bytes a character
        limit = config.limits.body_max_chars
        return None, [
            rules.BODY_TOO_LONG.at(path, 1, variant="file", chars=len(source.text), limit=limit)
        ]
    doc, findings = parse(
        source, expander or _expander(config), frontmatter_optional=config.adopt is not None
    )
    if doc is not None:
        written = doc  # a skill is held to its specification as written, not as read back
        doc, derived = derive(written, config)
        derived += skills.check(written, config)
        findings += map(doc.located, derived + check_doc(doc, config, _validators(config)))
        findings += check_comments(doc, config)
        if config.adopt is not None:  # the site keeps its HTML; agents never get its script
            doc = defused(doc)
    return doc, findings


def _too_long(config: Config) -> int:
    return max(4 * config.limits.body_max_chars, 256 * 1024)


def _expander(config: Config) -> Expands:
    """The site's include extensions, made afresh for each batch of files: an extension
    may cache the files it read, which must not outlive a build (`mkdocs serve`); and,
    for a site whose plugins make text, this build's `Renderer` around them."""
    if config.site is not None and wanted(config.site):
        return site_text.renderer(config.site, _includes(config))
    return _includes(config)


def _includes(config: Config) -> Expander:
    return Expander(config.includes, config.config_path.parent, _too_long(config))


_registries: dict[tuple[tuple[str, str], ...], dict[str, validators.Validator]] = {}


def _validators(config: Config) -> dict[str, validators.Validator]:
    """The validator registry, imported once per process (workers import their own)."""
    key = tuple(sorted(config.snippet_validators.items()))
    if key not in _registries:
        _registries[key] = validators.registry(config.snippet_validators, config.config_path.parent)
    return _registries[key]


def _load_chunk(config: Config, paths: list[str]) -> list[tuple[Doc | None, list[Finding]]]:
    expander = _expander(config)
    return [_checked(*load(config, path, expander)) for path in paths]


def _checked(doc: Doc | None, findings: list[Finding]) -> tuple[Doc | None, list[Finding]]:
    """A checked doc, less what only the per-doc checks (run by `load`) read: its code
    blocks' texts, HTML comments, YAML 1.1 words and include line map. A worker does not
    send them back, and the build does not hold them (code is a quarter of msdocs' text)."""
    if doc is None:
        return None, findings
    return replace(doc, fences=(), comments=(), bool_words=(), origin=()), findings
