"""Whether, and when, large queries are summed over numpy arrays
(`handbook.search.array_scoring`, the `fast` extra).

The choice is made once, at import, without importing numpy (about 100 ms): numpy is
imported only when a process asks enough large queries to gain from it, and in the
background, so no answer waits for it; or before the first request of a server, which
answers many (`for_a_server`).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from types import ModuleType

PURE_SEARCH = "HANDBOOK_PURE_SEARCH"
"""Set to 1, this environment variable keeps searches in pure Python with numpy installed."""
ARRAYS = os.environ.get(PURE_SEARCH, "") != "1" and importlib.util.find_spec("numpy") is not None
"""Whether large queries are summed over numpy arrays (`handbook.search.array_scoring`,
the `fast` extra): decided once, at import, without importing numpy. Both paths answer
the same hits, order and floats."""
_array_module: ModuleType | None = None
_loader: threading.Thread | None = None
_loading = threading.Lock()


def load_arrays(wait: bool = True) -> ModuleType | None:
    """`handbook.search.array_scoring` (numpy with it) once imported. With `wait`, it is
    imported now. Without, a background thread imports it and this answers None until
    it is done: the query that asked is summed in Python meanwhile, so the first large
    query of a fresh process does not wait ~100 ms for numpy. A numpy that fails to
    import leaves every search in Python."""
    global _array_module, _loader
    if _array_module is not None or not ARRAYS:
        return _array_module
    if wait:
        try:
            from . import array_scoring
        except ImportError:
            return None
        _array_module = array_scoring
        return _array_module
    with _loading:
        if _loader is None:
            _loader = threading.Thread(target=load_arrays, name="handbook-numpy", daemon=True)
            _loader.start()
    return None


def for_a_server() -> None:
    """Import the array path now, for a process that will answer many queries (`serve`,
    `mcp`): it starts ~100 ms later, and its first queries do not share the interpreter
    with numpy's import in the background (a fresh process's first 200 searches at
    msdocs-10k: CPU p99 8.2 ms against 30.9, `bench/first_pass.py`)."""
    load_arrays(wait=True)


def imported() -> ModuleType | None:
    """`handbook.search.array_scoring` when it is already imported, else None."""
    return _array_module
