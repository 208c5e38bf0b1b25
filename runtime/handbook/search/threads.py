"""How many threads the encoder's matrix products use: a measured choice, not BLAS's.

OpenBLAS starts as many threads as the machine has cores. For the encoder's products
(a few hundred rows by 384 or 1536 columns) on a machine whose cores are busy with other
work, threads that wait on each other made embedding two to three times slower than one
thread (bench/README.md, "Vectors a 10,000-doc library can afford"). So while it
encodes, the encoder sets the count to `HANDBOOK_ENCODER_THREADS` (default 1) and puts
the previous count back afterwards, so a program that embeds Handbook keeps its own.

The count is set through OpenBLAS's own `*_set_num_threads` function in the library numpy
loaded (found among the process's mapped files, as threadpoolctl does, without depending
on it). Where that cannot be found (not Linux, or another BLAS), nothing is changed and
the BLAS's own settings (e.g. `OPENBLAS_NUM_THREADS`, `OMP_NUM_THREADS`) apply.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

ENV = "HANDBOOK_ENCODER_THREADS"
DEFAULT = 1
_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)

_lock = threading.Lock()
_active = 0
_saved: int | None = None


def configured() -> int:
    """$HANDBOOK_ENCODER_THREADS when it is a whole number from 1, else `DEFAULT`."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return DEFAULT
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{ENV}={value!r} is not a whole number of threads (1 or more)") from None
    if count < 1:
        raise ValueError(f"{ENV}={value!r}: give 1 or more threads")
    return count


@cache
def _openblas() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set, get) of the OpenBLAS library mapped into this process, if any."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split(None, 5)[-1].strip() for line in fh if "openblas" in line}
    except OSError:
        return None
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            getter = getattr(lib, name.replace("_set_", "_get_"), None)
            if setter is not None and getter is not None:
                getter.restype = ctypes.c_int
                return (lambda n, f=setter: f(ctypes.c_int(n))), getter
    return None


@contextmanager
def blas_threads(count: int) -> Iterator[None]:
    """Run the body with OpenBLAS at `count` threads; the count in force before is put
    back when the last of the bodies running at once (in any thread) ends."""
    global _active, _saved
    import numpy  # noqa: F401  (loads OpenBLAS, so that it can be found)

    blas = _openblas()
    with _lock:
        if _active == 0 and blas is not None:
            _saved = blas[1]()
            blas[0](count)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and blas is not None and _saved is not None:
                blas[0](_saved)
