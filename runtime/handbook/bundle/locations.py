"""Whether a bundle's location is a folder or a URL, decided in one place.

`Library.open`, the reloader and `handbook serve` all ask `is_url`: anything that starts
with a scheme and ``://`` is a URL, so ``s3://bucket/x`` is an address, never a folder
named ``s3:`` that happens to be missing. Only http(s) addresses are read
(`handbook.bundle.web` decides which); any other scheme is refused by
`scheme_problem`, which names it and says what is read instead.
"""

from __future__ import annotations

import os
import re
from typing import TypeGuard

SCHEMES = ("https", "http")
"""The schemes a bundle is read from (plain http only on loopback, or when allowed)."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(location: str | os.PathLike[str]) -> TypeGuard[str]:
    """Whether `location` is a URL (`scheme://…`, whatever the scheme) rather than a folder."""
    return isinstance(location, str) and _URL.match(location) is not None


def scheme_problem(scheme: str) -> str | None:
    """Why nothing is read from a URL of `scheme` (as `urllib.parse` splits it: lower
    case, empty for none), or None for http(s)."""
    if scheme in SCHEMES:
        return None
    named = f"the scheme {scheme!r} is" if scheme else "an address without a scheme is"
    return (
        f"not an http(s) URL: {named} not supported; a bundle is read from a folder or "
        "from an https:// URL (http:// on loopback, or when plain http is allowed)"
    )
