"""Where each line of an expanded body is written.

Include extensions take a list of lines and give one back, and say nothing of where the
lines they give came from. But they pass the lines they leave alone through as the same
object, so each line goes in `Marked` with its number: a marked line that comes out is
the author's own line, and the unmarked lines between two marked ones came from the
lines in between that did not come through (the includes). The map is a few `Run`s, so a
doc without includes carries none, and docs cross process boundaries cheaply.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import NamedTuple, SupportsIndex


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


class Marked(str):
    """A line of the body as written, that knows its number."""

    number: int

    def __new__(cls, text: str, number: int) -> Marked:
        line = super().__new__(cls, text)
        line.number = number
        return line

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        # a whole-line slice is the line itself, as for a plain str (mdx_include passes
        # lines on as `line[c:]`)
        if isinstance(key, slice) and key.indices(len(self)) == (0, len(self), 1):
            return self
        return super().__getitem__(key)


def trace(out: list[str], written: int, produced: Mapping[int, int]) -> tuple[Run, ...]:
    """Where the lines of `out` come from. Unmarked lines between two marked ones came
    from the source lines between those (the ones that did not come through): one for
    one by the number of lines each gave alone (`produced`) when those add up, else all
    from the first."""
    runs: list[Run] = []
    last, pending = -1, list[int]()  # the last marked line; the unmarked after it

    def flush(upto: int) -> None:
        between = list(range(last + 1, upto))
        counts = [produced.get(n, -1) for n in between]
        if sum(counts) == len(pending) and min(counts, default=0) >= 0:
            origins = [n for n, count in zip(between, counts, strict=True) for _ in range(count)]
        else:
            origins = [between[0] if between else max(last, 0)] * len(pending)
        for i, origin in zip(pending, origins, strict=True):
            if not runs or not runs[-1].included or runs[-1].source != origin:
                runs.append(Run(i, origin, True))
        pending.clear()

    for i, line in enumerate(out):
        if isinstance(line, Marked) and line.number > last:
            flush(line.number)
            last = line.number
            prev = runs[-1] if runs else None
            if prev is None or prev.included or prev.source + i - prev.start != last:
                runs.append(Run(i, last, False))
        else:
            pending.append(i)
    flush(written)
    return () if runs == [Run(0, 0, False)] and len(out) == written else tuple(runs)


def after_removal(runs: Sequence[Run], lines: Sequence[int]) -> tuple[Run, ...]:
    """Where the lines of a text are written, when its line `i` is line `lines[i]` of a
    text that `runs` map (the expanded body, before lines were taken out of it)."""
    out: list[Run] = []
    for i, line in enumerate(lines):
        source, included = source_line(runs, line)
        prev = out[-1] if out else None
        if prev is not None and prev.included == included:
            next_source = prev.source if included else prev.source + i - prev.start
            if next_source == source:
                continue
        out.append(Run(i, source, included))
    return tuple(out)
