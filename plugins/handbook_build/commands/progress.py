"""Progress of a build's embedding, with the time it will still take.

Embedding is the one step of a build that can take minutes to hours (a `semantic: true`
library of 10,000 docs, built with nothing in the embedding cache), so it always says
how far it is. On a terminal that is a bar with click's estimate of the time left;
elsewhere (a CI log) a line every `EVERY` seconds, only once the embedding has taken that
long, so short builds and tests print nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

EVERY = 30.0
"""Seconds between progress lines when stderr is not a terminal."""

Progress = Callable[[int, int], None]


@contextmanager
def embedding_progress(label: str = "Embedding") -> Iterator[Progress]:
    """A `(done, total)` callback for `pipeline.build(embedding=...)`."""
    started = time.monotonic()
    bar: Any = None
    last = started

    def update(done: int, total: int) -> None:
        nonlocal bar, last
        if sys.stderr.isatty():
            if bar is None:
                bar = click.progressbar(
                    length=total, label=f"{label} {total:,} passages", file=sys.stderr
                )
                bar.__enter__()
            bar.update(done - bar.pos)
            return
        now = time.monotonic()
        if now - last >= EVERY or (done == total and now - started >= EVERY):
            last = now
            click.echo(line(label, done, total, now - started), err=True)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def line(label: str, done: int, total: int, elapsed: float) -> str:
    """`Embedding: 1,200 of 40,000 passages (9.8/s), about 1 h 6 min left`."""
    rate = done / elapsed if elapsed > 0 else 0.0
    text = f"{label}: {done:,} of {total:,} passages ({rate:.1f}/s)"
    if done >= total:
        return f"{text}, done in {_duration(elapsed)}"
    if rate <= 0:
        return text
    return f"{text}, about {_duration((total - done) / rate)} left"


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"
