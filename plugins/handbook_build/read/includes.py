"""A doc's body with its includes expanded, as the site's own include extensions expand
it, so that agents read what people read.

MkDocs hands a page's markdown to Python-Markdown, whose preprocessors rewrite its lines
before anything is parsed; include extensions (`pymdownx.snippets`, `mdx_include`,
`markdown_include_variants`) are such preprocessors. Here a `markdown.Markdown` is built
with only the include extensions that `markdown_extensions` names, with the site's
options, and only their preprocessors run over the body's lines: the extension itself
decides what an include means (base paths, line ranges, sections, `auto_append`,
escapes). Nothing else of the Markdown pipeline runs, and other MkDocs plugins' changes
to a page are not applied.

Three things the extensions do not say, and how they are had here:

- *Where each line came from.* The body's lines go in marked with their numbers, and
  the extensions pass the ones they leave alone through (`origins`).
- *Which include failed.* Left to itself, an extension drops an include it cannot
  expand, or stops the page at the first one. The page is expanded with failures
  tolerated (snippets' `check_paths: false`); then every line that did not come
  through is expanded again on its own with the extension told to fail (`check_paths:
  true`). What it raises, or logs as an error (mdx_include only logs), is the failure.
- *An extension that is not installed.* Its include statements are found by the shape
  of its syntax, left as written, and reported.

An `Expander` holds Markdown instances and the extensions' file caches: it is made for
a batch of docs in the process that parses them, never pickled or kept across builds.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import markdown
from markdown.preprocessors import Preprocessor

from .. import rules
from ..findings import Finding
from .origins import Marked, Run, source_line, trace


@dataclass(frozen=True)
class Known:
    """What Handbook needs to know of one include extension: only its options, never its
    syntax (but for `signature`)."""

    paths: tuple[str, ...]
    """Options naming paths, relative to the config's folder (where `mkdocs build` runs)."""
    lenient: Mapping[str, object]
    """Options that make it expand what it can and pass over the rest."""
    strict: Mapping[str, object]
    """Options that make it raise, or log an error, for an include it cannot expand."""
    per_page: Mapping[str, object]
    """Options that switch off what it adds to every page, so a line is not blamed for it."""
    signature: re.Pattern[str]
    """What its include statements look like: reported as they are when it is missing."""


KNOWN: Mapping[str, Known] = {
    "pymdownx.snippets": Known(
        ("base_path",),
        {"check_paths": False},
        {"check_paths": True},
        {"auto_append": []},
        re.compile(r"^[ \t]*-+8<-+"),
    ),
    "mdx_include": Known(("base_path",), {}, {}, {}, re.compile(r"\{!.*?!\}")),
    "markdown_include_variants": Known((), {}, {}, {}, re.compile(r"^\{\*.*\*\}$")),
}
"""The include extensions, by the name `markdown_extensions` gives them."""


class Configured(NamedTuple):
    name: str
    options: Any
    """As written in the configuration (a mapping, unless the configuration is wrong)."""


def configured(extensions: object) -> tuple[Configured, ...]:
    """The include extensions among MkDocs' `markdown_extensions` setting (a list of names
    and one-key mappings, or one mapping), with their options. Entries MkDocs would refuse
    are left for MkDocs to report; a name given twice takes its last options, as there."""
    if isinstance(extensions, dict):
        items = list(extensions.items())
    elif isinstance(extensions, list):
        items = [
            next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, None)
            for item in extensions
        ]
    else:
        return ()
    found = {
        name: {} if options is None else options
        for name, options in items
        if isinstance(name, str) and name in KNOWN
    }
    return tuple(Configured(name, options) for name, options in found.items())


@dataclass(frozen=True)
class Expansion:
    body: str
    runs: tuple[Run, ...]
    """The expanded body's lines mapped to the body as written; () when nothing changed."""
    findings: tuple[Finding, ...]
    """The includes that could not be expanded."""


class _Failure(NamedTuple):
    line: int
    """0-based, in the body as written."""
    variant: str
    """The message of `rules.INCLUDE_FAILED` that tells it."""
    error: str = ""
    extension: str = ""


