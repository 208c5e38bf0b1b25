"""Canonical JSON: the only way Handbook turns values into bytes that are hashed or signed.

The encoding is RFC 8785 (JCS) restricted to integers: no floats anywhere, so there is
no number formatting to disagree about. Object keys are sorted by UTF-16 code units,
there is no whitespace, and strings are escaped as JCS prescribes (which is exactly what
`json.dumps(..., ensure_ascii=False)` does for a single string).

`loads` is the strict reader for signed bytes: size cap first, then UTF-8, then a depth
limit, then a parse that refuses duplicate keys, NaN, floats and lone surrogates, and
finally the bytes must equal the canonical encoding of what they parse to — so one
payload has exactly one accepted byte string. `load_untrusted` is the reader of any other
JSON from outside (request bodies, record files): the same depth limit, then `json.loads`.
The depth is found by a scan before parsing (`nesting`), so a few thousand brackets
never reach the parser's recursion. `check_profile` adds the tighter profile
of signed manifests: ASCII keys, integers in [0, 2^53-1], NFC strings.
"""

from __future__ import annotations

import json
import re
import unicodedata
from itertools import accumulate
from typing import Any

from ..errors import FormatError

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 16


class CanonicalError(ValueError):
    """A value that has no canonical encoding (a float, a huge integer, a bad key)."""


def dumps(value: Any) -> bytes:
    """The canonical bytes of `value`."""
    parts: list[str] = []
    _encode(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError(
            "a string holds a lone surrogate, which has no UTF-8 encoding"
        ) from None


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise CanonicalError(f"integer {value} is outside ±(2^53-1)")
        out.append(str(int(value)))
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise CanonicalError("object keys must be strings")
        out.append("{")
        for i, key in enumerate(sorted(value, key=_utf16)):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, float):
        raise CanonicalError(f"float {value!r} in a canonical payload; use an integer or a string")
    else:
        raise CanonicalError(f"{type(value).__name__} has no JSON encoding")


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def loads(data: bytes, *, what: str, max_bytes: int, profile: bool = False) -> Any:
    """Parse canonical JSON strictly; `what` names the file in error messages. With
    `profile`, the value must also keep to the signed-payload profile (`check_profile`).

    The common case runs at C speed: `json.loads` without hooks on objects, then one
    comparison with the re-encoding. A duplicate key or any other departure from the
    canonical form makes the bytes differ; only then is the text parsed again with
    checking hooks, to say exactly what is wrong."""
    if len(data) > max_bytes:
        raise FormatError(f"{what}: {len(data):,} bytes is over the {max_bytes:,}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{what}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if nesting(text) > MAX_DEPTH:
        raise FormatError(f"{what}: nested deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(text, parse_float=_no_float, parse_constant=_no_constant)
    except ValueError as exc:
        raise FormatError(f"{what}: not strict JSON: {exc}") from None
    try:
        if profile:
            check_profile(value, what, ascii_text=text.isascii())
            # ASCII keys sort the same by code point and by UTF-16 unit, and the profile
            # has no floats: json.dumps then writes exactly the canonical form, in C.
            canonical = json.dumps(
                value, ensure_ascii=False, sort_keys=True, separators=(",", ":")
            ).encode("utf-8")
        else:
            canonical = dumps(value)
    except CanonicalError as exc:
        raise FormatError(f"{what}: {exc}") from None
    except UnicodeEncodeError:
        raise FormatError(f"{what}: a string holds a lone surrogate") from None
    if canonical != data:
        try:
            json.loads(text, object_pairs_hook=_no_duplicates)
        except ValueError as exc:
            raise FormatError(f"{what}: not strict JSON: {exc}") from None
        raise FormatError(
            f"{what}: not canonical JSON (whitespace, key order, escapes or number form differ from RFC 8785)"
        )
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_float(text: str) -> Any:
    raise ValueError(f"float {text} is not allowed")


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not allowed")


class NestingError(ValueError):
    """JSON nested deeper than the reader takes."""


def load_untrusted(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` for JSON from outside (a request body, a record file, a server's
    answer): NestingError, a ValueError as json's own errors are, when its arrays and
    objects nest deeper than `max_depth` — by default MAX_DEPTH, far more than any of
    Handbook's formats needs; a tool's answer, which carries doc metadata, takes more."""
    text = (
        data.decode(json.detect_encoding(data), "surrogatepass")
        if isinstance(data, bytes)
        else data
    )
    if nesting(text) > max_depth:
        raise NestingError(f"nested deeper than {max_depth} levels")
    return json.loads(text)


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A JSON string, or an unterminated one to the end: matched in one pass, never retried."""
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting(text: str) -> int:
    """How deep the arrays and objects of JSON `text` nest (0 for a scalar), brackets in
    strings not counted: a scan at the regular expressions' speed, with no recursion,
    made before the parser recurses into the text."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_profile(value: Any, what: str, *, ascii_text: bool = False) -> None:
    """The signed-manifest profile: at most MAX_DEPTH levels, ASCII keys, integers in
    [0, 2^53-1], NFC strings. `ascii_text` says the source text was ASCII, so every key
    is ASCII and every string NFC already (the common case, and a cheaper walk)."""
    stack: list[tuple[Any, int]] = [([value], 0)]  # a wrapper, so the top value is a child too
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FormatError(f"{what}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            if not ascii_text:
                for key in item:
                    if not key.isascii():
                        raise FormatError(f"{what}: key {key!r} is not ASCII")
            children: Any = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is int:
                if not 0 <= child <= MAX_SAFE_INTEGER:
                    raise FormatError(f"{what}: integer {child} is outside [0, 2^53-1]")
            elif kind is str:
                if not ascii_text and not unicodedata.is_normalized("NFC", child):
                    raise FormatError(f"{what}: string {child!r} is not NFC-normalized")
            elif kind is not bool and child is not None:
                raise FormatError(f"{what}: {kind.__name__} is not allowed in the signed payload")
