"""Work spread over every core: CPU-bound pure Python (parsing, checking, analysis)
runs in worker processes when there is enough of it to pay for starting them."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

A = TypeVar("A")
T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_FILES = 500
"""Below this, starting worker processes costs more than it saves."""
CHUNK = 64
"""Items a worker takes at a time."""


def parallel(work: Callable[[A, list[T]], list[R]], arg: A, items: list[T]) -> Iterator[R]:
    """`work(arg, chunk)` over chunks of `items`, results in order. A single-threaded
    process forks its workers; one running threads (MkDocs' `serve`) starts them from a
    clean fork server instead, since forking a threaded process can deadlock. If the
    pool cannot run, the rest of the work is done here, serially."""
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
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