class Expander:
    """The site's include extensions, ready to expand bodies."""

    def __init__(self, extensions: Sequence[Configured], base: Path, max_chars: int) -> None:
        """`base` is the config's folder; an expansion over `max_chars` is not kept (parsing
        it would cost hundreds of bytes a character)."""
        self.max_chars = max_chars
        self.usable: dict[str, dict[str, Any]] = {}
        """Extension -> its options, with paths made absolute."""
        self.unusable: list[tuple[Configured, str]] = []
        """Extensions that cannot run: not installed (""), or the error their options give."""
        for extension in extensions:
            try:
                self.usable[extension.name] = _resolved(extension, base)
            except Exception as exc:  # ImportError when missing; anything from bad options
                self.unusable.append((extension, "" if isinstance(exc, ImportError) else str(exc)))
        self.lenient = self._chain(lambda known: known.lenient)
        self.alone = self._chain(lambda known: {**known.lenient, **known.per_page})
        self.strict = self._chain(lambda known: {**known.strict, **known.per_page})

    def expand(self, path: str, body: str, body_line: int) -> Expansion:
        """`body`, whose first line is line `body_line` of the file `path`, expanded."""
        written = body.split("\n")
        failures = list(self._unusable(written))
        if not self.lenient:
            return Expansion(body, (), self._findings(path, body_line, written, failures))
        out: list[str] = [Marked(text, n) for n, text in enumerate(written)]
        page_error = ""
        for pre, alone in zip(self.lenient, self.alone, strict=True):
            try:
                out = pre.run(list(out))  # snippets appends to the list it is given
            except Exception as exc:  # then each line on its own, failing ones as they are
                page_error = _describe(exc)  # (every line is probed below, failures reported)
                out = [new for line in out for new in _run([alone], [line])[0]]
        kept = {line.number for line in out if isinstance(line, Marked)}
        gone = _groups(n for n in range(len(written)) if n not in kept)
        probed = self._failing(written, gone)
        if page_error:
            probed.update(self._failing(written, ([n] for n in range(len(written)))))
        failures += [_Failure(n, "", error) for n, (error, _) in probed.items() if error]
        if page_error and not any(error for error, _ in probed.values()):
            failures.append(_Failure(0, "page", page_error))
        if self._appended_error:
            failures.append(_Failure(len(written) - 1, "appended", self._appended_error))
        findings = self._findings(path, body_line, written, failures)
        text = "\n".join(out)
        origin = trace(out, len(written), {n: count for n, (_, count) in probed.items()})
        refused = self._refused(path, body_line, written, text, origin)
        if refused is not None:
            return Expansion(body, (), (*findings, refused))
        return Expansion(text, origin, findings)

    def _refused(
        self, path: str, body_line: int, written: list[str], text: str, origin: tuple[Run, ...]
    ) -> Finding | None:
        """Why the expanded `text` cannot be kept: far too long to parse, or a private key
        an include brought in (a signing key beside mkdocs.yml is within snippets' default
        base path, and the bundle is published)."""
        if len(text) > self.max_chars:
            return rules.INCLUDE_FAILED.at(
                path, body_line, variant="too_long", chars=len(text), limit=self.max_chars
            )
        key = _PRIVATE_KEY.search(text)
        if key is None or _PRIVATE_KEY.search("\n".join(written)):
            return None
        line, _ = source_line(origin, text.count("\n", 0, key.start()))
        return self._findings(path, body_line, written, [_Failure(line, "private_key")])[0]

    def _failing(
        self, written: list[str], groups: Iterable[list[int]]
    ) -> dict[int, tuple[str, int]]:
        """Each line of `groups` expanded on its own: line -> (the error the extensions
        give when told to fail, or "", the number of lines it gives in the page). A group
        of lines (a block of paths between `--8<--` markers) is tried whole when none
        fails alone; its error is at its first line."""
        probed = {}
        for group in groups:
            found = {n: self._probe(written[n]) for n in group}
            if len(group) > 1 and not any(error for error, _ in found.values()):
                error = _failure(self.strict, [written[n] for n in group])
                if error:
                    found[group[0]] = (error, found[group[0]][1])
            probed.update(found)
        return probed

    def _probe(self, line: str) -> tuple[str, int]:
        """The error the extensions give for `line` when told to fail, else the one they
        raise on it when tolerating failures (a flaky include: a download that timed
        out once), else ""; and the number of lines it gives in the page."""
        error = _failure(self.strict, [line])
        given, tolerated = _run(self.alone, [line])
        return error or tolerated, len(given)

    @functools.cached_property
    def _appended_error(self) -> str:
        """What fails in the text the extensions add to every page (snippets'
        `auto_append`): the same on every page, so tried once."""
        return _failure(self._chain(lambda known: known.strict), [])

    def _unusable(self, written: list[str]) -> Iterator[_Failure]:
        for extension, error in self.unusable:
            signature = KNOWN[extension.name].signature
            variant = "refused" if error else "unavailable"
            for n, text in enumerate(written):
                if signature.search(text):
                    yield _Failure(n, variant, error, extension.name)

    def _findings(
        self, path: str, body_line: int, written: list[str], failures: list[_Failure]
    ) -> tuple[Finding, ...]:
        return tuple(
            rules.INCLUDE_FAILED.at(
                path,
                body_line + f.line,
                len(written[f.line]) - len(written[f.line].lstrip()) + 1,
                variant=f.variant,
                text=_shown(written[f.line]),
                error=f.error,
                extension=f.extension,
            )
            for f in sorted(set(failures))
        )

    def _chain(self, choose: Callable[[Known], Mapping[str, object]]) -> list[Preprocessor]:
        """The preprocessors the usable extensions register, in the order Markdown runs
        them, with the options `choose` gives each over the site's."""
        if not self.usable:
            return []
        md = markdown.Markdown(
            extensions=list(self.usable),
            extension_configs={
                name: {**options, **choose(KNOWN[name])} for name, options in self.usable.items()
            },
        )
        return [pre for pre in md.preprocessors if type(pre) not in _builtin_preprocessors()]


