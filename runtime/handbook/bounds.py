"""Answers that never raise and never outgrow the operator's bound.

Hosts cap what a tool may return, and an agent cannot act on a traceback. So every
handler is wrapped by `never_raise` (a dict always comes back, sized), lists are cut to
what fits by `fit_items`, long text by `fit_text`, and user input echoed in a message is
clipped. The bound is the operator's `max_response_chars`, never the model's.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar, cast

from .answers import ErrorInfo
from .errors import (
    BundleChangedError,
    BundleError,
    DownloadError,
    FormatError,
    HashMismatchError,
    MissingFileError,
)

DEFAULT_MAX_RESPONSE_CHARS = 40_000
"""About 10k tokens: a third of what one popular host accepts from a tool."""
MAX_LIMIT = 100
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_LIST_LIMIT = 20
DEFAULT_COLLECT_LIMIT = 10
DEFAULT_COLLECT_BYTES = 32_000
DEFAULT_BRIEF_LIMIT = 8
DEFAULT_ASK_SOURCES = 3
"""The tools' default sizes, here rather than with their handlers so that the tool
methods' signatures (`handbook.libraries.snapshot_tools`) do not import every handler."""
ENVELOPE_CHARS = 200
"""Room kept for the keys added after a list is cut (count, returned, sizes)."""

INTEGRITY_ERRORS = (HashMismatchError, MissingFileError, FormatError, DownloadError)
"""What a lazily verified file raises when it is read and refused (or, for a remote
bundle read lazily, cannot be downloaded within its limits)."""

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
_DIGITS = re.compile(r"[0-9]{1,9}")


def never_raise(handler: F) -> F:
    """Whatever the arguments, a dict comes back, and it says how large it is."""
    signature = inspect.signature(handler)

    @wraps(handler)
    def safe(*args: Any, **kwargs: Any) -> dict[str, Any]:  # `self` too may be a wrong keyword
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            out: dict[str, Any] = {
                "error": refusal("bad_arguments", f"{handler.__name__}(): {exc}")
            }
        else:
            try:
                out = cast(dict[str, Any], handler(*args, **kwargs))
            except INTEGRITY_ERRORS as exc:  # a file hashed on first use did not verify
                out = {"error": integrity_refusal(exc)}
            except Exception as exc:  # the contract: agents get a structured answer, always
                out = {"error": refusal("internal_error", f"{type(exc).__name__}: {exc}")}
        out.setdefault("truncated", False)
        return with_size(out)

    return cast(F, safe)


def integrity_refusal(exc: BundleError) -> ErrorInfo:
    """`integrity_error`: a bundle file failed verification when it was first read. The
    message names the file (the errors always do); nothing from it is served."""
    if isinstance(exc, BundleChangedError):  # the message says to reopen
        return {"code": "integrity_error", "message": f"{exc}."}
    if isinstance(exc, DownloadError):
        return {
            "code": "integrity_error",
            "message": f"{exc}. Nothing from this file is served; the remote bundle's "
            "file could not be fetched within its limits: try again, or reload.",
        }
    return {
        "code": "integrity_error",
        "message": f"{exc}. Nothing from this file is served; the bundle on disk was "
        "changed or damaged after it was opened: its operator should restore or rebuild "
        "it and reload.",
    }


def refusal(code: str, message: str) -> ErrorInfo:
    """A structured error; the message is clipped, since it may echo the caller's input."""
    return {"code": code, "message": clip(message)}


def clip(text: str, limit: int = 200) -> str:
    """User input echoed in a message: never long enough to blow the response budget."""
    return text if len(text) <= limit else text[:limit] + "…"


def json_len(value: Any) -> int:
    """How many characters `value` takes as JSON (non-ASCII counted as one character)."""
    return len(json.dumps(value, ensure_ascii=False))


def with_size(out: dict[str, Any]) -> dict[str, Any]:
    """Every answer says how large it is, in characters of JSON, itself included. The
    answer is encoded once, with a one-digit number: the number's own digits are then
    counted without encoding it again."""
    out["response_chars"] = 0
    rest = json_len(out) - 1
    size = rest + 1
    while size != rest + len(str(size)):
        size = rest + len(str(size))
    out["response_chars"] = size
    return out


def check_limit(value: Any, default: int, maximum: int = MAX_LIMIT) -> int | ErrorInfo:
    """`limit` as a whole number clamped to 1..maximum, or the refusal to answer with."""
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or not _DIGITS.fullmatch(str(value).strip())
    ):
        return refusal("invalid_limit", f"limit must be a whole number from 1 to {maximum}")
    return min(max(int(value), 1), maximum)


def check_offset(value: Any) -> int | None:
    """A whole number, 0 or more, or None when it is not one."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = value.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def fit_items(items: Sequence[T], limit: int, room: int) -> list[T]:
    """The first (at most `limit`) items whose JSON, comma-separated, fits in `room`."""
    kept: list[T] = []
    used = 0
    for item in items[:limit]:
        size = json_len(item) + 1
        if used + size > room:
            break
        kept.append(item)
        used += size
    return kept


def fit_text(text: str, budget: int) -> int:
    """The length of the longest prefix of `text` whose JSON takes at most `budget`."""
    n = min(len(text), budget)
    while n > 0 and (size := json_len(text[:n])) > budget:
        n = min(n - 1, n * budget // size)
    return max(n, 0)
