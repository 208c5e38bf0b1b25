"""Handbook's build side: read a docs folder, validate it, emit and seal the bundle. It
may import the runtime (`handbook`); the runtime never imports it.

Importing the package imports none of its modules: `handbook_build.write.pages` or
`handbook_build.config.settings` load only what they need, and only `mkdocs_plugin` loads MkDocs.
The names below are imported from their modules when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config.settings import Config, load_config
    from .errors import ConfigError
    from .findings import Finding
    from .pipeline import CheckResult, check
    from .read.parse import Doc

_HOMES = {
    "CheckResult": "pipeline",
    "Config": "config.settings",
    "ConfigError": "errors",
    "Doc": "read.parse",
    "Finding": "findings",
    "check": "pipeline",
    "load_config": "config.settings",
}

__all__ = ["CheckResult", "Config", "ConfigError", "Doc", "Finding", "check", "load_config"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