def _resolved(extension: Configured, base: Path) -> dict[str, Any]:
    """The extension's options, with the paths in them (or in its defaults) made absolute
    from the config's folder. Raises what the extension raises: ImportError when it is not
    installed, and whatever it says of options it refuses."""
    built = markdown.Markdown().build_extension(extension.name, extension.options)
    options = built.getConfigs()
    return {**options, **{k: _absolute(options[k], base) for k in KNOWN[extension.name].paths}}


@functools.cache
def _builtin_preprocessors() -> frozenset[type[Preprocessor]]:
    return frozenset(type(pre) for pre in markdown.Markdown().preprocessors)


def _absolute(value: object, base: Path) -> object:
    if isinstance(value, str):
        return os.path.join(base, value)
    if isinstance(value, list):
        return [_absolute(item, base) for item in value]
    return value


def _failure(chain: Sequence[Preprocessor], lines: list[str]) -> str:
    """What `chain` raises or logs as an error over `lines`, or ""."""
    with _logged_errors() as logged:
        _, error = _run(chain, lines)
    return error or (logged[0] if logged else "")


def _run(chain: Sequence[Preprocessor], lines: list[str]) -> tuple[list[str], str]:
    """`lines` through `chain`, and ""; or, if it fails on them, the lines as they are
    and what it raised, for the caller to report."""
    try:
        for pre in chain:
            lines = pre.run(list(lines))
    except Exception as exc:
        return lines, _describe(exc)
    return lines, ""


class _Collect(logging.Handler):
    def __init__(self, thread: int) -> None:
        super().__init__(logging.ERROR)
        self.thread, self.messages = thread, list[str]()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


@contextmanager
def _logged_errors() -> Iterator[list[str]]:
    """The errors logged on this thread meanwhile (an extension that reports a missing
    file only in its log)."""
    handler = _Collect(threading.get_ident())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.messages
    finally:
        root.removeHandler(handler)


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _groups(numbers: Iterable[int]) -> Iterator[list[int]]:
    """Runs of consecutive numbers."""
    group: list[int] = []
    for n in numbers:
        if group and n != group[-1] + 1:
            yield group
            group = []
        group.append(n)
    if group:
        yield group


_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_SHOWN = 120


def _shown(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
