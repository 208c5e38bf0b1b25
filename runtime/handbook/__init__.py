"""Handbook's runtime: load a verified knowledge bundle and answer agents' queries.

Importing this package pulls in only the standard library, `cryptography` and lunr's
stemmer: agents embed it in small processes, so it must stay light.
The build side (`handbook_build`) depends on this package, never the reverse.
"""

from __future__ import annotations

from .actor import Actor, acting
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
from .client import RemoteLibrary
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
from .library import Library
from .served import Served
from .shelf import Shelf
from .trust import TrustPolicy

__version__ = "0.1.0"

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
