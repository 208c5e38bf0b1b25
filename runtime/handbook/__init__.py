"""Handbook's runtime: load a verified knowledge bundle and answer agents' queries.

Importing this package pulls in only the standard library, `cryptography` and lunr's
stemmer: agents embed it in small processes, so it must stay light. Its names are
imported when first used (PEP 562): a process that opens one `Library` does not pay for
the remote client, the shelf or the served tool table, nor does one that imports a
submodule only.
The build side (`handbook_build`) depends on this package, never the reverse.
"""

from __future__ import annotations

import importlib
import typing

from ._version import __version__
from .errors import (
    BundleChangedError,
    BundleError,
    DownloadError,
    ExpiredError,
    FormatError,
    HandbookError,
    HashMismatchError,
    KeyFormatError,
    LibraryMismatchError,
    MissingFileError,
    RollbackError,
    SignatureError,
    UnlistedFileError,
)

if typing.TYPE_CHECKING:
    from .access.actor import Actor, acting
    from .answers import (
        Answer,
        AskAnswer,
        BriefAnswer,
        CollectAnswer,
        ErrorInfo,
        GetAnswer,
        ListAnswer,
        ResourceAnswer,
        SearchAnswer,
        StatusAnswer,
    )
    from .bundle.trust import TrustPolicy
    from .libraries.client import RemoteLibrary
    from .libraries.library import Library
    from .libraries.shelf import Shelf
    from .tools.served import Served

_WHERE = {
    "Actor": "access.actor",
    "acting": "access.actor",
    "TrustPolicy": "bundle.trust",
    "RemoteLibrary": "libraries.client",
    "Library": "libraries.library",
    "Shelf": "libraries.shelf",
    "Served": "tools.served",
    **{
        name: "answers"
        for name in (
            "Answer",
            "AskAnswer",
            "BriefAnswer",
            "CollectAnswer",
            "ErrorInfo",
            "GetAnswer",
            "ListAnswer",
            "ResourceAnswer",
            "SearchAnswer",
            "StatusAnswer",
        )
    },
}
"""Where each public name is defined, relative to this package."""


def __getattr__(name: str) -> typing.Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Actor",
    "Answer",
    "AskAnswer",
    "BriefAnswer",
    "BundleChangedError",
    "BundleError",
    "CollectAnswer",
    "DownloadError",
    "ErrorInfo",
    "ExpiredError",
    "FormatError",
    "GetAnswer",
    "HandbookError",
    "HashMismatchError",
    "KeyFormatError",
    "Library",
    "LibraryMismatchError",
    "ListAnswer",
    "MissingFileError",
    "RemoteLibrary",
    "ResourceAnswer",
    "RollbackError",
    "SearchAnswer",
    "Served",
    "Shelf",
    "SignatureError",
    "StatusAnswer",
    "TrustPolicy",
    "UnlistedFileError",
    "__version__",
    "acting",
]
