"""Handbook's build side: read a docs folder, validate it, and (later steps) emit the
bundle. It may import the runtime (`handbook`); the runtime never imports it."""

from __future__ import annotations

from .config import Config, load_config
from .errors import ConfigError
from .findings import Finding
from .parse import Doc
from .pipeline import CheckResult, check

__all__ = ["CheckResult", "Config", "ConfigError", "Doc", "Finding", "check", "load_config"]
