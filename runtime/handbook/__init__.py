"""Handbook's runtime: load a verified knowledge bundle and answer agents' queries.

Importing this package pulls in only the standard library (and, once bundles are
verified, `cryptography`): agents embed it in small processes, so it must stay light.
The build side (`handbook_build`) depends on this package, never the reverse.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
