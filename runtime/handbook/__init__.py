"""Handbook's runtime: load a verified knowledge bundle and answer agents' queries.

Importing this package pulls in only the standard library, `cryptography` and lunr's
stemmer: agents embed it in small processes, so it must stay light.
The build side (`handbook_build`) depends on this package, never the reverse.
"""

from __future__ import annotations

from ._version import __version__
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
from .libraries.client import RemoteLibrary
from .libraries.library import Library
from .libraries.shelf import Shelf
from .tools.served import Served

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
