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

- *Where each line came from.* Each body line goes in as a `str` that knows its number;
  the extensions pass the lines they leave alone through as the same object, so a
  marked line out is the author's own line, and unmarked lines between two marked ones
  came from the first source line that did not come through (the include line).
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

import bisect
import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, SupportsIndex

import markdown
from markdown.preprocessors import Preprocessor

from . import rules
from .findings import Finding


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
    found = {name: {} if options is None else options for name, options in items if name in KNOWN}
    return tuple(Configured(name, options) for name, options in found.items())


class Run(NamedTuple):
    """Consecutive lines of the expanded body that come from the same place."""

    start: int
    """The run's first line in the expanded body (0-based)."""
    source: int
    """Where its first line is in the body as written (0-based)."""
    included: bool
    """Text an include brought in: every line of the run is at `source`, the include line.
    Otherwise the run's lines are the author's, one for one."""


def source_line(runs: Sequence[Run], line: int) -> tuple[int, bool]:
    """Where a line of the expanded body is written (0-based), and whether it is included
    text (then it is the line of the include that brought it)."""
    if not runs:
        return line, False
    run = runs[max(bisect.bisect_right(runs, line, key=lambda r: r.start) - 1, 0)]
    return (run.source, True) if run.included else (run.source + line - run.start, False)


@dataclass(frozen=True)
class Expansion:
    body: str
    runs: tuple[Run, ...]
    """The expanded body's lines mapped to the body as written; () when nothing changed."""
    findings: tuple[Finding, ...]
    """The includes that could not be expanded."""


class _Line(str):
    """A line of the body as written, that knows its number."""

    number: int

    def __new__(cls, text: str, number: int) -> _Line:
        line = super().__new__(cls, text)
        line.number = number
        return line

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        # a whole-line slice is the line itself, as for a plain str (mdx_include passes
        # lines on as `line[c:]`)
        if isinstance(key, slice) and key.indices(len(self)) == (0, len(self), 1):
            return self
        return super().__getitem__(key)


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
        self.base, self.max_chars = base, max_chars
        self.usable: list[Configured] = []
        self.unusable: list[tuple[Configured, str]] = []
        """Extensions that cannot run: not installed (""), or the error their options give."""
        for extension in extensions:
            try:
                self._markdown([extension], {})
            except Exception as exc:  # ImportError when missing; anything from bad options
                self.unusable.append((extension, "" if isinstance(exc, ImportError) else str(exc)))
            else:
                self.usable.append(extension)
        self.lenient = self._chain(lambda known: known.lenient)
        self.strict = self._chain(lambda known: {**known.strict, **known.per_page})

    def expand(self, path: str, body: str, body_line: int) -> Expansion:
        """`body`, whose first line is line `body_line` of the file `path`, expanded."""
        written = body.split("\n")
        failures = list(self._unusable(written))
        if not self.lenient:
            return Expansion(body, (), self._findings(path, body_line, written, failures))
        out: list[str] = [_Line(text, n) for n, text in enumerate(written)]
        page_error = ""
        for pre in self.lenient:
            try:
                out = pre.run(list(out))  # snippets appends to the list it is given
            except Exception as exc:  # this extension's includes stay as written
                page_error = _describe(exc)
        kept = {line.number for line in out if isinstance(line, _Line)}
        failures += self._failing(written, _groups(n for n in range(len(written)) if n not in kept))
        if page_error:  # find the lines that fail on their own
            alone = self._failing(written, ([n] for n in range(len(written))))
            failures += alone or [_Failure(0, "page", page_error)]
        if self._appended_error:
            failures.append(_Failure(len(written) - 1, "appended", self._appended_error))
        findings = self._findings(path, body_line, written, failures)
        text = "\n".join(out)
        if len(text) > self.max_chars:
            too_long = rules.INCLUDE_FAILED.at(
                path, body_line, variant="too_long", chars=len(text), limit=self.max_chars
            )
            return Expansion(body, (), (*findings, too_long))
        return Expansion(text, _runs(out, kept, len(written)), findings)

    def _failing(self, written: list[str], groups: Iterable[list[int]]) -> list[_Failure]:
        """The lines of `groups` that fail on their own; a group of lines (a block of paths
        between `--8<--` markers) is tried whole when none of its lines fails alone."""
        failures = []
        for group in groups:
            found = [_Failure(n, "", error) for n in group if (error := self._error([written[n]]))]
            if not found and len(group) > 1:
                error = self._error([written[n] for n in group])
                found = [_Failure(group[0], "", error)] if error else []
            failures += found
        return failures

    def _error(self, lines: list[str]) -> str:
        """What the extensions, told to fail, say about `lines` alone ("" if nothing)."""
        return _failure(self.strict, lines)

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

    def _markdown(
        self, extensions: Sequence[Configured], overrides: Mapping[str, Mapping[str, object]]
    ) -> markdown.Markdown:
        configs = {e.name: {**self._resolved(e), **overrides.get(e.name, {})} for e in extensions}
        return markdown.Markdown(extensions=[e.name for e in extensions], extension_configs=configs)

    def _resolved(self, extension: Configured) -> Any:
        """The options, with their paths made relative to the config's folder."""
        options = extension.options
        if not isinstance(options, Mapping):
            return options  # Markdown refuses it, and says why
        paths = KNOWN[extension.name].paths
        return {k: _absolute(v, self.base) if k in paths else v for k, v in options.items()}

    def _chain(self, choose: Callable[[Known], Mapping[str, object]]) -> list[Preprocessor]:
        """The preprocessors the usable extensions register, in the order Markdown runs
        them, with the options `choose` gives each over the site's."""
        if not self.usable:
            return []
        md = self._markdown(self.usable, {e.name: choose(KNOWN[e.name]) for e in self.usable})
        return [pre for pre in md.preprocessors if type(pre) not in _builtin_preprocessors()]


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
    """What `chain` raises or logs as an error over `lines` ("" if nothing)."""
    with _logged_errors() as logged:
        try:
            for pre in chain:
                lines = pre.run(list(lines))
        except Exception as exc:
            return _describe(exc)
    return logged[0] if logged else ""


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


def _runs(out: list[str], kept: set[int], written: int) -> tuple[Run, ...]:
    runs: list[Run] = []
    last = -1
    for i, line in enumerate(out):
        if isinstance(line, _Line) and line.number > last:
            last = line.number
            prev = runs[-1] if runs else None
            if prev is None or prev.included or prev.source + i - prev.start != last:
                runs.append(Run(i, last, False))
            continue
        origin = last + 1 if last + 1 < written and last + 1 not in kept else max(last, 0)
        if not runs or not runs[-1].included or runs[-1].source != origin:
            runs.append(Run(i, origin, True))
    return () if runs == [Run(0, 0, False)] and len(out) == written else tuple(runs)


_SHOWN = 120


def _shown(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
